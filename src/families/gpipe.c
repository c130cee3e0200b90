/* GPipe: every device runs all m forwards, then all m full backwards.
 * Bubble (p-1)(F+B+W); peak m units on every device. */
#include "families/families_internal.h"

vp_status vp__build_gpipe(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    vp_status rc = vp__check_pm("gpipe", spec, err);
    if (rc != VP_OK)
        return rc;
    vp_schedule *s = NULL;
    vp_shape shape = {.p = spec->p, .S = spec->p, .m = spec->m, .placement = VP_PLACE_SINGLE};
    rc = vp_schedule_new("gpipe", shape, &s, err);
    if (rc != VP_OK)
        return rc;
    for (int d = 0; d < spec->p && rc == VP_OK; d++) {
        for (int j = 0; j < spec->m && rc == VP_OK; j++)
            rc = vp_schedule_push_pass(s, d, VP_OP_F, d, j);
        for (int j = 0; j < spec->m && rc == VP_OK; j++)
            rc = vp_schedule_push_pass(s, d, VP_OP_BW, d, j);
    }
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return vp__fail(err, rc, "out of memory");
    }
    *out = s;
    return VP_OK;
}
