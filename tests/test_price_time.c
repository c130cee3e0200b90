/* Real-model pricing, time: Zero Bubble's Table 6 pass times from the A100 preset and its
 * Table 4 reproduced from them, FLOPs per pass (Zero Bubble Table 1), pass times under
 * one efficiency and under the kernel model, the TP collectives, the pipeline hop inside
 * and between nodes, the step time and its rates, measured costs winning, the layer
 * split, and the JSON a caller prints. */
#include <jansson.h>
#include <stdlib.h>

#include "price_util.h"
#include "vpipe/model.h"

/* The Zero Bubble paper's setup for an anchor: sequence 1024, its microbatch size, its
 * runtime's sends overlapped with compute (Table 6 times the hop apart from the passes). */
static vp_workload zb_workload(const vp_arch *a, const zb_anchor *z) {
    vp_workload t = vp_workload_default(a);
    t.seq = 1024;
    t.mbs = z->mbs;
    t.pp_overlap = true;
    return t;
}

/* The A100 preset's kernel model reproduces the pass times it was calibrated to (Zero
 * Bubble Table 6, one middle stage of the k·p − 2 split): F, B and W within 3%, the hop
 * within 2%. */
static void check_table6(const vp_price_setup *su, const zb_anchor *z) {
    vp_price_result *r = tp_price(su, "1f1b", 8, 24);
    const vp_price_stage *st = &r->stage[1];
    double got[4] = {st->f_ms, st->b_ms, st->w_ms, r->hop_ms}, paper[4] = {z->f, z->b, z->w, z->c};
    for (int k = 0; k < 4; k++)
        if (fabs(got[k] / paper[k] - 1) > (k < 3 ? 0.03 : 0.02))
            fail_msg("%s pass %d: %.3f ms, Table 6 %.3f ms", z->model, k, got[k], paper[k]);
    vp_price_result_free(r);
}

/* Zero Bubble paper: the preset's pass times against Table 6 (check_table6); then Table 6
 * as measured costs, the papers' layer split (k·p − 2 layers, the ends one fewer):
 * samples/s per GPU within 10% of Table 4, peak memory (GB; the paper reports PyTorch's
 * peak allocation, the largest rank's allocated bytes) within 15%. */
static void test_zero_bubble_tables(void **state) {
    (void)state;
    vp_gpu g = tp_gpu("a100-80gb");
    for (int i = 0; i < 2; i++) {
        const zb_anchor *z = &zb_anchors[i];
        vp_arch a = tp_preset(z->model);
        vp_workload t = zb_workload(&a, z);
        vp_price_setup analytic = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
        check_table6(&analytic, z);
        vp_costs k = tu_costs(z->f, z->b, z->w, z->c);
        vp_price_setup su = {
            .arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN, .measured = &k};
        for (int f = 0; f < 3; f++)
            for (int j = 0; j < 3; j++) {
                vp_price_result *r = tp_price(&su, zb_families[f], 8, zb_ms[j]);
                double rate = r->samples_per_s_per_gpu, gb = most_allocated(r) / 1e9;
                if (fabs(rate / z->rate[f][j] - 1) > 0.10 || fabs(gb / z->gb[f] - 1) > 0.15)
                    fail_msg("%s %s m=%d: %.2f samples/s/GPU (published %.2f), %.1f GB (%.0f)",
                             a.name, zb_families[f], zb_ms[j], rate, z->rate[f][j], gb, z->gb[f]);
                assert_int_equal(r->layers_per_stage[0], r->layers_per_stage[1] - 1);
                vp_price_result_free(r);
            }
    }
}

/* A GPT layer's FLOPs are Zero Bubble's Table 1, divided by TP; the head's are 2·sbhv per
 * pass; recomputation adds F (full) or the attention core (selective). */
static void test_flops(void **state) {
    (void)state;
    vp_arch a = tp_preset("zb-14.6b");
    for (int tp = 1; tp <= 8; tp *= 2)
        for (int rc = 0; rc < 3; rc++) {
            vp_workload t = vp_workload_default(&a);
            t.seq = 1024;
            t.mbs = 2;
            t.tp = tp;
            t.recompute = (vp_recompute)rc;
            vp_price_facts f, head;
            assert_int_equal(vp_price_part_facts(&a, &t, VP_PRICE_LAYER, &f, NULL), VP_OK);
            assert_int_equal(vp_price_part_facts(&a, &t, VP_PRICE_HEAD, &head, NULL), VP_OK);
            double s = t.seq, sbh = s * t.mbs * a.hidden, h = a.hidden;
            TU_NEAR(f.flops_f, sbh * (24 * h + 4 * s) / tp);
            TU_NEAR(f.flops_b, sbh * (24 * h + 8 * s) / tp);
            TU_NEAR(f.flops_w, sbh * 24 * h / tp);
            double r = rc == VP_RECOMPUTE_FULL ? f.flops_f : rc ? sbh * 4 * s / tp : 0;
            TU_NEAR(f.flops_r, r);
            TU_NEAR(head.flops_f, 2 * sbh * a.vocab / tp);
            TU_NEAR(head.flops_w, head.flops_f);
        }
}

/* Pass times under one efficiency (the older speed model): FLOPs at peak x efficiency,
 * plus (TP) two all-reduces per layer in F and in B as ring reduce-scatter + all-gather
 * inside the node at the communication efficiency, full recomputation running F again in
 * B; with overlapped sends the hop is the activation (each TP rank's 1/t, gathered back
 * over the node without sequence parallelism) at the send/receive bandwidth inside a node,
 * at the slower of it and the network's between nodes (TP 8 fills a node). */
static void test_pass_times_and_hops(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-70b");
    vp_gpu g = tp_gpu("h100-80gb");
    g.efficiency = 0.5;
    for (int tp = 1; tp <= 8; tp *= 8) {
        vp_workload t = vp_workload_default(&a);
        t.seq = 4096;
        t.tp = tp;
        t.pp_overlap = true;
        t.recompute = tp > 1 ? VP_RECOMPUTE_FULL : VP_RECOMPUTE_NONE;
        vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
        vp_price_result *r = tp_price(&su, "1f1b", 16, 16);
        vp_price_facts f;
        vp_price_part_facts(&a, &t, VP_PRICE_LAYER, &f, NULL);
        double rate = g.peak_flops * g.efficiency / 1e3, n = r->layers_per_stage[1];
        double tensor = 4096.0 * a.hidden * 2, nvlink = g.intra_bw * g.comm_efficiency;
        double gather = tp > 1 ? (tp - 1) * (tensor / tp / nvlink + g.intra_latency) : 0;
        double reduce = 2 * gather;
        TU_NEAR(r->stage[1].f_ms, n * (f.flops_f / rate + 2 * reduce * 1e3));
        TU_NEAR(r->stage[1].w_ms, n * f.flops_w / rate);
        TU_NEAR(r->stage[1].r_ms, tp > 1 ? r->stage[1].f_ms : 0); /* full: F again */
        TU_NEAR(r->stage[1].b_ms, n * (f.flops_b / rate + 2 * reduce * 1e3) + r->stage[1].r_ms);
        double wire = tensor / tp;
        double intra = (wire / g.p2p_bw + g.intra_latency + gather) * 1e3;
        double inter =
            (wire / fmin(g.inter_bw * g.comm_efficiency, g.p2p_bw) + g.inter_latency + gather) *
            1e3;
        /* TP 1: ranks 0-7 and 8-15 share nodes, one of 15 hops crosses; TP 8: all cross */
        TU_NEAR(r->hop_ms, tp == 1 ? (14 * intra + inter) / 15 : inter);
        vp_price_result_free(r);
    }
}

/* Seconds of one M x N x K multiply under the kernel model, written out again. */
static double kernel_gemm_ms(const vp_gpu *g, double m, double n, double k) {
    double e = g->gemm_edge;
    double rate = g->gemm_efficiency * m / (m + e) * n / (n + e) * k / (k + e);
    return 2 * m * n * k / (g->peak_flops * rate) * 1e3;
}

/* The kernel model: W of a layer is its four linears' multiplies, each at the efficiency
 * its dimensions allow (TP 1, so no collectives), and the per-layer overhead; F adds
 * FlashAttention's kernels (the causal half at attn_efficiency_f) and act_traffic_f bytes
 * per saved byte at the HBM bandwidth. A larger microbatch or a smaller TP degree runs
 * each token faster; one efficiency (the older model) does not. */
static void test_kernel_model(void **state) {
    (void)state;
    vp_arch a = tp_preset("cm-98.5b");
    vp_gpu g = tp_gpu("a100-80gb");
    double per_token[2][3]; /* [model][mbs 1, mbs 2, TP 2]: layer F + B + W, ms per token */
    for (int model = 0; model < 2; model++)
        for (int cell = 0; cell < 3; cell++) {
            vp_workload t = vp_workload_default(&a);
            t.seq = 1024;
            t.flash = t.sp = t.pp_overlap = true;
            t.mbs = cell == 1 ? 2 : 1;
            t.tp = cell == 2 ? 2 : 1;
            vp_gpu used = g;
            used.efficiency = model ? 0.5 : 0;
            vp_price_setup su = {.arch = &a, .gpu = &used, .work = &t, .split = VP_SPLIT_EVEN};
            vp_price_result *r = tp_price(&su, "1f1b", 4, 4);
            const vp_price_stage *st = &r->stage[1];
            double n = st->l1 - st->l0, T = 1024.0 * t.mbs, h = a.hidden;
            if (model == 0 && cell == 0) {
                double w = kernel_gemm_ms(&g, T, 3 * h, h) + kernel_gemm_ms(&g, T, h, h) +
                           2 * kernel_gemm_ms(&g, T, 4 * h, h) + g.layer_overhead * 1e3;
                TU_NEAR(st->w_ms, n * w);
                vp_price_facts f;
                vp_price_part_facts(&a, &t, VP_PRICE_LAYER, &f, NULL);
                /* FlashAttention: the causal half of QK^T and AV over 80 heads of 128 */
                double attention =
                    80 * 4.0 * 1024 * 1024 * 128 / 2 / (g.peak_flops * g.attn_efficiency_f) * 1e3;
                double moved = g.act_traffic_f * f.act_bytes / g.hbm_bandwidth * 1e3;
                TU_NEAR(st->f_ms, n * (w + attention + moved));
            }
            per_token[model][cell] = (st->f_ms + st->b_ms + st->w_ms) / n / T * t.tp;
            vp_price_result_free(r);
        }
    assert_true(per_token[0][1] < 0.97 * per_token[0][0]); /* mbs 2 over 1 */
    TU_NEAR(per_token[1][1], per_token[1][0]);
    assert_true(per_token[0][2] > per_token[0][0]); /* TP 2 costs collectives */
}

/* Step time = makespan + optimizer + exposed DP reduction; the rates follow from it; MFU
 * counts 6 x linear weights x tokens plus the attention matrices, no recomputation. */
static void test_step_time(void **state) {
    (void)state;
    vp_arch a = tp_preset("zb-28.3b");
    vp_gpu g = tp_gpu("a100-80gb");
    for (int cell = 0; cell < 8; cell++) {
        vp_workload t = vp_workload_default(&a);
        t.seq = 1024;
        t.dp = cell % 2 ? 4 : 1;
        t.zero = cell / 2 % 2;
        t.dp_overlap = cell / 4 ? 0.5 : 0;
        t.recompute = cell / 4 ? VP_RECOMPUTE_FULL : VP_RECOMPUTE_NONE;
        vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t};
        int p = 4, m = 12;
        vp_price_result *r = tp_price(&su, "zb-h1", p, m);
        TU_NEAR(r->step_time_s, r->makespan_s + r->optimizer_s + r->dp_exposed_s);
        TU_NEAR(r->dp_exposed_s, r->dp_reduce_s * (1 - t.dp_overlap));
        assert_true(t.dp == 1 ? r->dp_reduce_s == 0 : r->dp_reduce_s > 0);
        double s = t.seq, h = a.hidden, sb = s * t.mbs;
        double flops = 6 * sb * (a.layers * 12 * h * h + h * a.vocab) + 12 * a.layers * sb * s * h;
        TU_NEAR(r->model_flops, m * t.dp * flops);
        TU_NEAR(r->mfu, r->model_flops / (r->gpus * g.peak_flops * r->step_time_s));
        TU_NEAR(r->samples_per_s_per_gpu, m * t.mbs / (r->step_time_s * p));
        TU_NEAR(r->tokens_per_s, m * t.dp * t.mbs * s / r->step_time_s);
        assert_int_equal(r->gpus, p * t.dp);
        assert_true(r->mfu > 0.1 && r->mfu < g.gemm_efficiency);
        for (int d = 0; d < p; d++) {
            const vp_rank_memory *mem = &r->memory[d];
            double allocated = mem->params + mem->grads + mem->optimizer + mem->activations +
                               mem->buffers + mem->workspace + mem->logits + mem->gathers;
            TU_NEAR(mem->allocated, allocated);
            TU_NEAR(mem->fragmentation, g.frag_fraction * allocated);
            TU_NEAR(mem->total,
                    allocated + mem->fragmentation + mem->context + mem->comm + mem->reserve);
            assert_true((mem->workspace > 0) == (t.recompute == VP_RECOMPUTE_FULL));
        }
        vp_price_result_free(r);
    }
}

/* Measured costs win: each stage's times are the measured slice split over its chunks,
 * the hop is the measured c, and the makespan is the simulator's under those costs. */
static void test_measured_costs_win(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    vp_costs k = tu_costs(3, 4, 2, 0.25);
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .measured = &k};
    const char *families[] = {"1f1b", "interleaved", "v-half", "dualpipev"};
    for (int f = 0; f < 4; f++) {
        vp_price_result *r = NULL;
        vp_schedule *s = NULL;
        vp_spec spec = vp_spec_make(4, 16);
        spec.costs = k;
        assert_int_equal(vp_price_family(&su, families[f], &spec, &r, &s, NULL), VP_OK);
        double v = (double)s->S / s->p;
        TU_NEAR(r->stage[0].f_ms, 3 / v);
        TU_NEAR(r->stage[s->S - 1].b_ms, 4 / v);
        TU_NEAR(r->hop_ms, 0.25);
        vp_sim *sim = tu_sim(s, k, NULL);
        TU_NEAR(r->makespan_s, sim->makespan / 1e3);
        vp_sim_free(sim);
        vp_price_result_free(r);
        vp_schedule_free(s);
    }
}

/* A family is built with the per-device costs of the layout, and with their means
 * (mean_costs) exactly when its generator refuses the per-device costs. */
static void test_mean_costs_only_when_refused(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama2-7b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 512;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t};
    for (int f = 0; f < vp_family_count(); f++) {
        const char *name = vp_family_at(f)->name;
        vp_spec spec = vp_spec_make(4, 8);
        vp_price_result *r = NULL;
        vp_schedule *s = NULL, *again = NULL;
        vp_price_layout *lay = NULL;
        assert_int_equal(vp_price_family(&su, name, &spec, &r, &s, NULL), VP_OK);
        assert_int_equal(vp_price_layout_new(&su, s, &lay, NULL), VP_OK);
        spec.costs = lay->costs;
        spec.mem = lay->mem;
        bool refused = vp_family_build(name, &spec, &again, NULL) != VP_OK;
        if (r->mean_costs != refused)
            fail_msg("%s: mean_costs %d, per-device build refused %d", name, r->mean_costs,
                     refused);
        vp_schedule_free(again);
        vp_price_layout_free(lay);
        vp_schedule_free(s);
        vp_price_result_free(r);
    }
}

/* The even split is vp_split_layers'; the time split leaves no layer that could move to
 * another position and lower the busiest device's time; an explicit split is kept. */
static void test_split(void **state) {
    (void)state;
    vp_arch a = tp_preset("zb-1.5b");
    vp_gpu g = tp_gpu("a100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 1024;
    for (int p = 2; p <= 8; p++) {
        vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
        vp_price_result *r = tp_price(&su, "1f1b", p, p);
        int l0[9];
        vp_split_layers(a.layers, p, l0, NULL);
        for (int k = 0; k < p; k++)
            assert_int_equal(r->layers_per_stage[k], l0[k + 1] - l0[k]);
        vp_price_result_free(r);
        su.split = VP_SPLIT_TIME;
        r = tp_price(&su, "1f1b", p, p);
        double worst = 0, layer = (r->stage[1].f_ms + r->stage[1].b_ms + r->stage[1].w_ms) /
                                  r->layers_per_stage[1];
        for (int k = 0; k < p; k++) {
            double busy = r->stage[k].f_ms + r->stage[k].b_ms + r->stage[k].w_ms;
            worst = busy > worst ? busy : worst;
        }
        for (int k = 0; k < p; k++) {
            double busy = r->stage[k].f_ms + r->stage[k].b_ms + r->stage[k].w_ms;
            if (busy + layer < worst - 1e-9)
                fail_msg("p=%d: stage %d (%.2f ms) could take a layer from the busiest (%.2f)", p,
                         k, busy, worst);
        }
        assert_true(r->layers_per_stage[p - 1] < r->layers_per_stage[p - 2]); /* the head weighs */
        vp_price_result_free(r);
    }
    int given[4] = {4, 7, 7, 4};
    vp_price_setup su = {
        .arch = &a, .gpu = &g, .work = &t, .layers_per_stage = given, .n_layers_per_stage = 4};
    vp_price_result *r = tp_price(&su, "1f1b", 4, 8);
    assert_memory_equal(r->layers_per_stage, given, sizeof given);
    assert_int_equal(r->stage[2].l0, 11);
    vp_price_result_free(r);
}

/* The JSON object has the fields a command line prints, equal to the struct's. */
static void test_json(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-70b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 8192;
    t.tp = 8;
    t.sp = true;
    t.flash = true;
    t.recompute = VP_RECOMPUTE_SELECTIVE;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t};
    vp_price_result *r = tp_price(&su, "v-half", 8, 32);
    char *text = vp_price_result_json(r);
    assert_non_null(text);
    json_t *o = json_loads(text, 0, NULL);
    assert_non_null(o);
    TU_NEAR(json_real_value(json_object_get(o, "step_time_s")), r->step_time_s);
    TU_NEAR(json_real_value(json_object_get(o, "mfu")), r->mfu);
    TU_NEAR(json_real_value(json_object_get(o, "samples_per_s_per_gpu")), r->samples_per_s_per_gpu);
    TU_NEAR(json_real_value(json_object_get(o, "tokens_per_s")), r->tokens_per_s);
    assert_int_equal(json_is_true(json_object_get(o, "fits")), r->fits);
    assert_int_equal(json_is_true(json_object_get(o, "tight")), r->tight);
    assert_int_equal(json_integer_value(json_object_get(o, "margin_bytes")),
                     llround(r->margin_bytes));
    assert_int_equal(json_integer_value(json_object_get(o, "memory_max_bytes")),
                     llround(r->memory_max_bytes));
    json_t *ranks = json_object_get(o, "memory_per_rank"),
           *split = json_object_get(o, "layers_per_stage");
    assert_int_equal(json_array_size(ranks), 8);
    assert_int_equal(json_array_size(split), 16);
    long layers = 0;
    for (size_t k = 0; k < json_array_size(split); k++)
        layers += (long)json_integer_value(json_array_get(split, k));
    assert_int_equal(layers, a.layers);
    const char *items[] = {"params", "grads", "optimizer", "activations", "buffers", "total"};
    for (size_t d = 0; d < 8; d++) {
        json_t *m = json_array_get(ranks, d);
        for (int i = 0; i < 6; i++)
            assert_true(json_is_integer(json_object_get(m, items[i])));
        assert_int_equal(json_integer_value(json_object_get(m, "activations")),
                         llround(r->memory[d].activations));
        TU_NEAR(r->sim->peak_bytes[d], r->memory[d].activations); /* the result's own replay */
    }
    assert_int_equal(json_array_size(json_object_get(o, "per_stage")), r->S);
    TU_NEAR(r->sim->makespan, 1e3 * r->makespan_s);
    json_decref(o);
    free(text);
    vp_price_result_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero_bubble_tables),
        cmocka_unit_test(test_flops),
        cmocka_unit_test(test_pass_times_and_hops),
        cmocka_unit_test(test_kernel_model),
        cmocka_unit_test(test_step_time),
        cmocka_unit_test(test_measured_costs_win),
        cmocka_unit_test(test_mean_costs_only_when_refused),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
