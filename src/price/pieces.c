/* The pieces of a model priced on one rank: each kind of layer, the embedding and the
 * head, with their facts and pass times (compute under the accelerator's speed model plus
 * the communication each pass waits for). */
#include "base/internal.h"
#include "price/price_internal.h"

/* ---- tensor parallelism ---------------------------------------------------------------- */

/* Tensor-parallel collectives of one pass of a piece, in seconds: a layer all-reduces (or
 * reduce-scatters and all-gathers, with sequence parallelism: the same volume) its
 * attention and MLP outputs in F and their input gradients in B, and with sequence
 * parallelism its W gathers again the two inputs it reads (QKV's and FC1's, kept split
 * over the sequence, as Megatron does); a mixture-of-experts MLP has no TP collective of
 * its own (its tokens stay split over the sequence and travel by all-to-all) but its
 * shared experts are an MLP; the head gathers its input (SP) and reduces its input
 * gradient; the embedding reduces its output and, with SP, gathers the gradient its W
 * reads. The group is a node's consecutive ranks (comm.c). */
static double tp_comm_seconds(const vp_price_setup *su, vp_price_part part, unsigned kind,
                              vp_op_kind pass) {
    const vp_workload *t = su->work;
    double tensor = vp__tokens(t) * su->arch->hidden * su->arch->dtype_bytes;
    vp__group group = {0, 1, t->tp};
    double gather = vp__collective_seconds(su->gpu, VP__GATHER, &group, tensor);
    double reduce =
        t->sp ? 2 * gather : vp__collective_seconds(su->gpu, VP__ALL_REDUCE, &group, tensor);
    if (part == VP_PRICE_LAYER) {
        double blocks = 1 + (!(kind & VP__MOE) || su->arch->shared_experts > 0);
        return blocks * (pass != VP_OP_W ? reduce : (t->sp ? gather : 0));
    }
    if (part == VP_PRICE_HEAD && pass != VP_OP_W)
        return pass == VP_OP_F ? (t->sp ? gather : 0) : (t->sp ? gather : reduce);
    if (part == VP_PRICE_EMBEDDING && pass != VP_OP_B)
        return pass == VP_OP_F ? (t->sp ? gather : reduce) : (t->sp ? gather : 0);
    return 0;
}

/* What of a pass's TP collectives shows: all of them, or with tp_overlap (Megatron-LM's
 * --tp-comm-overlap pipelines each collective with the linear it feeds, chunk by chunk
 * over the tp ranks) the first chunk's, or what the linears cannot cover. */
static double tp_exposed(const vp_workload *t, double comm, double linear) {
    if (!t->tp_overlap || t->tp <= 1)
        return comm;
    double rest = comm - linear;
    return rest > comm / t->tp ? rest : comm / t->tp;
}

/* ---- expert parallelism ------------------------------------------------------------------ */

/* The expert-parallel exchange of one pass of a mixture-of-experts layer, in seconds: F
 * dispatches each of the rank's tokens to its top_k experts and combines their outputs
 * back (two all-to-alls of its expert token-rows over the EP group: the expert layers'
 * ranks are ETP innermost, then EP, so the group is ep ranks etp apart), and with etp > 1
 * all-gathers each expert's tokens over its ETP ranks and reduce-scatters their outputs;
 * B sends the gradients the same ways; W exchanges nothing. */
static double ep_comm_seconds(const vp_price_setup *su, unsigned kind, vp_op_kind pass) {
    const vp_workload *t = su->work;
    if (!(kind & VP__MOE) || pass == VP_OP_W)
        return 0;
    double rows = vp__expert_rows(su->arch, t);
    double bytes = rows * su->arch->hidden * su->arch->dtype_bytes;
    vp__group ep = {0, t->etp, t->ep}, etp = {0, 1, t->etp};
    return 2 * vp__dispatch_seconds(su->gpu, su->arch, t, &ep, bytes) +
           2 * vp__collective_seconds(su->gpu, VP__GATHER, &etp, bytes * t->etp);
}

/* ---- the pieces ------------------------------------------------------------------------ */

static void price_piece(const vp_price_setup *su, vp_price_part part, unsigned kind,
                        vp__piece_price *pp) {
    const vp_workload *t = su->work;
    vp__piece_facts(su->arch, t, part, kind, &pp->facts);
    vp__piece_params(su->arch, t, part, kind, &pp->expert_params);
    double sec[4], lin[3], comm[3];
    vp__piece_seconds(su, part, kind, sec, lin);
    const vp_op_kind passes[3] = {VP_OP_F, VP_OP_B, VP_OP_W};
    for (int i = 0; i < 3; i++)
        comm[i] = tp_exposed(t, tp_comm_seconds(su, part, kind, passes[i]), lin[i]);
    bool whole = part == VP_PRICE_LAYER && t->recompute == VP_RECOMPUTE_FULL;
    pp->a2a_f_ms = ep_comm_seconds(su, kind, VP_OP_F) * 1e3;
    pp->a2a_b_ms = ep_comm_seconds(su, kind, VP_OP_B) * 1e3;
    double cp_f = 0, cp_b = 0; /* context parallelism's key-value exchange (cp.c) */
    if (part == VP_PRICE_LAYER)
        vp__cp_exposed(su, kind, &cp_f, &cp_b);
    comm[0] += cp_f;
    comm[1] += cp_b;
    pp->f_ms = (sec[0] + comm[0]) * 1e3 + pp->a2a_f_ms;
    pp->r_ms = (sec[3] + (whole ? comm[0] : 0)) * 1e3 + (whole ? pp->a2a_f_ms : 0);
    pp->b_ms = (sec[1] + comm[1]) * 1e3 + pp->a2a_b_ms + pp->r_ms;
    pp->w_ms = (sec[2] + comm[2]) * 1e3;
    if (whole) /* the recomputed forward's exchange is B's too */
        pp->a2a_b_ms += pp->a2a_f_ms;
}

vp_price_part vp__piece_part(int piece) {
    return piece == VP__PIECE_EMBEDDING ? VP_PRICE_EMBEDDING
           : piece == VP__PIECE_HEAD    ? VP_PRICE_HEAD
                                        : VP_PRICE_LAYER;
}

unsigned vp__piece_kind(int piece) {
    return piece < VP__KINDS ? (unsigned)piece : 0;
}

void vp__price_pieces(const vp_price_setup *su, vp__piece_price *pieces) {
    double weight[VP__PIECES];
    vp__piece_weights(su->arch, 0, su->arch->layers, true, true, weight);
    for (int k = 0; k < VP__PIECES; k++) {
        pieces[k] = (vp__piece_price){0};
        if (weight[k])
            price_piece(su, vp__piece_part(k), vp__piece_kind(k), &pieces[k]);
    }
}

void vp__piece_weights(const vp_arch *a, int l0, int l1, bool first, bool last,
                       double weight[VP__PIECES]) {
    int counts[VP__KINDS];
    vp__kind_counts(a, l0, l1, counts);
    for (int k = 0; k < VP__KINDS; k++)
        weight[k] = counts[k];
    weight[VP__PIECE_EMBEDDING] = first;
    weight[VP__PIECE_HEAD] = last;
}
