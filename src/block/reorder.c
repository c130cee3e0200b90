/* Reordering a squeezed schedule without raising any device's peak or the makespan.
 *
 * Rounds on the eager replay. Per device, in a round:
 *  - jump: a pass z other than W that has Ws right in front of it and would start earlier
 *    ahead of some of them moves ahead of as many as it can; the Ws it passes run after
 *    it, later (nothing depends on a W), and the last of them still ends by z's old end;
 *  - fill (only on a device that made no jump in the round): a later pass z whose
 *    dependency is done inside the idle gap in front of the op at position i, and that
 *    fits the rest of the gap, moves into it, so the op at i starts no later.
 * The round's moves are judged on the round's replay and applied together; a round
 * without a move ends the run.
 *
 * Ticks. Every time is an integer number of ticks: durations and the hop are rounded to
 * the coarsest decimal grid 10^-k (k <= 9) they all lie on, else to 2^-52 of the
 * schedule's total work (sum of all durations and hops, which bounds every replayed
 * time), so every replayed time is an integer below 2^53 and every sum and comparison
 * below is exact in a double. Without that, a pass that fits a gap exactly (0.5 + 0.05
 * against 0.05 + 0.5, or 0.1 + 0.2 against 0.3) may or may not fit by a rounding error,
 * and a tolerance would let moves delay other passes by that error: then nothing stops
 * moves from undoing each other. The caller's own replay of the result differs from the
 * tick replay by rounding only.
 *
 * Invariant. Every op x has a bound bnd(x): its start in the round's replay, changed only
 * when a move re-places x. Every edge of the current orders (device order, dependency plus
 * the hop c) holds between bounds: bnd(y) >= bnd(x) + dur(x) (+ c) for every x that y
 * waits for. A move keeps that true: z gets bnd = max(end bound of its new predecessor,
 * end bounds of its dependencies + hops) and, for a fill, ends by the bound of the op
 * behind the gap; for a jump, the passed Ws get bounds chained after z that end by z's old
 * end bound, and nothing after them changes. The replay starts each op at the max of the
 * same quantities, so the next replay starts every op at or before its bound. Hence:
 *   - no F, B or BW ever starts later; a W passed by a jump starts later but ends by the
 *     old end of the pass that went ahead of it: the makespan never rises;
 *   - the moved pass z starts strictly earlier (dur(z) >= 1 tick; for a jump also checked
 *     explicitly); a W moves earlier only by a fill, which delays nothing.
 * Measure. Let P be the vector of the start ticks of the F, B and BW passes and Q that of
 * the Ws. A jump or the fill of a non-W lowers one entry of P and raises none; the fill of
 * a W leaves P entrywise no higher and lowers one entry of Q, raising none. So every move
 * strictly decreases (P, Q) in the lexicographic product of the entrywise orders; entries
 * are integers in a finite range, so the run terminates (no iteration cap is needed). A W
 * can go back and forth (passed by a jump, back in front by a fill) only as often as
 * entries of P strictly drop, which nothing undoes. (The older W/ready-pass swap and
 * backfill compared times within a tolerance, could delay other passes by it, and so had
 * no such measure: only an iteration cap guaranteed an end.)
 * Deadlock-free: a cycle of order/dependency edges would pass through a moved pass, where
 * bounds rise strictly (dur >= 1 tick), and bounds never fall along an edge.
 *
 * Memory: levels are replayed per device on the current order; a move is taken only when
 * every level it changes stays at or below the device's peak before reordering (units,
 * and bytes when the cost model has them; 1e-12 relative slack for rounding, as levels
 * after a move are sums in another order). A B, W or BW only lowers the levels it jumps;
 * an F raises them, so in practice F moves land in warm-up and cool-down, where memory is
 * below the stable-phase peak.
 *
 * Cost per round: one replay O(ops); per device O(ops) for levels and a suffix minimum of
 * (ready + duration) that ends the search for a gap's filler as soon as no later pass can
 * fit; a jump check is linear in the Ws passed; each accepted move costs O(ops of its
 * device) to shift the order and refresh levels.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "block/block_internal.h"
#include "schedule/pass.h"
#include "schedule/replay.h"

/* Where a pass sits: device and position. */
typedef struct where {
    int d, k;
} where;

typedef struct ctx {
    vp_schedule *s;
    const vp_cost_model *cm;
    double scale, hop;     /* ticks per time unit; the hop c in ticks */
    double **start, **end; /* [p][n_d] bounds in ticks, parallel to the orders */
    where *at;             /* [S*m*vp__pass_kinds] position of the op completing each pass */
    int metrics;           /* 1 (units) or 2 (units and bytes) */
    size_t nmax;           /* most ops on one device (>= 1) */
    double *peak0;         /* [metrics][p] device peaks before reordering */
    double *cap;           /* [metrics][p] peak0 plus rounding slack */
    double *lvl, *hi;      /* [metrics][nmax] level before op k, level while op k runs */
    double *sufmin;        /* [nmax] min over positions >= k of ready + duration */
} ctx;

/* Duration of op in ticks (an integer-valued double). */
static double op_time(const void *cv, const vp_op *op) {
    const ctx *c = cv;
    return nearbyint(vp_cost_model_op_time(c->cm, op) * c->scale);
}

/* Whether x * scale is within 1e-12 (relative) of an integer. */
static int on_grid(double x, double scale) {
    double t = x * scale;
    return fabs(t - nearbyint(t)) <= 1e-12 * (t > 1.0 ? t : 1.0);
}

/* Ticks per time unit: 10^k for the smallest k <= 9 such that every duration and the hop
 * are multiples of 10^-k (so decimal costs add up exactly: 0.05 + 0.05 is 0.1) and the
 * total work stays below 2^52 ticks; else the power of two that puts the total just below
 * 2^52 ticks. Either way every replayed time is an integer below 2^53, exact in a double. */
static double tick_scale(const vp_schedule *s, const vp_cost_model *cm, double total) {
    double scale = 1.0;
    for (int k = 0; k <= 9; k++, scale *= 10.0) {
        int ok = total * scale < 0x1p52 && on_grid(cm->c, scale);
        for (int d = 0; ok && d < s->p; d++)
            for (int i = 0; ok && i < s->dev[d].n; i++)
                ok = on_grid(vp_cost_model_op_time(cm, &s->dev[d].ops[i]), scale);
        if (ok)
            return scale;
    }
    int ex = 0;
    if (total > 0)
        frexp(total, &ex); /* total < 2^ex */
    return ldexp(1.0, 52 - ex);
}

/* Replays device d's memory into lvl/hi of metric; returns the peak. */
static double device_levels(ctx *c, int metric, int d) {
    const vp_oplist *l = &c->s->dev[d];
    double *lvl = c->lvl + (size_t)metric * c->nmax, *hi = c->hi + (size_t)metric * c->nmax;
    double cur = 0, peak = 0, up, down;
    for (int k = 0; k < l->n; k++) {
        vp_cost_model_op_memory(c->cm, &l->ops[k], metric, &up, &down);
        lvl[k] = cur;
        cur += up;
        hi[k] = cur;
        if (cur > peak)
            peak = cur;
        cur -= down;
    }
    return peak;
}

/* Whether moving z from position j to i < j of device d keeps every level within the
 * caps: z runs at lvl[i] + up, the ops at i..j-1 run up - down higher. himax[x] is the
 * highest hi of those ops for metric x. */
static int memory_fits(const ctx *c, int d, const vp_op *z, int i, const double *himax) {
    for (int x = 0; x < c->metrics; x++) {
        double up, down, cap = c->cap[(size_t)x * c->s->p + d];
        vp_cost_model_op_memory(c->cm, z, x, &up, &down);
        if (c->lvl[(size_t)x * c->nmax + (size_t)i] + up > cap || himax[x] + (up - down) > cap)
            return 0;
    }
    return 1;
}

/* Records the positions of device d's ops from..to (inclusive) under the passes they
 * complete. */
static void index_range(ctx *c, int d, int from, int to) {
    for (int k = from; k <= to; k++) {
        vp__pass passes[VP__OP_MAX_PASSES];
        int n = vp__op_passes(&c->s->dev[d].ops[k], passes);
        for (int i = 0; i < n; i++)
            c->at[vp__pass_index(c->s, passes[i])] = (where){d, k};
    }
}

/* Earliest start of op on device d allowed by its dependencies' end bounds, computed as
 * the replay computes it (rules in schedule/pass.h). Sets *local to the last position of
 * a dependency on device d, else -1. */
static double ready_bound(const ctx *c, int d, const vp_op *op, int *local) {
    vp__pass passes[VP__OP_MAX_PASSES], deps[VP__PASS_MAX_DEPS];
    int n = vp__op_passes(op, passes);
    double t = 0.0;
    *local = -1;
    for (int i = 0; i < n; i++) {
        int nd = passes[i].chained ? 0 : vp__pass_deps(c->s, NULL, passes[i], deps);
        for (int k = 0; k < nd; k++) {
            where dep = c->at[vp__pass_index(c->s, deps[k])];
            double r = c->end[dep.d][dep.k];
            if (dep.d == d)
                *local = dep.k > *local ? dep.k : *local;
            else
                r += c->hop;
            t = r > t ? r : t;
        }
    }
    return t;
}

/* sufmin[k] = min over positions k' >= k of device d of ready + duration (infinity for
 * zero-length passes, which never move): no pass at or after k can end before it. */
static void fill_sufmin(ctx *c, int d) {
    const vp_oplist *l = &c->s->dev[d];
    double m = INFINITY;
    for (int k = l->n - 1; k >= 0; k--) {
        double dur = op_time(c, &l->ops[k]);
        if (dur > 0) {
            int local;
            double e = ready_bound(c, d, &l->ops[k], &local) + dur;
            if (e < m)
                m = e;
        }
        c->sufmin[k] = m;
    }
}

/* Moves device d's op at position j to position i < j with bounds [t0, e]. */
static void move_op(ctx *c, int d, int j, int i, double t0, double e) {
    vp_oplist *l = &c->s->dev[d];
    vp_op z = l->ops[j];
    size_t shift = (size_t)(j - i);
    memmove(&l->ops[i + 1], &l->ops[i], shift * sizeof *l->ops);
    memmove(&c->start[d][i + 1], &c->start[d][i], shift * sizeof **c->start);
    memmove(&c->end[d][i + 1], &c->end[d][i], shift * sizeof **c->end);
    l->ops[i] = z;
    c->start[d][i] = t0;
    c->end[d][i] = e;
    index_range(c, d, i, j);
}

/* Jumps on device d (see the file comment); returns the number of moves. */
static int jump_device(ctx *c, int d) {
    const vp_oplist *l = &c->s->dev[d];
    double *st = c->start[d], *en = c->end[d];
    int moves = 0;
    for (int x = 0; x < c->metrics; x++)
        device_levels(c, x, d);
    for (int j = 1; j < l->n; j++) {
        const vp_op *z = &l->ops[j];
        double dur = op_time(c, z);
        if (z->kind == VP_OP_W || l->ops[j - 1].kind != VP_OP_W || !(dur > 0))
            continue;
        int local, best = -1;
        double ready = ready_bound(c, d, z, &local); /* a W is no dependency: local < the Ws */
        /* Going down from i = j-1 over the Ws: wsum = their ticks from i on, chain = when
         * the last would end if they ran from their bounds in order, himax their levels. */
        double wsum = 0, chain = -INFINITY, himax[2] = {-INFINITY, -INFINITY}, t0 = 0;
        for (int i = j - 1; i >= 0 && l->ops[i].kind == VP_OP_W; i--) {
            double w = op_time(c, &l->ops[i]);
            wsum += w;
            chain = chain > st[i] + wsum ? chain : st[i] + wsum;
            for (int x = 0; x < c->metrics; x++) {
                double h = c->hi[(size_t)x * c->nmax + (size_t)i];
                himax[x] = h > himax[x] ? h : himax[x];
            }
            double from = i ? en[i - 1] : 0.0, t = ready > from ? ready : from;
            double last = t + dur + wsum > chain ? t + dur + wsum : chain;
            if (t < st[j] && last <= en[j] && memory_fits(c, d, z, i, himax)) {
                best = i;
                t0 = t;
            }
        }
        if (best < 0)
            continue;
        move_op(c, d, j, best, t0, t0 + dur);
        for (int k = best + 1; k <= j; k++) { /* the passed Ws, chained after z */
            st[k] = en[k - 1] > st[k] ? en[k - 1] : st[k];
            en[k] = st[k] + op_time(c, &l->ops[k]);
        }
        moves++;
        for (int x = 0; x < c->metrics; x++)
            device_levels(c, x, d);
    }
    return moves;
}

/* Position of the first pass after i on device d that fits the gap [from, g1) in front of
 * op i (dependency done, ends by g1, levels within the caps); -1 when none. Sets *t0 and
 * *e to its start and end there. */
static int find_filler(ctx *c, int d, int i, double from, double g1, double *t0, double *e) {
    const vp_oplist *l = &c->s->dev[d];
    double himax[2] = {-INFINITY, -INFINITY};
    for (int j = i + 1; j < l->n && c->sufmin[j] <= g1; j++) {
        for (int x = 0; x < c->metrics; x++) { /* levels of the ops at i..j-1 */
            double h = c->hi[(size_t)x * c->nmax + (size_t)(j - 1)];
            himax[x] = h > himax[x] ? h : himax[x];
        }
        const vp_op *z = &l->ops[j];
        double dur = op_time(c, z);
        if (!(dur > 0))
            continue;
        int local;
        double r = ready_bound(c, d, z, &local);
        double start = r > from ? r : from, end = start + dur;
        if (local >= i || end > g1 || !memory_fits(c, d, z, i, himax))
            continue;
        *t0 = start;
        *e = end;
        return j;
    }
    return -1;
}

/* Fills on device d, gap by gap from the left, each gap with as many later passes as fit
 * (the first that fits, then again in what is left of the gap); returns the moves. */
static int fill_device(ctx *c, int d) {
    const vp_oplist *l = &c->s->dev[d];
    int moves = 0;
    for (int x = 0; x < c->metrics; x++)
        device_levels(c, x, d);
    fill_sufmin(c, d);
    for (int i = 0; i < l->n; i++) {
        double g1 = c->start[d][i], from = i ? c->end[d][i - 1] : 0.0, t0, e;
        if (!(from < g1) || i + 1 >= l->n || c->sufmin[i + 1] > g1)
            continue;
        int j = find_filler(c, d, i, from, g1, &t0, &e);
        if (j < 0)
            continue;
        move_op(c, d, j, i, t0, e);
        moves++;
        for (int x = 0; x < c->metrics; x++)
            device_levels(c, x, d);
        fill_sufmin(c, d);
        /* the loop goes on at i + 1: the same gap, now from the moved pass's end */
    }
    return moves;
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
    if (s->vocab_parallel)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "reorder handles a block's passes, not vocabulary passes (place them "
                        "after reordering)");
    size_t nmax = 1;
    double total = 0; /* bounds every replayed time */
    for (int d = 0; d < s->p; d++) {
        if ((size_t)s->dev[d].n > nmax)
            nmax = (size_t)s->dev[d].n;
        for (int k = 0; k < s->dev[d].n; k++) {
            if (s->dev[d].ops[k].kind == VP_OP_FB)
                return vp__fail(err, VP_EUNSUPPORTED, "reorder handles single passes, not F&B");
            double t = vp_cost_model_op_time(cm, &s->dev[d].ops[k]);
            if (!(t >= 0))
                return vp__fail(err, VP_EINVAL, "reorder needs non-negative pass costs");
            total += t + cm->c;
        }
    }
    if (!(cm->c >= 0) || !isfinite(total))
        return vp__fail(err, VP_EINVAL, "reorder needs finite, non-negative costs and hop");
    size_t cells = (size_t)s->S * (size_t)s->m;
    ctx c = {.s = s,
             .cm = cm,
             .scale = tick_scale(s, cm, total),
             .metrics = cm->has_bytes ? 2 : 1,
             .nmax = nmax};
    c.hop = nearbyint(cm->c * c.scale);
    size_t pm = (size_t)c.metrics * (size_t)s->p, lv = (size_t)c.metrics * nmax;
    c.start = alloc_times(s);
    c.end = alloc_times(s);
    c.at = vp__calloc(cells * (size_t)vp__pass_kinds(s), sizeof *c.at);
    c.peak0 = vp__calloc(pm, sizeof *c.peak0);
    c.cap = vp__calloc(pm, sizeof *c.cap);
    c.lvl = vp__calloc(lv, sizeof *c.lvl);
    c.hi = vp__calloc(lv, sizeof *c.hi);
    c.sufmin = vp__calloc(nmax, sizeof *c.sufmin);
    vp_status rc = VP_OK;
    if (!c.start || !c.end || !c.at || !c.peak0 || !c.cap || !c.lvl || !c.hi || !c.sufmin)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    for (int d = 0; rc == VP_OK && d < s->p; d++) {
        index_range(&c, d, 0, s->dev[d].n - 1);
        for (int x = 0; x < c.metrics; x++) {
            double pk = device_levels(&c, x, d);
            c.peak0[(size_t)x * s->p + d] = pk;
            c.cap[(size_t)x * s->p + d] = pk + 1e-12 * (pk > 1.0 ? pk : 1.0);
        }
    }
    int moves = 0;
    /* Terminates without a cap: every move strictly decreases the measure (P, Q). */
    while (rc == VP_OK) {
        rc = vp__replay(s, op_time, &c, c.hop, c.start, c.end, err);
        if (rc != VP_OK)
            break;
        int round = 0;
        for (int d = 0; d < s->p; d++) {
            int jumps = jump_device(&c, d);
            round += jumps ? jumps : fill_device(&c, d);
        }
        if (!round)
            break;
        moves += round;
    }
    free_times(c.start, s->p);
    free_times(c.end, s->p);
    free(c.at);
    free(c.peak0);
    free(c.cap);
    free(c.lvl);
    free(c.hi);
    free(c.sufmin);
    if (moved)
        *moved = moves;
    return rc;
}
