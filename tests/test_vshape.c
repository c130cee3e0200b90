/* V-shape families (V-Min, V-Half, V-ZB, 1F1B-V) and general V blocks: the reference
 * figures of schedules.md §6, exact and balanced peaks, unit-cost bubbles, start slots,
 * cost-aware steady states, and shapes that must build or be refused. */
#include "test_util.h"
#include "vpipe/plan.h"

/* Idle chunk slots at F=B=W=2 per slice (1 per chunk pass): longest span - 6m. */
static double idle_slots(const vp_sim *sim, int m) {
    return vp_sim_longest_span(sim) - 6.0 * m;
}

static double min_peak(const vp_sim *sim) {
    double lo = sim->peak[0];
    for (int d = 1; d < sim->p; d++)
        lo = sim->peak[d] < lo ? sim->peak[d] : lo;
    return lo;
}

/* §6: peak exact, makespan and bubble at least as good as the reference. */
static void check_reference(const char *family, int p, int m, double makespan, double bubble_pct,
                            double peak) {
    vp_costs c = tu_costs(2, 2, 2, 0);
    vp_schedule *s = tu_build(family, p, m, 0, c);
    vp_sim *sim = tu_sim(s, c, NULL);
    if (sim->makespan > makespan + 1e-9 || 100 * sim->bubble > bubble_pct + 0.005 ||
        fabs(sim->peak_max - peak) > 1e-9)
        fail_msg("%s p=%d m=%d: got %g / %.2f / %g, want <= %g / <= %.2f / %g", family, p, m,
                 sim->makespan, 100 * sim->bubble, sim->peak_max, makespan, bubble_pct, peak);
    vp_sim_free(sim);
    vp_schedule_free(s);
}

static void test_reference_figures(void **state) {
    (void)state;
    check_reference("v-min", 4, 8, 59, 18.64, 2);
    check_reference("v-min", 8, 32, 219, 12.33, 4); /* vpipe: 215, the (1,1) pattern 3,2,5 */
    check_reference("v-min", 16, 64, 443, 13.32, 6);
    check_reference("v-half", 4, 8, 53, 9.43, 3);
    check_reference("v-half", 8, 32, 209, 8.13, 5);
    check_reference("v-half", 16, 64, 425, 9.65, 9);
    check_reference("v-zb", 4, 8, 51, 0, 4);
    check_reference("v-zb", 8, 32, 199, 0, 8);
    check_reference("v-zb", 16, 64, 399, 0, 16);
    check_reference("1f1b-v", 4, 8, 63, 23.81, 3);
    check_reference("1f1b-v", 8, 32, 225, 14.67, 6);
    check_reference("1f1b-v", 16, 64, 459, 16.34, 11);
}

/* 1F1B-V on p 2..32, m in {2p, 4p}: peak floor(2p/3) + 1 units on the busiest device and
 * at most 5(p-1) idle slots at unit costs (5/6 of 1F1B's 6(p-1)), equal at p = 3k+1. */
static void test_1f1bv_grid(void **state) {
    (void)state;
    vp_costs c = tu_costs(2, 2, 2, 0);
    for (int p = 2; p <= 32; p++) {
        for (int m = 2 * p; m <= 4 * p; m += 2 * p) {
            vp_schedule *s = tu_build("1f1b-v", p, m, 0, c);
            vp_sim *sim = tu_sim(s, c, NULL);
            double peak = 2 * p / 3 + 1, idle = 5 * (p - 1);
            if (fabs(sim->peak_max - peak) > 1e-9 || idle_slots(sim, m) > idle + 1e-9)
                fail_msg("1f1b-v p=%d m=%d: peak %g (want %g), idle %g (want <= %g)", p, m,
                         sim->peak_max, peak, idle_slots(sim, m), idle);
            vp_sim_free(sim);
            vp_schedule_free(s);
        }
    }
}

/* Peaks exactly floor((p+4)/3), floor((p+2)/2), p on every p in 2..32 and m >= 2p,
 * balanced (no device more than half a unit below), and unit-cost bubbles at most
 * 4p-5 (4p-7 when 3 | p), 3p-7 (even p) / 3p-4 (odd p), 0. */
static void test_peaks_and_bubbles_grid(void **state) {
    (void)state;
    vp_costs c = tu_costs(2, 2, 2, 0);
    for (int p = 2; p <= 32; p++) {
        int ms[] = {2 * p, 2 * p + 1, 3 * p, 4 * p};
        for (int k = 0; k < 4; k++) {
            int m = ms[k];
            const char *fam[] = {"v-min", "v-half", "v-zb"};
            double peak[] = {(p + 4) / 3, (p + 2) / 2, p};
            double idle[] = {p % 3 ? 4 * p - 5 : 4 * p - 7, p % 2 ? 3 * p - 4 : 3 * p - 7, 0};
            for (int f = 0; f < 3; f++) {
                vp_schedule *s = tu_build(fam[f], p, m, 0, c);
                vp_sim *sim = tu_sim(s, c, NULL);
                double want_idle = idle[f] > 0 ? idle[f] : 0;
                if (fabs(sim->peak_max - peak[f]) > 1e-9 || min_peak(sim) < peak[f] - 0.5 ||
                    idle_slots(sim, m) > want_idle + 1e-9)
                    fail_msg("%s p=%d m=%d: peak %g (min %g, want %g), idle %g (want <= %g)",
                             fam[f], p, m, sim->peak_max, min_peak(sim), peak[f],
                             idle_slots(sim, m), want_idle);
                vp_sim_free(sim);
                vp_schedule_free(s);
            }
        }
    }
}

/* The start slots of microbatch 0 are the table of schedules.md §4. */
static void test_start_slots(void **state) {
    (void)state;
    for (int p = 2; p <= 24; p++) {
        vp_vblock vb;
        int t[24][6];
        assert_int_equal(vp_vblock_preset("v-min", p, &vb, NULL), VP_OK);
        assert_int_equal(vp_vblock_slots(&vb, p, t), 0);
        int x = p % 3 == 0 ? 2 : 0;
        for (int i = 0; i < p; i++) {
            assert_int_equal(t[i][0], i);
            assert_int_equal(t[i][1], 2 * p - 1 - i);
            assert_int_equal(t[i][2], 2 * p + x + i);
            assert_int_equal(t[i][3], 4 * p + x - 1 - i);
        }
        assert_int_equal(vp_vblock_preset("v-half", p, &vb, NULL), VP_OK);
        assert_int_equal(vp_vblock_slots(&vb, p, t), 0);
        x = p % 2 == 0 ? 3 : 0;
        for (int i = 0; i < p; i++) {
            assert_int_equal(t[i][0], 2 * i);
            assert_int_equal(t[i][1], 3 * p - 2 - i);
            assert_int_equal(t[i][2], 3 * p + x + 2 * i - 1);
            assert_int_equal(t[i][3], 6 * p + x - 2 - i);
        }
        /* every W after its B, and the offsets of the V-ZB block */
        assert_int_equal(vp_vblock_preset("v-zb", p, &vb, NULL), VP_OK);
        assert_int_equal(vp_vblock_slots(&vb, p, t), 0);
        for (int i = 0; i < p; i++) {
            assert_true(t[i][4] > t[i][2] && t[i][5] > t[i][3]);
            if (i > 0) {
                assert_int_equal(t[i][0] - t[i - 1][0], 4);
                assert_int_equal(t[i - 1][1] - t[i][1], 2);
            }
        }
    }
}

/* The framework agrees: the block is collision-free at T = 6, the repeated order's peaks
 * stay under the lifespan bound, and the built schedule's peak never exceeds the repeated
 * block's. Checked for the presets and for blocks with a change point. */
static void test_framework_agrees(void **state) {
    (void)state;
    vp_costs c = tu_costs(1, 1, 1, 0);
    vp_memcfg mem = vp_memcfg_default();
    int checked = 0;
    for (int p = 3; p <= 12; p += 3) {
        vp_vblock blocks[4];
        assert_int_equal(vp_vblock_preset("v-min", p, &blocks[0], NULL), VP_OK);
        assert_int_equal(vp_vblock_preset("v-half", p, &blocks[1], NULL), VP_OK);
        assert_int_equal(vp_vblock_preset("v-zb", p, &blocks[2], NULL), VP_OK);
        vp_vblock changed = {
            .f1 = 1, .b1 = 2, .b0 = 3, .d0 = 3, .d1 = 1, .k = p / 2, .d0b = 1, .d1b = 1};
        blocks[3] = changed;
        for (int i = 0; i < 4; i++) {
            vp_block *b = NULL;
            vp_error err = {0};
            if (vp_vblock_to_block(&blocks[i], p, &b, &err) != VP_OK)
                fail_msg("block %d at p=%d: %s", i, p, err.message);
            assert_int_equal(vp_block_collisions(b, 6, NULL, NULL), VP_OK);
            vp_cost_model *cm = NULL;
            assert_int_equal(vp_block_cost_model(b, &c, &mem, &cm, NULL), VP_OK);
            vp_block_lifespan *ls = NULL;
            assert_int_equal(vp_block_lifespan_new(b, cm, 4 * p, &ls, NULL), VP_OK);
            vp_spec spec = vp_spec_make(p, 4 * p);
            vp_schedule *s = NULL;
            assert_int_equal(vp_vblock_build(&blocks[i], spec.p, spec.m, NULL, &s, NULL), VP_OK);
            assert_int_equal(vp_schedule_validate(s, NULL), VP_OK);
            assert_string_equal(s->family, "v-block");
            vp_sim *sim = tu_sim(s, c, NULL);
            for (int d = 0; d < p; d++) {
                assert_true(ls->peak[d] <= ls->bound[d] + 1e-9);
                assert_true(sim->peak[d] <= sim->peak_max);
            }
            double repeated = 0;
            for (int d = 0; d < p; d++)
                repeated = ls->peak[d] > repeated ? ls->peak[d] : repeated;
            assert_true(sim->peak_max <= repeated + 1e-9);
            checked++;
            vp_sim_free(sim);
            vp_schedule_free(s);
            vp_block_lifespan_free(ls);
            vp_cost_model_free(cm);
            vp_block_free(b);
        }
    }
    assert_int_equal(checked, 16);
}

/* Malformed or colliding blocks are refused with a message; presets need p >= 2. */
static void test_bad_blocks(void **state) {
    (void)state;
    int t[8][6];
    vp_vblock same = {.f1 = 2, .b1 = 2, .b0 = 3, .d0 = 1, .d1 = 1, .k = 7, .d0b = 1, .d1b = 1};
    vp_vblock zero = {.f1 = 0, .b1 = 2, .b0 = 3, .d0 = 1, .d1 = 1, .k = 7, .d0b = 1, .d1b = 1};
    vp_vblock wide = {.f1 = 1, .b1 = 2, .b0 = 3, .d0 = 6, .d1 = 1, .k = 7, .d0b = 6, .d1b = 1};
    assert_int_equal(vp_vblock_slots(&same, 4, t), -1);
    assert_int_equal(vp_vblock_slots(&zero, 4, t), -1);
    assert_int_equal(vp_vblock_slots(&wide, 4, t), -1);
    /* (1,1) offsets with F¹ at phase 1 and B¹ at phase 2 on device 0 collide further down */
    vp_vblock clash = {.f1 = 5, .b1 = 1, .b0 = 2, .d0 = 1, .d1 = 1, .k = 7, .d0b = 1, .d1b = 1};
    assert_int_equal(vp_vblock_slots(&clash, 4, t), -1);
    vp_spec spec = vp_spec_make(4, 8);
    vp_schedule *s = (vp_schedule *)1;
    vp_error err = {0};
    assert_int_equal(vp_vblock_build(&clash, spec.p, spec.m, "x", &s, &err), VP_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.message, "collides"));
    vp_block *b = (vp_block *)1;
    assert_int_equal(vp_vblock_to_block(&same, 4, &b, &err), VP_EINVAL);
    assert_null(b);
    vp_vblock vb;
    assert_int_equal(vp_vblock_preset("v-min", 1, &vb, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "p >= 2"));
    assert_int_equal(vp_vblock_preset("v-quarter", 4, &vb, &err), VP_EINVAL);
    char buf[96];
    vp_vblock changed = {.f1 = 1, .b1 = 2, .b0 = 3, .d0 = 3, .d1 = 1, .k = 2, .d0b = 1, .d1b = 1};
    assert_string_equal(vp_vblock_format(&changed, 8, buf, sizeof buf),
                        "f1=1 b1=2 b0=3 d=(3,1)->(1,1)@K=2");
    assert_string_equal(vp_vblock_format(&changed, 3, buf, sizeof buf), "f1=1 b1=2 b0=3 d=(3,1)");
}

/* Every V family on p 1..12 and m 1..4p: p = 1 is refused naming p >= 2; everything else
 * builds (m < 2p trims the warm-up), validates, replays, and short runs never need more
 * memory than long ones. */
static void test_shapes_grid(void **state) {
    (void)state;
    const char *fam[] = {"v-min", "v-half", "v-zb", "1f1b-v"};
    vp_costs c = tu_costs(1, 2, 1, 0.1);
    for (int f = 0; f < 4; f++) {
        for (int p = 1; p <= 12; p++) {
            double full = -1;
            for (int m = 4 * p; m >= 1; m--) {
                vp_spec spec = vp_spec_make(p, m);
                spec.costs = c;
                vp_schedule *s = NULL;
                vp_error err = {0};
                vp_status rc = vp_family_build(fam[f], &spec, &s, &err);
                if (p == 1) {
                    assert_int_equal(rc, VP_EINVAL);
                    assert_non_null(strstr(err.message, "p >= 2"));
                    continue;
                }
                if (rc != VP_OK)
                    fail_msg("%s p=%d m=%d: %s", fam[f], p, m, err.message);
                vp_sim *sim = tu_sim(s, c, NULL);
                if (full < 0)
                    full = sim->peak_max;
                assert_true(sim->peak_max <= full + 1e-9);
                assert_true(sim->peak_max <= m + 1e-9);
                vp_sim_free(sim);
                vp_schedule_free(s);
            }
        }
    }
}

/* Makespan of family (or, with vb, of that block) under c; its longest span into *span
 * when span is non-NULL. */
static double makespan_of(const char *family, const vp_vblock *vb, int p, int m, vp_costs c,
                          double *span) {
    vp_schedule *s = NULL;
    if (vb) {
        vp_spec spec = vp_spec_make(p, m);
        assert_int_equal(vp_vblock_build(vb, spec.p, spec.m, NULL, &s, NULL), VP_OK);
    } else {
        s = tu_build(family, p, m, 0, c);
    }
    vp_sim *sim = tu_sim(s, c, NULL);
    double ms = sim->makespan;
    if (span)
        *span = vp_sim_longest_span(sim);
    vp_sim_free(sim);
    vp_schedule_free(s);
    return ms;
}

/* Steady-state time per microbatch: makespan growth from m to m + 12, divided by 12. */
static double period(const char *family, const vp_vblock *vb, int p, int m, vp_costs c) {
    return (makespan_of(family, vb, p, m + 12, c, NULL) - makespan_of(family, vb, p, m, c, NULL)) /
           12;
}

/* Over 125 cost triples and p in 3..8:
 *  - V-Half's steady state is bubble-free (one microbatch per F+B+W) when W+2B >= 2F and
 *    W+2F >= 2B (schedules.md §4); for odd p its §4 block also stalls when they fail;
 *  - the §4 V-Min block runs exactly one microbatch per 3*max(F,B,W) (6 chunk passes of
 *    the longest) when the longest pass is an F or a B and p >= 4, otherwise between the
 *    work and that (W slack, or a V too short for the chain to bind, absorbs it);
 *  - the cost-aware families never take longer (longest span) than their §4 blocks; they
 *    may hold a greedy schedule, which has no period of its own. */
static void test_cost_aware_steady_state(void **state) {
    (void)state;
    double grid[] = {0.5, 1, 1.5, 2, 3};
    int free_seen = 0, bubbly_seen = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 5; k++) {
                double f = grid[i], b = grid[j], w = grid[k], work = f + b + w;
                vp_costs c = tu_costs(f, b, w, 0);
                int p = 3 + (i + 2 * j + 3 * k) % 6;
                vp_vblock half, vmin;
                assert_int_equal(vp_vblock_preset("v-half", p, &half, NULL), VP_OK);
                assert_int_equal(vp_vblock_preset("v-min", p, &vmin, NULL), VP_OK);
                double fam_half = period("v-half", NULL, p, 6 * p, c);
                double blk_half = period(NULL, &half, p, 6 * p, c);
                int bubble_free = w + 2 * b >= 2 * f && w + 2 * f >= 2 * b;
                if (bubble_free ? fabs(fam_half - work) > 1e-9
                                : p % 2 == 1 && blk_half <= work + 1e-9)
                    fail_msg("v-half p=%d F=%g B=%g W=%g: %g (block %g) per microbatch, work %g", p,
                             f, b, w, fam_half, blk_half, work);
                bubble_free ? free_seen++ : bubbly_seen++;
                double top = f > b ? (f > w ? f : w) : (b > w ? b : w);
                double blk_min = period(NULL, &vmin, p, 6 * p, c);
                int exact = p >= 4 && (f > b ? f : b) >= w;
                if (exact ? fabs(blk_min - 3 * top) > 1e-9
                          : blk_min < work - 1e-9 || blk_min > 3 * top + 1e-9)
                    fail_msg("v-min block p=%d F=%g B=%g W=%g: %g per microbatch, want %s%g", p, f,
                             b, w, blk_min, exact ? "" : "at most ", 3 * top);
                const char *fam[] = {"v-min", "v-half"};
                const vp_vblock *blk[] = {&vmin, &half};
                for (int x = 0; x < 4; x++) {
                    int m = 6 * p + 12 * (x / 2);
                    double fam_span, blk_span;
                    makespan_of(fam[x % 2], NULL, p, m, c, &fam_span);
                    makespan_of(NULL, blk[x % 2], p, m, c, &blk_span);
                    assert_true(fam_span <= blk_span + 1e-9);
                }
            }
    assert_true(free_seen > 10 && bubbly_seen > 10);
}

/* The families pick their block by the costs, but the memory stays the §4 figure. */
static void test_memory_independent_of_costs(void **state) {
    (void)state;
    const char *fam[] = {"v-min", "v-half", "v-zb"};
    vp_costs costs[] = {tu_costs(1, 1, 1, 0), tu_costs(1, 3, 0.5, 0.2), tu_costs(3, 1, 2, 0)};
    for (int f = 0; f < 3; f++)
        for (int p = 2; p <= 12; p++)
            for (int k = 0; k < 3; k++) {
                vp_schedule *s = tu_build(fam[f], p, 3 * p, 0, costs[k]);
                vp_sim *sim = tu_sim(s, costs[k], NULL);
                double want = f == 0 ? (p + 4) / 3 : f == 1 ? (p + 2) / 2 : p;
                TU_NEAR(sim->peak_max, want);
                vp_sim_free(sim);
                vp_schedule_free(s);
            }
}

/* Collision-free blocks of the V search at p, every `step`-th one, into blocks (at most
 * max); returns how many. */
static int sample_blocks(int p, int step, vp_vblock *blocks, int max) {
    int n = 0, t[16][6];
    for (long i = 0; i < vp_vsearch_size(p) && n < max; i += step) {
        vp_vsearch_block(p, i, &blocks[n]);
        n += vp_vblock_slots(&blocks[n], p, t) == 0;
    }
    return n;
}

/* vp_vgrid_measure gives the figures vp_simulate gives the built schedule, to the bit, for
 * short and long runs (periods inserted, and skipped by the replay when costs are exact
 * in binary), equal and unequal costs, release-at-W and the ZB split with bytes; a limit
 * below the span stops the replay with a bound above the limit, one at the span does not. */
static void test_measure_matches_simulate(void **state) {
    (void)state;
    vp_costs costs[] = {tu_costs(1, 1, 1, 0), tu_costs(1, 2, 1, 0.25),
                        tu_costs(1.1, 0.7, 3.3, 0.37)};
    vp_memcfg zb = {.kind = VP_MEM_ZB, .zb_ratio = 0.37, .unit_bytes = 1000};
    int checked = 0;
    for (int p = 3; p <= 9; p += 3) {
        int ms[] = {1, p, 2 * p + 1, 9 * p + 2};
        vp_vblock blocks[24];
        int nb = sample_blocks(p, 97, blocks, 24), t[16][6];
        for (int mi = 0; mi < 4; mi++) {
            vp_vgrid *g = NULL;
            assert_int_equal(vp_vgrid_new(p, ms[mi], &g, NULL), VP_OK);
            for (int b = 0; b < nb; b++) {
                assert_int_equal(vp_vblock_slots(&blocks[b], p, t), 0);
                vp_schedule *s = NULL;
                assert_int_equal(vp_vgrid_build(g, (const int(*)[6])t, NULL, &s, NULL), VP_OK);
                for (int c = 0; c < 3; c++) {
                    vp_memcfg mem = c == 2 ? zb : vp_memcfg_default();
                    vp_cost_model *cm = NULL;
                    assert_int_equal(vp_cost_model_new(s, &costs[c], &mem, &cm, NULL), VP_OK);
                    vp_sim *sim = tu_sim(s, costs[c], &mem);
                    vp_vgrid_metrics x;
                    assert_int_equal(vp_vgrid_measure(g, (const int(*)[6])t, cm, 0, &x, NULL),
                                     VP_OK);
                    double span = vp_sim_longest_span(sim), bytes = 0;
                    for (int d = 0; sim->peak_bytes && d < p; d++)
                        bytes = sim->peak_bytes[d] > bytes ? sim->peak_bytes[d] : bytes;
                    assert_true(x.complete && x.makespan == sim->makespan && x.span == span &&
                                x.bubble == sim->bubble && x.peak == sim->peak_max &&
                                x.peak_bytes == bytes);
                    assert_int_equal(vp_vgrid_measure(g, (const int(*)[6])t, cm, span, &x, NULL),
                                     VP_OK);
                    assert_true(x.complete);
                    assert_int_equal(
                        vp_vgrid_measure(g, (const int(*)[6])t, cm, 0.9 * span, &x, NULL), VP_OK);
                    assert_true(!x.complete && x.span > 0.9 * span && x.span <= span + 1e-9);
                    checked++;
                    vp_sim_free(sim);
                    vp_cost_model_free(cm);
                }
                vp_schedule_free(s);
            }
            vp_vgrid_free(g);
        }
    }
    assert_true(checked > 100);
}

/* 1F1B-V-like slots ([p][4]: forwards one slot apart down and back up, full backwards two
 * apart with three more after backward x when x % 3 == phase, the first `lead` slots after
 * the last forward). */
static void bw_slots(int p, int lead, int phase, int (*t)[6]) {
    for (int i = 0; i < p; i++) {
        t[i][0] = 7 + i;
        t[i][1] = 6 + 2 * p - i;
    }
    int now = 2 * p + 7 + lead;
    for (int x = 0; x < 2 * p; x++) {
        t[x < p ? x : 2 * p - 1 - x][x < p ? 2 : 3] = now;
        now += x % 3 == phase ? 5 : 2;
    }
}

/* vp_vgrid_measure_bw refuses what vp_vgrid_build_bw refuses and otherwise gives the
 * figures vp_simulate gives its schedule, to the bit, and vp_vgrid_schedule then hands
 * over that schedule: short and long runs (built with periods inserted), with and without
 * the canonical warm-up, equal and unequal costs, the ZB split with bytes. */
static void test_measure_bw_matches_simulate(void **state) {
    (void)state;
    vp_costs costs[] = {tu_costs(1, 1, 1, 0), tu_costs(1, 2, 1, 0.25),
                        tu_costs(1.1, 0.7, 3.3, 0.37)};
    vp_memcfg zb = {.kind = VP_MEM_ZB, .zb_ratio = 0.37, .unit_bytes = 1000};
    int checked = 0, refused = 0, t[16][6] = {{0}}, ps[] = {2, 4, 9};
    for (int pi = 0; pi < 3; pi++) {
        int p = ps[pi], ms[] = {1, p, 2 * p + 1, 5 * p + 2};
        for (int mi = 0; mi < 4; mi++) {
            vp_vgrid *g = NULL;
            vp_schedule *shape = NULL; /* for cost models of the V shape */
            assert_int_equal(vp_vgrid_new(p, ms[mi], &g, NULL), VP_OK);
            assert_int_equal(
                vp_schedule_new("shape", (vp_shape){p, 2 * p, ms[mi], VP_PLACE_V}, &shape, NULL),
                VP_OK);
            for (int v = 0; v < 18; v++) {
                bw_slots(p, v / 3, v % 3, t);
                for (int canonical = 0; canonical < 2; canonical++) {
                    vp_schedule *s = NULL;
                    vp_status built =
                        vp_vgrid_build_bw(g, (const int(*)[6])t, canonical, NULL, &s, NULL);
                    for (int c = 0; c < 3; c++) {
                        vp_memcfg mem = c == 2 ? zb : vp_memcfg_default();
                        vp_cost_model *cm = NULL;
                        assert_int_equal(vp_cost_model_new(shape, &costs[c], &mem, &cm, NULL),
                                         VP_OK);
                        vp_vgrid_metrics x;
                        vp_status rc =
                            vp_vgrid_measure_bw(g, (const int(*)[6])t, canonical, cm, &x, NULL);
                        assert_int_equal(rc, built);
                        if (rc != VP_OK) {
                            refused++;
                            vp_cost_model_free(cm);
                            continue;
                        }
                        vp_sim *sim = tu_sim(s, costs[c], &mem);
                        double bytes = 0;
                        for (int d = 0; sim->peak_bytes && d < p; d++)
                            bytes = sim->peak_bytes[d] > bytes ? sim->peak_bytes[d] : bytes;
                        assert_true(x.complete && x.makespan == sim->makespan &&
                                    x.span == vp_sim_longest_span(sim) && x.bubble == sim->bubble &&
                                    x.peak == sim->peak_max && x.peak_bytes == bytes);
                        vp_schedule *again = NULL;
                        assert_int_equal(vp_vgrid_schedule(g, NULL, &again, NULL), VP_OK);
                        assert_true(vp_schedule_equal(again, s));
                        assert_string_equal(again->family, "1f1b-v");
                        vp_schedule_free(again);
                        checked++;
                        vp_sim_free(sim);
                        vp_cost_model_free(cm);
                    }
                    vp_schedule_free(s);
                }
            }
            vp_schedule_free(shape);
            vp_vgrid_free(g);
        }
    }
    if (checked <= 100 || refused == 0)
        fail_msg("checked %d, refused %d", checked, refused);
}

/* A long run is the run one microbatch shorter with one period more: on every device the
 * ops of m microbatches are those of m-1 with six ops inserted in one place, the later
 * microbatches one on; and at m >= 2p the built peak is half the repeated block's (what
 * the V search prunes by). */
static void test_long_runs_repeat_a_period(void **state) {
    (void)state;
    for (int p = 4; p <= 10; p += 3) {
        vp_vblock blocks[40];
        int nb = sample_blocks(p, 13, blocks, 40), t[16][6];
        for (int b = 0; b < nb; b++) {
            for (int m = 2 * p; m <= 5 * p; m += p + 3) {
                vp_schedule *a = NULL, *z = NULL;
                assert_int_equal(vp_vblock_build(&blocks[b], p, m, NULL, &a, NULL), VP_OK);
                assert_int_equal(vp_vblock_build(&blocks[b], p, m + 1, NULL, &z, NULL), VP_OK);
                for (int d = 0; d < p; d++) {
                    const vp_oplist *x = &a->dev[d], *y = &z->dev[d];
                    assert_int_equal(y->n, x->n + 6);
                    int pre = 0, post = 0;
                    while (pre < x->n && x->ops[pre].kind == y->ops[pre].kind &&
                           x->ops[pre].stage == y->ops[pre].stage &&
                           x->ops[pre].mb == y->ops[pre].mb)
                        pre++;
                    while (post < x->n - pre) {
                        vp_op u = x->ops[x->n - 1 - post], v = y->ops[y->n - 1 - post];
                        if (u.kind != v.kind || u.stage != v.stage || u.mb + 1 != v.mb)
                            break;
                        post++;
                    }
                    assert_int_equal(pre + post, x->n);
                }
                vp_vgrid *g = NULL;
                assert_int_equal(vp_vgrid_new(p, m, &g, NULL), VP_OK);
                assert_int_equal(vp_vblock_slots(&blocks[b], p, t), 0);
                vp_sim *sim = tu_sim(a, tu_costs(1, 1, 1, 0), NULL);
                TU_NEAR(2 * sim->peak_max, vp_vgrid_peak(g, (const int(*)[6])t));
                vp_sim_free(sim);
                vp_vgrid_free(g);
                vp_schedule_free(a);
                vp_schedule_free(z);
            }
        }
    }
}

/* A grid memo (the planner's) changes nothing: a workspace using it measures every block,
 * built or found there, to the same figures and hands over the same schedule as one
 * without, under other costs on a second pass (found) and on a third with a memo too small
 * to keep any grid (built afresh); long runs take their periods with them. */
static void test_grid_memo_same_figures(void **state) {
    (void)state;
    vp_costs costs[] = {tu_costs(1, 2, 1, 0.25), tu_costs(1.1, 0.7, 3.3, 0.37)};
    vp_memcfg mem = vp_memcfg_default();
    vp_vgrid_memo *memo = NULL, *tiny = NULL;
    assert_int_equal(vp_vgrid_memo_new((size_t)64 << 20, &memo, NULL), VP_OK);
    assert_int_equal(vp_vgrid_memo_new(16, &tiny, NULL), VP_OK);
    for (int p = 3; p <= 8; p += 5) {
        vp_vblock blocks[12];
        int nb = sample_blocks(p, 131, blocks, 12), t[16][6];
        for (int m = p; m <= 9 * p; m += 4 * p) {
            vp_vgrid *plain = NULL, *shared = NULL;
            assert_int_equal(vp_vgrid_new(p, m, &plain, NULL), VP_OK);
            assert_int_equal(vp_vgrid_new(p, m, &shared, NULL), VP_OK);
            for (int pass = 0; pass < 3; pass++) {
                vp_vgrid_use_memo(shared, pass < 2 ? memo : tiny);
                for (int b = 0; b < nb; b++) {
                    assert_int_equal(vp_vblock_slots(&blocks[b], p, t), 0);
                    vp_schedule *s = NULL;
                    assert_int_equal(vp_vgrid_build(plain, (const int(*)[6])t, NULL, &s, NULL),
                                     VP_OK);
                    vp_cost_model *cm = tu_cm(s, costs[pass % 2], &mem);
                    vp_vgrid_metrics x, y;
                    vp_schedule *a = NULL, *z = NULL;
                    assert_int_equal(vp_vgrid_measure(plain, (const int(*)[6])t, cm, 0, &x, NULL),
                                     VP_OK);
                    assert_int_equal(vp_vgrid_measure(shared, (const int(*)[6])t, cm, 0, &y, NULL),
                                     VP_OK);
                    assert_true(x.makespan == y.makespan && x.span == y.span &&
                                x.bubble == y.bubble && x.peak == y.peak &&
                                x.peak_bytes == y.peak_bytes && x.complete == y.complete);
                    assert_int_equal(vp_vgrid_schedule(plain, NULL, &a, NULL), VP_OK);
                    assert_int_equal(vp_vgrid_schedule(shared, NULL, &z, NULL), VP_OK);
                    assert_true(vp_schedule_equal(a, z) && vp_schedule_equal(a, s));
                    vp_cost_model_free(cm);
                    vp_schedule_free(s);
                    vp_schedule_free(a);
                    vp_schedule_free(z);
                }
            }
            vp_vgrid_free(plain);
            vp_vgrid_free(shared);
        }
    }
    vp_vgrid_memo_free(memo);
    vp_vgrid_memo_free(tiny);
}

/* vp_vsearch_pattern numbers the distinct phase triples (F¹, B¹, B⁰ in 1..5) in
 * lexicographic order, and leaves a block alone past the last. */
static void test_patterns_in_order(void **state) {
    (void)state;
    int i = 0;
    for (int f1 = 1; f1 <= 5; f1++)
        for (int b1 = 1; b1 <= 5; b1++)
            for (int b0 = 1; b0 <= 5; b0++) {
                if (f1 == b1 || f1 == b0 || b1 == b0)
                    continue;
                vp_vblock vb = {0};
                vp_vsearch_pattern(i++, &vb);
                assert_true(vb.f1 == f1 && vb.b1 == b1 && vb.b0 == b0);
            }
    assert_int_equal(i, VP_VSEARCH_PATTERNS);
    vp_vblock vb = {.f1 = 7};
    vp_vsearch_pattern(VP_VSEARCH_PATTERNS, &vb);
    assert_int_equal(vb.f1, 7);
}

/* vp_vgrid_schedule hands over the block the last measure built, and refuses before one. */
static void test_schedule_of_measure(void **state) {
    (void)state;
    vp_vgrid *g = NULL;
    vp_schedule *s = NULL, *direct = NULL;
    vp_error err = {0};
    assert_int_equal(vp_vgrid_new(6, 40, &g, NULL), VP_OK);
    assert_int_equal(vp_vgrid_schedule(g, NULL, &s, &err), VP_EINVAL);
    assert_null(s);
    vp_vblock vb;
    int t[6][6];
    assert_int_equal(vp_vblock_preset("v-half", 6, &vb, NULL), VP_OK);
    assert_int_equal(vp_vblock_slots(&vb, 6, t), 0);
    assert_int_equal(vp_vblock_build(&vb, 6, 40, "x", &direct, NULL), VP_OK);
    vp_costs c = tu_costs(1, 1, 1, 0);
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    assert_int_equal(vp_cost_model_new(direct, &c, &mem, &cm, NULL), VP_OK);
    vp_vgrid_metrics x;
    assert_int_equal(vp_vgrid_measure(g, (const int(*)[6])t, cm, 0, &x, NULL), VP_OK);
    assert_int_equal(vp_vgrid_schedule(g, "x", &s, NULL), VP_OK);
    assert_true(vp_schedule_equal(s, direct));
    assert_string_equal(s->family, "x");
    vp_cost_model_free(cm);
    vp_schedule_free(s);
    vp_schedule_free(direct);
    vp_vgrid_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_figures),
        cmocka_unit_test(test_peaks_and_bubbles_grid),
        cmocka_unit_test(test_1f1bv_grid),
        cmocka_unit_test(test_start_slots),
        cmocka_unit_test(test_framework_agrees),
        cmocka_unit_test(test_bad_blocks),
        cmocka_unit_test(test_shapes_grid),
        cmocka_unit_test(test_cost_aware_steady_state),
        cmocka_unit_test(test_memory_independent_of_costs),
        cmocka_unit_test(test_measure_matches_simulate),
        cmocka_unit_test(test_measure_bw_matches_simulate),
        cmocka_unit_test(test_long_runs_repeat_a_period),
        cmocka_unit_test(test_schedule_of_measure),
        cmocka_unit_test(test_grid_memo_same_figures),
        cmocka_unit_test(test_patterns_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
