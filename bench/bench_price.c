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

#include "../tests/price_anchors.h"
#include "base/internal.h"
#include "vpipe/price.h"

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
           p, m, su->work->seq, su->work->mbs, su->work->tp);
    printf("%-12s %9s %9s %7s %7s %9s %9s %5s\n", "family", "price ms", "step s", "mfu", "bubble",
           "max GiB", "rank0 GiB", "fits");
    for (int r = 0; r < reps; r++) {
        double t0 = vp__now_ms();
        for (int f = 0; f < n; f++) {
            double t1 = vp__now_ms();
            vp_price_result *res = price(su, vp_family_at(f)->name, p, m);
            each[f * reps + r] = vp__now_ms() - t1;
            if (r == reps - 1)
                printf("%-12s %9.2f %9.3f %6.1f%% %6.1f%% %9.1f %9.1f %5s\n", res->family,
                       vp__median(&each[f * reps], reps), res->step_time_s, 100 * res->mfu,
                       100 * res->bubble, res->memory_max_bytes / GIB, res->memory[0].total / GIB,
                       res->fits ? "yes" : "no");
            vp_price_result_free(res);
        }
        all[r] = vp__now_ms() - t0;
    }
    printf("every family priced in %.1f ms (median of %d)\n", vp__median(all, reps), reps);
    vp_schedule *shape = NULL;
    if (vp_schedule_new("1f1b", (vp_shape){p, p, m, VP_PLACE_SINGLE}, &shape, NULL) != VP_OK)
        return;
    int inner = 1000;
    double t0 = vp__now_ms();
    for (int k = 0; k < inner; k++) {
        vp_price_layout *lay = NULL;
        vp_error err = {0};
        if (vp_price_layout_new(su, shape, &lay, &err) != VP_OK)
            die("layout", &err);
        vp_price_layout_free(lay);
    }
    printf("layout alone (states per rank, stage costs): %.1f us\n",
           1e3 * (vp__now_ms() - t0) / inner);
    vp_schedule_free(shape);
    free(all);
    free(each);
}

static void zero_bubble(void) {
    vp_gpu g;
    vp_gpu_preset("a100-80gb", &g, NULL);
    printf("\nZero Bubble Table 4 from Table 6 costs (p=8, seq 1024, split k*p-2, no reserve)\n");
    printf("%-8s %-6s %4s %9s %9s %7s %8s %8s %7s\n", "model", "family", "m", "samples/s",
           "published", "off", "peak GB", "published", "off");
    for (int i = 0; i < 2; i++) {
        const zb_anchor *z = &zb_anchors[i];
        vp_arch a;
        vp_arch_preset(z->model, &a, NULL);
        vp_workload t = vp_workload_default(&a);
        t.seq = 1024;
        t.mbs = z->mbs;
        t.reserve_bytes = 0;
        vp_costs k = vp_costs_default();
        k.f = z->f, k.b = z->b, k.w = z->w, k.c = z->c;
        vp_price_setup su = {
            .arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN, .measured = &k};
        for (int f = 0; f < 3; f++)
            for (int j = 0; j < 3; j++) {
                vp_price_result *r = price(&su, zb_families[f], 8, zb_ms[j]);
                double rate = r->samples_per_s_per_gpu, gb = r->memory_max_bytes / 1e9;
                printf("%-8s %-6s %4d %9.2f %9.2f %+6.1f%% %8.1f %8.0f %+6.1f%%\n", a.name,
                       zb_families[f], zb_ms[j], rate, z->rate[f][j],
                       100 * (rate / z->rate[f][j] - 1), gb, z->gb[f], 100 * (gb / z->gb[f] - 1));
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
    vp_gpu g;
    vp_gpu_preset("a100-80gb", &g, NULL);
    printf("\nControllable Memory, pure PP, seq 1024, m = 4p: activation GB per GPU (max rank)\n");
    printf("%-9s %4s %8s %8s %8s %8s %8s\n", "model", "p", "v-min", "v-half", "1f1b", "v-zb",
           "1f1b-R");
    printf("%-9s %4s", "published", "");
    for (int k = 0; k < 5; k++)
        printf(" %3g-%-4g", cm_ranges[k].lo, cm_ranges[k].hi);
    printf("\n");
    for (int i = 0; i < 3; i++) {
        vp_arch a;
        vp_arch_preset(cm_models[i], &a, NULL);
        printf("%-9s %4d", a.name, cm_ps[i]);
        for (int k = 0; k < 5; k++) {
            vp_workload t = vp_workload_default(&a);
            t.seq = 1024;
            t.mbs = cm_mbs[i];
            t.recompute = cm_ranges[k].recompute;
            vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
            vp_price_result *r = price(&su, cm_ranges[k].family, cm_ps[i], 4 * cm_ps[i]);
            printf(" %8.1f", most_activations(r) / 1e9);
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
    vp_workload t = vp_workload_default(&a);
    t.seq = 8192;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t};
    speed("speed (TP 1)", &su, reps);
    t.tp = 8;
    t.sp = t.flash = true;
    t.recompute = VP_RECOMPUTE_SELECTIVE;
    speed("speed (TP 8, SP, FlashAttention, selective recompute)", &su, reps);
    zero_bubble();
    controllable_memory();
    return 0;
}
