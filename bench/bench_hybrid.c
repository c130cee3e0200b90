/* The hybrid planner's speed: the whole DP x TP x PP x microbatch x schedule x recompute
 * grid searched for three configurations, on one and on two threads, with the counts that
 * say how much pruning saved; then issue 25's command, `vpipe plan` for DeepSeek-V3 on
 * 1024 H100s at sequence 4096 (wanted: under 10 s on the 2-core machine), as the command
 * line runs it (vp_request_call), every EP, ETP and ZeRO stage searched.
 * usage: bench_hybrid [repeats]   (default 5; times are medians over the repeats)
 *
 * Output: the machine line, the load average, then one tab-separated line per
 * configuration and thread count: "hybrid <name> <threads> <median s> <candidates>
 * <evaluated> <pruned by bound> <pruned by memory> <over memory> <refused> <winner> <step s>
 * <mfu>", then "plan <name> <threads> <median s> <repeats>" per thread count and the load
 * average again. */
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "bench_machine.h"
#include "vpipe/hybrid.h"
#include "vpipe/request.h"

typedef struct bench_case {
    const char *name, *model, *gpu;
    int gpus, seq, batch;
    int reps_max; /* the largest grid runs fewer times */
} bench_case;

static const bench_case cases[] = {
    {"llama3-70b/64xh100/8k/512", "llama3-70b", "h100-80gb", 64, 8192, 512, 100},
    {"cm-98.5b/40xa100/1k/160", "cm-98.5b", "a100-80gb", 40, 1024, 160, 100},
    {"llama3-405b/1024xh100/8k/2048", "llama3-405b", "h100-80gb", 1024, 8192, 2048, 1},
};

static void bench(const bench_case *c, int threads, int reps) {
    vp_arch a;
    vp_gpu g;
    vp_error err = {0};
    if (vp_arch_preset(c->model, &a, &err) || vp_gpu_preset(c->gpu, &g, &err)) {
        fprintf(stderr, "bench_hybrid: %s\n", err.message);
        exit(1);
    }
    vp_hybrid_request q = vp_hybrid_request_make(&a, &g, c->gpus, c->batch);
    q.work.seq = c->seq;
    q.work.flash = q.work.sp = true;
    q.work.zero = 1;
    q.threads = threads;
    reps = reps < c->reps_max ? reps : c->reps_max;
    double *t = calloc((size_t)reps, sizeof *t);
    vp_hybrid *h = NULL;
    for (int r = 0; r < reps; r++) {
        vp_hybrid_free(h);
        h = NULL;
        double t0 = vp__now_ms();
        if (vp_hybrid_run(&q, &h, &err) != VP_OK) {
            fprintf(stderr, "bench_hybrid: %s: %s\n", c->name, err.message);
            exit(1);
        }
        t[r] = (vp__now_ms() - t0) / 1e3;
    }
    printf("hybrid\t%s\t%d\t%.3f\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld\t%s\t%.4f\t%.4f\n", c->name, threads,
           vp__median(t, reps), h->candidates, h->evaluated, h->pruned_bound, h->pruned_memory,
           h->over_memory, h->refused, h->top[0].family, h->top[0].step_time_s, h->top[0].mfu);
    fflush(stdout);
    vp_hybrid_free(h);
    free(t);
}

/* Times `plan` with options (JSON, without threads) on threads threads, reps times. */
static void bench_command(const char *name, const char *options, int threads, int reps) {
    char json[512];
    snprintf(json, sizeof json, "{%s, \"threads\": %d}", options, threads);
    double *t = calloc((size_t)reps, sizeof *t);
    for (int r = 0; r < reps; r++) {
        char *reply = NULL;
        vp_error err = {0};
        double t0 = vp__now_ms();
        if (vp_request_call("plan", json, &reply, &err) != VP_OK) {
            fprintf(stderr, "bench_hybrid: %s: %s\n", name, err.message);
            exit(1);
        }
        t[r] = (vp__now_ms() - t0) / 1e3;
        vp_free(reply);
    }
    printf("plan\t%s\t%d\t%.3f\t%d\n", name, threads, vp__median(t, reps), reps);
    fflush(stdout);
    free(t);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    reps = reps < 1 ? 1 : reps;
    bench_print_machine();
    bench_print_load();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int threads = 1; threads <= 2; threads++)
            bench(&cases[i], threads, reps);
    for (int threads = 1; threads <= 2; threads++)
        bench_command("deepseek-v3/1024xh100/4k/8192",
                      "\"model\": \"deepseek-v3\", \"gpu\": \"h100-80gb\", \"gpus\": 1024, "
                      "\"seq\": 4096, \"global_batch\": 8192, \"flash\": true, \"zero\": true, "
                      "\"json\": true",
                      threads, reps < 3 ? reps : 3);
    bench_print_load();
    return 0;
}
