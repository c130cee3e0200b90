/* Expert parallelism priced: the all-to-all by the links its group crosses, each MoE
 * layer's dispatch and combine (and ETP's gathers) in its passes, the routed experts split
 * over EP x ETP with their optimizer states over expert-DP, their gradients reduced over
 * expert-DP, and the configurations that do not fold refused. Every figure is checked
 * against its formula written out here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "price/price_internal.h"
#include "price_util.h"

/* An all-to-all of B bytes per rank: each sends B/n to every member; inside a node all of
 * it over NVLink, across nodes the part leaving the node over the rank's NIC, the slower
 * link deciding, plus one latency. */
static void test_alltoall_by_placement(void **state) {
    (void)state;
    vp_gpu g = tp_gpu("h100-80gb");
    double B = 64e6, eff = g.comm_efficiency;
    vp__group node = {0, 1, 8}, two = {0, 1, 16}, strided = {0, 2, 8};
    TU_NEAR(vp__alltoall_seconds(&g, &node, B), B * 7 / 8 / (g.intra_bw * eff) + g.intra_latency);
    double inter = B * 8 / 16 / (g.inter_bw * eff), intra = B * 7 / 16 / (g.intra_bw * eff);
    TU_NEAR(vp__alltoall_seconds(&g, &two, B), fmax(inter, intra) + g.inter_latency);
    /* members 2 apart: 4 per node, 2 nodes; 4 of 8 parts leave the node */
    TU_NEAR(vp__alltoall_seconds(&g, &strided, B),
            fmax(B * 4 / 8 / (g.inter_bw * eff), B * 3 / 8 / (g.intra_bw * eff)) + g.inter_latency);
    assert_true(vp__alltoall_seconds(&g, &two, B) > vp__alltoall_seconds(&g, &node, B));
    assert_true(vp__alltoall_seconds(&g, &(vp__group){0, 1, 1}, B) == 0);
}

static vp_price_layout *layout(const vp_price_setup *su, int p) {
    vp_schedule *s = NULL;
    vp_spec spec = vp_spec_make(p, 2 * p);
    vp_error err = {0};
    if (vp_family_build("1f1b", &spec, &s, &err) != VP_OK)
        fail_msg("1f1b: %s", err.message);
    vp_price_layout *lay = NULL;
    if (vp_price_layout_new(su, s, &lay, &err) != VP_OK)
        fail_msg("layout: %s", err.message);
    vp_schedule_free(s);
    return lay;
}

/* The per-layer exchange of Qwen3-30B-A3B (every layer a MoE layer, 8 of 128 experts per
 * token): each rank's s x mbs / tp tokens go to top_k experts as hidden-wide rows, twice
 * in F (dispatch, combine) and twice in B; with ETP each expert's rows are gathered over
 * its ETP ranks and scattered back. */
static void test_layer_exchange(void **state) {
    (void)state;
    qwen q;
    qwen_setup(&q);
    vp_arch a = q.a;
    vp_gpu g = q.g;
    double bytes = 4096.0 * a.top_k * a.hidden * a.dtype_bytes, eff = g.comm_efficiency;
    struct {
        int ep, etp;
        double one; /* one all-to-all, s */
        double gather;
    } cases[] = {
        {1, 1, 0, 0},
        {8, 1, bytes * 7 / 8 / (g.intra_bw * eff) + g.intra_latency, 0},
        {16, 1,
         fmax(bytes * 8 / 16 / (g.inter_bw * eff), bytes * 7 / 16 / (g.intra_bw * eff)) +
             g.inter_latency,
         0},
        {4, 2, bytes * 3 / 4 / (g.intra_bw * eff) + g.intra_latency,
         bytes * 2 / 2 / (g.intra_bw * eff) + g.intra_latency},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        q.t.ep = cases[i].ep;
        q.t.etp = cases[i].etp;
        q.t.recompute = VP_RECOMPUTE_NONE;
        vp_price_layout *lay = layout(&q.su, 2);
        const vp_price_stage *st = &lay->stage[0];
        double layer_ms = 2 * (cases[i].one + cases[i].gather) * 1e3, n = st->l1 - st->l0;
        TU_NEAR(st->a2a_f_ms, n * layer_ms);
        TU_NEAR(st->a2a_b_ms, n * layer_ms);
        assert_true(st->f_ms > st->a2a_f_ms);
        vp_price_layout_free(lay);
        q.t.recompute = VP_RECOMPUTE_FULL; /* B runs the forward's exchange again */
        lay = layout(&q.su, 2);
        TU_NEAR(lay->stage[0].a2a_b_ms, 2 * (lay->stage[0].l1 - lay->stage[0].l0) * layer_ms);
        vp_price_layout_free(lay);
    }
}

/* The routed experts split over EP (experts) and ETP (their width); with the distributed
 * optimizer the rest's master weights and moments split over DP, the experts' over
 * expert-DP = TP x DP / (EP x ETP); gradients whole. */
static void test_memory_split(void **state) {
    (void)state;
    qwen q;
    qwen_setup(&q);
    vp_arch a = q.a;
    q.t.zero = 1;
    double per_expert = 3.0 * a.hidden * a.expert_ffn; /* SwiGLU: gate, up, down */
    int eps[] = {1, 8, 16, 4}, etps[] = {1, 1, 1, 2}, edp[] = {16, 2, 1, 2};
    double state_bytes = q.t.prec.master + q.t.prec.moments, dense_params = 0;
    for (int i = 0; i < 4; i++) {
        q.t.ep = eps[i];
        q.t.etp = etps[i];
        assert_int_equal(vp__expert_dp(&q.t), edp[i]);
        vp_price_layout *lay = layout(&q.su, 2);
        for (int st = 0; st < lay->S; st++) {
            const vp_price_stage *s = &lay->stage[st];
            double n = s->l1 - s->l0;
            TU_NEAR(s->expert_params, n * a.experts / q.t.ep * per_expert / q.t.etp);
            if (i == 0 && st == 0)
                dense_params = s->params - s->expert_params;
            if (st == 0) /* what is not an expert does not change with EP */
                TU_NEAR(s->params - s->expert_params, dense_params);
            const vp_rank_memory *m = &lay->fixed[s->device];
            TU_NEAR(m->optimizer, (s->params - s->expert_params) * state_bytes / q.t.dp +
                                      s->expert_params * state_bytes / edp[i]);
            TU_NEAR(m->grads, s->params * q.t.prec.grad);
        }
        vp_price_layout_free(lay);
    }
}

/* The DP reduction: the experts' gradients over expert-DP (members EP x ETP apart), the
 * rest over DP; a dense model's as before. */
static void test_expert_dp_reduction(void **state) {
    (void)state;
    vp_arch a = tp_preset("qwen3-30b-a3b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.dp = 16;
    t.ep = 8;
    t.dp_overlap = 0;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t};
    double experts = 1.5e9, params = 2e9;
    vp_rank_memory m = {.params = params * t.prec.param, .grads = params * t.prec.grad};
    vp__dp_cost c;
    vp__dp_cost_of(&su, 0, &m, experts, 0, 0, &c);
    double rest = vp__collective_seconds(&g, VP__ALL_REDUCE, &(vp__group){0, 1, 16},
                                         (params - experts) * t.prec.grad);
    double exp =
        vp__collective_seconds(&g, VP__ALL_REDUCE, &(vp__group){0, 8, 2}, experts * t.prec.grad);
    TU_NEAR(c.reduce_s, rest + exp);
    TU_NEAR(c.after_s, rest + exp);
    t.ep = 16; /* expert-DP 1: the experts are not reduced */
    vp__dp_cost_of(&su, 0, &m, experts, 0, 0, &c);
    TU_NEAR(c.reduce_s, rest);
    t.dp = 1; /* TP 8, EP 2: expert-DP 4 though DP is 1 */
    t.tp = 8;
    t.ep = 2;
    vp__dp_cost_of(&su, 0, &m, experts, 0, 0, &c);
    TU_NEAR(c.reduce_s, vp__collective_seconds(&g, VP__ALL_REDUCE, &(vp__group){0, 2, 4},
                                               experts * t.prec.grad));
}

/* EP must divide the experts, ETP their width, EP x ETP the GPUs of a pipeline rank; a
 * dense model has no experts to split. */
static void test_refusals(void **state) {
    (void)state;
    vp_arch moe = tp_preset("qwen3-30b-a3b"), dense = tp_preset("llama3-8b");
    vp_workload t = vp_workload_default(&moe);
    t.dp = 16;
    t.ep = 3;
    tp_check_refused(&moe, &t, "128 experts must be divisible by EP 3");
    t.ep = 32;
    tp_check_refused(&moe, &t, "EP x ETP (32) must divide TP x CP x DP (16)");
    t.ep = 8;
    t.etp = 5;
    tp_check_refused(&moe, &t, "width 768 by ETP 5");
    vp_workload d = vp_workload_default(&dense);
    d.dp = 8;
    d.ep = 8;
    tp_check_refused(&dense, &d, "has no experts");
    t.etp = 2;
    vp_price_setup ok = {.arch = &moe, .work = &t};
    assert_int_equal(vp_price_check(&ok, NULL), VP_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alltoall_by_placement),
        cmocka_unit_test(test_layer_exchange),
        cmocka_unit_test(test_memory_split),
        cmocka_unit_test(test_expert_dp_reduction),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
