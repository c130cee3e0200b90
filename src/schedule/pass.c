/* The rules of a pass (see pass.h). */
#include "schedule/pass.h"

int vp__pass_deps(const vp_schedule *s, vp__pass pass, vp__pass dep[VP__PASS_MAX_DEPS]) {
    vp__pass d = {.stage = pass.stage, .mb = pass.mb};
    switch (pass.kind) {
    case VP__PASS_F:
        if (pass.stage == s->mb_first[pass.mb])
            return 0;
        d.stage = pass.stage - 1;
        d.kind = VP__PASS_F;
        break;
    case VP__PASS_B:
        if (pass.stage == vp_schedule_last_stage(s, pass.mb)) {
            d.kind = VP__PASS_F;
        } else {
            d.stage = pass.stage + 1;
            d.kind = VP__PASS_B;
        }
        break;
    default:
        d.kind = VP__PASS_B;
        break;
    }
    dep[0] = d;
    return 1;
}

/* Appends the passes of a single-pass kind (B, W or BW) of (stage, mb) at out[n]. */
static int backward_passes(int kind, int32_t stage, int32_t mb, vp__pass *out, int n) {
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

int vp__op_passes(const vp_op *op, vp__pass out[VP__OP_MAX_PASSES]) {
    if (op->kind != VP_OP_F && op->kind != VP_OP_FB)
        return backward_passes(op->kind, op->stage, op->mb, out, 0);
    out[0] = (vp__pass){.stage = op->stage, .mb = op->mb, .kind = VP__PASS_F};
    if (op->kind == VP_OP_F)
        return 1;
    return backward_passes(op->bkind, op->stage2, op->mb2, out, 1);
}
