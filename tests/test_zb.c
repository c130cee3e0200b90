/* Zero Bubble families: ZB-H1, ZB-H2, ZB auto (zb-1p, zb-2p), ZB-V. The acceptance list
 * of issue 3: makespans, bubbles and peaks at unit and profiled costs, and validity over
 * the whole (p, m) grid. */
#include "test_util.h"

/* F=B=W=2 per slice (1 per chunk pass), c=0: the reference figures' costs. */
static vp_costs unit(void) {
    return tu_costs(2, 2, 2, 0);
}

/* The ZB split accounting of the Zero Bubble paper's 1.5B model: R = 32h/(34h+5·a·s)
 * with h=2304, a=24 heads, s=1024 tokens = 0.3664. */
static vp_memcfg zb_split(void) {
    vp_memcfg m = vp_memcfg_default();
    m.kind = VP_MEM_ZB;
    m.zb_ratio = 32.0 * 2304 / (34.0 * 2304 + 5.0 * 24 * 1024);
    return m;
}

static vp_schedule *build_spec(const char *family, const vp_spec *spec) {
    vp_schedule *s = NULL;
    vp_error err = {0};
    if (vp_family_build(family, spec, &s, &err) != VP_OK)
        fail_msg("%s p=%d m=%d: %s", family, spec->p, spec->m, err.message);
    return s;
}

static void test_zbh1_reference(void **state) {
    (void)state;
    /* schedules.md §6: makespan / bubble / peak at p,m = 4,8 / 8,32 / 16,64 */
    int pm[][2] = {{4, 8}, {8, 32}, {16, 64}};
    double mk[] = {54, 206, 414}, bub[] = {0.1111, 0.0680, 0.0725};
    for (int k = 0; k < 3; k++) {
        int p = pm[k][0];
        vp_schedule *s = tu_build("zb-h1", p, pm[k][1], 0, unit());
        vp_sim *sim = tu_sim(s, unit(), NULL);
        TU_NEAR(sim->makespan, mk[k]);
        assert_true(fabs(sim->bubble - bub[k]) < 5e-5);
        for (int d = 0; d < p; d++)
            TU_NEAR(sim->peak[d], p); /* p units on every device, like 1F1B's device 0 */
        vp_sim_free(sim);
        vp_schedule_free(s);
    }
}

/* Makespan m(F+B+W) + (p-1)(F+B-W) whenever m >= p, W <= min(F, B) and c = 0. */
static void test_zbh1_bubble_formula(void **state) {
    (void)state;
    double costs[][3] = {{1, 1, 1}, {2, 2, 2}, {1, 2, 1}, {3, 2, 1}, {2, 3, 2}, {5, 4, 1}};
    for (int p = 1; p <= 12; p++) {
        for (int m = p; m <= 3 * p + 1; m += p / 2 + 1) {
            for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++) {
                double f = costs[k][0], b = costs[k][1], w = costs[k][2];
                vp_costs cc = tu_costs(f, b, w, 0);
                vp_schedule *s = tu_build("zb-h1", p, m, 0, cc);
                vp_sim *sim = tu_sim(s, cc, NULL);
                double want = m * (f + b + w) + (p - 1) * (f + b - w);
                if (fabs(sim->makespan - want) > 1e-9)
                    fail_msg("zb-h1 p=%d m=%d F=%g B=%g W=%g: makespan %g, want %g", p, m, f, b, w,
                             sim->makespan, want);
                vp_sim_free(sim);
                vp_schedule_free(s);
            }
        }
    }
}

/* ZB-H2 and ZB-2P: no bubble over the longest device span at p in {4, 8, 16}, m >= 2p. */
static void test_zbh2_zb2p_zero_bubble(void **state) {
    (void)state;
    const char *fams[] = {"zb-h2", "zb-2p"};
    for (int f = 0; f < 2; f++) {
        for (int p = 4; p <= 16; p *= 2) {
            for (int m = 2 * p; m <= 4 * p; m += p) {
                vp_schedule *s = tu_build(fams[f], p, m, 0, unit());
                vp_sim *sim = tu_sim(s, unit(), NULL);
                if (fabs(sim->bubble) > 1e-9)
                    fail_msg("%s p=%d m=%d: bubble %g", fams[f], p, m, sim->bubble);
                TU_NEAR(vp_sim_longest_span(sim), 6.0 * m);
                vp_sim_free(sim);
                vp_schedule_free(s);
            }
        }
    }
}

/* ZB-H2's span is m(F+B+W) + (p-1)·max(0, F+B-2W) for m >= 2p-1 and W <= F; its peak is
 * 2p-1 units (release-at-W) on device 0. */
static void test_zbh2_formula(void **state) {
    (void)state;
    double costs[][3] = {{1, 1, 1}, {1, 2, 1}, {3, 2, 1}, {2, 2, 1}, {2, 1, 2}, {3, 3, 1}};
    for (int p = 1; p <= 10; p++) {
        for (int m = 2 * p - 1; m <= 4 * p; m += p) {
            for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++) {
                double f = costs[k][0], b = costs[k][1], w = costs[k][2];
                vp_costs cc = tu_costs(f, b, w, 0);
                vp_schedule *s = tu_build("zb-h2", p, m, 0, cc);
                vp_sim *sim = tu_sim(s, cc, NULL);
                double extra = f + b - 2 * w > 0 ? f + b - 2 * w : 0;
                double want = m * (f + b + w) + (p - 1) * extra;
                if (fabs(vp_sim_longest_span(sim) - want) > 1e-9)
                    fail_msg("zb-h2 p=%d m=%d F=%g B=%g W=%g: span %g, want %g", p, m, f, b, w,
                             vp_sim_longest_span(sim), want);
                TU_NEAR(sim->peak[0], 2 * p - 1);
                vp_sim_free(sim);
                vp_schedule_free(s);
            }
        }
    }
}

/* ZB-V: no bubble over the longest span and p units on every device. */
static void test_zbv_zero_bubble_peak_p(void **state) {
    (void)state;
    for (int p = 4; p <= 16; p *= 2) {
        for (int m = 2 * p; m <= 4 * p; m += 2 * p) {
            vp_schedule *s = tu_build("zb-v", p, m, 0, unit());
            assert_int_equal(s->placement, VP_PLACE_V);
            vp_sim *sim = tu_sim(s, unit(), NULL);
            if (fabs(sim->bubble) > 1e-9)
                fail_msg("zb-v p=%d m=%d: bubble %g", p, m, sim->bubble);
            for (int d = 0; d < p; d++)
                TU_NEAR(sim->peak[d], p);
            vp_sim_free(sim);
            vp_schedule_free(s);
        }
    }
    /* the V-ZB reference makespans of schedules.md §6 */
    int pm[][2] = {{4, 8}, {8, 32}, {16, 64}};
    double mk[] = {51, 199, 399};
    for (int k = 0; k < 3; k++) {
        vp_schedule *s = tu_build("zb-v", pm[k][0], pm[k][1], 0, unit());
        vp_sim *sim = tu_sim(s, unit(), NULL);
        TU_NEAR(sim->makespan, mk[k]);
        vp_sim_free(sim);
        vp_schedule_free(s);
    }
}

/* The Zero Bubble paper's profiled 1.5B costs at p=8, m=24: ZB-1P <= 15.9%, ZB-2P <= 4.4%
 * (longest-span bubble), within p and 2p units under the ZB split. */
static void test_zb_auto_profiled(void **state) {
    (void)state;
    vp_costs cc = tu_costs(18.522, 18.086, 9.337, 0.601);
    vp_memcfg mem = zb_split();
    const char *fams[] = {"zb-1p", "zb-2p"};
    double max_bubble[] = {0.159, 0.044}, limit[] = {8, 16};
    for (int f = 0; f < 2; f++) {
        vp_spec spec = vp_spec_make(8, 24);
        spec.costs = cc;
        spec.mem = mem;
        vp_schedule *s = build_spec(fams[f], &spec);
        vp_sim *sim = tu_sim(s, cc, &mem);
        if (sim->bubble > max_bubble[f])
            fail_msg("%s: bubble %.4f above %.3f", fams[f], sim->bubble, max_bubble[f]);
        assert_true(sim->peak_max <= limit[f] + 1e-9);
        vp_sim_free(sim);
        vp_schedule_free(s);
    }
    /* and both beat 1F1B (24.3%) at the same costs */
    vp_schedule *s = tu_build("1f1b", 8, 24, 0, cc);
    vp_sim *sim = tu_sim(s, cc, &mem);
    assert_true(sim->bubble > 0.24);
    vp_sim_free(sim);
    vp_schedule_free(s);
}

/* ZB auto keeps to any limit it accepts, and a lower limit never gives a smaller span. */
static void test_zb_auto_limits(void **state) {
    (void)state;
    vp_memcfg mems[2] = {vp_memcfg_default(), zb_split()};
    for (int k = 0; k < 2; k++) {
        for (int p = 2; p <= 8; p += 2) {
            double prev_span = 0;
            for (double limit = 2 * p; limit >= 1; limit -= 0.75) {
                vp_spec spec = vp_spec_make(p, 3 * p);
                spec.costs = tu_costs(3, 3, 2, 0.1);
                spec.mem = mems[k];
                spec.mem_limit = limit;
                vp_schedule *s = NULL;
                vp_error err = {0};
                vp_status rc = vp_family_build("zb-1p", &spec, &s, &err);
                if (rc != VP_OK) {
                    assert_int_equal(rc, VP_EINVAL);
                    assert_non_null(strstr(err.message, "memory limit"));
                    continue;
                }
                vp_sim *sim = tu_sim(s, spec.costs, &mems[k]);
                assert_true(sim->peak_max <= limit + 1e-9);
                double span = vp_sim_longest_span(sim);
                if (prev_span > 0 && limit >= p)
                    assert_true(span >= prev_span - 1e-9);
                prev_span = span;
                vp_sim_free(sim);
                vp_schedule_free(s);
            }
        }
    }
    vp_spec spec = vp_spec_make(4, 8);
    spec.mem_limit = 0.5; /* below one microbatch's activation */
    vp_schedule *s = NULL;
    vp_error err = {0};
    assert_int_equal(vp_family_build("zb-2p", &spec, &s, &err), VP_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.message, "at least 1 unit"));
}

/* Every family validates over p 1..16, m 1..64, with unit, skewed, zero and hop costs and
 * both memory models; ZB-V and the memory-limited families respect their limits. */
static void test_grid_validates(void **state) {
    (void)state;
    const char *fams[] = {"zb-h1", "zb-h2", "zb-1p", "zb-2p", "zb-v"};
    double costs[][4] = {{2, 2, 2, 0}, {1, 3, 1, 0.3}, {0, 0, 0, 0}, {18.5, 18.1, 9.3, 0.6}};
    vp_memcfg mems[2] = {vp_memcfg_default(), zb_split()};
    for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
        for (int p = 1; p <= 16; p++) {
            for (int m = 1; m <= 64; m += (m < 8 ? 1 : 7)) {
                size_t k = (size_t)(p + m) % 4;
                vp_spec spec = vp_spec_make(p, m);
                spec.costs = tu_costs(costs[k][0], costs[k][1], costs[k][2], costs[k][3]);
                spec.mem = mems[(p + m) % 2];
                vp_schedule *s = build_spec(fams[f], &spec); /* validated by the registry */
                assert_int_equal(vp_schedule_validate(s, NULL), VP_OK);
                assert_int_equal(s->p, p);
                assert_int_equal(s->m, m);
                double limit = f >= 2 ? (f == 3 ? 2.0 * p : p) : 0;
                if (limit > 0) {
                    vp_sim *sim = tu_sim(s, spec.costs, &spec.mem);
                    assert_true(sim->peak_max <= limit + 1e-9);
                    vp_sim_free(sim);
                }
                vp_schedule_free(s);
            }
        }
    }
}

/* Equal inputs give equal schedules (the CLI's output is deterministic). */
static void test_deterministic(void **state) {
    (void)state;
    const char *fams[] = {"zb-1p", "zb-2p", "zb-v"};
    for (int f = 0; f < 3; f++) {
        vp_costs cc = tu_costs(1.3, 1.7, 0.9, 0.05);
        vp_schedule *a = tu_build(fams[f], 6, 20, 0, cc), *b = tu_build(fams[f], 6, 20, 0, cc);
        assert_true(vp_schedule_equal(a, b));
        vp_schedule_free(a);
        vp_schedule_free(b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zbh1_reference),         cmocka_unit_test(test_zbh1_bubble_formula),
        cmocka_unit_test(test_zbh2_zb2p_zero_bubble),  cmocka_unit_test(test_zbh2_formula),
        cmocka_unit_test(test_zbv_zero_bubble_peak_p), cmocka_unit_test(test_zb_auto_profiled),
        cmocka_unit_test(test_zb_auto_limits),         cmocka_unit_test(test_grid_validates),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
