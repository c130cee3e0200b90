/* Step time at equal per-rank memory, as the V-Shape paper compares schedules: 1F1B at
 * microbatch b, and each memory-saving variant (V-Min; 1F1B-R, 1F1B with full
 * recomputation) at the largest microbatch b..4b
 * dividing the step's sequences whose predicted per-rank peak activation bytes stay
 * within 1F1B's (b itself when none does: then its peak exceeds the budget), with the
 * same global batch (m * b sequences per step). Real compute on p = 2 ranks (threads),
 * and emulated on p = 8 (every pass waits its profiled time, with the real transport and
 * schedule); beside each measured step time the simulator's prediction from the same
 * profile. The machine's load average is printed: real compute on a shared machine runs
 * slower than its profile. One table row per (p, variant):
 *
 *   p  mode  variant  microbatch  m  peak_bytes  budget_bytes  measured_ms  simulated_ms
 *
 *   bench_equal_memory [width heads seq microbatch layers2 m2 layers8 m8]
 *                      (256 4 128 2 8 12 16 24)
 *
 * The peaks are the runtime's exact predictions (vp_runtime_predict_memory), which its
 * measured peaks equal (tests/test_runtime.c); a measured step time is the median of the
 * steps after the first. Not a test: nothing is asserted, the numbers are for reading. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_machine.h"
#include "vpipe/profile.h"

enum { STEPS = 4 };

/* A schedule compared: its name in the table and its family. */
typedef struct variant {
    const char *name, *family;
} variant;

static const variant variants[] = {
    {"1F1B", "1f1b"},     /* the baseline: its peak is the budget */
    {"V-Min", "v-min"},   /* about 1/3 of 1F1B's activations */
    {"1F1B-R", "1f1b-r"}, /* one stage input per microbatch in flight */
};

static void die(const char *what, const vp_error *err) {
    fprintf(stderr, "bench_equal_memory: %s: %s\n", what, err->message);
    exit(1);
}

/* Variant v's schedule at p devices and m microbatches. */
static vp_schedule *make_schedule(const variant *v, int p, int m) {
    vp_spec spec = vp_spec_make(p, m);
    vp_schedule *s = NULL;
    vp_error err = {0};
    if (vp_family_build(v->family, &spec, &s, &err) != VP_OK)
        die(v->family, &err);
    return s;
}

/* The largest predicted per-rank peak of activations of variant v at microbatch b (m
 * microbatches). */
static double peak_of(const variant *v, vp_model_config cfg, int p, int m) {
    vp_schedule *s = make_schedule(v, p, m);
    vp_pipeline_options o;
    vp_pipeline_options_default(&o);
    o.train.model = cfg;
    o.schedule = s;
    double *bytes = calloc((size_t)p * VP_MEM_CATEGORIES, sizeof *bytes), most = 0.0;
    vp_error err = {0};
    if (!bytes || vp_runtime_predict_memory(&o, bytes, &err) != VP_OK)
        die("predicted peaks", &err);
    for (int d = 0; d < p; d++) {
        double act = bytes[d * VP_MEM_CATEGORIES + VP_MEM_ACTIVATIONS];
        most = act > most ? act : most;
    }
    free(bytes);
    vp_schedule_free(s);
    return most;
}

static bool remember_step(const vp_train_progress *p, void *user) {
    ((double *)user)[p->step - 1] = p->step_ms;
    return true;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One row: variant v at p ranks on model cfg (its microbatch chosen) with m microbatches;
 * emulated or real; prints the measured and simulated step times. */
static void run_row(const variant *v, vp_model_config cfg, int p, int m, double budget, int emulate,
                    const vp_data *data) {
    vp_profile prof;
    vp_error err = {0};
    if (vp_profile_measure(&cfg, 3, &prof, &err) != VP_OK)
        die("profile", &err);
    vp_schedule *s = make_schedule(v, p, m);
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    if (vp_cost_model_new(s, &costs, &mem, &cm, &err) != VP_OK ||
        vp_profile_cost_model(&prof, s, NULL, cm, &err) != VP_OK)
        die("cost model", &err);
    vp_pipeline_options o;
    vp_pipeline_options_default(&o);
    o.train.model = cfg;
    o.train.m = m;
    o.train.steps = STEPS;
    o.train.eval_batches = 1;
    o.schedule = s;
    o.op_ms = cm;
    o.emulate = emulate;
    double ms[STEPS] = {0};
    vp_pipeline_result r;
    if (vp_pipeline_train(&o, data, remember_step, ms, &r, &err) != VP_OK)
        die(v->name, &err);
    qsort(ms + 1, STEPS - 1, sizeof *ms, cmp_double); /* the first step warms up */
    printf("%d\t%s\t%s\t%d\t%d\t%.0f\t%.0f\t%.1f\t%.1f\n", p, emulate ? "emulated" : "real",
           v->name, cfg.microbatch, m, peak_of(v, cfg, p, m), budget, ms[1 + (STEPS - 1) / 2],
           r.predicted_step_ms);
    fflush(stdout);
    vp_pipeline_result_release(&r);
    vp_cost_model_free(cm);
    vp_schedule_free(s);
}

/* Every variant at p ranks: 1F1B at microbatch cfg.microbatch sets the budget, the others
 * take the largest microbatch up to 4 times it that fits and divides the sequences of a
 * step (the same for all). */
static void compare(vp_model_config cfg, int p, int m, int emulate, const vp_data *data) {
    int b = cfg.microbatch, sequences = m * b;
    double budget = peak_of(&variants[0], cfg, p, m);
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        vp_model_config at = cfg;
        for (at.microbatch = 4 * b; at.microbatch > b; at.microbatch--)
            if (sequences % at.microbatch == 0 &&
                peak_of(&variants[i], at, p, sequences / at.microbatch) <= budget)
                break;
        run_row(&variants[i], at, p, sequences / at.microbatch, budget, emulate, data);
    }
}

int main(int argc, char **argv) {
    int a[8] = {256, 4, 128, 2, 8, 12, 16, 24};
    if (argc == 9)
        for (int i = 0; i < 8; i++)
            a[i] = atoi(argv[i + 1]);
    else if (argc != 1) {
        fprintf(stderr, "usage: bench_equal_memory [width heads seq microbatch layers2 m2 layers8 "
                        "m8]\n");
        return 2;
    }
    vp_model_config cfg = {.n_layer = a[4],
                           .width = a[0],
                           .n_head = a[1],
                           .seq_len = a[2],
                           .microbatch = a[3],
                           .vocab = 256};
    vp_error err = {0};
    vp_data *data = NULL;
    if (vp_data_load("/usr/share/common-licenses/GPL-3", 0.1, &data, &err) != VP_OK)
        die("data", &err);
    bench_print_machine();
    bench_print_load();
    printf("model: width %d, heads %d, seq %d; 1F1B at microbatch %d\n", cfg.width, cfg.n_head,
           cfg.seq_len, cfg.microbatch);
    printf("p\tmode\tvariant\tmicrobatch\tm\tpeak_bytes\tbudget_bytes\tmeasured_ms\t"
           "simulated_ms\n");
    compare(cfg, 2, a[5], 0, data);
    cfg.n_layer = a[6];
    compare(cfg, 8, a[7], 1, data);
    vp_data_free(data);
    return 0;
}
