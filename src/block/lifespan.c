/* Lifespan analysis: the paper's bound on peak memory read off a block.
 *
 * A microbatch's activation of stage s lives from the start of its F to the end of the
 * pass that frees it (W with a split backward, BW otherwise): l_s. Copies start every T,
 * so at most ceil(l_s / T) of them are alive at once, and device d never holds more than
 * sum over its stages of ceil(l_s / T) * act_s. With several microbatches per copy each
 * class (offset mod mb_per_copy) counts separately. The bound adds each stage's worst
 * moment; the exact steady state (the most alive at one instant) can be lower, e.g. on
 * V-Min's device 0 at p = 2 (bound 1.5 units, steady state and peak 1).
 */
#include <math.h>
#include <stdlib.h>

#include "block/block_internal.h"

void vp_block_lifespan_free(vp_block_lifespan *ls) {
    if (!ls)
        return;
    free(ls->life);
    free(ls->bound);
    free(ls->steady);
    free(ls->peak);
    free(ls);
}

/* Per (class, stage) cell: index of its F and of the pass freeing its activation. */
typedef struct cell {
    int f, free_pass;
} cell;

/* Fills cells[r*S + s] in one pass over the block (-1 where absent). */
static cell *index_cells(const vp_block *b) {
    size_t n = (size_t)b->mb_per_copy * (size_t)b->S;
    cell *c = vp__calloc(n, sizeof *c);
    if (!c)
        return NULL;
    for (size_t x = 0; x < n; x++)
        c[x].f = c[x].free_pass = -1;
    for (int i = 0; i < b->n; i++) {
        const vp_block_pass *ps = &b->pass[i];
        cell *at = &c[(size_t)vp__block_class(b, ps->mb) * b->S + ps->stage];
        if (ps->kind == VP_OP_F)
            at->f = i;
        else if (ps->kind == VP_OP_W || ps->kind == VP_OP_BW)
            at->free_pass = i;
    }
    return c;
}

/* Lifespan of a cell: F start to the freeing pass's end, the freeing pass shifted to the
 * copy that holds the F's microbatch; -1 when the stage is not on the class's route. */
static double cell_lifespan(const vp_block *b, const cell *c) {
    if (c->f < 0 || c->free_pass < 0)
        return -1;
    const vp_block_pass *pf = &b->pass[c->f], *pw = &b->pass[c->free_pass];
    double shift = (double)((pf->mb - pw->mb) / b->mb_per_copy) * b->T;
    double l = pw->start + shift + pw->dur - pf->start;
    return l > 0 ? l : 0;
}

/* A change of a device's live activation at a phase of the period. */
typedef struct arc_event {
    int d;
    double at, delta, eps;
} arc_event;

static int event_cmp(const void *pa, const void *pb) {
    const arc_event *a = pa, *b = pb;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    if (fabs(a->at - b->at) > a->eps)
        return a->at < b->at ? -1 : 1;
    return (a->delta > b->delta) - (a->delta < b->delta); /* ends before starts */
}

/* Activation act alive over [f, f+l) in every copy: q = floor(l/T) copies always (added
 * to *base), one more over an arc of length l - qT (events appended for device d). */
static void add_arcs(arc_event *ev, int *n, double *base, int d, double f, double l, double T,
                     double act, double eps) {
    double q = floor(l / T + eps / T);
    double rho = l - q * T, phi = f - floor(f / T) * T;
    *base += q * act;
    if (rho <= eps)
        return;
    if (phi >= T - eps)
        phi = 0;
    double end = phi + rho;
    arc_event e[4] = {{d, phi, act, eps}, {d, end < T ? end : T, -act, eps}};
    int k = 2;
    if (end > T + eps) {
        e[2] = (arc_event){d, 0, act, eps};
        e[3] = (arc_event){d, end - T, -act, eps};
        k = 4;
    }
    for (int x = 0; x < k; x++)
        ev[(*n)++] = e[x];
}

/* Fills life, bound and steady from the cells. */
static vp_status analyse(const vp_block *b, const vp_cost_model *cm, const cell *cells,
                         vp_block_lifespan *ls) {
    size_t ncell = (size_t)b->mb_per_copy * (size_t)b->S;
    arc_event *ev = vp__calloc(4 * ncell, sizeof *ev);
    if (!ev)
        return VP_ENOMEM;
    double eps = vp__block_eps(b->T);
    int n = 0;
    for (size_t x = 0; x < ncell; x++) {
        int s = (int)(x % (size_t)b->S), d = b->stage_device[s];
        double l = cell_lifespan(b, &cells[x]);
        if (l < 0)
            continue;
        if (l > ls->life[s])
            ls->life[s] = l;
        double live = ceil(l / b->T - eps);
        ls->bound[d] += (live > 0 ? live : 0) * cm->act[s];
        if (l > 0)
            add_arcs(ev, &n, &ls->steady[d], d, b->pass[cells[x].f].start, l, b->T, cm->act[s],
                     eps);
    }
    qsort(ev, (size_t)n, sizeof *ev, event_cmp);
    double cur = 0, best = 0;
    for (int x = 0; x < n; x++) {
        cur += ev[x].delta;
        if (cur > best)
            best = cur;
        if (x + 1 == n || ev[x + 1].d != ev[x].d) { /* end of device ev[x].d */
            ls->steady[ev[x].d] += best;
            cur = best = 0;
        }
    }
    free(ev);
    return VP_OK;
}

vp_status vp_block_lifespan_new(const vp_block *b, const vp_cost_model *cm, int m,
                                vp_block_lifespan **out, vp_error *err) {
    *out = NULL;
    vp_status rc = vp_block_check(b, err);
    if (rc != VP_OK)
        return rc;
    if (!(b->T > 0) || !isfinite(b->T))
        return vp__fail(err, VP_EINVAL, "block interval T must be set (> 0) for lifespans");
    if (cm->S != b->S)
        return vp__fail(err, VP_EINVAL, "cost model has %d stages, block %d", cm->S, b->S);
    vp_block_lifespan *ls = vp__calloc(1, sizeof *ls);
    if (ls) {
        ls->life = vp__calloc((size_t)b->S, sizeof *ls->life);
        ls->bound = vp__calloc((size_t)b->p, sizeof *ls->bound);
        ls->steady = vp__calloc((size_t)b->p, sizeof *ls->steady);
    }
    cell *cells = ls && ls->life && ls->bound && ls->steady ? index_cells(b) : NULL;
    if (!cells || analyse(b, cm, cells, ls) != VP_OK) {
        free(cells);
        vp_block_lifespan_free(ls);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    free(cells);
    ls->p = b->p;
    ls->S = b->S;
    ls->T = b->T;
    if (m > 0) {
        vp_schedule *s = NULL;
        rc = vp_block_repeat(b, m, NULL, &s, err);
        ls->peak = rc == VP_OK ? vp__calloc((size_t)b->p, sizeof *ls->peak) : NULL;
        if (rc == VP_OK && !ls->peak)
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
        if (rc == VP_OK) {
            vp_memory_peaks(s, cm, 0, ls->peak);
            ls->m = m;
        }
        vp_schedule_free(s);
        if (rc != VP_OK) {
            vp_block_lifespan_free(ls);
            return rc;
        }
    }
    *out = ls;
    return VP_OK;
}
