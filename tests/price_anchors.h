/* Published figures the pricing reproduces (design/models.md §6), shared by the price
 * tests and bench_price. Header-only data. */
#ifndef VPIPE_PRICE_ANCHORS_H
#define VPIPE_PRICE_ANCHORS_H

#include "vpipe/price.h"

/* Zero Bubble paper (A100 80 GB, p = 8, sequence 1024): Table 6 pass times per stage (ms)
 * and Table 4 samples/s per GPU and peak memory (GB) of 1F1B, ZB-1P and ZB-2P at
 * m = 24, 32, 64. */
typedef struct zb_anchor {
    const char *model;
    int mbs;
    double f, b, w, c;
    double rate[3][3];
    double gb[3];
} zb_anchor;

static const zb_anchor zb_anchors[2] = {
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
static const char *const zb_families[3] = {"1f1b", "zb-1p", "zb-2p"};
static const int zb_ms[3] = {24, 32, 64};

/* Controllable Memory paper, pure PP at sequence 1024: its models with p and microbatch
 * size, and the activation GB per GPU of each schedule (approximate ranges). */
static const char *const cm_models[3] = {"cm-9.6b", "cm-21b", "cm-38.5b"};
static const int cm_ps[3] = {16, 24, 32}, cm_mbs[3] = {4, 2, 1};

typedef struct cm_range {
    const char *family;
    vp_recompute recompute;
    double lo, hi; /* GB */
} cm_range;

static const cm_range cm_ranges[5] = {{"v-min", VP_RECOMPUTE_NONE, 14, 19},
                                      {"v-half", VP_RECOMPUTE_NONE, 19, 28},
                                      {"1f1b", VP_RECOMPUTE_NONE, 35, 56},
                                      {"v-zb", VP_RECOMPUTE_NONE, 35, 56},
                                      {"1f1b", VP_RECOMPUTE_FULL, 0.5, 1.5}};

/* The largest allocated bytes over the ranks of a result (what PyTorch's peak allocation
 * reports). */
static inline double most_allocated(const vp_price_result *r) {
    double most = 0;
    for (int d = 0; d < r->p; d++)
        most = r->memory[d].allocated > most ? r->memory[d].allocated : most;
    return most;
}

/* The largest activation peak over the ranks of a result. */
static inline double most_activations(const vp_price_result *r) {
    double most = 0;
    for (int d = 0; d < r->p; d++)
        most = r->memory[d].activations > most ? r->memory[d].activations : most;
    return most;
}

#endif
