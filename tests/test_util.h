/* Small helpers shared by the cmocka tests (header-only, static). */
#ifndef VPIPE_TEST_UTIL_H
#define VPIPE_TEST_UTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vpipe/families.h"
#include "vpipe/io.h"
#include "vpipe/sim.h"

/* Builds family for (p, m, v) with costs; fails the test on error. */
static inline vp_schedule *tu_build(const char *family, int p, int m, int v, vp_costs costs) {
    vp_spec spec = vp_spec_make(p, m);
    spec.v = v;
    spec.costs = costs;
    vp_schedule *s = NULL;
    vp_error err = {0};
    vp_status rc = vp_family_build(family, &spec, &s, &err);
    if (rc != VP_OK)
        fail_msg("%s p=%d m=%d v=%d: %s", family, p, m, v, err.message);
    return s;
}

/* A new empty schedule of the shape; fails the test on error. */
static inline vp_schedule *tu_schedule(const char *family, int p, int S, int m,
                                       vp_placement_kind placement) {
    vp_schedule *s = NULL;
    vp_error err = {0};
    vp_shape shape = {.p = p, .S = S, .m = m, .placement = placement};
    if (vp_schedule_new(family, shape, &s, &err) != VP_OK)
        fail_msg("schedule: %s", err.message);
    return s;
}

/* A new cost model of s under costs and memory model mem (NULL = release-at-W); fails the
 * test on error. */
static inline vp_cost_model *tu_cm(const vp_schedule *s, vp_costs costs, const vp_memcfg *mem) {
    vp_memcfg m = mem ? *mem : vp_memcfg_default();
    vp_error err = {0};
    vp_cost_model *cm = NULL;
    if (vp_cost_model_new(s, &costs, &m, &cm, &err) != VP_OK)
        fail_msg("cost model: %s", err.message);
    return cm;
}

/* Simulates s under costs and memory model mem (NULL = release-at-W). */
static inline vp_sim *tu_sim(const vp_schedule *s, vp_costs costs, const vp_memcfg *mem) {
    vp_error err = {0};
    vp_cost_model *cm = tu_cm(s, costs, mem);
    vp_sim *sim = NULL;
    if (vp_simulate(s, cm, &sim, &err) != VP_OK)
        fail_msg("simulate %s: %s", s->family, err.message);
    vp_cost_model_free(cm);
    return sim;
}

static inline vp_costs tu_costs(double f, double b, double w, double c) {
    vp_costs k = vp_costs_default();
    k.f = f;
    k.b = b;
    k.w = w;
    k.c = c;
    return k;
}

/* Spec (p <= 8, m) under the k-th (0 <= k < 5) of five settings that exercise a generator:
 * uneven costs with a growing hop (k = 0, 1), per-device costs (2), the ZB memory split (3),
 * zero F and W (4). */
static inline vp_spec tu_varied_spec(int p, int m, int k) {
    static double dev_f[8] = {1, 2, 1.5, 1, 3, 1, 2, 1}, dev_b[8] = {2, 1, 2, 2.5, 1, 2, 1, 3};
    vp_spec spec = vp_spec_make(p, m);
    assert_true(p <= 8 && k >= 0 && k < 5);
    spec.costs = k == 4 ? tu_costs(0, 1.5, 0, 0.3) : tu_costs(1 + k, 2, 1.5, 0.1 * k);
    if (k == 2) {
        spec.costs.dev_f = dev_f;
        spec.costs.dev_b = dev_b;
    }
    if (k == 3)
        assert_int_equal(vp_memcfg_parse("zb:0.4", &spec.mem, NULL), VP_OK);
    return spec;
}

#define TU_NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-9 * (1 + fabs((double)(b))))

#endif
