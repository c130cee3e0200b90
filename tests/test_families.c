/* The first families (GPipe, 1F1B, interleaved 1F1B): reference figures of schedules.md
 * §6, bubble formulas of §5, closed-form peaks and Megatron-LM's interleaved order, over
 * grids of p, m and costs. */
#include <stdlib.h>

#include "test_util.h"

/* §6: makespan / bubble (%) / peak at F=B=W=2 per slice, c=0. */
static void check_reference(const char *family, int v, int p, int m, double makespan,
                            double bubble_pct, double peak) {
    vp_costs c = tu_costs(2, 2, 2, 0);
    vp_schedule *s = tu_build(family, p, m, v, c);
    vp_sim *sim = tu_sim(s, c, NULL);
    if (fabs(sim->makespan - makespan) > 1e-9 || fabs(100 * sim->bubble - bubble_pct) > 0.005 ||
        fabs(sim->peak_max - peak) > 1e-9)
        fail_msg("%s p=%d m=%d: got %g / %.2f / %g, want %g / %.2f / %g", family, p, m,
                 sim->makespan, 100 * sim->bubble, sim->peak_max, makespan, bubble_pct, peak);
    vp_sim_free(sim);
    vp_schedule_free(s);
}

static void test_reference_figures(void **state) {
    (void)state;
    check_reference("1f1b", 0, 4, 8, 66, 27.27, 4);
    check_reference("1f1b", 0, 8, 32, 234, 17.95, 8);
    check_reference("1f1b", 0, 16, 64, 474, 18.99, 16);
    check_reference("interleaved", 2, 4, 8, 57, 15.79, 5.5);
    check_reference("interleaved", 2, 8, 32, 213, 9.86, 11.5);
    check_reference("interleaved", 2, 16, 64, 429, 10.49, 23.5);
}

/* The acceptance line of the foundation issue, through the library. */
static void test_1f1b_p8_m32_peaks(void **state) {
    (void)state;
    vp_costs c = tu_costs(2, 2, 2, 0);
    vp_schedule *s = tu_build("1f1b", 8, 32, 0, c);
    vp_sim *sim = tu_sim(s, c, NULL);
    TU_NEAR(sim->makespan, 234);
    assert_true(fabs(sim->bubble - 0.1795) < 5e-5);
    for (int d = 0; d < 8; d++)
        TU_NEAR(sim->peak[d], 8 - d);
    vp_sim_free(sim);
    vp_schedule_free(s);
}

/* Closed-form peak of device d for each family. */
static double closed_peak(const char *family, int p, int m, int v, int d) {
    if (!strcmp(family, "gpipe"))
        return m;
    if (!strcmp(family, "1f1b"))
        return p - d < m ? p - d : m;
    int rounds = m / p > 1 ? m / p : 1, g = m / rounds;
    int chunks = (v - 1) * g + 2 * (p - 1 - d) + 1;
    if (chunks > m * v)
        chunks = m * v;
    return (double)chunks / v;
}

/* Every shape p 1..16, m 1..64: builds (or refuses with a message naming the
 * constraint), validates, replays, and each device's peak is the closed form. */
static void test_grid_closed_form_peaks(void **state) {
    (void)state;
    const char *families[] = {"gpipe", "1f1b", "interleaved"};
    vp_costs costs[3] = {tu_costs(1, 1, 1, 0), tu_costs(1, 2, 0.5, 0.1), tu_costs(3, 1, 2, 0)};
    int built = 0, refused = 0;
    for (int f = 0; f < 3; f++)
        for (int p = 1; p <= 16; p++)
            for (int m = 1; m <= 64; m++) {
                int v = f == 2 ? 1 + (p + m) % 3 : 0;
                vp_spec spec = vp_spec_make(p, m);
                spec.v = v;
                vp_schedule *s = NULL;
                vp_error err = {0};
                int rounds = m / p > 1 ? m / p : 1;
                int must_refuse = f == 2 && m % rounds != 0;
                vp_status rc = vp_family_build(families[f], &spec, &s, &err);
                assert_int_equal(rc != VP_OK, must_refuse);
                if (rc != VP_OK) {
                    /* Only interleaved has a constraint beyond p, m >= 1. */
                    assert_int_equal(err.status, VP_EINVAL);
                    assert_non_null(strstr(err.message, "equal rounds"));
                    refused++;
                    continue;
                }
                built++;
                assert_int_equal(vp_schedule_validate(s, &err), VP_OK);
                vp_sim *sim = tu_sim(s, costs[(p + m) % 3], NULL);
                for (int d = 0; d < p; d++)
                    if (fabs(sim->peak[d] - closed_peak(families[f], p, m, v ? v : 2, d)) > 1e-9)
                        fail_msg("%s p=%d m=%d v=%d device %d: peak %g, closed form %g",
                                 families[f], p, m, v, d, sim->peak[d],
                                 closed_peak(families[f], p, m, v ? v : 2, d));
                vp_sim_free(sim);
                vp_schedule_free(s);
            }
    assert_int_equal(built + refused, 3 * 16 * 64);
    assert_true(refused > 0 && built > refused);
}

/* §5 bubbles: span - m(F+B+W) = (p-1)(F+B+W)/v at c = 0 for any F, B, W (v = 1 for
 * GPipe and 1F1B; interleaved needs rounds of p). With c > 0 GPipe pays exactly 2c per
 * hop of the round trip; 1F1B and interleaved pay at least that (their steady state is
 * bound by the round trip). */
static void test_bubble_formulas(void **state) {
    (void)state;
    const double cost_sets[][4] = {{1, 1, 1, 0},   {1, 2, 1, 0},   {3, 2, 1, 0},   {1, 1, 3, 0},
                                   {2, 3, 0.5, 0}, {1, 2, 1, 0.5}, {3, 1, 2, 0.2}, {2, 2, 2, 1}};
    const char *families[] = {"gpipe", "1f1b", "interleaved"};
    for (size_t k = 0; k < sizeof cost_sets / sizeof cost_sets[0]; k++)
        for (int f = 0; f < 3; f++)
            for (int p = 2; p <= 9; p++)
                for (int rounds = 1; rounds <= 4; rounds++) {
                    int m = p * rounds, v = f == 2 ? 2 : 1;
                    vp_costs c = tu_costs(cost_sets[k][0], cost_sets[k][1], cost_sets[k][2],
                                          cost_sets[k][3]);
                    vp_schedule *s = tu_build(families[f], p, m, v, c);
                    vp_sim *sim = tu_sim(s, c, NULL);
                    double fbw = c.f + c.b + c.w;
                    double bubble = vp_sim_longest_span(sim) - m * fbw;
                    double formula = (p - 1) * fbw / v + 2 * (p - 1) * c.c;
                    if (c.c == 0 || f == 0)
                        assert_true(fabs(bubble - formula) < 1e-9);
                    else
                        assert_true(bubble >= formula - 1e-9);
                    vp_sim_free(sim);
                    vp_schedule_free(s);
                }
}

/* Megatron-LM's interleaved order for one device, built the way Megatron builds it: a
 * schedule table of (microbatch, chunk) in groups of g microbatches (each group runs chunk
 * 0 for all its microbatches, then chunk 1, ...; g divides m here), 2(p-1-d) + (v-1)g
 * warm-up forwards, then one forward and one backward at a time (backwards walk the same
 * table with the chunk mirrored), then the remaining backwards. Writes 2mv ops to out. */
static void megatron_device_order(int p, int m, int v, int g, int d, vp_op *out) {
    int total = m * v, n = 0;
    int *table_mb = malloc(sizeof(int) * (size_t)total);
    int *table_chunk = malloc(sizeof(int) * (size_t)total);
    assert_non_null(table_mb);
    assert_non_null(table_chunk);
    for (int first = 0; first < m; first += g)
        for (int chunk = 0; chunk < v; chunk++)
            for (int mb = first; mb < first + g; mb++, n++) {
                table_mb[n] = mb;
                table_chunk[n] = chunk;
            }
    int warmup = 2 * (p - 1 - d) + (v - 1) * g;
    if (warmup > total)
        warmup = total;
    int nf = 0, nb = 0, k = 0;
    while (nb < total) {
        int forward = nf < warmup || (nf < total && nf - warmup == nb);
        int i = forward ? nf++ : nb++;
        int chunk = forward ? table_chunk[i] : v - 1 - table_chunk[i];
        out[k++] = (vp_op){
            .kind = forward ? VP_OP_F : VP_OP_BW, .stage = chunk * p + d, .mb = table_mb[i]};
    }
    assert_int_equal(k, 2 * total);
    free(table_mb);
    free(table_chunk);
}

/* For every m >= p it builds, `interleaved` is Megatron-LM's order op for op with Megatron's
 * group size (microbatch_group_size_per_vp_stage) g = m / max(1, m div p), which Megatron
 * accepts (p <= g <= m, g divides m); g = p, Megatron's default, when p divides m. Every
 * schedule validates, and at g = p its replay at c = 0 meets the (p-1)(F+B+W)/v bubble. */
static void test_interleaved_is_megatron_order(void **state) {
    (void)state;
    vp_costs c = tu_costs(1, 2, 1, 0);
    int default_groups = 0, wider_groups = 0;
    for (int p = 2; p <= 12; p++)
        for (int m = p; m <= 5 * p; m++) {
            int rounds = m / p, g = m / rounds;
            if (m % rounds != 0)
                continue; /* interleaved refuses it (test_grid_closed_form_peaks) */
            for (int v = 1; v <= 4; v++) {
                vp_schedule *s = tu_build("interleaved", p, m, v, c);
                vp_error err = {0};
                assert_int_equal(vp_schedule_validate(s, &err), VP_OK);
                vp_op *want = malloc(sizeof(vp_op) * (size_t)(2 * m * v));
                assert_non_null(want);
                for (int d = 0; d < p; d++) {
                    megatron_device_order(p, m, v, g, d, want);
                    assert_int_equal(s->dev[d].n, 2 * m * v);
                    for (int k = 0; k < s->dev[d].n; k++) {
                        const vp_op *got = &s->dev[d].ops[k];
                        if (got->kind != want[k].kind || got->stage != want[k].stage ||
                            got->mb != want[k].mb)
                            fail_msg("p=%d m=%d v=%d device %d op %d: %s %d.%d, Megatron %s "
                                     "%d.%d",
                                     p, m, v, d, k, vp_op_kind_name(got->kind), got->stage, got->mb,
                                     vp_op_kind_name(want[k].kind), want[k].stage, want[k].mb);
                    }
                }
                if (g == p) {
                    vp_sim *sim = tu_sim(s, c, NULL);
                    double fbw = c.f + c.b + c.w;
                    TU_NEAR(vp_sim_longest_span(sim) - m * fbw, (p - 1) * fbw / v);
                    vp_sim_free(sim);
                    default_groups++;
                } else {
                    wider_groups++;
                }
                free(want);
                vp_schedule_free(s);
            }
        }
    assert_int_equal(default_groups, 11 * 5 * 4);
    assert_true(wider_groups > default_groups);
}

/* Bubble fraction over the longest span equals the makespan one for these families
 * (every device spans the whole run except for the pipeline fill). */
static void test_bubble_definitions(void **state) {
    (void)state;
    vp_costs c = tu_costs(1, 2, 1, 0);
    vp_schedule *s = tu_build("gpipe", 4, 8, 0, c);
    vp_sim *sim = tu_sim(s, c, NULL);
    double busy = 8 * 4.0;
    TU_NEAR(sim->bubble, 1 - busy / vp_sim_longest_span(sim));
    TU_NEAR(sim->bubble_makespan, 1 - busy / sim->makespan);
    for (int d = 0; d < 4; d++)
        TU_NEAR(sim->dev_busy[d], busy);
    vp_sim_free(sim);
    vp_schedule_free(s);
}

static void test_memory_models(void **state) {
    (void)state;
    /* Under the ZB split, a BW still frees everything, so 1F1B's peak is unchanged; bytes
     * scale with unit_bytes. */
    vp_memcfg zb = vp_memcfg_default();
    vp_error err = {0};
    assert_int_equal(vp_memcfg_parse("zb:0.366", &zb, &err), VP_OK);
    zb.unit_bytes = 1000;
    vp_costs c = tu_costs(1, 1, 1, 0);
    vp_schedule *s = tu_build("1f1b", 4, 8, 0, c);
    vp_sim *sim = tu_sim(s, c, &zb);
    TU_NEAR(sim->peak_max, 4);
    assert_non_null(sim->peak_bytes);
    TU_NEAR(sim->peak_bytes[1], 3000);
    vp_sim_free(sim);
    vp_schedule_free(s);
    assert_int_equal(vp_memcfg_parse("zb:1.5", &zb, &err), VP_EPARSE);
    assert_int_equal(vp_memcfg_parse("release", &zb, &err), VP_EPARSE);
}

static void test_costs_parse(void **state) {
    (void)state;
    vp_costs c = vp_costs_default();
    vp_error err = {0};
    assert_int_equal(vp_costs_parse("F=2,B=3.5,w=1,c=0.25,FB=4", &c, &err), VP_OK);
    TU_NEAR(c.f, 2);
    TU_NEAR(c.b, 3.5);
    TU_NEAR(c.w, 1);
    TU_NEAR(c.c, 0.25);
    TU_NEAR(c.fb, 4);
    const char *bad[] = {"",     "F",        "F=",     "F=x",     "F=-1",      "Q=1",
                         "F=1,", "F=1,,B=2", "F=nan",  "F=inf",   "F=1B=2",    "F=1;B=2",
                         "F=+1", "F= 1",     "F=0x10", "B=1,b=2", "FB=1,fb=1", "c=1,C=2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vp_costs keep = c;
        assert_int_equal(vp_costs_parse(bad[i], &c, &err), VP_EPARSE);
        assert_true(err.column >= 1);
        TU_NEAR(c.f, keep.f); /* unchanged on error */
    }
    /* a duplicate is refused at its second occurrence, naming the first */
    assert_int_equal(vp_costs_parse("F=1,W=3,F=2", &c, &err), VP_EPARSE);
    assert_int_equal(err.column, 9);
    assert_non_null(strstr(err.message, "given twice (first at column 1)"));
    /* too large (their results could not be finite): refused as failing validation, the
     * message gives the bound and the reason */
    const char *big[] = {"F=1e308", "F=1.1e12", "F=1e400"};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        vp_costs keep = c;
        assert_int_equal(vp_costs_parse(big[i], &c, &err), VP_EVALIDATION);
        assert_int_equal(err.column, 3);
        assert_non_null(strstr(err.message, "over 1e+12"));
        assert_non_null(strstr(err.message, "overflow"));
        TU_NEAR(c.f, keep.f);
    }
    /* the bound itself, subnormal and plain decimal forms are accepted */
    assert_int_equal(vp_costs_parse("F=1e12,B=1e-320,W=.5,c=5.", &c, &err), VP_OK);
    assert_true(c.f == 1e12 && c.b > 0 && c.b < 1e-300 && c.w == 0.5 && c.c == 5);
}

static void test_memcfg_parse(void **state) {
    (void)state;
    vp_memcfg m = vp_memcfg_default();
    vp_error err = {0};
    const char *bad[] = {"zb:1.5", "release",   "zb:",   "zb: 0.5", "zb:0.5x", "zb:-0.1",
                         "zb:nan", "zb:0x1p-1", "at-w ", "AT-W",    "zb:1e400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(vp_memcfg_parse(bad[i], &m, &err), VP_EPARSE);
        assert_int_equal(m.kind, VP_MEM_AT_W); /* unchanged */
    }
    assert_int_equal(vp_memcfg_parse("zb:1e-320", &m, &err), VP_OK);
    assert_true(m.kind == VP_MEM_ZB && m.zb_ratio > 0 && m.zb_ratio < 1e-300);
    assert_int_equal(vp_memcfg_parse("zb:1", &m, &err), VP_OK);
    TU_NEAR(m.zb_ratio, 1);
}

/* Costs the parser cannot produce but a caller can set: refused by the cost model, and a
 * hand-filled model with infinite or NaN entries gets an error from the simulator, never
 * an infinite makespan or a NaN bubble. */
static void test_nonfinite_costs(void **state) {
    (void)state;
    vp_schedule *s = tu_build("1f1b", 3, 4, 0, vp_costs_default());
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    double inf = INFINITY, dev[3] = {1, inf, 1};
    vp_costs big = tu_costs(2e12, 1, 1, 0), fb = vp_costs_default(), per = vp_costs_default();
    fb.fb = inf;
    per.dev_b = dev;
    assert_int_equal(vp_cost_model_new(s, &big, &mem, &cm, NULL), VP_EINVAL);
    assert_int_equal(vp_cost_model_new(s, &fb, &mem, &cm, NULL), VP_EINVAL);
    assert_int_equal(vp_cost_model_new(s, &per, &mem, &cm, NULL), VP_EINVAL);
    mem.unit_bytes = inf;
    assert_int_equal(vp_cost_model_new(s, &per, &mem, &cm, NULL), VP_EINVAL);
    assert_null(cm);
    double *slot[] = {NULL, NULL, NULL, NULL};
    for (int x = 0; x < 4; x++) {
        cm = tu_cm(s, vp_costs_default(), NULL);
        slot[0] = &cm->f[1], slot[1] = &cm->b[2], slot[2] = &cm->act[0], slot[3] = &cm->c;
        *slot[x] = x % 2 ? NAN : 1e308; /* 1e308 overflows when two are added */
        if (x == 3)
            *slot[x] = inf;
        vp_sim *sim = NULL;
        vp_error err = {0};
        vp_status rc = vp_simulate(s, cm, &sim, &err);
        if (rc != VP_EINVAL || sim || !strstr(err.message, "not finite"))
            fail_msg("case %d: status %d, sim %p: %s", x, rc, (void *)sim, err.message);
        vp_cost_model_free(cm);
    }
    vp_schedule_free(s);
}

static void test_op_kind_parse(void **state) {
    (void)state;
    for (int k = 0; k < VP_OP_KIND_COUNT; k++) {
        vp_op_kind got = VP_OP_KIND_COUNT;
        assert_int_equal(vp_op_kind_parse(vp_op_kind_name((vp_op_kind)k), &got), VP_OK);
        assert_int_equal(got, k);
    }
    vp_op_kind keep = VP_OP_W;
    const char *bad[] = {"", "f", "FB", "F&", "BW ", "I", "?"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(vp_op_kind_parse(bad[i], &keep), VP_EINVAL);
        assert_int_equal(keep, VP_OP_W);
    }
}

static void test_family_errors(void **state) {
    (void)state;
    vp_schedule *s = NULL;
    vp_error err = {0};
    vp_spec spec = vp_spec_make(0, 4);
    assert_int_equal(vp_family_build("1f1b", &spec, &s, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "p >= 1"));
    spec = vp_spec_make(4, 0);
    assert_int_equal(vp_family_build("gpipe", &spec, &s, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "m >= 1"));
    spec = vp_spec_make(4, 4);
    assert_int_equal(vp_family_build("no-such", &spec, &s, &err), VP_EINVAL);
    assert_string_equal(err.message, "unknown family 'no-such' (vpipe list)");
    assert_int_equal(vp_family_build("1fb1", &spec, &s, &err), VP_EINVAL);
    assert_string_equal(err.message, "unknown family '1fb1' (did you mean '1f1b'? vpipe list)");
    assert_ptr_equal(vp_family_nearest("intrleaved"), vp_family_find("interleaved"));
    assert_null(vp_family_nearest("no-such"));
    spec.v = 65;
    assert_int_equal(vp_family_build("interleaved", &spec, &s, &err), VP_EINVAL);
    assert_null(s);
}

/* vp_family.costs_free (what the planner's memo trusts): a family that claims it builds
 * the same schedule under every varied spec (costs, hop, per-device costs, the ZB memory
 * split, a memory limit) as under the default one; the others do not all (so the
 * comparison sees a difference when there is one). */
static void test_costs_free_families(void **state) {
    (void)state;
    int differ = 0;
    for (int f = 0; f < vp_family_count(); f++) {
        const vp_family *fam = vp_family_at(f);
        for (int p = 2; p <= 6; p += 2)
            for (int m = p; m <= 3 * p; m += p)
                for (int k = 0; k < 6; k++) {
                    vp_spec plain = vp_spec_make(p, m), varied = tu_varied_spec(p, m, k % 5);
                    varied.mem_limit = k == 5 ? 1.5 * p : 0;
                    plain.v = varied.v = !strcmp(fam->name, "interleaved") ? 2 + k % 2 : 0;
                    vp_schedule *a = NULL, *b = NULL;
                    vp_family_build(fam->name, &plain, &a, NULL);
                    vp_family_build(fam->name, &varied, &b, NULL);
                    int same = a && b ? vp_schedule_equal(a, b) : a == b;
                    if (fam->costs_free && !same)
                        fail_msg("%s p=%d m=%d setting %d: the order changed with the costs",
                                 fam->name, p, m, k);
                    differ += !fam->costs_free && !same;
                    vp_schedule_free(a);
                    vp_schedule_free(b);
                }
    }
    assert_true(differ > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_figures),
        cmocka_unit_test(test_1f1b_p8_m32_peaks),
        cmocka_unit_test(test_grid_closed_form_peaks),
        cmocka_unit_test(test_bubble_formulas),
        cmocka_unit_test(test_interleaved_is_megatron_order),
        cmocka_unit_test(test_bubble_definitions),
        cmocka_unit_test(test_memory_models),
        cmocka_unit_test(test_costs_parse),
        cmocka_unit_test(test_memcfg_parse),
        cmocka_unit_test(test_nonfinite_costs),
        cmocka_unit_test(test_op_kind_parse),
        cmocka_unit_test(test_family_errors),
        cmocka_unit_test(test_costs_free_families),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
