/* Context parallelism in the search: which CP degrees a point may take, and its exports. */
#include <math.h>
#include <stdio.h>

#include "base/internal.h"
#include "hybrid/hybrid_internal.h"

bool vp__hy_cp_legal(const vp_hybrid_request *req, int tp, int cp) {
    if (req->cp > 0)
        return cp == req->cp && (req->gpus / tp) % cp == 0;
    /* with CP every rank keeps 2 chunks of the sequence (causal balancing); without, any
       length */
    return (req->gpus / tp) % cp == 0 && (cp == 1 || req->work.seq % (2 * cp) == 0);
}

/* The model states a rank of a pipeline stage holds at least at TP tp, PP pp and R = DP x
 * CP ranks per pipeline rank, bytes: the dense weights over tp x pp, the routed experts
 * over every rank of the stage (the widest expert fold), optimizer states over R with ZeRO
 * (given, or searched: the least the search can reach). */
static double least_states(const vp_hybrid_request *q, int tp, int pp, int R) {
    const vp_arch *a = q->arch;
    double all = vp_arch_params(a), routed = 0;
    if (a->experts > a->top_k)
        routed = (all - vp_arch_active_params(a)) * a->experts / (a->experts - a->top_k);
    double params = (all - routed) / ((double)tp * pp) + routed / ((double)tp * pp * R);
    const vp_precision *p = &q->work.prec;
    return params * (p->param + p->grad +
                     (p->master + p->moments) / (q->work.zero || q->zero_search ? R : 1));
}

/* Whether CP degree x at TP tp and PP pp (R = DP x CP ranks per pipeline rank) leaves the
 * sequence's activations or the pipeline short: that DP does not divide the batch (the
 * level does not exist), its DP ranks get fewer sequences than there are stages (the
 * bubble dominates at every microbatch size), or even with full recomputation one
 * sequence's activations (on the first stage each layer's input for the pp microbatches
 * 1F1B holds of its L / pp layers, and one layer recomputed whole; on the last the head's
 * saved softmax and its logits) do not fit beside model states that would fit alone. */
static bool level_short(const vp_hybrid_request *q, int tp, int pp, int R, int x) {
    int dp = R / x;
    if (R % x || q->global_batch % dp || q->global_batch / dp < pp)
        return true;
    vp_workload w = q->work;
    w.tp = tp;
    w.cp = x;
    w.dp = dp;
    w.mbs = 1;
    w.ep = w.etp = 1;
    w.sp = q->work.sp && tp > 1;
    vp_arch a = *q->arch;
    a.experts = 0; /* a mixture of experts' layer as if dense: the activations around it */
    vp_price_facts whole, kept, head;
    w.recompute = VP_RECOMPUTE_NONE;
    w.recompute_modules = 0;
    vp_status rc = vp_price_part_facts(&a, &w, VP_PRICE_LAYER, &whole, NULL);
    if (rc == VP_OK)
        rc = vp_price_part_facts(&a, &w, VP_PRICE_HEAD, &head, NULL);
    w.recompute = VP_RECOMPUTE_FULL;
    if (rc != VP_OK || vp_price_part_facts(&a, &w, VP_PRICE_LAYER, &kept, NULL) != VP_OK)
        return true;
    /* the head's saved softmax and its 16-bit logits while the loss runs (the last stage) */
    double logits = (double)w.seq / x * a.vocab / tp * a.dtype_bytes;
    double layers = a.layers * kept.act_bytes + whole.act_bytes, ends = head.act_bytes + logits;
    double acts = pp == 1 ? layers + ends : fmax(layers, ends); /* one stage holds both */
    double limit = q->gpu->memory_bytes - vp__hy_margin(q);
    double states = least_states(q, tp, pp, R);
    return states < limit && states + acts > limit;
}
bool vp__hy_cp_wanted(const vp_hybrid_request *req, int tp, int pp, int cp) {
    if (cp == 1 || req->cp > 0)
        return true;
    int R = req->gpus / tp / pp, prev = 1;
    for (int x = cp - 1; x > 1 && prev == 1; x--)
        if (R % x == 0 && vp__hy_cp_legal(req, tp, x))
            prev = x;
    return level_short(req, tp, pp, R, prev);
}

void vp__hy_cp_export(vp__buf *b, const vp_hybrid_request *req, const vp_hybrid_config *c,
                      bool megatron) {
    if (c->cp <= 1)
        return;
    bool gather = req->work.cp_comm == VP_CP_ALLGATHER;
    if (megatron) { /* Megatron-LM hands Transformer Engine the type: p2p or all_gather */
        vp__buf_printf(b, " --context-parallel-size %d --cp-comm-type %s", c->cp,
                       gather ? "all_gather" : "p2p");
        return;
    }
    /* torchtitan rotates the key-value shards of its ring either by all-to-all (one shard
       on to the next rank per step: the ring of p2p) or by one all-gather after the first,
       local block's attention (vpipe prices allgather's gather before all of it) */
    vp__buf_printf(b, "context_parallel_degree = %d\ncontext_parallel_rotate_method = \"%s\"\n",
                   c->cp, gather ? "allgather" : "alltoall");
}
