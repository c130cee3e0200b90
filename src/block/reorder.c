/* Reordering a squeezed schedule without raising any device's peak or any op's end.
 *
 * Two moves, both judged on the current eager replay:
 *  - swap: a W directly followed by another kind of pass that is already ready when the
 *    W starts runs after that pass (nothing depends on a W, so only the W itself moves later, and
 * it still ends no later than the pair did);
 *  - backfill: a later pass whose dependencies are done inside an idle gap and that fits
 *    the gap entirely moves into it (the op after the gap starts no later).
 * Every accepted move leaves every op's start no later than before (by induction over the
 * replay), so several moves found on one replay can be applied together: all the swaps of
 * a device, or one backfill per device. Memory is replayed per device and a move is taken
 * only when the device's peak stays at or below its peak before reordering. In practice
 * the moves land in warm-up and cool-down, where memory is below the stable-phase peak.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "block/block_internal.h"
#include "core/replay.h"

/* Where every pass sits: device and position, per (stage, microbatch). */
typedef struct where {
    int d, k;
} where;

typedef struct ctx {
    vp_schedule *s;
    const vp_cost_model *cm;
    double **start, **end;
    where *f, *b, *w; /* [S*m]; b holds B or BW */
    double *peak0;    /* [p] device peaks before reordering */
    double eps;
} ctx;

static double op_time(const void *cm, const vp_op *op) {
    return vp_cost_model_op_time(cm, op);
}

static void op_memory(const vp_cost_model *cm, const vp_op *op, double *up, double *down) {
    int s = op->stage;
    *up = op->kind == VP_OP_F ? cm->act[s] : 0.0;
    *down = op->kind == VP_OP_B    ? cm->act[s] - cm->keep[s]
            : op->kind == VP_OP_W  ? cm->keep[s]
            : op->kind == VP_OP_BW ? cm->act[s]
                                   : 0.0;
}

/* Peak of device d's order with the op at position from moved to position to (<= from). */
static double peak_with_move(const ctx *c, int d, int from, int to) {
    const vp_oplist *l = &c->s->dev[d];
    double cur = 0, peak = 0, up, down;
    for (int k = 0; k < l->n; k++) {
        int src = k;
        if (k == to)
            src = from;
        else if (k > to && k <= from)
            src = k - 1;
        op_memory(c->cm, &l->ops[src], &up, &down);
        cur += up;
        if (cur > peak)
            peak = cur;
        cur -= down;
    }
    return peak;
}

static void index_passes(ctx *c) {
    vp_schedule *s = c->s;
    for (int d = 0; d < s->p; d++) {
        for (int k = 0; k < s->dev[d].n; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            size_t at = (size_t)op->stage * s->m + op->mb;
            where wh = {d, k};
            if (op->kind == VP_OP_F)
                c->f[at] = wh;
            else if (op->kind == VP_OP_W)
                c->w[at] = wh;
            else
                c->b[at] = wh;
        }
    }
}

/* The passes op waits for (at most 2), written to dep; returns how many. */
static int deps_of(const ctx *c, const vp_op *op, where *dep) {
    const vp_schedule *s = c->s;
    int st = op->stage, mb = op->mb, n = 0;
    int first = s->mb_first[mb], last = vp_schedule_last_stage(s, mb);
    size_t at = (size_t)st * s->m + mb;
    if (op->kind == VP_OP_F) {
        if (st > first)
            dep[n++] = c->f[at - s->m];
    } else if (op->kind == VP_OP_W) {
        dep[n++] = c->b[at];
    } else {
        dep[n++] = c->f[at];
        if (st < last)
            dep[n++] = c->b[at + s->m];
    }
    return n;
}

/* Earliest start of op on device d allowed by its dependencies (current replay). Sets
 * *local_after to the largest same-device position among them (-1 if none). */
static double ready_time(const ctx *c, int d, const vp_op *op, int *local_after) {
    where dep[2];
    int n = deps_of(c, op, dep);
    double r = 0;
    *local_after = -1;
    for (int x = 0; x < n; x++) {
        double t = c->end[dep[x].d][dep[x].k] + (dep[x].d == d ? 0.0 : c->cm->c);
        if (t > r)
            r = t;
        if (dep[x].d == d && dep[x].k > *local_after)
            *local_after = dep[x].k;
    }
    return r;
}

/* Applies every swap of a W with a following ready pass on device d; returns the count. */
static int swap_device(ctx *c, int d) {
    vp_oplist *l = &c->s->dev[d];
    double cur = 0, up, down;
    int moves = 0;
    for (int k = 0; k + 1 < l->n; k++) {
        vp_op *x = &l->ops[k], *y = &l->ops[k + 1];
        int local;
        if (x->kind == VP_OP_W && y->kind != VP_OP_W && c->end[d][k] - c->start[d][k] > c->eps &&
            ready_time(c, d, y, &local) <= c->start[d][k] + c->eps) {
            /* memory: the only new level is before y's release, with the W not yet run */
            op_memory(c->cm, y, &up, &down);
            if (cur + up <= c->peak0[d] + c->eps) {
                vp_op t = *x;
                *x = *y;
                *y = t;
                moves++;
                op_memory(c->cm, x, &up, &down);
                cur += up - down;
                op_memory(c->cm, y, &up, &down);
                cur += up - down;
                k++;
                continue;
            }
        }
        op_memory(c->cm, x, &up, &down);
        cur += up - down;
    }
    return moves;
}

/* Moves one later pass into the first idle gap of device d that one fits; returns 1 when
 * a move was made. */
static int backfill_device(ctx *c, int d) {
    vp_oplist *l = &c->s->dev[d];
    for (int i = 0; i < l->n; i++) {
        double gap_start = i ? c->end[d][i - 1] : 0.0, gap_end = c->start[d][i];
        if (gap_end - gap_start <= c->eps)
            continue;
        for (int j = i + 1; j < l->n; j++) {
            const vp_op *z = &l->ops[j];
            double dur = c->end[d][j] - c->start[d][j];
            if (dur <= c->eps)
                continue;
            int local;
            double ready = ready_time(c, d, z, &local);
            double t0 = ready > gap_start ? ready : gap_start;
            if (local >= i || t0 + dur > gap_end + c->eps)
                continue;
            if (peak_with_move(c, d, j, i) > c->peak0[d] + c->eps)
                continue;
            vp_op t = *z;
            memmove(&l->ops[i + 1], &l->ops[i], (size_t)(j - i) * sizeof *l->ops);
            l->ops[i] = t;
            return 1;
        }
    }
    return 0;
}

static void free_times(double **t, int p) {
    if (!t)
        return;
    for (int d = 0; d < p; d++)
        free(t[d]);
    free(t);
}

static double **alloc_times(const vp_schedule *s) {
    double **t = vp__calloc((size_t)s->p, sizeof *t);
    for (int d = 0; t && d < s->p; d++) {
        t[d] = vp__calloc((size_t)(s->dev[d].n ? s->dev[d].n : 1), sizeof **t);
        if (!t[d]) {
            free_times(t, s->p);
            return NULL;
        }
    }
    return t;
}

vp_status vp_block_reorder(vp_schedule *s, const vp_cost_model *cm, int *moved, vp_error *err) {
    if (moved)
        *moved = 0;
    if (cm->S != s->S)
        return vp__fail(err, VP_EINVAL, "cost model has %d stages, schedule %d", cm->S, s->S);
    long total = vp_schedule_op_count(s);
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++)
            if (s->dev[d].ops[k].kind == VP_OP_FB)
                return vp__fail(err, VP_EUNSUPPORTED, "reorder handles single passes, not F&B");
    size_t cells = (size_t)s->S * (size_t)s->m;
    ctx c = {.s = s, .cm = cm};
    c.start = alloc_times(s);
    c.end = alloc_times(s);
    c.f = vp__calloc(cells, sizeof *c.f);
    c.b = vp__calloc(cells, sizeof *c.b);
    c.w = vp__calloc(cells, sizeof *c.w);
    c.peak0 = vp__calloc((size_t)s->p, sizeof *c.peak0);
    vp_status rc = VP_OK;
    if (!c.start || !c.end || !c.f || !c.b || !c.w || !c.peak0)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        vp_memory_peaks(s, cm, c.peak0);
    int moves = 0;
    /* Each pass makes progress (some op starts strictly earlier or a W strictly later
     * with the same ends); the cap only guards against zero-length corner cases. */
    for (long pass = 0; rc == VP_OK && pass < 4 * total + 4; pass++) {
        rc = vp__replay(s, op_time, cm, cm->c, c.start, c.end, err);
        if (rc != VP_OK)
            break;
        double span = 0;
        for (int d = 0; d < s->p; d++)
            if (s->dev[d].n && c.end[d][s->dev[d].n - 1] > span)
                span = c.end[d][s->dev[d].n - 1];
        c.eps = vp__block_eps(span);
        index_passes(&c);
        int round = 0;
        for (int d = 0; d < s->p; d++) {
            int n = swap_device(&c, d);
            round += n ? n : backfill_device(&c, d);
        }
        if (!round)
            break;
        moves += round;
    }
    free_times(c.start, s->p);
    free_times(c.end, s->p);
    free(c.f);
    free(c.b);
    free(c.w);
    free(c.peak0);
    if (moved)
        *moved = moves;
    return rc;
}
