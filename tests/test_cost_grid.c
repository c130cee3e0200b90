/* The cost-aware V families on a grid of uneven costs: 54 cost sets (F, B, W in 1..4 per
 * slice, hop c in 0..0.5) at p in {4, 8, 16}. For every set, v-min, v-half and v-zb are
 * never behind their fixed §4 block (vp_vblock_preset built by vp_vblock_build, the
 * families' construction before they searched) in bubble, and never need more memory;
 * v-zb is never behind zb-v either. Prints, per family, the mean and the worst change in
 * bubble points against the fixed block and against zb-v. VP_TEST_QUICK=1 (sanitizer
 * builds) checks every third set. */
#include <stdlib.h>

#include "test_util.h"

#define N_SETS 54

typedef struct cost_set {
    int p, m;
    vp_costs costs;
} cost_set;

/* Set i of the grid: p cycles through 4, 8, 16; m is 2p or 3p; F, B, W in steps of 0.5 from
 * a fixed linear congruential sequence, re-drawn until they are not all equal. */
static cost_set grid_set(int i) {
    static const int ps[] = {4, 8, 16};
    unsigned x = 2654435761u * (unsigned)(i + 1);
    cost_set cs = {.p = ps[i % 3]};
    cs.m = (2 + (i / 3) % 2) * cs.p;
    double v[4];
    do {
        for (int k = 0; k < 4; k++) {
            x = x * 1103515245u + 12345u;
            v[k] = (x >> 16) % 7;
        }
    } while (v[0] == v[1] && v[1] == v[2]);
    cs.costs = tu_costs(1 + v[0] / 2, 1 + v[1] / 2, 1 + v[2] / 2, 0.1 * ((int)v[3] % 6));
    return cs;
}

/* Bubble and peak of s under cs's costs. */
static void measure(const vp_schedule *s, const cost_set *cs, double *bubble, double *peak) {
    vp_sim *sim = tu_sim(s, cs->costs, NULL);
    *bubble = sim->bubble;
    *peak = sim->peak_max;
    vp_sim_free(sim);
}

/* Running mean and worst (largest) change in bubble points. */
typedef struct change {
    double sum, worst;
    int n;
} change;

static void add_change(change *c, double points) {
    c->worst = c->n == 0 || points > c->worst ? points : c->worst;
    c->sum += points;
    c->n++;
}

static void test_never_behind(void **state) {
    (void)state;
    const char *fam[] = {"v-min", "v-half", "v-zb"};
    change vs_block[3] = {{0}}, vs_zbv = {0};
    int step = getenv("VP_TEST_QUICK") ? 3 : 1, improved = 0;
    for (int i = 0; i < N_SETS; i += step) {
        cost_set cs = grid_set(i);
        double zbv_bubble, zbv_peak;
        vp_schedule *zbv = tu_build("zb-v", cs.p, cs.m, 0, cs.costs);
        measure(zbv, &cs, &zbv_bubble, &zbv_peak);
        vp_schedule_free(zbv);
        for (int f = 0; f < 3; f++) {
            vp_vblock vb;
            vp_schedule *fixed = NULL, *now = tu_build(fam[f], cs.p, cs.m, 0, cs.costs);
            assert_int_equal(vp_vblock_preset(fam[f], cs.p, &vb, NULL), VP_OK);
            assert_int_equal(vp_vblock_build(&vb, cs.p, cs.m, NULL, &fixed, NULL), VP_OK);
            double b_now, p_now, b_fixed, p_fixed;
            measure(now, &cs, &b_now, &p_now);
            measure(fixed, &cs, &b_fixed, &p_fixed);
            if (b_now > b_fixed + 1e-12 || p_now > p_fixed + 1e-9)
                fail_msg("%s p=%d m=%d F=%g B=%g W=%g c=%g: bubble %.4f peak %g, fixed block "
                         "%.4f peak %g",
                         fam[f], cs.p, cs.m, cs.costs.f, cs.costs.b, cs.costs.w, cs.costs.c, b_now,
                         p_now, b_fixed, p_fixed);
            add_change(&vs_block[f], 100 * (b_now - b_fixed));
            improved += b_now < b_fixed - 1e-12;
            if (f == 2) {
                if (b_now > zbv_bubble + 1e-12)
                    fail_msg("v-zb p=%d m=%d F=%g B=%g W=%g c=%g: bubble %.4f, zb-v %.4f", cs.p,
                             cs.m, cs.costs.f, cs.costs.b, cs.costs.w, cs.costs.c, b_now,
                             zbv_bubble);
                add_change(&vs_zbv, 100 * (b_now - zbv_bubble));
            }
            vp_schedule_free(now);
            vp_schedule_free(fixed);
        }
    }
    printf("cost grid: %d sets (p 4, 8, 16), bubble change in points, mean / worst:\n", vs_zbv.n);
    for (int f = 0; f < 3; f++)
        printf("  %-7s vs fixed block %+.3f / %+.3f\n", fam[f], vs_block[f].sum / vs_block[f].n,
               vs_block[f].worst);
    printf("  v-zb    vs zb-v        %+.3f / %+.3f\n", vs_zbv.sum / vs_zbv.n, vs_zbv.worst);
    assert_true(improved > 0); /* the grid does hold costs where the fixed blocks lose */
}

/* The grid is what the header says: 54 sets, uneven, in range, every p. */
static void test_grid_shape(void **state) {
    (void)state;
    int per_p[3] = {0};
    for (int i = 0; i < N_SETS; i++) {
        cost_set cs = grid_set(i);
        vp_costs *k = &cs.costs;
        assert_true(k->f >= 1 && k->f <= 4 && k->b >= 1 && k->b <= 4 && k->w >= 1 && k->w <= 4);
        assert_true(k->c >= 0 && k->c <= 0.5 + 1e-12);
        assert_false(k->f == k->b && k->b == k->w);
        assert_true(cs.m == 2 * cs.p || cs.m == 3 * cs.p);
        per_p[cs.p == 4 ? 0 : cs.p == 8 ? 1 : 2]++;
    }
    assert_int_equal(per_p[0], 18);
    assert_int_equal(per_p[1], 18);
    assert_int_equal(per_p[2], 18);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_shape),
        cmocka_unit_test(test_never_behind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
