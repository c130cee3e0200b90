/* The pipeline's set-up and report: the checks before a run, the transport, the ranks'
 * threads (exec.c does their work), how every process agrees on the outcome, and the
 * result. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/exec.h"

/* ---- checks --------------------------------------------------------------------------- */

/* Order in which stage st runs its weight gradients is microbatch order. */
static int w_in_order(const vp_schedule *s, int st) {
    int d = s->stage_device[st], next = -1;
    for (int k = 0; k < s->dev[d].n; k++) {
        const vp_op *op = &s->dev[d].ops[k];
        int kind = op->kind, stage = op->stage, mb = op->mb;
        if (kind == VP_OP_FB)
            kind = op->bkind, stage = op->stage2, mb = op->mb2;
        if (stage != st || (kind != VP_OP_W && kind != VP_OP_BW))
            continue;
        if (mb < next)
            return 0;
        next = mb;
    }
    return 1;
}

/* Whether shard d of a vocabulary-parallel schedule runs its weight gradients (T, EB) in
 * microbatch order. */
static int vocab_in_order(const vp_schedule *s, int d) {
    int next[2] = {-1, -1};
    for (int k = 0; k < s->dev[d].n; k++) {
        const vp_op *op = &s->dev[d].ops[k];
        int i = op->kind == VP_OP_T ? 0 : op->kind == VP_OP_EB ? 1 : -1;
        if (i < 0)
            continue;
        if (op->mb < next[i])
            return 0;
        next[i] = op->mb;
    }
    return 1;
}

/* A vocabulary-parallel schedule's shards and the stages of the split: every stage of the
 * route takes the model's sizes with p shards. */
static vp_status vocab_fits(const vp_schedule *s, const vp_model_config *cfg,
                            const int *layer_start, vp_error *err) {
    int R = s->route_len;
    int *l0 = vp__calloc((size_t)R + 1, sizeof *l0);
    vp_status rc = l0 ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK && layer_start)
        memcpy(l0, layer_start, ((size_t)R + 1) * sizeof *l0);
    else if (rc == VP_OK)
        rc = vp_split_layers(cfg->n_layer, R, l0, err);
    vp_stage_sizes sz;
    for (int k = 0; rc == VP_OK && k < R; k++) {
        vp_stage_range range = vp_split_range(l0, k, R);
        range.vocab_shards = s->p;
        rc = vp_stage_sizes_of(cfg, range, &sz, err);
    }
    free(l0);
    return rc;
}

vp_status vp_pipeline_plan_check(const vp_schedule *s, const vp_model_config *cfg,
                                 const int *layer_start, int *bit_exact, vp_error *err) {
    /* the cheap checks first: the model, and whether its layers fill the route */
    vp_status rc = vp_model_config_check(cfg, err);
    if (rc != VP_OK)
        return rc;
    if (s->route_len < 1 || s->route_len > s->S)
        return vp__fail(err, VP_EVALIDATION, "the schedule's route has %d of its %d stages",
                        s->route_len, s->S);
    if (layer_start) {
        rc = vp_split_check(cfg->n_layer, s->route_len, layer_start, err);
    } else {
        int *l0 = vp__calloc((size_t)s->route_len + 1, sizeof *l0);
        if (!l0)
            return vp__fail(err, VP_ENOMEM, "out of memory");
        rc = vp_split_layers(cfg->n_layer, s->route_len, l0, err);
        free(l0);
    }
    if (rc == VP_OK)
        rc = vp_schedule_validate(s, err); /* a replay of every op */
    if (rc != VP_OK)
        return rc;
    if (s->placement == VP_PLACE_BIDIR)
        for (int j = 0; j < s->m; j++)
            if (s->mb_first[j] % s->route_len != 0)
                return vp__fail(err, VP_EVALIDATION, "microbatch %d starts mid-route", j);
    if (s->placement != VP_PLACE_BIDIR && s->route_len != s->S)
        return vp__fail(err, VP_EVALIDATION, "only the bidirectional placement has two routes");
    if (s->vocab_parallel) /* shards that fit the vocabulary, layers on the ends */
        rc = vocab_fits(s, cfg, layer_start, err);
    if (rc == VP_OK && bit_exact) {
        *bit_exact = s->placement != VP_PLACE_BIDIR;
        for (int st = 0; st < s->S; st++)
            if (!w_in_order(s, st))
                *bit_exact = 0;
        for (int d = 0; s->vocab_parallel && d < s->p; d++)
            if (!vocab_in_order(s, d))
                *bit_exact = 0;
    }
    return rc;
}

/* Checks the fault injections fit the run of D replicas: a rank of the run, a step of
 * the run and an op of that rank's list. */
static vp_status check_faults(const vp_faults *f, const vp_schedule *s, int D, int steps,
                              vp_error *err) {
    if (f->rank < 0)
        return VP_OK;
    if (f->rank >= s->p * D)
        return vp__fail(err, VP_EINVAL, "cannot inject a fault at rank %d of %d", f->rank,
                        s->p * D);
    if (f->step < 0 || f->step >= steps)
        return vp__fail(err, VP_EINVAL, "cannot inject a fault at step %d: the run has steps 0..%d",
                        f->step, steps - 1);
    int n = s->dev[f->rank % s->p].n;
    if (f->op < 0 || f->op >= n)
        return vp__fail(err, VP_EINVAL, "cannot inject a fault before op %d: rank %d has ops 0..%d",
                        f->op, f->rank, n - 1);
    return VP_OK;
}

/* The replicas: dp divides the global batch into the schedule's m per replica; ZeRO-1
 * shards across two or more; emulation runs one. */
static vp_status check_replicas(const vp_pipeline_options *o, vp_error *err) {
    const vp_schedule *s = o->schedule;
    int D = o->train.dp;
    if (D < 1)
        return vp__fail(err, VP_EINVAL, "dp must be at least 1 (got %d)", D);
    if (o->train.m != s->m * D)
        return vp__fail(err, VP_EINVAL,
                        "the schedule has m=%d microbatches per replica, training asks %d over "
                        "%d replica%s",
                        s->m, o->train.m, D, D == 1 ? "" : "s");
    if (o->zero && D < 2)
        return vp__fail(err, VP_EINVAL,
                        "ZeRO-1 shards the optimiser across replicas: it needs "
                        "dp of 2 or more");
    if (o->emulate && D > 1)
        return vp__fail(err, VP_EINVAL, "an emulated run has one replica (no gradients to reduce)");
    return VP_OK;
}

/* Everything a run needs that can be checked before its first step, cheapest first; the
 * checkpoint directory is created (and probed) last, and held by the process of rank 0. */
static vp_status check_run(vp__run *r, vp_error *err) {
    const vp_pipeline_options *o = r->o;
    const vp_data *data = r->data;
    const vp_schedule *s = o->schedule;
    vp_status rc = check_replicas(o, err);
    if (rc != VP_OK)
        return rc;
    if (!o->emulate && !data)
        return vp__fail(err, VP_EINVAL, "no data");
    rc = vp__train_check(&o->train, o->emulate ? NULL : data, err);
    if (rc != VP_OK)
        return rc;
    if (o->emulate && !o->op_ms)
        return vp__fail(err, VP_EINVAL, "emulation needs the pass times (op_ms)");
    if (o->op_ms && o->op_ms->S != s->S)
        return vp__fail(err, VP_EINVAL, "the pass times have %d stages, the schedule %d",
                        o->op_ms->S, s->S);
    if (o->emulate && (o->train.checkpoint_dir || o->train.resume_dir))
        return vp__fail(err, VP_EINVAL, "an emulated run has no model state to checkpoint");
    int K = s->vocab_parallel ? s->p : 0;
    if (o->train.vocab_shards != K)
        return vp__fail(err, VP_EINVAL,
                        K ? "the schedule is vocabulary-parallel over its %d devices: train with "
                            "as many vocabulary shards (train.vocab_shards %d)"
                          : "the schedule has no vocabulary passes, the training asks for %d "
                            "vocabulary shards (build the schedule vocabulary-parallel)",
                        K ? K : o->train.vocab_shards, o->train.vocab_shards);
    rc = check_faults(&o->train.faults, s, o->train.dp, o->train.steps, err);
    if (rc == VP_OK && o->transport == VP_TRANSPORT_MPI)
        rc = vp_transport_mpi_fits(s->S, s->m, o->train.dp, K, err);
    if (rc == VP_OK)
        rc = vp_pipeline_plan_check(s, &o->train.model, o->layer_start, NULL, err);
    if (rc == VP_OK && o->train.checkpoint_dir && r->rank_lo != 0)
        rc = vp_checkpoint_prepare(o->train.checkpoint_dir, err);
    if (rc == VP_OK && r->rank_lo == 0)
        rc = vp__checkpoint_acquire(&o->train, &r->lock, err);
    return rc;
}

/* ---- set-up and results ------------------------------------------------------------- */

void vp_pipeline_options_default(vp_pipeline_options *o) {
    memset(o, 0, sizeof *o);
    vp_train_options_default(&o->train);
    o->watchdog_s = 60.0;
}

void vp_pipeline_result_release(vp_pipeline_result *r) {
    if (!r)
        return;
    free(r->layer_start);
    free(r->peak_act_bytes);
    free(r->predicted_peak_bytes);
    free(r->memory);
    free(r->predicted_memory);
    free(r->bubble_measured);
    vp_timeline_free(r->measured);
    memset(r, 0, sizeof *r);
}

static void free_rows(double **rows, int n) {
    for (int d = 0; rows && d < n; d++)
        free(rows[d]);
    free(rows);
}

static void run_free(vp__run *r) {
    for (int st = 0; r->stage && st < r->D * r->s->S; st++)
        vp_stage_free(r->stage[st]);
    for (int d = 0; r->vocab && d < r->D * r->s->p; d++)
        vp_stage_free(r->vocab[d]);
    free(r->vocab);
    for (int d = 0; r->mem && d < r->P; d++)
        vp_mem_free(r->mem[d]);
    for (int d = 0; r->host && d < r->P; d++)
        vp_mem_free(r->host[d]);
    vp__dp_plan_free(r);
    free(r->stage);
    free(r->mem);
    free(r->host);
    free(r->offloaded);
    double **rows[] = {r->t_start, r->t_end, r->t_mem, r->t_copy0, r->t_copy1};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        free_rows(rows[i], r->s->p);
    free(r->busy);
    free(r->span);
    free(r->peak);
    free(r->memory);
    free(r->l0);
}

/* The stages of the ranks this process hosts: stage st of replica k on rank k * p + the
 * stage's device, holding (ZeRO-1) the moments of shard k only. */
static vp_status make_stages(vp__run *r, vp_error *err) {
    const vp_schedule *s = r->s;
    vp_status rc = VP_OK;
    for (int k = 0; rc == VP_OK && k < r->D; k++)
        for (int st = 0; rc == VP_OK && st < s->S; st++) {
            int rank = k * s->p + s->stage_device[st];
            const vp_stage_options opt = {.n_slots = s->m,
                                          .seed = r->o->train.seed,
                                          .shard = k,
                                          .shards = r->o->zero ? r->D : 1};
            if (!r->emu && rank >= r->rank_lo && rank < r->rank_hi)
                rc = vp_stage_new(&r->o->train.model, vp__stage_range(r, st), &opt, r->mem[rank],
                                  &r->stage[k * s->S + st], err);
        }
    for (int rank = r->rank_lo; rc == VP_OK && r->K && !r->emu && rank < r->rank_hi; rank++) {
        const vp_stage_options opt = {.n_slots = s->m, .seed = r->o->train.seed};
        rc = vp_stage_new(&r->o->train.model, vp_vocab_range(rank % s->p, r->K), &opt, r->mem[rank],
                          &r->vocab[rank], err);
    }
    return rc;
}

/* The [S * m] flags of the pairs s offloads into *out, NULL when it offloads none. */
static vp_status offloaded_pairs(const vp_schedule *s, uint8_t **out, vp_error *err) {
    *out = NULL;
    if (!vp_schedule_offloads(s))
        return VP_OK;
    if (!(*out = vp__calloc((size_t)s->S * (size_t)s->m, 1)))
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++)
            if (s->dev[d].ops[k].kind == VP_OP_O)
                (*out)[(size_t)s->dev[d].ops[k].stage * (size_t)s->m +
                       (size_t)s->dev[d].ops[k].mb] = 1;
    return VP_OK;
}

/* Allocates the run's arrays and the stages of the ranks this process hosts. */
static vp_status run_alloc(vp__run *r, vp_error *err) {
    const vp_schedule *s = r->s;
    size_t p = (size_t)s->p, P = (size_t)r->P;
    r->l0 = vp__calloc((size_t)s->route_len + 1, sizeof *r->l0);
    r->stage = vp__calloc((size_t)(r->D * s->S), sizeof *r->stage);
    r->vocab = vp__calloc(P, sizeof *r->vocab);
    r->mem = vp__calloc(P, sizeof *r->mem);
    r->host = vp__calloc(P, sizeof *r->host);
    double ***rows[] = {&r->t_start, &r->t_end, &r->t_mem, &r->t_copy0, &r->t_copy1};
    bool ok = true;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ok &= (*rows[i] = vp__calloc(p, sizeof(double *))) != NULL;
    r->busy = vp__calloc(P, sizeof *r->busy);
    r->span = vp__calloc(P, sizeof *r->span);
    r->peak = vp__calloc(P, sizeof *r->peak);
    r->memory = vp__calloc(P * VP_MEM_CATEGORIES, sizeof *r->memory);
    if (!ok || !r->l0 || !r->stage || !r->vocab || !r->mem || !r->host || !r->busy || !r->span ||
        !r->peak || !r->memory)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (size_t d = 0; d < p; d++)
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            if (!((*rows[i])[d] = vp__calloc((size_t)s->dev[d].n, sizeof(double))))
                return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int d = r->rank_lo; d < r->rank_hi; d++)
        if (!(r->mem[d] = vp_mem_new()) || !(r->host[d] = vp_mem_new()))
            return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = offloaded_pairs(s, &r->offloaded, err);
    if (rc != VP_OK)
        return rc;
    if (r->o->layer_start) /* checked before the run */
        memcpy(r->l0, r->o->layer_start, ((size_t)s->route_len + 1) * sizeof *r->l0);
    else
        rc = vp_split_layers(r->L, s->route_len, r->l0, err);
    if (rc == VP_OK)
        rc = vp__dp_plan(r, err);
    return rc == VP_OK ? make_stages(r, err) : rc;
}

/* The simulated step time (ms) of the schedule with the given per-stage pass times. */
static vp_status predict_step(const vp__run *r, double *out, vp_error *err) {
    vp_sim *sim = NULL;
    vp_status rc = vp_simulate(r->s, r->o->op_ms, &sim, err);
    if (rc == VP_OK)
        *out = sim->makespan;
    vp_sim_free(sim);
    return rc;
}

/* The measured timeline of replica 0's last step (on the process of rank 0). */
static vp_status measured_timeline(const vp__run *r, vp_pipeline_result *res, vp_error *err) {
    const vp_schedule *s = r->s;
    vp_status rc = vp_timeline_new(s->family, s->p, s->S, s->m, &res->measured, err);
    if (rc != VP_OK)
        return rc;
    memcpy(res->measured->stage_chunk, s->stage_chunk, (size_t)s->S * sizeof(int32_t));
    res->measured->has_mem = 1;
    snprintf(res->measured->mem_unit, sizeof res->measured->mem_unit, "MiB");
    for (int d = 0; d < s->p && rc == VP_OK; d++)
        for (int k = 0; k < s->dev[d].n && rc == VP_OK; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            vp_slice sl = {
                .op = *op, .start = r->t_start[d][k], .end = r->t_end[d][k], .mem = r->t_mem[d][k]};
            rc = vp_timeline_add(res->measured, d, sl, err);
            vp_slice copy = {.op = *op, .start = r->t_copy0[d][k], .end = r->t_copy1[d][k]};
            if (rc == VP_OK && (op->kind == VP_OP_O || op->kind == VP_OP_L))
                rc = vp_timeline_add_copy(res->measured, d, copy, err);
        }
    return rc;
}

/* The result on this process: everything the gathered sums give, and on the process of
 * rank 0 also the measured timeline and the parameter digest. */
static vp_status fill_result(vp__run *r, vp_pipeline_result *res, vp_error *err) {
    const vp_schedule *s = r->s;
    size_t P = (size_t)r->P;
    res->train = r->res;
    res->train.param_digest = r->emu ? 0 : r->digest;
    res->emulated = r->emu != NULL;
    res->p = r->P;
    res->dp = r->D;
    res->rank = r->rank_lo;
    res->route_len = s->route_len;
    res->layer_start = vp__calloc((size_t)s->route_len + 1, sizeof(int));
    res->peak_act_bytes = vp__calloc(P, sizeof(size_t));
    res->predicted_peak_bytes = vp__calloc(P, sizeof(double));
    res->bubble_measured = vp__calloc(P, sizeof(double));
    res->memory = vp__calloc(P * VP_MEM_CATEGORIES, sizeof(double));
    res->predicted_memory = vp__calloc(P * VP_MEM_CATEGORIES, sizeof(double));
    if (!res->layer_start || !res->peak_act_bytes || !res->predicted_peak_bytes ||
        !res->bubble_measured || !res->memory || !res->predicted_memory)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    memcpy(res->memory, r->memory, P * VP_MEM_CATEGORIES * sizeof(double));
    memcpy(res->layer_start, r->l0, ((size_t)s->route_len + 1) * sizeof(int));
    res->train.peak_act_bytes = 0;
    for (size_t d = 0; d < P; d++) {
        res->peak_act_bytes[d] = (size_t)r->peak[d];
        if (res->peak_act_bytes[d] > res->train.peak_act_bytes)
            res->train.peak_act_bytes = res->peak_act_bytes[d];
        res->bubble_measured[d] = r->span[d] > 0 ? 1.0 - r->busy[d] / r->span[d] : 0.0;
    }
    vp_status rc =
        vp_pipeline_plan_check(s, &r->o->train.model, r->o->layer_start, &res->bit_exact, err);
    if (rc == VP_OK)
        rc = vp_runtime_predict_memory(r->o, res->predicted_memory, err);
    for (size_t d = 0; rc == VP_OK && d < P; d++)
        res->predicted_peak_bytes[d] =
            res->predicted_memory[d * VP_MEM_CATEGORIES + VP_MEM_ACTIVATIONS];
    if (rc == VP_OK && r->o->op_ms)
        rc = predict_step(r, &res->predicted_step_ms, err);
    if (rc != VP_OK || r->rank_lo != 0)
        return rc;
    return measured_timeline(r, res, err);
}

/* The transport of o: the threads of this process host every rank, or MPI gives this
 * process one. */
static vp_status open_transport(vp__run *r, vp_error *err) {
    if (r->o->transport == VP_TRANSPORT_MPI) {
        vp_status rc = vp_transport_mpi_new(r->P, r->o->watchdog_s, &r->t, &r->rank_lo, err);
        r->rank_hi = r->rank_lo + 1;
        return rc;
    }
    r->t = vp_transport_threads_new(r->P, r->o->watchdog_s);
    r->rank_hi = r->P;
    return r->t ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}

/* The context of rank `rank` of run r. */
static vp__rank rank_of(vp__run *r, int rank) {
    return (vp__rank){.r = r, .rank = rank, .dev = rank % r->s->p, .replica = rank / r->s->p};
}

/* Runs the ranks this process hosts to the end of the run; a failure to start them aborts
 * the transport, so that the other processes stop too. */
static void run_ranks(vp__run *r) {
    vp_error err = {0};
    int local = r->rank_hi - r->rank_lo, started = 0;
    vp__rank *ctx = vp__calloc((size_t)local, sizeof *ctx);
    pthread_t *threads = vp__calloc((size_t)local, sizeof *threads);
    vp_status rc = ctx && threads ? run_alloc(r, &err) : vp__fail(&err, VP_ENOMEM, "out of memory");
    if (rc != VP_OK)
        r->t->vt->abort(r->t, r->rank_lo, rc, err.message);
    if (rc == VP_OK && r->o->transport == VP_TRANSPORT_MPI) {
        ctx[0] = rank_of(r, r->rank_lo);
        vp__rank_main(&ctx[0]); /* MPI calls stay on the thread that initialised MPI */
    }
    for (int i = 0; rc == VP_OK && r->o->transport != VP_TRANSPORT_MPI && i < local; i++) {
        ctx[i] = rank_of(r, r->rank_lo + i);
        if (pthread_create(&threads[i], NULL, vp__rank_main, &ctx[i]) != 0) {
            r->t->vt->abort(r->t, ctx[i].rank, VP_ERUNTIME, "cannot start a rank thread");
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    free(ctx);
    free(threads);
}

/* The outcome of a failed check of this process (VP_OK: none). */
static vp_outcome outcome_of(vp_status rc, int rank, const vp_error *e) {
    vp_outcome out = {.status = rc, .rank = rc == VP_OK ? -1 : rank};
    snprintf(out.message, sizeof out.message, "%s", e->message[0] ? e->message : vp_status_str(rc));
    return out;
}

vp_status vp_pipeline_train(const vp_pipeline_options *o, const vp_data *data,
                            vp_train_callback callback, void *user, vp_pipeline_result *result,
                            vp_error *err) {
    *result = (vp_pipeline_result){.failed_rank = -1, .report = 1};
    if (!o->schedule)
        return vp__fail(err, VP_EINVAL, "no schedule");
    const vp_model_config *cfg = &o->train.model;
    vp__run r = {.o = o, .s = o->schedule, .data = data, .callback = callback, .user = user};
    r.L = cfg->n_layer;
    r.K = o->schedule->vocab_parallel ? o->schedule->p : 0;
    r.blocks = vp_norm_blocks(cfg, r.K);
    r.D = o->train.dp > 1 ? o->train.dp : 1;
    r.P = o->schedule->p * r.D;
    r.io_floats = (size_t)cfg->microbatch * (size_t)cfg->seq_len * (size_t)cfg->width;
    r.emu = o->emulate ? o->op_ms : NULL;
    vp_error e = {0};
    vp_status rc = open_transport(&r, &e);
    if (rc != VP_OK) { /* every process meets this alike: the lowest one reports it */
        result->report = o->transport != VP_TRANSPORT_MPI || r.rank_lo == 0;
        return vp__fail(err, rc, "%s", e.message);
    }
    rc = check_run(&r, &e);
    vp_outcome out = outcome_of(rc, r.rank_lo, &e);
    result->report = r.t->vt->settle(r.t, 0, &out); /* one process may see what others do not */
    if (out.status == VP_OK) {
        vp_blas_set_threads(1); /* one BLAS thread per rank, as the contract says */
        run_ranks(&r);
        out = outcome_of(VP_OK, r.rank_lo, &e);
        result->report = r.t->vt->settle(r.t, 1, &out);
    }
    rc = out.status;
    if (rc != VP_OK) {
        result->failed_rank = out.rank;
        vp__fail(err, rc, "%s", out.message);
    } else {
        rc = fill_result(&r, result, err);
    }
    if (rc != VP_OK) { /* nothing but who reports what */
        vp_pipeline_result who = {.failed_rank = result->failed_rank, .report = result->report};
        vp_pipeline_result_release(result);
        *result = who;
    }
    run_free(&r);
    vp_checkpoint_release(r.lock);
    r.t->vt->free(r.t);
    return rc;
}
