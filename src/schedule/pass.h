/* The rules of a pass: the one place that knows which pass a pass waits for and which
 * passes an op completes. The replay (and through it the validator and the simulator)
 * and block reorder read them here; the memory and time of a pass under a cost model live
 * in sim (vp_cost_model_op_memory, vp_cost_model_op_time). Internal to the library,
 * shared by every module above schedule.
 *
 * A pass is one of F (forward), B (input backward), W (weight backward), R
 * (recomputation), O (the copy of an offload to host) or L (the copy of a reload) of one
 * (stage, microbatch), or with vocabulary parallelism one of EF, EB, S or T of one (shard,
 * microbatch) (schedule.h). Dependencies, within one microbatch's route:
 *   F(s, j) waits for F(s-1, j), except on the first stage of j's route, where with
 *           vocabulary parallelism it waits for EF(d, j) of every shard d;
 *   B(s, j) waits for F(s, j) on the last stage of j's route (with vocabulary parallelism
 *           for T(d, j) of every shard d), else for B(s+1, j);
 *   W(s, j) waits for B(s, j);
 *   R(s, j) waits for F(s, j) (same device; B needs nothing more: R sits before it there);
 *   O(s, j) waits for F(s, j): the F that ends issues it to the device's copy engine;
 *   L(s, j) waits for O(s, j): the L op issues it;
 *   and when (s, j) is offloaded, B(s, j) and R(s, j) wait for L(s, j) too;
 *   S(d, j) waits for F of j's last stage; T(d, j) for S(e, j) of every shard e;
 *   EB(d, j) waits for B of j's first stage; EF(d, j) for nothing.
 * A dependency on a pass of another device costs the hop time c (one on every shard: the
 * latest of them, plus c unless it ran on the waiting device). The copies run on their
 * device's copy engine, one at a time in the order they are issued.
 * Ops complete passes: F, B, W, R, EF, EB, S and T one each; BW completes B, then W
 * chained after it inside the op; F&B completes the F of (stage, mb) and the backward (B,
 * or BW's B and W) of (stage2, mb2), which run together. The O and L ops complete none and
 * take no compute time: an O waits for the copy O(s, j) (vp__op_copy_wait); an L issues
 * L(s, j).
 */
#ifndef VPIPE_SCHEDULE_PASS_H
#define VPIPE_SCHEDULE_PASS_H

#include <stddef.h>

#include "base/internal.h"
#include "vpipe/schedule.h"

typedef enum {
    VP__PASS_F,
    VP__PASS_B,
    VP__PASS_W,
    VP__PASS_R,
    VP__PASS_O,
    VP__PASS_L,
    VP__PASS_EF, /* the vocabulary passes: `stage` is the shard */
    VP__PASS_EB,
    VP__PASS_S,
    VP__PASS_T,
    VP__PASS_KINDS
} vp__pass_kind;

/* Pass kinds of a schedule: the vocabulary's too when it has them. */
static inline int vp__pass_kinds(const vp_schedule *s) {
    return s->vocab_parallel ? VP__PASS_KINDS : VP__PASS_EF;
}

/* Rows of a table of passes: stages, and shards (one per device) with the vocabulary. */
static inline size_t vp__pass_rows(const vp_schedule *s) {
    return (size_t)(s->vocab_parallel && s->p > s->S ? s->p : s->S);
}

/* The op kind that names a pass of kind k in messages. */
static inline vp_op_kind vp__pass_op_kind(int k) {
    static const vp_op_kind op_kind[VP__PASS_KINDS] = {
        VP_OP_F, VP_OP_B, VP_OP_W, VP_OP_R, VP_OP_O, VP_OP_L, VP_OP_EF, VP_OP_EB, VP_OP_S, VP_OP_T};
    return op_kind[k];
}

/* The device a pass runs on: its stage's, or its shard's. */
static inline int vp__pass_device(const vp_schedule *s, int32_t stage, int kind) {
    return kind >= VP__PASS_EF ? stage : s->stage_device[stage];
}

/* Most passes one op completes, and most passes one pass waits for. */
#define VP__OP_MAX_PASSES 3
#define VP__PASS_MAX_DEPS 2

/* A dependency's stage meaning "this pass of every shard" (a collective). */
#define VP__EVERY_SHARD (-1)

typedef struct vp__pass {
    int32_t stage, mb; /* stage (or shard), microbatch */
    uint8_t kind;      /* vp__pass_kind */
    uint8_t chained;   /* 1: its dependency is the op's previous pass, done inside the op */
} vp__pass;

/* Index of pass (not a collective) in a table of vp__pass_rows(s) * m * vp__pass_kinds(s)
 * entries. */
static inline size_t vp__pass_index(const vp_schedule *s, vp__pass pass) {
    return ((size_t)pass.stage * (size_t)s->m + (size_t)pass.mb) * (size_t)vp__pass_kinds(s) +
           pass.kind;
}

/* Whether (stage, mb) is offloaded, by offloaded ([S*m] flags of vp__offloaded, or NULL
 * for a schedule without offload). */
static inline int vp__pair_offloaded(const vp_schedule *s, const uint8_t *offloaded, int32_t stage,
                                     int32_t mb) {
    return offloaded && offloaded[(size_t)stage * (size_t)s->m + (size_t)mb];
}

/* Writes the passes `pass` waits for into dep and returns their count (0 for an F on the
 * first stage of its route, an EF). A dependency on every shard has stage
 * VP__EVERY_SHARD. The stage and microbatch must be on the route; offloaded says which
 * pairs are (vp__pair_offloaded). */
static inline int vp__pass_deps(const vp_schedule *s, const uint8_t *offloaded, vp__pass pass,
                                vp__pass dep[VP__PASS_MAX_DEPS]) {
    vp__pass d = {.stage = pass.stage, .mb = pass.mb};
    int vocab = s->vocab_parallel, n = 1;
    if ((pass.kind == VP__PASS_B || pass.kind == VP__PASS_R) &&
        vp__pair_offloaded(s, offloaded, pass.stage, pass.mb))
        dep[n++] = (vp__pass){.stage = pass.stage, .mb = pass.mb, .kind = VP__PASS_L};
    switch (pass.kind) {
    case VP__PASS_F:
        if (pass.stage == s->mb_first[pass.mb] && !vocab)
            return 0;
        d.stage = pass.stage == s->mb_first[pass.mb] ? VP__EVERY_SHARD : pass.stage - 1;
        d.kind = vocab && d.stage == VP__EVERY_SHARD ? VP__PASS_EF : VP__PASS_F;
        break;
    case VP__PASS_B:
        if (pass.stage == vp_schedule_last_stage(s, pass.mb)) {
            d.stage = vocab ? VP__EVERY_SHARD : pass.stage;
            d.kind = vocab ? VP__PASS_T : VP__PASS_F;
        } else {
            d.stage = pass.stage + 1;
            d.kind = VP__PASS_B;
        }
        break;
    case VP__PASS_R:
    case VP__PASS_O:
        d.kind = VP__PASS_F;
        break;
    case VP__PASS_L:
        d.kind = VP__PASS_O;
        break;
    case VP__PASS_W:
        d.kind = VP__PASS_B;
        break;
    case VP__PASS_EF:
        return 0;
    case VP__PASS_EB:
        d.stage = s->mb_first[pass.mb];
        d.kind = VP__PASS_B;
        break;
    case VP__PASS_S:
        d.stage = vp_schedule_last_stage(s, pass.mb);
        d.kind = VP__PASS_F;
        break;
    default: /* VP__PASS_T */
        d.stage = VP__EVERY_SHARD;
        d.kind = VP__PASS_S;
        break;
    }
    dep[0] = d;
    return n;
}

/* Appends the passes of a backward kind (B, W or BW) of (stage, mb) at out[n]. */
static inline int vp__backward_passes(int kind, int32_t stage, int32_t mb, vp__pass *out, int n) {
    vp__pass p = {.stage = stage, .mb = mb};
    if (kind == VP_OP_B || kind == VP_OP_BW) {
        p.kind = VP__PASS_B;
        out[n++] = p;
    }
    if (kind == VP_OP_W || kind == VP_OP_BW) {
        p.kind = VP__PASS_W;
        p.chained = kind == VP_OP_BW;
        out[n++] = p;
    }
    return n;
}

/* Writes the passes op completes, in the order they run, into out and returns their
 * count (0 for O and L); a pass with `chained` set waits for nothing outside the op.
 * op->kind and (for F&B) op->bkind must be valid (checked: a programmer error aborts). */
static inline int vp__op_passes(const vp_op *op, vp__pass out[VP__OP_MAX_PASSES]) {
    VP_ASSERT(op->kind < VP_OP_KIND_COUNT &&
              (op->kind != VP_OP_FB || op->bkind == VP_OP_B || op->bkind == VP_OP_BW));
    if (op->kind == VP_OP_O || op->kind == VP_OP_L)
        return 0;
    static const uint8_t alone[VP_OP_KIND_COUNT] = {[VP_OP_R] = VP__PASS_R,
                                                    [VP_OP_EF] = VP__PASS_EF,
                                                    [VP_OP_EB] = VP__PASS_EB,
                                                    [VP_OP_S] = VP__PASS_S,
                                                    [VP_OP_T] = VP__PASS_T};
    if (alone[op->kind]) {
        out[0] = (vp__pass){.stage = op->stage, .mb = op->mb, .kind = alone[op->kind]};
        return 1;
    }
    if (op->kind != VP_OP_F && op->kind != VP_OP_FB)
        return vp__backward_passes(op->kind, op->stage, op->mb, out, 0);
    out[0] = (vp__pass){.stage = op->stage, .mb = op->mb, .kind = VP__PASS_F};
    if (op->kind == VP_OP_F)
        return 1;
    return vp__backward_passes(op->bkind, op->stage2, op->mb2, out, 1);
}

/* The copy an op issues to its device's copy engine when it reaches it: an F (or F&B's
 * F) of an offloaded pair issues O when it ends, an L issues L when it starts. Writes it
 * to *copy and returns 1, or returns 0. */
static inline int vp__op_copy_issue(const vp_schedule *s, const uint8_t *offloaded, const vp_op *op,
                                    vp__pass *copy) {
    *copy = (vp__pass){.stage = op->stage, .mb = op->mb, .kind = VP__PASS_L};
    if (op->kind == VP_OP_L)
        return 1;
    copy->kind = VP__PASS_O;
    return (op->kind == VP_OP_F || op->kind == VP_OP_FB) &&
           vp__pair_offloaded(s, offloaded, op->stage, op->mb);
}

/* The copy an O op waits for, O(stage, mb), into *copy: returns 1 for an O op, else 0. */
static inline int vp__op_copy_wait(const vp_op *op, vp__pass *copy) {
    *copy = (vp__pass){.stage = op->stage, .mb = op->mb, .kind = VP__PASS_O};
    return op->kind == VP_OP_O;
}

#endif
