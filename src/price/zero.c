/* ZeRO stages 0-3: what each shards and what it communicates (design/models.md).
 *
 * The sharding group is the data-parallel group (DP x CP: Megatron's distributed optimizer
 * and FSDP shard over both); a routed expert's states shard over its expert-DP group. Per
 * stage, of P parameters on a rank:
 *   0  weights P x param, gradients P x grad, master weights and moments P x (master +
 *      moments): the whole states on every replica;
 *   1  the master weights and moments over the group (Megatron's --use-distributed-optimizer):
 *      gradients reduce-scattered and the updated weights all-gathered once per step;
 *   2  the gradients too: every microbatch's backward reduce-scatters each layer's gradients
 *      into the rank's shard (DeepSpeed's ZeRO-2, Megatron-FSDP's optim_grads), so the
 *      reduction runs m times a step, each layer's overlapped with the next layer's B;
 *   3  the weights too (FSDP2, ZeRO-3, Megatron-FSDP's optim_grads_params): every pass of a
 *      microbatch all-gathers each layer's weights before it runs (F, B, and W again: its
 *      hooks hang on the gathered weights, which this model frees after B and gathers again
 *      for a separate W) and B/W reduce-scatters its gradients, each layer's gather
 *      prefetched under the previous layer's compute (FSDP2's default prefetch of one);
 *      exposed per pass: max(0, communication - compute) of every layer, plus in F and B
 *      the first layer's gather (W's re-gather of it runs under the B before it). The
 *      gathered layer and the prefetched next one are the working set. A schedule running B
 *      and W as one BW pass is charged both shares, so also the re-gather's exposure under
 *      W's compute it does not need (zero wherever compute hides a layer's gather).
 *      This is FSDP2's and torchtitan's default without a pipeline; reshard_after_forward
 *      "never" (weights kept from F to B) is not modelled.
 * Under a pipeline (p > 1) FSDP2's frameworks do otherwise, and so does this model
 * (vp__zero_effective): torchtitan and NeMo AutoModel keep a stage's weights gathered from its
 * first F to its last B (reshard_after_forward = not pp_enabled: a gather per microbatch and pass
 * would dominate), and torch.distributed.pipelining turns the gradient reduce-scatter and
 * the reshard off until a stage's last backward (backward_maybe_with_nosync): one gather
 * and one reduce-scatter a step, the whole 16-bit weights and gradients held through the
 * step, only master weights and moments sharded: ZeRO-1's memory and communication. So
 * ZeRO-2 and 3 price as ZeRO-1 when p > 1 (the planner does not search them there).
 * Gathers move the 16-bit weights (param bytes), reduce-scatters the gradients at grad
 * bytes (fp32 reduction, torchtitan's and Megatron's default). A layer is one FSDP unit: a
 * piece (vp__piece_price), the embedding and the head being units too. */
#include <math.h>

#include "price/price_internal.h"

int vp__zero_effective(const vp_workload *t, int p) {
    return p > 1 && t->zero > 1 ? 1 : t->zero;
}

int vp__shard_group(const vp_workload *t, bool expert) {
    return expert ? vp__expert_dp(t) : vp__weight_dp(t);
}

void vp__zero_states(const vp_workload *t, double params, bool expert, vp__zero_bytes *out) {
    double d = vp__shard_group(t, expert);
    out->params = params * t->prec.param / (t->zero >= 3 ? d : 1);
    out->grads = params * t->prec.grad / (t->zero >= 2 ? d : 1);
    out->optimizer = params * (t->prec.master + t->prec.moments) / (t->zero >= 1 ? d : 1);
}

double vp__zero_dense_params(const vp_workload *t, const vp_rank_memory *m, double experts) {
    double held = m->params / t->prec.param;
    if (t->zero < 3)
        return held - experts;
    int edp = vp__expert_dp(t);
    return (held - (experts > 0 ? experts / edp : 0)) * vp__shard_group(t, false);
}

/* The groups of pipeline rank d (Megatron's order: DP spaced TP apart, expert-DP EP x ETP
 * apart). */
static void groups_of(const vp_workload *t, int d, vp__group *dense, vp__group *expert) {
    long first = (long)d * t->tp * t->dp;
    *dense = (vp__group){first, t->tp, t->dp};
    *expert = (vp__group){first, (long)t->ep * t->etp, vp__expert_dp(t)};
}

void vp__zero_unit(const vp_price_setup *su, int d, double params, double experts,
                   vp__zero_comm *out) {
    const vp_workload *t = su->work;
    const vp_gpu *g = su->gpu;
    vp__group dense, expert;
    groups_of(t, d, &dense, &expert);
    double rest = params - experts;
    *out = (vp__zero_comm){0};
    if (t->zero >= 3)
        out->gather_s = vp__collective_seconds(g, VP__GATHER, &dense, rest * t->prec.param) +
                        vp__collective_seconds(g, VP__GATHER, &expert, experts * t->prec.param);
    if (t->zero >= 2)
        out->scatter_s = vp__collective_seconds(g, VP__GATHER, &dense, rest * t->prec.grad) +
                         vp__collective_seconds(g, VP__GATHER, &expert, experts * t->prec.grad);
}

double vp__zero_exposed(double comm_ms, double compute_ms) {
    return comm_ms > compute_ms ? comm_ms - compute_ms : 0;
}

void vp__zero_pass_ms(const vp_price_setup *su, const vp__piece_price *pp, const double *weight,
                      vp_price_stage *g) {
    if (su->work->zero < 2 || su->measured)
        return;
    double first = 0, f = 0, b = 0, w = 0;
    for (int k = 0; k < VP__PIECES; k++) {
        if (!weight[k])
            continue;
        vp__zero_comm c;
        vp__zero_unit(su, g->device, pp[k].facts.params, pp[k].expert_params, &c);
        double gather = c.gather_s * 1e3, scatter = c.scatter_s * 1e3;
        first = fmax(first, gather);
        f += weight[k] * vp__zero_exposed(gather, pp[k].f_ms);
        b += weight[k] * vp__zero_exposed(gather + scatter, pp[k].b_ms);
        w += weight[k] * vp__zero_exposed(gather, pp[k].w_ms); /* the re-gather */
    }
    g->f_ms += f + first;
    g->b_ms += b + first;
    g->w_ms += w;
}

double vp__zero_working_set(const vp_price_setup *su, const vp__piece_price *pp,
                            const double *weight) {
    if (su->work->zero < 3)
        return 0;
    double largest = 0;
    for (int k = 0; k < VP__PIECES; k++)
        if (weight[k])
            largest = fmax(largest, pp[k].facts.params);
    return 2 * largest * su->work->prec.param;
}

const char *vp_zero_text(int zero) {
    static const char *const text[] = {"no ZeRO", "ZeRO-1 (distributed optimizer)",
                                       "ZeRO-2 (gradients sharded)", "ZeRO-3 (FSDP)"};
    return zero >= 0 && zero <= 3 ? text[zero] : NULL;
}
