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
    out->work.mbs = c->mbs;
    out->work.recompute = c->recompute;
    out->work.sp = req->work.sp && c->tp > 1;
    out->setup = (vp_price_setup){
        .arch = req->arch, .gpu = req->gpu, .work = &out->work, .split = req->split};
}

double vp_hybrid_margin_default(const vp_gpu *gpu) {
    const vp_expected_error *e = &gpu->expected;
    return gpu->memory_bytes * (e->memory_runs > 0 ? e->memory_mean : 0.10);
}

double vp__hy_margin(const vp_hybrid_request *req) {
    return req->margin_bytes < 0 ? vp_hybrid_margin_default(req->gpu) : req->margin_bytes;
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

/* Builds config's schedule on lay into *s and its op-order memory into mem. */
static vp__hy_verdict build(const vp_hybrid_request *req, const vp_price_layout *lay,
                            const vp__hy_levels *levels, vp_hybrid_config *c, vp_schedule **s,
                            vp_rank_memory *mem, vp_error *err) {
    if (!strcmp(c->family, "v-block"))
        return choose_vblock(req, lay, levels, c, s, mem, err);
    vp_spec spec = vp_spec_make(c->pp, c->m);
    spec.v = c->v;
    spec.vocab_parallel = req->vocab_parallel;
    bool mean;
    vp_status rc = vp_price_build(lay, c->family, &spec, s, &mean, err);
    if (rc == VP_OK)
        rc = vp_price_layout_memory(lay, *s, mem, err);
    if (rc != VP_OK)
        return rc == VP_ENOMEM ? VP__HY_FAILED : VP__HY_REFUSED;
    c->memory_max_bytes = largest(mem, c->pp);
    return c->memory_max_bytes <= req->gpu->memory_bytes ? VP__HY_PRICED : VP__HY_OVER;
}

vp__hy_verdict vp__hy_evaluate(const vp_hybrid_request *req, const vp_schedule *shape,
                               const vp__hy_levels *levels, vp_hybrid_config *c,
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
    vp__hy_verdict v = rc == VP_OK       ? build(req, lay, levels, c, &s, mem, err)
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
    vp__hy_verdict v = vp__hy_evaluate(req, shape, NULL, &c, out, &why);
    vp_schedule_free(shape);
    if (v == VP__HY_PRICED)
        return VP_OK;
    if (err)
        *err = why;
    return v == VP__HY_FAILED ? why.status : vp__fail(err, VP_EINVAL, "%s", why.message);
}
