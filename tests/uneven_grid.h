/* The uneven cost grid of issue 28, shared by test_vgreedy and bench/bench_greedy
 * (header-only, static): UG_SETS cost sets, F, B and W each in [1, 4] in steps of 0.25
 * (never all three equal), hop c in [0, F/2] in steps of 0.05, from a fixed quasi-random
 * sequence (the additive recurrence of the 4-dimensional golden ratio, x^5 = x + 1), each
 * at p in {4, 8, 16} and m in {2p, 4p}: UG_CASES cases. */
#ifndef VPIPE_TESTS_UNEVEN_GRID_H
#define VPIPE_TESTS_UNEVEN_GRID_H

#include <math.h>

#include "vpipe/sim.h"

#define UG_SETS 50
#define UG_CASES (UG_SETS * 6)

typedef struct ug_case {
    int set, p, m;
    vp_costs costs;
} ug_case;

/* Point k >= 0 of the sequence in [0, 1)^4. */
static inline void ug_point(int k, double u[4]) {
    double phi = 1.1673039782614187, a = 1; /* x^5 = x + 1 */
    for (int d = 0; d < 4; d++) {
        a /= phi;
        u[d] = fmod(0.5 + (k + 1) * a, 1.0);
    }
}

/* Cost set i (0 <= i < UG_SETS): the i-th point whose F, B, W are not all equal. */
static inline vp_costs ug_costs(int i) {
    vp_costs c = vp_costs_default();
    for (int k = 0, found = -1; found < i; k++) {
        double u[4];
        ug_point(k, u);
        c.f = round(4 * (1 + 3 * u[0])) / 4;
        c.b = round(4 * (1 + 3 * u[1])) / 4;
        c.w = round(4 * (1 + 3 * u[2])) / 4;
        c.c = round(20 * 0.5 * c.f * u[3]) / 20;
        found += !(c.f == c.b && c.b == c.w);
    }
    return c;
}

/* Case k (0 <= k < UG_CASES): set k / 6, p = 4 << (k / 2 % 3), m = 2p or 4p. */
static inline ug_case ug_case_at(int k) {
    ug_case x = {.set = k / 6, .p = 4 << (k / 2 % 3)};
    x.m = (2 + 2 * (k % 2)) * x.p;
    x.costs = ug_costs(x.set);
    return x;
}

#endif
