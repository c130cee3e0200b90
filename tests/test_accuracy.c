/* The accuracy report as a regression test (issue 29's thresholds): every published run of
 * data/anchors/ that vpipe can express priced with the default presets; Narayanan SC21
 * Table 1 within 6% on average and 12% at worst, Megatron-LM's 2024 H100 table within 8%
 * and 15%, measured peaks within 10% on average, no run that ran predicted not to fit,
 * every other run listed with why not; and each preset's stated expected error is the one
 * measured here (so it cannot drift from the report). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "price_util.h"
#include "vpipe/calibrate.h"

static const char *const files[] = {VP_SOURCE_DIR "/data/anchors/sc21.csv",
                                    VP_SOURCE_DIR "/data/anchors/megatron2024.csv",
                                    VP_SOURCE_DIR "/data/anchors/zerobubble.csv",
                                    VP_SOURCE_DIR "/data/anchors/controllable-memory.csv",
                                    VP_SOURCE_DIR "/data/anchors/others.csv"};

static vp_run_set *set;
static vp_accuracy *acc;

static int setup(void **state) {
    (void)state;
    vp_error err = {0};
    if (vp_calibrate_read_files(files, 5, &set, &err) != VP_OK ||
        vp_calibrate_accuracy(set, &acc, &err) != VP_OK) {
        print_error("%s\n", err.message);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    vp_calibrate_accuracy_free(acc);
    vp_calibrate_free(set);
    return 0;
}

static const vp_accuracy_group *group(const vp_accuracy_group *g, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(g[i].name, name))
            return &g[i];
    fail_msg("no group %s", name);
    return NULL;
}

/* A published run ran: fails the test when run id, priced as r, is predicted not to fit. */
static void assert_fits(const char *id, const vp_accuracy_row *r) {
    if (r->priced && !r->price.fits)
        fail_msg("%s: predicted not to fit, it ran", id);
}

static void check_source(const char *name, int rows, double mean, double worst) {
    const vp_accuracy_group *g = group(acc->by_source, acc->n_sources, name);
    print_message("%-14s %d of %d priced: mean %.1f%%, worst %+.1f%%; held out %.1f%% / %.1f%% "
                  "(%d tuned); order %ld of %ld pairs\n",
                  name, g->priced, g->rows, 100 * g->mean, 100 * g->worst_signed,
                  100 * g->held_mean, 100 * g->held_worst, g->tuned, g->concordant, g->pairs);
    assert_int_equal(g->rows, rows);
    assert_int_equal(g->priced, rows);
    assert_int_equal(g->not_fitting, 0);
    if (g->mean > mean || g->worst > worst)
        fail_msg("%s: mean %.1f%% (at most %.0f%%), worst %.1f%% (at most %.0f%%)", name,
                 100 * g->mean, 100 * mean, 100 * g->worst, 100 * worst);
}

/* The issue's thresholds on the two sources it names. */
static void test_thresholds(void **state) {
    (void)state;
    check_source("SC21", 10, 0.06, 0.12);
    check_source("Megatron-2024", 9, 0.08, 0.15);
    check_source("ZB", 18, 1, 1);
    check_source("CM", 6, 1, 1);
}

/* Where a peak is published, memory within 10% on average; no run that ran predicted not
 * to fit. */
static void test_memory(void **state) {
    (void)state;
    int runs = 0;
    double sum = 0;
    for (int i = 0; i < acc->n; i++) {
        const vp_accuracy_row *r = &acc->rows[i];
        if (r->priced && r->has_memory) {
            runs++;
            sum += fabs(r->memory_error);
        }
        assert_fits(set->runs[i].id, r);
    }
    print_message("memory: %d published peaks, mean error %.1f%%\n", runs, 100 * sum / runs);
    assert_true(runs >= 18 && sum / runs <= 0.10);
}

/* The runs vpipe cannot price (anchors.md section 2's) are listed with a reason: a column
 * the reader refuses, or the expressible cell; none fails for another reason. */
static void test_not_expressible(void **state) {
    (void)state;
    int listed = 0;
    for (int i = 0; i < acc->n; i++) {
        if (acc->rows[i].priced)
            continue;
        listed++;
        if (!set->runs[i].why_not[0])
            fail_msg("%s failed to price: %s", set->runs[i].id, acc->rows[i].err.message);
    }
    assert_int_equal(listed, acc->n - (10 + 9 + 18 + 6));
    assert_true(listed >= 12); /* 50 before the MoE, FP8, CP and FSDP runs moved to their files */
}

/* The runs of n RUNS.csv files (*runs) and their accuracy; fails the test on error. */
static vp_accuracy *read_files_priced(const char *const *paths, int n, vp_run_set **runs) {
    vp_accuracy *a = NULL;
    vp_error err = {0};
    if (vp_calibrate_read_files(paths, n, runs, &err) != VP_OK ||
        vp_calibrate_accuracy(*runs, &a, &err) != VP_OK)
        fail_msg("%s", err.message);
    return a;
}

/* The runs of one RUNS.csv (*runs) and their accuracy. */
static vp_accuracy *read_priced(const char *path, vp_run_set **runs) {
    return read_files_priced(&path, 1, runs);
}

/* The mixture-of-experts runs vpipe prices with expert parallelism (data/anchors/moe.csv,
 * kept apart from the dense runs the presets' expected errors state): every one priced,
 * none predicted not to fit (they ran; DeepSeek-V3's two with their recipes' bf16 moments
 * and recomputed modules), each error printed. Issue #25's target (10% mean, 20% worst) is
 * not met yet; the figures are the report's. */
static void test_moe_runs(void **state) {
    (void)state;
    vp_run_set *runs = NULL;
    vp_accuracy *a = read_priced(VP_SOURCE_DIR "/data/anchors/moe.csv", &runs);
    assert_true(a->n >= 2);
    for (int i = 0; i < a->n; i++) {
        const vp_accuracy_row *r = &a->rows[i];
        const vp_run *run = &runs->runs[r->run];
        if (!r->priced)
            fail_msg("%s: %s", run->id, r->err.message);
        print_message("%-4s %-14s EP %2d: %+.1f%% throughput, %.1f GiB\n", run->id, run->model,
                      run->ep, 100 * r->error, r->price.total_bytes / 1073741824.0);
        assert_true(run->ep > 1);
        assert_true(r->price.fits);
        assert_true(isfinite(r->error) && r->error > -1);
        if (!strncmp(run->id, "MS", 2)) /* HybridEP's dispatch and the EP overlap priced */
            assert_true(fabs(r->error) < 0.10);
    }
    vp_calibrate_accuracy_free(a);
    vp_calibrate_free(runs);
}

/* The dense FP8 runs (data/anchors/fp8.csv: NeMo 24.07, Megatron-LM's and Megatron-Bridge's
 * H100 tables), priced with the FP8 rate, casts and copies of src/price/fp8.c and no
 * constant fitted to them: every one priced, within issue #25's worst bound (20% on tokens/s
 * per GPU), none predicted not to fit (they ran). Its 10% mean is missed (10.1%, every run
 * predicted slower than measured): the mean is held within 12% so that a change making it
 * worse shows. */
static void test_fp8_runs(void **state) {
    (void)state;
    vp_run_set *runs = NULL;
    vp_accuracy *a = read_priced(VP_SOURCE_DIR "/data/anchors/fp8.csv", &runs);
    assert_true(a->n >= 9);
    double sum = 0, worst = 0;
    for (int i = 0; i < a->n; i++) {
        const vp_accuracy_row *r = &a->rows[i];
        const vp_run *run = &runs->runs[r->run];
        if (!r->priced)
            fail_msg("%s: %s", run->id, r->err.message);
        print_message("%-4s %-12s FP8 %-10s: %+.1f%% throughput, %.1f GiB\n", run->id, run->model,
                      vp_fp8_name(run->fp8), 100 * r->error, r->price.total_bytes / 1073741824.0);
        assert_true(run->fp8 != VP_FP8_OFF);
        assert_fits(run->id, r);
        sum += fabs(r->error);
        worst = fabs(r->error) > worst ? fabs(r->error) : worst;
    }
    print_message("FP8: %d runs, mean %.1f%%, worst %.1f%%\n", a->n, 100 * sum / a->n, 100 * worst);
    assert_true(sum / a->n <= 0.12 && worst <= 0.20);
    vp_calibrate_accuracy_free(a);
    vp_calibrate_free(runs);
}

/* The context-parallel runs (data/anchors/cp.csv): all of section 2.9's CP rows and their
 * controls; every one that publishes tokens/s priced (with its FP8 and FSDP), each error
 * printed (issue #25's target is not met: the figures are the report's), none predicted not
 * to fit (they ran); the LH rows, which publish TFLOP/s only, listed with that reason. */
static void test_cp_runs(void **state) {
    (void)state;
    vp_run_set *runs = NULL;
    vp_accuracy *a = read_priced(VP_SOURCE_DIR "/data/anchors/cp.csv", &runs);
    const char *ids[] = {"LH5", "LH7", "LH9", "T2c",  "T6b", "T6d", "N11",
                         "N12", "ML1", "ML3", "MB11", "LH1", "LH3", "T2a"};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        int i = 0;
        while (i < a->n && strcmp(runs->runs[a->rows[i].run].id, ids[k]))
            i++;
        if (i == a->n)
            fail_msg("cp.csv lacks %s", ids[k]);
        const vp_accuracy_row *r = &a->rows[i];
        const vp_run *run = &runs->runs[r->run];
        assert_true((run->cp > 1) == (k < 11));
        assert_true(run->fp8 != VP_FP8_OFF);
        if (!strncmp(run->id, "LH", 2)) {
            assert_false(r->priced);
            assert_non_null(strstr(run->why_not, "TFLOP/s per GPU only"));
            continue;
        }
        if (!r->priced)
            fail_msg("%s: %s", run->id, r->err.message);
        print_message("%-4s %-14s CP %2d: %+.1f%% throughput, %.1f GiB\n", run->id, run->model,
                      run->cp, 100 * r->error, r->price.total_bytes / 1073741824.0);
        assert_true(isfinite(r->error) && r->error > -1);
        assert_fits(run->id, r);
    }
    vp_calibrate_accuracy_free(a);
    vp_calibrate_free(runs);
}

/* The FSDP (ZeRO-3) runs vpipe prices since --zero 3 (data/anchors/fsdp.csv): every one
 * priced at ZeRO-3 on its DP group, none predicted not to fit (they ran), each error printed
 * (issue #25's target is not met: the figures are the report's); torchtitan's rows with a
 * published peak are compared with the predicted reserved bytes (anchors.md 2.10 item 4). */
static void test_fsdp_runs(void **state) {
    (void)state;
    vp_run_set *runs = NULL;
    vp_accuracy *a = read_priced(VP_SOURCE_DIR "/data/anchors/fsdp.csv", &runs);
    assert_true(a->n >= 12);
    int memory = 0;
    for (int i = 0; i < a->n; i++) {
        const vp_accuracy_row *r = &a->rows[i];
        const vp_run *run = &runs->runs[r->run];
        if (!r->priced)
            fail_msg("%s: %s", run->id, r->err.message);
        print_message("%-11s %-14s FSDP %2d: %+.1f%% throughput, %.1f GiB\n", run->id, run->model,
                      run->dp, 100 * r->error, r->price.total_bytes / 1073741824.0);
        assert_int_equal(run->zero, 3);
        assert_true(isfinite(r->error) && r->error > -1);
        assert_fits(run->id, r);
        memory += r->has_memory;
    }
    assert_true(memory >= 4);
    vp_calibrate_accuracy_free(a);
    vp_calibrate_free(runs);
}

/* The rows of torchtitan's December 2024 tables that anchors.md does not list
 * (data/anchors/unlisted.csv): no constant or mechanism was built from them, and they count
 * in no per-kind figure. Every one priced as the listed rows of its table are, with its
 * published peak compared; the errors are the report's (section 7), printed here. */
static void test_unlisted_runs(void **state) {
    (void)state;
    const char *ids[] = {"T2b", "T2d", "T3a", "T3b", "T3c", "T6a", "T6c"};
    vp_run_set *runs = NULL;
    vp_accuracy *a = read_priced(VP_SOURCE_DIR "/data/anchors/unlisted.csv", &runs);
    assert_int_equal(a->n, sizeof ids / sizeof ids[0]);
    for (int i = 0; i < a->n; i++) {
        const vp_accuracy_row *r = &a->rows[i];
        const vp_run *run = &runs->runs[r->run];
        assert_string_equal(run->id, ids[i]);
        if (!r->priced)
            fail_msg("%s: %s", run->id, r->err.message);
        print_message("%-4s %-14s CP %d FSDP %3d: %+.1f%% throughput, %+.1f%% memory%s\n", run->id,
                      run->model, run->cp, run->dp, 100 * r->error, 100 * r->memory_error,
                      r->price.fits ? "" : " (predicted not to fit)");
        assert_int_equal(run->framework, VP_FRAMEWORK_TORCHTITAN);
        assert_true(r->has_memory && isfinite(r->memory_error));
        assert_true(isfinite(r->error) && r->error > -1);
    }
    vp_calibrate_accuracy_free(a);
    vp_calibrate_free(runs);
}

/* Each preset's expected error is the accuracy measured for its accelerator here. */
static void test_presets_state_it(void **state) {
    (void)state;
    const char *measured[] = {"a100-80gb", "h100-80gb"};
    for (int k = 0; k < 2; k++) {
        vp_gpu g = tp_gpu(measured[k]);
        const vp_accuracy_group *m = group(acc->by_gpu, acc->n_gpus, measured[k]);
        const vp_expected_error *e = &g.expected;
        if (e->runs != m->priced || fabs(e->step_mean - m->mean) > 5e-4 ||
            fabs(e->step_worst - m->worst) > 5e-4 || e->memory_runs != m->memory ||
            fabs(e->memory_mean - m->memory_mean) > 5e-4 ||
            fabs(e->memory_worst - m->memory_worst) > 5e-4)
            fail_msg("%s states %d runs %.2f%% / %.2f%%, memory %d %.2f%% / %.2f%%; the report "
                     "measures %d runs %.2f%% / %.2f%%, memory %d %.2f%% / %.2f%%",
                     measured[k], e->runs, 100 * e->step_mean, 100 * e->step_worst, e->memory_runs,
                     100 * e->memory_mean, 100 * e->memory_worst, m->priced, 100 * m->mean,
                     100 * m->worst, m->memory, 100 * m->memory_mean, 100 * m->memory_worst);
    }
}

/* The expected error of each kind of run (vp_price_expected_kind) is the accuracy measured
 * here on issue #25's runs, a run counted in every kind it has; a run of several kinds gets
 * the one missed most on average, a dense run none. */
static void test_kinds_state_it(void **state) {
    (void)state;
    const char *issue25[] = {
        VP_SOURCE_DIR "/data/anchors/moe.csv", VP_SOURCE_DIR "/data/anchors/fp8.csv",
        VP_SOURCE_DIR "/data/anchors/cp.csv", VP_SOURCE_DIR "/data/anchors/fsdp.csv"};
    vp_run_set *runs = NULL;
    vp_accuracy *a = read_files_priced(issue25, 4, &runs);
    const char *names[] = {"MoE", "FP8", "CP", "FSDP"};
    for (int k = 0; k < 4; k++) {
        int n = 0, memory = 0;
        double sum = 0, worst = 0, msum = 0, mworst = 0;
        for (int i = 0; i < a->n; i++) {
            const vp_accuracy_row *r = &a->rows[i];
            const vp_run *run = &runs->runs[r->run];
            bool kind[] = {run->ep > 1, run->fp8 != VP_FP8_OFF, run->cp > 1, run->zero == 3};
            if (!r->priced || !kind[k])
                continue;
            n++, sum += fabs(r->error), worst = fmax(worst, fabs(r->error));
            if (r->has_memory)
                memory++, msum += fabs(r->memory_error),
                    mworst = fmax(mworst, fabs(r->memory_error));
        }
        vp_workload w = {.ep = k == 0 ? 8 : 1,
                         .fp8 = k == 1 ? VP_FP8_TENSORWISE : VP_FP8_OFF,
                         .cp = k == 2 ? 2 : 1,
                         .zero = k == 3 ? 3 : 1};
        vp_expected_error e;
        vp_price_expected_kind(&w, &e);
        print_message("%-4s %d runs %.2f%% / %.2f%%, memory %d %.2f%% / %.2f%%\n", names[k], n,
                      100 * sum / n, 100 * worst, memory, memory ? 100 * msum / memory : 0.0,
                      100 * mworst);
        if (e.runs != n || fabs(e.step_mean - sum / n) > 5e-4 ||
            fabs(e.step_worst - worst) > 5e-4 || e.memory_runs != memory ||
            (memory && fabs(e.memory_mean - msum / memory) > 5e-4) ||
            fabs(e.memory_worst - mworst) > 5e-4 || !strstr(e.basis, names[k]))
            fail_msg("%s states %d runs %.2f%% / %.2f%%, memory %d (%s); the report measures %d "
                     "runs %.2f%% / %.2f%%, memory %d",
                     names[k], e.runs, 100 * e.step_mean, 100 * e.step_worst, e.memory_runs,
                     e.basis, n, 100 * sum / n, 100 * worst, memory);
    }
    vp_workload dense = {.ep = 1, .cp = 1, .zero = 1},
                both = {.ep = 8, .cp = 1, .fp8 = VP_FP8_TENSORWISE};
    vp_expected_error e, moe, fp8;
    vp_price_expected_kind(&dense, &e);
    assert_int_equal(e.runs, 0);
    vp_price_expected_kind(&both, &e);
    vp_price_expected_kind(&(vp_workload){.ep = 8, .cp = 1}, &moe);
    vp_price_expected_kind(&(vp_workload){.ep = 1, .cp = 1, .fp8 = VP_FP8_TENSORWISE}, &fp8);
    assert_true(e.step_mean == fmax(moe.step_mean, fp8.step_mean));
    assert_non_null(strstr(e.basis, "the worst of this run's kinds: MoE, FP8"));
    vp_calibrate_accuracy_free(a);
    vp_calibrate_free(runs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thresholds),       cmocka_unit_test(test_memory),
        cmocka_unit_test(test_not_expressible),  cmocka_unit_test(test_moe_runs),
        cmocka_unit_test(test_presets_state_it), cmocka_unit_test(test_fp8_runs),
        cmocka_unit_test(test_cp_runs),          cmocka_unit_test(test_fsdp_runs),
        cmocka_unit_test(test_kinds_state_it),   cmocka_unit_test(test_unlisted_runs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
