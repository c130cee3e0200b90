/* Measuring the runtime's own costs: the hop between ranks, the predicted bytes of the
 * model under a schedule, and per-stage costs read off a measured timeline. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "runtime/transport/transport.h"

typedef struct {
    vp_transport *t;
    int reps;
    size_t n;
    vp_status rc;
    vp_error err;
} echo_ctx;

/* Rank 1 of the hop measurement: sends every tensor it gets back. */
static void *echo(void *arg) {
    echo_ctx *e = arg;
    for (int i = 0; e->rc == VP_OK && i < e->reps; i++) {
        float *buf = NULL;
        e->rc = e->t->vt->recv(e->t, 1, (vp_msg_key){1, i, VP_MSG_ACT}, e->n, &buf, &e->err);
        if (e->rc == VP_OK)
            e->rc = e->t->vt->send(e->t, 1, 0, (vp_msg_key){0, i, VP_MSG_GRAD}, buf, e->n, &e->err);
    }
    return NULL;
}

vp_status vp_runtime_measure_hop(size_t n, int reps, double *c, vp_error *err) {
    echo_ctx e = {.t = vp_transport_threads_new(2, 10.0), .reps = reps, .n = n};
    double *trip = vp__calloc((size_t)reps, sizeof *trip);
    float *buf = malloc(n * sizeof *buf);
    pthread_t th;
    if (!e.t || !trip || !buf || pthread_create(&th, NULL, echo, &e) != 0) {
        if (e.t)
            e.t->vt->free(e.t);
        free(trip);
        free(buf);
        return vp__fail(err, VP_ENOMEM, "cannot set up the hop measurement");
    }
    vp_status rc = VP_OK;
    for (int i = 0; rc == VP_OK && i < reps; i++) {
        double t0 = vp__now_ms();
        rc = e.t->vt->send(e.t, 0, 1, (vp_msg_key){1, i, VP_MSG_ACT}, buf, n, err);
        buf = NULL;
        if (rc == VP_OK)
            rc = e.t->vt->recv(e.t, 0, (vp_msg_key){0, i, VP_MSG_GRAD}, n, &buf, err);
        trip[i] = vp__now_ms() - t0;
    }
    if (rc != VP_OK)
        e.t->vt->abort(e.t, 0, VP_ERUNTIME, "hop measurement failed");
    pthread_join(th, NULL);
    if (rc == VP_OK && e.rc != VP_OK) {
        rc = e.rc;
        if (err)
            *err = e.err;
    }
    if (rc == VP_OK)
        *c = vp__median(trip, reps) / 2;
    free(buf);
    free(trip);
    e.t->vt->free(e.t);
    return rc;
}

/* The layer split of s's routes into l0[route_len + 1]: layer_start checked, or the even
 * split. */
static vp_status split_of(const vp_schedule *s, const vp_model_config *cfg, const int *layer_start,
                          int *l0, vp_error *err) {
    if (!layer_start)
        return vp_split_layers(cfg->n_layer, s->route_len, l0, err);
    vp_status rc = vp_split_check(cfg->n_layer, s->route_len, layer_start, err);
    if (rc == VP_OK)
        memcpy(l0, layer_start, ((size_t)s->route_len + 1) * sizeof *l0);
    return rc;
}

/* The sizes of every stage of s ([S], caller storage) under the split l0, and with
 * vocabulary parallelism of every vocabulary stage after them ([S + p]). */
static vp_status stage_sizes(const vp_schedule *s, const vp_model_config *cfg, const int *l0,
                             vp_stage_sizes *sizes, vp_error *err) {
    int R = s->route_len, K = s->vocab_parallel ? s->p : 0;
    vp_status rc = VP_OK;
    for (int st = 0; rc == VP_OK && st < s->S + K; st++) {
        vp_stage_range range =
            st < s->S ? vp_split_range(l0, st % R, R) : vp_vocab_range(st - s->S, K);
        range.vocab_shards = K;
        rc = vp_stage_sizes_of(cfg, range, &sizes[st], err);
    }
    return rc;
}

vp_status vp_runtime_model_bytes(vp_cost_model *cm, const vp_schedule *s,
                                 const vp_model_config *cfg, const int *layer_start,
                                 vp_error *err) {
    if (cm->S != s->S || cm->p != s->p)
        return vp__fail(err, VP_EINVAL, "the cost model does not fit this schedule");
    vp_stage_sizes *sz = vp__calloc((size_t)(s->S + s->p), sizeof *sz);
    if (!sz)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    int *l0 = vp__calloc((size_t)s->route_len + 1, sizeof *l0);
    vp_status rc =
        l0 ? split_of(s, cfg, layer_start, l0, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        rc = stage_sizes(s, cfg, l0, sz, err);
    for (int st = 0; rc == VP_OK && st < s->S; st++) {
        cm->act_bytes[st] = (double)sz[st].act_bytes;
        cm->keep_bytes[st] = (double)sz[st].stash_bytes;
        cm->hold_bytes[st] =
            (double)(s->recompute == VP_RECOMPUTE_FULL ? sz[st].input_bytes
                                                       : sz[st].act_bytes - sz[st].core_bytes);
        size_t off = 0; /* whole tensors of what F (and a drop) left */
        if (s->offload[st] > 0) {
            vp_stage_range range = vp_split_range(l0, st % s->route_len, s->route_len);
            range.vocab_shards = s->vocab_parallel ? s->p : 0;
            rc = vp_stage_offload_bytes(cfg, range, (int)s->recompute, s->offload[st], &off, err);
        }
        cm->off_bytes[st] = (double)off;
        if (cm->act_bytes[st] > 0) /* the units follow the bytes */
            cm->off[st] = cm->act[st] * cm->off_bytes[st] / cm->act_bytes[st];
    }
    for (int d = 0; rc == VP_OK && s->vocab_parallel && d < s->p; d++) {
        cm->vocab_act_bytes[d] = (double)sz[s->S + d].embed_bytes;
        cm->vocab_act_bytes[s->p + d] = (double)sz[s->S + d].output_bytes;
    }
    free(l0);
    free(sz);
    cm->has_bytes = rc == VP_OK;
    cm->bw_holds_keep = 1; /* the stage's BW is its B, then its W */
    return rc;
}

/* Whether stage st is the first / last of its route. */
static int route_first(const vp_schedule *s, int st) {
    return st % s->route_len == 0;
}

static int route_last(const vp_schedule *s, int st) {
    return st % s->route_len == s->route_len - 1;
}

/* The in-flight count of a vocabulary pass on device d (exec.c's run_vocab): EF and T make
 * a part for the first or last stage (it leaves when that is elsewhere), S and EB take
 * over the last or first stage's output or input gradient when it came from d. */
static void vocab_in_flight(const vp_schedule *s, const vp_op *op, int d, int *cur, int *peak) {
    int ends = op->kind == VP_OP_EF || op->kind == VP_OP_EB
                   ? s->stage_device[s->mb_first[op->mb]]
                   : s->stage_device[vp_schedule_last_stage(s, op->mb)];
    if (op->kind == VP_OP_EF || op->kind == VP_OP_T) {
        *peak = *cur + 1 > *peak ? *cur + 1 : *peak;
        *cur += ends == d;
    } else {
        *cur -= ends == d;
    }
}

/* Peak count of tensors rank d holds in flight (VP_MEM_IN_FLIGHT), walking its ops as exec.c runs
 * them: a forward takes over its input from a stage of d, then makes its output; a backward takes
 * over its gradient from a stage of d, makes its input gradient and sends it when the
 * previous stage is elsewhere; then the forward's output leaves when its next stage is
 * elsewhere (an F&B: forward half, backward half, then the forward's send). With vocabulary
 * parallelism (v = 1) a first stage's forward takes over d's shard's part, a last stage's
 * makes its output for every shard (copies to the other devices, each made while the
 * output is, the output itself for d's shard), and the backward likewise the other way. */
static int in_flight_peak(const vp_schedule *s, int d) {
    int cur = 0, peak = 0, v = s->vocab_parallel, copies = v && s->p > 1;
    for (int k = 0; k < s->dev[d].n; k++) {
        const vp_op *op = &s->dev[d].ops[k];
        if (vp_op_kind_is_vocab(op->kind)) {
            vocab_in_flight(s, op, d, &cur, &peak);
            continue;
        }
        int fwd = op->kind == VP_OP_F || op->kind == VP_OP_FB, f = op->stage;
        int bkind = op->kind == VP_OP_FB ? op->bkind : op->kind;
        int b = op->kind == VP_OP_FB ? op->stage2 : op->stage;
        if (fwd) {
            cur -= route_first(s, f) ? v : s->stage_device[f - 1] == d;
            cur += !route_last(s, f) || v;
            peak = cur > peak ? cur : peak;
        }
        if (bkind == VP_OP_B || bkind == VP_OP_BW) {
            cur -= route_last(s, b) ? v : s->stage_device[b + 1] == d;
            cur += !route_first(s, b) || v;
            peak = cur > peak ? cur : peak;
            if (!route_first(s, b))
                cur -= s->stage_device[b - 1] != d;
            else if (copies && cur + 1 > peak)
                peak = cur + 1;
        }
        if (fwd && !route_last(s, f))
            cur -= s->stage_device[f + 1] != d;
        else if (fwd && copies && cur + 1 > peak)
            peak = cur + 1;
    }
    return peak;
}

/* Moment bytes of the stages of device d in replica k of the run o ([D * p] filled at
 * k * p + d; a vocabulary stage on its shard's device): every element's, or with ZeRO-1 the
 * shard k of each stage (vp_shard_of). */
static vp_status moment_bytes(const vp_pipeline_options *o, const int *l0, double *out,
                              vp_error *err) {
    const vp_schedule *s = o->schedule;
    int D = o->train.dp > 1 ? o->train.dp : 1, shards = o->zero ? D : 1;
    vp_status rc = VP_OK;
    int K = s->vocab_parallel ? s->p : 0;
    for (int k = 0; rc == VP_OK && k < D; k++)
        for (int st = 0; rc == VP_OK && st < s->S + K; st++) {
            vp_shard sh;
            vp_stage_range range = st < s->S ? vp_split_range(l0, st % s->route_len, s->route_len)
                                             : vp_vocab_range(st - s->S, K);
            range.vocab_shards = K;
            rc = vp_shard_of(&o->train.model, range, shards > 1 ? k : 0, shards, &sh, err);
            if (rc == VP_OK)
                out[k * s->p + (st < s->S ? s->stage_device[st] : st - s->S)] +=
                    (double)vp_shard_moment_bytes(sh);
        }
    return rc;
}

vp_status vp_runtime_predict_memory(const vp_pipeline_options *o, double *out, vp_error *err) {
    const vp_schedule *s = o->schedule;
    const vp_model_config *cfg = &o->train.model;
    int D = o->train.dp > 1 ? o->train.dp : 1, P = s->p * D;
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    vp_sim *sim = NULL;
    vp_stage_sizes *sz = vp__calloc((size_t)(s->S + s->p), sizeof *sz);
    int *l0 = vp__calloc((size_t)s->route_len + 1, sizeof *l0);
    double *moments = vp__calloc((size_t)P, sizeof *moments);
    vp_status rc = sz && l0 && moments ? split_of(s, cfg, o->layer_start, l0, err)
                                       : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        rc = stage_sizes(s, cfg, l0, sz, err);
    if (rc == VP_OK)
        rc = moment_bytes(o, l0, moments, err);
    if (rc == VP_OK)
        rc = vp_cost_model_new(s, &costs, &mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_runtime_model_bytes(cm, s, cfg, l0, err);
    if (rc == VP_OK)
        rc = vp_simulate(s, cm, &sim, err);
    for (int r = 0; rc == VP_OK && r < P; r++) {
        int d = r % s->p;
        double *m = out + (size_t)r * VP_MEM_CATEGORIES;
        memset(m, 0, VP_MEM_CATEGORIES * sizeof *m);
        for (int st = 0; st < s->S + (s->vocab_parallel ? s->p : 0); st++) {
            if ((st < s->S ? s->stage_device[st] : st - s->S) != d)
                continue;
            m[VP_MEM_PARAMS] += (double)sz[st].param_bytes;
            m[VP_MEM_GRADS] += (double)sz[st].param_bytes;
            m[VP_MEM_WORKSPACE] += (double)sz[st].work_bytes;
        }
        m[VP_MEM_OPTIMIZER] = moments[r];
        m[VP_MEM_ACTIVATIONS] = sim->peak_bytes[d];
        m[VP_MEM_IN_FLIGHT] = (double)in_flight_peak(s, d) * (double)sz[0].io_bytes;
        m[VP_MEM_HOST] = sim->host_peak_bytes ? sim->host_peak_bytes[d] : 0.0;
    }
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    free(moments);
    free(l0);
    free(sz);
    return rc;
}

vp_status vp_runtime_measured_costs(const vp_schedule *s, const vp_timeline *tl, vp_cost_model *cm,
                                    vp_error *err) {
    if (cm->S != s->S || tl->p != s->p)
        return vp__fail(err, VP_EINVAL,
                        "the cost model (%d stages) or timeline (%d ranks) is not of the schedule "
                        "(%d stages, %d ranks)",
                        cm->S, tl->p, s->S, s->p);
    double *sum = vp__calloc((size_t)s->S * VP_OP_KIND_COUNT, sizeof *sum);
    int *count = vp__calloc((size_t)s->S * VP_OP_KIND_COUNT, sizeof *count);
    if (!sum || !count) {
        free(sum);
        free(count);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    for (int d = 0; d < tl->p; d++)
        for (int k = 0; k < tl->dev[d].n; k++) {
            const vp_slice *sl = &tl->dev[d].slices[k];
            if (sl->op.stage < 0 || sl->op.stage >= s->S || sl->op.kind >= VP_OP_KIND_COUNT ||
                (vp_op_kind_is_vocab(sl->op.kind) && sl->op.stage >= s->p))
                continue; /* not an op of s */
            int i = sl->op.stage * VP_OP_KIND_COUNT + sl->op.kind;
            sum[i] += sl->end - sl->start;
            count[i]++;
        }
    for (int d = 0; s->vocab_parallel && d < s->p; d++) /* shard d's vocabulary passes */
        for (int kind = VP_OP_EF; kind <= VP_OP_T; kind++)
            if (count[d * VP_OP_KIND_COUNT + kind])
                cm->vocab[(kind - VP_OP_EF) * s->p + d] =
                    sum[d * VP_OP_KIND_COUNT + kind] / count[d * VP_OP_KIND_COUNT + kind];
    for (int st = 0; st < s->S; st++) {
        const double *su = &sum[st * VP_OP_KIND_COUNT];
        const int *n = &count[st * VP_OP_KIND_COUNT];
        if (n[VP_OP_F])
            cm->f[st] = su[VP_OP_F] / n[VP_OP_F];
        if (n[VP_OP_B])
            cm->b[st] = su[VP_OP_B] / n[VP_OP_B];
        if (n[VP_OP_W])
            cm->w[st] = su[VP_OP_W] / n[VP_OP_W];
        if (n[VP_OP_R])
            cm->r[st] = su[VP_OP_R] / n[VP_OP_R];
        if (n[VP_OP_BW] && !n[VP_OP_B])
            cm->b[st] = cm->w[st] = su[VP_OP_BW] / n[VP_OP_BW] / 2;
        if (n[VP_OP_FB])
            cm->fb[st] = su[VP_OP_FB] / n[VP_OP_FB];
    }
    cm->c = 0.0;
    free(sum);
    free(count);
    return VP_OK;
}
