/* Real-model pricing, memory: Korthikanti's per-layer activation formulas in every TP /
 * SP / recomputation setting, Megatron's 18 (or 6 + 12/d) bytes per parameter and rank 0's
 * activations under 1F1B, vpipe's own GPT byte for byte against vp_stage_sizes_of (with
 * R passes too), recomputation priced once, the parameter copies of DualPipe, and the
 * Controllable Memory paper's activation ranges. */
#include "price_util.h"
#include "vpipe/model.h"

static const char *const gpt_presets[] = {"gpt2-124m", "gpt3-175b", "zb-1.5b", "zb-6.2b",
                                          "zb-14.6b",  "zb-28.3b",  "cm-9.6b", "cm-38.5b"};
#define N_GPT (sizeof gpt_presets / sizeof gpt_presets[0])

static vp_price_facts facts(const vp_arch *a, const vp_workload *t, vp_price_part part) {
    vp_price_facts f;
    vp_error err = {0};
    if (vp_price_part_facts(a, t, part, &f, &err) != VP_OK)
        fail_msg("%s: %s", a->name, err.message);
    return f;
}

/* Korthikanti et al. Table 2 for one layer, bytes (FlashAttention off). */
static double korthikanti(const vp_arch *a, const vp_workload *t) {
    double s = t->seq, b = t->mbs, h = a->hidden, heads = a->heads, tp = t->tp;
    double sbh = s * b * h, scores = 5 * heads * s / h;
    bool sp = t->sp && tp > 1;
    switch (t->recompute) {
    case VP_RECOMPUTE_FULL:
        return 2 * sbh / (sp ? tp : 1);
    case VP_RECOMPUTE_SELECTIVE:
        return sp ? sbh * 34 / tp : sbh * (10 + 24 / tp);
    default:
        return sp ? sbh * (34 / tp + scores / tp) : sbh * (10 + 24 / tp + scores / tp);
    }
}

static int tp_degrees[] = {1, 2, 4, 8};

/* Every GPT preset, TP 1..8, SP off/on, recomputation none/selective/full, two sequence
 * lengths and microbatch sizes: the layer's saved bytes equal Table 2; without
 * recomputation W keeps Zero Bubble's 32·sbh (split by TP like the tensors it holds). */
static void test_korthikanti_grid(void **state) {
    (void)state;
    for (size_t i = 0; i < N_GPT; i++) {
        vp_arch a = tp_preset(gpt_presets[i]);
        for (int ti = 0; ti < 4; ti++)
            for (int cell = 0; cell < 2 * 3 * 4; cell++) {
                vp_workload t = vp_workload_default(&a);
                t.tp = tp_degrees[ti];
                t.sp = cell % 2;
                t.recompute = (vp_recompute)(cell / 2 % 3);
                t.seq = cell / 6 % 2 ? 1024 : 512;
                t.mbs = cell / 12 ? 3 : 1;
                if (a.heads % t.tp)
                    continue;
                vp_price_facts f = facts(&a, &t, VP_PRICE_LAYER);
                double want = korthikanti(&a, &t);
                if (fabs(f.act_bytes - want) > 1e-12 * want)
                    fail_msg("%s t=%d sp=%d %s s=%d b=%d: %.0f bytes, Table 2 %.0f", a.name, t.tp,
                             t.sp, vp_recompute_name(t.recompute), t.seq, t.mbs, f.act_bytes, want);
                if (t.recompute == VP_RECOMPUTE_NONE && t.tp == 1)
                    TU_NEAR(f.keep_bytes, 32.0 * t.seq * t.mbs * a.hidden);
            }
    }
}

/* FlashAttention removes exactly the 5·as²b/t of the attention matrices and keeps one
 * fp32 log-sum-exp per head and token. */
static void test_flash(void **state) {
    (void)state;
    vp_arch a = tp_preset("zb-6.2b");
    vp_workload t = vp_workload_default(&a);
    t.seq = 1024;
    t.mbs = 2;
    for (int ti = 0; ti < 4; ti++) {
        t.tp = tp_degrees[ti];
        t.flash = false;
        double off = facts(&a, &t, VP_PRICE_LAYER).act_bytes;
        t.flash = true;
        double on = facts(&a, &t, VP_PRICE_LAYER).act_bytes;
        double s = t.seq, b = t.mbs, heads = a.heads;
        TU_NEAR(off - on, (5 * heads * s * s * b - 4 * heads * s * b) / t.tp);
    }
}

/* Parameters of rank 0 (layers [0, n0) and the embedding) and of the last rank (its
 * layers, the final LayerNorm and the tied head's copy) of a GPT written out: matrices
 * and column-parallel biases split by t, row-parallel biases, norms and the position
 * table whole. */
static double gpt_layer_params(const vp_arch *a, int t) {
    double h = a->hidden;
    return (12 * h * h + 7 * h) / t + 2 * h + 4 * h;
}

/* 1F1B, no recomputation or any: model states per rank are 18 bytes per parameter (6 +
 * 12/d with the distributed optimizer), and rank 0's activations are p in-flight
 * microbatches of its layers (Table 2 each) and its embedding (int64 ids and the dropout
 * mask, as Megatron's theoretical_memory_usage counts them). */
static void test_megatron_rank0(void **state) {
    (void)state;
    vp_gpu g = tp_gpu("a100-80gb");
    const char *models[] = {"gpt2-124m", "zb-1.5b", "cm-9.6b", "gpt3-175b"};
    for (int i = 0; i < 4; i++) {
        vp_arch a = tp_preset(models[i]);
        for (int cell = 0; cell < 4 * 2 * 3 * 2 * 2; cell++) {
            vp_workload t = vp_workload_default(&a);
            t.seq = 1024;
            t.mbs = 2;
            t.tp = tp_degrees[cell % 4];
            t.sp = cell / 4 % 2;
            t.recompute = (vp_recompute)(cell / 8 % 3);
            int p = cell / 24 % 2 ? 8 : 4;
            t.zero = cell / 48;
            t.dp = t.zero ? 4 : 1;
            if (a.heads % t.tp)
                continue;
            vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
            vp_price_result *r = tp_price(&su, "1f1b", p, 2 * p);
            double per_param = t.zero ? 6 + 12.0 / t.dp : 18;
            double h = a.hidden, sb = (double)t.seq * t.mbs, tp = t.tp;
            int n0 = r->layers_per_stage[0], nl = r->layers_per_stage[p - 1];
            double params0 =
                n0 * gpt_layer_params(&a, t.tp) + a.vocab * h / tp + a.max_positions * h;
            double params_last = nl * gpt_layer_params(&a, t.tp) + 2 * h + a.vocab * h / tp;
            const vp_rank_memory *m0 = &r->memory[0], *ml = &r->memory[p - 1];
            TU_NEAR(m0->params + m0->grads + m0->optimizer, per_param * params0);
            TU_NEAR(ml->params + ml->grads + ml->optimizer, per_param * params_last);
            double embedding = 8 * sb + sb * h / (t.sp && t.tp > 1 ? tp : 1);
            double want = p * (n0 * korthikanti(&a, &t) + embedding);
            if (fabs(m0->activations - want) > 1e-9 * want)
                fail_msg("%s p=%d t=%d sp=%d %s: rank 0 holds %.0f, want %.0f", a.name, p, t.tp,
                         t.sp, vp_recompute_name(t.recompute), m0->activations, want);
            vp_price_result_free(r);
        }
    }
}

/* vpipe's byte-level GPT: for a grid of sizes and 1..4 stages on the single and on the V
 * placement, the even split is vp_split_layers' and every stage's parameters, act, stash,
 * scratch and hop buffers are vp_stage_sizes_of's, byte for byte. */
static void check_vpipe_layout(const vp_model_config *cfg, int R, vp_placement_kind place) {
    vp_arch a = vp_arch_vpipe(cfg->n_layer, cfg->width, cfg->n_head, cfg->seq_len);
    vp_workload t = vp_workload_default(&a);
    t.seq = cfg->seq_len;
    t.mbs = cfg->microbatch;
    vp_gpu g = tp_gpu("a100-80gb");
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    int S = place == VP_PLACE_V ? 2 * R : R, p = R;
    vp_schedule *shape = NULL;
    assert_int_equal(vp_schedule_new("shape", (vp_shape){p, S, 1, place}, &shape, NULL), VP_OK);
    vp_price_layout *lay = NULL;
    vp_error err = {0};
    if (vp_price_layout_new(&su, shape, &lay, &err) != VP_OK)
        fail_msg("layout: %s", err.message);
    int l0[9];
    assert_int_equal(vp_split_layers(cfg->n_layer, S, l0, NULL), VP_OK);
    double work[8] = {0}, io[8] = {0};
    for (int k = 0; k < S; k++) {
        const vp_price_stage *st = &lay->stage[k];
        assert_int_equal(st->l0, l0[k]);
        assert_int_equal(st->l1, l0[k + 1]);
        vp_stage_sizes sz;
        assert_int_equal(
            vp_stage_sizes_of(cfg, (vp_stage_range){st->l0, st->l1, k == 0, k == S - 1, 0, 0}, &sz,
                              NULL),
            VP_OK);
        if (st->act_bytes != sz.act_bytes || st->keep_bytes != sz.stash_bytes ||
            st->params * 4 != sz.param_bytes)
            fail_msg("L%d C%d H%d T%d B%d stage %d/%d: act %.0f/%zu stash %.0f/%zu params "
                     "%.0f/%zu",
                     cfg->n_layer, cfg->width, cfg->n_head, cfg->seq_len, cfg->microbatch, k, S,
                     st->act_bytes, sz.act_bytes, st->keep_bytes, sz.stash_bytes, st->params * 4,
                     sz.param_bytes);
        work[st->device] += (double)sz.work_bytes;
        io[st->device] +=
            (double)sz.io_bytes * ((k > 0 && shape->stage_device[k - 1] != st->device) +
                                   (k < S - 1 && shape->stage_device[k + 1] != st->device));
    }
    for (int d = 0; d < p; d++) {
        TU_NEAR(lay->fixed[d].workspace, work[d]);
        TU_NEAR(lay->fixed[d].buffers, io[d]);
    }
    vp_price_layout_free(lay);
    vp_schedule_free(shape);
}

static void test_vpipe_exact(void **state) {
    (void)state;
    const int widths[] = {8, 48}, heads[] = {1, 4}, seqs[] = {4, 16}, mbs[] = {1, 3};
    for (int layers = 1; layers <= 6; layers++)
        for (int cell = 0; cell < 16; cell++) {
            vp_model_config cfg = {.n_layer = layers,
                                   .width = widths[cell % 2],
                                   .n_head = heads[cell / 2 % 2],
                                   .seq_len = seqs[cell / 4 % 2],
                                   .microbatch = mbs[cell / 8],
                                   .vocab = 256};
            for (int R = 1; R <= 4; R++) {
                if (layers >= R - 2)
                    check_vpipe_layout(&cfg, R, VP_PLACE_SINGLE);
                if (R >= 2 && layers >= 2 * R - 2)
                    check_vpipe_layout(&cfg, R, VP_PLACE_V);
            }
        }
}

/* vpipe's model of the peak tests (6 layers, width 32, 4 heads, sequence 16, microbatch
 * 2) on an A100 with the even split over 4 stages, and the sizes of its stage d. */
typedef struct own_model {
    vp_model_config cfg;
    vp_arch arch;
    vp_workload work;
    vp_gpu gpu;
    vp_price_setup su;
    int l0[5];
} own_model;

static void own_model_init(own_model *m) {
    m->cfg = (vp_model_config){
        .n_layer = 6, .width = 32, .n_head = 4, .seq_len = 16, .microbatch = 2, .vocab = 256};
    m->arch = vp_arch_vpipe(6, 32, 4, 16);
    m->work = vp_workload_default(&m->arch);
    m->work.seq = 16;
    m->work.mbs = 2;
    m->gpu = tp_gpu("a100-80gb");
    m->su = (vp_price_setup){
        .arch = &m->arch, .gpu = &m->gpu, .work = &m->work, .split = VP_SPLIT_EVEN};
    assert_int_equal(vp_split_layers(6, 4, m->l0, NULL), VP_OK);
}

static vp_stage_sizes own_stage(const own_model *m, int d) {
    vp_stage_sizes sz;
    vp_stage_range range = {m->l0[d], m->l0[d + 1], d == 0, d == 3, 0, 0};
    assert_int_equal(vp_stage_sizes_of(&m->cfg, range, &sz, NULL), VP_OK);
    return sz;
}

/* Through the simulator: under 1F1B (m >= p) vpipe's rank d holds p - d microbatches of
 * its stage's act bytes at its peak. */
static void test_vpipe_1f1b_peaks(void **state) {
    (void)state;
    own_model m;
    own_model_init(&m);
    vp_price_result *r = tp_price(&m.su, "1f1b", 4, 8);
    for (int d = 0; d < 4; d++) {
        vp_stage_sizes sz = own_stage(&m, d);
        TU_NEAR(r->memory[d].activations, (4 - d) * (double)sz.act_bytes);
        TU_NEAR(r->memory[d].params + r->memory[d].grads + r->memory[d].optimizer,
                4.0 * sz.param_bytes);
        TU_NEAR(r->memory[d].reserve, 0);
    }
    vp_price_result_free(r);
}

/* vpipe's own model in a schedule with R passes holds what its runtime holds: each stage's
 * F keeps its input and targets (full) or all but the attention probabilities
 * (selective), and under 1F1B-R rank d peaks at one whole stage and p - d - 1 inputs. */
static void test_vpipe_recompute_exact(void **state) {
    (void)state;
    own_model m;
    own_model_init(&m);
    for (int mode = VP_RECOMPUTE_SELECTIVE; mode <= VP_RECOMPUTE_FULL; mode++) {
        vp_spec spec = vp_spec_make(4, 8);
        spec.recompute = (vp_recompute)mode;
        vp_price_result *r = NULL;
        vp_error err = {0};
        if (vp_price_family(&m.su, "1f1b", &spec, &r, NULL, &err) != VP_OK)
            fail_msg("%s: %s", vp_recompute_name((vp_recompute)mode), err.message);
        for (int d = 0; d < 4; d++) {
            vp_stage_sizes sz = own_stage(&m, d);
            bool full = mode == VP_RECOMPUTE_FULL;
            double hold = full ? (double)sz.input_bytes : (double)(sz.act_bytes - sz.core_bytes);
            TU_NEAR(r->stage[d].act_bytes, (double)sz.act_bytes);
            TU_NEAR(r->stage[d].hold_bytes, hold);
            TU_NEAR(r->memory[d].activations, (double)sz.act_bytes + (3 - d) * hold);
        }
        vp_price_result_free(r);
    }
}

/* Recomputation is priced once. 1F1B with R passes prices the same whether the workload
 * says none or the same mode; against 1F1B recomputing inside B (Megatron's way) each
 * stage's R takes exactly what B loses, and the recomputed layer leaves the workspace; a
 * workload of another mode beside R passes is refused. */
static void test_recompute_priced_once(void **state) {
    (void)state;
    vp_arch a = tp_preset("zb-1.5b");
    vp_gpu g = tp_gpu("a100-80gb");
    vp_workload none = vp_workload_default(&a), full = none, selective = none;
    full.recompute = VP_RECOMPUTE_FULL;
    selective.recompute = VP_RECOMPUTE_SELECTIVE;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &none, .split = VP_SPLIT_EVEN};
    vp_price_result *r_none = tp_price(&su, "1f1b-r", 4, 8);
    su.work = &full;
    vp_price_result *r_full = tp_price(&su, "1f1b-r", 4, 8);
    vp_price_result *inside = tp_price(&su, "1f1b", 4, 8);
    assert_true(r_none->makespan_s == r_full->makespan_s);
    assert_true(r_none->makespan_s <= inside->makespan_s);
    for (int d = 0; d < 4; d++) {
        assert_true(r_none->memory[d].total == r_full->memory[d].total);
        TU_NEAR(r_full->stage[d].b_ms + r_full->stage[d].r_ms, inside->stage[d].b_ms);
        assert_true(r_full->stage[d].r_ms > 0);
        assert_true(r_full->stage[d].hold_bytes < r_full->stage[d].act_bytes);
        TU_NEAR(inside->stage[d].hold_bytes, inside->stage[d].act_bytes);
        assert_true(r_full->memory[d].workspace == 0 && inside->memory[d].workspace > 0);
    }
    su.work = &selective;
    vp_spec spec = vp_spec_make(4, 8);
    vp_price_result *r = NULL;
    vp_error err = {0};
    assert_int_equal(vp_price_family(&su, "1f1b-r", &spec, &r, NULL, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "priced once"));
    vp_price_result_free(r_none);
    vp_price_result_free(r_full);
    vp_price_result_free(inside);
}

/* Parameters held over all ranks: one model for 1F1B and the V placement (Llama, untied),
 * plus the tied head's copy for GPT-2 on 1F1B, two models for DualPipe. */
static void test_param_copies(void **state) {
    (void)state;
    vp_gpu g = tp_gpu("h100-80gb");
    const char *models[] = {"llama2-7b", "gpt2-124m"};
    const char *families[] = {"1f1b", "zb-v", "dualpipe", "dualpipev"};
    for (int i = 0; i < 2; i++) {
        vp_arch a = tp_preset(models[i]);
        vp_workload t = vp_workload_default(&a);
        t.seq = 512;
        for (int f = 0; f < 4; f++) {
            vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t};
            vp_spec spec = vp_spec_make(4, 8);
            vp_price_result *r = NULL;
            vp_schedule *s = NULL;
            vp_error err = {0};
            if (vp_price_family(&su, families[f], &spec, &r, &s, &err) != VP_OK)
                fail_msg("%s %s: %s", a.name, families[f], err.message);
            double held = 0;
            for (int d = 0; d < r->p; d++)
                held += r->memory[d].params / t.prec.param;
            /* the V placement keeps both ends on rank 0: one table serves both */
            bool copy = a.tied && s->placement != VP_PLACE_V;
            double want = vp_schedule_param_copies(s) *
                          (vp_arch_params(&a) + (copy ? (double)a.vocab * a.hidden : 0));
            if (fabs(held - want) > 1e-9 * want)
                fail_msg("%s %s: %.0f parameters held, want %.0f", a.name, families[f], held, want);
            vp_price_result_free(r);
            vp_schedule_free(s);
        }
    }
}

/* Controllable Memory paper, pure PP at sequence 1024 (design/models.md §6): activation
 * GB per GPU of V-Min 14-19, V-Half 19-28, 1F1B and V-ZB 35-56, 1F1B with full
 * recomputation about 1, for its 9.6B, 21B and 38.5B models (m = 4p). */
static void test_controllable_memory_ranges(void **state) {
    (void)state;
    vp_gpu g = tp_gpu("a100-80gb");
    for (int i = 0; i < 3; i++) {
        vp_arch a = tp_preset(cm_models[i]);
        for (int k = 0; k < 5; k++) {
            const cm_range *c = &cm_ranges[k];
            vp_workload t = vp_workload_default(&a);
            t.seq = 1024;
            t.mbs = cm_mbs[i];
            t.recompute = c->recompute;
            vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
            vp_price_result *r = tp_price(&su, c->family, cm_ps[i], 4 * cm_ps[i]);
            double gb = most_activations(r) / 1e9;
            if (gb < c->lo || gb > c->hi)
                fail_msg("%s %s: %.1f GB of activations, published %g-%g", a.name, c->family, gb,
                         c->lo, c->hi);
            vp_price_result_free(r);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_korthikanti_grid),
        cmocka_unit_test(test_flash),
        cmocka_unit_test(test_megatron_rank0),
        cmocka_unit_test(test_vpipe_exact),
        cmocka_unit_test(test_vpipe_1f1b_peaks),
        cmocka_unit_test(test_vpipe_recompute_exact),
        cmocka_unit_test(test_recompute_priced_once),
        cmocka_unit_test(test_param_copies),
        cmocka_unit_test(test_controllable_memory_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
