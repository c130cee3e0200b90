/* The schedule value, the validator and vpipe JSON. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "schedule/replay.h"

#include "test_util.h"

static vp_schedule *one_f1b(int p, int m) {
    return tu_build("1f1b", p, m, 0, vp_costs_default());
}

/* Expects validation to fail with status and a message containing each needle. */
static void expect_invalid(const vp_schedule *s, vp_status status, const char *n1, const char *n2) {
    vp_error err = {0};
    vp_status rc = vp_schedule_validate(s, &err);
    if (rc != status || !strstr(err.message, n1) || (n2 && !strstr(err.message, n2)))
        fail_msg("want status %d with '%s'/'%s', got %d: %s", status, n1, n2 ? n2 : "", rc,
                 err.message);
}

static void test_missing_op(void **state) {
    (void)state;
    vp_schedule *s = one_f1b(4, 8);
    s->dev[2].n--; /* drops BW2.7, the last op of device 2 */
    expect_invalid(s, VP_EVALIDATION, "missing backward", "stage 2, microbatch 7");
    vp_schedule_free(s);
}

static void test_duplicated_op(void **state) {
    (void)state;
    vp_schedule *s = one_f1b(4, 8);
    vp_op dup = s->dev[1].ops[0];
    assert_int_equal(vp_schedule_push(s, 1, dup), VP_OK);
    expect_invalid(s, VP_EVALIDATION, "duplicate forward", "device 1, position");
    vp_schedule_free(s);
}

static void test_wrong_device(void **state) {
    (void)state;
    vp_schedule *s = one_f1b(4, 8);
    s->dev[3].ops[0].stage = 2;
    expect_invalid(s, VP_EVALIDATION, "belongs on device 2", "device 3, position 0 (F2.0)");
    vp_schedule_free(s);
}

static void test_w_before_b(void **state) {
    (void)state;
    vp_schedule *s = tu_schedule("t", 1, 1, 1, VP_PLACE_SINGLE);
    assert_int_equal(vp_schedule_push_pass(s, 0, VP_OP_F, 0, 0), VP_OK);
    assert_int_equal(vp_schedule_push_pass(s, 0, VP_OP_W, 0, 0), VP_OK);
    assert_int_equal(vp_schedule_push_pass(s, 0, VP_OP_B, 0, 0), VP_OK);
    expect_invalid(s, VP_EVALIDATION, "W comes before its B", "position 1 (W0.0)");
    vp_schedule_free(s);
}

static void test_backward_before_forward(void **state) {
    (void)state;
    vp_schedule *s = tu_schedule("t", 1, 1, 1, VP_PLACE_SINGLE);
    assert_int_equal(vp_schedule_push_pass(s, 0, VP_OP_BW, 0, 0), VP_OK);
    assert_int_equal(vp_schedule_push_pass(s, 0, VP_OP_F, 0, 0), VP_OK);
    expect_invalid(s, VP_EVALIDATION, "backward comes before its forward", "BW0.0");
    vp_schedule_free(s);
}

static void test_cross_device_cycle(void **state) {
    (void)state;
    /* Device 0 runs F0.1 then F0.0; device 1 waits for F1.0 first... no: device 1 runs
     * BW1.0 before F1.1's input arrives only if... Build a true cycle: device 1 insists on
     * F1.1 first, device 0 insists on BW0.1 (which needs BW1.1) before F0.1. */
    vp_schedule *s = tu_schedule("t", 2, 2, 2, VP_PLACE_SINGLE);
    vp_op_kind k0[] = {VP_OP_F, VP_OP_BW, VP_OP_F, VP_OP_BW};
    int m0[] = {0, 0, 1, 1};
    for (int i = 0; i < 4; i++)
        assert_int_equal(vp_schedule_push_pass(s, 0, k0[i], 0, m0[i]), VP_OK);
    /* Device 1: F1.1 before F1.0 and BW1.0, so device 0 must send F0.1 first, but device 0
     * waits for BW1.0 before F0.1. */
    vp_op_kind k1[] = {VP_OP_F, VP_OP_F, VP_OP_BW, VP_OP_BW};
    int m1[] = {1, 0, 0, 1};
    for (int i = 0; i < 4; i++)
        assert_int_equal(vp_schedule_push_pass(s, 1, k1[i], 1, m1[i]), VP_OK);
    expect_invalid(s, VP_EDEADLOCK, "device 0 at position 1 (BW0.0)",
                   "device 1 at position 0 (F1.1)");
    vp_schedule_free(s);
}

static void test_out_of_range_and_routes(void **state) {
    (void)state;
    vp_schedule *s = one_f1b(2, 2);
    s->dev[0].ops[0].mb = 5;
    expect_invalid(s, VP_EVALIDATION, "out of range", NULL);
    vp_schedule_free(s);
    s = one_f1b(2, 2);
    s->stage_device[1] = 7;
    expect_invalid(s, VP_EVALIDATION, "outside 0..1", NULL);
    vp_schedule_free(s);
    /* Bidirectional routes: a microbatch of copy 1 has no pass on copy 0's stages. */
    s = tu_schedule("t", 2, 4, 2, VP_PLACE_BIDIR);
    assert_int_equal(s->mb_first[1], 2);
    assert_int_equal(s->stage_device[2], 1);
    assert_int_equal(s->stage_device[3], 0);
    assert_int_equal(vp_schedule_push_pass(s, 0, VP_OP_F, 0, 1), VP_OK);
    expect_invalid(s, VP_EVALIDATION, "not on microbatch 1's route", NULL);
    vp_schedule_free(s);
}

static void test_placements(void **state) {
    (void)state;
    vp_error err = {0};
    vp_schedule *s = tu_schedule("t", 4, 8, 1, VP_PLACE_V);
    int want_v[8] = {0, 1, 2, 3, 3, 2, 1, 0}, want_chunk[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    for (int i = 0; i < 8; i++) {
        assert_int_equal(s->stage_device[i], want_v[i]);
        assert_int_equal(s->stage_chunk[i], want_chunk[i]);
    }
    vp_schedule_free(s);
    s = tu_schedule("t", 4, 12, 1, VP_PLACE_LOOP);
    assert_int_equal(s->stage_device[9], 1);
    assert_int_equal(s->stage_chunk[9], 2);
    assert_int_equal(vp_schedule_chunks_per_device(s), 3);
    vp_schedule_free(s);
    s = (vp_schedule *)&err; /* a failing constructor leaves NULL */
    vp_shape v7 = {.p = 4, .S = 7, .m = 1, .placement = VP_PLACE_V};
    assert_int_equal(vp_schedule_new("t", v7, &s, &err), VP_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err.message, "S = 2p"));
    vp_shape loop6 = {.p = 4, .S = 6, .m = 1, .placement = VP_PLACE_LOOP};
    assert_int_equal(vp_schedule_new("t", loop6, &s, NULL), VP_EINVAL);
    vp_shape p0 = {.p = 0, .S = 1, .m = 1, .placement = VP_PLACE_SINGLE};
    assert_int_equal(vp_schedule_new("t", p0, &s, NULL), VP_EINVAL);
    assert_null(s);
}

/* A placement is a promise about the stage map: an interleaved (loop) schedule declared
 * V, or a single one declared loop with short routes, fails validation naming the stage,
 * so no exporter gives advice for a placement the schedule does not have. */
static void test_declared_placement(void **state) {
    (void)state;
    vp_schedule *s = tu_build("interleaved", 4, 8, 2, vp_costs_default());
    assert_int_equal(vp_schedule_validate(s, NULL), VP_OK);
    s->placement = VP_PLACE_V; /* S = 2p fits V, but stage 4 is on device 0, not 3 */
    expect_invalid(s, VP_EVALIDATION, "placement \"v\" puts stage 4 on device 3",
                   "the stage map on device 0");
    s->placement = VP_PLACE_BIDIR;
    expect_invalid(s, VP_EVALIDATION, "placement \"bidir\" has routes of 4 stages", NULL);
    s->placement = VP_PLACE_SINGLE;
    expect_invalid(s, VP_EVALIDATION, "placement \"single\" needs S = p", NULL);
    s->placement = VP_PLACE_CUSTOM; /* a map of its own is fine */
    assert_int_equal(vp_schedule_validate(s, NULL), VP_OK);
    vp_schedule_free(s);
}

/* Every constructor reports the real status with err == NULL (no guessing VP_ENOMEM) and
 * leaves *out NULL. */
static void test_constructor_errors(void **state) {
    (void)state;
    vp_schedule *s = tu_schedule("t", 2, 2, 1, VP_PLACE_SINGLE);
    vp_costs bad = tu_costs(1, -1, 1, 0);
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = (vp_cost_model *)s;
    assert_int_equal(vp_cost_model_new(s, &bad, &mem, &cm, NULL), VP_EINVAL);
    assert_null(cm);
    vp_memcfg zb = {.kind = VP_MEM_ZB, .zb_ratio = 1.5};
    vp_costs ok = vp_costs_default();
    assert_int_equal(vp_cost_model_new(s, &ok, &zb, &cm, NULL), VP_EINVAL);
    assert_null(cm);
    s->stage_device[1] = 5; /* outside 0..p-1: nothing changes */
    s->stage_chunk[1] = 7;
    assert_int_equal(vp_schedule_set_chunks(s, NULL), VP_EINVAL);
    assert_int_equal(s->stage_chunk[1], 7);
    s->stage_device[1] = 0;
    assert_int_equal(vp_schedule_set_chunks(s, NULL), VP_OK);
    assert_int_equal(s->stage_chunk[1], 1);
    vp_block *shape = NULL, *b = (vp_block *)s;
    assert_int_equal(vp_block_new(2, 3, VP_PLACE_V, &b, NULL), VP_EINVAL);
    assert_null(b);
    assert_int_equal(vp_block_new(3, 3, VP_PLACE_SINGLE, &shape, NULL), VP_OK);
    assert_int_equal(vp_block_cost_model(shape, &bad, &mem, &cm, NULL), VP_EINVAL);
    assert_null(cm);
    cm = tu_cm(s, ok, NULL); /* 2 stages: does not fit a 3-device 1F1B block */
    b = shape;
    assert_int_equal(vp_block_1f1b(3, cm, 0, &b, NULL), VP_EINVAL);
    assert_null(b);
    vp_cost_model_free(cm);
    vp_block_free(shape);
    vp_schedule_free(s);
}

/* Runs action(s) in a child process; expects it to abort with a message on stderr that
 * contains `needle` (VP_ASSERT: file, line, condition). */
static void expect_abort(void (*action)(vp_schedule *), vp_schedule *s, const char *needle) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        action(s);
        _exit(0); /* not reached when the check fires */
    }
    close(fds[1]);
    char text[512] = {0};
    size_t len = 0;
    ssize_t n;
    while (len < sizeof text - 1 && (n = read(fds[0], text + len, sizeof text - 1 - len)) > 0)
        len += (size_t)n;
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT || !strstr(text, needle))
        fail_msg("want an abort naming '%s', got status %d: %s", needle, status, text);
}

static void push_to_device_9(vp_schedule *s) {
    vp_schedule_push_pass(s, 9, VP_OP_F, 0, 0);
}

static void replay_off_route(vp_schedule *s) {
    s->dev[1].ops[0].mb = 7; /* m = 2: microbatch 7 has no route */
    vp__replay(s, NULL, NULL, 0, NULL, NULL, NULL);
}

/* Programmer errors abort with file, line and condition: a device out of range, and a
 * replay of a schedule that was not validated. */
static void test_programmer_errors(void **state) {
    (void)state;
    vp_schedule *s = one_f1b(2, 2);
    expect_abort(push_to_device_9, s, "schedule.c");
    expect_abort(push_to_device_9, s, "d >= 0 && d < s->p");
    expect_abort(replay_off_route, s, "ops_on_routes(s)");
    assert_int_equal(s->dev[1].ops[0].mb, 0); /* the child's change stayed in the child */
    vp_schedule_free(s);
}

/* F&B ops: validate, simulate with their own cost, round-trip through JSON. */
static void test_overlapped_pair(void **state) {
    (void)state;
    /* One device, two stages (a V at p=1), two microbatches: F0.0 F1.0 B1.0 ... with
     * the forward of microbatch 1 overlapped with the backward of microbatch 0. */
    vp_schedule *s = tu_schedule("t", 1, 2, 2, VP_PLACE_V);
    vp_op ops[] = {{VP_OP_F, 0, 0, 0, 0, 0},  {VP_OP_F, 0, 1, 0, 0, 0},
                   {VP_OP_BW, 0, 1, 0, 0, 0}, {VP_OP_FB, VP_OP_BW, 0, 1, 0, 0},
                   {VP_OP_F, 0, 1, 1, 0, 0},  {VP_OP_BW, 0, 1, 1, 0, 0},
                   {VP_OP_BW, 0, 0, 1, 0, 0}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        assert_int_equal(vp_schedule_push(s, 0, ops[i]), VP_OK);
    vp_error err = {0};
    assert_int_equal(vp_schedule_validate(s, &err), VP_OK);
    vp_costs c = tu_costs(2, 2, 2, 0); /* per slice: 1 per chunk pass */
    vp_sim *sim = tu_sim(s, c, NULL);
    TU_NEAR(sim->makespan, 1 + 1 + 2 + 3 + 1 + 2 + 2); /* F&B = F + BW = 3 */
    vp_sim_free(sim);
    c.fb = 4; /* per slice: an overlapped pair costs 2 per chunk */
    sim = tu_sim(s, c, NULL);
    TU_NEAR(sim->makespan, 1 + 1 + 2 + 2 + 1 + 2 + 2);
    vp_sim_free(sim);
    char *text = NULL;
    assert_int_equal(vp_json_write(s, &text, &err), VP_OK);
    vp_schedule *back = NULL;
    assert_int_equal(vp_json_read(text, strlen(text), &back, &err), VP_OK);
    assert_true(vp_schedule_equal(s, back));
    free(text);
    vp_schedule_free(back);
    vp_schedule_free(s);
}

static void test_json_round_trip(void **state) {
    (void)state;
    const char *families[] = {"gpipe", "1f1b", "interleaved"};
    for (int f = 0; f < 3; f++)
        for (int p = 1; p <= 6; p++) {
            vp_schedule *s = tu_build(families[f], p, 2 * p, 3, vp_costs_default());
            char *text = NULL, *again = NULL;
            vp_error err = {0};
            assert_int_equal(vp_json_write(s, &text, &err), VP_OK);
            vp_schedule *back = NULL;
            assert_int_equal(vp_json_read(text, strlen(text), &back, &err), VP_OK);
            assert_true(vp_schedule_equal(s, back));
            assert_string_equal(s->family, back->family);
            assert_int_equal(vp_json_write(back, &again, &err), VP_OK);
            assert_string_equal(text, again); /* byte-exact */
            free(text);
            free(again);
            vp_schedule_free(back);
            vp_schedule_free(s);
        }
}

static void test_json_errors(void **state) {
    (void)state;
    struct {
        const char *text, *needle;
        int line;
    } cases[] = {
        {"", "", 1},
        {"{\"format\": \"vpipe-schedule\",\n \"version\": 1,", "", 2},
        {"[1,2]", "JSON object", 0},
        {"{\"format\": \"other\"}", "format", 0},
        {"{\"format\": \"vpipe-schedule\", \"version\": 2}", "version 2", 0},
        {"{\"format\": \"vpipe-schedule\", \"version\": 1, \"p\": 0}", "\"p\"", 0},
        {"{\"format\":\"vpipe-schedule\",\"version\":1,\"p\":1,\"stages\":1,\"microbatches\":1,"
         "\"route_len\":1,\"placement\":\"zigzag\"}",
         "placement", 0},
        {"{\"format\":\"vpipe-schedule\",\"version\":1,\"p\":1,\"stages\":1,\"microbatches\":1,"
         "\"route_len\":1,\"placement\":\"single\",\"stage_device\":[0],\"devices\":[[[\"X\",0,"
         "0]]]}",
         "unknown op kind", 0},
        {"{\"format\":\"vpipe-schedule\",\"version\":1,\"p\":1,\"stages\":1,\"microbatches\":1,"
         "\"route_len\":1,\"placement\":\"single\",\"stage_device\":[0],\"devices\":[[[\"F\",0,"
         "9]]]}",
         "devices[0][0]: microbatch", 0},
        {"{\"format\":\"vpipe-schedule\",\"version\":1,\"p\":2,\"stages\":2,\"microbatches\":1,"
         "\"route_len\":2,\"placement\":\"single\",\"stage_device\":[0,5],\"devices\":[]}",
         "stage_device[1]", 0},
        {"{\"format\":\"vpipe-schedule\",\"format\":\"vpipe-schedule\"}", "duplicate", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vp_schedule *s = NULL;
        vp_error err = {0};
        vp_status rc = vp_json_read(cases[i].text, strlen(cases[i].text), &s, &err);
        if (rc != VP_EPARSE || !strstr(err.message, cases[i].needle) ||
            (cases[i].line && err.line != cases[i].line))
            fail_msg("case %zu: status %d line %d: %s", i, rc, err.line, err.message);
        assert_null(s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_op),
        cmocka_unit_test(test_duplicated_op),
        cmocka_unit_test(test_wrong_device),
        cmocka_unit_test(test_w_before_b),
        cmocka_unit_test(test_backward_before_forward),
        cmocka_unit_test(test_cross_device_cycle),
        cmocka_unit_test(test_out_of_range_and_routes),
        cmocka_unit_test(test_placements),
        cmocka_unit_test(test_declared_placement),
        cmocka_unit_test(test_constructor_errors),
        cmocka_unit_test(test_programmer_errors),
        cmocka_unit_test(test_overlapped_pair),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_json_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
