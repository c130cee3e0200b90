/* Communication as frameworks run it.
 *
 * Where ranks sit: Megatron-LM's order, tensor-parallel rank innermost, then context-,
 * then data-parallel, then pipeline (rank = ((pipeline x DP + data) x CP + context) x TP +
 * tensor), gpus_per_node consecutive
 * ranks to a node. A group of n ranks spaced `stride` apart has min(n, node / stride)
 * members in a node (one when the stride fills a node) and spans n / that many nodes.
 *
 * A collective over a group (NCCL's algorithms): a ring all-gather or reduce-scatter of a
 * tensor of S bytes moves (n - 1)/n of S over each rank's link in n - 1 steps of one
 * latency each; an all-reduce is the two. Inside a node the link is NVLink (intra_bw);
 * across nodes every member of a node drives its own NIC, so the ring runs at the smaller
 * of NVLink and members x inter_bw. Across nodes an all-reduce may instead run as NCCL's
 * tree: 2 S over the same bandwidth with 2 x (log2(nodes) network and members - 1 NVLink)
 * latencies; the faster of the two is taken. Bandwidths are scaled by comm_efficiency, the
 * share NCCL reaches.
 *
 * The data-parallel reduction (VP_OVERLAP_MODELLED): as Megatron-LM's
 * --overlap-grad-reduce and PyTorch's DDP run it, gradients are reduced in buckets
 * (Megatron-LM's size: max(40M, 1M x DP) elements) while the backward of the step's last
 * microbatch still runs, so what shows after a device's last op is the larger of the last
 * bucket's reduction and whatever the reduction takes beyond that backward; with the
 * distributed optimizer the updated parameters are all-gathered (--overlap-param-gather)
 * under the next step's first forward the same way. A share (dp_overlap in [0, 1]) hides
 * that share of the whole reduction instead (0: after the backward, Megatron-LM's 2021
 * `local` DDP).
 *
 * An all-to-all (expert parallelism's dispatch and combine): every rank sends 1/n of its
 * bytes to each member, all at once; what stays in the node crosses NVLink, what leaves it
 * the rank's own NIC, the slower of the two deciding, each at comm_efficiency. */
#include <math.h>

#include "base/internal.h"
#include "price/price_internal.h"

/* Members of g per node and nodes it spans. */
static void placement(const vp_gpu *gpu, const vp__group *g, int *per_node, int *nodes) {
    long node = gpu->gpus_per_node;
    long per = g->stride >= node ? 1 : node / g->stride;
    per = per < g->n ? per : g->n;
    per = per < 1 ? 1 : per;
    *per_node = (int)per;
    *nodes = (int)((g->n + per - 1) / per);
}

/* Bandwidth a collective over g reaches, bytes/s. */
static double group_bw(const vp_gpu *gpu, int per_node, int nodes) {
    double bw = nodes > 1 ? fmin(gpu->intra_bw, per_node * gpu->inter_bw) : gpu->intra_bw;
    return bw * gpu->comm_efficiency;
}

double vp__collective_seconds(const vp_gpu *gpu, vp__collective kind, const vp__group *g,
                              double bytes) {
    if (g->n <= 1 || !(bytes > 0))
        return 0;
    int per, nodes;
    placement(gpu, g, &per, &nodes);
    double bw = group_bw(gpu, per, nodes), n = g->n;
    double lat = nodes > 1 ? gpu->inter_latency : gpu->intra_latency;
    double one = (n - 1) / n * bytes / bw + (n - 1) * lat; /* a ring gather or scatter */
    if (kind == VP__GATHER)
        return one;
    if (nodes == 1)
        return 2 * one;
    double tree = 2 * bytes / bw +
                  2 * (ceil(log2(nodes)) * gpu->inter_latency + (per - 1) * gpu->intra_latency);
    return fmin(2 * one, tree);
}

double vp__alltoall_seconds(const vp_gpu *gpu, const vp__group *g, double bytes) {
    if (g->n <= 1 || !(bytes > 0))
        return 0;
    int per, nodes;
    placement(gpu, g, &per, &nodes);
    double n = g->n, eff = gpu->comm_efficiency;
    double seconds = bytes * (per - 1) / n / (gpu->intra_bw * eff);
    if (nodes > 1)
        seconds = fmax(seconds, bytes * (n - per) / n / (gpu->inter_bw * eff));
    return seconds + (nodes > 1 ? gpu->inter_latency : gpu->intra_latency);
}

bool vp__crosses_nodes(const vp_gpu *gpu, long a, long b) {
    return a / gpu->gpus_per_node != b / gpu->gpus_per_node;
}

/* ---- pipeline sends ------------------------------------------------------------------ */

double vp__send_seconds(const vp_price_setup *su, int from, int to) {
    const vp_workload *t = su->work;
    const vp_gpu *g = su->gpu;
    long ranks = (long)t->tp * t->cp * t->dp; /* global ranks per pipeline rank */
    bool inter = vp__crosses_nodes(g, from * ranks, to * ranks);
    double tensor = vp__tokens(t) * su->arch->hidden * su->arch->dtype_bytes; /* 1/cp each */
    /* every tensor-parallel rank sends its 1/t: split over the sequence with sequence
       parallelism, else Megatron-LM's scatter-gather (the receivers all-gather it back) */
    double wire = tensor / t->tp;
    double bw = inter ? fmin(g->p2p_bw, g->inter_bw * g->comm_efficiency) : g->p2p_bw;
    double s = wire / bw + (inter ? g->inter_latency : g->intra_latency);
    if (t->tp > 1 && !t->sp)
        s += vp__collective_seconds(g, VP__GATHER, &(vp__group){0, 1, t->tp}, tensor);
    return s;
}

/* ---- the data-parallel reduction ----------------------------------------------------------- */

/* Megatron-LM's gradient bucket, elements. */
static double bucket_elements(int dp) {
    return fmax(40e6, 1e6 * dp);
}

void vp__dp_cost_of(const vp_price_setup *su, int d, const vp_rank_memory *m, double experts,
                    double window_b, double window_f, vp__dp_cost *out) {
    const vp_workload *t = su->work;
    const vp_gpu *g = su->gpu;
    *out = (vp__dp_cost){0};
    int edp = experts > 0 ? vp__expert_dp(t) : 1, wdp = vp__weight_dp(t);
    if (wdp <= 1 && edp <= 1)
        return;
    /* the dense weights' group: DP x CP ranks tp apart (cp.c) */
    long first_rank = (long)d * t->tp * wdp;
    vp__group grp = {first_rank, t->tp, wdp}, egrp = {first_rank, (long)t->ep * t->etp, edp};
    double egrads = experts * t->prec.grad, eparams = experts * t->prec.param;
    double params = vp__zero_dense_params(t, m, experts);
    double bucket = fmin(bucket_elements(wdp), params);
    /* ZeRO-1 and 2 reduce-scatter and gather the updated weights back; ZeRO-2 and 3 reduce
       their gradients every microbatch inside B (zero.c), ZeRO-3 gathers in the passes */
    vp__collective kind = t->zero ? VP__GATHER : VP__ALL_REDUCE;
    bool stepwise = t->zero < 2, gathers = t->zero == 1 || t->zero == 2;
    double grads = vp__collective_seconds(g, kind, &grp, m->grads - egrads) +
                   vp__collective_seconds(g, kind, &egrp, egrads);
    double last = vp__collective_seconds(g, kind, &grp, bucket * t->prec.grad);
    double gather = gathers ? vp__collective_seconds(g, VP__GATHER, &grp, m->params - eparams) +
                                  vp__collective_seconds(g, VP__GATHER, &egrp, eparams)
                            : 0;
    double first =
        gathers ? vp__collective_seconds(g, VP__GATHER, &grp, bucket * t->prec.param) : 0;
    if (!stepwise) /* the step's last reduce-scatter: the first layer's, after the last B */
        grads = last;
    out->reduce_s = grads + gather;
    if (t->dp_overlap != VP_OVERLAP_MODELLED) {
        out->after_s = out->reduce_s * (1 - t->dp_overlap);
        return;
    }
    out->after_s = fmax(last, grads - window_b);
    out->before_s = gathers ? fmax(first, gather - window_f) : 0;
}
