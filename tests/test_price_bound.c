/* Real-model pricing, what a layout tells before simulating: the step-time and memory
 * bounds never exceed what pricing the schedule gives, for every family on four setups
 * (measured costs and torchtitan's pipeline among them), and the memory of an op order
 * equals the priced memory. The layout is the planner's: built once for a shape of 2p
 * microbatches and priced for any m, as the schedule priced alone is. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "price_util.h"

typedef struct bound_case {
    const char *model;
    int seq, mbs, tp, p, m;
    bool measured;
    vp_recompute recompute;
    vp_framework framework;
} bound_case;

static const bound_case cases[] = {
    {"llama3-8b", 4096, 1, 1, 4, 8, false, VP_RECOMPUTE_NONE, VP_FRAMEWORK_MEGATRON},
    {"gpt3-175b", 2048, 2, 8, 8, 24, false, VP_RECOMPUTE_FULL, VP_FRAMEWORK_MEGATRON},
    {"zb-1.5b", 1024, 6, 1, 8, 16, true, VP_RECOMPUTE_NONE, VP_FRAMEWORK_MEGATRON},
    {"llama3-8b", 4096, 1, 2, 4, 20, false, VP_RECOMPUTE_FULL, VP_FRAMEWORK_TORCHTITAN},
};

/* Bounds of family on the layout of its shape, checked against the schedule priced on
 * it and alone. */
static void check_family(const vp_price_setup *su, const char *family, int p, int m) {
    vp_spec spec = vp_spec_make(p, m), shape = vp_spec_make(p, 2 * p);
    vp_schedule *probe = NULL, *s = NULL;
    vp_error err = {0};
    if (vp_family_build(family, &shape, &probe, &err) != VP_OK ||
        vp_family_build(family, &spec, &s, &err) != VP_OK) {
        vp_schedule_free(probe);
        return; /* the family does not take this shape */
    }
    vp_schedule_free(s);
    s = NULL;
    vp_price_layout *lay = NULL;
    if (vp_price_layout_new(su, probe, &lay, &err) != VP_OK)
        fail_msg("%s layout: %s", family, err.message);
    vp_price_bound b;
    assert_int_equal(vp_price_layout_bound(su, lay, m, &b, &err), VP_OK);
    bool mean;
    if (vp_price_build(lay, family, &spec, &s, &mean, &err) != VP_OK)
        fail_msg("%s build: %s", family, err.message);
    vp_rank_memory *mem = calloc((size_t)p, sizeof *mem);
    assert_int_equal(vp_price_layout_memory(lay, s, mem, &err), VP_OK);
    vp_price_result *r = NULL;
    if (vp_price_on_layout(su, lay, s, &r, &err) != VP_OK)
        fail_msg("%s price: %s", family, err.message);
    if (b.step_time_s > r->step_time_s * (1 + 1e-12) || b.makespan_s > r->makespan_s * (1 + 1e-12))
        fail_msg("%s %s p=%d m=%d: step bound %.9g > %.9g", su->arch->name, family, p, m,
                 b.step_time_s, r->step_time_s);
    if (b.memory_max_bytes > r->memory_max_bytes * (1 + 1e-12))
        fail_msg("%s %s: memory bound %.0f > %.0f", su->arch->name, family, b.memory_max_bytes,
                 r->memory_max_bytes);
    assert_true(b.step_time_s > 0.5 * r->step_time_s); /* a bound worth pruning with */
    vp_price_result *alone = NULL;
    if (vp_price_schedule(su, s, &alone, &err) != VP_OK)
        fail_msg("%s alone: %s", family, err.message);
    for (int d = 0; d < p; d++) {
        if (fabs(mem[d].total - r->memory[d].total) > 1e-9 * r->memory[d].total)
            fail_msg("%s rank %d: order memory %.0f, priced %.0f", family, d, mem[d].total,
                     r->memory[d].total);
        if (fabs(alone->memory[d].total - r->memory[d].total) > 1e-9 * r->memory[d].total)
            fail_msg("%s %s m=%d rank %d: %.0f bytes priced alone, %.0f on the shape's layout",
                     su->arch->name, family, m, d, alone->memory[d].total, r->memory[d].total);
    }
    vp_price_result_free(alone);
    vp_price_result_free(r);
    free(mem);
    vp_schedule_free(s);
    vp_price_layout_free(lay);
    vp_schedule_free(probe);
}

static void test_bounds_hold(void **state) {
    (void)state;
    vp_gpu g = tp_gpu("a100-80gb");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bound_case *c = &cases[i];
        vp_arch a = tp_preset(c->model);
        vp_workload w = vp_workload_default(&a);
        w.seq = c->seq;
        w.mbs = c->mbs;
        w.tp = c->tp;
        w.sp = c->tp > 1;
        w.dp = 2;
        w.zero = 1;
        w.recompute = c->recompute;
        w.framework = c->framework;
        vp_costs k = vp_costs_default();
        k.f = 18.5, k.b = 18.1, k.w = 9.3, k.c = 0.6;
        vp_price_setup su = {
            .arch = &a, .gpu = &g, .work = &w, .measured = c->measured ? &k : NULL};
        for (int f = 0; f < vp_family_count(); f++)
            check_family(&su, vp_family_at(f)->name, c->p, c->m);
    }
}

/* Refusals: no microbatch, and pricing on a layout of another shape. */
static void test_refusals(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload w = vp_workload_default(&a);
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &w};
    vp_schedule *single = tu_build("1f1b", 4, 8, 0, vp_costs_default()),
                *v = tu_build("v-half", 4, 8, 0, vp_costs_default());
    vp_price_layout *lay = NULL;
    vp_error err = {0};
    assert_int_equal(vp_price_layout_new(&su, single, &lay, &err), VP_OK);
    vp_price_bound b;
    assert_int_equal(vp_price_layout_bound(&su, lay, 0, &b, &err), VP_EINVAL);
    vp_price_result *r = NULL;
    assert_int_equal(vp_price_on_layout(&su, lay, v, &r, &err), VP_EINVAL);
    assert_null(r);
    assert_non_null(strstr(err.message, "another shape"));
    vp_rank_memory mem[4];
    assert_int_equal(vp_price_layout_memory(lay, v, mem, &err), VP_EINVAL);
    vp_price_layout_free(lay);
    vp_schedule_free(single);
    vp_schedule_free(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounds_hold),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
