/* Zero Bubble handcrafted schedules, one stage per device, backward split into B and W.
 *
 * ZB-H1 (same memory as 1F1B): device i warms up with p-1-i forwards, then runs i rounds
 * of (F, B) with the W deferred, then (F, B, W) while forwards remain, then (B, W), then
 * the i deferred W. Bubble (p-1)(F+B-W) for m >= p and W <= min(F, B); peak p units on
 * every device (release-at-W).
 *
 * ZB-H2 (parallelogram): device i warms up with 2(p-i)-1 forwards, enough to stay busy
 * until its first B arrives. Round j (j = 0..m-1) runs B(j), then a W, then the next F.
 * With a = m-2p+1, rounds a .. a+2i-1 skip their W, so that in the tail device i does
 * only B and F and its B reach device 0 on time; the 2i skipped W run at the very end.
 * Every device then stays busy from its first pass to its last: stage-span bubble
 * (p-1)·max(0, F+B-2W) for m >= 2p-1 and W <= F; peak 2p-1 units on device 0.
 *
 * Both are defined for every p >= 1, m >= 1 (short pipelines simply run out of passes
 * early); costs do not change the order.
 */
#include "families/families_internal.h"

/* Push helper that keeps the first failure. */
typedef struct pusher {
    vp_schedule *s;
    int d;
    vp_status rc;
} pusher;

static void put(pusher *ps, vp_op_kind kind, int mb) {
    if (ps->rc == VP_OK)
        ps->rc = vp_schedule_push_pass(ps->s, ps->d, kind, ps->d, mb);
}

static void zbh1_device(pusher *ps, int p, int m) {
    int i = ps->d, f = 0, b = 0, w = 0;
    for (int k = 0; k < p - 1 - i && f < m; k++)
        put(ps, VP_OP_F, f++);
    for (int k = 0; k < i && f < m; k++) {
        put(ps, VP_OP_F, f++);
        put(ps, VP_OP_B, b++);
    }
    while (f < m) {
        put(ps, VP_OP_F, f++);
        put(ps, VP_OP_B, b++);
        put(ps, VP_OP_W, w++);
    }
    while (b < m) {
        put(ps, VP_OP_B, b++);
        put(ps, VP_OP_W, w++);
    }
    while (w < m)
        put(ps, VP_OP_W, w++);
}

static void zbh2_device(pusher *ps, int p, int m) {
    int i = ps->d, f = 0, w = 0;
    int warm = 2 * (p - i) - 1 < m ? 2 * (p - i) - 1 : m;
    int skip_from = m - 2 * p + 1, skip_to = skip_from + 2 * i;
    while (f < warm)
        put(ps, VP_OP_F, f++);
    for (int j = 0; j < m; j++) {
        put(ps, VP_OP_B, j);
        if (j < skip_from || j >= skip_to)
            put(ps, VP_OP_W, w++);
        if (f < m)
            put(ps, VP_OP_F, f++);
    }
    while (w < m)
        put(ps, VP_OP_W, w++);
}

static vp_status build(const char *name, void (*device)(pusher *, int, int), const vp_spec *spec,
                       vp_schedule **out, vp_error *err) {
    vp_status rc = vp__check_pm(name, spec, err);
    if (rc != VP_OK)
        return rc;
    vp_schedule *s = NULL;
    vp_shape shape = {.p = spec->p, .S = spec->p, .m = spec->m, .placement = VP_PLACE_SINGLE};
    rc = vp_schedule_new(name, shape, &s, err);
    if (rc != VP_OK)
        return rc;
    for (int d = 0; d < spec->p && rc == VP_OK; d++) {
        pusher ps = {s, d, VP_OK};
        device(&ps, spec->p, spec->m);
        rc = ps.rc;
    }
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return vp__fail(err, rc, "out of memory");
    }
    *out = s;
    return VP_OK;
}

vp_status vp__build_zbh1(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return build("zb-h1", zbh1_device, spec, out, err);
}

vp_status vp__build_zbh2(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return build("zb-h2", zbh2_device, spec, out, err);
}
