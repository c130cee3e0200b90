/* Measuring the runtime's own costs: the hop between ranks, the predicted peak bytes of
 * the model under a schedule, and per-stage costs read off a measured timeline. */
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

vp_status vp_runtime_model_bytes(vp_cost_model *cm, const vp_schedule *s,
                                 const vp_model_config *cfg, vp_error *err) {
    if (cm->S != s->S)
        return vp__fail(err, VP_EINVAL, "the cost model does not fit this schedule");
    int R = s->route_len;
    int *l0 = vp__calloc((size_t)R + 1, sizeof *l0);
    if (!l0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = vp_split_layers(cfg->n_layer, R, l0, err);
    for (int st = 0; rc == VP_OK && st < s->S; st++) {
        vp_stage_sizes sz;
        rc = vp_stage_sizes_of(cfg, vp_split_range(l0, st % R, R), &sz, err);
        cm->act_bytes[st] = (double)sz.act_bytes;
        cm->keep_bytes[st] = (double)sz.stash_bytes;
    }
    free(l0);
    cm->has_bytes = rc == VP_OK;
    return rc;
}

vp_status vp_runtime_predict_peaks(const vp_schedule *s, const vp_model_config *cfg, double *peaks,
                                   vp_error *err) {
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    vp_status rc = vp_cost_model_new(s, &costs, &mem, &cm, err);
    if (rc != VP_OK)
        return rc;
    vp_sim *sim = NULL;
    rc = vp_runtime_model_bytes(cm, s, cfg, err);
    if (rc == VP_OK)
        rc = vp_simulate(s, cm, &sim, err);
    if (rc == VP_OK)
        memcpy(peaks, sim->peak_bytes, (size_t)s->p * sizeof *peaks);
    vp_sim_free(sim);
    vp_cost_model_free(cm);
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
            if (sl->op.stage < 0 || sl->op.stage >= s->S || sl->op.kind >= VP_OP_KIND_COUNT)
                continue; /* not an op of s */
            int i = sl->op.stage * VP_OP_KIND_COUNT + sl->op.kind;
            sum[i] += sl->end - sl->start;
            count[i]++;
        }
    for (int st = 0; st < s->S; st++) {
        const double *su = &sum[st * VP_OP_KIND_COUNT];
        const int *n = &count[st * VP_OP_KIND_COUNT];
        if (n[VP_OP_F])
            cm->f[st] = su[VP_OP_F] / n[VP_OP_F];
        if (n[VP_OP_B])
            cm->b[st] = su[VP_OP_B] / n[VP_OP_B];
        if (n[VP_OP_W])
            cm->w[st] = su[VP_OP_W] / n[VP_OP_W];
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
