/* The rules of a pass (schedule/pass.h) and the memory of an op (vp_cost_model_op_memory). */
#include <stdlib.h>

#include "schedule/pass.h"
#include "test_util.h"

static vp__pass pass_of(int stage, int mb, int kind) {
    vp__pass p = {.stage = stage, .mb = mb, .kind = (uint8_t)kind};
    return p;
}

/* Expects `pass` to wait for exactly one pass, (stage, mb, kind). */
static void expect_dep(const vp_schedule *s, vp__pass pass, int stage, int mb, int kind) {
    vp__pass dep[VP__PASS_MAX_DEPS];
    int n = vp__pass_deps(s, pass, dep);
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
    vp_error err = {0};
    vp_schedule *s = vp_schedule_new("t", 2, 4, 2, VP_PLACE_BIDIR, &err);
    assert_non_null(s);
    vp__pass dep[VP__PASS_MAX_DEPS];
    for (int mb = 0; mb < 2; mb++) {
        int first = s->mb_first[mb], last = first + 1;
        assert_int_equal(vp__pass_deps(s, pass_of(first, mb, VP__PASS_F), dep), 0);
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
    vp_error err = {0};
    vp_schedule *s = vp_schedule_new("t", 2, 4, 1, VP_PLACE_V, &err);
    assert_non_null(s);
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = {.kind = VP_MEM_ZB, .zb_ratio = 0.25, .unit_bytes = 8.0};
    vp_cost_model *cm = vp_cost_model_new(s, &costs, &mem, &err);
    assert_non_null(cm);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dependencies),
        cmocka_unit_test(test_op_passes),
        cmocka_unit_test(test_op_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
