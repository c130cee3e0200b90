/* Recomputation in the schedule value: the transform, the validator's rules for R, the
 * simulator's times and memory with R, the JSON round trip and the cost key R. */
#include <stdlib.h>

#include "test_util.h"

/* The recomputing version of s under mode; fails the test on error. */
static vp_schedule *recomputed(const vp_schedule *s, vp_recompute mode) {
    vp_schedule *r = NULL;
    vp_error err = {0};
    if (vp_schedule_recompute(s, mode, &r, &err) != VP_OK)
        fail_msg("recompute %s: %s", s->family, err.message);
    return r;
}

/* The (stage, mb) whose backward op runs, or stage -1. */
static void backward_of(const vp_op *op, int *stage, int *mb) {
    *stage = -1;
    if (op->kind == VP_OP_B || op->kind == VP_OP_BW)
        *stage = op->stage, *mb = op->mb;
    else if (op->kind == VP_OP_FB)
        *stage = op->stage2, *mb = op->mb2;
}

/* r is s with one R right before each backward and nothing else changed. */
static void expect_r_before_backwards(const vp_schedule *s, const vp_schedule *r) {
    for (int d = 0; d < s->p; d++) {
        int k = 0;
        for (int i = 0; i < s->dev[d].n; i++) {
            const vp_op *op = &s->dev[d].ops[i];
            int st, mb;
            backward_of(op, &st, &mb);
            if (st >= 0) {
                const vp_op *x = &r->dev[d].ops[k++];
                if (x->kind != VP_OP_R || x->stage != st || x->mb != mb)
                    fail_msg("%s d%d: op %d is not R%d.%d before its backward", s->family, d, k - 1,
                             st, mb);
            }
            assert_memory_equal(&r->dev[d].ops[k++], op, sizeof *op);
        }
        assert_int_equal(k, r->dev[d].n);
    }
}

/* Every family on a grid: the transform validates, puts R right before every backward,
 * counts route_len * m R ops, keeps the family's name, is idempotent, and NONE undoes it. */
static void test_transform(void **state) {
    (void)state;
    static const int ps[] = {1, 2, 3, 4, 8};
    static const int ms[] = {1, 3, 8, 16};
    for (int fi = 0; fi < vp_family_count(); fi++)
        for (size_t a = 0; a < sizeof ps / sizeof *ps; a++)
            for (size_t b = 0; b < sizeof ms / sizeof *ms; b++) {
                vp_spec spec = vp_spec_make(ps[a], ms[b]);
                vp_schedule *s = NULL;
                if (vp_family_build(vp_family_at(fi)->name, &spec, &s, NULL) != VP_OK)
                    continue;
                vp_schedule *plain = recomputed(s, VP_RECOMPUTE_NONE);
                vp_schedule *r = recomputed(plain, VP_RECOMPUTE_FULL);
                vp_error err = {0};
                if (vp_schedule_validate(r, &err) != VP_OK)
                    fail_msg("%s p=%d m=%d: %s", s->family, s->p, s->m, err.message);
                assert_string_equal(r->family, s->family);
                assert_int_equal(r->recompute, VP_RECOMPUTE_FULL);
                assert_int_equal(vp_schedule_op_count(r),
                                 vp_schedule_op_count(plain) + (long)s->route_len * s->m);
                expect_r_before_backwards(plain, r);
                vp_schedule *again = recomputed(r, VP_RECOMPUTE_FULL);
                assert_true(vp_schedule_equal(again, r));
                vp_schedule *undone = recomputed(r, VP_RECOMPUTE_NONE);
                assert_true(vp_schedule_equal(undone, plain));
                vp_schedule_free(undone);
                vp_schedule_free(again);
                vp_schedule_free(r);
                vp_schedule_free(plain);
                vp_schedule_free(s);
            }
    vp_schedule *s = tu_build("1f1b", 2, 2, 0, vp_costs_default()), *r = NULL;
    vp_error err = {0};
    assert_int_equal(vp_schedule_recompute(s, (vp_recompute)7, &r, &err), VP_EINVAL);
    assert_null(r);
    vp_schedule_free(s);
}

/* The family registry and the spec: 1f1b-r is 1F1B with full recomputation; a spec with
 * recomputation builds every family's recomputing version. */
static void test_families(void **state) {
    (void)state;
    vp_schedule *plain = tu_build("1f1b", 4, 8, 0, vp_costs_default());
    vp_schedule *r = tu_build("1f1b-r", 4, 8, 0, vp_costs_default());
    vp_schedule *want = recomputed(plain, VP_RECOMPUTE_FULL);
    assert_true(vp_schedule_equal(r, want));
    assert_string_equal(r->family, "1f1b-r");
    vp_spec spec = vp_spec_make(4, 8);
    spec.recompute = VP_RECOMPUTE_SELECTIVE;
    vp_schedule *vh = NULL, *vh_plain = tu_build("v-half", 4, 8, 0, vp_costs_default());
    assert_int_equal(vp_family_build("v-half", &spec, &vh, NULL), VP_OK);
    vp_schedule *vh_want = recomputed(vh_plain, VP_RECOMPUTE_SELECTIVE);
    assert_true(vp_schedule_equal(vh, vh_want));
    assert_true(vp_spec_max_ops(&spec) == 4.0 * 8 * 8);
    vp_schedule *sel = NULL;
    assert_int_equal(vp_family_build("1f1b-r", &spec, &sel, NULL), VP_OK);
    assert_int_equal(sel->recompute, VP_RECOMPUTE_SELECTIVE);
    vp_schedule *all[] = {plain, r, want, vh, vh_plain, vh_want, sel};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        vp_schedule_free(all[i]);
}

/* Expects validation of s to fail with a message containing what. */
static void expect_invalid(const vp_schedule *s, const char *what) {
    vp_error err = {0};
    vp_status rc = vp_schedule_validate(s, &err);
    if (rc != VP_EVALIDATION || !strstr(err.message, what))
        fail_msg("want a validation error with \"%s\", got %d: %s", what, rc, err.message);
}

/* 1F1B-R on 2 devices, 1 microbatch: d0 F R BW, d1 F R BW; mutations of it. */
static vp_schedule *tiny(vp_recompute mode, const int (*ops)[3], int n0, int n1) {
    vp_schedule *s = tu_schedule("t", 2, 2, 1, VP_PLACE_SINGLE);
    s->recompute = mode;
    for (int i = 0; i < n0 + n1; i++)
        assert_int_equal(
            vp_schedule_push_pass(s, i < n0 ? 0 : 1, (vp_op_kind)ops[i][0], ops[i][1], ops[i][2]),
            VP_OK);
    return s;
}

static void test_validator_rules(void **state) {
    (void)state;
    const int good[][3] = {{VP_OP_F, 0, 0}, {VP_OP_R, 0, 0}, {VP_OP_BW, 0, 0},
                           {VP_OP_F, 1, 0}, {VP_OP_R, 1, 0}, {VP_OP_BW, 1, 0}};
    vp_schedule *s = tiny(VP_RECOMPUTE_FULL, good, 3, 3);
    assert_int_equal(vp_schedule_validate(s, NULL), VP_OK);
    s->recompute = VP_RECOMPUTE_NONE;
    expect_invalid(s, "R in a schedule that does not recompute");
    s->recompute = (vp_recompute)9;
    expect_invalid(s, "unknown recomputation 9");
    vp_schedule_free(s);
    struct {
        int ops[7][3];
        int n0, n1;
        const char *what;
    } bad[] = {
        {{{VP_OP_F, 0, 0},
          {VP_OP_R, 0, 0},
          {VP_OP_R, 0, 0},
          {VP_OP_BW, 0, 0},
          {VP_OP_F, 1, 0},
          {VP_OP_R, 1, 0},
          {VP_OP_BW, 1, 0}},
         4,
         3,
         "device 0, position 2 (R0.0): duplicate recomputation"},
        {{{VP_OP_R, 0, 0},
          {VP_OP_F, 0, 0},
          {VP_OP_BW, 0, 0},
          {VP_OP_F, 1, 0},
          {VP_OP_R, 1, 0},
          {VP_OP_BW, 1, 0}},
         3,
         3,
         "R comes before its forward"},
        {{{VP_OP_F, 0, 0},
          {VP_OP_BW, 0, 0},
          {VP_OP_R, 0, 0},
          {VP_OP_F, 1, 0},
          {VP_OP_R, 1, 0},
          {VP_OP_BW, 1, 0}},
         3,
         3,
         "backward comes before its R"},
        {{{VP_OP_F, 0, 0}, {VP_OP_R, 0, 0}, {VP_OP_BW, 0, 0}, {VP_OP_F, 1, 0}, {VP_OP_BW, 1, 0}},
         3,
         2,
         "device 1, position 1 (BW1.0): backward comes before its R"},
        {{{VP_OP_F, 0, 0},
          {VP_OP_R, 0, 0},
          {VP_OP_BW, 0, 0},
          {VP_OP_R, 1, 0},
          {VP_OP_F, 1, 0},
          {VP_OP_R, 1, 0},
          {VP_OP_BW, 1, 0}},
         4,
         3,
         "stage 1 belongs on device 1"},
        {{{VP_OP_F, 0, 0},
          {VP_OP_R, 0, 0},
          {VP_OP_B, 0, 0},
          {VP_OP_W, 0, 0},
          {VP_OP_F, 1, 0},
          {VP_OP_B, 1, 0},
          {VP_OP_R, 1, 0}},
         4,
         3,
         "backward comes before its R"},
        {{{VP_OP_F, 0, 0}, {VP_OP_R, 0, 0}, {VP_OP_BW, 0, 0}, {VP_OP_F, 1, 0}},
         3,
         1,
         "missing R (the schedule recomputes) of stage 1, microbatch 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        s = tiny(VP_RECOMPUTE_SELECTIVE, (const int(*)[3])bad[i].ops, bad[i].n0, bad[i].n1);
        expect_invalid(s, bad[i].what);
        vp_schedule_free(s);
    }
}

/* Simulated times on a grid: R takes its own cost (the forward's by default) on its
 * device; with R free the makespan is the plain schedule's (R waits only for an earlier
 * op of its device). */
static void test_times(void **state) {
    (void)state;
    vp_costs grid[3] = {tu_costs(1, 1, 1, 0), tu_costs(1, 2, 0.5, 0.25), tu_costs(2, 3, 1, 1)};
    static const char *const fams[] = {"1f1b", "zb-h1", "interleaved", "v-half", "dualpipev"};
    for (size_t f = 0; f < sizeof fams / sizeof *fams; f++)
        for (int c = 0; c < 3; c++) {
            vp_schedule *s = tu_build(fams[f], 4, 8, 0, grid[c]);
            vp_schedule *r = recomputed(s, VP_RECOMPUTE_FULL);
            vp_sim *plain = tu_sim(s, grid[c], NULL), *with_r = tu_sim(r, grid[c], NULL);
            double v = s->placement == VP_PLACE_BIDIR ? 1 : (double)s->S / s->p;
            for (int d = 0; d < s->p; d++) { /* every stage of d recomputes m microbatches */
                int stages = 0;
                for (int st = 0; st < s->S; st++)
                    stages += s->stage_device[st] == d;
                TU_NEAR(with_r->dev_busy[d], plain->dev_busy[d] + stages * s->m * grid[c].f / v);
            }
            vp_costs free_r = grid[c];
            free_r.r = 0;
            vp_sim *zero = tu_sim(r, free_r, NULL);
            TU_NEAR(zero->makespan, plain->makespan);
            free_r.r = 0.5;
            vp_sim *half = tu_sim(r, free_r, NULL);
            TU_NEAR(half->dev_busy[0], plain->dev_busy[0] + (s->S / s->p) * s->m * 0.5 / v);
            vp_sim_free(half);
            vp_sim_free(zero);
            vp_sim_free(with_r);
            vp_sim_free(plain);
            vp_schedule_free(r);
            vp_schedule_free(s);
        }
}

/* Memory: 1F1B with recomputation peaks at act + (min(p - d, m) - 1) * hold on device d
 * (the microbatches in flight hold their share, the one recomputed its whole activation),
 * in units and bytes; on every family a recomputing schedule never holds more than the
 * plain one, and exactly as much when the held share is the whole activation. */
static void test_memory(void **state) {
    (void)state;
    vp_memcfg mem = vp_memcfg_default();
    mem.unit_bytes = 1000;
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 12; m += 5)
            for (int mode = VP_RECOMPUTE_SELECTIVE; mode <= VP_RECOMPUTE_FULL; mode++) {
                vp_schedule *s = tu_build("1f1b", p, m, 0, vp_costs_default());
                vp_schedule *r = recomputed(s, (vp_recompute)mode);
                vp_sim *sim = tu_sim(r, vp_costs_default(), &mem);
                double hold = mode == VP_RECOMPUTE_FULL ? mem.input_share : 1 - mem.core_share;
                for (int d = 0; d < p; d++) {
                    int in_flight = p - d < m ? p - d : m;
                    TU_NEAR(sim->peak[d], 1 + (in_flight - 1) * hold);
                    TU_NEAR(sim->peak_bytes[d], 1000 * (1 + (in_flight - 1) * hold));
                }
                vp_sim_free(sim);
                vp_schedule_free(r);
                vp_schedule_free(s);
            }
    for (int fi = 0; fi < vp_family_count(); fi++) {
        vp_spec spec = vp_spec_make(4, 8);
        vp_schedule *s = NULL;
        if (vp_family_build(vp_family_at(fi)->name, &spec, &s, NULL) != VP_OK)
            continue;
        vp_schedule *plain = recomputed(s, VP_RECOMPUTE_NONE),
                    *r = recomputed(s, VP_RECOMPUTE_FULL);
        vp_memcfg whole = vp_memcfg_default(), zb = vp_memcfg_default();
        whole.input_share = 1;
        zb.kind = VP_MEM_ZB;
        zb.zb_ratio = 0.4;
        vp_sim *a = tu_sim(plain, vp_costs_default(), &zb), *b = tu_sim(r, vp_costs_default(), &zb);
        vp_sim *c = tu_sim(plain, vp_costs_default(), &whole);
        vp_sim *e = tu_sim(r, vp_costs_default(), &whole);
        for (int d = 0; d < s->p; d++) {
            assert_true(b->peak[d] <= a->peak[d] + 1e-12);
            TU_NEAR(e->peak[d], c->peak[d]);
        }
        vp_sim *all[] = {a, b, c, e};
        for (int i = 0; i < 4; i++)
            vp_sim_free(all[i]);
        vp_schedule_free(r);
        vp_schedule_free(plain);
        vp_schedule_free(s);
    }
}

/* The memory of R and of an F that will be recomputed, op by op. */
static void test_op_memory(void **state) {
    (void)state;
    vp_schedule *s = tu_build("v-half", 2, 2, 0, vp_costs_default());
    vp_schedule *r = recomputed(s, VP_RECOMPUTE_SELECTIVE);
    vp_memcfg mem = vp_memcfg_default();
    mem.core_share = 0.75;
    vp_cost_model *cm = tu_cm(r, vp_costs_default(), &mem);
    double up, down, act = 0.5, hold = 0.5 * 0.25; /* a V chunk is half a unit */
    vp_op f = {.kind = VP_OP_F, .stage = 1}, rr = {.kind = VP_OP_R, .stage = 1};
    vp_cost_model_op_memory(cm, &f, 0, &up, &down);
    TU_NEAR(up, act);
    TU_NEAR(down, act - hold);
    vp_cost_model_op_memory(cm, &rr, 0, &up, &down);
    TU_NEAR(up, act - hold);
    TU_NEAR(down, 0);
    vp_op fb = {.kind = VP_OP_FB, .bkind = VP_OP_BW, .stage = 0, .stage2 = 3};
    vp_cost_model_op_memory(cm, &fb, 0, &up, &down);
    TU_NEAR(up, act);
    TU_NEAR(down, (act - hold) + act);
    TU_NEAR(vp_cost_model_op_time(cm, &rr), 0.5);
    vp_cost_model_free(cm);
    mem.core_share = 1.5;
    vp_error err = {0};
    vp_costs costs = vp_costs_default();
    assert_int_equal(vp_cost_model_new(r, &costs, &mem, &cm, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "recomputation shares"));
    vp_schedule_free(r);
    vp_schedule_free(s);
}

/* vpipe JSON carries R and the recomputation; a file with R but no "recompute" fails
 * validation, an unknown mode fails to parse. */
static void test_json(void **state) {
    (void)state;
    const char *fams[] = {"1f1b-r", "v-half", "dualpipe"};
    for (int i = 0; i < 3; i++) {
        vp_schedule *s = tu_build(fams[i], 4, 8, 0, vp_costs_default());
        vp_schedule *r = recomputed(s, i == 1 ? VP_RECOMPUTE_SELECTIVE : VP_RECOMPUTE_FULL);
        char *text = NULL;
        assert_int_equal(vp_json_write(r, &text, NULL), VP_OK);
        assert_non_null(strstr(text, i == 1 ? "\"recompute\": \"selective\"" : "\"full\""));
        assert_non_null(strstr(text, "[\"R\","));
        vp_schedule *back = NULL;
        assert_int_equal(vp_json_read(text, strlen(text), &back, NULL), VP_OK);
        assert_true(vp_schedule_equal(back, r));
        assert_int_equal(vp_schedule_validate(back, NULL), VP_OK);
        free(text);
        vp_schedule_free(back);
        assert_int_equal(vp_json_write(s, &text, NULL), VP_OK);
        if (s->recompute == VP_RECOMPUTE_NONE)
            assert_null(strstr(text, "recompute"));
        free(text);
        vp_schedule_free(r);
        vp_schedule_free(s);
    }
    const char *no_mode =
        "{\"format\": \"vpipe-schedule\", \"version\": 1, \"p\": 1, \"stages\": 1,"
        " \"microbatches\": 1, \"route_len\": 1, \"placement\": \"single\","
        " \"stage_device\": [0], \"devices\": [[[\"F\",0,0],[\"R\",0,0],"
        "[\"BW\",0,0]]]}";
    vp_schedule *s = NULL;
    vp_error err = {0};
    assert_int_equal(vp_json_read(no_mode, strlen(no_mode), &s, NULL), VP_OK);
    assert_int_equal(vp_schedule_validate(s, &err), VP_EVALIDATION);
    assert_non_null(strstr(err.message, "does not recompute"));
    vp_schedule_free(s);
    char bad[600];
    int at = (int)(strstr(no_mode, " \"stage_device\"") - no_mode);
    snprintf(bad, sizeof bad, "%.*s \"recompute\": \"some\",%s", at, no_mode, no_mode + at);
    assert_int_equal(vp_json_read(bad, strlen(bad), &s, &err), VP_EPARSE);
    assert_non_null(strstr(err.message, "\"recompute\" must be one of none, selective, full"));
}

/* The cost key R, and the names of the modes. */
static void test_names(void **state) {
    (void)state;
    vp_costs c = vp_costs_default();
    assert_true(c.r < 0);
    assert_int_equal(vp_costs_parse("F=2,R=0.5", &c, NULL), VP_OK);
    TU_NEAR(c.r, 0.5);
    vp_error err = {0};
    assert_int_equal(vp_costs_parse("R=1,R=2", &c, &err), VP_EPARSE);
    assert_non_null(strstr(err.message, "given twice"));
    for (int i = 0; i <= VP_RECOMPUTE_FULL; i++) {
        vp_recompute r = VP_RECOMPUTE_NONE;
        assert_int_equal(vp_recompute_parse(vp_recompute_name((vp_recompute)i), &r, NULL), VP_OK);
        assert_int_equal(r, i);
    }
    assert_string_equal(vp_recompute_name((vp_recompute)3), "?");
    assert_string_equal(vp_op_kind_name(VP_OP_R), "R");
    vp_op_kind k;
    assert_int_equal(vp_op_kind_parse("R", &k), VP_OK);
    assert_int_equal(k, VP_OP_R);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transform),
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_validator_rules),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_op_memory),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
