/* The memory-budget planner: every registered family plus the V block space, the fastest
 * schedule that fits, and the memory -> makespan frontier (plan.h).
 *
 * The V space is 60 phase patterns (F¹, B¹, B⁰ on device 0 around F⁰ at phase 0) x δ⁰
 * in 1..5 x an optional later δ⁰ (smaller, after device K in 1..p-2), with δ¹ = 1.
 * Blocks that collide are dropped by their phase pattern alone (O(p)); the others are
 * built by the slot engine in one reused workspace and simulated with the spec's costs
 * and memory model. For each peak level only the best block is kept.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/internal.h"
#include "vpipe/plan.h"

#define EPS 1e-9

void vp_plan_free(vp_plan *plan) {
    if (!plan)
        return;
    vp_schedule_free(plan->schedule);
    free(plan->candidates);
    free(plan->frontier);
    free(plan);
}

/* Growable candidate list. */
typedef struct cand_list {
    vp_plan_candidate *v;
    int n, cap;
} cand_list;

static vp_plan_candidate *cand_push(cand_list *l) {
    if (vp__grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) != 0)
        return NULL;
    vp_plan_candidate *c = &l->v[l->n++];
    memset(c, 0, sizeof *c);
    return c;
}

/* True when a is better than b: smaller makespan, then smaller bubble, then less memory. */
static int better(const vp_plan_candidate *a, const vp_plan_candidate *b) {
    if (fabs(a->makespan - b->makespan) > EPS * (1 + b->makespan))
        return a->makespan < b->makespan;
    if (fabs(a->bubble - b->bubble) > EPS)
        return a->bubble < b->bubble;
    return a->peak < b->peak - EPS;
}

/* Simulates s under spec into c's metrics. */
static vp_status measure(const vp_schedule *s, const vp_cost_model *cm, vp_plan_candidate *c,
                         vp_error *err) {
    vp_sim *sim = NULL;
    vp_status rc = vp_simulate(s, cm, &sim, err);
    if (rc != VP_OK)
        return rc;
    c->peak = sim->peak_max;
    c->peak_bytes = 0;
    for (int d = 0; sim->peak_bytes && d < sim->p; d++)
        if (sim->peak_bytes[d] > c->peak_bytes)
            c->peak_bytes = sim->peak_bytes[d];
    c->makespan = sim->makespan;
    c->bubble = sim->bubble;
    vp_sim_free(sim);
    return VP_OK;
}

/* Builds and measures every registered family; families whose constraints the spec does
 * not meet are skipped. */
static vp_status add_families(const vp_spec *spec, cand_list *out, double *ref_peak,
                              vp_error *err) {
    *ref_peak = 0;
    for (int i = 0; i < vp_family_count(); i++) {
        const vp_family *f = vp_family_at(i);
        vp_schedule *s = NULL;
        vp_error ferr = {0};
        vp_status rc = vp_family_build(f->name, spec, &s, &ferr);
        if (rc == VP_ENOMEM)
            return vp__fail(err, rc, "out of memory");
        if (rc != VP_OK)
            continue;
        vp_cost_model *cm = NULL;
        vp_plan_candidate *c = NULL;
        rc = vp_cost_model_new(s, &spec->costs, &spec->mem, &cm, err);
        if (rc == VP_OK)
            rc = (c = cand_push(out)) ? measure(s, cm, c, err) : VP_ENOMEM;
        vp_cost_model_free(cm);
        vp_schedule_free(s);
        if (rc != VP_OK)
            return rc == VP_ENOMEM ? vp__fail(err, rc, "out of memory") : rc;
        snprintf(c->family, sizeof c->family, "%s", f->name);
        if (!strcmp(f->name, "1f1b"))
            *ref_peak = c->peak;
    }
    return VP_OK;
}

/* Replaces *s by its recomputing version (vp_schedule_recompute); *s is NULL on failure. */
static vp_status recompute_in_place(vp_schedule **s, vp_recompute mode, vp_error *err) {
    vp_schedule *r = NULL;
    vp_status rc = vp_schedule_recompute(*s, mode, &r, err);
    vp_schedule_free(*s);
    *s = r;
    return rc;
}

/* One V block's result with its place in the enumeration (ties go to the earlier). */
typedef struct level {
    vp_plan_candidate c;
    long index;
} level;

/* What one worker searches and finds: blocks first, first + step, ... below n. */
typedef struct worker {
    const vp_spec *spec;
    const vp_cost_model *cm;
    const vp_vblock *blocks;
    long first, step, n;
    level *levels; /* best block per peak level */
    int n_levels, cap_levels;
    long built;
    vp_status rc;
    vp_error err;
} worker;

/* Keeps x in the worker's levels when it is the best of its peak so far. */
static int keep_level(worker *wk, const level *x) {
    for (int i = 0; i < wk->n_levels; i++) {
        level *l = &wk->levels[i];
        if (fabs(l->c.peak - x->c.peak) > EPS)
            continue;
        if (better(&x->c, &l->c) || (!better(&l->c, &x->c) && x->index < l->index))
            *l = *x;
        return 0;
    }
    if (vp__grow((void **)&wk->levels, &wk->cap_levels, wk->n_levels + 1, sizeof *wk->levels))
        return -1;
    wk->levels[wk->n_levels++] = *x;
    return 0;
}

/* Builds and measures the worker's blocks in one reused workspace. At equal F, B, W and
 * no hop time a block whose repeated peak is k chunk activations has at least
 * max(0, 6p-1-3k) idle chunk slots (schedules.md §4): once a block of that peak reaches
 * the bound, the later ones of the same peak cannot do better and are skipped. */
static void *search(void *arg) {
    worker *wk = arg;
    const vp_spec *spec = wk->spec;
    const vp_costs *k0 = &spec->costs;
    int p = spec->p;
    int uniform =
        k0->f == k0->b && k0->b == k0->w && k0->c == 0 && !k0->dev_f && !k0->dev_b && !k0->dev_w;
    vp_vgrid *w = NULL;
    int(*t)[6] = vp__calloc((size_t)p, sizeof *t);
    double *best_at = vp__calloc(2 * (size_t)p + 1, sizeof *best_at);
    wk->rc = t && best_at ? vp_vgrid_new(p, spec->m, &w, &wk->err)
                          : vp__fail(&wk->err, VP_ENOMEM, "out of memory");
    for (long i = wk->first; i < wk->n && wk->rc == VP_OK; i += wk->step) {
        if (vp_vblock_slots(&wk->blocks[i], p, t) != 0)
            continue;
        int cap = vp_vgrid_peak(w, (const int(*)[6])t);
        if (cap > 2 * p)
            continue; /* more memory than V-ZB, which has no bubble */
        int idle = 6 * p - 1 - 3 * cap > 0 ? 6 * p - 1 - 3 * cap : 0;
        double lb = (6.0 * spec->m + idle) * (k0->f / 2);
        if (uniform && best_at[cap] > 0 && best_at[cap] <= lb * (1 + EPS))
            continue;
        vp_schedule *s = NULL;
        wk->rc = vp_vgrid_build(w, (const int(*)[6])t, "v-block", &s, &wk->err);
        if (wk->rc == VP_OK && spec->recompute != VP_RECOMPUTE_NONE)
            wk->rc = recompute_in_place(&s, spec->recompute, &wk->err);
        if (wk->rc != VP_OK)
            break;
        wk->built++;
        level x = {.c = {.is_vblock = 1, .vblock = wk->blocks[i]}, .index = i};
        wk->rc = measure(s, wk->cm, &x.c, &wk->err);
        vp_schedule_free(s);
        if (wk->rc == VP_OK && keep_level(wk, &x) != 0)
            wk->rc = vp__fail(&wk->err, VP_ENOMEM, "out of memory");
        if (best_at[cap] == 0 || x.c.makespan < best_at[cap])
            best_at[cap] = x.c.makespan;
    }
    free(best_at);
    free(t);
    vp_vgrid_free(w);
    return NULL;
}

/* The search space in enumeration order: phase patterns, then δ⁰, then the later δ⁰
 * (equal: no change point), then the change point K. Returns the count (-1: no memory). */
static long enumerate(int p, vp_vblock **out) {
    long n = 0, cap = 60L * (5 + 10L * (p > 2 ? p - 2 : 0));
    vp_vblock *v = vp__calloc((size_t)cap, sizeof *v);
    if (!v)
        return -1;
    for (int pat = 0; pat < 125; pat++) {
        vp_vblock vb = {
            .f1 = 1 + pat / 25, .b1 = 1 + pat / 5 % 5, .b0 = 1 + pat % 5, .d1 = 1, .d1b = 1};
        if (vb.f1 == vb.b1 || vb.f1 == vb.b0 || vb.b1 == vb.b0)
            continue;
        for (vb.d0 = 1; vb.d0 <= 5; vb.d0++)
            for (vb.d0b = 1; vb.d0b <= vb.d0; vb.d0b++)
                for (vb.k = vb.d0b == vb.d0 ? p - 1 : 1; vb.k <= p - 1; vb.k++) {
                    if (vb.d0b != vb.d0 && vb.k == p - 1)
                        break;
                    v[n++] = vb;
                }
    }
    *out = v;
    return n;
}

/* Best V block per peak level, appended to out by increasing peak. The blocks are dealt
 * round-robin to up to VP__PLAN_THREADS workers (as many as there are processors); each
 * level keeps its best block, ties going to the first in enumeration order, so the answer
 * does not depend on the number of workers. */
#define VP__PLAN_THREADS 8
static vp_status add_vblocks(const vp_spec *spec, cand_list *out, long *tried, long *built,
                             vp_error *err) {
    int p = spec->p;
    *tried = *built = 0;
    if (p < 2)
        return VP_OK;
    vp_vblock *blocks = NULL;
    long n = enumerate(p, &blocks);
    vp_schedule *shape = NULL;
    vp_cost_model *cm = NULL;
    vp_shape v = {.p = p, .S = 2 * p, .m = spec->m, .placement = VP_PLACE_V};
    vp_status rc = n < 0 ? vp__fail(err, VP_ENOMEM, "out of memory")
                         : vp_schedule_new("v-block", v, &shape, err);
    if (rc == VP_OK) {
        shape->recompute = spec->recompute; /* as the blocks will be */
        rc = vp_cost_model_new(shape, &spec->costs, &spec->mem, &cm, err);
    }
    vp_schedule_free(shape);
    if (rc != VP_OK) {
        free(blocks);
        return rc;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nw = cpus < 1 ? 1 : cpus > VP__PLAN_THREADS ? VP__PLAN_THREADS : (int)cpus;
    if (n < 64 * nw)
        nw = 1;
    worker wk[VP__PLAN_THREADS];
    pthread_t tid[VP__PLAN_THREADS];
    int started[VP__PLAN_THREADS] = {0};
    for (int i = 0; i < nw; i++) {
        wk[i] = (worker){.spec = spec, .cm = cm, .blocks = blocks, .first = i, .step = nw, .n = n};
        started[i] = i > 0 && pthread_create(&tid[i], NULL, search, &wk[i]) == 0;
    }
    for (int i = 0; i < nw; i++) { /* the calling thread takes the first share, and any share
                                      whose thread could not start */
        if (!started[i])
            search(&wk[i]);
    }
    for (int i = 0; i < nw; i++)
        if (started[i])
            pthread_join(tid[i], NULL);
    worker all = {.rc = VP_OK};
    for (int i = 0; i < nw; i++) {
        if (rc == VP_OK && wk[i].rc != VP_OK) {
            rc = wk[i].rc;
            if (err)
                *err = wk[i].err;
        }
        for (int j = 0; rc == VP_OK && j < wk[i].n_levels; j++)
            if (keep_level(&all, &wk[i].levels[j]) != 0)
                rc = vp__fail(err, VP_ENOMEM, "out of memory");
        *built += wk[i].built;
        free(wk[i].levels);
    }
    *tried = n;
    for (int i = 1; i < all.n_levels; i++) /* by increasing peak */
        for (int j = i; j > 0 && all.levels[j].c.peak < all.levels[j - 1].c.peak; j--) {
            level x = all.levels[j];
            all.levels[j] = all.levels[j - 1];
            all.levels[j - 1] = x;
        }
    for (int i = 0; i < all.n_levels && rc == VP_OK; i++) {
        vp_plan_candidate *c = cand_push(out);
        if (!c) {
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
            break;
        }
        *c = all.levels[i].c;
        snprintf(c->family, sizeof c->family, "v-block");
        vp_vblock_format(&c->vblock, p, c->params, sizeof c->params);
    }
    free(all.levels);
    vp_cost_model_free(cm);
    free(blocks);
    return rc;
}

/* Pareto points of memory -> makespan: by increasing peak, each strictly faster than every
 * point with less or equal memory. */
static vp_status make_frontier(vp_plan *plan, vp_error *err) {
    int n = plan->n_candidates;
    int *idx = vp__calloc((size_t)n + 1, sizeof *idx);
    plan->frontier = vp__calloc((size_t)n + 1, sizeof *plan->frontier);
    if (!idx || !plan->frontier) {
        free(idx);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++)
        idx[i] = i;
    const vp_plan_candidate *c = plan->candidates;
    for (int i = 1; i < n; i++) /* by peak, then better first */
        for (int j = i; j > 0; j--) {
            const vp_plan_candidate *a = &c[idx[j]], *b = &c[idx[j - 1]];
            int before =
                a->peak < b->peak - EPS || (fabs(a->peak - b->peak) <= EPS && better(a, b));
            if (!before)
                break;
            int x = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = x;
        }
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        const vp_plan_candidate *a = &c[idx[i]];
        if (i == 0 || a->makespan < best - EPS * (1 + best)) {
            best = a->makespan;
            plan->frontier[plan->n_frontier++] = idx[i];
        }
    }
    free(idx);
    return VP_OK;
}

static const char *cand_name(const vp_plan_candidate *c, char *buf, size_t size) {
    if (c->is_vblock)
        snprintf(buf, size, "v-block %s", c->params);
    else
        snprintf(buf, size, "%s", c->family);
    return buf;
}

/* The reason the chosen candidate won. */
static void explain(vp_plan *plan, const vp_spec *spec) {
    const vp_plan_candidate *c = plan->candidates, *win = &c[plan->chosen];
    const char *unit = plan->budget_in_bytes ? " bytes" : " units";
    double win_mem = plan->budget_in_bytes ? win->peak_bytes : win->peak;
    char name[160], other[160];
    int n = snprintf(plan->reason, sizeof plan->reason,
                     "%s fits the budget (peak %g%s <= %g%s) with the smallest makespan, %g",
                     cand_name(win, name, sizeof name), win_mem, unit, plan->budget, unit,
                     win->makespan);
    /* the fastest fitting candidate that needs less memory, if any */
    int alt = -1;
    for (int i = 0; i < plan->n_candidates; i++)
        if (c[i].fits && c[i].peak < win->peak - EPS && (alt < 0 || better(&c[i], &c[alt])))
            alt = i;
    if (alt >= 0 && n > 0 && n < (int)sizeof plan->reason)
        n += snprintf(plan->reason + n, sizeof plan->reason - (size_t)n,
                      "; less memory costs time: %s needs %g units but takes %g (+%.1f%%)",
                      cand_name(&c[alt], other, sizeof other), c[alt].peak, c[alt].makespan,
                      100.0 * (c[alt].makespan / win->makespan - 1.0));
    /* V-Min's block advances one microbatch per 6 chunk passes of the longest pass when
     * that is an F or a B: name it when that is what keeps it from winning */
    double f = spec->costs.f, b = spec->costs.b, w = spec->costs.w;
    double fb = f > b ? f : b, top = fb > w ? fb : w;
    for (int i = 0; i < plan->n_candidates; i++) {
        const vp_plan_candidate *v = &c[i];
        if (strcmp(v->family, "v-min") || !v->fits || i == plan->chosen || fb < w ||
            3 * top <= f + b + w + EPS || n <= 0 || n >= (int)sizeof plan->reason)
            continue;
        n += snprintf(plan->reason + n, sizeof plan->reason - (size_t)n,
                      "; v-min fits too (%g units) but its stable phase advances one microbatch "
                      "per 6*max(F,B,W) chunk-pass time (3*max = %g) against F+B+W = %g of work, "
                      "so it takes %g",
                      v->peak, 3 * top, f + b + w, v->makespan);
    }
    if (!strcmp(win->family, "dualpipe") && n > 0 && n < (int)sizeof plan->reason)
        snprintf(plan->reason + n, sizeof plan->reason - (size_t)n,
                 "; note: dualpipe keeps two parameter copies per device");
}

/* Resolves the budget against 1F1B's peak; fills plan->budget and budget_in_bytes. */
static vp_status resolve_budget(const vp_spec *spec, const vp_budget *budget, vp_plan *plan,
                                vp_error *err) {
    if (!(budget->value > 0) || !isfinite(budget->value))
        return vp__fail(err, VP_EINVAL, "memory budget must be a finite number > 0 (got %g)",
                        budget->value);
    switch (budget->kind) {
    case VP_BUDGET_FRACTION:
        if (!(plan->ref_peak > 0))
            return vp__fail(err, VP_EINVAL,
                            "a fractional budget needs 1F1B's peak, which could "
                            "not be computed for this shape");
        plan->budget = budget->value * plan->ref_peak;
        return VP_OK;
    case VP_BUDGET_UNITS:
        plan->budget = budget->value;
        return VP_OK;
    case VP_BUDGET_BYTES:
        if (!(spec->mem.unit_bytes > 0))
            return vp__fail(err, VP_EINVAL,
                            "a budget in bytes needs the size of one activation unit (model "
                            "dimensions); give it as a fraction of 1F1B (0.5) or in units (4u)");
        plan->budget = budget->value;
        plan->budget_in_bytes = 1;
        return VP_OK;
    }
    return vp__fail(err, VP_EINVAL, "unknown budget kind %d", (int)budget->kind);
}

/* Rebuilds the chosen candidate's schedule. */
static vp_status rebuild(const vp_spec *spec, const vp_plan_candidate *c, vp_schedule **out,
                         vp_error *err) {
    if (!c->is_vblock)
        return vp_family_build(c->family, spec, out, err);
    vp_status rc = vp_vblock_build(&c->vblock, spec->p, spec->m, "v-block", out, err);
    if (rc == VP_OK && spec->recompute != VP_RECOMPUTE_NONE)
        rc = recompute_in_place(out, spec->recompute, err);
    return rc;
}

vp_status vp_plan_run(const vp_spec *spec, const vp_budget *budget, vp_plan **out, vp_error *err) {
    *out = NULL;
    if (spec->p < 1 || spec->m < 1)
        return vp__fail(err, VP_EINVAL, "plan needs p >= 1 and m >= 1 (got p=%d, m=%d)", spec->p,
                        spec->m);
    vp_status size = vp_spec_check_size(spec, err);
    if (size != VP_OK)
        return size;
    vp_plan *plan = vp__calloc(1, sizeof *plan);
    if (!plan)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    cand_list list = {0};
    vp_status rc = add_families(spec, &list, &plan->ref_peak, err);
    if (rc == VP_OK)
        rc = resolve_budget(spec, budget, plan, err);
    if (rc == VP_OK)
        rc = add_vblocks(spec, &list, &plan->blocks_tried, &plan->blocks_built, err);
    plan->candidates = list.v;
    plan->n_candidates = list.n;
    plan->chosen = -1;
    int lowest = -1;
    for (int i = 0; rc == VP_OK && i < list.n; i++) {
        vp_plan_candidate *c = &list.v[i];
        double mem = plan->budget_in_bytes ? c->peak_bytes : c->peak;
        c->fits = mem <= plan->budget * (1 + EPS) + EPS;
        if (c->fits && (plan->chosen < 0 || better(c, &list.v[plan->chosen])))
            plan->chosen = i;
        if (lowest < 0 ||
            mem < (plan->budget_in_bytes ? list.v[lowest].peak_bytes : list.v[lowest].peak))
            lowest = i;
    }
    if (rc == VP_OK && plan->chosen < 0) {
        char name[160];
        if (lowest < 0)
            rc = vp__fail(err, VP_EINVAL, "no schedule family can be built for p=%d, m=%d", spec->p,
                          spec->m);
        else
            rc = vp__fail(err, VP_EINVAL,
                          "memory budget %g %s is below what any schedule reaches: the smallest "
                          "peak is %g %s (%s)",
                          plan->budget, plan->budget_in_bytes ? "bytes" : "units",
                          plan->budget_in_bytes ? list.v[lowest].peak_bytes : list.v[lowest].peak,
                          plan->budget_in_bytes ? "bytes" : "units",
                          cand_name(&list.v[lowest], name, sizeof name));
    }
    if (rc == VP_OK)
        rc = make_frontier(plan, err);
    if (rc == VP_OK)
        rc = rebuild(spec, &list.v[plan->chosen], &plan->schedule, err);
    if (rc != VP_OK) {
        vp_plan_free(plan);
        return rc;
    }
    explain(plan, spec);
    *out = plan;
    return VP_OK;
}
