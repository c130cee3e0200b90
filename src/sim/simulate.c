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
    double **per_op[] = {sim->start, sim->end, sim->mem_after, sim->copy_start, sim->copy_end};
    for (size_t i = 0; i < sizeof per_op / sizeof per_op[0]; i++) {
        for (int d = 0; per_op[i] && d < sim->p; d++)
            free(per_op[i][d]);
        free(per_op[i]);
    }
    free(sim->copy_busy);
    free(sim->stall);
    free(sim->host_peak);
    free(sim->host_peak_bytes);
    free(sim->offload_share);
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

void vp_memory_peaks(const vp_schedule *s, const vp_cost_model *cm, int bytes, double *peak) {
    VP_ASSERT(cm->S == s->S && cm->p == s->p);
    for (int d = 0; d < s->p; d++)
        peak[d] = device_peak(s, cm, d, bytes, NULL);
}

vp_status vp_memory_host_peaks(const vp_schedule *s, const vp_cost_model *cm, double *peak,
                               vp_error *err) {
    VP_ASSERT(cm->S == s->S);
    uint8_t *offloaded = NULL;
    vp_status rc = vp__offloaded(s, &offloaded, err);
    for (int d = 0; d < s->p; d++)
        peak[d] = rc == VP_OK ? vp__host_peak(s, offloaded, d, cm->off) : 0.0;
    free(offloaded);
    return rc;
}

static double op_time(const void *ctx, const vp_op *op) {
    return vp_cost_model_op_time(ctx, op);
}

/* Allocates n per-device arrays of the schedule's op counts into *out; 0 when out of
 * memory. */
static int alloc_per_op(const vp_schedule *s, double ***out) {
    *out = vp__calloc((size_t)s->p, sizeof(double *));
    for (int d = 0; *out && d < s->p; d++)
        if (!((*out)[d] = vp__calloc((size_t)s->dev[d].n, sizeof(double))))
            return 0;
    return *out != NULL;
}

/* The offload figures of sim (s offloads); 0 when out of memory. */
static int alloc_offload(vp_sim *sim, const vp_schedule *s, int bytes) {
    size_t p = (size_t)s->p;
    sim->copy_busy = vp__calloc(p, sizeof(double));
    sim->stall = vp__calloc(p, sizeof(double));
    sim->host_peak = vp__calloc(p, sizeof(double));
    sim->offload_share = vp__calloc(p, sizeof(double));
    if (bytes)
        sim->host_peak_bytes = vp__calloc(p, sizeof(double));
    int ok = alloc_per_op(s, &sim->copy_start);
    ok &= alloc_per_op(s, &sim->copy_end);
    return ok && sim->copy_busy && sim->stall && sim->host_peak && sim->offload_share &&
           (!bytes || sim->host_peak_bytes);
}

static vp_sim *sim_alloc(const vp_schedule *s, int bytes) {
    vp_sim *sim = vp__calloc(1, sizeof *sim);
    if (!sim)
        return NULL;
    size_t p = (size_t)s->p;
    sim->p = s->p;
    sim->dev_first = vp__calloc(p, sizeof(double));
    sim->dev_last = vp__calloc(p, sizeof(double));
    sim->dev_busy = vp__calloc(p, sizeof(double));
    sim->peak = vp__calloc(p, sizeof(double));
    if (bytes)
        sim->peak_bytes = vp__calloc(p, sizeof(double));
    int ok = sim->dev_first && sim->dev_last && sim->dev_busy && sim->peak &&
             (!bytes || sim->peak_bytes);
    ok &= alloc_per_op(s, &sim->start);
    ok &= alloc_per_op(s, &sim->end);
    ok &= alloc_per_op(s, &sim->mem_after);
    if (ok && vp_schedule_offloads(s))
        ok = alloc_offload(sim, s, bytes);
    if (!ok) {
        vp_sim_free(sim);
        return NULL;
    }
    return sim;
}

/* Fills sim's offload shares: per device, the units its O ops move over the units its
 * forwards keep. */
static void fill_shares(vp_sim *sim, const vp_schedule *s, const vp_cost_model *cm) {
    for (int d = 0; d < s->p; d++) {
        double kept = 0, sent = 0;
        for (int k = 0; k < s->dev[d].n; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            if (op->kind == VP_OP_F || op->kind == VP_OP_FB)
                kept += cm->hold[op->stage];
            else if (op->kind == VP_OP_O)
                sent += cm->off[op->stage];
        }
        sim->offload_share[d] = kept > 0 ? sent / kept : 0.0;
    }
}

/* Fills sim's host peaks and offload shares (s offloads); VP_ENOMEM. */
static vp_status fill_host(vp_sim *sim, const vp_schedule *s, const vp_cost_model *cm,
                           vp_error *err) {
    fill_shares(sim, s, cm);
    uint8_t *offloaded = NULL;
    vp_status rc = vp__offloaded(s, &offloaded, err);
    for (int d = 0; offloaded && d < s->p; d++) {
        sim->host_peak[d] = vp__host_peak(s, offloaded, d, cm->off);
        if (sim->host_peak_bytes)
            sim->host_peak_bytes[d] = vp__host_peak(s, offloaded, d, cm->off_bytes);
    }
    free(offloaded);
    return rc;
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
    vp__replay_out ro = {.start = sim->start,
                         .end = sim->end,
                         .copy_start = sim->copy_start,
                         .copy_end = sim->copy_end,
                         .copy_busy = sim->copy_busy,
                         .stall = sim->stall};
    vp_status rc = vp__replay_with(s, op_time, cm, cm->c, &ro, err);
    if (rc == VP_OK && sim->host_peak)
        rc = fill_host(sim, s, cm, err);
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
            (sim->peak_bytes && !isfinite(sim->peak_bytes[d])) ||
            (sim->host_peak && !isfinite(sim->host_peak[d] + sim->stall[d])) ||
            (sim->host_peak_bytes && !isfinite(sim->host_peak_bytes[d]))) {
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
