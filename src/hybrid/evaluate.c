/* Evaluating one configuration: its setup, its schedule built with the real costs (or its
 * V building block), the memory of its op order, and its simulation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "hybrid/hybrid_internal.h"

vp_status vp__hy_levels_find(int pp, int threads, vp__hy_levels *out, vp_error *err) {
    *out = (vp__hy_levels){.pp = pp};
    if (pp < 2)
        return VP_OK;
    vp_spec spec = vp_spec_make(pp, pp); /* the frontier's blocks are those of longer runs */
    spec.threads = threads;
    spec.time_limit_s = 0; /* the whole frontier: the search's own limit governs */
    vp_budget all = {VP_BUDGET_FRACTION, 1e6}; /* every schedule fits: the whole frontier */
    vp_plan *plan = NULL;
    vp_status rc = vp_plan_run(&spec, &all, &plan, err);
    if (rc != VP_OK)
        return rc;
    out->blocks = vp__calloc((size_t)plan->n_frontier + 1, sizeof *out->blocks);
    if (!out->blocks) {
        vp_plan_free(plan);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    for (int i = plan->n_frontier - 1; i >= 0; i--) { /* by decreasing peak */
        const vp_plan_candidate *c = &plan->candidates[plan->frontier[i]];
        if (c->is_vblock)
            out->blocks[out->n++] = c->vblock;
    }
    vp_plan_free(plan);
    return VP_OK;
}

void vp__hy_levels_release(vp__hy_levels *levels) {
    free(levels->blocks);
    *levels = (vp__hy_levels){0};
}

void vp__hy_setup_make(const vp_hybrid_request *req, const vp_hybrid_config *c, vp__hy_setup *out) {
    out->work = req->work;
    out->work.tp = c->tp;
    out->work.dp = c->dp;
    out->work.ep = c->ep > 0 ? c->ep : 1;
    out->work.etp = c->etp > 0 ? c->etp : 1;
    out->work.cp = c->cp > 0 ? c->cp : 1;
    out->work.mbs = c->mbs;
    out->work.recompute = c->recompute;
    out->work.recompute_modules = c->recompute == VP_RECOMPUTE_SELECTIVE ? c->recompute_modules : 0;
    out->work.fp8 = c->fp8;
    out->work.sp = req->work.sp && c->tp > 1;
    out->work.zero = req->zero_search ? c->zero : req->work.zero;
    out->setup = (vp_price_setup){
        .arch = req->arch, .gpu = req->gpu, .work = &out->work, .split = req->split};
}

double vp__hy_margin(const vp_hybrid_request *req) {
    return req->margin_bytes < 0 ? vp_price_margin_default(req->gpu) : req->margin_bytes;
}

void vp__hy_group(vp_hybrid_config *c) {
    bool r = !strcmp(c->family, "1f1b") && c->recompute == VP_RECOMPUTE_FULL;
    snprintf(c->group, sizeof c->group, "%s", r ? "1f1b-r" : c->family);
}

static double largest(const vp_rank_memory *memory, int p) {
    double most = 0;
    for (int d = 0; d < p; d++)
        most = memory[d].total > most ? memory[d].total : most;
    return most;
}

/* Builds block vb for config into *s with its op-order memory in mem; returns the largest
 * rank's total, or -1 after filling err (*verdict says how it failed). */
static double try_vblock(const vp_vblock *vb, const vp_price_layout *lay, const vp_hybrid_config *c,
                         vp_schedule **s, vp_rank_memory *mem, vp__hy_verdict *verdict,
                         vp_error *err) {
    vp_schedule_free(*s);
    *s = NULL;
    vp_spec spec = vp_spec_make(c->pp, c->m); /* its vocabulary passes, as the layout's */
    spec.costs = lay->costs;
    spec.vocab_parallel = lay->vocab_parallel;
    vp_status rc = vp_vblock_build(vb, c->pp, c->m, "v-block", s, err);
    if (rc == VP_OK)
        rc = vp_spec_finish(&spec, s, err);
    if (rc == VP_OK)
        rc = vp_price_layout_memory(lay, *s, mem, err);
    if (rc == VP_OK)
        return largest(mem, c->pp);
    *verdict = rc == VP_ENOMEM ? VP__HY_FAILED : VP__HY_REFUSED;
    return -1;
}

/* The V block config runs (*s built, config's block set): its own when params are set,
 * else the fastest level that fits, found by bisection on the levels (fastest first, so
 * memory falls along them). VP__HY_OVER with the least memory when even the smallest
 * level does not fit. */
static vp__hy_verdict choose_vblock(const vp_hybrid_request *req, const vp_price_layout *lay,
                                    const vp__hy_levels *levels, vp_hybrid_config *c,
                                    vp_schedule **s, vp_rank_memory *mem, vp_error *err) {
    vp__hy_verdict v = VP__HY_PRICED;
    double cap = req->gpu->memory_bytes, need;
    if (c->params[0])
        return try_vblock(&c->vblock, lay, c, s, mem, &v, err) < 0 ? v : VP__HY_PRICED;
    if (!levels || levels->n == 0)
        return VP__HY_REFUSED;
    int lo = 0, hi = levels->n - 1, built = hi; /* the answer is in [lo, hi]: hi fits */
    if ((need = try_vblock(&levels->blocks[hi], lay, c, s, mem, &v, err)) < 0)
        return v;
    if (need > cap) {
        c->memory_max_bytes = need;
        return VP__HY_OVER;
    }
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if ((need = try_vblock(&levels->blocks[built = mid], lay, c, s, mem, &v, err)) < 0)
            return v;
        if (need <= cap)
            hi = mid;
        else
            lo = mid + 1;
    }
    c->vblock = levels->blocks[hi];
    vp_vblock_format(&c->vblock, c->pp, c->params, sizeof c->params);
    if (built != hi && try_vblock(&c->vblock, lay, c, s, mem, &v, err) < 0)
        return v;
    return VP__HY_PRICED;
}

/* Whether op-order memory mem of config c fits the device with room bytes left and (when
 * known) the host. */
static bool fits_in(const vp_hybrid_request *req, const vp_hybrid_config *c,
                    const vp_rank_memory *mem, double room) {
    double host = req->gpu->host_memory_bytes;
    for (int d = 0; d < c->pp; d++)
        if (mem[d].total > req->gpu->memory_bytes - room || (host > 0 && mem[d].host > host))
            return false;
    return true;
}

/* Schedule base (simulated: sim) offloading share (uniform) on lay (its offload figures
 * set for the share) into *out with its op-order memory in mem. */
static vp_status offload_at(const vp_price_setup *su, vp_price_layout *lay, const vp_schedule *base,
                            const vp_sim *sim, double share, vp_schedule **out, vp_rank_memory *mem,
                            vp_error *err) {
    vp_offload spec = {.policy = VP_OFFLOAD_UNIFORM, .share = share};
    vp_schedule *shared = NULL;
    *out = NULL;
    vp_status rc = vp_schedule_offload_shares(base, &spec, &shared, err);
    if (rc == VP_OK)
        rc = vp_price_layout_offload(lay, su, shared, err);
    if (rc == VP_OK)
        rc = vp_schedule_offload_place(shared, lay->cm, sim, &spec, out, err);
    if (rc == VP_OK)
        rc = vp_price_layout_memory(lay, *out, mem, err);
    vp_schedule_free(shared);
    return rc;
}

/* The offloading lever for *s, over the capacity less room: the smallest share that fits
 * (1, then 1/2, then 1/4 or 3/4), or config's own share when set. Replaces *s and mem when
 * one fits (c->offload set); else leaves lay without offload. */
static vp_status offload_lever(const vp_hybrid_request *req, const vp_price_setup *su,
                               vp_price_layout *lay, vp_hybrid_config *c, vp_schedule **s,
                               vp_rank_memory *mem, double room, vp_error *err) {
    double tried[3] = {c->offload > 0 ? c->offload : 1.0, 0.5, 0}, best = 0;
    int n = c->offload > 0 ? 1 : 2;
    vp_rank_memory *m = vp__calloc((size_t)c->pp, sizeof *m);
    vp_sim *sim = NULL; /* of *s without copies: the shares change none of its times */
    vp_status rc =
        m ? vp_simulate(*s, lay->cm, &sim, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; rc == VP_OK && i < n; i++) {
        vp_schedule *o = NULL;
        rc = offload_at(su, lay, *s, sim, tried[i], &o, m, err);
        bool ok = rc == VP_OK && fits_in(req, c, m, room);
        if (ok || c->offload > 0) {
            best = tried[i];
            vp_schedule_free(*s);
            *s = o;
            memcpy(mem, m, (size_t)c->pp * sizeof *m);
        } else {
            vp_schedule_free(o);
        }
        if (i == 0 && !ok && c->offload <= 0)
            break;            /* not even everything: no share fits */
        if (i == 1 && n == 2) /* 1/2 fits: try 1/4, else 3/4 */
            tried[n++] = ok ? 0.25 : 0.75;
    }
    free(m);
    vp_sim_free(sim);
    c->offload = best;
    return rc == VP_OK ? vp_price_layout_offload(lay, su, *s, err) /* prices what *s keeps */
                       : rc;
}

/* Builds config's schedule on lay into *s and its op-order memory into mem (offloading,
 * when req lets it, to leave the margin, or else to fit). */
static vp__hy_verdict build(const vp_hybrid_request *req, const vp_price_setup *su,
                            vp_price_layout *lay, const vp__hy_levels *levels, vp__hy_memo *memo,
                            vp_hybrid_config *c, vp_schedule **s, vp_rank_memory *mem,
                            vp_error *err) {
    if (!strcmp(c->family, "v-block"))
        return choose_vblock(req, lay, levels, c, s, mem, err);
    vp_spec spec = vp_spec_make(c->pp, c->m);
    spec.v = c->v;
    spec.vocab_parallel = req->vocab_parallel;
    bool mean;
    vp_status rc = vp__hy_memo_build(memo, lay, c->family, &spec, s, &mean, err);
    if (rc == VP_OK)
        rc = vp_price_layout_memory(lay, *s, mem, err);
    double margin = vp__hy_margin(req);
    if (rc == VP_OK && (c->offload > 0 || (req->offload && !fits_in(req, c, mem, margin))))
        rc = offload_lever(req, su, lay, c, s, mem, margin, err);
    if (rc == VP_OK && req->offload && c->offload <= 0 && margin > 0 && !fits_in(req, c, mem, 0))
        rc = offload_lever(req, su, lay, c, s, mem, 0, err);
    if (rc != VP_OK)
        return rc == VP_ENOMEM ? VP__HY_FAILED : VP__HY_REFUSED;
    c->memory_max_bytes = largest(mem, c->pp);
    return fits_in(req, c, mem, 0) ? VP__HY_PRICED : VP__HY_OVER;
}

vp__hy_verdict vp__hy_evaluate(const vp_hybrid_request *req, const vp_schedule *shape,
                               const vp__hy_levels *levels, vp__hy_memo *memo, vp_hybrid_config *c,
                               vp_hybrid_priced *priced, vp_error *err) {
    vp__hy_setup hs;
    vp__hy_setup_make(req, c, &hs);
    vp__hy_group(c);
    vp_price_layout *lay = NULL;
    vp_schedule *s = NULL;
    vp_rank_memory *mem = vp__calloc((size_t)c->pp, sizeof *mem);
    if (!mem) {
        vp__fail(err, VP_ENOMEM, "out of memory");
        return VP__HY_FAILED;
    }
    vp_status rc = vp_price_layout_new(&hs.setup, shape, &lay, err);
    vp__hy_verdict v = rc == VP_OK       ? build(req, &hs.setup, lay, levels, memo, c, &s, mem, err)
                       : rc == VP_ENOMEM ? VP__HY_FAILED
                                         : VP__HY_REFUSED;
    vp_price_result *r = NULL;
    if (v == VP__HY_PRICED || (v == VP__HY_OVER && priced && s)) {
        v = vp_price_on_layout(&hs.setup, lay, s, &r, err) == VP_OK ? VP__HY_PRICED : VP__HY_FAILED;
        if (r) {
            c->step_time_s = r->step_time_s;
            c->mfu = r->mfu;
            c->bubble = r->bubble;
            c->memory_max_bytes = r->memory_max_bytes;
            c->fits = r->fits;
            c->headroom_bytes = r->capacity_bytes - r->memory_max_bytes;
            c->tight = c->fits && c->headroom_bytes < vp__hy_margin(req);
            c->host_max_bytes = r->host_max_bytes;
            c->copy_occupancy = r->copy_occupancy;
        }
    }
    if (priced && v == VP__HY_PRICED) {
        *priced = (vp_hybrid_priced){*c, hs.work, r, s};
        r = NULL;
        s = NULL;
    }
    vp_price_result_free(r);
    vp_schedule_free(s);
    vp_price_layout_free(lay);
    free(mem);
    return v;
}

void vp_hybrid_priced_release(vp_hybrid_priced *priced) {
    if (!priced)
        return;
    vp_price_result_free(priced->result);
    vp_schedule_free(priced->schedule);
    *priced = (vp_hybrid_priced){0};
}

vp_status vp_hybrid_price(const vp_hybrid_request *req, const vp_hybrid_config *config,
                          vp_hybrid_priced *out, vp_error *err) {
    *out = (vp_hybrid_priced){0};
    vp_hybrid_config c = *config;
    bool vblock = !strcmp(c.family, "v-block");
    if (c.pp < 1 || c.m < 1 || (vblock && !c.params[0]))
        return vp__fail(err, VP_EINVAL, "configuration %s at PP %d, m %d is not one to price",
                        c.family, c.pp, c.m);
    vp_spec spec = vp_spec_make(c.pp, c.m);
    spec.v = c.v;
    spec.vocab_parallel = req->vocab_parallel;
    vp_schedule *shape = NULL;
    vp_status rc =
        vblock ? vp_schedule_new("v-block", (vp_shape){c.pp, 2 * c.pp, 1, VP_PLACE_V}, &shape, err)
               : vp_family_build(c.family, &spec, &shape, err);
    if (rc != VP_OK)
        return rc;
    shape->vocab_parallel = req->vocab_parallel;
    vp_error why = {0};
    vp__hy_verdict v = vp__hy_evaluate(req, shape, NULL, NULL, &c, out, &why);
    vp_schedule_free(shape);
    if (v == VP__HY_PRICED)
        return VP_OK;
    if (err)
        *err = why;
    return v == VP__HY_FAILED ? why.status : vp__fail(err, VP_EINVAL, "%s", why.message);
}
