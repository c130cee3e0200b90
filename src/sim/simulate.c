/* Simulator: eager replay for times, order replay for memory, and the metrics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "schedule/replay.h"
#include "vpipe/sim.h"

void vp_sim_free(vp_sim *sim) {
    if (!sim)
        return;
    for (int d = 0; d < sim->p; d++) {
        if (sim->start)
            free(sim->start[d]);
        if (sim->end)
            free(sim->end[d]);
        if (sim->mem_after)
            free(sim->mem_after[d]);
    }
    free(sim->start);
    free(sim->end);
    free(sim->mem_after);
    free(sim->dev_first);
    free(sim->dev_last);
    free(sim->dev_busy);
    free(sim->peak);
    free(sim->peak_bytes);
    free(sim);
}

/* Replays device d's order: peak (and memory after each op when after != NULL), or NaN
 * when a level is not finite (a non-finite level stays so to the end). */
static double device_peak(const vp_schedule *s, const vp_cost_model *cm, int d, int bytes,
                          double *after) {
    double cur = 0.0, peak = 0.0;
    for (int k = 0; k < s->dev[d].n; k++) {
        double up, down;
        vp_cost_model_op_memory(cm, &s->dev[d].ops[k], bytes, &up, &down);
        cur += up;
        if (cur > peak)
            peak = cur;
        cur -= down;
        if (after)
            after[k] = cur;
    }
    return isfinite(cur) ? peak : NAN;
}

void vp_memory_peaks(const vp_schedule *s, const vp_cost_model *cm, double *peak) {
    VP_ASSERT(cm->S == s->S && cm->p == s->p);
    for (int d = 0; d < s->p; d++)
        peak[d] = device_peak(s, cm, d, 0, NULL);
}

static double op_time(const void *ctx, const vp_op *op) {
    return vp_cost_model_op_time(ctx, op);
}

static vp_sim *sim_alloc(const vp_schedule *s, int bytes) {
    vp_sim *sim = vp__calloc(1, sizeof *sim);
    if (!sim)
        return NULL;
    size_t p = (size_t)s->p;
    sim->p = s->p;
    sim->start = vp__calloc(p, sizeof(double *));
    sim->end = vp__calloc(p, sizeof(double *));
    sim->mem_after = vp__calloc(p, sizeof(double *));
    sim->dev_first = vp__calloc(p, sizeof(double));
    sim->dev_last = vp__calloc(p, sizeof(double));
    sim->dev_busy = vp__calloc(p, sizeof(double));
    sim->peak = vp__calloc(p, sizeof(double));
    if (bytes)
        sim->peak_bytes = vp__calloc(p, sizeof(double));
    int ok = sim->start && sim->end && sim->mem_after && sim->dev_first && sim->dev_last &&
             sim->dev_busy && sim->peak && (!bytes || sim->peak_bytes);
    for (int d = 0; ok && d < s->p; d++) {
        size_t n = (size_t)s->dev[d].n;
        sim->start[d] = vp__calloc(n, sizeof(double));
        sim->end[d] = vp__calloc(n, sizeof(double));
        sim->mem_after[d] = vp__calloc(n, sizeof(double));
        ok = sim->start[d] && sim->end[d] && sim->mem_after[d];
    }
    if (!ok) {
        vp_sim_free(sim);
        return NULL;
    }
    return sim;
}

vp_status vp_vocab_place(const vp_schedule *s, const vp_cost_model *cm, vp_schedule **out,
                         vp_error *err) {
    *out = NULL;
    if (cm->S != s->S || cm->p != s->p)
        return vp__fail(err, VP_EINVAL, "cost model has %d stages on %d devices, schedule %d on %d",
                        cm->S, cm->p, s->S, s->p);
    return vp__schedule_vocab(s, op_time, cm, cm->c, out, err);
}

vp_status vp_simulate(const vp_schedule *s, const vp_cost_model *cm, vp_sim **out, vp_error *err) {
    *out = NULL;
    if (cm->S != s->S || cm->p != s->p)
        return vp__fail(err, VP_EINVAL, "cost model has %d stages on %d devices, schedule %d on %d",
                        cm->S, cm->p, s->S, s->p);
    vp_sim *sim = sim_alloc(s, cm->has_bytes);
    if (!sim)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = vp__replay(s, op_time, cm, cm->c, sim->start, sim->end, err);
    if (rc != VP_OK) {
        vp_sim_free(sim);
        return rc;
    }
    double busy_sum = 0.0;
    for (int d = 0; d < s->p; d++) {
        int n = s->dev[d].n;
        for (int k = 0; k < n; k++)
            sim->dev_busy[d] += sim->end[d][k] - sim->start[d][k];
        if (n) {
            sim->dev_first[d] = sim->start[d][0];
            sim->dev_last[d] = sim->end[d][n - 1];
        }
        busy_sum += sim->dev_busy[d];
        if (sim->dev_last[d] > sim->makespan)
            sim->makespan = sim->dev_last[d];
        sim->peak[d] = device_peak(s, cm, d, 0, sim->mem_after[d]);
        if (sim->peak_bytes)
            sim->peak_bytes[d] = device_peak(s, cm, d, 1, NULL);
        if (sim->peak[d] > sim->peak_max)
            sim->peak_max = sim->peak[d];
        if (!isfinite(sim->dev_busy[d]) || !isfinite(sim->peak[d]) ||
            (sim->peak_bytes && !isfinite(sim->peak_bytes[d]))) {
            vp_sim_free(sim);
            return vp__fail(err, VP_EINVAL,
                            "device %d's simulated times or memory are not finite: the cost "
                            "model holds a cost that is infinite, NaN or too large (each at "
                            "most %g)",
                            d, VP_COST_MAX);
        }
    }
    double mean_busy = busy_sum / s->p, longest = vp_sim_longest_span(sim);
    sim->bubble = longest > 0 ? 1.0 - mean_busy / longest : 0.0;
    sim->bubble_makespan = sim->makespan > 0 ? 1.0 - mean_busy / sim->makespan : 0.0;
    *out = sim;
    return VP_OK;
}

double vp_sim_longest_span(const vp_sim *sim) {
    double longest = 0.0;
    for (int d = 0; d < sim->p; d++)
        if (sim->dev_last[d] - sim->dev_first[d] > longest)
            longest = sim->dev_last[d] - sim->dev_first[d];
    return longest;
}
