/* Pricing a schedule: simulate it on its layout, then add the optimizer step and the
 * data-parallel reduction, itemise every rank's memory, and write the result as JSON. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "price/price_internal.h"

void vp_price_result_free(vp_price_result *r) {
    if (!r)
        return;
    free(r->layers_per_stage);
    free(r->stage);
    free(r->memory);
    vp_sim_free(r->sim);
    free(r);
}

static vp_price_result *result_alloc(const vp_price_layout *lay) {
    vp_price_result *r = vp__calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->layers_per_stage = vp__calloc((size_t)lay->route_len, sizeof(int));
    r->stage = vp__calloc((size_t)lay->S, sizeof *r->stage);
    r->memory = vp__calloc((size_t)lay->p, sizeof *r->memory);
    if (r->layers_per_stage && r->stage && r->memory) {
        memcpy(r->layers_per_stage, lay->layers_per_stage, (size_t)lay->route_len * sizeof(int));
        memcpy(r->stage, lay->stage, (size_t)lay->S * sizeof *r->stage);
        return r;
    }
    vp_price_result_free(r);
    return NULL;
}

/* Seconds of rank d's optimizer step, memory-bound, at hbm_efficiency of the HBM
 * bandwidth: per parameter of its optimizer shard it reads the gradient three times
 * (unscaling and the overflow check, the gradient norm for clipping, Adam), reads and
 * writes the fp32 weights (master copy, or the weights themselves) and the moments, and
 * writes the 16-bit copy when there is a master. With FP8 training the weights are then
 * cast to their FP8 copies (vp__fp8_step_seconds). */
static double optimizer_seconds(const vp_price_setup *su, const vp_rank_memory *m, double experts,
                                double fp8_elements) {
    const vp_workload *t = su->work;
    const vp_precision *pr = &t->prec;
    double shard =
        vp__zero_dense_params(t, m, experts) / (t->zero ? vp__shard_group(t, false) : 1) +
        experts / (t->zero && experts > 0 ? vp__expert_dp(t) : 1);
    double weights = pr->master ? pr->master : pr->param;
    double traffic = 3.0 * pr->grad + 2.0 * (weights + pr->moments) + (pr->master ? pr->param : 0);
    return shard * traffic / (su->gpu->hbm_bandwidth * su->gpu->hbm_efficiency) +
           vp__fp8_step_seconds(su, fp8_elements);
}

/* Model FLOPs of one microbatch through the whole model (F + B + W, no recomputation,
 * no parallelism; a mixture of experts' active FLOPs, no capacity padding). */
static double model_flops_per_microbatch(const vp_price_setup *su) {
    vp_workload plain = *su->work;
    plain.tp = plain.cp = plain.ep = plain.etp = 1;
    plain.recompute = VP_RECOMPUTE_NONE;
    vp_arch a = *su->arch;
    a.capacity = 0;
    double weight[VP__PIECES], total = 0;
    vp__piece_weights(&a, 0, a.layers, true, true, weight);
    for (int k = 0; k < VP__PIECES; k++) {
        vp_price_facts f;
        if (!weight[k])
            continue;
        vp__piece_facts(&a, &plain, vp__piece_part(k), vp__piece_kind(k), &f);
        total += weight[k] * (f.flops_f + f.flops_b + f.flops_w);
    }
    return total;
}

void vp__step_tail_of(const vp_price_setup *setup, const vp_price_layout *lay,
                      const vp_rank_memory *memory, const double *dev_end, vp__step_tail *out) {
    *out = (vp__step_tail){0};
    vp_workload work = *setup->work; /* the stage ZeRO runs at under this pipeline */
    work.zero = vp__zero_effective(setup->work, lay->p);
    vp_price_setup zsu = *setup, *su = &zsu;
    zsu.work = &work;
    double end = 0, after = 0, before = 0, share = 0;
    for (int d = 0; d < lay->p; d++) {
        double window_b = 0, window_f = 0; /* one microbatch's passes on d, seconds */
        double experts = 0;                /* the routed experts' parameters on d */
        double fp8 = 0;                    /* its FP8 linears' weights */
        for (int st = 0; st < lay->S; st++)
            if (lay->stage[st].device == d) {
                window_b += (lay->stage[st].b_ms + lay->stage[st].w_ms) / 1e3;
                window_f += lay->stage[st].f_ms / 1e3;
                experts += lay->stage[st].expert_params;
                fp8 += vp__fp8_weight_elements(su, lay->stage[st].l0, lay->stage[st].l1);
            }
        vp__dp_cost dp;
        vp__dp_cost_of(su, d, &memory[d], experts, window_b, window_f, &dp);
        double opt = optimizer_seconds(su, &memory[d], experts, fp8);
        out->optimizer_s = opt > out->optimizer_s ? opt : out->optimizer_s;
        out->dp_reduce_s = dp.reduce_s > out->dp_reduce_s ? dp.reduce_s : out->dp_reduce_s;
        end = dev_end[d] > end ? dev_end[d] : end;
        after = dev_end[d] + dp.after_s > after ? dev_end[d] + dp.after_s : after;
        before = dp.before_s > before ? dp.before_s : before;
        share = dp.after_s > share ? dp.after_s : share;
    }
    /* a share hides that share of the slowest reduction, after the whole schedule */
    bool modelled = su->work->dp_overlap == VP_OVERLAP_MODELLED;
    out->exposed_s = (modelled ? after - end : share) + before;
    out->step_s = end + out->optimizer_s + out->exposed_s;
}

void vp__rank_memory(const vp_price_layout *lay, int d, int m, double activations,
                     vp_rank_memory *out) {
    *out = lay->fixed[d];
    out->buffers += m * lay->per_microbatch[d].buffers;
    out->logits += m * lay->per_microbatch[d].logits;
    out->activations = activations;
    vp__memory_close(lay->frag_fraction, out);
}

void vp__memory_close(double frag_fraction, vp_rank_memory *m) {
    m->allocated = m->params + m->grads + m->optimizer + m->activations + m->buffers +
                   m->workspace + m->logits + m->gathers + m->fp8_weights;
    m->fragmentation = frag_fraction * m->allocated;
    m->reserved = m->allocated + m->fragmentation;
    m->total = m->reserved + m->context + m->comm + m->reserve;
}

/* The offload figures from the simulation: host bytes per rank (against the host memory
 * when known), the busiest copy engine, the longest wait for copies. */
static void finish_offload(const vp_price_setup *su, const vp_schedule *s, const vp_sim *sim,
                           vp_price_result *r) {
    r->host_capacity_bytes = su->gpu->host_memory_bytes;
    for (int d = 0; d < s->p; d++) {
        r->memory[d].host = sim->host_peak_bytes[d];
        r->host_max_bytes = fmax(r->host_max_bytes, sim->host_peak_bytes[d]);
        if (sim->makespan > 0)
            r->copy_occupancy = fmax(r->copy_occupancy, sim->copy_busy[d] / sim->makespan);
        r->offload_stall_s = fmax(r->offload_stall_s, sim->stall[d] / 1e3);
    }
    if (r->host_capacity_bytes > 0 && r->host_max_bytes > r->host_capacity_bytes)
        r->fits = false;
}

/* Step time, rates and the activations of every rank from the simulation. */
static vp_status finish(const vp_price_setup *su, const vp_price_layout *lay, const vp_schedule *s,
                        const vp_sim *sim, vp_price_result *r, vp_error *err) {
    const vp_workload *t = su->work;
    r->makespan_s = sim->makespan / 1e3;
    r->bubble = sim->bubble;
    double *end = vp__calloc((size_t)s->p, sizeof *end);
    if (!end)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int d = 0; d < s->p; d++) {
        vp_rank_memory *m = &r->memory[d];
        vp__rank_memory(lay, d, s->m, sim->peak_bytes[d], m);
        if (m->total > r->memory_max_bytes) {
            r->memory_max_bytes = m->total;
            r->memory_max_rank = d;
        }
        end[d] = sim->dev_last[d] / 1e3;
    }
    vp__step_tail tail;
    vp__step_tail_of(su, lay, r->memory, end, &tail);
    free(end);
    r->optimizer_s = tail.optimizer_s;
    r->dp_reduce_s = tail.dp_reduce_s;
    r->step_time_s = tail.step_s;
    r->dp_exposed_s = tail.exposed_s;
    double samples = (double)s->m * t->mbs * t->dp;
    r->model_flops = samples / t->mbs * model_flops_per_microbatch(su);
    r->mfu = r->model_flops / (r->gpus * su->gpu->peak_flops * r->step_time_s);
    r->samples_per_s_per_gpu = samples / r->step_time_s / r->gpus;
    r->tokens_per_s = samples * t->seq / r->step_time_s;
    r->tokens_per_s_per_gpu = r->tokens_per_s / r->gpus;
    r->capacity_bytes = su->gpu->memory_bytes;
    r->fits = r->memory_max_bytes <= r->capacity_bytes;
    r->expected = su->gpu->expected;
    vp_price_expected_kind(t, &r->expected_kind);
    if (sim->host_peak_bytes)
        finish_offload(su, s, sim, r);
    r->margin_bytes = vp_price_margin_default(su->gpu);
    r->tight = r->fits && r->capacity_bytes - r->memory_max_bytes < r->margin_bytes;
    return VP_OK;
}

double vp_price_margin_default(const vp_gpu *gpu) {
    const vp_expected_error *e = &gpu->expected;
    return gpu->memory_bytes * (e->memory_runs > 0 ? e->memory_mean : 0.10);
}

bool vp__price_same_shape(const vp_price_layout *lay, const vp_schedule *s) {
    if (lay->p != s->p || lay->S != s->S || lay->route_len != s->route_len ||
        lay->cm->recompute != s->recompute || lay->vocab_parallel != s->vocab_parallel)
        return false;
    for (int st = 0; st < s->S; st++)
        if (lay->stage[st].device != s->stage_device[st] ||
            lay->stage[st].off_bytes != s->offload[st] * lay->stage[st].hold_bytes)
            return false;
    return true;
}

vp_status vp_price_on_layout(const vp_price_setup *su, const vp_price_layout *lay,
                             const vp_schedule *s, vp_price_result **out, vp_error *err) {
    *out = NULL;
    if (!vp__price_same_shape(lay, s))
        return vp__fail(err, VP_EINVAL, "the layout was priced for another shape than %s's",
                        s->family);
    vp_sim *sim = NULL;
    vp_status rc = vp_simulate(s, lay->cm, &sim, err);
    if (rc != VP_OK)
        return rc;
    vp_price_result *r = result_alloc(lay);
    if (!r) {
        vp_sim_free(sim);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    snprintf(r->family, sizeof r->family, "%s", s->family);
    snprintf(r->model, sizeof r->model, "%s", su->arch->name);
    snprintf(r->gpu, sizeof r->gpu, "%s", su->gpu->name);
    r->p = s->p;
    r->S = s->S;
    r->m = s->m;
    r->route_len = s->route_len;
    r->tp = su->work->tp;
    r->dp = su->work->dp;
    r->ep = su->work->ep;
    r->etp = su->work->etp;
    r->cp = su->work->cp;
    r->cp_comm = su->work->cp_comm;
    r->gpus = s->p * r->tp * r->cp * r->dp;
    r->seq = su->work->seq;
    r->mbs = su->work->mbs;
    r->hop_ms = lay->hop_ms;
    r->costs = lay->costs;
    r->costs.dev_f = r->costs.dev_b = r->costs.dev_w = NULL;
    r->sim = sim;
    r->pairs = vp__overlap_pairs(s);
    r->ep_overlap = su->work->ep_overlap;
    rc = vp__overlap_hidden(lay->cm, s, r->stage, err);
    if (rc == VP_OK)
        rc = finish(su, lay, s, sim, r, err);
    if (rc != VP_OK) {
        vp_price_result_free(r);
        return rc;
    }
    *out = r;
    return VP_OK;
}

vp_status vp_price_schedule(const vp_price_setup *su, const vp_schedule *s, vp_price_result **out,
                            vp_error *err) {
    *out = NULL;
    vp_price_layout *lay = NULL;
    vp_status rc = vp_price_layout_new(su, s, &lay, err);
    if (rc == VP_OK)
        rc = vp_price_on_layout(su, lay, s, out, err);
    vp_price_layout_free(lay);
    return rc;
}

/* s, built, offloading as spec asks: its O and L placed under the layout's copy times
 * (the layout's shape offloads as spec does). Replaces *s (freed; NULL on failure). */
static vp_status offload_priced(const vp_price_layout *lay, const vp_offload *spec, vp_schedule **s,
                                vp_error *err) {
    vp_schedule *shared = NULL, *placed = NULL;
    vp_status rc = vp_schedule_offload_shares(*s, spec, &shared, err);
    if (rc == VP_OK)
        rc = vp_schedule_offload_place(shared, lay->cm, NULL, spec, &placed, err);
    vp_schedule_free(shared);
    vp_schedule_free(*s);
    *s = placed;
    return rc;
}

vp_status vp_price_build(const vp_price_layout *lay, const char *family, const vp_spec *spec,
                         vp_schedule **s, bool *mean, vp_error *err) {
    vp_spec real = *spec;
    real.costs = lay->costs;
    real.mem = lay->mem;
    real.offload.policy = VP_OFFLOAD_NONE; /* placed below with the copies' real times */
    *mean = false;
    vp_status rc = vp_family_build(family, &real, s, err);
    if (rc == VP_EINVAL && real.costs.dev_f) {
        vp_error first = err ? *err : (vp_error){0};
        real.costs.dev_f = real.costs.dev_b = real.costs.dev_w = NULL;
        *mean = vp_family_build(family, &real, s, NULL) == VP_OK;
        if (!*mean && err)
            *err = first;
        rc = *mean ? VP_OK : rc;
    }
    if (rc == VP_OK && spec->offload.policy != VP_OFFLOAD_NONE)
        rc = offload_priced(lay, &spec->offload, s, err);
    if (rc == VP_OK)
        rc = vp__overlap_pair(lay, s, err);
    return rc;
}

vp_status vp_price_family(const vp_price_setup *su, const char *family, const vp_spec *spec,
                          vp_price_result **out, vp_schedule **sched, vp_error *err) {
    *out = NULL;
    if (sched)
        *sched = NULL;
    vp_schedule *probe = NULL, *s = NULL;
    vp_price_layout *lay = NULL;
    vp_status rc = vp_family_build(family, spec, &probe, err);
    if (rc == VP_OK)
        rc = vp_price_layout_new(su, probe, &lay, err);
    bool mean = false;
    if (rc == VP_OK)
        rc = vp_price_build(lay, family, spec, &s, &mean, err);
    if (rc == VP_OK)
        rc = vp__price_same_shape(lay, s) ? vp_price_on_layout(su, lay, s, out, err)
                                          : vp_price_schedule(su, s, out, err);
    if (rc == VP_OK)
        (*out)->mean_costs = mean;
    vp_price_layout_free(lay);
    vp_schedule_free(probe);
    if (rc == VP_OK && sched)
        *sched = s;
    else
        vp_schedule_free(s);
    return rc;
}

/* ---- JSON --------------------------------------------------------------------------- */

/* A byte count as a JSON integer (counts split over TP may have a fraction: rounded);
 * past 2^53, where a double no longer holds every integer (an absurdly large model), as
 * a real (never a count wrapped to a negative one). */
static json_t *bytes_json(double bytes) {
    return bytes < 0x1p53 ? json_integer((json_int_t)llround(bytes)) : json_real(bytes);
}

/* One rank's memory; with offload (host) its host bytes too. */
static json_t *memory_json(const vp_rank_memory *m, int rank, bool host) {
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(rank));
    const char *names[] = {"params",    "grads",         "optimizer", "activations",
                           "buffers",   "workspace",     "logits",    "gathers",
                           "allocated", "fragmentation", "reserved",  "context",
                           "comm",      "reserve",       "total",     "host"};
    double values[] = {m->params,    m->grads,         m->optimizer, m->activations,
                       m->buffers,   m->workspace,     m->logits,    m->gathers,
                       m->allocated, m->fragmentation, m->reserved,  m->context,
                       m->comm,      m->reserve,       m->total,     m->host};
    for (int i = 0; i < (host ? 16 : 15); i++)
        json_object_set_new(o, names[i], bytes_json(values[i]));
    if (m->fp8_weights > 0) /* FP8 training only */
        json_object_set_new(o, "fp8_weights", bytes_json(m->fp8_weights));
    return o;
}

/* One stage; with offload (host) its share, bytes and copy time too. */
static json_t *stage_json(const vp_price_stage *g, bool host) {
    json_t *o = json_object();
    json_object_set_new(o, "layers", json_integer(g->l1 - g->l0));
    json_object_set_new(o, "device", json_integer(g->device));
    json_object_set_new(o, "params", bytes_json(g->params));
    json_object_set_new(o, "expert_params", bytes_json(g->expert_params));
    json_object_set_new(o, "act_bytes", bytes_json(g->act_bytes));
    json_object_set_new(o, "keep_bytes", bytes_json(g->keep_bytes));
    if (g->tail_bytes > 0) /* torchtitan's pipeline only */
        json_object_set_new(o, "tail_bytes", bytes_json(g->tail_bytes));
    json_object_set_new(o, "f_ms", json_real(g->f_ms));
    json_object_set_new(o, "b_ms", json_real(g->b_ms));
    json_object_set_new(o, "w_ms", json_real(g->w_ms));
    json_object_set_new(o, "r_ms", json_real(g->r_ms));
    json_object_set_new(o, "a2a_f_ms", json_real(g->a2a_f_ms));
    json_object_set_new(o, "a2a_b_ms", json_real(g->a2a_b_ms));
    json_object_set_new(o, "a2a_hidden_ms", json_real(g->a2a_hidden_ms));
    json_object_set_new(o, "a2a_exposed_ms",
                        json_real(g->a2a_f_ms + g->a2a_b_ms - g->a2a_hidden_ms));
    if (host) {
        json_object_set_new(o, "offload",
                            json_real(g->hold_bytes > 0 ? g->off_bytes / g->hold_bytes : 0));
        json_object_set_new(o, "off_bytes", bytes_json(g->off_bytes));
        json_object_set_new(o, "copy_ms", json_real(g->copy_ms));
    }
    return o;
}

/* A fraction, or null when no run measured it. */
static json_t *measured(double value, int runs) {
    return runs > 0 ? json_real(value) : json_null();
}

json_t *vp__expected_json(const vp_expected_error *e) {
    json_t *o = json_object();
    json_object_set_new(o, "step_time", measured(e->step_mean, e->runs));
    json_object_set_new(o, "step_time_worst", measured(e->step_worst, e->runs));
    json_object_set_new(o, "memory", measured(e->memory_mean, e->memory_runs));
    json_object_set_new(o, "memory_worst", measured(e->memory_worst, e->memory_runs));
    json_object_set_new(o, "runs", json_integer(e->runs));
    json_object_set_new(o, "memory_runs", json_integer(e->memory_runs));
    json_object_set_new(o, "basis", json_string(e->basis));
    return o;
}

/* The scalar fields, in the documented order. */
static void scalars_json(json_t *o, const vp_price_result *r) {
    json_object_set_new(o, "family", json_string(r->family));
    json_object_set_new(o, "model", json_string(r->model));
    json_object_set_new(o, "gpu", json_string(r->gpu));
    const char *ints[] = {"p", "m", "tp", "dp", "ep", "etp", "cp", "gpus", "seq", "mbs"};
    int ivals[] = {r->p, r->m, r->tp, r->dp, r->ep, r->etp, r->cp, r->gpus, r->seq, r->mbs};
    for (int i = 0; i < 10; i++)
        json_object_set_new(o, ints[i], json_integer(ivals[i]));
    json_object_set_new(o, "cp_comm", json_string(vp_cp_comm_name(r->cp_comm)));
    const char *reals[] = {"step_time_s",  "makespan_s",
                           "optimizer_s",  "dp_reduce_s",
                           "dp_exposed_s", "bubble",
                           "mfu",          "samples_per_s_per_gpu",
                           "tokens_per_s", "tokens_per_s_per_gpu"};
    double rvals[] = {r->step_time_s,  r->makespan_s,
                      r->optimizer_s,  r->dp_reduce_s,
                      r->dp_exposed_s, r->bubble,
                      r->mfu,          r->samples_per_s_per_gpu,
                      r->tokens_per_s, r->tokens_per_s_per_gpu};
    for (int i = 0; i < 10; i++)
        json_object_set_new(o, reals[i], json_real(rvals[i]));
}

char *vp_price_result_json(const vp_price_result *r) {
    json_t *o = json_object(), *mem = json_array(), *split = json_array(), *stages = json_array();
    if (!o || !mem || !split || !stages) {
        json_decref(o);
        json_decref(mem);
        json_decref(split);
        json_decref(stages);
        return NULL;
    }
    scalars_json(o, r);
    bool host = r->sim && r->sim->host_peak;
    for (int d = 0; d < r->p; d++)
        json_array_append_new(mem, memory_json(&r->memory[d], d, host));
    json_object_set_new(o, "memory_per_rank", mem);
    json_object_set_new(o, "memory_max_bytes", bytes_json(r->memory_max_bytes));
    json_object_set_new(o, "memory_max_rank", json_integer(r->memory_max_rank));
    json_object_set_new(o, "capacity_bytes", bytes_json(r->capacity_bytes));
    json_object_set_new(o, "fits", json_boolean(r->fits));
    json_object_set_new(o, "margin_bytes", bytes_json(r->margin_bytes));
    json_object_set_new(o, "tight", json_boolean(r->tight));
    json_object_set_new(o, "mean_costs", json_boolean(r->mean_costs));
    if (host) {
        json_object_set_new(o, "host_max_bytes", bytes_json(r->host_max_bytes));
        json_object_set_new(o, "host_capacity_bytes", bytes_json(r->host_capacity_bytes));
        json_object_set_new(o, "copy_occupancy_max", json_real(r->copy_occupancy));
        json_object_set_new(o, "offload_stall_s", json_real(r->offload_stall_s));
    }
    for (int k = 0; k < r->route_len; k++)
        json_array_append_new(split, json_integer(r->layers_per_stage[k]));
    json_object_set_new(o, "layers_per_stage", split);
    json_object_set_new(o, "hop_ms", json_real(r->hop_ms));
    for (int st = 0; st < r->S; st++)
        json_array_append_new(stages, stage_json(&r->stage[st], host));
    json_object_set_new(o, "per_stage", stages);
    json_object_set_new(o, "a2a_overlap", vp__overlap_json(r));
    json_t *expected = vp__expected_json(&r->expected);
    json_object_set_new(expected, "kind",
                        r->expected_kind.runs > 0 ? vp__expected_json(&r->expected_kind)
                                                  : json_null());
    json_object_set_new(o, "expected_error", expected);
    char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(o);
    return text;
}
