/* Measured runs: the RUNS.csv reader (columns, defaults, "*" cells, quotes, every
 * rejection naming its line and column, runs vpipe cannot express kept with the reason),
 * a run priced exactly as the same configuration is priced directly, and the "*" search
 * keeping the fastest configuration that fits. */
#include <stdlib.h>
#include <string.h>

#include "price_util.h"
#include "vpipe/calibrate.h"

#define HEADER                                                                                     \
    "model,gpu,tp,pp,vp,dp,cp,ep,mbs,gbs,seq,schedule,recompute,flash,sp,zero,fp8,step_time_s,"    \
    "tokens_per_s_per_gpu,peak_mem_gib\n"

static vp_run_set *read_ok(const char *text) {
    vp_run_set *set = NULL;
    vp_error err = {0};
    if (vp_calibrate_read(text, strlen(text), "t/runs.csv", &set, &err) != VP_OK)
        fail_msg("%s", err.message);
    return set;
}

/* Reads text, expecting status and a message holding every one of want (NULL-ended), at
 * line `line`. */
static void read_bad(const char *text, vp_status status, int line, const char *const *want) {
    vp_run_set *set = NULL;
    vp_error err = {0};
    vp_status rc = vp_calibrate_read(text, strlen(text), "runs.csv", &set, &err);
    if (rc != status)
        fail_msg("status %d (want %d): %s", rc, status, err.message);
    assert_null(set);
    if (line)
        assert_int_equal(err.line, line);
    for (; *want; want++)
        if (!strstr(err.message, *want))
            fail_msg("'%s' lacks '%s'", err.message, *want);
}

/* Defaults for empty cells, "*" cells, quotes around a comma, comments, optional and
 * unknown columns, a relative path's folder. */
static void test_read(void **state) {
    (void)state;
    vp_run_set *set = read_ok("# a comment line\n"
                              "id,note,extra," HEADER "\n"
                              "r1,\"a, quoted \"\"note\"\"\",x,llama3-8b,,2,4,,2,,,*,64,4096,*,"
                              "*,1,1,1,0,2.5,,\n"
                              "r2,,,m/gpt.json,a100-80gb,,,,,,,,,,,,,,,,,1000,79.5\n");
    assert_int_equal(set->n, 2);
    assert_string_equal(set->base_dir, "t");
    assert_string_equal(set->ignored, "extra");
    const vp_run *a = &set->runs[0], *b = &set->runs[1];
    assert_int_equal(a->line, 4);
    assert_string_equal(a->note, "a, quoted \"note\"");
    assert_int_equal(a->tp, 2);
    assert_int_equal(a->pp, 4);
    assert_int_equal(a->vp, 1);
    assert_int_equal(a->mbs, VP_RUN_ANY);
    assert_int_equal(a->recompute, VP_RUN_ANY);
    assert_string_equal(a->schedule, "*");
    assert_true(a->flash && a->sp && a->zero == 1 && !a->fp8);
    assert_true(a->dp_overlap == VP_OVERLAP_MODELLED);
    assert_true(a->step_time_s == 2.5 && a->tokens_per_s_per_gpu == 0);
    assert_string_equal(a->why_not, "");
    /* every empty cell takes its default */
    assert_int_equal(b->tp * b->pp * b->vp * b->dp * b->cp * b->ep * b->mbs, 1);
    assert_int_equal(b->gbs, 1);
    assert_int_equal(b->seq, 0);
    assert_int_equal(b->recompute, VP_RECOMPUTE_NONE);
    assert_true(b->peak_mem_gib == 79.5 && b->mem_kind == VP_MEM_PROCESS);
    vp_calibrate_free(set);
}

/* Runs vpipe cannot express yet are kept with the reason (the column and the issue). */
static void test_not_expressible(void **state) {
    (void)state;
    vp_run_set *set = read_ok(HEADER "llama3-8b,,1,1,,4,2,,1,8,8192,,,,,,,,100,\n"
                                     "llama3-8b,,1,1,,4,,,1,8,8192,,,,,,1,,100,\n"
                                     "llama3-8b,,1,1,,4,,8,1,8,8192,,,,,,,,,\n");
    assert_non_null(strstr(set->runs[0].why_not, "column 'cp' = 2: context parallelism"));
    assert_non_null(strstr(set->runs[1].why_not, "column 'fp8' = 1"));
    assert_non_null(strstr(set->runs[2].why_not, "expert parallelism"));
    vp_run_price p;
    vp_error err = {0};
    assert_int_equal(vp_calibrate_price(set, 0, NULL, &p, &err), VP_EUNSUPPORTED);
    assert_non_null(strstr(err.message, "runs.csv:2: column 'cp'"));
    vp_calibrate_free(set);
}

/* Every rejection names the line, the column and what was expected. */
static void test_rejections(void **state) {
    (void)state;
    read_bad("", VP_EPARSE, 1, (const char *const[]){"no header", NULL});
    read_bad(HEADER, VP_EPARSE, 0, (const char *const[]){"no runs", NULL});
    read_bad("model,gpu\nx,y\n", VP_EPARSE, 1, (const char *const[]){"lacks column 'tp'", NULL});
    read_bad("tp," HEADER, VP_EPARSE, 1, (const char *const[]){"'tp' appears twice", NULL});
    read_bad(HEADER "llama3-8b,,x,,,,,,,,,,,,,,,,1,\n", VP_EPARSE, 2,
             (const char *const[]){"runs.csv:2: column 'tp'", "got 'x'", NULL});
    read_bad(HEADER "llama3-8b,,,,,,,,,,,nope,,,,,,,1,\n", VP_EPARSE, 2,
             (const char *const[]){"column 'schedule'", NULL});
    read_bad(HEADER "llama3-8b,,,,,,,,,,,,some,,,,,,1,\n", VP_EPARSE, 2,
             (const char *const[]){"column 'recompute'", NULL});
    read_bad(HEADER "llama3-8b,,,,,,,,,,,,,2,,,,,1,\n", VP_EPARSE, 2,
             (const char *const[]){"column 'flash'", "0 or 1", NULL});
    read_bad(HEADER "llama3-8b,,,,,,,,,,,,,,,,,-1,,\n", VP_EPARSE, 2,
             (const char *const[]){"column 'step_time_s'", NULL});
    read_bad(HEADER "llama3-8b,,,,,,,,,,,,,,,,,,,\n", VP_EPARSE, 2,
             (const char *const[]){"step_time_s or tokens_per_s_per_gpu", NULL});
    read_bad(HEADER ",,,,,,,,,,,,,,,,,1,,\n", VP_EPARSE, 2,
             (const char *const[]){"column 'model'", NULL});
    read_bad(HEADER "llama3-8b,,,,,,,,,8,1000,,,,,,,1,1000,\n", VP_EPARSE, 2,
             (const char *const[]){"disagrees with step_time_s", NULL});
    read_bad(HEADER "\"llama3-8b,,,,,,,,,,,,,,,,,,1,\n", VP_EPARSE, 0,
             (const char *const[]){"never closed", NULL});
    read_bad(HEADER "\"llama3-8b\"x,,,,,,,,,,,,,,,,,,1,\n", VP_EPARSE, 2,
             (const char *const[]){"after a closing quote", NULL});
    read_bad(HEADER "llama3-8b,,,,,,,,,,,,,,,,,,1,,9\n", VP_EPARSE, 2,
             (const char *const[]){"21 cells, the header names 20", NULL});
}

/* A run is priced as its configuration is priced directly: the same family, degrees,
 * microbatches and workload, the layers split evenly. */
static void test_price_matches_direct(void **state) {
    (void)state;
    vp_run_set *set =
        read_ok(HEADER "llama3-70b,a100-80gb,8,4,,2,,,1,64,4096,,selective,,1,1,,60,,\n");
    vp_run_price p;
    vp_error err = {0};
    if (vp_calibrate_price(set, 0, NULL, &p, &err) != VP_OK)
        fail_msg("%s", err.message);
    vp_arch a = tp_preset("llama3-70b");
    vp_gpu g = tp_gpu("a100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 4096;
    t.tp = 8;
    t.dp = 2;
    t.sp = t.zero1 = true;
    t.recompute = VP_RECOMPUTE_SELECTIVE;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    vp_price_result *r = tp_price(&su, "1f1b", 4, 32);
    TU_NEAR(p.step_time_s, r->step_time_s);
    TU_NEAR(p.tokens_per_s_per_gpu, r->tokens_per_s_per_gpu);
    TU_NEAR(p.total_bytes, r->memory_max_bytes);
    assert_string_equal(p.family, "1f1b");
    assert_string_equal(p.gpu, "a100-80gb");
    vp_price_result_free(r);
    vp_calibrate_free(set);
}

/* "*" cells: the pick is the fastest that fits of every microbatch size, recomputation
 * and schedule Megatron-LM runs (1F1B, interleaved with the layers dividing evenly). */
static void test_search(void **state) {
    (void)state;
    vp_run_set *set = read_ok(HEADER "llama3-70b,h100-80gb,8,4,*,2,,,*,16,4096,*,*,1,1,1,,9,,\n");
    vp_run_price best;
    vp_error err = {0};
    if (vp_calibrate_price(set, 0, NULL, &best, &err) != VP_OK)
        fail_msg("%s", err.message);
    assert_true(best.fits);
    vp_arch a = tp_preset("llama3-70b");
    vp_gpu g = tp_gpu("h100-80gb");
    int tried = 0;
    for (int mbs = 1; mbs <= 8; mbs *= 2)
        for (int rc = 0; rc <= 2; rc += 2) /* selective is none with FlashAttention */
            for (int v = 1; v <= 8; v++) {
                if (v > 1 && a.layers % (4 * v))
                    continue;
                vp_workload t = vp_workload_default(&a);
                t.seq = 4096;
                t.tp = 8;
                t.dp = 2;
                t.mbs = mbs;
                t.flash = t.sp = t.zero1 = true;
                t.recompute = (vp_recompute)rc;
                vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
                vp_spec spec = vp_spec_make(4, 8 / mbs);
                spec.v = v > 1 ? v : 0;
                vp_price_result *r = NULL;
                if (vp_price_family(&su, v > 1 ? "interleaved" : "1f1b", &spec, &r, NULL, NULL))
                    continue;
                tried++;
                if (r->fits && r->step_time_s < best.step_time_s * (1 - 1e-12))
                    fail_msg("mbs %d v %d rc %d: %.6g s beats the pick's %.6g s", mbs, v, rc,
                             r->step_time_s, best.step_time_s);
                vp_price_result_free(r);
            }
    assert_true(tried > 6);
    vp_calibrate_free(set);
}

/* Files read together keep their own folders for relative paths. */
static void test_read_files(void **state) {
    (void)state;
    const char *paths[] = {VP_SOURCE_DIR "/data/anchors/sc21.csv",
                           VP_SOURCE_DIR "/data/anchors/zerobubble.csv"};
    vp_run_set *set = NULL;
    vp_error err = {0};
    if (vp_calibrate_read_files(paths, 2, &set, &err) != VP_OK)
        fail_msg("%s", err.message);
    assert_int_equal(set->n, 10 + 18);
    assert_string_equal(set->base_dir, "");
    assert_non_null(strstr(set->runs[0].model, "/data/anchors/models/sc21-gpt-1.7b.json"));
    vp_run_price p;
    if (vp_calibrate_price(set, 0, NULL, &p, &err) != VP_OK)
        fail_msg("%s", err.message);
    vp_calibrate_free(set);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),       cmocka_unit_test(test_not_expressible),
        cmocka_unit_test(test_rejections), cmocka_unit_test(test_price_matches_direct),
        cmocka_unit_test(test_search),     cmocka_unit_test(test_read_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
