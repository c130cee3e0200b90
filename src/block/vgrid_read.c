/* Reading a built V slot grid: the schedule it stands for, and its replay under real costs
 * (block.h, "V blocks"; the engine is vgrid.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block/vgrid_internal.h"

vp_status vp__vgrid_schedule(vp_vgrid *w, int bw, const char *family, vp_schedule **out,
                             vp_error *err) {
    const grid *g = cur_grid(w);
    int p = w->p;
    vp_schedule *s = vp_schedule_new(family, p, 2 * p, w->m, VP_PLACE_V, err);
    if (!s)
        return err ? err->status : VP_ENOMEM;
    vp_status rc = VP_OK;
    for (int d = 0; d < p && rc == VP_OK; d++) {
        vp_oplist *l = &s->dev[d];
        if (vp__grow((void **)&l->ops, &l->cap, PERIOD * w->m, sizeof *l->ops) != 0) {
            rc = VP_ENOMEM;
            break;
        }
        int head = 0, tail = 0; /* FIFO of (stage, mb) in w->wq */
        for (int t = 0; t < g->len && rc == VP_OK; t++) {
            int type = g->ty[CELL(g, d, t)];
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
                op.mb = g->mb[CELL(g, d, t)];
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

/* One device's running figures in measure_grid. */
typedef struct dev_run {
    double free, first, busy, left; /* left: work still ahead of the device */
    double mem, peak, mem_bytes, peak_bytes;
    int head, tail; /* FIFO of backward chunks awaiting their W, in w->wchunk */
} dev_run;

/* Stage of the pass at device d's cell of type `type` (a W: its B's, from the FIFO; -1
 * when no B awaits it). */
static int run_stage(vp_vgrid *w, dev_run *r, int d, int type) {
    int8_t *fifo = w->wchunk + (size_t)d * 2 * w->mm;
    if (type == T_W)
        return r->head < r->tail ? type_stage(w->p, d, fifo[r->head++] ? T_F1 : T_F0) : -1;
    if (type == T_B1 || type == T_B0)
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
                                                : cm->b[stage];
    if (type != T_W && pred(w->p, d, type, &pd, &pt)) {
        double e = w->end[at_index(w, pd, pt, mb)];
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
        w->end[at_index(w, d, type, mb)] = end;
    if (type <= T_F1)
        up = cm->act[stage], up_b = cm->act_bytes ? cm->act_bytes[stage] : 0;
    else if (type == T_W)
        down = cm->keep[stage], down_b = cm->keep_bytes ? cm->keep_bytes[stage] : 0;
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

/* Replays the current grid in slot order (every dependency sits in an earlier slot) under
 * cm into out with one figure set per device in run; stops early past limit. -1 when it
 * does not replay. */
static int replay_grid(vp_vgrid *w, const vp_cost_model *cm, double limit, dev_run *run,
                       vp_vgrid_metrics *out) {
    const grid *g = cur_grid(w);
    int p = w->p;
    for (size_t i = 0; i < (size_t)p * 4 * (size_t)w->mm; i++)
        w->end[i] = -1;
    for (int d = 0; d < p; d++) {
        int s0 = type_stage(p, d, T_F0), s1 = type_stage(p, d, T_F1);
        run[d] = (dev_run){.first = -1};
        run[d].left =
            w->m * (cm->f[s0] + cm->b[s0] + cm->w[s0] + cm->f[s1] + cm->b[s1] + cm->w[s1]);
    }
    double slack = limit + 1e-9 * (1 + limit);
    *out = (vp_vgrid_metrics){.complete = 1};
    for (int t = 0; t < g->len; t++)
        for (int d = 0; d < p; d++) {
            int type = g->ty[CELL(g, d, t)];
            if (type < 0)
                continue;
            double end = run_pass(w, cm, &run[d], d, type, g->mb[CELL(g, d, t)]);
            if (end < 0)
                return -1;
            if (limit > 0 && end - run[d].first + run[d].left > slack) {
                *out = (vp_vgrid_metrics){.span = end - run[d].first + run[d].left};
                return 0;
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
    dev_run *run = vp__calloc((size_t)w->p, sizeof *run);
    int rc = run ? replay_grid(w, cm, limit, run, out) : -1;
    free(run);
    return rc;
}
