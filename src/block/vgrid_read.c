/* Reading a built V slot grid: the schedule it stands for, and its replay under real costs
 * (block.h, "V blocks"; the engine is vgrid.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block/vgrid_internal.h"

vp_status vp__vgrid_schedule(vp_vgrid *w, int bw, const char *family, vp_schedule **out,
                             vp_error *err) {
    int p = w->p, len = cur_grid(w)->len + PERIOD * w->extra;
    vp_schedule *s = NULL;
    vp_status rc = vp_schedule_new(family, (vp_shape){p, 2 * p, w->m, VP_PLACE_V}, &s, err);
    if (rc != VP_OK)
        return rc;
    for (int d = 0; d < p && rc == VP_OK; d++) {
        vp_oplist *l = &s->dev[d];
        if (vp__grow((void **)&l->ops, &l->cap, PERIOD * w->m, sizeof *l->ops) != 0) {
            rc = VP_ENOMEM;
            break;
        }
        int head = 0, tail = 0; /* FIFO of (stage, mb) in w->wq */
        for (int v = 0; v < len && rc == VP_OK; v++) {
            int mb, type = virtual_cell(w, d, v, &mb);
            if (type < 0 || (bw && type == T_W))
                continue;
            vp_op op = {.kind = VP_OP_W};
            if (type == T_W) {
                if (head == tail || l->n == l->cap) {
                    rc = VP_EINVAL;
                    break;
                }
                op.stage = w->wq[2 * head];
                op.mb = w->wq[2 * head + 1];
                head++;
            } else {
                op.kind = type <= T_F1 ? VP_OP_F : bw ? VP_OP_BW : VP_OP_B;
                op.stage = type_stage(p, d, type);
                op.mb = mb;
                if (op.kind == VP_OP_B) {
                    w->wq[2 * tail] = op.stage;
                    w->wq[2 * tail + 1] = op.mb;
                    tail++;
                }
            }
            if (l->n == l->cap)
                rc = VP_EINVAL;
            else
                l->ops[l->n++] = op;
        }
    }
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return vp__fail(err, rc,
                        rc == VP_ENOMEM ? "out of memory" : "V engine produced an unbalanced grid");
    }
    *out = s;
    return VP_OK;
}

/* Index of (device, type, microbatch) in w->end, microbatch-major like at_index (the
 * microbatches run to m). */
static size_t end_index(const vp_vgrid *w, int d, int type, int mb) {
    return ((size_t)mb * (size_t)w->p + (size_t)d) * 4 + (size_t)type;
}

/* One device's running figures in the replay. */
typedef struct dev_run {
    double free, first, busy, left; /* left: work still ahead of the device */
    double mem, peak, mem_bytes, peak_bytes;
    int head, tail; /* FIFO of backward chunks awaiting their W, in w->wchunk */
} dev_run;

/* Stage of the pass at device d's cell of type `type` (a W: its B's, from the FIFO; -1
 * when no B awaits it). */
static int run_stage(vp_vgrid *w, dev_run *r, int d, int type) {
    int8_t *fifo = w->wchunk + (size_t)d * 2 * w->spare;
    if (type == T_W)
        return r->head < r->tail ? type_stage(w->p, d, fifo[r->head++] ? T_F1 : T_F0) : -1;
    if ((type == T_B1 || type == T_B0) && !w->bw)
        fifo[r->tail++] = type == T_B1;
    return type_stage(w->p, d, type);
}

/* Times one pass under cm (as vp_simulate would) into r; returns its end, or -1 when a
 * dependency has not run yet (the grid does not replay in slot order). */
static double run_pass(vp_vgrid *w, const vp_cost_model *cm, dev_run *r, int d, int type, int mb) {
    int stage = run_stage(w, r, d, type), pd, pt;
    if (stage < 0)
        return -1;
    double start = r->free, dur = type <= T_F1  ? cm->f[stage]
                                  : type == T_W ? cm->w[stage]
                                  : w->bw       ? cm->b[stage] + cm->w[stage]
                                                : cm->b[stage];
    if (type != T_W && pred(w->p, d, type, &pd, &pt)) {
        double e = w->end[end_index(w, pd, pt, mb)];
        if (e < 0)
            return -1;
        e += pd == d ? 0 : cm->c;
        start = e > start ? e : start;
    }
    double end = start + dur, up = 0, down = 0, up_b = 0, down_b = 0;
    if (r->first < 0)
        r->first = start;
    r->busy += end - start;
    r->left -= dur;
    r->free = end;
    if (type != T_W)
        w->end[end_index(w, d, type, mb)] = end;
    if (type <= T_F1)
        up = cm->act[stage], up_b = cm->act_bytes ? cm->act_bytes[stage] : 0;
    else if (type == T_W)
        down = cm->keep[stage], down_b = cm->keep_bytes ? cm->keep_bytes[stage] : 0;
    else if (w->bw)
        down = cm->act[stage], down_b = cm->act_bytes ? cm->act_bytes[stage] : 0;
    else
        down = cm->act[stage] - cm->keep[stage],
        down_b = cm->act_bytes ? cm->act_bytes[stage] - cm->keep_bytes[stage] : 0;
    r->mem += up;
    r->peak = r->mem > r->peak ? r->mem : r->peak;
    r->mem -= down;
    r->mem_bytes += up_b;
    r->peak_bytes = r->mem_bytes > r->peak_bytes ? r->mem_bytes : r->peak_bytes;
    r->mem_bytes -= down_b;
    return end;
}

/* 1 when every time the replay adds up is a multiple of 2^-20 below 2^30, so sums are exact
 * and a replay shifted by whole periods gives the same doubles as one run through them. */
static int exact_costs(const vp_cost_model *cm, int m) {
    double total = 0, scale = 1048576.0;
    for (int s = 0; s < cm->S; s++) {
        double x[3] = {cm->f[s], cm->b[s], cm->w[s]};
        for (int i = 0; i < 3; i++) {
            if (x[i] * scale != floor(x[i] * scale))
                return 0;
            total += x[i];
        }
    }
    return cm->c * scale == floor(cm->c * scale) && (total + cm->S * cm->c) * (m + cm->S) < 1e9;
}

/* A device's figures at the end of a copy of the period, to compare with the next. */
typedef struct snapshot {
    dev_run run;
    int8_t pending[8]; /* the chunks of the backwards awaiting their W, oldest first */
} snapshot;

/* The replay's view of the inserted periods: per device and pass type, the microbatch the
 * period before the cut holds, and each device's figures at the end of the last copy. */
typedef struct periods {
    int on;        /* fast-forward possible: exact costs, one pass of each type per period */
    int *mb0;      /* [p][4] */
    snapshot *was; /* [p] */
} periods;

/* Microbatch of each (device, type) in the period before the cut; 0 when a device's period
 * does not hold exactly one pass of each type. */
static int period_microbatches(const vp_vgrid *w, int *mb0) {
    const grid *g = &w->g[w->cur];
    for (int d = 0; d < w->p; d++) {
        int seen[4] = {0};
        for (int c = w->cut - PERIOD; c < w->cut; c++) {
            int type = g->ty[CELL(g, d, c)];
            if (type >= 0 && type < T_W) {
                seen[type]++;
                mb0[d * 4 + type] = g->mb[CELL(g, d, c)];
            }
        }
        if (seen[0] != 1 || seen[1] != 1 || seen[2] != 1 || seen[3] != 1)
            return 0;
    }
    return 1;
}

/* 1 when device d's state at the end of a copy repeats s shifted by lambda in time: the
 * same memory, the same backwards awaiting their W, every figure and the end of each
 * pass of the copy (k) lambda after the previous copy's. Saves the state into s. */
static int repeats_device(const vp_vgrid *w, const dev_run *r, snapshot *s, const int *mb0, int d,
                          int k, double lambda) {
    const int8_t *fifo = w->wchunk + (size_t)d * 2 * w->spare;
    int n = r->tail - r->head, same = n == s->run.tail - s->run.head && n <= 8 &&
                                      r->free - s->run.free == lambda && r->mem == s->run.mem &&
                                      r->mem_bytes == s->run.mem_bytes;
    for (int i = 0; i < n && same; i++)
        same = fifo[r->head + i] == s->pending[i];
    for (int t = 0; t < 4 && same && k >= 2; t++) {
        int mb = mb0[d * 4 + t] + k;
        same = w->end[end_index(w, d, t, mb)] - w->end[end_index(w, d, t, mb - 1)] == lambda;
    }
    for (int i = 0; i < n && i < 8; i++)
        s->pending[i] = fifo[r->head + i];
    return same && k >= 2;
}

/* At the end of copy k of the period: when every device repeats its state at the end of
 * copy k-1 shifted by one time lambda (repeats_device), the copies that follow do too, so
 * r of them are skipped (all but the last three, whose ends later passes wait for) by
 * shifting each device's figures and the ends of the last three copies; returns r. */
static int fast_forward(vp_vgrid *w, dev_run *run, periods *pp, int k) {
    int p = w->p, r = w->extra - k - 3, same = 1;
    double lambda = run[0].free - pp->was[0].run.free;
    for (int d = 0; d < p; d++)
        same &= repeats_device(w, &run[d], &pp->was[d], pp->mb0, d, k, lambda);
    same &= r > 0;
    for (int d = 0; d < p; d++) {
        dev_run *now = &run[d], was = pp->was[d].run;
        pp->was[d].run = *now;
        if (!same)
            continue;
        now->free += r * lambda;
        now->busy += r * (now->busy - was.busy);
        now->left += r * (now->left - was.left);
        for (int t = 0; t < 4; t++)
            for (int j = k - 2; j <= k; j++) {
                int mb = pp->mb0[d * 4 + t] + j;
                w->end[end_index(w, d, t, mb + r)] = w->end[end_index(w, d, t, mb)] + r * lambda;
            }
    }
    return same ? r : 0;
}

/* Replays the current grid with its inserted periods in slot order (every dependency sits
 * in an earlier slot) under cm into out, one figure set per device in run; stops early
 * past limit. -1 when it does not replay. */
static int replay_grid(vp_vgrid *w, const vp_cost_model *cm, double limit, dev_run *run,
                       periods *pp, vp_vgrid_metrics *out) {
    int p = w->p, len = cur_grid(w)->len + PERIOD * w->extra;
    for (size_t i = 0; i < (size_t)p * 4 * (size_t)w->spare; i++)
        w->end[i] = -1;
    for (int d = 0; d < p; d++) {
        int s0 = type_stage(p, d, T_F0), s1 = type_stage(p, d, T_F1);
        run[d] = (dev_run){.first = -1};
        run[d].left =
            w->m * (cm->f[s0] + cm->b[s0] + cm->w[s0] + cm->f[s1] + cm->b[s1] + cm->w[s1]);
    }
    double slack = limit + 1e-9 * (1 + limit);
    *out = (vp_vgrid_metrics){.complete = 1};
    for (int v = 0; v < len; v++) {
        int k = pp->on && v >= w->cut ? (v - w->cut) / PERIOD : 0; /* copies done */
        if (k >= 1 && k <= w->extra && (v - w->cut) % PERIOD == 0)
            v += PERIOD * fast_forward(w, run, pp, k);
        for (int d = 0; d < p; d++) {
            int mb, type = virtual_cell(w, d, v, &mb);
            if (type < 0 || (w->bw && type == T_W))
                continue;
            double end = run_pass(w, cm, &run[d], d, type, mb);
            if (end < 0)
                return -1;
            if (limit > 0 && end - run[d].first + run[d].left > slack) {
                *out = (vp_vgrid_metrics){.span = end - run[d].first + run[d].left};
                return 0;
            }
        }
    }
    double busy = 0;
    for (int d = 0; d < p; d++) {
        const dev_run *r = &run[d];
        busy += r->busy;
        out->makespan = r->free > out->makespan ? r->free : out->makespan;
        out->span = r->free - r->first > out->span ? r->free - r->first : out->span;
        out->peak = r->peak > out->peak ? r->peak : out->peak;
        out->peak_bytes = r->peak_bytes > out->peak_bytes ? r->peak_bytes : out->peak_bytes;
    }
    out->bubble = out->span > 0 ? 1.0 - busy / p / out->span : 0.0;
    return 0;
}

int vp__vgrid_replay(vp_vgrid *w, const vp_cost_model *cm, double limit, vp_vgrid_metrics *out) {
    int p = w->p, rc = -1;
    dev_run *run = vp__calloc((size_t)p, sizeof *run);
    periods pp = {.mb0 = vp__calloc((size_t)p * 4, sizeof *pp.mb0),
                  .was = vp__calloc((size_t)p, sizeof *pp.was)};
    if (run && pp.mb0 && pp.was) {
        pp.on = w->extra > 3 && exact_costs(cm, w->m) && period_microbatches(w, pp.mb0);
        rc = replay_grid(w, cm, limit, run, &pp, out);
    }
    free(pp.mb0);
    free(pp.was);
    free(run);
    return rc;
}
