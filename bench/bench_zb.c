/* Zero Bubble generators and the block framework: time to generate and simulate.
 * usage: bench_zb [repeats]   (default 21; each figure is the median over the repeats)
 *
 * Rows: zb-1p, zb-2p (ZB auto, 8 greedy variants each), zb-v (greedy, 4 variants with
 * re-runs), zb-h1, zb-h2 at p=16, m=64 and p=64, m=512 with the Zero Bubble paper's 1.5B
 * costs (F 18.522, B 18.086, W 9.337, c 0.601) under the ZB split (R = 0.366); then the
 * block framework's inner loop as a planner calls it: repeat the V-Min block to m
 * microbatches and simulate it. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vpipe/block.h"
#include "vpipe/families.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

static void die(const char *what, const vp_error *err) {
    fprintf(stderr, "bench_zb: %s: %s\n", what, err->message);
    exit(1);
}

/* Median time of building family (and of simulating the result) over reps runs. */
static void bench_family(const char *family, int p, int m, const vp_costs *costs,
                         const vp_memcfg *mem, int reps) {
    double *tb = calloc((size_t)reps, sizeof *tb), *ts = calloc((size_t)reps, sizeof *ts);
    double bubble = 0, peak = 0;
    for (int r = 0; r < reps; r++) {
        vp_spec spec = vp_spec_make(p, m);
        spec.costs = *costs;
        spec.mem = *mem;
        vp_schedule *s = NULL;
        vp_error err = {0};
        double t0 = now_s();
        if (vp_family_build(family, &spec, &s, &err) != VP_OK)
            die(family, &err);
        double t1 = now_s();
        vp_cost_model *cm = NULL;
        vp_sim *sim = NULL;
        if (vp_cost_model_new(s, costs, mem, &cm, &err) != VP_OK ||
            vp_simulate(s, cm, &sim, &err) != VP_OK)
            die("simulate", &err);
        double t2 = now_s();
        tb[r] = t1 - t0;
        ts[r] = t2 - t1;
        bubble = sim->bubble;
        peak = sim->peak_max;
        vp_sim_free(sim);
        vp_cost_model_free(cm);
        vp_schedule_free(s);
    }
    printf("%-7s p=%3d m=%4d  build %9.3f ms  simulate %8.3f ms  (bubble %6.2f%%, peak %.2f)\n",
           family, p, m, 1e3 * median(tb, reps), 1e3 * median(ts, reps), 100 * bubble, peak);
    free(tb);
    free(ts);
}

/* The V-Min block (schedules.md §4) at unit chunk cost, T = 6. */
static vp_block *vmin_block(int p) {
    vp_block *b = NULL;
    if (vp_block_new(p, 2 * p, VP_PLACE_V, &b, NULL) != VP_OK)
        return NULL;
    int x = p % 3 == 0 ? 2 : 0;
    for (int i = 0; i < p; i++) {
        int t[4] = {i, 2 * p - 1 - i, 2 * p + x + i, 4 * p + x - 1 - i};
        int used[6] = {0}, w[2];
        for (int k = 0; k < 4; k++)
            used[t[k] % 6] = 1;
        for (int k = 0; k < 2; k++) { /* W in the first free slot after its B, chunk 1 first */
            int from = t[2 + k] + 1;
            while (used[from % 6])
                from++;
            used[from % 6] = 1;
            w[k] = from;
        }
        vp_block_add(b, VP_OP_F, i, 0, t[0], 1);
        vp_block_add(b, VP_OP_F, 2 * p - 1 - i, 0, t[1], 1);
        vp_block_add(b, VP_OP_B, 2 * p - 1 - i, 0, t[2], 1);
        vp_block_add(b, VP_OP_B, i, 0, t[3], 1);
        vp_block_add(b, VP_OP_W, 2 * p - 1 - i, 0, w[0], 1);
        vp_block_add(b, VP_OP_W, i, 0, w[1], 1);
    }
    b->T = 6;
    return b;
}

static void bench_block(int p, int m, int reps) {
    vp_block *b = vmin_block(p);
    vp_costs costs = vp_costs_default();
    costs.f = costs.b = costs.w = 2;
    vp_memcfg mem = vp_memcfg_default();
    vp_error err = {0};
    vp_cost_model *cm = NULL;
    if (vp_block_cost_model(b, &costs, &mem, &cm, &err) != VP_OK)
        die("cost model", &err);
    int inner = 100;
    double *t = calloc((size_t)reps, sizeof *t), makespan = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (int k = 0; k < inner; k++) {
            vp_schedule *s = NULL;
            vp_sim *sim = NULL;
            if (vp_block_repeat(b, m, "v-min", &s, &err) != VP_OK ||
                vp_simulate(s, cm, &sim, &err) != VP_OK)
                die("v-min block", &err);
            makespan = sim->makespan;
            vp_sim_free(sim);
            vp_schedule_free(s);
        }
        t[r] = (now_s() - t0) / inner;
    }
    printf("block   p=%3d m=%4d  repeat + simulate the V-Min block %8.3f ms  (makespan %g)\n", p, m,
           1e3 * median(t, reps), makespan);
    free(t);
    vp_cost_model_free(cm);
    vp_block_free(b);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 21;
    if (reps < 1)
        reps = 1;
    vp_costs costs = vp_costs_default();
    costs.f = 18.522;
    costs.b = 18.086;
    costs.w = 9.337;
    costs.c = 0.601;
    vp_memcfg mem = vp_memcfg_default();
    mem.kind = VP_MEM_ZB;
    mem.zb_ratio = 0.366;
    printf("bench_zb: median of %d runs; 1.5B costs, memory model zb:0.366\n", reps);
    const char *fams[] = {"zb-1p", "zb-2p", "zb-v", "zb-h1", "zb-h2"};
    int pm[][2] = {{16, 64}, {64, 512}};
    for (int k = 0; k < 2; k++)
        for (int f = 0; f < 5; f++)
            bench_family(fams[f], pm[k][0], pm[k][1], &costs, &mem, k ? (reps + 4) / 5 : reps);
    bench_block(16, 64, reps);
    bench_block(64, 512, (reps + 4) / 5);
    return 0;
}
