/* Pricing one run: its model, accelerator and workload resolved, every configuration its
 * "*" cells allow priced, the fastest that fits kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "calibrate/calibrate_internal.h"

/* name, or base_dir/name for a relative file path (a name with '/' or ending in .json). */
static const char *path_of(const vp_run_set *set, const char *name, char *buf, size_t size) {
    size_t n = strlen(name);
    bool file = strchr(name, '/') || (n >= 5 && !strcmp(name + n - 5, ".json"));
    if (file && name[0] != '/' && set->base_dir[0])
        snprintf(buf, size, "%s/%s", set->base_dir, name);
    else
        snprintf(buf, size, "%s", name);
    return buf;
}

/* The family a run's schedule cell names with its chunk count ("" with vp > 1 is
 * interleaved, as Megatron-LM's --virtual-pipeline-model-parallel-size means). */
static vp_status choose_family(const vp_run_set *set, const vp_run *run, vp__run_ready *out,
                               vp_error *err) {
    int vp = run->vp == VP_RUN_ANY ? (run->pp > 1 ? 2 : 1) : run->vp;
    const char *fam = run->schedule[0] && strcmp(run->schedule, "*") ? run->schedule
                      : vp > 1                                       ? "interleaved"
                                                                     : "1f1b";
    bool chunked = !strcmp(fam, "interleaved");
    if (chunked && vp < 2)
        return vp__fail(err, VP_EINVAL, "%s:%d: interleaved needs vp >= 2 chunks per device",
                        set->name, run->line);
    if (!chunked && run->vp > 1)
        return vp__fail(err, VP_EINVAL,
                        "%s:%d: vp %d chunks per device needs the interleaved schedule, not %s",
                        set->name, run->line, run->vp, fam);
    snprintf(out->family, sizeof out->family, "%s", fam);
    out->v = chunked ? vp : 0;
    out->p = run->pp;
    return VP_OK;
}

/* The workload of the run at microbatch size mbs (m from it) and recomputation rc. */
static vp_status set_batch(const vp_run_set *set, const vp_run *run, int mbs, vp_recompute rc,
                           vp__run_ready *out, vp_error *err) {
    if (run->gbs % (run->dp * mbs))
        return vp__fail(err, VP_EINVAL, "%s:%d: gbs %d is not a multiple of dp %d x mbs %d",
                        set->name, run->line, run->gbs, run->dp, mbs);
    out->work.mbs = mbs;
    out->work.recompute = rc;
    out->m = run->gbs / (run->dp * mbs);
    return VP_OK;
}

vp_status vp__run_resolve(const vp_run_set *set, int i, const vp_gpu *gpu, vp__run_ready *out,
                          vp_error *err) {
    const vp_run *run = &set->runs[i];
    if (run->why_not[0])
        return vp__fail(err, VP_EUNSUPPORTED, "%s:%d: %s", set->name, run->line, run->why_not);
    char path[2048];
    vp_error why = {0};
    if (vp_arch_resolve(path_of(set, run->model, path, sizeof path), &out->arch, &why) != VP_OK)
        return vp__fail(err, why.status, "%s:%d: model %s: %s", set->name, run->line, path,
                        why.message);
    if (gpu)
        out->gpu = *gpu;
    else if (vp_gpu_resolve(path_of(set, run->gpu[0] ? run->gpu : "h100-80gb", path, sizeof path),
                            &out->gpu, &why) != VP_OK)
        return vp__fail(err, why.status, "%s:%d: gpu %s: %s", set->name, run->line, path,
                        why.message);
    vp_workload *w = &out->work;
    *w = vp_workload_default(&out->arch);
    w->seq = run->seq ? run->seq : w->seq;
    w->tp = run->tp;
    w->dp = run->dp;
    w->ep = run->ep;
    w->cp = run->cp;
    w->sp = run->sp && run->tp > 1;
    w->flash = run->flash;
    w->fp8 = run->fp8;
    w->fp8_params = run->fp8_params;
    w->attn_kernel = run->attn_kernel;
    w->cp_comm = run->cp_comm;
    w->framework = run->framework;
    w->eager = run->eager;
    w->recompute_modules = run->recompute_modules;
    if (run->optimizer != VP_OPTIMIZER_FP32 && out->arch.dtype_bytes > 2)
        return vp__fail(err, VP_EINVAL, "%s:%d: optimizer_dtype %s: model %s trains in fp32",
                        set->name, run->line, vp_optimizer_dtype_name(run->optimizer),
                        out->arch.name);
    vp_workload_set_optimizer(w, run->optimizer);
    w->zero = run->zero;
    w->dp_overlap = run->dp_overlap;
    w->tp_overlap = run->tp_overlap;
    w->pp_overlap = run->pp_overlap;
    w->ep_overlap = run->ep_overlap;
    w->ep_dispatch = run->ep_dispatch;
    w->ep_routing = run->ep_routing;
    w->prec.grad = run->grad_bytes ? run->grad_bytes : w->prec.grad;
    vp_status rc = choose_family(set, run, out, err);
    if (rc == VP_OK)
        rc = set_batch(set, run, run->mbs == VP_RUN_ANY ? 1 : run->mbs,
                       run->recompute == VP_RUN_ANY ? VP_RECOMPUTE_NONE
                                                    : (vp_recompute)run->recompute,
                       out, err);
    return rc;
}

vp_status vp__run_price_ready(const vp__run_ready *ready, vp_price_result **out, vp_error *err) {
    vp_price_setup su = {
        .arch = &ready->arch, .gpu = &ready->gpu, .work = &ready->work, .split = VP_SPLIT_EVEN};
    vp_spec spec = vp_spec_make(ready->p, ready->m);
    spec.v = ready->v;
    return vp_price_family(&su, ready->family, &spec, out, NULL, err);
}

void vp__run_fill(const vp_run *run, const vp__run_ready *ready, const vp_price_result *r,
                  vp_run_price *out) {
    *out = (vp_run_price){.v = ready->v,
                          .mbs = ready->work.mbs,
                          .recompute = ready->work.recompute,
                          .step_time_s = r->step_time_s,
                          .tokens_per_s_per_gpu = r->tokens_per_s_per_gpu,
                          .mfu = r->mfu,
                          .total_bytes = r->memory_max_bytes,
                          .capacity_bytes = r->capacity_bytes,
                          .fits = r->fits};
    snprintf(out->family, sizeof out->family, "%s", ready->family);
    snprintf(out->gpu, sizeof out->gpu, "%s", ready->gpu.name);
    double most = 0; /* the kind the run measured */
    for (int d = 0; d < r->p; d++) {
        const vp_rank_memory *m = &r->memory[d];
        double v = run->mem_kind == VP_MEM_ALLOCATED  ? m->allocated
                   : run->mem_kind == VP_MEM_RESERVED ? m->reserved
                                                      : m->total;
        most = v > most ? v : most;
    }
    out->memory_bytes = most;
}

/* ---- the search over "*" cells -------------------------------------------------------- */

/* Whether a is a better pick than b: fits before not fitting, then faster. */
static bool better(const vp_run_price *a, const vp_run_price *b) {
    if (a->fits != b->fits)
        return a->fits;
    return a->step_time_s < b->step_time_s;
}

/* The schedules a run allows: its own, or with "*" 1F1B and interleaved at every chunk
 * count that divides each device's layers evenly (Megatron-LM's rule; pipelines only). */
static int schedules(const vp_run *run, const vp__run_ready *base, char fam[][32], int *v,
                     int cap) {
    if (strcmp(run->schedule, "*") || run->pp == 1) {
        snprintf(fam[0], 32, "%s", base->family);
        v[0] = base->v;
        return 1;
    }
    int n = 0;
    snprintf(fam[n], 32, "1f1b");
    v[n++] = 0;
    for (int k = 2; k <= base->arch.layers / run->pp && n < cap; k++)
        if ((run->vp == VP_RUN_ANY || run->vp == k) && base->arch.layers % (run->pp * k) == 0) {
            snprintf(fam[n], 32, "interleaved");
            v[n++] = k;
        }
    return n;
}

/* One candidate priced into *best (and *chosen) when it is better; a candidate the family
 * refuses is skipped (its error kept in *last). */
static vp_status try_candidate(const vp_run *run, vp__run_ready *c, vp_run_price *best,
                               vp__run_ready *chosen, bool *found, vp_error *last) {
    vp_price_result *r = NULL;
    vp_error why = {0};
    vp_status rc = vp__run_price_ready(c, &r, &why);
    if (rc == VP_ENOMEM) {
        *last = why;
        return rc;
    }
    if (rc != VP_OK) {
        *last = why;
        return VP_OK;
    }
    vp_run_price got;
    vp__run_fill(run, c, r, &got);
    vp_price_result_free(r);
    if (!*found || better(&got, best)) {
        *best = got;
        *chosen = *c;
    }
    *found = true;
    return VP_OK;
}

vp_status vp__run_choose(const vp_run_set *set, int i, const vp_gpu *gpu, vp__run_ready *chosen,
                         vp_run_price *out, vp_error *err) {
    vp__run_ready base;
    vp_status rc = vp__run_resolve(set, i, gpu, &base, err);
    if (rc != VP_OK)
        return rc;
    const vp_run *run = &set->runs[i];
    char fam[32][32];
    int v[32], n_fam = schedules(run, &base, fam, v, 32);
    int per_rank = run->gbs / run->dp;
    bool found = false;
    vp_error last = {0};
    for (int mbs = 1; mbs <= per_rank && rc == VP_OK; mbs++) {
        if (run->mbs != VP_RUN_ANY ? mbs != run->mbs : per_rank % mbs)
            continue;
        for (int k = VP_RECOMPUTE_NONE; k <= VP_RECOMPUTE_FULL && rc == VP_OK; k++) {
            bool no_try =
                k == VP_RECOMPUTE_SELECTIVE && !vp_price_selective_differs(&base.arch, &base.work);
            if (run->recompute != VP_RUN_ANY ? k != run->recompute : no_try)
                continue;
            for (int f = 0; f < n_fam && rc == VP_OK; f++) {
                vp__run_ready c = base;
                snprintf(c.family, sizeof c.family, "%s", fam[f]);
                c.v = v[f];
                rc = set_batch(set, run, mbs, (vp_recompute)k, &c, err);
                if (rc == VP_OK)
                    rc = try_candidate(run, &c, out, chosen, &found, &last);
            }
        }
    }
    if (rc == VP_OK && !found)
        rc = vp__fail(err, last.status ? last.status : VP_EINVAL, "%s:%d: %s", set->name, run->line,
                      last.message[0] ? last.message : "no configuration to price");
    return rc;
}

vp_status vp_calibrate_price(const vp_run_set *set, int i, const vp_gpu *gpu, vp_run_price *out,
                             vp_error *err) {
    vp__run_ready chosen;
    return vp__run_choose(set, i, gpu, &chosen, out, err);
}
