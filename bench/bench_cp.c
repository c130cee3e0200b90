/* Context parallelism in the planner: the long-context plan of issue #25's acceptance
 * (`vpipe plan --model llama3.1-405b --gpu h100-80gb --gpus 16384 --seq 131072
 * --global-batch 128`, the workload's defaults) timed on one and on two threads, beside the
 * same search with CP fixed to 1 (what the search costs without CP: nothing fits there).
 * usage: bench_cp [repeats]   (default 1; times are medians over the repeats)
 *
 * Output: the machine line, the load average before the runs, then one tab-separated line
 * per search and thread count: "cp <name> <threads> <median s> <candidates> <evaluated>
 * <winner's CP> <winner's DP x TP x PP> <step s> <fits>" ("none" when nothing fits). The
 * acceptance target: a configuration with CP > 1 that fits, in under 30 s. */
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "bench_machine.h"
#include "vpipe/hybrid.h"

static void bench(const char *name, int cp, int threads, int reps) {
    vp_arch a;
    vp_gpu g;
    vp_error err = {0};
    if (vp_arch_preset("llama3.1-405b", &a, &err) || vp_gpu_preset("h100-80gb", &g, &err)) {
        fprintf(stderr, "bench_cp: %s\n", err.message);
        exit(1);
    }
    vp_hybrid_request q = vp_hybrid_request_make(&a, &g, 16384, 128);
    q.work.seq = 131072;
    q.cp = cp;
    q.threads = threads;
    double *t = calloc((size_t)reps, sizeof *t);
    vp_hybrid *h = NULL;
    vp_status rc = VP_OK;
    for (int r = 0; r < reps && t; r++) {
        vp_hybrid_free(h);
        h = NULL;
        double t0 = vp__now_ms();
        rc = vp_hybrid_run(&q, &h, &err);
        t[r] = (vp__now_ms() - t0) / 1e3;
    }
    if (rc == VP_OK)
        printf("cp\t%s\t%d\t%.3f\t%ld\t%ld\t%d\t%dx%dx%d\t%.4f\t%s\n", name, threads,
               vp__median(t, reps), h->candidates, h->evaluated, h->top[0].cp, h->top[0].dp,
               h->top[0].tp, h->top[0].pp, h->top[0].step_time_s, h->top[0].fits ? "yes" : "no");
    else
        printf("cp\t%s\t%d\t%.3f\tnone\t(%s)\n", name, threads, t ? vp__median(t, reps) : 0,
               err.message);
    fflush(stdout);
    vp_hybrid_free(h);
    free(t);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    reps = reps < 1 ? 1 : reps;
    bench_print_machine();
    bench_print_load();
    for (int threads = 1; threads <= 2; threads++)
        bench("llama3.1-405b/16384xh100/131k/128", 0, threads, reps);
    bench("llama3.1-405b/16384xh100/131k/128 CP 1", 1, 1, reps);
    return 0;
}
