/* 1F1B (PipeDream-flush): device i warms up with min(p-1-i, m) forwards, then alternates
 * one forward and one full backward, then drains the remaining backwards.
 * Bubble (p-1)(F+B+W); peak min(p-i, m) units on device i.
 * 1F1B-R, the Controllable Memory paper's baseline, is 1F1B with full recomputation (or
 * the spec's recomputation): an R before every backward, each F keeping only its input. */
#include <stdio.h>

#include "families/families_internal.h"

vp_status vp__build_1f1b(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    vp_status rc = vp__check_pm("1f1b", spec, err);
    if (rc != VP_OK)
        return rc;
    int p = spec->p, m = spec->m;
    vp_schedule *s = NULL;
    rc = vp_schedule_new("1f1b", (vp_shape){.p = p, .S = p, .m = m, .placement = VP_PLACE_SINGLE},
                         &s, err);
    if (rc != VP_OK)
        return rc;
    for (int d = 0; d < p && rc == VP_OK; d++) {
        int warmup = p - 1 - d < m ? p - 1 - d : m;
        int next_f = 0, next_b = 0;
        while (next_f < warmup && rc == VP_OK)
            rc = vp_schedule_push_pass(s, d, VP_OP_F, d, next_f++);
        while (next_f < m && rc == VP_OK) {
            rc = vp_schedule_push_pass(s, d, VP_OP_F, d, next_f++);
            if (rc == VP_OK)
                rc = vp_schedule_push_pass(s, d, VP_OP_BW, d, next_b++);
        }
        while (next_b < m && rc == VP_OK)
            rc = vp_schedule_push_pass(s, d, VP_OP_BW, d, next_b++);
    }
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return vp__fail(err, rc, "out of memory");
    }
    *out = s;
    return VP_OK;
}

vp_status vp__build_1f1br(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    vp_status rc = vp__build_1f1b(spec, out, err);
    vp_recompute mode = spec->recompute != VP_RECOMPUTE_NONE ? spec->recompute : VP_RECOMPUTE_FULL;
    if (rc == VP_OK)
        rc = vp__recompute_in_place(out, mode, err);
    if (rc == VP_OK)
        snprintf((*out)->family, sizeof(*out)->family, "1f1b-r");
    return rc;
}
