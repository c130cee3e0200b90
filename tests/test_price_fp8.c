/* FP8 training priced (src/price/fp8.c): the linears' multiplies at the FP8 rate, the casts
 * of their operands, the FP8 weight copies and the linear inputs saved in FP8, the weights
 * cast once per step, the refusals, the accelerator file's keys and the planner's lever.
 * Every figure is checked against its formula written out here, on Llama 3 8B (hidden
 * 4096, 32 heads of 128, 8 KV heads, SwiGLU FFN 14336) at sequence 2048. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "price/price_internal.h"
#include "price_util.h"
#include "vpipe/hybrid.h"

#define H 4096.0
#define FFN 14336.0
#define T 2048.0
#define KV 1024.0 /* 8 KV heads x 128 */

typedef tp_priced llama;

static void llama_setup(llama *l, const char *gpu, vp_fp8 fp8) {
    l->a = tp_preset("llama3-8b");
    l->g = tp_gpu(gpu);
    l->t = vp_workload_default(&l->a);
    l->t.seq = 2048;
    l->t.flash = true;
    l->t.fp8 = fp8;
    l->su = (vp_price_setup){.arch = &l->a, .gpu = &l->g, .work = &l->t, .split = VP_SPLIT_EVEN};
}

/* A layer's F, B, W seconds (sec) and its linears' share (lin) under l. */
static void layer_seconds(const llama *l, double sec[4], double lin[3]) {
    vp__piece_seconds(&l->su, VP_PRICE_LAYER, 0, sec, lin);
}

/* W is the linears' multiplies alone: FP8 scales them by the peak ratio over the recipe's
 * efficiency (0.906 per-tensor, 0.799 in 128-blocks: bench/measured/h100-sxm-kernels.json;
 * MXFP8 at its own peak). */
static void test_gemm_seconds(void **state) {
    (void)state;
    struct {
        const char *gpu;
        vp_fp8 fp8;
        double fp8_peak, eff;
    } cases[] = {{"h100-80gb", VP_FP8_TENSORWISE, 1979e12, 0.906},
                 {"h100-80gb", VP_FP8_DELAYED, 1979e12, 0.906},
                 {"h100-80gb", VP_FP8_BLOCKWISE, 1979e12, 0.799},
                 {"b200", VP_FP8_MXFP8, 4500e12, 0.906},
                 {"mi300x", VP_FP8_TENSORWISE, 2614.9e12, 0.906}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        llama off, on;
        llama_setup(&off, cases[i].gpu, VP_FP8_OFF);
        llama_setup(&on, cases[i].gpu, cases[i].fp8);
        double s0[4], l0[3], s1[4], l1[3];
        layer_seconds(&off, s0, l0);
        layer_seconds(&on, s1, l1);
        double scale = off.g.peak_flops / (cases[i].fp8_peak * cases[i].eff);
        TU_NEAR(l1[2], l0[2] * scale);
        TU_NEAR(s1[2] - on.g.layer_overhead, (s0[2] - off.g.layer_overhead) * scale);
        assert_true(s1[2] < s0[2]); /* FP8 multiplies are faster on every one of them */
    }
}

/* F adds the cast of every FP8 multiply's input, B of its output gradient, at the recipe's
 * bytes per element (tensorwise 6: amax read, read, FP8 copy and transpose; delayed 4;
 * blockwise 4 + 8/128; MXFP8 4 + 2/32) over hbm_efficiency of the HBM bandwidth; the other
 * kernels move the 16-bit tensors as before. */
static void test_cast_seconds(void **state) {
    (void)state;
    const double in = T * (H + H + H + FFN);                  /* QKV, projection, FC1, FC2 */
    const double grad = T * ((H + 2 * KV) + H + 2 * FFN + H); /* their outputs */
    struct {
        vp_fp8 fp8;
        double bytes;
    } cases[] = {{VP_FP8_TENSORWISE, 6}, {VP_FP8_DELAYED, 4}, {VP_FP8_BLOCKWISE, 4 + 8.0 / 128}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        llama off, on;
        llama_setup(&off, "h100-80gb", VP_FP8_OFF);
        llama_setup(&on, "h100-80gb", cases[i].fp8);
        double s0[4], l0[3], s1[4], l1[3];
        layer_seconds(&off, s0, l0);
        layer_seconds(&on, s1, l1);
        double rate = on.g.hbm_bandwidth * on.g.hbm_efficiency / cases[i].bytes;
        TU_NEAR(s1[0] - s0[0], l1[0] - l0[0] + in / rate);
        TU_NEAR(s1[1] - s0[1], l1[1] - l0[1] + grad / rate);
    }
    /* TP 2 with sequence parallelism: residual-width tensors are cast on the sequence shard
       (QKV's and FC1's inputs, the projection's and FC2's output gradients) */
    llama off, on;
    llama_setup(&off, "h100-80gb", VP_FP8_OFF);
    llama_setup(&on, "h100-80gb", VP_FP8_TENSORWISE);
    off.t.tp = on.t.tp = 2;
    off.t.sp = on.t.sp = true;
    double s0[4], l0[3], s1[4], l1[3];
    layer_seconds(&off, s0, l0);
    layer_seconds(&on, s1, l1);
    double rate = on.g.hbm_bandwidth * on.g.hbm_efficiency / 6;
    double in_sp = T * (H / 2 + H / 2 + H / 2 + FFN / 2);
    double grad_sp = T * ((H + 2 * KV) / 2 + H / 2 + FFN + H / 2);
    TU_NEAR(s1[0] - s0[0], l1[0] - l0[0] + in_sp / rate);
    TU_NEAR(s1[1] - s0[1], l1[1] - l0[1] + grad_sp / rate);
}

/* Memory: each linear's input kept for W is saved in FP8 (1 byte, not 2); every FP8 weight
 * has its FP8 copy and transpose (2 bytes, blockwise plus a 4-byte scale per 128 x 128 both
 * ways), in each rank's total; master weights, gradients and moments unchanged. */
static void test_memory_items(void **state) {
    (void)state;
    const double weights = (H + 2 * KV) * H + H * H + 2 * FFN * H + H * FFN; /* per layer */
    vp_price_facts f0, f1;
    vp_error err = {0};
    llama off, on;
    llama_setup(&off, "h100-80gb", VP_FP8_OFF);
    llama_setup(&on, "h100-80gb", VP_FP8_BLOCKWISE);
    assert_int_equal(vp_price_part_facts(&off.a, &off.t, VP_PRICE_LAYER, &f0, &err), VP_OK);
    assert_int_equal(vp_price_part_facts(&on.a, &on.t, VP_PRICE_LAYER, &f1, &err), VP_OK);
    double halved = T * (H + H + H + FFN); /* QKV, projection, FC1, FC2 inputs: bytes saved */
    TU_NEAR(f0.act_bytes - f1.act_bytes, halved);
    TU_NEAR(f0.keep_bytes - f1.keep_bytes, halved);
    TU_NEAR(f0.params, f1.params);
    vp_price_result *r0 = tp_price(&off.su, "1f1b", 2, 4), *r1 = tp_price(&on.su, "1f1b", 2, 4);
    for (int d = 0; d < 2; d++) {
        int layers = r1->stage[d].l1 - r1->stage[d].l0;
        TU_NEAR(r1->memory[d].fp8_weights, layers * weights * (2 + 8.0 / (128 * 128)));
        assert_true(r0->memory[d].fp8_weights == 0);
        TU_NEAR(r1->memory[d].params, r0->memory[d].params);
        TU_NEAR(r1->memory[d].grads, r0->memory[d].grads);
        TU_NEAR(r1->memory[d].optimizer, r0->memory[d].optimizer);
        TU_NEAR(r1->memory[d].allocated - r1->memory[d].activations - r1->memory[d].fp8_weights,
                r0->memory[d].allocated - r0->memory[d].activations);
    }
    vp_price_result_free(r0);
    vp_price_result_free(r1);
}

/* The weights are cast once per step beside the optimizer: copies / 2 elements at the
 * recipe's 6 bytes each (tensorwise). */
static void test_step_casts(void **state) {
    (void)state;
    llama off, on;
    llama_setup(&off, "h100-80gb", VP_FP8_OFF);
    llama_setup(&on, "h100-80gb", VP_FP8_TENSORWISE);
    vp_price_result *r0 = tp_price(&off.su, "1f1b", 1, 2), *r1 = tp_price(&on.su, "1f1b", 1, 2);
    double elements = r1->memory[0].fp8_weights / 2;
    TU_NEAR(elements, 32 * ((H + 2 * KV) * H + H * H + 3 * FFN * H));
    TU_NEAR(r1->optimizer_s - r0->optimizer_s,
            elements * 6 / (on.g.hbm_bandwidth * on.g.hbm_efficiency));
    vp_price_result_free(r0);
    vp_price_result_free(r1);
}

/* FP8 weights (fp8_params): no 16-bit copy beside the FP8 one, so the copies column keeps
 * only what the weights column does not hold: nothing per-tensor, the block scales
 * blockwise, and under ZeRO-3 (sharded weights) the whole transposes, 1 byte an element;
 * everything else and the step's casts unchanged. 16-bit gradients (prec.grad 2) halve the
 * gradients column and the DP reduction's bytes. */
static void test_fp8_weights(void **state) {
    (void)state;
    const double weights = 32 * ((H + 2 * KV) * H + H * H + 3 * FFN * H);
    struct {
        vp_fp8 fp8;
        int zero;
        double copy; /* bytes per FP8 weight element left in the copies column */
    } cases[] = {{VP_FP8_TENSORWISE, 1, 0},
                 {VP_FP8_DELAYED, 0, 0},
                 {VP_FP8_BLOCKWISE, 1, 8.0 / (128 * 128)},
                 {VP_FP8_TENSORWISE, 3, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        llama copies, own;
        llama_setup(&copies, "h100-80gb", cases[i].fp8);
        llama_setup(&own, "h100-80gb", cases[i].fp8);
        copies.t.dp = own.t.dp = 8;
        copies.t.zero = own.t.zero = cases[i].zero;
        own.t.fp8_params = true;
        vp_price_result *r0 = tp_price(&copies.su, "1f1b", 1, 2);
        vp_price_result *r1 = tp_price(&own.su, "1f1b", 1, 2);
        TU_NEAR(r1->memory[0].fp8_weights, weights * cases[i].copy);
        TU_NEAR(r0->memory[0].fp8_weights - r1->memory[0].fp8_weights,
                weights * (cases[i].fp8 == VP_FP8_BLOCKWISE ? 2 : 2 - cases[i].copy));
        TU_NEAR(r1->memory[0].params, r0->memory[0].params);
        TU_NEAR(r1->memory[0].allocated + r0->memory[0].fp8_weights,
                r0->memory[0].allocated + r1->memory[0].fp8_weights);
        TU_NEAR(r1->optimizer_s, r0->optimizer_s); /* the cast once per step stays */
        assert_true(r1->memory_max_bytes < r0->memory_max_bytes);
        vp_price_result_free(r0);
        vp_price_result_free(r1);
    }
    llama fp32, half;
    llama_setup(&fp32, "h100-80gb", VP_FP8_OFF);
    llama_setup(&half, "h100-80gb", VP_FP8_OFF);
    fp32.t.dp = half.t.dp = 8;
    fp32.t.dp_overlap = half.t.dp_overlap = 0; /* the whole reduction after the step */
    half.t.prec.grad = 2;
    vp_price_result *r0 = tp_price(&fp32.su, "1f1b", 1, 2), *r1 = tp_price(&half.su, "1f1b", 1, 2);
    TU_NEAR(r1->memory[0].grads, r0->memory[0].grads / 2);
    TU_NEAR(r1->memory[0].params, r0->memory[0].params);
    assert_true(r1->dp_exposed_s < r0->dp_exposed_s); /* half the bytes all-reduced */
    vp_price_result_free(r0);
    vp_price_result_free(r1);
}

static void refused(const char *gpu, vp_fp8 fp8, bool own, const char *why) {
    llama l;
    llama_setup(&l, gpu, fp8);
    if (own) { /* vpipe's own fp32 model */
        l.a = vp_arch_vpipe(4, 64, 4, 32);
        l.t = vp_workload_default(&l.a);
        l.t.fp8 = fp8;
    }
    vp_error err = {0};
    assert_int_equal(vp_price_check(&l.su, &err), VP_EINVAL);
    if (!strstr(err.message, why))
        fail_msg("'%s' lacks '%s'", err.message, why);
}

/* FP8 on an accelerator without it, MXFP8 without its tensor cores, FP8 on vpipe's own
 * fp32 model: refused by name. */
static void test_refusals(void **state) {
    (void)state;
    refused("a100-80gb", VP_FP8_TENSORWISE, false, "a100-80gb has no FP8 tensor cores");
    refused("a100-80gb", VP_FP8_MXFP8, false, "a100-80gb has no MXFP8");
    refused("h100-80gb", VP_FP8_MXFP8, false, "h100-80gb has no MXFP8 tensor cores");
    refused("mi300x", VP_FP8_MXFP8, false, "mi300x has no MXFP8");
    refused("h100-80gb", VP_FP8_TENSORWISE, true, "vpipe's own model trains in fp32");
    llama ok; /* and what has them prices */
    llama_setup(&ok, "b200", VP_FP8_MXFP8);
    vp_error err = {0};
    assert_int_equal(vp_price_check(&ok.su, &err), VP_OK);
}

/* The accelerator file gives the FP8 peaks; a preset's round-trips through its JSON. */
static void test_gpu_keys(void **state) {
    (void)state;
    const char *text = "{\"base\": \"a100-80gb\", \"fp8_peak_tflops\": 624, "
                       "\"mxfp8_peak_tflops\": 700}";
    vp_gpu g;
    vp_error err = {0};
    assert_int_equal(vp_gpu_parse_json(text, strlen(text), &g, &err), VP_OK);
    TU_NEAR(g.fp8_peak_flops, 624e12);
    TU_NEAR(g.mxfp8_peak_flops, 700e12);
    const char *bad = "{\"base\": \"h100-80gb\", \"fp8_peak_tflops\": -1}";
    assert_int_equal(vp_gpu_parse_json(bad, strlen(bad), &g, &err), VP_EPARSE);
    assert_non_null(strstr(err.message, "fp8_peak_tflops"));
    vp_gpu b200 = tp_gpu("b200");
    char *json = vp_gpu_json(&b200);
    assert_int_equal(vp_gpu_parse_json(json, strlen(json), &g, &err), VP_OK);
    free(json);
    TU_NEAR(g.fp8_peak_flops, 4500e12);
    TU_NEAR(g.mxfp8_peak_flops, 4500e12);
    assert_int_equal(vp_price_fp8_best(&b200), VP_FP8_MXFP8);
    vp_gpu h100 = tp_gpu("h100-80gb"), a100 = tp_gpu("a100-80gb"), mi = tp_gpu("mi300x");
    assert_int_equal(vp_price_fp8_best(&h100), VP_FP8_TENSORWISE);
    assert_int_equal(vp_price_fp8_best(&mi), VP_FP8_TENSORWISE);
    assert_int_equal(vp_price_fp8_best(&a100), VP_FP8_OFF);
}

/* plan's lever: searching FP8 doubles the candidates where the accelerator has FP8, none
 * where it has not; the answer and its counts do not depend on the threads; on H100s the
 * winner runs FP8 (its multiplies twice as fast). */
static vp_hybrid *plan(const char *gpu, int search, int threads) {
    static vp_arch a;
    static vp_gpu g[2];
    a = tp_preset("llama3-8b");
    vp_gpu *pg = &g[threads > 1];
    *pg = tp_gpu(gpu);
    vp_hybrid_request q = vp_hybrid_request_make(&a, pg, 8, 32);
    q.work.seq = 2048;
    q.work.flash = true;
    q.fp8_search = search;
    q.threads = threads;
    vp_hybrid *h = NULL;
    vp_error err = {0};
    if (vp_hybrid_run(&q, &h, &err) != VP_OK)
        fail_msg("plan: %s", err.message);
    return h;
}

static void test_planner_lever(void **state) {
    (void)state;
    vp_hybrid *fixed = plan("h100-80gb", 0, 1), *one = plan("h100-80gb", 1, 1),
              *three = plan("h100-80gb", 1, 3);
    assert_int_equal(one->candidates, 2 * fixed->candidates);
    assert_int_equal(one->candidates, three->candidates);
    assert_int_equal(one->evaluated, three->evaluated);
    assert_int_equal(one->n_top, three->n_top);
    for (int i = 0; i < one->n_top; i++) {
        assert_string_equal(one->top[i].family, three->top[i].family);
        assert_int_equal(one->top[i].fp8, three->top[i].fp8);
        assert_true(one->top[i].step_time_s == three->top[i].step_time_s);
    }
    assert_int_equal(one->top[0].fp8, VP_FP8_TENSORWISE);
    assert_int_equal(fixed->top[0].fp8, VP_FP8_OFF);
    assert_true(one->top[0].step_time_s < fixed->top[0].step_time_s);
    vp_hybrid *a100 = plan("a100-80gb", 1, 1), *a100_fixed = plan("a100-80gb", 0, 1);
    assert_int_equal(a100->candidates, a100_fixed->candidates);
    assert_int_equal(a100->top[0].fp8, VP_FP8_OFF);
    vp_hybrid_free(fixed);
    vp_hybrid_free(one);
    vp_hybrid_free(three);
    vp_hybrid_free(a100);
    vp_hybrid_free(a100_fixed);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_seconds),  cmocka_unit_test(test_cast_seconds),
        cmocka_unit_test(test_memory_items),  cmocka_unit_test(test_step_casts),
        cmocka_unit_test(test_refusals),      cmocka_unit_test(test_gpu_keys),
        cmocka_unit_test(test_planner_lever), cmocka_unit_test(test_fp8_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
