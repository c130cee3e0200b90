/* Vocabulary parallelism in the schedule value: the placement of EF, EB, S and T into
 * every family, the validator's rules for them, the replay's collectives (T waits for
 * every shard's S), the simulator's times and memory of the passes, the JSON round trip,
 * the PyTorch CSV's refusal and the cost keys S, T, E. */
#include <stdlib.h>

#include "test_util.h"
#include "vpipe/model.h"
#include "vpipe/price.h"

/* Builds family at (p, m) with vocabulary parallelism on or off; NULL when the family
 * refuses the shape. */
static vp_schedule *build(const char *family, int p, int m, int vocab, vp_costs costs) {
    vp_spec spec = vp_spec_make(p, m);
    spec.costs = costs;
    spec.vocab_parallel = vocab;
    vp_schedule *s = NULL;
    vp_error err = {0};
    vp_status rc = vp_family_build(family, &spec, &s, &err);
    if (rc != VP_OK && vocab) { /* the family refuses the shape itself, never its passes */
        vp_schedule *plain = build(family, p, m, 0, costs);
        if (plain)
            fail_msg("%s p=%d m=%d: %s", family, p, m, err.message);
    }
    return rc == VP_OK ? s : NULL;
}

/* v is s with, on each device, the four vocabulary passes of every microbatch of its shard
 * inserted and nothing else changed. */
static void expect_inserted(const vp_schedule *s, const vp_schedule *v) {
    assert_int_equal(v->vocab_parallel, 1);
    assert_int_equal(vp_schedule_op_count(v), vp_schedule_op_count(s) + 4L * s->p * s->m);
    for (int d = 0; d < s->p; d++) {
        int k = 0, count[4] = {0};
        for (int i = 0; i < v->dev[d].n; i++) {
            const vp_op *op = &v->dev[d].ops[i];
            if (vp_op_kind_is_vocab(op->kind)) {
                assert_int_equal(op->stage, d);
                count[op->kind - VP_OP_EF]++;
                continue;
            }
            assert_true(k < s->dev[d].n);
            const vp_op *o = &s->dev[d].ops[k++];
            assert_true(op->kind == o->kind && op->bkind == o->bkind && op->stage == o->stage &&
                        op->mb == o->mb && op->stage2 == o->stage2 && op->mb2 == o->mb2);
        }
        assert_int_equal(k, s->dev[d].n);
        for (int c = 0; c < 4; c++)
            assert_int_equal(count[c], s->m);
    }
}

/* Every family on a grid, with and without recomputation: the vocabulary-parallel build
 * validates, keeps every device's order of the plain build and adds 4 passes per (device,
 * microbatch); with the vocabulary's memory at 0 the peaks are the plain build's. */
static void test_every_family(void **state) {
    (void)state;
    static const int ps[] = {1, 2, 3, 4, 8};
    static const int ms[] = {1, 3, 8, 16};
    vp_costs costs = vp_costs_default();
    costs.s = 0.5, costs.t = 0.7, costs.e = 0.1, costs.c = 0.2;
    int built = 0;
    for (int fi = 0; fi < vp_family_count(); fi++)
        for (size_t a = 0; a < sizeof ps / sizeof *ps; a++)
            for (size_t b = 0; b < sizeof ms / sizeof *ms; b++) {
                const char *name = vp_family_at(fi)->name;
                vp_schedule *s = build(name, ps[a], ms[b], 0, costs);
                if (!s)
                    continue;
                vp_schedule *v = build(name, ps[a], ms[b], 1, costs);
                assert_non_null(v);
                expect_inserted(s, v);
                assert_int_equal(vp_schedule_validate(v, NULL), VP_OK);
                vp_sim *plain = tu_sim(s, costs, NULL), *vs = tu_sim(v, costs, NULL);
                for (int d = 0; d < s->p; d++)
                    TU_NEAR(vs->peak[d], plain->peak[d]);
                assert_true(vs->makespan >= plain->makespan);
                vp_schedule *r = NULL;
                assert_int_equal(vp_schedule_recompute(v, VP_RECOMPUTE_FULL, &r, NULL), VP_OK);
                assert_int_equal(r->vocab_parallel, 1);
                assert_int_equal(vp_schedule_validate(r, NULL), VP_OK);
                vp_schedule_free(r);
                vp_sim_free(plain);
                vp_sim_free(vs);
                vp_schedule_free(s);
                vp_schedule_free(v);
                built++;
            }
    assert_true(built > 200);
}

/* Index of op (kind, stage, mb) in device d's list, or -1. */
static int find(const vp_schedule *s, int d, int kind, int stage, int mb) {
    for (int k = 0; k < s->dev[d].n; k++) {
        const vp_op *op = &s->dev[d].ops[k];
        if (op->kind == kind && op->stage == stage && op->mb == mb)
            return k;
    }
    return -1;
}

/* The simulated times keep the collectives: every T starts after every shard's S of its
 * microbatch ended (plus c from another device), the last stage's backward after every
 * T, the first stage's F after every EF, each EB after the first stage's backward. */
static void test_collective_times(void **state) {
    (void)state;
    vp_costs costs = vp_costs_default();
    costs.f = costs.b = costs.w = 2, costs.s = 0.5, costs.t = 0.5, costs.e = 0.1, costs.c = 0.3;
    static const char *const families[] = {"1f1b", "v-half", "v-min", "zb-v", "dualpipev"};
    for (size_t fi = 0; fi < sizeof families / sizeof *families; fi++) {
        vp_schedule *v = build(families[fi], 4, 8, 1, costs);
        vp_sim *sim = tu_sim(v, costs, NULL);
        for (int j = 0; j < v->m; j++) {
            int last = vp_schedule_last_stage(v, j), dl = v->stage_device[last];
            int db = find(v, dl, VP_OP_B, last, j);
            double b_start = db >= 0 ? sim->start[dl][db] : -1;
            for (int d = 0; d < v->p; d++) {
                int t = find(v, d, VP_OP_T, d, j), ef = find(v, d, VP_OP_EF, d, j);
                assert_true(t >= 0 && ef >= 0);
                for (int e = 0; e < v->p; e++) {
                    int se = find(v, e, VP_OP_S, e, j);
                    double hop = e == d ? 0 : costs.c;
                    assert_true(sim->start[d][t] >= sim->end[e][se] + hop - 1e-9);
                }
                if (db >= 0) /* a split backward (zb-v, v-half): after every T */
                    assert_true(b_start >= sim->end[d][t] + (d == dl ? 0 : costs.c) - 1e-9);
                TU_NEAR(sim->end[d][t] - sim->start[d][t], costs.t);
                TU_NEAR(sim->end[d][ef] - sim->start[d][ef], costs.e);
            }
        }
        vp_sim_free(sim);
        vp_schedule_free(v);
    }
}

/* Memory of the passes: EF and S take the shard's vocab_act, EB and T release it; a
 * device's peak grows by at most what its shard holds at once. */
static void test_memory(void **state) {
    (void)state;
    vp_costs costs = vp_costs_default();
    vp_schedule *v = build("v-half", 4, 8, 1, costs), *s = build("v-half", 4, 8, 0, costs);
    vp_cost_model *cm = tu_cm(v, costs, NULL);
    for (int d = 0; d < v->p; d++) {
        cm->vocab_act[d] = 0.01;        /* EF until EB */
        cm->vocab_act[v->p + d] = 0.25; /* S until T */
    }
    double up, down;
    vp_cost_model_pass_memory(cm, VP_OP_S, 2, 0, &up, &down);
    TU_NEAR(up, 0.25);
    TU_NEAR(down, 0);
    vp_cost_model_pass_memory(cm, VP_OP_T, 2, 0, &up, &down);
    TU_NEAR(up, 0);
    TU_NEAR(down, 0.25);
    vp_cost_model_pass_memory(cm, VP_OP_EB, 1, 0, &up, &down);
    TU_NEAR(down, 0.01);
    double peak[4], plain[4];
    vp_memory_peaks(v, cm, 0, peak);
    vp_sim *sp = tu_sim(s, costs, NULL);
    memcpy(plain, sp->peak, sizeof plain);
    for (int d = 0; d < 4; d++) /* at most one S..T open at once here, every EF before EB */
        assert_true(peak[d] > plain[d] && peak[d] <= plain[d] + 0.25 + 8 * 0.01 + 1e-12);
    vp_sim_free(sp);
    vp_cost_model_free(cm);
    vp_schedule_free(v);
    vp_schedule_free(s);
}

/* A copy of s with op (d, k) removed (k < 0: nothing removed). */
static vp_schedule *without(const vp_schedule *s, int d, int k) {
    vp_schedule *c = NULL;
    assert_int_equal(vp_schedule_recompute(s, s->recompute, &c, NULL), VP_OK);
    if (k < 0)
        return c;
    memmove(&c->dev[d].ops[k], &c->dev[d].ops[k + 1],
            (size_t)(c->dev[d].n - k - 1) * sizeof(vp_op));
    c->dev[d].n--;
    return c;
}

/* Expects validation of s to fail with status and a message containing what. */
static void expect_invalid(const vp_schedule *s, vp_status status, const char *what) {
    vp_error err = {0};
    assert_int_equal(vp_schedule_validate(s, &err), status);
    if (!strstr(err.message, what))
        fail_msg("expected '%s' in: %s", what, err.message);
}

/* The validator names each broken rule. */
static void test_validator(void **state) {
    (void)state;
    vp_costs costs = vp_costs_default();
    vp_schedule *v = build("1f1b", 3, 4, 1, costs), *s = build("1f1b", 3, 4, 0, costs);
    int t = find(v, 1, VP_OP_T, 1, 2), sp = find(v, 1, VP_OP_S, 1, 2);
    vp_schedule *c = without(v, 1, t);
    expect_invalid(c, VP_EVALIDATION, "missing T of vocabulary shard 1, microbatch 2");
    vp_schedule_free(c);
    c = without(v, 1, t); /* T before its S */
    vp_schedule_push(c, 1, v->dev[1].ops[t]);
    vp_op tmp = c->dev[1].ops[c->dev[1].n - 1];
    memmove(&c->dev[1].ops[sp + 1], &c->dev[1].ops[sp],
            (size_t)(c->dev[1].n - 1 - sp) * sizeof tmp);
    c->dev[1].ops[sp] = tmp;
    expect_invalid(c, VP_EVALIDATION, "T comes before its S");
    vp_schedule_free(c);
    c = without(v, 1, sp); /* S on the wrong device */
    vp_schedule_push_pass(c, 0, VP_OP_S, 1, 2);
    expect_invalid(c, VP_EVALIDATION, "shard 1 belongs on device 1");
    vp_schedule_free(c);
    int ef1 = find(v, 2, VP_OP_EF, 2, 1);
    c = without(v, 2, ef1); /* a duplicate */
    vp_schedule_push(c, 2, v->dev[2].ops[ef1]);
    vp_schedule_push(c, 2, v->dev[2].ops[ef1]);
    expect_invalid(c, VP_EVALIDATION, "duplicate EF");
    vp_schedule_free(c);
    c = without(s, 0, -1); /* a vocabulary pass where there is no vocabulary parallelism */
    vp_schedule_push_pass(c, 0, VP_OP_EF, 0, 0);
    expect_invalid(c, VP_EVALIDATION, "without vocabulary parallelism");
    vp_schedule_free(c);
    c = without(s, 0, -1); /* the flag without the passes */
    c->vocab_parallel = 1;
    expect_invalid(c, VP_EVALIDATION, "missing EF of vocabulary shard 0, microbatch 0");
    vp_schedule_free(c);
    /* EF of shard 2 after the last op of device 2: F0.0 on device 0 waits for it while
     * device 2 waits for F1.0's output: a deadlock */
    int ef = find(v, 2, VP_OP_EF, 2, 0);
    c = without(v, 2, ef);
    vp_schedule_push(c, 2, v->dev[2].ops[ef]);
    expect_invalid(c, VP_EDEADLOCK, "EF2.0");
    vp_schedule_free(c);
    vp_schedule_free(v);
    vp_schedule_free(s);
}

/* JSON round-trips the passes and the flag; the PyTorch CSV refuses them, saying why;
 * a schedule that has them cannot take them again. */
static void test_formats(void **state) {
    (void)state;
    vp_costs costs = vp_costs_default();
    vp_schedule *v = build("dualpipev", 2, 4, 1, costs);
    char *text = NULL;
    vp_schedule *back = NULL;
    assert_int_equal(vp_json_write(v, &text, NULL), VP_OK);
    assert_non_null(strstr(text, "\"vocab_parallel\": true"));
    assert_non_null(strstr(text, "[\"T\",1,3]"));
    assert_int_equal(vp_schedule_parse(text, strlen(text), &back, NULL), VP_OK);
    assert_true(vp_schedule_equal(v, back));
    free(text);
    vp_error err = {0};
    assert_int_equal(vp_torch_csv_write(v, VP_TORCH_CSV_COMPUTE_ONLY, &text, &err),
                     VP_EUNSUPPORTED);
    assert_non_null(strstr(err.message, "no vocabulary passes"));
    vp_cost_model *cm = tu_cm(v, costs, NULL);
    vp_schedule *twice = NULL;
    assert_int_equal(vp_vocab_place(v, cm, &twice, &err), VP_EINVAL);
    assert_null(twice);
    static const char bad_shard[] =
        "{\"format\": \"vpipe-schedule\", \"version\": 1, \"p\": 2, \"stages\": 2, "
        "\"microbatches\": 1, \"route_len\": 2, \"placement\": \"single\", \"stage_device\": "
        "[0,1], \"vocab_parallel\": true, \"devices\": [[[\"EF\",2,0]], []]}";
    vp_schedule *bad = NULL;
    assert_int_equal(vp_json_read(bad_shard, strlen(bad_shard), &bad, &err), VP_EPARSE);
    assert_non_null(strstr(err.message, "vocabulary shard must be an integer in [0, p)"));
    vp_cost_model_free(cm);
    vp_schedule_free(back);
    vp_schedule_free(v);
}

/* The cost keys S, T and E, and their bounds. */
static void test_costs(void **state) {
    (void)state;
    vp_costs c = vp_costs_default();
    TU_NEAR(c.s + c.t + c.e, 0);
    assert_int_equal(vp_costs_parse("S=0.5,t=2,E=0.25", &c, NULL), VP_OK);
    TU_NEAR(c.s, 0.5);
    TU_NEAR(c.t, 2);
    TU_NEAR(c.e, 0.25);
    vp_error err = {0};
    assert_int_equal(vp_costs_parse("S=1e13", &c, &err), VP_EVALIDATION);
    assert_int_equal(vp_costs_parse("X=1", &c, &err), VP_EPARSE);
    assert_non_null(strstr(err.message, "S, T, E"));
}

/* Prices family at (p, m) for model on gpu, with or without vocabulary parallelism. */
static vp_price_result *priced(const char *model, const char *family, int p, int m, int seq,
                               int vocab, vp_split_goal split) {
    vp_arch a;
    vp_gpu g;
    vp_error err = {0};
    assert_int_equal(vp_arch_resolve(model, &a, &err), VP_OK);
    assert_int_equal(vp_gpu_preset("h100-80gb", &g, &err), VP_OK);
    vp_workload t = vp_workload_default(&a);
    t.seq = seq;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = split};
    vp_spec spec = vp_spec_make(p, m);
    spec.vocab_parallel = vocab;
    vp_price_result *r = NULL;
    if (vp_price_family(&su, family, &spec, &r, NULL, &err) != VP_OK)
        fail_msg("%s %s: %s", model, family, err.message);
    return r;
}

static double spread(const vp_price_result *r) {
    double lo = INFINITY, hi = 0;
    for (int d = 0; d < r->p; d++) {
        lo = r->memory[d].total < lo ? r->memory[d].total : lo;
        hi = r->memory[d].total > hi ? r->memory[d].total : hi;
    }
    return hi - lo;
}

/* Issue 28's pricing acceptance: Llama-3-8B on 8 H100s with V-Half is at least as fast
 * with vocabulary parallelism and its per-rank memory spread shrinks, under the default
 * split (time) and the naive even one; vpipe's own model prices a vocabulary-parallel
 * layout byte for byte as its runtime holds it; a vocabulary smaller than p is refused. */
static void test_price(void **state) {
    (void)state;
    for (int split = VP_SPLIT_TIME; split <= VP_SPLIT_EVEN; split += 2)
        for (int seq = 2048; seq <= 4096; seq *= 2) {
            vp_price_result *plain = priced("llama3-8b", "v-half", 8, 32, seq, 0, split);
            vp_price_result *v = priced("llama3-8b", "v-half", 8, 32, seq, 1, split);
            printf("llama3-8b v-half p=8 m=32 seq %d split %s: step %.4f -> %.4f s, spread "
                   "%.2f -> %.2f GiB\n",
                   seq, split ? "even" : "time", plain->step_time_s, v->step_time_s,
                   spread(plain) / (1 << 30), spread(v) / (1 << 30));
            assert_true(v->step_time_s <= plain->step_time_s);
            assert_true(spread(v) < spread(plain) / 4);
            vp_price_result_free(plain);
            vp_price_result_free(v);
        }
    /* vpipe's own model: the stages' and shards' bytes as vp_stage_sizes_of says */
    vp_price_result *own = priced("vpipe:16,128,4,64", "v-half", 4, 8, 64, 1, VP_SPLIT_EVEN);
    vp_model_config cfg = {16, 128, 4, 64, 1, 256};
    for (int st = 0; st < own->S; st++) {
        const vp_price_stage *g = &own->stage[st];
        vp_stage_range range = {g->l0, g->l1, g->first, g->last, 4, 0};
        vp_stage_sizes sz;
        assert_int_equal(vp_stage_sizes_of(&cfg, range, &sz, NULL), VP_OK);
        assert_true(g->act_bytes == sz.act_bytes && g->keep_bytes == sz.stash_bytes &&
                    g->params * 4 == sz.param_bytes);
    }
    vp_stage_sizes shard;
    assert_int_equal(vp_stage_sizes_of(&cfg, vp_vocab_range(1, 4), &shard, NULL), VP_OK);
    vp_price_result_free(own);
    vp_arch a;
    vp_gpu g;
    vp_price_layout *lay = NULL;
    assert_int_equal(vp_arch_resolve("vpipe:16,128,4,64", &a, NULL), VP_OK);
    assert_int_equal(vp_gpu_preset("h100-80gb", &g, NULL), VP_OK);
    vp_workload t = vp_workload_default(&a);
    t.seq = 64;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    vp_schedule *s = tu_build("v-half", 4, 8, 0, vp_costs_default());
    s->vocab_parallel = 1; /* the layout reads the flag of the shape */
    assert_int_equal(vp_price_layout_new(&su, s, &lay, NULL), VP_OK);
    TU_NEAR(lay->cm->vocab_act_bytes[1], shard.embed_bytes);
    TU_NEAR(lay->cm->vocab_act_bytes[4 + 1], shard.output_bytes);
    vp_price_layout_free(lay);
    a.vocab = 3; /* fewer entries than devices */
    vp_error err = {0};
    assert_int_equal(vp_price_layout_new(&su, s, &lay, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "needs a vocabulary of at least 4 entries"));
    vp_schedule_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_family), cmocka_unit_test(test_collective_times),
        cmocka_unit_test(test_memory),       cmocka_unit_test(test_validator),
        cmocka_unit_test(test_formats),      cmocka_unit_test(test_costs),
        cmocka_unit_test(test_price),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
