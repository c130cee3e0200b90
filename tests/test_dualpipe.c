/* DualPipe and DualPipeV: validity and replay over the acceptance grid, the documented
 * peaks (p + 1/2 units per device for DualPipeV, p + 1 for DualPipe under release-at-W),
 * two parameter copies for DualPipe, the step program's op counts, F&B costing, and the
 * refused shapes. */
#include "test_util.h"
#include "vpipe/plan.h"

static int count_kind(const vp_schedule *s, int d, int kind) {
    int n = 0;
    for (int k = 0; k < s->dev[d].n; k++)
        n += s->dev[d].ops[k].kind == kind;
    return n;
}

/* p in {2, 4, 8} x m in {2p, 3p, 4p}: builds, validates (vp_family_build does), replays
 * under several cost models, peaks as documented (release-at-W and the ZB split), every
 * device's peak the same. */
static void test_acceptance_grid(void **state) {
    (void)state;
    vp_costs costs[3] = {tu_costs(1, 1, 1, 0), tu_costs(2, 3, 1, 0.25), tu_costs(1, 2, 0, 0)};
    for (int p = 2; p <= 8; p *= 2)
        for (int m = 2 * p; m <= 4 * p; m += p)
            for (int k = 0; k < 3; k++) {
                vp_schedule *v = tu_build("dualpipev", p, m, 0, costs[k]);
                vp_schedule *b = tu_build("dualpipe", p, m, 0, costs[k]);
                assert_int_equal(vp_schedule_validate(v, NULL), VP_OK);
                assert_int_equal(vp_schedule_validate(b, NULL), VP_OK);
                assert_int_equal(v->placement, VP_PLACE_V);
                assert_int_equal(b->placement, VP_PLACE_BIDIR);
                vp_sim *sv = tu_sim(v, costs[k], NULL), *sb = tu_sim(b, costs[k], NULL);
                for (int d = 0; d < p; d++) {
                    if (fabs(sv->peak[d] - (p + 0.5)) > 1e-9)
                        fail_msg("dualpipev p=%d m=%d device %d: peak %g, want %g", p, m, d,
                                 sv->peak[d], p + 0.5);
                    if (sb->peak[d] > p + 1 + 1e-9)
                        fail_msg("dualpipe p=%d m=%d device %d: peak %g above p+1", p, m, d,
                                 sb->peak[d]);
                }
                TU_NEAR(sb->peak_max, p + 1);
                /* the same under the ZB split: the peak falls where backwards are full BW */
                vp_memcfg zb = vp_memcfg_default();
                zb.kind = VP_MEM_ZB;
                zb.zb_ratio = 0.3;
                vp_sim *zv = tu_sim(v, costs[k], &zb), *zbi = tu_sim(b, costs[k], &zb);
                TU_NEAR(zv->peak_max, p + 0.5);
                TU_NEAR(zbi->peak_max, p + 1);
                vp_sim_free(zv);
                vp_sim_free(zbi);
                assert_int_equal(vp_schedule_param_copies(v), 1);
                assert_int_equal(vp_schedule_param_copies(b), 2);
                vp_sim_free(sv);
                vp_sim_free(sb);
                vp_schedule_free(v);
                vp_schedule_free(b);
            }
}

/* The step program's counts on device r: DualPipeV runs 2(m-2p+r+1) F&B units (one fewer
 * on the last device, whose first main step is split) plus 2(p-r-1) in step 5; every
 * device defers exactly as many W's as it runs. DualPipe microbatches take their copy. */
static void test_program_counts(void **state) {
    (void)state;
    for (int p = 2; p <= 8; p++)
        for (int m = 2 * p; m <= 5 * p; m += 3) {
            vp_schedule *v = tu_build("dualpipev", p, m, 0, tu_costs(1, 1, 1, 0));
            for (int r = 0; r < p; r++) {
                int fb = 2 * (m - 2 * p + r + 1) - (r == p - 1) + (p - r - 1);
                assert_int_equal(count_kind(v, r, VP_OP_FB), fb);
                assert_int_equal(count_kind(v, r, VP_OP_W), count_kind(v, r, VP_OP_B));
                assert_int_equal(count_kind(v, r, VP_OP_W), (p - r - 1) * 2 + r + 1);
                assert_int_equal(count_kind(v, r, VP_OP_F) + count_kind(v, r, VP_OP_FB), 2 * m);
            }
            vp_schedule_free(v);
            if (p % 2 || m % 2)
                continue;
            vp_schedule *b = tu_build("dualpipe", p, m, 0, tu_costs(1, 1, 1, 0));
            for (int j = 0; j < m; j++)
                assert_int_equal(b->mb_first[j], j < m / 2 ? 0 : p);
            for (int r = 0; r < p; r++)
                assert_int_equal(count_kind(b, r, VP_OP_W), count_kind(b, r, VP_OP_B));
            vp_schedule_free(b);
        }
}

/* An F&B costs FB when given (per slice; a V chunk pays half), else F plus its full
 * backward: setting FB = F+B+W changes nothing, a cheaper FB shortens the run. */
static void test_fb_costing(void **state) {
    (void)state;
    const char *fam[] = {"dualpipev", "dualpipe"};
    for (int f = 0; f < 2; f++)
        for (int p = 2; p <= 8; p *= 2) {
            vp_costs plain = tu_costs(1, 2, 1, 0), same = plain, cheap = plain;
            same.fb = plain.f + plain.b + plain.w;
            cheap.fb = 0.6 * same.fb;
            vp_schedule *s = tu_build(fam[f], p, 4 * p, 0, plain);
            vp_sim *a = tu_sim(s, plain, NULL), *b = tu_sim(s, same, NULL),
                   *c = tu_sim(s, cheap, NULL);
            TU_NEAR(a->makespan, b->makespan);
            assert_true(c->makespan < a->makespan - 1e-9);
            vp_sim_free(a);
            vp_sim_free(b);
            vp_sim_free(c);
            vp_schedule_free(s);
        }
}

/* Shapes outside the constraints are refused with VP_EINVAL naming the constraint. */
static void test_refused_shapes(void **state) {
    (void)state;
    struct {
        const char *family;
        int p, m;
        const char *needle;
    } cases[] = {
        {"dualpipev", 1, 8, "p >= 2"},      {"dualpipev", 4, 7, "m >= 2p = 8"},
        {"dualpipev", 3, 5, "m >= 2p = 6"}, {"dualpipe", 1, 8, "even p >= 2"},
        {"dualpipe", 3, 12, "even p >= 2"}, {"dualpipe", 4, 9, "even m"},
        {"dualpipe", 4, 6, "m >= 2p = 8"},  {"dualpipe", 8, 14, "m >= 2p = 16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vp_spec spec = vp_spec_make(cases[i].p, cases[i].m);
        vp_schedule *s = (vp_schedule *)1;
        vp_error err = {0};
        assert_int_equal(vp_family_build(cases[i].family, &spec, &s, &err), VP_EINVAL);
        assert_null(s);
        if (!strstr(err.message, cases[i].needle))
            fail_msg("%s p=%d m=%d: '%s' lacks '%s'", cases[i].family, cases[i].p, cases[i].m,
                     err.message, cases[i].needle);
    }
    /* odd p is fine for DualPipeV, odd m too */
    for (int p = 2; p <= 9; p++)
        for (int m = 2 * p; m <= 2 * p + 3; m++)
            vp_schedule_free(tu_build("dualpipev", p, m, 0, tu_costs(1, 1, 1, 0)));
}

/* DualPipe's two directions beat 1F1B, and DualPipeV holds one parameter copy at DualPipe's
 * speed within a few chunk passes, at unit costs over p and m. */
static void test_against_1f1b(void **state) {
    (void)state;
    vp_costs c = tu_costs(2, 2, 2, 0);
    for (int p = 2; p <= 16; p *= 2)
        for (int m = 2 * p; m <= 4 * p; m += 2 * p) {
            vp_schedule *o = tu_build("1f1b", p, m, 0, c), *b = tu_build("dualpipe", p, m, 0, c);
            vp_schedule *v = tu_build("dualpipev", p, m, 0, c);
            vp_sim *so = tu_sim(o, c, NULL), *sb = tu_sim(b, c, NULL), *sv = tu_sim(v, c, NULL);
            assert_true(sb->makespan < so->makespan);
            assert_true(sv->makespan < so->makespan);
            assert_true(fabs(sv->makespan - sb->makespan) <= 2 * p);
            vp_sim_free(so);
            vp_sim_free(sb);
            vp_sim_free(sv);
            vp_schedule_free(o);
            vp_schedule_free(b);
            vp_schedule_free(v);
        }
}

/* At equal costs x per slice every device idles (makespan - busy) exactly
 * (p/2-1)(F&B+B-3W) in DeepSeek's notation (B the full backward, F&B = F+B+W here):
 * (p/2-1)*2x for DualPipe, and one forward more, (p-1)*x, for DualPipeV. (With unequal
 * costs the formula, which assumes the halves of an F&B overlap, is not a bound.) */
static void test_equal_cost_bubble(void **state) {
    (void)state;
    for (int p = 2; p <= 16; p *= 2)
        for (int m = 2 * p; m <= 4 * p; m += 2 * p)
            for (double x = 0.5; x <= 2; x *= 2) {
                vp_costs c = tu_costs(x, x, x, 0);
                const char *fam[] = {"dualpipe", "dualpipev"};
                double want[] = {(p / 2 - 1) * 2 * x, (p - 1) * x};
                for (int f = 0; f < 2; f++) {
                    vp_schedule *s = tu_build(fam[f], p, m, 0, c);
                    vp_sim *sim = tu_sim(s, c, NULL);
                    for (int d = 0; d < p; d++)
                        if (fabs(sim->makespan - sim->dev_busy[d] - want[f]) > 1e-9)
                            fail_msg("%s p=%d m=%d x=%g device %d idles %g, want %g", fam[f], p, m,
                                     x, d, sim->makespan - sim->dev_busy[d], want[f]);
                    vp_sim_free(sim);
                    vp_schedule_free(s);
                }
            }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acceptance_grid), cmocka_unit_test(test_program_counts),
        cmocka_unit_test(test_fb_costing),      cmocka_unit_test(test_refused_shapes),
        cmocka_unit_test(test_against_1f1b),    cmocka_unit_test(test_equal_cost_bubble),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
