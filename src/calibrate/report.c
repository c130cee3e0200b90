/* A calibration in words and as JSON. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "calibrate/calibrate_internal.h"

#define GIB 1073741824.0

static const char *const what[VP_FIT_COUNT] = {
    "matrix-multiply efficiency", "memory-bound traffic (bytes/byte)",
    "communication efficiency",   "per-layer overhead, us",
    "per-chunk overhead, us",     "attention efficiency (F)",
    "memory per GPU, GiB",        "memory per allocated byte"};

/* What a constant that was not pinned down governs, for the warning. */
static const char *const governs[VP_FIT_COUNT] = {"larger or smaller matrix multiplies",
                                                  "other activation sizes",
                                                  "more data- or tensor-parallel traffic",
                                                  "other layer counts per stage",
                                                  "more pipeline chunks",
                                                  "other sequence lengths",
                                                  "other GPU counts",
                                                  "other activation sizes"};

/* "id (line N)" or "line N" of a run. */
static const char *label(const vp_run *r, char *buf, size_t size) {
    if (r->id[0])
        snprintf(buf, size, "%.24s", r->id);
    else
        snprintf(buf, size, "line %d", r->line);
    return buf;
}

static void constants_text(vp__buf *b, const vp_calibration *c) {
    vp__buf_printf(b, "%-36s %10s %10s %9s\n", "constant", "base", "fitted", "+/-");
    for (int k = 0; k < VP_FIT_COUNT; k++) {
        if (!(c->asked & (1u << k)))
            continue;
        bool pinned = c->pinned & (1u << k);
        vp__buf_printf(b, "%-36s %10.4g %10.4g %9.2g  %s\n", what[k], c->base_value[k], c->value[k],
                       c->sd[k],
                       pinned ? "pinned" : "NOT pinned: the runs cannot tell it from others");
    }
}

static void runs_text(vp__buf *b, const vp_calibration *c, const vp_run_set *set) {
    vp__buf_printf(b, "\n%-24s %5s %-34s %11s %11s %8s %9s\n", "run", "line", "configuration",
                   "measured", "fitted", "error", "left out");
    for (int i = 0; i < c->n; i++) {
        const vp_calibration_run *r = &c->runs[i];
        const vp_run *run = &set->runs[r->run];
        char name[32], conf[64];
        snprintf(conf, sizeof conf, "TP %d PP %d DP %d, gbs %d", run->tp, run->pp, run->dp,
                 run->gbs);
        vp__buf_printf(b, "%-24s %5d %-34s %11.5g %11.5g %+7.1f%% %+8.1f%%\n",
                       label(run, name, sizeof name), run->line, conf, r->measured, r->fitted,
                       100 * r->error, 100 * r->loo_error);
        if (r->has_memory)
            vp__buf_printf(b, "%-24s %5s %-34s %9.2f G %9.2f G %+7.1f%% %+8.1f%%\n", "", "",
                           "  peak memory", r->measured_memory / GIB, r->fitted_memory / GIB,
                           100 * r->memory_error, 100 * r->loo_memory_error);
    }
}

/* The constants asked that the runs could not pin down, and what depends on them. */
static void warning_text(vp__buf *b, const vp_calibration *c) {
    unsigned loose = c->asked & ~c->pinned;
    if (!loose) {
        vp__buf_printf(b, "Every constant asked is pinned down by these runs.\n");
        return;
    }
    vp__buf_printf(b, "Not pinned down by these runs (each value is a compromise between the "
                      "base's and the runs, not a measurement): ");
    for (int k = 0, first = 1; k < VP_FIT_COUNT; k++)
        if (loose & (1u << k)) {
            vp__buf_printf(b, "%s%s (extrapolated for %s)", first ? "" : "; ", what[k], governs[k]);
            first = 0;
        }
    vp__buf_printf(b, ". Add runs that vary them, or expect larger errors there than the "
                      "leave-one-out figures.\n");
}

char *vp_calibrate_text(const vp_calibration *c, const vp_run_set *runs) {
    vp__buf b = {0};
    vp__buf_printf(&b, "calibrated %s from %s on %d run%s of %s (%d iterations, %.2f s)\n\n",
                   c->gpu.name, c->base.name, c->n, c->n == 1 ? "" : "s", runs->name, c->iterations,
                   c->elapsed_s);
    constants_text(&b, c);
    runs_text(&b, c, runs);
    if (c->n == 1) /* nothing else to predict it from */
        vp__buf_printf(&b,
                       "\nthroughput (tokens/s per GPU): fitted within %.1f%%; the base alone "
                       "predicts it within %.1f%% (a second run gives a leave-one-out check)\n",
                       100 * c->fit_mean, 100 * c->loo_mean);
    else
        vp__buf_printf(&b,
                       "\nthroughput (tokens/s per GPU): fitted within %.1f%% on average (worst "
                       "%.1f%%); each run predicted from the others (leave-one-out): mean %.1f%%, "
                       "median %.1f%%, worst %.1f%%\n",
                       100 * c->fit_mean, 100 * c->fit_worst, 100 * c->loo_mean,
                       100 * c->loo_median, 100 * c->loo_worst);
    if (c->memory_runs)
        vp__buf_printf(&b,
                       "memory: %d peaks, fitted within %.1f%% on average; left out: mean "
                       "%.1f%%, worst %.1f%%\n",
                       c->memory_runs, 100 * c->memory_fit_mean, 100 * c->memory_loo_mean,
                       100 * c->memory_loo_worst);
    warning_text(&b, c);
    return vp__buf_take(&b);
}

char *vp_calibrate_json(const vp_calibration *c, const vp_run_set *runs) {
    char *gpu_text = vp_gpu_json(&c->gpu);
    json_t *o = json_object(), *gpu = gpu_text ? json_loads(gpu_text, 0, NULL) : NULL;
    json_t *constants = json_array(), *rows = json_array(), *loose = json_array();
    free(gpu_text);
    if (!o || !gpu || !constants || !rows || !loose) {
        json_decref(o);
        json_decref(gpu);
        json_decref(constants);
        json_decref(rows);
        json_decref(loose);
        return NULL;
    }
    json_object_set_new(o, "gpu", gpu);
    for (int k = 0; k < VP_FIT_COUNT; k++) {
        bool asked = c->asked & (1u << k), pinned = c->pinned & (1u << k);
        json_array_append_new(constants, json_pack("{s:s,s:s,s:f,s:f,s:f,s:b,s:b}", "name",
                                                   vp_calibrate_constant_name(k), "what", what[k],
                                                   "base", c->base_value[k], "fitted", c->value[k],
                                                   "sd", isfinite(c->sd[k]) ? c->sd[k] : -1.0,
                                                   "asked", asked, "pinned", pinned));
        if (asked && !pinned)
            json_array_append_new(loose, json_string(vp_calibrate_constant_name(k)));
    }
    json_object_set_new(o, "constants", constants);
    for (int i = 0; i < c->n; i++) {
        const vp_calibration_run *r = &c->runs[i];
        const vp_run *run = &runs->runs[r->run];
        json_t *row = json_pack("{s:s,s:i,s:f,s:f,s:f,s:f}", "id", run->id, "line", run->line,
                                "measured", r->measured, "fitted", r->fitted, "error", r->error,
                                "loo_error", r->loo_error);
        if (r->has_memory) {
            json_object_set_new(row, "measured_memory_gib", json_real(r->measured_memory / GIB));
            json_object_set_new(row, "memory_gib", json_real(r->fitted_memory / GIB));
            json_object_set_new(row, "memory_error", json_real(r->memory_error));
            json_object_set_new(row, "loo_memory_error", json_real(r->loo_memory_error));
        }
        json_array_append_new(rows, row);
    }
    json_object_set_new(o, "runs", rows);
    const char *names[] = {"fit_mean",  "fit_worst",       "loo_mean",        "loo_median",
                           "loo_worst", "memory_fit_mean", "memory_loo_mean", "memory_loo_worst"};
    double values[] = {c->fit_mean,  c->fit_worst,       c->loo_mean,        c->loo_median,
                       c->loo_worst, c->memory_fit_mean, c->memory_loo_mean, c->memory_loo_worst};
    for (int k = 0; k < 8; k++)
        json_object_set_new(o, names[k], json_real(values[k]));
    json_object_set_new(o, "memory_runs", json_integer(c->memory_runs));
    json_object_set_new(o, "not_pinned", loose);
    json_object_set_new(o, "iterations", json_integer(c->iterations));
    json_object_set_new(o, "elapsed_s", json_real(c->elapsed_s));
    char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(o);
    return text;
}
