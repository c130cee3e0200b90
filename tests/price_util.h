/* Helpers shared by the price tests (header-only, static): presets that must exist and a
 * family priced or the test fails. */
#ifndef VPIPE_PRICE_UTIL_H
#define VPIPE_PRICE_UTIL_H

#include "price_anchors.h"
#include "test_util.h"
#include "vpipe/price.h"

static inline vp_arch tp_preset(const char *name) {
    vp_arch a;
    vp_error err = {0};
    if (vp_arch_preset(name, &a, &err) != VP_OK)
        fail_msg("%s: %s", name, err.message);
    return a;
}

static inline vp_gpu tp_gpu(const char *name) {
    vp_gpu g;
    vp_error err = {0};
    if (vp_gpu_preset(name, &g, &err) != VP_OK)
        fail_msg("%s: %s", name, err.message);
    return g;
}

/* Prices family at (p, m) under su; fails the test on error. */
static inline vp_price_result *tp_price(const vp_price_setup *su, const char *family, int p,
                                        int m) {
    vp_spec spec = vp_spec_make(p, m);
    vp_price_result *r = NULL;
    vp_error err = {0};
    if (vp_price_family(su, family, &spec, &r, NULL, &err) != VP_OK)
        fail_msg("%s %s p=%d m=%d: %s", su->arch->name, family, p, m, err.message);
    return r;
}

/* Checks that pricing refuses model a under workload t with a message containing want. */
static inline void tp_check_refused(const vp_arch *a, const vp_workload *t, const char *want) {
    vp_price_setup su = {.arch = a, .work = t};
    vp_error err = {0};
    assert_int_equal(vp_price_check(&su, &err), VP_EINVAL);
    if (!strstr(err.message, want))
        fail_msg("'%s' lacks '%s'", err.message, want);
}

/* A model on an accelerator under a workload, and the setup pricing them (su points at the
 * other three). */
typedef struct tp_priced {
    vp_arch a;
    vp_gpu g;
    vp_workload t;
    vp_price_setup su;
} tp_priced;

/* Qwen3-30B-A3B on H100s at sequence 4096 with FlashAttention, DP 16, the layers split
 * evenly (the expert tests' model). */
typedef tp_priced qwen;

static inline void qwen_setup(qwen *q) {
    q->a = tp_preset("qwen3-30b-a3b");
    q->g = tp_gpu("h100-80gb");
    q->t = vp_workload_default(&q->a);
    q->t.seq = 4096;
    q->t.flash = true;
    q->t.dp = 16;
    q->su = (vp_price_setup){.arch = &q->a, .gpu = &q->g, .work = &q->t, .split = VP_SPLIT_EVEN};
}

#endif
