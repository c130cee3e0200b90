/* ZeRO 0-3 priced (src/price/zero.c): the model states each stage shards, ZeRO-3's gathered
 * working set, the per-layer gather and reduce-scatter of one microbatch on the DP group's
 * links, what the passes expose of them (hidden under compute, and not), the W pass's
 * re-gather, the pipeline's ZeRO-1 behaviour and the step's tail. Every figure is checked
 * against its formula written out here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "price/price_internal.h"
#include "price_util.h"

/* Weights, gradients and optimizer states of P parameters over a group of 8: stage 0 whole,
 * 1 the master weights and moments / 8, 2 the gradients too, 3 the weights too. */
static void test_states_per_stage(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_workload t = vp_workload_default(&a);
    t.dp = 8;
    double P = 1e9, d = 8;
    const vp_precision *pr = &t.prec;
    double opt = pr->master + pr->moments;
    double want[4][3] = {{P * pr->param, P * pr->grad, P * opt},
                         {P * pr->param, P * pr->grad, P * opt / d},
                         {P * pr->param, P * pr->grad / d, P * opt / d},
                         {P * pr->param / d, P * pr->grad / d, P * opt / d}};
    for (int z = 0; z <= 3; z++) {
        t.zero = z;
        vp__zero_bytes b;
        vp__zero_states(&t, P, false, &b);
        TU_NEAR(b.params, want[z][0]);
        TU_NEAR(b.grads, want[z][1]);
        TU_NEAR(b.optimizer, want[z][2]);
    }
    assert_int_equal(vp__shard_group(&t, false), 8);
    assert_int_equal(vp__zero_effective(&t, 1), 3);
    assert_int_equal(vp__zero_effective(&t, 4), 1); /* FSDP keeps a pipeline stage gathered */
}

/* One layer's gather and reduce-scatter: ring collectives of the layer's 16-bit weights and
 * its gradients at grad bytes over the DP group (16 ranks TP 1: two nodes). */
static void test_unit_bytes_on_links(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.dp = 16;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t};
    double P = 218e6; /* about one Llama 3 8B layer */
    vp__group grp = {0, 1, 16};
    for (int z = 0; z <= 3; z++) {
        t.zero = z;
        vp__zero_comm c;
        vp__zero_unit(&su, 0, P, 0, &c);
        double gather = vp__collective_seconds(&g, VP__GATHER, &grp, P * t.prec.param);
        double scatter = vp__collective_seconds(&g, VP__GATHER, &grp, P * t.prec.grad);
        TU_NEAR(c.gather_s, z == 3 ? gather : 0);
        TU_NEAR(c.scatter_s, z >= 2 ? scatter : 0);
    }
    /* the ring: (n - 1)/n of the bytes over min(NVLink, 8 NICs) plus n - 1 latencies */
    double bw = fmin(g.intra_bw, 8 * g.inter_bw) * g.comm_efficiency;
    TU_NEAR(vp__collective_seconds(&g, VP__GATHER, &grp, P * 2),
            15.0 / 16 * P * 2 / bw + 15 * g.inter_latency);
}

/* What a prefetched layer exposes: nothing when its compute hides it, the rest when not. */
static void test_exposed(void **state) {
    (void)state;
    TU_NEAR(vp__zero_exposed(3.0, 5.0), 0);
    TU_NEAR(vp__zero_exposed(5.0, 3.0), 2.0);
    TU_NEAR(vp__zero_exposed(0, 0), 0);
}

/* Llama 3 8B on one pipeline rank, DP 8 (one node) or 64 (eight nodes), sequence s. */
typedef tp_priced llama;

static void llama_setup(llama *l, int dp, int seq) {
    l->a = tp_preset("llama3-8b");
    l->g = tp_gpu("h100-80gb");
    l->t = vp_workload_default(&l->a);
    l->t.dp = dp;
    l->t.seq = seq;
    l->t.flash = true;
    l->su = (vp_price_setup){.arch = &l->a, .gpu = &l->g, .work = &l->t, .split = VP_SPLIT_EVEN};
}

/* The pass times ZeRO-3 adds to the one stage: F and B each the first layer's gather plus
 * max(0, comm - compute) of every layer (B's comm: the gather and the reduce-scatter), W
 * the re-gather's max(0, gather - W). Checked where compute hides the layers (one node,
 * long sequence) and where it does not (eight nodes, short sequence). */
static void test_pass_times(void **state) {
    (void)state;
    const int cases[2][2] = {{8, 8192}, {64, 256}};
    for (int c = 0; c < 2; c++) {
        llama l;
        llama_setup(&l, cases[c][0], cases[c][1]);
        vp_price_result *plain = tp_price(&l.su, "zb-h1", 1, 4);
        l.t.zero = 3;
        vp_price_result *z3 = tp_price(&l.su, "zb-h1", 1, 4);
        vp__piece_price pp[VP__PIECES];
        vp__price_pieces(&l.su, pp);
        double weight[VP__PIECES];
        vp__piece_weights(&l.a, 0, l.a.layers, true, true, weight);
        double first = 0, f = 0, b = 0, w = 0;
        int shows = 0; /* transformer layers whose gather outlasts their F */
        for (int k = 0; k < VP__PIECES; k++) {
            if (!weight[k])
                continue;
            double P = pp[k].facts.params, bytes = P * l.t.prec.param;
            vp__group grp = {0, 1, l.t.dp};
            double ag = vp__collective_seconds(&l.g, VP__GATHER, &grp, bytes) * 1e3;
            double rs = vp__collective_seconds(&l.g, VP__GATHER, &grp, P * l.t.prec.grad) * 1e3;
            first = fmax(first, ag);
            f += weight[k] * fmax(0, ag - pp[k].f_ms);
            b += weight[k] * fmax(0, ag + rs - pp[k].b_ms);
            w += weight[k] * fmax(0, ag - pp[k].w_ms);
            shows += k < VP__KINDS && ag > pp[k].f_ms;
        }
        const vp_price_stage *s0 = &plain->stage[0], *s3 = &z3->stage[0];
        TU_NEAR(s3->f_ms - s0->f_ms, f + first);
        TU_NEAR(s3->b_ms - s0->b_ms, b + first);
        TU_NEAR(s3->w_ms - s0->w_ms, w);
        if (c == 0) /* one node, 8192 tokens: every layer's gather hidden under its F */
            assert_int_equal(shows, 0);
        else /* eight nodes, 256 tokens: the layers' gathers show */
            assert_true(shows > 0 && f > 0 && w > 0);
        /* the working set: the largest unit gathered and the next prefetched */
        double largest = 0;
        for (int k = 0; k < VP__PIECES; k++)
            largest = weight[k] ? fmax(largest, pp[k].facts.params) : largest;
        TU_NEAR(z3->memory[0].gathers - plain->memory[0].gathers, 2 * largest * l.t.prec.param);
        vp_price_result_free(plain);
        vp_price_result_free(z3);
    }
}

/* Each stage's memory items as the formula says, on one rank of DP 8; the optimizer step
 * reads the rank's shard; ZeRO-2 moves its gradient reduction into the passes (the step
 * shows only the last layer's), ZeRO-3 gathers nothing at the step's start. */
static void test_stage_memory_and_step(void **state) {
    (void)state;
    llama l;
    llama_setup(&l, 8, 4096);
    double P = vp_arch_params(&l.a), opt = l.t.prec.master + l.t.prec.moments;
    vp_price_result *r[4];
    for (int z = 0; z <= 3; z++) {
        l.t.zero = z;
        r[z] = tp_price(&l.su, "1f1b", 1, 8);
        const vp_rank_memory *m = &r[z]->memory[0];
        TU_NEAR(m->params, P * l.t.prec.param / (z >= 3 ? 8 : 1));
        TU_NEAR(m->grads, P * l.t.prec.grad / (z >= 2 ? 8 : 1));
        TU_NEAR(m->optimizer, P * opt / (z >= 1 ? 8 : 1));
    }
    TU_NEAR(r[0]->optimizer_s, 8 * r[1]->optimizer_s);
    TU_NEAR(r[3]->optimizer_s, r[1]->optimizer_s);
    assert_true(r[2]->dp_reduce_s < r[1]->dp_reduce_s); /* one bucket, not the whole */
    assert_true(r[3]->dp_reduce_s < r[2]->dp_reduce_s); /* and no gather of the weights */
    assert_true(r[3]->memory_max_bytes < r[2]->memory_max_bytes);
    assert_true(r[2]->memory_max_bytes < r[1]->memory_max_bytes);
    for (int z = 0; z <= 3; z++)
        vp_price_result_free(r[z]);
}

/* Under a pipeline FSDP keeps each stage gathered: ZeRO-2 and 3 price exactly as ZeRO-1. */
static void test_pipeline_prices_as_zero1(void **state) {
    (void)state;
    llama l;
    llama_setup(&l, 4, 4096);
    l.t.zero = 1;
    vp_price_result *one = tp_price(&l.su, "1f1b", 4, 8);
    for (int z = 2; z <= 3; z++) {
        l.t.zero = z;
        vp_price_result *r = tp_price(&l.su, "1f1b", 4, 8);
        assert_true(r->step_time_s == one->step_time_s);
        assert_true(r->memory_max_bytes == one->memory_max_bytes);
        vp_price_result_free(r);
    }
    vp_price_result_free(one);
}

/* DP 1 shards nothing: every stage prices as none. */
static void test_dp1_is_a_no_op(void **state) {
    (void)state;
    llama l;
    llama_setup(&l, 1, 4096);
    vp_price_result *none = tp_price(&l.su, "1f1b", 1, 4);
    for (int z = 1; z <= 3; z++) {
        l.t.zero = z;
        vp_price_result *r = tp_price(&l.su, "1f1b", 1, 4);
        assert_true(r->step_time_s == none->step_time_s);
        assert_true(r->memory[0].params == none->memory[0].params);
        assert_true(r->memory[0].grads == none->memory[0].grads);
        vp_price_result_free(r);
    }
    vp_price_result_free(none);
    l.t.zero = 4;
    vp_error err = {0};
    assert_int_equal(vp_price_check(&l.su, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "ZeRO stage 4"));
    assert_string_equal(vp_zero_text(3), "ZeRO-3 (FSDP)");
    assert_null(vp_zero_text(4));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states_per_stage),
        cmocka_unit_test(test_unit_bytes_on_links),
        cmocka_unit_test(test_exposed),
        cmocka_unit_test(test_pass_times),
        cmocka_unit_test(test_stage_memory_and_step),
        cmocka_unit_test(test_pipeline_prices_as_zero1),
        cmocka_unit_test(test_dp1_is_a_no_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
