/* The memory-budget planner: every registered family plus the V block space and the
 * greedy V search, the fastest schedule that fits, and the memory -> makespan frontier
 * (plan.h).
 *
 * The V space is searched by vp_vsearch_run (families.h), which keeps the fastest block
 * per peak level within the budget; the greedy V search (vp_vgreedy_run) runs under the
 * budget and is kept when it is faster than everything else that fits.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* True when a is better than b: smaller makespan, then smaller bubble, then less offload
 * (less copying), then less memory. */
static int better(const vp_plan_candidate *a, const vp_plan_candidate *b) {
    if (fabs(a->makespan - b->makespan) > EPS * (1 + b->makespan))
        return a->makespan < b->makespan;
    if (fabs(a->bubble - b->bubble) > EPS)
        return a->bubble < b->bubble;
    if (fabs(a->offload - b->offload) > EPS)
        return a->offload < b->offload;
    return a->peak < b->peak - EPS;
}

/* Simulates s under spec's costs and memory model into c's metrics. */
static vp_status measure_keep(const vp_schedule *s, const vp_spec *spec, vp_plan_candidate *c,
                              vp_sim **kept, vp_error *err) {
    vp_cost_model *cm = NULL;
    vp_sim *sim = NULL;
    vp_status rc = vp_cost_model_new(s, &spec->costs, &spec->mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_simulate(s, cm, &sim, err);
    vp_cost_model_free(cm);
    if (rc != VP_OK)
        return rc;
    c->peak = sim->peak_max;
    c->peak_bytes = 0;
    for (int d = 0; sim->peak_bytes && d < sim->p; d++)
        if (sim->peak_bytes[d] > c->peak_bytes)
            c->peak_bytes = sim->peak_bytes[d];
    c->makespan = sim->makespan;
    c->bubble = sim->bubble;
    if (kept)
        *kept = sim;
    else
        vp_sim_free(sim);
    return VP_OK;
}

static vp_status measure(const vp_schedule *s, const vp_spec *spec, vp_plan_candidate *c,
                         vp_error *err) {
    return measure_keep(s, spec, c, NULL, err);
}

/* Each family's schedule and simulation, kept for the offloading lever when on ([n], by
 * candidate index). */
typedef struct family_runs {
    bool on;
    vp_schedule **s;
    vp_sim **sim;
    int n;
} family_runs;

static void runs_free(family_runs *k) {
    for (int i = 0; k->s && i < k->n; i++) {
        vp_schedule_free(k->s[i]);
        vp_sim_free(k->sim[i]);
    }
    free(k->s);
    free(k->sim);
}

/* Whether the spec asks for more than a block or the greedy builds (recomputation,
 * vocabulary parallelism, offload: vp_spec_finish), so that their figures are measured
 * again. */
static int finished(const vp_spec *spec) {
    return spec->recompute != VP_RECOMPUTE_NONE || spec->vocab_parallel ||
           spec->offload.policy != VP_OFFLOAD_NONE;
}

/* Builds V block vb for spec, recomputing, with the vocabulary's passes and offloading as
 * the spec asks (caller frees *out). */
static vp_status build_vblock(const vp_spec *spec, const vp_vblock *vb, vp_schedule **out,
                              vp_error *err) {
    vp_status rc = vp_vblock_build(vb, spec->p, spec->m, "v-block", out, err);
    return rc == VP_OK ? vp_spec_finish(spec, out, err) : rc;
}

/* The planner's deadline on the monotonic clock (0: none). */
static double deadline_of(const vp_spec *spec, double t0) {
    return spec->time_limit_s > 0 ? t0 + spec->time_limit_s * 1e3 : 0;
}

/* Whether the deadline (0: none) has passed; sets plan->timed_out when it has. */
static bool out_of_time(vp_plan *plan, double deadline) {
    if (deadline > 0 && vp__now_ms() > deadline)
        plan->timed_out = 1;
    return plan->timed_out;
}

/* spec with candidate c's own offload, when the planner chose one. */
static vp_spec spec_of(const vp_spec *spec, const vp_plan_candidate *c) {
    vp_spec s = *spec;
    if (c->offload > 0)
        s.offload = (vp_offload){.policy = c->offload_policy, .share = c->offload};
    return s;
}

/* Builds and measures every registered family; families whose constraints the spec does
 * not meet are skipped, and, once the deadline passed, every family but 1F1B (what a
 * fractional budget refers to); with keep->on each family's schedule and simulation are
 * kept for the offloading lever. */
static vp_status add_families(const vp_spec *spec, vp_plan *plan, double deadline, cand_list *out,
                              double *ref_peak, family_runs *keep, vp_error *err) {
    *ref_peak = 0;
    if (keep->on && (!(keep->s = vp__calloc((size_t)vp_family_count(), sizeof *keep->s)) ||
                     !(keep->sim = vp__calloc((size_t)vp_family_count(), sizeof *keep->sim))))
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < vp_family_count(); i++) {
        const vp_family *f = vp_family_at(i);
        if (strcmp(f->name, "1f1b") != 0 && out_of_time(plan, deadline))
            continue;
        vp_schedule *s = NULL;
        vp_error ferr = {0};
        vp_status rc = vp_family_build(f->name, spec, &s, &ferr);
        if (rc == VP_ENOMEM)
            return vp__fail(err, rc, "out of memory");
        if (rc != VP_OK)
            continue;
        vp_plan_candidate *c = cand_push(out);
        rc = c ? measure_keep(s, spec, c, keep->on ? &keep->sim[keep->n] : NULL, err) : VP_ENOMEM;
        if (keep->on && rc == VP_OK)
            keep->s[keep->n++] = s;
        else
            vp_schedule_free(s);
        if (rc != VP_OK)
            return rc == VP_ENOMEM ? vp__fail(err, rc, "out of memory") : rc;
        snprintf(c->family, sizeof c->family, "%s", f->name);
        if (!strcmp(f->name, "1f1b"))
            *ref_peak = c->peak;
    }
    return VP_OK;
}

/* The best V block per peak level within the budget (vp_vsearch_run), appended to out by
 * increasing peak. The search builds blocks without recomputation; with spec->recompute
 * each level's block is then built recomputing (and with vocabulary parallelism, its
 * passes placed) and measured again, so its figures are
 * those of the schedule the plan returns. The budget was checked on the peak without R,
 * which bounds the peak with R from above (R only rebuilds, before its backward, what F
 * dropped), so no block over the budget is kept. */
static vp_status add_vblocks(const vp_spec *spec, vp_plan *plan, double deadline, cand_list *out,
                             vp_error *err) {
    plan->blocks_tried = plan->blocks_built = 0;
    if (spec->p < 2)
        return VP_OK;
    double units = plan->budget_in_bytes ? plan->budget / spec->mem.unit_bytes : plan->budget;
    vp_vsearch_opts opts = {
        .max_cap = 2 * spec->p, .max_peak = units * (1 + EPS) + EPS, .deadline_ms = deadline};
    vp_vsearch *found = NULL;
    vp_status rc = vp_vsearch_run(spec, &opts, &found, err);
    if (rc != VP_OK)
        return rc;
    for (int i = 0; i < found->n_levels && rc == VP_OK; i++) {
        const vp_vsearch_level *l = &found->levels[i];
        vp_plan_candidate *c = cand_push(out);
        if (!c) {
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
            break;
        }
        c->is_vblock = 1;
        c->vblock = l->vblock;
        c->peak = l->metrics.peak;
        c->peak_bytes = l->metrics.peak_bytes;
        c->makespan = l->metrics.makespan;
        c->bubble = l->metrics.bubble;
        snprintf(c->family, sizeof c->family, "v-block");
        vp_vblock_format(&c->vblock, spec->p, c->params, sizeof c->params);
        if (finished(spec)) {
            vp_schedule *s = NULL;
            rc = build_vblock(spec, &c->vblock, &s, err);
            if (rc == VP_OK)
                rc = measure(s, spec, c, err);
            vp_schedule_free(s);
        }
    }
    plan->blocks_tried = found->tried;
    plan->blocks_built = found->built;
    plan->blocks_seen = found->seen;
    plan->timed_out |= found->timed_out;
    vp_vsearch_free(found);
    return rc;
}

/* The greedy V schedule under the budget (vp_vgreedy_run, ranked by makespan alone), into
 * *kept (recomputing, vocabulary-parallel and offloading as the spec asks) and appended to
 * out, when it is strictly faster than every candidate in out that fits; when the budget is
 * below what it needs, the greedy under the least limit it runs under instead (a candidate
 * that does not fit, so that a refusal names the least memory a schedule reaches). As for
 * the V blocks, the budget bounds the peak with R from above. */
static vp_status add_greedy(const vp_spec *spec, vp_plan *plan, cand_list *out, vp_schedule **kept,
                            vp_error *err) {
    if (spec->p < 2)
        return VP_OK;
    double units = plan->budget_in_bytes ? plan->budget / spec->mem.unit_bytes : plan->budget;
    vp_vgrid_metrics beat = {0}, m;
    for (int i = 0; i < out->n; i++) {
        const vp_plan_candidate *c = &out->v[i];
        double mem = plan->budget_in_bytes ? c->peak_bytes : c->peak;
        if (mem <= plan->budget * (1 + EPS) + EPS &&
            (!beat.complete || c->makespan < beat.makespan))
            beat = (vp_vgrid_metrics){.makespan = c->makespan, .complete = 1};
    }
    vp_vgreedy_opts opts = {.limit = units * (1 + EPS) + EPS,
                            .rank = VP_VRANK_STEP,
                            .beat = beat.complete ? &beat : NULL};
    vp_error why = {0};
    vp_status rc = vp_vgreedy_run(spec, &opts, kept, &m, &why);
    if (rc == VP_EINVAL) { /* a budget below one microbatch's two chunks */
        opts = (vp_vgreedy_opts){.rank = VP_VRANK_STEP};
        rc = vp_vgreedy_run(spec, &opts, kept, &m, &why);
    }
    if (rc != VP_OK) {
        if (err)
            *err = why;
        return rc;
    }
    if (!*kept)
        return VP_OK; /* nothing faster */
    vp_plan_candidate *c = cand_push(out);
    if (!c)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    *c = (vp_plan_candidate){.peak = m.peak,
                             .peak_bytes = m.peak_bytes,
                             .makespan = m.makespan,
                             .bubble = m.bubble,
                             .limit = opts.limit > 0 ? opts.limit : m.peak};
    snprintf(c->family, sizeof c->family, "v-greedy");
    snprintf(c->params, sizeof c->params, "limit=%gu", c->limit);
    rc = vp_spec_finish(spec, kept, err);
    return rc == VP_OK && finished(spec) ? measure(*kept, spec, c, err) : rc;
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
    snprintf(buf, size, "%s%s%s", c->family, c->params[0] ? " " : "", c->params);
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
        n += snprintf(plan->reason + n, sizeof plan->reason - (size_t)n,
                      "; note: dualpipe keeps two parameter copies per device");
    if (plan->timed_out && n > 0 && n < (int)sizeof plan->reason)
        snprintf(plan->reason + n, sizeof plan->reason - (size_t)n,
                 "; time limit reached (%g s): the best found so far, after %d families and "
                 "%ld of %ld V blocks",
                 spec->time_limit_s, plan->families, plan->blocks_seen, plan->blocks_tried);
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

/* Rebuilds the chosen candidate's schedule (the greedy's is the one add_greedy kept). */
static vp_status rebuild(const vp_spec *spec, const vp_plan_candidate *c, vp_schedule **greedy,
                         vp_schedule **out, vp_error *err) {
    if (c->limit > 0) {
        *out = *greedy;
        *greedy = NULL;
        return VP_OK;
    }
    vp_spec own = spec_of(spec, c);
    return c->is_vblock ? build_vblock(&own, &c->vblock, out, err)
                        : vp_family_build(c->family, &own, out, err);
}

/* Whether candidate c fits the plan's budget. */
static int fits(const vp_plan *plan, const vp_plan_candidate *c) {
    double mem = plan->budget_in_bytes ? c->peak_bytes : c->peak;
    return mem <= plan->budget * (1 + EPS) + EPS;
}

/* What trying shares of one family needs: the family as built and simulated (the shares
 * change none of its times). */
typedef struct offload_try {
    const vp_spec *spec;
    const vp_plan *plan;
    const char *family;
    const vp_schedule *base;
    const vp_sim *sim;
} offload_try;

/* The smallest share that fits so far: its schedule and cost model (owned). */
typedef struct share_kept {
    vp_offload_policy policy;
    double share; /* 0: none fits yet */
    vp_schedule *s;
    vp_cost_model *cm;
} share_kept;

/* Tries base offloading share under policy; when it fits by its op order, *ok is set and
 * it replaces what kept holds. */
static vp_status try_share(const offload_try *o, vp_offload_policy policy, double share, int *ok,
                           share_kept *kept, vp_error *err) {
    vp_offload spec = {.policy = policy, .share = share};
    vp_schedule *shared = NULL, *placed = NULL;
    vp_cost_model *cm = NULL;
    vp_status rc = vp_schedule_offload_shares(o->base, &spec, &shared, err);
    if (rc == VP_OK)
        rc = vp_cost_model_new(shared, &o->spec->costs, &o->spec->mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_schedule_offload_place(shared, cm, o->sim, &spec, &placed, err);
    double *peak = rc == VP_OK ? vp__calloc((size_t)o->base->p, sizeof *peak) : NULL;
    if (rc == VP_OK && !peak)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    *ok = 0;
    if (rc == VP_OK) {
        vp_memory_peaks(placed, cm, 0, peak);
        vp_plan_candidate c = {0};
        for (int d = 0; d < placed->p; d++) {
            c.peak = fmax(c.peak, peak[d]);
            c.peak_bytes = fmax(c.peak_bytes, peak[d] * o->spec->mem.unit_bytes);
        }
        *ok = fits(o->plan, &c);
    }
    free(peak);
    vp_schedule_free(shared);
    if (*ok) {
        vp_schedule_free(kept->s);
        vp_cost_model_free(kept->cm);
        *kept = (share_kept){policy, share, placed, cm};
    } else {
        vp_schedule_free(placed);
        vp_cost_model_free(cm);
    }
    return rc;
}

/* Appends kept, simulated, as o's family's offloaded candidate. */
static vp_status push_kept(const offload_try *o, const share_kept *kept, cand_list *l,
                           vp_error *err) {
    vp_sim *sim = NULL;
    vp_plan_candidate *c = cand_push(l);
    vp_status rc =
        c ? vp_simulate(kept->s, kept->cm, &sim, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc != VP_OK)
        return rc;
    *c = (vp_plan_candidate){.offload_policy = kept->policy, .offload = kept->share};
    snprintf(c->family, sizeof c->family, "%s", o->family);
    snprintf(c->params, sizeof c->params, "offload %g %s", kept->share,
             vp_offload_policy_name(kept->policy));
    c->peak = sim->peak_max;
    for (int d = 0; sim->peak_bytes && d < sim->p; d++)
        c->peak_bytes = fmax(c->peak_bytes, sim->peak_bytes[d]);
    c->makespan = sim->makespan;
    c->bubble = sim->bubble;
    vp_sim_free(sim);
    return VP_OK;
}

/* The lever for one family: the smallest uniform share that fits (1/2, then 1/4 or 3/4,
 * then 1), then the selective policy a quarter below it (the longest-lived whole save more
 * than their share); the smallest that fits joins l, simulated (*makespan: its makespan,
 * or infinity when none fits). */
static vp_status offload_family(const offload_try *o, cand_list *l, double *makespan,
                                vp_error *err) {
    share_kept kept = {0};
    int ok = 0;
    *makespan = INFINITY;
    vp_status rc = try_share(o, VP_OFFLOAD_UNIFORM, 0.5, &ok, &kept, err);
    if (rc == VP_OK)
        rc = try_share(o, VP_OFFLOAD_UNIFORM, ok ? 0.25 : 0.75, &ok, &kept, err);
    if (rc == VP_OK && kept.share == 0)
        rc = try_share(o, VP_OFFLOAD_UNIFORM, 1.0, &ok, &kept, err);
    if (rc == VP_OK && kept.share > 0.25)
        rc = try_share(o, VP_OFFLOAD_SELECTIVE, kept.share - 0.25, &ok, &kept, err);
    if (rc == VP_OK && kept.share > 0) {
        rc = push_kept(o, &kept, l, err);
        *makespan = rc == VP_OK ? l->v[l->n - 1].makespan : INFINITY;
    }
    vp_schedule_free(kept.s);
    vp_cost_model_free(kept.cm);
    return rc;
}

/* A family's candidate index and makespan, ordered by makespan (then index). */
typedef struct by_time {
    double makespan;
    int i;
} by_time;

static int by_makespan(const void *a, const void *b) {
    const by_time *x = a, *y = b;
    return x->makespan != y->makespan ? (x->makespan < y->makespan ? -1 : 1) : x->i - y->i;
}

/* The offloading lever: the families that miss the budget, fastest first, while faster
 * than every schedule that fits (offloaded ones included: offload never speeds one up). */
static vp_status add_offloaded(const vp_spec *spec, const vp_plan *plan, cand_list *l,
                               const family_runs *keep, vp_error *err) {
    double best = INFINITY;
    for (int i = 0; i < l->n; i++)
        if (fits(plan, &l->v[i]) && l->v[i].makespan < best)
            best = l->v[i].makespan;
    by_time *order = vp__calloc((size_t)keep->n + 1, sizeof *order);
    if (!order)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < keep->n; i++) /* the families come first in l */
        order[i] = (by_time){l->v[i].makespan, i};
    qsort(order, (size_t)keep->n, sizeof *order, by_makespan);
    vp_status rc = VP_OK;
    for (int k = 0; rc == VP_OK && k < keep->n; k++) {
        int i = order[k].i;
        if (order[k].makespan >= best - EPS * (1 + best))
            break; /* and every family after it */
        if (fits(plan, &l->v[i]))
            continue;
        char family[32];
        snprintf(family, sizeof family, "%s", l->v[i].family); /* l may grow (realloc) */
        offload_try o = {
            .spec = spec, .plan = plan, .family = family, .base = keep->s[i], .sim = keep->sim[i]};
        double got;
        rc = offload_family(&o, l, &got, err);
        best = fmin(best, got);
    }
    free(order);
    return rc;
}

/* Fills list with every candidate: the families, then, while the deadline (0: none) has
 * not passed, the V blocks, the greedy V search (which the deadline does not stop once it
 * started) and, with keep->on, the offloading lever. */
static vp_status search(const vp_spec *spec, const vp_budget *budget, vp_plan *plan,
                        cand_list *list, family_runs *keep, vp_schedule **greedy, vp_error *err) {
    double deadline = deadline_of(spec, vp__now_ms());
    vp_status rc = add_families(spec, plan, deadline, list, &plan->ref_peak, keep, err);
    plan->families = list->n;
    if (rc == VP_OK)
        rc = resolve_budget(spec, budget, plan, err);
    if (rc != VP_OK)
        return rc;
    if (out_of_time(plan, deadline)) {
        plan->blocks_tried = vp_vsearch_size(spec->p); /* none of them seen */
        return VP_OK;
    }
    rc = add_vblocks(spec, plan, deadline, list, err);
    if (rc == VP_OK && !out_of_time(plan, deadline))
        rc = add_greedy(spec, plan, list, greedy, err);
    if (rc == VP_OK && keep->on && !out_of_time(plan, deadline))
        rc = add_offloaded(spec, plan, list, keep, err);
    return rc;
}

vp_status vp_plan_run(const vp_spec *spec, const vp_budget *budget, vp_plan **out, vp_error *err) {
    return vp_plan_run_levers(spec, budget, NULL, out, err);
}

vp_status vp_plan_run_levers(const vp_spec *spec, const vp_budget *budget,
                             const vp_plan_levers *levers, vp_plan **out, vp_error *err) {
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
    int offload = levers && levers->offload && spec->offload.policy == VP_OFFLOAD_NONE;
    family_runs keep = {.on = offload};
    vp_schedule *greedy = NULL;
    vp_status rc = search(spec, budget, plan, &list, &keep, &greedy, err);
    runs_free(&keep);
    plan->candidates = list.v;
    plan->n_candidates = list.n;
    plan->chosen = -1;
    int lowest = -1;
    for (int i = 0; rc == VP_OK && i < list.n; i++) {
        vp_plan_candidate *c = &list.v[i];
        double mem = plan->budget_in_bytes ? c->peak_bytes : c->peak;
        c->fits = fits(plan, c);
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
        else if (plan->timed_out)
            rc = vp__fail(err, VP_EINVAL,
                          "the time limit (%g s) ended the search before a schedule within the "
                          "budget of %g %s was found (the smallest peak found is %g %s, of %s)",
                          spec->time_limit_s, plan->budget,
                          plan->budget_in_bytes ? "bytes" : "units",
                          plan->budget_in_bytes ? list.v[lowest].peak_bytes : list.v[lowest].peak,
                          plan->budget_in_bytes ? "bytes" : "units",
                          cand_name(&list.v[lowest], name, sizeof name));
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
        rc = rebuild(spec, &list.v[plan->chosen], &greedy, &plan->schedule, err);
    vp_schedule_free(greedy);
    if (rc != VP_OK) {
        vp_plan_free(plan);
        return rc;
    }
    explain(plan, spec);
    *out = plan;
    return VP_OK;
}
