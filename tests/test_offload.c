/* Offload: O and L in the schedule value, the validator's rules, vpipe JSON, the copy
 * engine in the simulator (device and host memory, occupancy, stalls) and the placement
 * policies (uniform and selective). */
#include <stdlib.h>

#include "test_util.h"
#include "vpipe/io.h"
#include "vpipe/model.h"
#include "vpipe/sim.h"

/* Expects validation to fail with VP_EVALIDATION and a message containing needle. */
static void expect_invalid(const vp_schedule *s, const char *needle) {
    vp_error err = {0};
    vp_status rc = vp_schedule_validate(s, &err);
    if (rc != VP_EVALIDATION || !strstr(err.message, needle))
        fail_msg("want '%s', got %d: %s", needle, rc, err.message);
}

static void expect_valid(const vp_schedule *s) {
    vp_error err = {0};
    if (vp_schedule_validate(s, &err) != VP_OK)
        fail_msg("%s: %s", s->family, err.message);
}

/* One stage, two microbatches: F0 F1 [ops] B0 W0 B1 W1 with ops pushed by the caller
 * between the forwards and the backwards, the stage offloading half. */
static vp_schedule *two_mb(const int (*ops)[3], int n) {
    vp_schedule *s = tu_schedule("t", 1, 1, 2, VP_PLACE_SINGLE);
    s->offload[0] = 0.5;
    for (int i = 0; i < n; i++)
        assert_int_equal(vp_schedule_push_pass(s, 0, (vp_op_kind)ops[i][0], 0, ops[i][2]), VP_OK);
    return s;
}

static void test_validator(void **state) {
    (void)state;
    enum { F = VP_OP_F, B = VP_OP_B, W = VP_OP_W, O = VP_OP_O, L = VP_OP_L };
    static const int good[][3] = {{F, 0, 0}, {F, 0, 1}, {O, 0, 0}, {L, 0, 0},
                                  {B, 0, 0}, {W, 0, 0}, {B, 0, 1}, {W, 0, 1}};
    vp_schedule *s = two_mb(good, 8);
    expect_valid(s);
    s->offload[0] = 0; /* an O of a stage that offloads nothing */
    expect_invalid(s, "offloads nothing");
    vp_schedule_free(s);
    static const int late_reload[][3] = {{F, 0, 0}, {F, 0, 1}, {O, 0, 0}, {B, 0, 0},
                                         {L, 0, 0}, {W, 0, 0}, {B, 0, 1}, {W, 0, 1}};
    s = two_mb(late_reload, 8);
    expect_invalid(s, "backward comes before its reload");
    vp_schedule_free(s);
    static const int after_b[][3] = {{F, 0, 0}, {F, 0, 1}, {B, 0, 0}, {L, 0, 0},
                                     {W, 0, 0}, {B, 0, 1}, {W, 0, 1}};
    s = two_mb(after_b, 7);
    expect_invalid(s, "reload comes before its offload");
    vp_schedule_free(s);
    static const int freed[][3] = {{F, 0, 0}, {F, 0, 1}, {B, 0, 0}, {W, 0, 0},
                                   {O, 0, 0}, {L, 0, 0}, {B, 0, 1}, {W, 0, 1}};
    s = two_mb(freed, 8);
    expect_invalid(s, "offload of an activation its backward already freed");
    vp_schedule_free(s);
    static const int before_f[][3] = {{O, 0, 0}, {F, 0, 0}, {F, 0, 1}, {L, 0, 0},
                                      {B, 0, 0}, {W, 0, 0}, {B, 0, 1}, {W, 0, 1}};
    s = two_mb(before_f, 8);
    expect_invalid(s, "offload comes before its forward");
    vp_schedule_free(s);
    static const int no_reload[][3] = {{F, 0, 0}, {F, 0, 1}, {O, 0, 1}, {B, 0, 0},
                                       {W, 0, 0}, {L, 0, 1}, {L, 0, 1}, {B, 0, 1}};
    s = two_mb(no_reload, 8);
    expect_invalid(s, "duplicate reload");
    s->dev[0].n = 6; /* F F O B W L: W of 1 missing first, then its B */
    expect_invalid(s, "missing backward");
    vp_schedule_free(s);
    static const int dup[][3] = {{F, 0, 0}, {O, 0, 0}, {O, 0, 0}};
    s = two_mb(dup, 3);
    expect_invalid(s, "duplicate offload");
    vp_schedule_free(s);
    /* a host limit: both microbatches offloaded hold 2 x 0.5 units at once */
    static const int both[][3] = {{F, 0, 0}, {F, 0, 1}, {O, 0, 0}, {O, 0, 1}, {L, 0, 0},
                                  {B, 0, 0}, {W, 0, 0}, {L, 0, 1}, {B, 0, 1}, {W, 0, 1}};
    s = two_mb(both, 10);
    double peak[1];
    assert_int_equal(vp_schedule_host_peak(s, peak, NULL), VP_OK);
    TU_NEAR(peak[0], 1.0);
    s->host_limit = 1.0;
    expect_valid(s);
    s->host_limit = 0.75;
    expect_invalid(s, "over the limit");
    s->host_limit = 0;
    s->offload[0] = 1.5;
    expect_invalid(s, "outside [0, 1]");
    vp_schedule_free(s);
}

/* The copy engine: an F's copy to host starts when it ends, the O waits for it, the L's
 * copy starts at the L and the backward waits for it; both copies run one at a time. */
static void test_copy_engine(void **state) {
    (void)state;
    enum { F = VP_OP_F, B = VP_OP_B, W = VP_OP_W, O = VP_OP_O, L = VP_OP_L };
    static const int ops[][3] = {{F, 0, 0}, {F, 0, 1}, {O, 0, 0}, {L, 0, 0},
                                 {B, 0, 0}, {W, 0, 0}, {B, 0, 1}, {W, 0, 1}};
    vp_schedule *s = two_mb(ops, 8);
    vp_costs c = tu_costs(1, 1, 1, 0);
    c.o = 1; /* half a unit takes 0.5 each way */
    vp_cost_model *cm = tu_cm(s, c, NULL);
    TU_NEAR(cm->off[0], 0.5);
    TU_NEAR(cm->o[0], 0.5);
    TU_NEAR(cm->l[0], 0.5);
    vp_sim *sim = NULL;
    assert_int_equal(vp_simulate(s, cm, &sim, NULL), VP_OK);
    /* F0 [0,1], copy to host [1,1.5]; F1 [1,2]; O at 2 (copy done); L at 2: copy [2,2.5];
     * B0 waits until 2.5: a stall of 0.5 */
    TU_NEAR(sim->start[0][2], 2.0);
    TU_NEAR(sim->copy_start[0][2], 1.0);
    TU_NEAR(sim->copy_end[0][2], 1.5);
    TU_NEAR(sim->copy_start[0][3], 2.0);
    TU_NEAR(sim->copy_end[0][3], 2.5);
    TU_NEAR(sim->start[0][4], 2.5);
    TU_NEAR(sim->stall[0], 0.5);
    TU_NEAR(sim->copy_busy[0], 1.0);
    TU_NEAR(sim->host_peak[0], 0.5);
    /* device memory: 1 after F0, 2 after F1, 1.5 after O, 2 after L */
    TU_NEAR(sim->mem_after[0][2], 1.5);
    TU_NEAR(sim->mem_after[0][3], 2.0);
    TU_NEAR(sim->peak[0], 2.0);
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    vp_schedule_free(s);
}

static vp_schedule *offloaded(const char *family, int p, int m, vp_costs c,
                              vp_offload_policy policy, double share) {
    vp_schedule *base = tu_build(family, p, m, 0, c);
    vp_offload spec = {.policy = policy, .share = share};
    vp_memcfg mem = vp_memcfg_default();
    vp_schedule *s = NULL;
    vp_error err = {0};
    if (vp_schedule_offload(base, &c, &mem, &spec, &s, &err) != VP_OK)
        fail_msg("offload %s: %s", family, err.message);
    vp_schedule_free(base);
    expect_valid(s);
    return s;
}

/* Every family at p = 4 under both policies and three shares, copies cheap enough to
 * hide (half a forward per unit each way): valid, no op delayed (the same makespan), no
 * device above its peak without offload; policy none gives the schedule back. */
static void test_families(void **state) {
    (void)state;
    vp_costs c = tu_costs(1, 1, 1, 0);
    c.o = 0.5;
    int offloading = 0;
    for (int f = 0; f < vp_family_count(); f++) {
        const char *name = vp_family_at(f)->name;
        vp_schedule *base = tu_build(name, 4, 16, 0, c);
        vp_sim *b = tu_sim(base, c, NULL);
        for (int pol = VP_OFFLOAD_NONE; pol <= VP_OFFLOAD_SELECTIVE; pol++)
            for (int k = 1; k <= 4; k *= 2) {
                vp_schedule *s = offloaded(name, 4, 16, c, (vp_offload_policy)pol, k * 0.25);
                if (pol == VP_OFFLOAD_NONE)
                    assert_true(vp_schedule_equal(s, base));
                vp_sim *sim = tu_sim(s, c, NULL);
                TU_NEAR(sim->makespan, b->makespan);
                for (int d = 0; d < s->p; d++) {
                    assert_true(sim->peak[d] <= b->peak[d] + 1e-12);
                    if (sim->stall)
                        TU_NEAR(sim->stall[d], 0);
                }
                offloading += sim->host_peak && sim->peak_max < b->peak_max - 1e-12;
                vp_sim_free(sim);
                vp_schedule_free(s);
            }
        vp_sim_free(b);
        vp_schedule_free(base);
    }
    assert_true(offloading > 2 * vp_family_count()); /* most of them save memory */
}

/* Peak of s under c (its largest device's). */
static double peak_of(const vp_schedule *s, vp_costs c) {
    vp_sim *sim = tu_sim(s, c, NULL);
    double peak = sim->peak_max;
    vp_sim_free(sim);
    return peak;
}

/* Interleaved 1F1B at p = 4, m = 16: offloading everything that pays leaves 1.5 units of
 * 5.5; half of it sent the selective way (the longest-lived whole) leaves 3, the uniform
 * way (half of every pair) 3.5: selective saves more than its share. */
static void test_selective(void **state) {
    (void)state;
    vp_costs c = tu_costs(1, 1, 1, 0);
    c.o = 0.5;
    vp_schedule *base = tu_build("interleaved", 4, 16, 0, c);
    TU_NEAR(peak_of(base, c), 5.5);
    vp_schedule *all = offloaded("interleaved", 4, 16, c, VP_OFFLOAD_UNIFORM, 1);
    vp_schedule *sel = offloaded("interleaved", 4, 16, c, VP_OFFLOAD_SELECTIVE, 0.5);
    vp_schedule *uni = offloaded("interleaved", 4, 16, c, VP_OFFLOAD_UNIFORM, 0.5);
    TU_NEAR(peak_of(all, c), 1.5);
    TU_NEAR(peak_of(sel, c), 3);
    TU_NEAR(peak_of(uni, c), 3.5);
    vp_schedule_free(all);
    vp_schedule_free(sel);
    vp_schedule_free(uni);
    vp_schedule_free(base);
}

/* A host limit keeps every device's host memory within it (pairs that would pass it are
 * not offloaded); copies slower than the gaps offload nothing rather than stall. */
static void test_limits(void **state) {
    (void)state;
    vp_costs c = tu_costs(1, 1, 1, 0);
    c.o = 0.5;
    vp_schedule *base = tu_build("1f1b", 4, 16, 0, c);
    vp_offload spec = {.policy = VP_OFFLOAD_UNIFORM, .share = 1, .host_limit = 2};
    vp_memcfg mem = vp_memcfg_default();
    vp_schedule *s = NULL;
    assert_int_equal(vp_schedule_offload(base, &c, &mem, &spec, &s, NULL), VP_OK);
    expect_valid(s);
    vp_sim *sim = tu_sim(s, c, NULL);
    for (int d = 0; d < s->p; d++)
        assert_true(sim->host_peak[d] <= 2 + 1e-12);
    TU_NEAR(sim->host_peak[0], 2);
    vp_sim_free(sim);
    vp_schedule_free(s);
    spec.host_limit = 0; /* without the limit device 0 holds 4 units on the host */
    assert_int_equal(vp_schedule_offload(base, &c, &mem, &spec, &s, NULL), VP_OK);
    sim = tu_sim(s, c, NULL);
    TU_NEAR(sim->host_peak[0], 4);
    vp_sim_free(sim);
    vp_schedule_free(s);
    c.o = 100; /* a copy takes 100 forwards: nothing pays */
    assert_int_equal(vp_schedule_offload(base, &c, &mem, &spec, &s, NULL), VP_OK);
    assert_int_equal(vp_schedule_op_count(s), vp_schedule_op_count(base));
    vp_schedule_free(s);
    vp_schedule_free(base);
}

/* vpipe JSON carries O, L, the shares and the host limit; PyTorch's CSV refuses them. */
static void test_formats(void **state) {
    (void)state;
    vp_costs c = vp_costs_default();
    vp_schedule *s = offloaded("v-half", 4, 8, c, VP_OFFLOAD_SELECTIVE, 0.5);
    s->host_limit = 7.25;
    char *text = NULL;
    assert_int_equal(vp_json_write(s, &text, NULL), VP_OK);
    assert_non_null(strstr(text, "[\"O\",0,"));
    assert_non_null(strstr(text, "\"host_limit\": 7.25"));
    vp_schedule *back = NULL;
    assert_int_equal(vp_json_read(text, strlen(text), &back, NULL), VP_OK);
    assert_true(vp_schedule_equal(s, back));
    expect_valid(back);
    free(text);
    vp_schedule_free(back);
    vp_error err = {0};
    assert_int_equal(vp_torch_csv_write(s, VP_TORCH_CSV_COMPUTE_ONLY, &text, &err),
                     VP_EUNSUPPORTED);
    assert_non_null(strstr(err.message, "no activation offload"));
    vp_schedule_free(s);
    static const char *const bad[] = {
        "\"offload\": [0.5], ",    /* two stages */
        "\"offload\": [0.5, 2], ", /* above 1 */
        "\"offload\": \"half\", ", /* not an array */
        "\"host_limit\": -1, ",    /* negative */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char doc[512];
        snprintf(doc, sizeof doc,
                 "{\"format\": \"vpipe-schedule\", \"version\": 1, \"p\": 1, \"stages\": 2, "
                 "\"microbatches\": 1, \"route_len\": 2, \"placement\": \"loop\", "
                 "\"stage_device\": [0, 0], %s\"devices\": [[]]}",
                 bad[i]);
        assert_int_equal(vp_json_read(doc, strlen(doc), &back, &err), VP_EPARSE);
        assert_true(strstr(err.message, "offload") || strstr(err.message, "host_limit"));
    }
    static const char *const ops[] = {"[\"O\", 0, 0]", "[\"L\", 0, 0]"};
    for (int i = 0; i < 2; i++) { /* read, refused by the validator: no F before */
        char doc[512];
        snprintf(doc, sizeof doc,
                 "{\"format\": \"vpipe-schedule\", \"version\": 1, \"p\": 1, \"stages\": 1, "
                 "\"microbatches\": 1, \"route_len\": 1, \"placement\": \"single\", "
                 "\"stage_device\": [0], \"offload\": [1], \"devices\": [[%s]]}",
                 ops[i]);
        assert_int_equal(vp_json_read(doc, strlen(doc), &back, NULL), VP_OK);
        assert_int_equal(vp_schedule_validate(back, NULL), VP_EVALIDATION);
        vp_schedule_free(back);
    }
}

/* The option: "none", one share, one per stage; the policy names. */
static void test_parse(void **state) {
    (void)state;
    vp_offload o;
    double *shares = NULL;
    assert_int_equal(vp_offload_parse("0.25", &o, &shares, NULL), VP_OK);
    assert_int_equal(o.policy, VP_OFFLOAD_UNIFORM);
    TU_NEAR(o.share, 0.25);
    assert_null(shares);
    assert_int_equal(vp_offload_parse("0,0.5,1", &o, &shares, NULL), VP_OK);
    assert_int_equal(o.n, 3);
    TU_NEAR(o.shares[2], 1);
    free(shares);
    assert_int_equal(vp_offload_parse("none", &o, &shares, NULL), VP_OK);
    assert_int_equal(o.policy, VP_OFFLOAD_NONE);
    assert_int_equal(vp_offload_parse("0,0", &o, &shares, NULL), VP_OK);
    assert_int_equal(o.policy, VP_OFFLOAD_NONE);
    free(shares);
    vp_error err = {0};
    static const char *const bad[] = {"", "1.5", "-0.5", "0.5,", ",0.5", "0.5x", "auto"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(vp_offload_parse(bad[i], &o, &shares, &err), VP_EPARSE);
        assert_null(shares);
    }
    vp_offload_policy pol;
    assert_int_equal(vp_offload_policy_parse("selective", &pol, NULL), VP_OK);
    assert_int_equal(pol, VP_OFFLOAD_SELECTIVE);
    assert_string_equal(vp_offload_policy_name(pol), "selective");
    assert_int_equal(vp_offload_policy_parse("all", &pol, NULL), VP_EINVAL);
    /* a share per stage must name every stage */
    vp_schedule *s = tu_build("1f1b", 4, 8, 0, vp_costs_default()), *out = NULL;
    double two[2] = {0.5, 0.5};
    vp_offload spec = {.policy = VP_OFFLOAD_UNIFORM, .shares = two, .n = 2};
    assert_int_equal(vp_schedule_offload_shares(s, &spec, &out, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "4 stages"));
    vp_schedule_free(s);
}

/* The stage's four steps: whole tensors, bit for bit, the device's allocator down by the
 * predicted bytes between release and reserve, the host pool up as much, and passes
 * refused while the slot is away. */
static void test_stage(void **state) {
    (void)state;
    vp_model_config cfg = {
        .n_layer = 2, .width = 16, .n_head = 2, .seq_len = 8, .microbatch = 2, .vocab = 256};
    vp_stage_range range = {.l0 = 0, .l1 = 2};
    vp_mem *dev = vp_mem_new(), *host = vp_mem_new();
    vp_stage *st = NULL;
    vp_stage_options opt = {.n_slots = 1, .seed = 7};
    assert_int_equal(vp_stage_new(&cfg, range, &opt, dev, &st, NULL), VP_OK);
    size_t n = (size_t)cfg.microbatch * cfg.seq_len * cfg.width;
    float *in = malloc(n * sizeof *in), *out = NULL, *ref = NULL;
    for (size_t i = 0; i < n; i++)
        in[i] = (float)i / (float)n;
    float *dout = malloc(n * sizeof *dout);
    memcpy(dout, in, n * sizeof *in);
    vp_stage_io io = {.in = in, .out = &out};
    assert_int_equal(vp_stage_forward(st, 0, &io, NULL), VP_OK);
    size_t before = vp_mem_current(dev), bytes = 0;
    assert_int_equal(vp_stage_offload_bytes(&cfg, range, 0, 0.5, &bytes, NULL), VP_OK);
    assert_true(bytes > 0);
    assert_int_equal(vp_stage_offload_copy(st, 0, 0.5, host, NULL), VP_OK);
    assert_int_equal(vp_mem_current(host), bytes);
    assert_int_equal(vp_stage_offload_release(st, 0, NULL), VP_OK);
    assert_int_equal(vp_mem_current(dev), before - bytes);
    vp_error err = {0};
    assert_int_equal(vp_stage_backward_input(st, 0, dout, 1.0f, &ref, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "offloaded"));
    assert_int_equal(vp_stage_offload_release(st, 0, NULL), VP_EINVAL);
    assert_int_equal(vp_stage_reload_reserve(st, 0, NULL), VP_OK);
    assert_int_equal(vp_mem_current(dev), before);
    assert_int_equal(vp_stage_reload_copy(st, 0, NULL), VP_OK);
    assert_int_equal(vp_mem_current(host), 0);
    float *din = NULL;
    assert_int_equal(vp_stage_backward_input(st, 0, dout, 1.0f, &din, NULL), VP_OK);
    assert_int_equal(vp_stage_backward_weight(st, 0, NULL), VP_OK);
    size_t count = 0;
    float *g = vp_stage_grads(st, &count), *g1 = malloc(count * sizeof *g1);
    memcpy(g1, g, count * sizeof *g1);
    /* the same pass without offload gives the same gradients, bit for bit */
    vp_stage_zero_grad(st);
    float *in2 = malloc(n * sizeof *in2), *dout2 = malloc(n * sizeof *dout2), *din2 = NULL;
    for (size_t i = 0; i < n; i++)
        in2[i] = (float)i / (float)n;
    memcpy(dout2, in2, n * sizeof *in2);
    vp_stage_buffer_free(out);
    io = (vp_stage_io){.in = in2, .out = &out};
    assert_int_equal(vp_stage_forward(st, 0, &io, NULL), VP_OK);
    assert_int_equal(vp_stage_backward_input(st, 0, dout2, 1.0f, &din2, NULL), VP_OK);
    assert_int_equal(vp_stage_backward_weight(st, 0, NULL), VP_OK);
    assert_memory_equal(g1, vp_stage_grads(st, &count), count * sizeof *g1);
    assert_memory_equal(din, din2, n * sizeof *din);
    free(g1);
    vp_stage_buffer_free(din);
    vp_stage_buffer_free(din2);
    vp_stage_buffer_free(out);
    vp_stage_free(st);
    vp_mem_free(dev);
    vp_mem_free(host);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validator), cmocka_unit_test(test_copy_engine),
        cmocka_unit_test(test_families),  cmocka_unit_test(test_selective),
        cmocka_unit_test(test_limits),    cmocka_unit_test(test_formats),
        cmocka_unit_test(test_parse),     cmocka_unit_test(test_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
