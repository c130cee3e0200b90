/* The rules of a pass (schedule/pass.h), the memory of an op (vp_cost_model_op_memory) and
 * the event-driven replay against a straightforward reference. */
#include <stdlib.h>

#include "schedule/pass.h"
#include "schedule/replay.h"
#include "test_util.h"

static vp__pass pass_of(int stage, int mb, int kind) {
    vp__pass p = {.stage = stage, .mb = mb, .kind = (uint8_t)kind};
    return p;
}

/* Expects `pass` to wait for exactly one pass, (stage, mb, kind). */
static void expect_dep(const vp_schedule *s, vp__pass pass, int stage, int mb, int kind) {
    vp__pass dep[VP__PASS_MAX_DEPS] = {{0}};
    int n = vp__pass_deps(s, NULL, pass, dep);
    if (n != 1 || dep[0].stage != stage || dep[0].mb != mb || dep[0].kind != kind)
        fail_msg("pass %d of (%d, %d): want (%d, %d, %d), got %d deps, first (%d, %d, %d)",
                 pass.kind, pass.stage, pass.mb, stage, mb, kind, n, dep[0].stage, dep[0].mb,
                 dep[0].kind);
}

/* Every pass kind's dependency, on both routes of a bidirectional placement (microbatch 0
 * runs stages 0..1, microbatch 1 stages 2..3), so first and last stages of a route that
 * are not stage 0 or S-1 are covered. */
static void test_dependencies(void **state) {
    (void)state;
    vp_schedule *s = tu_schedule("t", 2, 4, 2, VP_PLACE_BIDIR);
    vp__pass dep[VP__PASS_MAX_DEPS];
    for (int mb = 0; mb < 2; mb++) {
        int first = s->mb_first[mb], last = first + 1;
        assert_int_equal(vp__pass_deps(s, NULL, pass_of(first, mb, VP__PASS_F), dep), 0);
        expect_dep(s, pass_of(last, mb, VP__PASS_F), first, mb, VP__PASS_F);
        expect_dep(s, pass_of(last, mb, VP__PASS_B), last, mb, VP__PASS_F);
        expect_dep(s, pass_of(first, mb, VP__PASS_B), last, mb, VP__PASS_B);
        expect_dep(s, pass_of(first, mb, VP__PASS_W), first, mb, VP__PASS_B);
        expect_dep(s, pass_of(last, mb, VP__PASS_W), last, mb, VP__PASS_B);
    }
    vp_schedule_free(s);
}

/* Expects op to complete n passes (stage, mb, kind, chained) in this order. */
static void expect_passes(vp_op op, int n, const int (*want)[4]) {
    vp__pass got[VP__OP_MAX_PASSES];
    assert_int_equal(vp__op_passes(&op, got), n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(got[i].stage, want[i][0]);
        assert_int_equal(got[i].mb, want[i][1]);
        assert_int_equal(got[i].kind, want[i][2]);
        assert_int_equal(got[i].chained, want[i][3]);
    }
}

static void test_op_passes(void **state) {
    (void)state;
    vp_op f = {.kind = VP_OP_F, .stage = 3, .mb = 5};
    expect_passes(f, 1, (const int[][4]){{3, 5, VP__PASS_F, 0}});
    vp_op b = {.kind = VP_OP_B, .stage = 2, .mb = 1};
    expect_passes(b, 1, (const int[][4]){{2, 1, VP__PASS_B, 0}});
    vp_op w = {.kind = VP_OP_W, .stage = 2, .mb = 1};
    expect_passes(w, 1, (const int[][4]){{2, 1, VP__PASS_W, 0}});
    vp_op bw = {.kind = VP_OP_BW, .stage = 4, .mb = 0};
    expect_passes(bw, 2, (const int[][4]){{4, 0, VP__PASS_B, 0}, {4, 0, VP__PASS_W, 1}});
    vp_op fb = {.kind = VP_OP_FB, .bkind = VP_OP_B, .stage = 0, .mb = 7, .stage2 = 3, .mb2 = 2};
    expect_passes(fb, 2, (const int[][4]){{0, 7, VP__PASS_F, 0}, {3, 2, VP__PASS_B, 0}});
    fb.bkind = VP_OP_BW;
    expect_passes(
        fb, 3,
        (const int[][4]){{0, 7, VP__PASS_F, 0}, {3, 2, VP__PASS_B, 0}, {3, 2, VP__PASS_W, 1}});
}

/* Memory of every op kind, in units and bytes, under the ZB split (keep = R * act). */
static void test_op_memory(void **state) {
    (void)state;
    vp_schedule *s = tu_schedule("t", 2, 4, 1, VP_PLACE_V);
    vp_memcfg mem = {.kind = VP_MEM_ZB, .zb_ratio = 0.25, .unit_bytes = 8.0};
    vp_cost_model *cm = tu_cm(s, vp_costs_default(), &mem);
    double act = 0.5, keep = 0.125; /* a V chunk is half a unit */
    struct {
        vp_op op;
        double up, down;
    } cases[] = {
        {{.kind = VP_OP_F, .stage = 1}, act, 0},
        {{.kind = VP_OP_B, .stage = 1}, 0, act - keep},
        {{.kind = VP_OP_W, .stage = 1}, 0, keep},
        {{.kind = VP_OP_BW, .stage = 1}, 0, act},
        {{.kind = VP_OP_FB, .bkind = VP_OP_B, .stage = 0, .stage2 = 3}, act, act - keep},
        {{.kind = VP_OP_FB, .bkind = VP_OP_BW, .stage = 0, .stage2 = 3}, act, act},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double up, down;
        vp_cost_model_op_memory(cm, &cases[i].op, 0, &up, &down);
        TU_NEAR(up, cases[i].up);
        TU_NEAR(down, cases[i].down);
        vp_cost_model_op_memory(cm, &cases[i].op, 1, &up, &down);
        TU_NEAR(up, 8.0 * cases[i].up);
        TU_NEAR(down, 8.0 * cases[i].down);
    }
    vp_cost_model_free(cm);
    vp_schedule_free(s);
}

/* Bytes are always allocated; peak_bytes appears only when the model has them: from
 * unit_bytes, or filled by the caller, who sets has_bytes. */
static void test_bytes_flag(void **state) {
    (void)state;
    vp_schedule *s = tu_build("1f1b", 3, 6, 0, vp_costs_default());
    vp_cost_model *cm = tu_cm(s, vp_costs_default(), NULL);
    assert_int_equal(cm->has_bytes, 0);
    assert_non_null(cm->act_bytes);
    vp_sim *sim = NULL;
    assert_int_equal(vp_simulate(s, cm, &sim, NULL), VP_OK);
    assert_null(sim->peak_bytes);
    vp_sim_free(sim);
    for (int st = 0; st < s->S; st++) /* 1000 bytes per F, all freed by the BW */
        cm->act_bytes[st] = 1000, cm->keep_bytes[st] = 250;
    cm->has_bytes = 1;
    assert_int_equal(vp_simulate(s, cm, &sim, NULL), VP_OK);
    for (int d = 0; d < s->p; d++)
        TU_NEAR(sim->peak_bytes[d], 1000 * sim->peak[d]);
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    vp_memcfg mem = {.kind = VP_MEM_AT_W, .zb_ratio = 1, .unit_bytes = 4096};
    cm = tu_cm(s, vp_costs_default(), &mem);
    assert_int_equal(cm->has_bytes, 1);
    TU_NEAR(cm->act_bytes[0], 4096);
    vp_cost_model_free(cm);
    vp_schedule_free(s);
}

/* The reference replay: rounds in which every device runs at most its next op, when that
 * op's dependencies are done, until a round runs nothing. Same arithmetic as the replay
 * (start = max(device free, dependency end + c across devices)), no event bookkeeping.
 * Fills start/end; returns the ops left (0 when it finished); pos[p] the next positions. */
static long reference_replay(const vp_schedule *s, const vp_cost_model *cm, double **start,
                             double **end, int *pos) {
    double *done = malloc((size_t)s->S * s->m * VP__PASS_KINDS * sizeof *done);
    double *free_at = calloc((size_t)s->p, sizeof *free_at);
    for (size_t i = 0; i < (size_t)s->S * s->m * VP__PASS_KINDS; i++)
        done[i] = -1;
    long left = vp_schedule_op_count(s);
    for (int d = 0; d < s->p; d++)
        pos[d] = 0;
    for (int ran = 1; ran;) {
        ran = 0;
        for (int d = 0; d < s->p; d++) {
            if (pos[d] == s->dev[d].n)
                continue;
            const vp_op *op = &s->dev[d].ops[pos[d]];
            vp__pass passes[VP__OP_MAX_PASSES], deps[VP__PASS_MAX_DEPS];
            int n = vp__op_passes(op, passes), ready = 1;
            double t = 0;
            for (int i = 0; i < n && ready; i++)
                for (int k = 0; !passes[i].chained && k < vp__pass_deps(s, NULL, passes[i], deps);
                     k++) {
                    double r = done[vp__pass_index(s, deps[k])];
                    ready = ready && r >= 0;
                    r += s->stage_device[deps[k].stage] != d ? cm->c : 0.0;
                    t = r > t ? r : t;
                }
            if (!ready)
                continue;
            t = free_at[d] > t ? free_at[d] : t;
            start[d][pos[d]] = t;
            end[d][pos[d]] = free_at[d] = t + vp_cost_model_op_time(cm, op);
            for (int i = 0; i < n; i++)
                done[vp__pass_index(s, passes[i])] = free_at[d];
            pos[d]++, left--, ran = 1;
        }
    }
    free(done);
    free(free_at);
    return left;
}

static double op_time(const void *cm, const vp_op *op) {
    return vp_cost_model_op_time(cm, op);
}

static double **new_times(const vp_schedule *s) {
    double **t = calloc((size_t)s->p, sizeof *t);
    for (int d = 0; d < s->p; d++)
        t[d] = calloc((size_t)s->dev[d].n + 1, sizeof **t);
    return t;
}

static void free_times(double **t, int p) {
    for (int d = 0; d < p; d++)
        free(t[d]);
    free(t);
}

/* Replays s with the library and the reference: the same outcome, bit-equal times, and on
 * a deadlock a message naming every device the reference leaves blocked (the first few). */
static void expect_replay_matches(const vp_schedule *s, const vp_cost_model *cm) {
    double **s1 = new_times(s), **e1 = new_times(s), **s2 = new_times(s), **e2 = new_times(s);
    int *pos = calloc((size_t)s->p, sizeof *pos);
    vp_error err = {0};
    vp_status rc = vp__replay(s, op_time, cm, cm->c, s1, e1, &err);
    long left = reference_replay(s, cm, s2, e2, pos);
    assert_int_equal(rc, left ? VP_EDEADLOCK : VP_OK);
    for (int d = 0; d < s->p; d++) {
        for (int k = 0; k < pos[d]; k++)
            if (memcmp(&s1[d][k], &s2[d][k], sizeof(double)) ||
                memcmp(&e1[d][k], &e2[d][k], sizeof(double)))
                fail_msg("%s p=%d m=%d device %d op %d: [%a, %a] vs reference [%a, %a]", s->family,
                         s->p, s->m, d, k, s1[d][k], e1[d][k], s2[d][k], e2[d][k]);
        char want[64];
        snprintf(want, sizeof want, "device %d at position %d (", d, pos[d]);
        if (left && pos[d] < s->dev[d].n && d < 3 && !strstr(err.message, want))
            fail_msg("deadlock message lacks '%s': %s", want, err.message);
    }
    free_times(s1, s->p);
    free_times(e1, s->p);
    free_times(s2, s->p);
    free_times(e2, s->p);
    free(pos);
}

/* Every family over a grid of (p, m) and costs (uneven, with hops, with F&B priced). */
static void test_replay_equals_reference(void **state) {
    (void)state;
    const char *costs[] = {"F=1,B=1,W=1,c=0", "F=1,B=2,W=1,c=0.1",
                           "F=1.3,B=1.7,W=0.9,c=0.05,FB=2.5", "F=3,B=1,W=4,c=0.5"};
    int ps[] = {1, 2, 3, 4, 6, 8}, ms[] = {1, 2, 3, 5, 8, 12, 16};
    int checked = 0;
    for (int f = 0; f < vp_family_count(); f++)
        for (size_t c = 0; c < sizeof costs / sizeof *costs; c++)
            for (size_t i = 0; i < sizeof ps / sizeof *ps; i++)
                for (size_t j = 0; j < sizeof ms / sizeof *ms; j++) {
                    vp_spec spec = vp_spec_make(ps[i], ms[j]);
                    assert_int_equal(vp_costs_parse(costs[c], &spec.costs, NULL), VP_OK);
                    vp_schedule *s = NULL;
                    if (vp_family_build(vp_family_at(f)->name, &spec, &s, NULL) != VP_OK)
                        continue; /* the family does not take this shape */
                    vp_cost_model *cm = tu_cm(s, spec.costs, &spec.mem);
                    expect_replay_matches(s, cm);
                    vp_cost_model_free(cm);
                    vp_schedule_free(s);
                    checked++;
                }
    assert_true(checked > 1500);
}

/* Shuffled device orders: most deadlock somewhere, some do not; the replay and the
 * reference agree on which, on the times of every op that ran, and on where each device
 * stops. */
static void test_replay_shuffled(void **state) {
    (void)state;
    const char *families[] = {"1f1b", "interleaved", "zb-h1", "v-half", "dualpipe"};
    uint64_t rng = 12345;
    int deadlocks = 0, finished = 0;
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (int trial = 0; trial < 40; trial++) {
            vp_costs costs = tu_costs(1, 2, 1, 0.25);
            vp_schedule *s = tu_build(families[f], 4, 8, 0, costs);
            for (int d = 0; d < s->p; d++) { /* swap a few neighbouring ops */
                for (int x = 0; x < 1 + trial % 4; x++) {
                    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                    int k = (int)((rng >> 33) % (uint64_t)(s->dev[d].n - 1));
                    vp_op tmp = s->dev[d].ops[k];
                    s->dev[d].ops[k] = s->dev[d].ops[k + 1];
                    s->dev[d].ops[k + 1] = tmp;
                }
            }
            vp_cost_model *cm = tu_cm(s, costs, NULL);
            expect_replay_matches(s, cm);
            if (vp__replay(s, NULL, NULL, 0, NULL, NULL, NULL) == VP_EDEADLOCK)
                deadlocks++;
            else
                finished++;
            vp_cost_model_free(cm);
            vp_schedule_free(s);
        }
    assert_true(deadlocks > 10 && finished > 10);
}

/* The deadlock message names each blocked device's op and the pass it waits for. */
static void test_deadlock_message(void **state) {
    (void)state;
    vp_error err = {0};
    vp_schedule *s = tu_schedule("t", 2, 2, 2, VP_PLACE_SINGLE);
    /* Device 0: F0.0 F0.1 BW0.1 BW0.0. Device 1: F1.1 BW1.0 F1.0 BW1.1: its BW1.0 waits for
     * its own later F1.0, and device 0's BW0.1 for device 1's BW1.1 behind it. */
    int k0[] = {VP_OP_F, VP_OP_F, VP_OP_BW, VP_OP_BW}, m0[] = {0, 1, 1, 0};
    int k1[] = {VP_OP_F, VP_OP_BW, VP_OP_F, VP_OP_BW}, m1[] = {1, 0, 0, 1};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(vp_schedule_push_pass(s, 0, k0[i], 0, m0[i]), VP_OK);
        assert_int_equal(vp_schedule_push_pass(s, 1, k1[i], 1, m1[i]), VP_OK);
    }
    assert_int_equal(vp__replay(s, NULL, NULL, 0, NULL, NULL, &err), VP_EDEADLOCK);
    assert_string_equal(err.message,
                        "replay deadlocks: every remaining device waits: device 0 at position "
                        "2 (BW0.1) waits for B1.1 on device 1, device 1 at position 1 (BW1.0) "
                        "waits for F1.0 on device 1");
    vp_schedule_free(s);
    /* Many blocked devices: the message names the first ones and counts the rest. */
    vp_schedule *big = tu_build("1f1b", 64, 1, 0, vp_costs_default());
    for (int d = 0; d < big->p; d++) /* every device runs its backward before its forward */
        big->dev[d].ops[0].kind = VP_OP_BW, big->dev[d].ops[1].kind = VP_OP_F;
    assert_int_equal(vp__replay(big, NULL, NULL, 0, NULL, NULL, &err), VP_EDEADLOCK);
    assert_non_null(strstr(err.message, "device 0 at position 0 (BW0.0) waits for B1.0"));
    assert_non_null(strstr(err.message, "more devices"));
    vp_schedule_free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dependencies),
        cmocka_unit_test(test_op_passes),
        cmocka_unit_test(test_op_memory),
        cmocka_unit_test(test_bytes_flag),
        cmocka_unit_test(test_replay_equals_reference),
        cmocka_unit_test(test_replay_shuffled),
        cmocka_unit_test(test_deadlock_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
