/* Real-model pricing: its speed, and its figures beside the published anchors.
 * usage: bench_price [repeats]   (default 11; times are medians over the repeats)
 *
 * 1. Speed: pricing every family (probe build, layout, build with the real costs,
 *    simulation, itemised memory) for llama3-70b on h100-80gb at p = 16, m = 64, sequence
 *    8192, microbatch 1 (TP 1, and TP 8 with SP, FlashAttention and selective recompute),
 *    and the layout alone (what a planner checks before building a schedule).
 * 2. Zero Bubble Table 4 from its Table 6 pass times: samples/s per GPU and peak GB beside
 *    the published figures; Table 6 against the analytic pass times (A100 preset).
 * 3. Controllable Memory, pure PP at sequence 1024: activation GB per family beside the
 *    published ranges. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vpipe/price.h"

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
    fprintf(stderr, "bench_price: %s: %s\n", what, err->message);
    exit(1);
}

static vp_price_result *price(const vp_price_setup *su, const char *family, int p, int m) {
    vp_spec spec = vp_spec_make(p, m);
    vp_price_result *r = NULL;
    vp_error err = {0};
    if (vp_price_family(su, family, &spec, &r, NULL, &err) != VP_OK)
        die(family, &err);
    return r;
}

#define GIB 1073741824.0

static void speed(const char *label, const vp_price_setup *su, int reps) {
    int n = vp_family_count(), p = 16, m = 64;
    double *all = calloc((size_t)reps, sizeof *all),
           *each = calloc((size_t)(reps * n), sizeof *each);
    printf("\n%s: %s on %s, p=%d m=%d seq %d mbs %d tp %d\n", label, su->arch->name, su->gpu->name,
           p, m, su->train->seq, su->train->mbs, su->train->tp);
    printf("%-12s %9s %9s %7s %7s %9s %9s %5s\n", "family", "price ms", "step s", "mfu", "bubble",
           "max GiB", "rank0 GiB", "fits");
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        for (int f = 0; f < n; f++) {
            double t1 = now_s();
            vp_price_result *res = price(su, vp_family_at(f)->name, p, m);
            each[f * reps + r] = now_s() - t1;
            if (r == reps - 1)
                printf("%-12s %9.2f %9.3f %6.1f%% %6.1f%% %9.1f %9.1f %5s\n", res->family,
                       1e3 * median(&each[f * reps], reps), res->step_time_s, 100 * res->mfu,
                       100 * res->bubble, res->memory_max_bytes / GIB, res->memory[0].total / GIB,
                       res->fits ? "yes" : "no");
            vp_price_result_free(res);
        }
        all[r] = now_s() - t0;
    }
    printf("every family priced in %.1f ms (median of %d)\n", 1e3 * median(all, reps), reps);
    vp_schedule *shape = vp_schedule_new("1f1b", p, p, m, VP_PLACE_SINGLE, NULL);
    int inner = 1000;
    double t0 = now_s();
    for (int k = 0; k < inner; k++) {
        vp_price_layout *lay = NULL;
        vp_error err = {0};
        if (vp_price_layout_new(su, shape, &lay, &err) != VP_OK)
            die("layout", &err);
        vp_price_layout_free(lay);
    }
    printf("layout alone (states per rank, stage costs): %.1f us\n", 1e6 * (now_s() - t0) / inner);
    vp_schedule_free(shape);
    free(all);
    free(each);
}

static void zero_bubble(void) {
    const struct {
        const char *model;
        int mbs;
        double f, b, w, c;
        double rate[3][3], gb[3];
    } rows[] = {
        {"zb-1.5b",
         6,
         18.522,
         18.086,
         9.337,
         0.601,
         {{11.8, 12.5, 13.6}, {12.9, 13.4, 14.2}, {14.5, 14.8, 14.9}},
         {30, 32, 59}},
        {"zb-6.2b",
         3,
         29.718,
         29.444,
         19.927,
         0.527,
         {{3.50, 3.70, 4.03}, {3.88, 4.00, 4.20}, {4.32, 4.35, 4.39}},
         {39, 42, 70}},
    };
    const char *families[] = {"1f1b", "zb-1p", "zb-2p"};
    const int ms[] = {24, 32, 64};
    vp_gpu g;
    vp_gpu_preset("a100-80gb", &g, NULL);
    printf("\nZero Bubble Table 4 from Table 6 costs (p=8, seq 1024, split k*p-2, no reserve)\n");
    printf("%-8s %-6s %4s %9s %9s %7s %8s %8s %7s\n", "model", "family", "m", "samples/s",
           "published", "off", "peak GB", "published", "off");
    for (int i = 0; i < 2; i++) {
        vp_arch a;
        vp_arch_preset(rows[i].model, &a, NULL);
        vp_train t = vp_train_default(&a);
        t.seq = 1024;
        t.mbs = rows[i].mbs;
        t.reserve_bytes = 0;
        vp_costs k = vp_costs_default();
        k.f = rows[i].f, k.b = rows[i].b, k.w = rows[i].w, k.c = rows[i].c;
        vp_price_setup su = {
            .arch = &a, .gpu = &g, .train = &t, .split = VP_SPLIT_EVEN, .measured = &k};
        for (int f = 0; f < 3; f++)
            for (int j = 0; j < 3; j++) {
                vp_price_result *r = price(&su, families[f], 8, ms[j]);
                double rate = r->samples_per_s_per_gpu, gb = r->memory_max_bytes / 1e9;
                printf("%-8s %-6s %4d %9.2f %9.2f %+6.1f%% %8.1f %8.0f %+6.1f%%\n", a.name,
                       families[f], ms[j], rate, rows[i].rate[f][j],
                       100 * (rate / rows[i].rate[f][j] - 1), gb, rows[i].gb[f],
                       100 * (gb / rows[i].gb[f] - 1));
                vp_price_result_free(r);
            }
        su.measured = NULL;
        vp_price_result *r = price(&su, "1f1b", 8, 24);
        const vp_price_stage *st = &r->stage[1];
        printf("%s analytic at %.0f%% of A100 peak, middle stage (%d layers): F %.3f B %.3f W "
               "%.3f hop %.3f ms; Table 6: %.3f / %.3f / %.3f / %.3f (off %+.0f%% %+.0f%% %+.0f%% "
               "%+.0f%%)\n",
               a.name, 100 * g.efficiency, st->l1 - st->l0, st->f_ms, st->b_ms, st->w_ms, r->hop_ms,
               k.f, k.b, k.w, k.c, 100 * (st->f_ms / k.f - 1), 100 * (st->b_ms / k.b - 1),
               100 * (st->w_ms / k.w - 1), 100 * (r->hop_ms / k.c - 1));
        vp_price_result_free(r);
    }
}

static void controllable_memory(void) {
    const char *models[] = {"cm-9.6b", "cm-21b", "cm-38.5b"};
    const int ps[] = {16, 24, 32}, mbs[] = {4, 2, 1};
    const struct {
        const char *family;
        vp_recompute rc;
        const char *range;
    } cols[] = {{"v-min", VP_RECOMPUTE_NONE, "14-19"},
                {"v-half", VP_RECOMPUTE_NONE, "19-28"},
                {"1f1b", VP_RECOMPUTE_NONE, "35-56"},
                {"v-zb", VP_RECOMPUTE_NONE, "35-56"},
                {"1f1b", VP_RECOMPUTE_FULL, "~1"}};
    vp_gpu g;
    vp_gpu_preset("a100-80gb", &g, NULL);
    printf("\nControllable Memory, pure PP, seq 1024, m = 4p: activation GB per GPU (max rank)\n");
    printf("%-9s %4s %8s %8s %8s %8s %8s\n", "model", "p", "v-min", "v-half", "1f1b", "v-zb",
           "1f1b-R");
    printf("%-9s %4s %8s %8s %8s %8s %8s\n", "published", "", "14-19", "19-28", "35-56", "35-56",
           "~1");
    for (int i = 0; i < 3; i++) {
        vp_arch a;
        vp_arch_preset(models[i], &a, NULL);
        printf("%-9s %4d", a.name, ps[i]);
        for (int k = 0; k < 5; k++) {
            vp_train t = vp_train_default(&a);
            t.seq = 1024;
            t.mbs = mbs[i];
            t.recompute = cols[k].rc;
            vp_price_setup su = {.arch = &a, .gpu = &g, .train = &t, .split = VP_SPLIT_EVEN};
            vp_price_result *r = price(&su, cols[k].family, ps[i], 4 * ps[i]);
            double most = 0;
            for (int d = 0; d < r->p; d++)
                most = r->memory[d].activations > most ? r->memory[d].activations : most;
            printf(" %8.1f", most / 1e9);
            vp_price_result_free(r);
        }
        printf("\n");
    }
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 11;
    reps = reps < 1 ? 1 : reps;
    vp_arch a;
    vp_gpu g;
    vp_arch_preset("llama3-70b", &a, NULL);
    vp_gpu_preset("h100-80gb", &g, NULL);
    vp_train t = vp_train_default(&a);
    t.seq = 8192;
    vp_price_setup su = {.arch = &a, .gpu = &g, .train = &t};
    speed("speed (TP 1)", &su, reps);
    t.tp = 8;
    t.sp = t.flash = true;
    t.recompute = VP_RECOMPUTE_SELECTIVE;
    speed("speed (TP 8, SP, FlashAttention, selective recompute)", &su, reps);
    zero_bubble();
    controllable_memory();
    return 0;
}
