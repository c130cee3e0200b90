/* The memory-budget planner: budgets as written, the acceptance bound on the frontier at
 * unit costs, answers within the budget, clear errors, the V-Min / V-Half choice under
 * unequal costs, determinism whatever the number of threads, and the V search's space. */
#include <stdlib.h>

#include "test_util.h"
#include "vpipe/plan.h"

static vp_plan *plan_for(int p, int m, vp_costs costs, vp_budget_kind kind, double value) {
    vp_spec spec = vp_spec_make(p, m);
    spec.costs = costs;
    vp_budget b = {.kind = kind, .value = value};
    vp_plan *plan = NULL;
    vp_error err = {0};
    if (vp_plan_run(&spec, &b, &plan, &err) != VP_OK)
        fail_msg("plan p=%d m=%d budget %g: %s", p, m, value, err.message);
    return plan;
}

static void test_budget_parse(void **state) {
    (void)state;
    vp_budget b;
    assert_int_equal(vp_budget_parse("0.5", &b, NULL), VP_OK);
    assert_int_equal(b.kind, VP_BUDGET_FRACTION);
    TU_NEAR(b.value, 0.5);
    assert_int_equal(vp_budget_parse("4u", &b, NULL), VP_OK);
    assert_int_equal(b.kind, VP_BUDGET_UNITS);
    TU_NEAR(b.value, 4);
    assert_int_equal(vp_budget_parse("1.5e6b", &b, NULL), VP_OK);
    assert_int_equal(b.kind, VP_BUDGET_BYTES);
    TU_NEAR(b.value, 1.5e6);
    assert_int_equal(vp_budget_parse("1.5GiB", &b, NULL), VP_OK);
    assert_int_equal(b.kind, VP_BUDGET_BYTES);
    TU_NEAR(b.value, 1.5 * 1024 * 1024 * 1024);
    assert_int_equal(vp_budget_parse("80GB", &b, NULL), VP_OK);
    assert_int_equal(b.kind, VP_BUDGET_BYTES);
    TU_NEAR(b.value, 80e9);
    assert_int_equal(vp_budget_parse("64KiB", &b, NULL), VP_OK);
    TU_NEAR(b.value, 65536);
    const char *bad[] = {"",    "abc", "0",   "-1",    "4x",      "4uu", "nan",
                         "inf", "u",   "4Gb", "4GiBs", "1e300TB", "GiB", "4 GiB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vp_error err = {0};
        assert_int_equal(vp_budget_parse(bad[i], &b, &err), VP_EPARSE);
        assert_true(err.column >= 1 && err.message[0]);
    }
}

/* Unit costs, m = 4p, p in {8, 16}: for every k (chunk activations) from V-Min's memory to
 * V-ZB's, the best schedule on the frontier within k/2 units idles at most
 * max(0, 6p-1-3k) + 1 chunk slots (longest span - 6m); and planning with budget k/2
 * returns a schedule within it that is at least as good. */
static void test_frontier_meets_bound(void **state) {
    (void)state;
    vp_costs c = tu_costs(2, 2, 2, 0);
    for (int p = 8; p <= 16; p *= 2) {
        int m = 4 * p;
        vp_plan *all = plan_for(p, m, c, VP_BUDGET_UNITS, 4.0 * p);
        /* Pareto: increasing peak, strictly decreasing makespan */
        for (int i = 1; i < all->n_frontier; i++) {
            const vp_plan_candidate *a = &all->candidates[all->frontier[i - 1]];
            const vp_plan_candidate *b = &all->candidates[all->frontier[i]];
            assert_true(a->peak < b->peak && a->makespan > b->makespan);
        }
        for (int k = 2 * ((p + 4) / 3); k <= 2 * p; k++) {
            double bound = (6 * p - 1 - 3 * k > 0 ? 6 * p - 1 - 3 * k : 0) + 1;
            vp_plan *plan = plan_for(p, m, c, VP_BUDGET_UNITS, k / 2.0);
            vp_sim *sim = tu_sim(plan->schedule, c, NULL);
            double idle = vp_sim_longest_span(sim) - 6.0 * m;
            if (sim->peak_max > k / 2.0 + 1e-9 || idle > bound + 1e-9)
                fail_msg("p=%d k=%d: %s %s peak %g, idle %g (bound %g)", p, k,
                         plan->schedule->family, plan->candidates[plan->chosen].params,
                         sim->peak_max, idle, bound);
            TU_NEAR(sim->makespan, plan->candidates[plan->chosen].makespan);
            TU_NEAR(sim->peak_max, plan->candidates[plan->chosen].peak);
            assert_true(plan->candidates[plan->chosen].fits);
            vp_sim_free(sim);
            vp_plan_free(plan);
        }
        vp_plan_free(all);
    }
}

/* Budgets as fractions of 1F1B's peak, over a grid of shapes and costs: the answer fits,
 * and no fitting candidate is faster. */
static void test_answer_fits_grid(void **state) {
    (void)state;
    vp_costs costs[3] = {tu_costs(1, 1, 1, 0), tu_costs(1, 2, 1, 0), tu_costs(2, 1, 1.5, 0.1)};
    double fractions[] = {0.4, 0.55, 0.75, 1.0, 1.6};
    for (int p = 2; p <= 6; p += 2)
        for (int k = 0; k < 3; k++)
            for (int f = 0; f < 5; f++) {
                int m = 2 * p + k;
                vp_spec spec = vp_spec_make(p, m);
                spec.costs = costs[k];
                vp_budget b = {.kind = VP_BUDGET_FRACTION, .value = fractions[f]};
                vp_plan *plan = NULL;
                vp_error err = {0};
                vp_status rc = vp_plan_run(&spec, &b, &plan, &err);
                if (rc != VP_OK) { /* only when the budget is below every schedule */
                    assert_int_equal(rc, VP_EINVAL);
                    assert_non_null(strstr(err.message, "smallest peak"));
                    continue;
                }
                TU_NEAR(plan->ref_peak, p < m ? p : m);
                TU_NEAR(plan->budget, fractions[f] * plan->ref_peak);
                vp_sim *sim = tu_sim(plan->schedule, costs[k], NULL);
                assert_true(sim->peak_max <= plan->budget + 1e-9);
                for (int i = 0; i < plan->n_candidates; i++)
                    if (plan->candidates[i].fits)
                        assert_true(plan->candidates[i].makespan >= sim->makespan - 1e-9);
                assert_int_equal(vp_schedule_validate(plan->schedule, NULL), VP_OK);
                vp_sim_free(sim);
                vp_plan_free(plan);
            }
}

/* A budget below everything names the smallest peak (the greedy V search's, one
 * microbatch's two chunks: 1 unit); bytes need the unit's size. */
static void test_errors(void **state) {
    (void)state;
    vp_spec spec = vp_spec_make(8, 32);
    vp_budget b = {.kind = VP_BUDGET_UNITS, .value = 0.9};
    vp_plan *plan = (vp_plan *)1;
    vp_error err = {0};
    assert_int_equal(vp_plan_run(&spec, &b, &plan, &err), VP_EINVAL);
    assert_null(plan);
    assert_non_null(strstr(err.message, "smallest peak is 1 units (v-greedy limit=1u)"));
    b.kind = VP_BUDGET_BYTES;
    b.value = 1e9;
    assert_int_equal(vp_plan_run(&spec, &b, &plan, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "bytes"));
    b.kind = VP_BUDGET_UNITS;
    b.value = -2;
    assert_int_equal(vp_plan_run(&spec, &b, &plan, &err), VP_EINVAL);
    spec.p = 0;
    b.value = 2;
    assert_int_equal(vp_plan_run(&spec, &b, &plan, &err), VP_EINVAL);
}

/* With the unit's size known, a byte budget compares bytes. */
static void test_bytes(void **state) {
    (void)state;
    vp_spec spec = vp_spec_make(4, 8);
    spec.mem.unit_bytes = 1000;
    vp_budget b = {.kind = VP_BUDGET_BYTES, .value = 3000};
    vp_plan *plan = NULL;
    assert_int_equal(vp_plan_run(&spec, &b, &plan, NULL), VP_OK);
    assert_true(plan->budget_in_bytes);
    assert_true(plan->candidates[plan->chosen].peak_bytes <= 3000 + 1e-6);
    assert_true(plan->candidates[plan->chosen].peak <= 3 + 1e-9);
    vp_plan_free(plan);
}

/* F=1, B=2, W=1 at p=8: V-Min's stable phase runs one microbatch per 3*max(F,B,W) = 6
 * against 4 of work; with 5 units V-Min (4 units) and V-Half (5) both fit and V-Min is
 * not chosen; the reason says why, and both are among the candidates. */
static void test_vmin_loses_to_vhalf(void **state) {
    (void)state;
    vp_plan *plan = plan_for(8, 32, tu_costs(1, 2, 1, 0), VP_BUDGET_UNITS, 5);
    int vmin = -1, vhalf = -1;
    for (int i = 0; i < plan->n_candidates; i++) {
        if (!strcmp(plan->candidates[i].family, "v-min"))
            vmin = i;
        if (!strcmp(plan->candidates[i].family, "v-half"))
            vhalf = i;
    }
    assert_true(vmin >= 0 && vhalf >= 0);
    assert_true(plan->candidates[vmin].fits && plan->candidates[vhalf].fits);
    assert_true(plan->candidates[vhalf].makespan < plan->candidates[vmin].makespan);
    assert_int_not_equal(plan->chosen, vmin);
    assert_true(plan->candidates[plan->chosen].makespan <= plan->candidates[vhalf].makespan);
    assert_non_null(strstr(plan->reason, "v-min"));
    assert_non_null(strstr(plan->reason, "6*max(F,B,W)"));
    vp_plan_free(plan);
    /* at equal costs V-Min is not slowed down and the reason does not blame it */
    plan = plan_for(8, 32, tu_costs(1, 1, 1, 0), VP_BUDGET_UNITS, 5);
    assert_null(strstr(plan->reason, "6*max"));
    vp_plan_free(plan);
}

/* Every registered family that builds is a candidate; p = 1 has no V blocks; the result
 * does not change from run to run. */
static void test_candidates_and_determinism(void **state) {
    (void)state;
    vp_plan *a = plan_for(6, 15, tu_costs(1, 1.5, 0.5, 0), VP_BUDGET_FRACTION, 0.7);
    vp_plan *b = plan_for(6, 15, tu_costs(1, 1.5, 0.5, 0), VP_BUDGET_FRACTION, 0.7);
    for (int i = 0; i < vp_family_count(); i++) {
        vp_spec spec = vp_spec_make(6, 15);
        vp_schedule *s = NULL;
        int builds = vp_family_build(vp_family_at(i)->name, &spec, &s, NULL) == VP_OK, found = 0;
        vp_schedule_free(s);
        for (int j = 0; j < a->n_candidates; j++)
            found |= !strcmp(a->candidates[j].family, vp_family_at(i)->name);
        assert_int_equal(found, builds);
    }
    assert_true(a->blocks_built > 0 && a->blocks_built <= a->blocks_tried);
    assert_int_equal(a->chosen, b->chosen);
    assert_int_equal(a->n_candidates, b->n_candidates);
    assert_int_equal(a->n_frontier, b->n_frontier);
    for (int i = 0; i < a->n_candidates; i++) {
        assert_string_equal(a->candidates[i].params, b->candidates[i].params);
        TU_NEAR(a->candidates[i].makespan, b->candidates[i].makespan);
    }
    assert_true(vp_schedule_equal(a->schedule, b->schedule));
    vp_plan_free(a);
    vp_plan_free(b);
    vp_plan *one = plan_for(1, 4, tu_costs(1, 1, 1, 0), VP_BUDGET_FRACTION, 1);
    assert_int_equal(one->blocks_tried, 0);
    for (int i = 0; i < one->n_candidates; i++)
        assert_false(one->candidates[i].is_vblock);
    vp_plan_free(one);
}

/* A chosen V block rebuilds to the same schedule through the public API. */
static void test_vblock_rebuilds(void **state) {
    (void)state;
    vp_plan *plan = plan_for(8, 24, tu_costs(1, 1, 1, 0), VP_BUDGET_UNITS, 4.5);
    const vp_plan_candidate *c = &plan->candidates[plan->chosen];
    assert_true(c->is_vblock);
    vp_spec spec = vp_spec_make(8, 24);
    vp_schedule *s = NULL;
    assert_int_equal(vp_vblock_build(&c->vblock, spec.p, spec.m, "v-block", &s, NULL), VP_OK);
    assert_true(vp_schedule_equal(s, plan->schedule));
    char buf[96];
    assert_string_equal(vp_vblock_format(&c->vblock, 8, buf, sizeof buf), c->params);
    vp_schedule_free(s);
    vp_plan_free(plan);
}

/* Planning with 1, 2 or 3 threads gives the same answer: candidates, frontier, counters
 * and schedule, at unequal costs (where nothing is pruned by the unit-cost bound) and at
 * unit costs (where the bound prunes). */
static void test_threads_same_answer(void **state) {
    (void)state;
    vp_costs costs[] = {tu_costs(1, 2.5, 1.5, 0.2), tu_costs(1, 1, 1, 0)};
    for (int c = 0; c < 2; c++) {
        vp_plan *plan[3];
        for (int t = 0; t < 3; t++) {
            vp_spec spec = vp_spec_make(16, 40); /* large enough to share blocks out */
            spec.costs = costs[c];
            spec.threads = t + 1;
            vp_budget b = {.kind = VP_BUDGET_UNITS, .value = 8};
            assert_int_equal(vp_plan_run(&spec, &b, &plan[t], NULL), VP_OK);
        }
        for (int t = 1; t < 3; t++) {
            const vp_plan *a = plan[0], *b = plan[t];
            assert_int_equal(a->blocks_tried, b->blocks_tried);
            assert_int_equal(a->blocks_built, b->blocks_built);
            assert_int_equal(a->chosen, b->chosen);
            assert_int_equal(a->n_candidates, b->n_candidates);
            assert_int_equal(a->n_frontier, b->n_frontier);
            assert_memory_equal(a->frontier, b->frontier, (size_t)a->n_frontier * sizeof(int));
            for (int i = 0; i < a->n_candidates; i++) {
                assert_string_equal(a->candidates[i].params, b->candidates[i].params);
                assert_true(a->candidates[i].makespan == b->candidates[i].makespan);
                assert_true(a->candidates[i].peak == b->candidates[i].peak);
            }
            assert_true(vp_schedule_equal(a->schedule, b->schedule));
        }
        assert_true(plan[0]->blocks_built > 10); /* several batches were shared out */
        for (int t = 0; t < 3; t++)
            vp_plan_free(plan[t]);
    }
}

/* The V search's space: 60 phase patterns x (5 + 10(p-2)) offset choices, each block once,
 * offsets in range, a later δ⁰ only smaller and only with a change point inside. */
static void test_vsearch_space(void **state) {
    (void)state;
    assert_int_equal(vp_vsearch_size(1), 0);
    for (int p = 2; p <= 9; p++) {
        long n = vp_vsearch_size(p), keys = 6L * 6 * 6 * 6 * 6 * p;
        assert_int_equal(n, 60L * (5 + 10L * (p - 2)));
        char *seen = calloc((size_t)keys, 1);
        assert_non_null(seen);
        for (long i = 0; i < n; i++) {
            vp_vblock vb;
            vp_vsearch_block(p, i, &vb);
            assert_true(vb.f1 != vb.b1 && vb.f1 != vb.b0 && vb.b1 != vb.b0);
            assert_true(vb.d0 >= 1 && vb.d0 <= 5 && vb.d0b >= 1 && vb.d0b <= vb.d0);
            assert_true(vb.d1 == 1 && vb.d1b == 1);
            if (vb.d0b != vb.d0)
                assert_true(vb.k >= 1 && vb.k <= p - 2);
            else
                assert_int_equal(vb.k, p - 1);
            long key = ((((vb.f1 * 6L + vb.b1) * 6 + vb.b0) * 6 + vb.d0) * 6 + vb.d0b) * p + vb.k;
            assert_false(seen[key]);
            seen[key] = 1;
        }
        free(seen);
    }
}

/* The planner only builds V blocks within the budget: candidates above it are not listed,
 * and a tighter budget builds fewer blocks. */
static void test_budget_prunes(void **state) {
    (void)state;
    vp_plan *all = plan_for(8, 24, tu_costs(1, 2, 1, 0), VP_BUDGET_UNITS, 8);
    vp_plan *half = plan_for(8, 24, tu_costs(1, 2, 1, 0), VP_BUDGET_UNITS, 4);
    for (int i = 0; i < half->n_candidates; i++)
        if (half->candidates[i].is_vblock)
            assert_true(half->candidates[i].peak <= 4 + 1e-9);
    assert_true(half->blocks_built < all->blocks_built);
    assert_int_equal(half->blocks_tried, all->blocks_tried);
    vp_plan_free(all);
    vp_plan_free(half);
}

/* A time limit stops the search with the best found so far and says so: 1F1B is built
 * whatever the limit (a fraction refers to it), and no V block is gone through once the
 * limit passed; without a limit, or within a generous one, the answer is the full one.
 * (The limits are far from the work's duration: 1 ns, none, an hour.) */
static void test_time_limit(void **state) {
    (void)state;
    vp_spec spec = vp_spec_make(16, 64);
    assert_true(spec.time_limit_s == VP_PLAN_TIME_LIMIT_S);
    vp_budget b = {VP_BUDGET_FRACTION, 1.0};
    vp_plan *cut = NULL, *full = NULL, *hour = NULL;
    vp_error err = {0};
    spec.time_limit_s = 1e-9;
    assert_int_equal(vp_plan_run(&spec, &b, &cut, &err), VP_OK);
    assert_int_equal(cut->timed_out, 1);
    assert_non_null(strstr(cut->reason, "time limit reached"));
    assert_string_equal(cut->candidates[cut->chosen].family, "1f1b");
    assert_true(cut->ref_peak > 0);
    assert_true(cut->blocks_seen == 0 && cut->blocks_tried == vp_vsearch_size(16));
    spec.time_limit_s = 0;
    assert_int_equal(vp_plan_run(&spec, &b, &full, &err), VP_OK);
    spec.time_limit_s = 3600;
    assert_int_equal(vp_plan_run(&spec, &b, &hour, &err), VP_OK);
    assert_int_equal(full->timed_out, 0);
    assert_null(strstr(full->reason, "time limit"));
    assert_int_equal(full->blocks_seen, full->blocks_tried);
    assert_true(full->candidates[full->chosen].makespan < cut->candidates[cut->chosen].makespan);
    assert_string_equal(full->reason, hour->reason);
    assert_int_equal(full->n_candidates, hour->n_candidates);
    /* a limit that leaves nothing within the budget says so */
    spec.time_limit_s = 1e-9;
    vp_plan *none = NULL;
    b.value = 0.5;
    assert_int_equal(vp_plan_run(&spec, &b, &none, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "time limit"));
    vp_plan_free(cut);
    vp_plan_free(full);
    vp_plan_free(hour);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_parse),
        cmocka_unit_test(test_frontier_meets_bound),
        cmocka_unit_test(test_answer_fits_grid),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_bytes),
        cmocka_unit_test(test_vmin_loses_to_vhalf),
        cmocka_unit_test(test_candidates_and_determinism),
        cmocka_unit_test(test_vblock_rebuilds),
        cmocka_unit_test(test_threads_same_answer),
        cmocka_unit_test(test_vsearch_space),
        cmocka_unit_test(test_budget_prunes),
        cmocka_unit_test(test_time_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
