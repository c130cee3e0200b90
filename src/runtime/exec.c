/* The executor: runs a schedule's op lists on the model, one rank per device. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime_internal.h"
#include "runtime/transport/transport.h"

/* ---- plan: layers per stage ---------------------------------------------------- */

/* Position of stage st on its route, and whether it is the route's first or last. */
static int route_pos(const vp_schedule *s, int st) {
    return st % s->route_len;
}

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

vp_status vp_pipeline_plan_check(const vp_schedule *s, const vp_model_config *cfg, int *bit_exact,
                                 vp_error *err) {
    vp_status rc = vp_schedule_validate(s, err);
    if (rc != VP_OK)
        return rc;
    if (s->placement == VP_PLACE_BIDIR)
        for (int j = 0; j < s->m; j++)
            if (s->mb_first[j] % s->route_len != 0)
                return vp__fail(err, VP_EVALIDATION, "microbatch %d starts mid-route", j);
    if (s->placement != VP_PLACE_BIDIR && s->route_len != s->S)
        return vp__fail(err, VP_EVALIDATION, "only the bidirectional placement has two routes");
    rc = vp_model_config_check(cfg, err);
    if (rc != VP_OK)
        return rc;
    int *l0 = vp__calloc((size_t)s->route_len + 1, sizeof *l0);
    if (!l0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    rc = vp_split_layers(cfg->n_layer, s->route_len, l0, err);
    free(l0);
    if (rc != VP_OK)
        return rc;
    if (bit_exact) {
        *bit_exact = s->placement != VP_PLACE_BIDIR;
        for (int st = 0; st < s->S; st++)
            if (!w_in_order(s, st))
                *bit_exact = 0;
    }
    return VP_OK;
}

/* ---- the run ------------------------------------------------------------------------ */

/* One process's part of a run: the ranks [rank_lo, rank_hi) it hosts (all of them on the
 * threads transport, one under MPI) and their stages. */
typedef struct run {
    const vp_pipeline_options *o;
    const vp_schedule *s;
    const vp_data *data;
    vp_train_callback callback;
    void *user;
    vp_transport *t;
    int rank_lo, rank_hi;
    int L, units;             /* layers; gradient-norm units: embedding, layers, head */
    int *l0;                  /* [route_len + 1] */
    size_t io_floats;         /* B*T*C: one tensor between stages */
    vp_stage **stage;         /* [S], NULL for stages of ranks this process does not host */
    vp_mem **mem;             /* [p], likewise */
    const vp_cost_model *emu; /* emulation: per-stage pass times (ms) to wait; NULL computes */
    /* Gathered at the end (on the process of rank 0 for times and digest). */
    double *peak, *busy, *span;         /* [p] */
    double **t_start, **t_end, **t_mem; /* [p][n_d] last step: ms from its start, MiB */
    uint64_t digest;
    vp_train_result res; /* filled by rank 0 */
} run;

typedef struct rank_ctx {
    run *r;
    int rank;
    uint8_t *tokens, *targets;
    double compute_start;            /* when the current op's inputs had arrived (< 0: not yet) */
    double peak, busy, span;         /* training peak bytes; last step's busy time and span */
    double *t_start, *t_end, *t_mem; /* [n] last step's op times */
} rank_ctx;

static int is_first(const run *r, int st) {
    return route_pos(r->s, st) == 0;
}

static int is_last(const run *r, int st) {
    return route_pos(r->s, st) == r->s->route_len - 1;
}

/* The layers and parts stage st holds. */
static vp_stage_range stage_range(const run *r, int st) {
    return vp_split_range(r->l0, route_pos(r->s, st), r->s->route_len);
}

/* Fails the rank: aborts every rank with its message (the first abort's is kept). */
static vp_status rank_fail(rank_ctx *c, vp_status rc, const vp_error *e) {
    char msg[700];
    snprintf(msg, sizeof msg, "rank %d: %s", c->rank,
             e->message[0] ? e->message : vp_status_str(rc));
    c->r->t->vt->abort(c->r->t, c->rank, rc, msg);
    return rc;
}

/* The forward of (st, mb): input from the batch or the previous stage, output to the next
 * stage or a loss into *loss. */
/* An emulated pass: waits ms from now. */
static void emulate_for(double ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double ns = ts.tv_nsec + ms * 1e6;
    ts.tv_sec += (time_t)(ns / 1e9);
    ts.tv_nsec = (long)fmod(ns, 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ; /* interrupted: sleep on to the deadline */
}

/* The tensor an emulated pass hands on: real size, contents unused. */
static vp_status emulated_tensor(const run *r, float **out, vp_error *err) {
    *out = malloc(r->io_floats * sizeof **out);
    return *out ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}

/* The forward of (st, mb): input from the batch or the previous stage; *out receives the
 * tensor for the next stage (send_activation hands it on), or the loss goes to *loss on a
 * route's last stage. */
static vp_status run_forward(rank_ctx *c, int st, int mb, uint64_t batch, int validation,
                             double *loss, float **out, vp_error *err) {
    run *r = c->r;
    int first = is_first(r, st), last = is_last(r, st);
    const vp_model_config *cfg = &r->o->train.model;
    float *in = NULL;
    *out = NULL;
    vp_status rc = VP_OK;
    if ((first || last) && !r->emu)
        rc = vp_data_batch(r->data, validation, validation ? 0 : r->o->train.seed, batch,
                           cfg->microbatch, cfg->seq_len, c->tokens, c->targets, err);
    if (rc == VP_OK && !first)
        rc =
            r->t->vt->recv(r->t, c->rank, (vp_msg_key){st, mb, VP_MSG_ACT}, r->io_floats, &in, err);
    if (rc == VP_OK && c->compute_start < 0)
        c->compute_start = vp__now_ms();
    if (rc == VP_OK && r->emu) {
        emulate_for(r->emu->f[st]);
        free(in);
        if (!last)
            rc = emulated_tensor(r, out, err);
    } else if (rc == VP_OK) {
        rc = vp_stage_forward(r->stage[st], mb, in, first ? c->tokens : NULL,
                              last ? c->targets : NULL, last ? NULL : out, last ? loss : NULL, err);
    }
    return rc;
}

/* Hands the forward output of (st, mb) to the next stage (none after a route's last). */
static vp_status send_activation(rank_ctx *c, int st, int mb, float *out, vp_error *err) {
    run *r = c->r;
    if (is_last(r, st))
        return VP_OK;
    return r->t->vt->send(r->t, c->rank, r->s->stage_device[st + 1],
                          (vp_msg_key){st + 1, mb, VP_MSG_ACT}, out, r->io_floats, err);
}

/* B, W or BW of (st, mb). A BW hands its input gradient upstream only after its W, as
 * one full backward does (and as the simulator times it). */
static vp_status run_backward(rank_ctx *c, int kind, int st, int mb, vp_error *err) {
    run *r = c->r;
    const vp_schedule *s = r->s;
    int first = is_first(r, st), last = is_last(r, st);
    float *dout = NULL, *din = NULL;
    vp_status rc = VP_OK;
    if (kind != VP_OP_W && !last)
        rc = r->t->vt->recv(r->t, c->rank, (vp_msg_key){st, mb, VP_MSG_GRAD}, r->io_floats, &dout,
                            err);
    if (rc == VP_OK && c->compute_start < 0)
        c->compute_start = vp__now_ms();
    if (rc == VP_OK && kind != VP_OP_W) {
        if (r->emu) {
            emulate_for(r->emu->b[st]);
            free(dout);
            if (!first)
                rc = emulated_tensor(r, &din, err);
        } else {
            rc = vp_stage_backward_input(r->stage[st], mb, dout, 1.0f / (float)s->m,
                                         first ? NULL : &din, err);
        }
    }
    if (rc == VP_OK && kind != VP_OP_B) {
        if (r->emu)
            emulate_for(r->emu->w[st]);
        else
            rc = vp_stage_backward_weight(r->stage[st], mb, err);
    }
    if (rc == VP_OK && kind != VP_OP_W && !first)
        rc = r->t->vt->send(r->t, c->rank, s->stage_device[st - 1],
                            (vp_msg_key){st - 1, mb, VP_MSG_GRAD}, din, r->io_floats, err);
    else
        vp_stage_buffer_free(din); /* nothing to hand on, or a failed pass */
    return rc;
}

/* Runs one op; the loss of a last stage's forward goes to losses[mb]. */
static vp_status run_op(rank_ctx *c, const vp_op *op, int step, double *losses, vp_error *err) {
    uint64_t batch = (uint64_t)step * (uint64_t)c->r->s->m;
    if (op->kind != VP_OP_F && op->kind != VP_OP_FB)
        return run_backward(c, op->kind, op->stage, op->mb, err);
    float *out = NULL;
    vp_status rc =
        run_forward(c, op->stage, op->mb, batch + (uint64_t)op->mb, 0, &losses[op->mb], &out, err);
    /* An overlapped F&B finishes both halves before either result leaves, as one unit. */
    if (rc == VP_OK && op->kind == VP_OP_FB)
        rc = run_backward(c, op->bkind, op->stage2, op->mb2, err);
    if (rc == VP_OK)
        return send_activation(c, op->stage, op->mb, out, err);
    vp_stage_buffer_free(out);
    return rc;
}

/* Gradient-norm unit of the first parameter group of stage st: 0 is the embeddings,
 * 1 + i layer i, L + 1 the head. */
static int first_unit(const run *r, int st) {
    return is_first(r, st) ? 0 : 1 + r->l0[route_pos(r->s, st)];
}

/* Stages whose gradients count once: the first copy of a bidirectional model. */
static int counts_for_norm(const run *r, int st) {
    return r->s->placement != VP_PLACE_BIDIR || st < r->s->route_len;
}

/* Bidirectional placement: each replica stage adds its twin's gradients (a + b = b + a,
 * so both copies end bit-identical). */
static vp_status sum_replicas(rank_ctx *c, vp_error *err) {
    run *r = c->r;
    const vp_schedule *s = r->s;
    if (s->placement != VP_PLACE_BIDIR)
        return VP_OK;
    vp_status rc = VP_OK;
    for (int st = 0; rc == VP_OK && st < s->S; st++) {
        if (s->stage_device[st] != c->rank)
            continue;
        int twin = (st + s->route_len) % s->S;
        size_t n;
        float *g = vp_stage_grads(r->stage[st], &n);
        float *copy = malloc(n * sizeof *copy);
        if (!copy)
            return vp__fail(err, VP_ENOMEM, "out of memory");
        memcpy(copy, g, n * sizeof *copy);
        rc = r->t->vt->send(r->t, c->rank, s->stage_device[twin],
                            (vp_msg_key){st, 0, VP_MSG_REPLICA}, copy, n, err);
    }
    for (int st = 0; rc == VP_OK && st < s->S; st++) {
        if (s->stage_device[st] != c->rank)
            continue;
        int twin = (st + s->route_len) % s->S;
        size_t n;
        float *g = vp_stage_grads(r->stage[st], &n), *other = NULL;
        rc = r->t->vt->recv(r->t, c->rank, (vp_msg_key){twin, 0, VP_MSG_REPLICA}, n, &other, err);
        for (size_t i = 0; rc == VP_OK && i < n; i++)
            g[i] += other[i];
        free(other);
    }
    return rc;
}

/* Mean loss over the microbatches and global gradient norm, the same on every rank and
 * summed in the single-rank reference's order. */
static vp_status reduce_step(rank_ctx *c, double *losses, double *loss, double *norm,
                             vp_error *err) {
    run *r = c->r;
    const vp_schedule *s = r->s;
    int m = s->m;
    double *v = vp__calloc((size_t)(m + r->units), sizeof *v);
    if (!v)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int j = 0; j < m; j++)
        if (s->stage_device[vp_schedule_last_stage(s, j)] == c->rank)
            v[j] = losses[j];
    for (int st = 0; st < s->S; st++)
        if (s->stage_device[st] == c->rank && counts_for_norm(r, st))
            vp_stage_grad_sumsq_units(r->stage[st], v + m + first_unit(r, st));
    vp_status rc = r->t->vt->sum(r->t, c->rank, v, m + r->units, err);
    if (rc == VP_OK) {
        double lsum = 0.0, gsum = 0.0;
        for (int j = 0; j < m; j++)
            lsum += v[j];
        for (int u = 0; u < r->units; u++)
            gsum += v[m + u];
        *loss = lsum / m;
        *norm = sqrt(gsum);
    }
    free(v);
    return rc;
}

/* Forward-only validation loss over eval_batches windows, every rank taking its stages
 * of the first route in order. */
static vp_status evaluate(rank_ctx *c, double *val, vp_error *err) {
    run *r = c->r;
    const vp_schedule *s = r->s;
    int batches = r->o->train.eval_batches;
    double *v = vp__calloc((size_t)batches, sizeof *v);
    if (!v)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = VP_OK;
    for (int e = 0; rc == VP_OK && e < batches; e++)
        for (int st = 0; rc == VP_OK && st < s->route_len; st++) {
            if (s->stage_device[st] != c->rank)
                continue;
            float *out = NULL;
            rc = run_forward(c, st, 0, (uint64_t)e, 1, &v[e], &out, err);
            vp_stage_discard(r->stage[st], 0);
            if (rc == VP_OK)
                rc = send_activation(c, st, 0, out, err);
        }
    if (rc == VP_OK)
        rc = r->t->vt->sum(r->t, c->rank, v, batches, err);
    if (rc == VP_OK) {
        double sum = 0.0;
        for (int e = 0; e < batches; e++)
            sum += v[e];
        *val = sum / batches;
    }
    free(v);
    return rc;
}

/* Runs the op list of one step and records the times of the last step: an op starts
 * when its inputs have arrived (waiting is idle time) and ends when its compute does. */
static vp_status run_ops(rank_ctx *c, int step, double *losses, vp_error *err) {
    run *r = c->r;
    const vp_oplist *ops = &r->s->dev[c->rank];
    const vp_pipeline_options *o = r->o;
    double t0 = vp__now_ms(), busy = 0.0;
    for (int k = 0; k < ops->n; k++) {
        char label[48];
        vp_op_format(&ops->ops[k], label, sizeof label);
        vp_transport_set_op(r->t, c->rank, k, label);
        const vp_faults *f = &o->train.faults;
        if (c->rank == f->rank && step == f->step && k == f->op) {
            if (!f->stall)
                return vp__fail(err, VP_ERUNTIME, "injected failure before op %d (%s) of step %d",
                                k, label, step);
            float *never = NULL; /* no rank sends this: the watchdog ends the wait */
            return r->t->vt->recv(r->t, c->rank, (vp_msg_key){-1, -1, VP_MSG_ACT}, 0, &never, err);
        }
        c->compute_start = -1.0;
        vp_status rc = run_op(c, &ops->ops[k], step, losses, err);
        if (rc != VP_OK)
            return rc;
        double a = c->compute_start, b = vp__now_ms();
        busy += b - a;
        c->t_start[k] = a - t0;
        c->t_end[k] = b - t0;
        c->t_mem[k] = (double)vp_mem_current(r->mem[c->rank]) / (1024.0 * 1024.0);
    }
    vp_transport_set_op(r->t, c->rank, -1, NULL);
    if ((double)vp_mem_peak(r->mem[c->rank]) > c->peak)
        c->peak = (double)vp_mem_peak(r->mem[c->rank]);
    c->busy = busy;
    c->span = ops->n ? c->t_end[ops->n - 1] - c->t_start[0] : 0.0;
    return VP_OK;
}

/* One optimiser step on every rank; rank 0 reports progress. *stop is set when the
 * callback asks to stop. */
/* After a step's ops: replica sums, the losses and the global norm, clip and AdamW. */
static vp_status update(rank_ctx *c, int step, double *losses, vp_train_progress *p,
                        vp_error *err) {
    run *r = c->r;
    const vp_train_options *o = &r->o->train;
    const vp_schedule *s = r->s;
    if (step + 1 == o->faults.nonfinite_step && s->stage_device[0] == c->rank) {
        size_t n;
        vp_stage_grads(r->stage[0], &n)[0] = NAN; /* test hook: poison this step */
    }
    vp_status rc = sum_replicas(c, err);
    if (rc == VP_OK)
        rc = reduce_step(c, losses, &p->loss, &p->grad_norm, err);
    if (rc != VP_OK)
        return rc;
    p->lr = vp_lr_at(o->schedule, step, o->steps, o->warmup, o->lr, o->min_lr);
    if (!isfinite(p->loss) || !isfinite(p->grad_norm)) {
        /* Every rank sees the same sums, so every rank decides the same way. */
        if (!o->skip_nonfinite)
            return vp__fail(err, VP_ERUNTIME, "step %d: loss %g, gradient norm %g is not finite",
                            step + 1, p->loss, p->grad_norm);
        for (int st = 0; st < s->S; st++)
            if (s->stage_device[st] == c->rank)
                vp_stage_zero_grad(r->stage[st]);
        p->skipped = true;
        return VP_OK;
    }
    float scale = o->clip > 0.0 && p->grad_norm > o->clip ? (float)(o->clip / p->grad_norm) : 1.0f;
    for (int st = 0; st < s->S; st++)
        if (s->stage_device[st] == c->rank)
            vp_stage_adamw(r->stage[st], &o->adamw, step + 1, (float)p->lr, scale);
    return VP_OK;
}

/* The stages rank holds, in stage order (the order its checkpoint file keeps). */
static int rank_stages(const rank_ctx *c, vp_stage **out) {
    int n = 0;
    for (int st = 0; st < c->r->s->S; st++)
        if (c->r->s->stage_device[st] == c->rank)
            out[n++] = c->r->stage[st];
    return n;
}

/* Saves the state after `step` completed steps: every rank writes its file, then rank 0
 * commits the set, then every rank prunes older files (see checkpoint.h). */
static vp_status checkpoint(rank_ctx *c, int step, vp_error *err) {
    run *r = c->r;
    const vp_train_options *o = &r->o->train;
    vp_stage **mine = vp__calloc((size_t)r->s->S, sizeof *mine);
    if (!mine)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    int n = rank_stages(c, mine);
    uint64_t data_pos = (uint64_t)step * (uint64_t)r->s->m;
    vp_checkpoint_run traj = vp__checkpoint_run(o);
    vp_status rc = vp_checkpoint_write_rank(o->checkpoint_dir, c->rank, r->s->p, &traj, step,
                                            data_pos, mine, n, err);
    if (rc == VP_OK)
        rc = r->t->vt->barrier(r->t, c->rank, err);
    if (rc == VP_OK && c->rank == 0)
        rc = vp_checkpoint_commit(o->checkpoint_dir, r->s->p, step, data_pos, err);
    if (rc == VP_OK)
        rc = r->t->vt->barrier(r->t, c->rank, err);
    if (rc == VP_OK)
        rc = vp_checkpoint_prune(o->checkpoint_dir, c->rank, step, err);
    free(mine);
    return rc;
}

/* Restores rank's stages from o->resume_dir; *step receives the steps already done. */
static vp_status resume(rank_ctx *c, int *step, vp_error *err) {
    run *r = c->r;
    const vp_train_options *o = &r->o->train;
    vp_stage **mine = vp__calloc((size_t)r->s->S, sizeof *mine);
    if (!mine)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_checkpoint_meta meta = {0};
    vp_checkpoint_run traj = vp__checkpoint_run(o);
    vp_status rc = vp_checkpoint_load(o->resume_dir, c->rank, r->s->p, &traj, mine,
                                      rank_stages(c, mine), &meta, err);
    free(mine);
    if (rc == VP_OK && meta.step >= o->steps)
        rc = vp__fail(err, VP_EINVAL,
                      "the checkpoint in %s is at step %d: none of the %d steps is left to run",
                      o->resume_dir, meta.step, o->steps);
    *step = meta.step;
    return rc;
}

/* One optimiser step on every rank (emulated: only the ops); rank 0 reports progress.
 * *stop is set when the callback asks to stop. */
static vp_status train_step(rank_ctx *c, int step, double *losses, vp_train_progress *p, int *stop,
                            vp_error *err) {
    run *r = c->r;
    const vp_train_options *o = &r->o->train;
    const vp_schedule *s = r->s;
    for (int st = 0; !r->emu && st < s->S; st++)
        if (s->stage_device[st] == c->rank)
            vp_stage_zero_grad(r->stage[st]);
    vp_status rc = r->t->vt->barrier(r->t, c->rank, err);
    double t0 = vp__now_ms();
    if (rc == VP_OK)
        rc = run_ops(c, step, losses, err);
    p->loss = p->grad_norm = NAN;
    if (rc == VP_OK && !r->emu)
        rc = update(c, step, losses, p, err);
    if (rc == VP_OK)
        rc = r->t->vt->barrier(r->t, c->rank, err);
    p->step_ms = vp__now_ms() - t0;
    size_t tokens = (size_t)o->model.microbatch * (size_t)o->model.seq_len * (size_t)s->m;
    p->tokens_per_s = (double)tokens / (p->step_ms / 1e3);
    int eval =
        !r->emu && (step + 1 == o->steps || (o->eval_every && (step + 1) % o->eval_every == 0));
    if (rc == VP_OK && eval)
        rc = evaluate(c, &p->val_loss, err);
    p->checkpointed =
        rc == VP_OK && o->checkpoint_dir &&
        (step + 1 == o->steps || (o->checkpoint_every && (step + 1) % o->checkpoint_every == 0));
    if (p->checkpointed)
        rc = checkpoint(c, step + 1, err);
    double want_stop = 0.0;
    if (rc == VP_OK && c->rank == 0 && r->callback)
        want_stop = r->callback(p, r->user) ? 0.0 : 1.0;
    if (rc == VP_OK)
        rc = r->t->vt->sum(r->t, c->rank, &want_stop, 1, err);
    *stop = want_stop > 0.0;
    if (rc == VP_OK && *stop && !eval && !r->emu)
        rc = evaluate(c, &p->val_loss, err);
    return rc;
}

/* Gathers on rank 0 what the result reports: every rank's peak, busy time and span (a
 * sum every rank learns), its op times, and the parameters of the first route's stages
 * in order, hashed as the single-rank reference hashes its one stage. */
static vp_status gather(rank_ctx *c, vp_error *err) {
    run *r = c->r;
    const vp_schedule *s = r->s;
    int p = s->p, n = s->dev[c->rank].n;
    double *v = vp__calloc((size_t)(3 * p), sizeof *v);
    if (!v)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    v[c->rank] = c->peak;
    v[p + c->rank] = c->busy;
    v[2 * p + c->rank] = c->span;
    vp_status rc = r->t->vt->sum(r->t, c->rank, v, 3 * p, err);
    if (rc == VP_OK && c->rank == r->rank_lo) {
        memcpy(r->peak, v, (size_t)p * sizeof *v);
        memcpy(r->busy, v + p, (size_t)p * sizeof *v);
        memcpy(r->span, v + 2 * p, (size_t)p * sizeof *v);
    }
    free(v);
    /* Op times: 3 floats per op (start, end, MiB after). */
    float *times = rc == VP_OK ? malloc((size_t)(3 * n + 1) * sizeof *times) : NULL;
    if (rc == VP_OK && !times)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    for (int k = 0; rc == VP_OK && k < n; k++) {
        times[3 * k] = (float)c->t_start[k];
        times[3 * k + 1] = (float)c->t_end[k];
        times[3 * k + 2] = (float)c->t_mem[k];
    }
    if (rc == VP_OK)
        rc = r->t->vt->send(r->t, c->rank, 0, (vp_msg_key){c->rank, 0, VP_MSG_TIMES}, times,
                            (size_t)(3 * n), err);
    for (int st = 0; rc == VP_OK && !r->emu && st < s->route_len; st++) {
        if (s->stage_device[st] != c->rank)
            continue;
        size_t count;
        const float *params = vp_stage_params(r->stage[st], &count);
        float *copy = malloc(count * sizeof *copy);
        if (!copy)
            return vp__fail(err, VP_ENOMEM, "out of memory");
        memcpy(copy, params, count * sizeof *copy);
        rc = r->t->vt->send(r->t, c->rank, 0, (vp_msg_key){st, 0, VP_MSG_PARAMS}, copy, count, err);
    }
    if (rc != VP_OK || c->rank != 0)
        return rc;
    for (int d = 0; rc == VP_OK && d < p; d++) {
        float *got = NULL;
        rc = r->t->vt->recv(r->t, 0, (vp_msg_key){d, 0, VP_MSG_TIMES}, (size_t)(3 * s->dev[d].n),
                            &got, err);
        for (int k = 0; rc == VP_OK && k < s->dev[d].n; k++) {
            r->t_start[d][k] = got[3 * k];
            r->t_end[d][k] = got[3 * k + 1];
            r->t_mem[d][k] = got[3 * k + 2];
        }
        free(got);
    }
    uint64_t digest = VP_DIGEST_INIT;
    for (int st = 0; rc == VP_OK && !r->emu && st < s->route_len; st++) {
        vp_stage_sizes sz;
        float *got = NULL;
        rc = vp_stage_sizes_of(&r->o->train.model, stage_range(r, st), &sz, err);
        if (rc == VP_OK)
            rc = r->t->vt->recv(r->t, 0, (vp_msg_key){st, 0, VP_MSG_PARAMS},
                                sz.param_bytes / sizeof(float), &got, err);
        if (rc == VP_OK)
            digest = vp_digest(got, sz.param_bytes, digest);
        free(got);
    }
    r->digest = digest;
    return rc;
}

static void *rank_main(void *arg) {
    rank_ctx *c = arg;
    run *r = c->r;
    const vp_train_options *o = &r->o->train;
    vp_error err = {0};
    vp_status rc = VP_OK;
    size_t N = (size_t)o->model.microbatch * (size_t)o->model.seq_len;
    double *losses = vp__calloc((size_t)r->s->m, sizeof *losses);
    size_t n = (size_t)r->s->dev[c->rank].n;
    c->tokens = malloc(N);
    c->targets = malloc(N);
    c->t_start = vp__calloc(n, sizeof(double));
    c->t_end = vp__calloc(n, sizeof(double));
    c->t_mem = vp__calloc(n, sizeof(double));
    if (!losses || !c->tokens || !c->targets || !c->t_start || !c->t_end || !c->t_mem)
        rc = vp__fail(&err, VP_ENOMEM, "out of memory");
    vp_blas_set_threads(1);
    double total_ms = 0.0;
    int start = 0;
    if (rc == VP_OK && o->resume_dir)
        rc = resume(c, &start, &err);
    if (c->rank == 0)
        r->res.resumed_step = r->res.steps = start;
    for (int step = start; rc == VP_OK && step < o->steps; step++) {
        vp_train_progress p = {.step = step + 1, .steps = o->steps, .val_loss = NAN};
        int stop = 0;
        rc = train_step(c, step, losses, &p, &stop, &err);
        if (rc != VP_OK)
            break;
        total_ms += p.step_ms;
        if (c->rank == 0) {
            r->res.steps = step + 1;
            r->res.skipped_steps += p.skipped;
            r->res.train_loss = p.loss;
            r->res.val_loss = p.val_loss;
            r->res.step_ms = total_ms / (step + 1 - start);
            r->res.tokens_per_s = (double)(N * (size_t)r->s->m) / (r->res.step_ms / 1e3);
        }
        if (stop)
            break;
    }
    if (rc == VP_OK)
        rc = gather(c, &err);
    if (rc != VP_OK)
        rank_fail(c, rc, &err);
    free(losses);
    free(c->tokens);
    free(c->targets);
    free(c->t_start);
    free(c->t_end);
    free(c->t_mem);
    return NULL;
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
    free(r->bubble_measured);
    vp_timeline_free(r->measured);
    memset(r, 0, sizeof *r);
}

static void free_rows(double **rows, int n) {
    for (int d = 0; rows && d < n; d++)
        free(rows[d]);
    free(rows);
}

static void run_free(run *r) {
    for (int st = 0; r->stage && st < r->s->S; st++)
        vp_stage_free(r->stage[st]);
    for (int d = 0; r->mem && d < r->s->p; d++)
        vp_mem_free(r->mem[d]);
    free(r->stage);
    free(r->mem);
    free_rows(r->t_start, r->s->p);
    free_rows(r->t_end, r->s->p);
    free_rows(r->t_mem, r->s->p);
    free(r->busy);
    free(r->span);
    free(r->peak);
    free(r->l0);
}

/* Allocates the run's arrays and the stages of the ranks this process hosts. */
static vp_status run_alloc(run *r, vp_error *err) {
    const vp_schedule *s = r->s;
    size_t p = (size_t)s->p;
    r->l0 = vp__calloc((size_t)s->route_len + 1, sizeof *r->l0);
    r->stage = vp__calloc((size_t)s->S, sizeof *r->stage);
    r->mem = vp__calloc(p, sizeof *r->mem);
    r->t_start = vp__calloc(p, sizeof *r->t_start);
    r->t_end = vp__calloc(p, sizeof *r->t_end);
    r->t_mem = vp__calloc(p, sizeof *r->t_mem);
    r->busy = vp__calloc(p, sizeof *r->busy);
    r->span = vp__calloc(p, sizeof *r->span);
    r->peak = vp__calloc(p, sizeof *r->peak);
    if (!r->l0 || !r->stage || !r->mem || !r->t_start || !r->t_end || !r->t_mem || !r->busy ||
        !r->span || !r->peak)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (size_t d = 0; d < p; d++) {
        size_t n = (size_t)s->dev[d].n;
        r->t_start[d] = vp__calloc(n, sizeof(double));
        r->t_end[d] = vp__calloc(n, sizeof(double));
        r->t_mem[d] = vp__calloc(n, sizeof(double));
        if (!r->t_start[d] || !r->t_end[d] || !r->t_mem[d])
            return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    for (int d = r->rank_lo; d < r->rank_hi; d++)
        if (!(r->mem[d] = vp_mem_new()))
            return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = vp_split_layers(r->L, s->route_len, r->l0, err);
    const vp_stage_options opt = {.n_slots = s->m, .seed = r->o->train.seed};
    for (int st = 0; rc == VP_OK && st < s->S; st++) {
        int d = s->stage_device[st];
        if (!r->emu && d >= r->rank_lo && d < r->rank_hi)
            rc = vp_stage_new(&r->o->train.model, stage_range(r, st), &opt, r->mem[d],
                              &r->stage[st], err);
    }
    return rc;
}

/* The simulated step time (ms) of the schedule with the given per-stage pass times. */
static vp_status predict_step(const run *r, double *out, vp_error *err) {
    vp_sim *sim = NULL;
    vp_status rc = vp_simulate(r->s, r->o->op_ms, &sim, err);
    if (rc == VP_OK)
        *out = sim->makespan;
    vp_sim_free(sim);
    return rc;
}

/* The result on this process: everything the gathered sums give, and on the process of
 * rank 0 also the measured timeline and the parameter digest. */
static vp_status fill_result(run *r, vp_pipeline_result *res, vp_error *err) {
    const vp_schedule *s = r->s;
    size_t p = (size_t)s->p;
    res->train = r->res;
    res->train.param_digest = r->digest;
    res->p = s->p;
    res->rank = r->rank_lo;
    res->route_len = s->route_len;
    res->layer_start = vp__calloc((size_t)s->route_len + 1, sizeof(int));
    res->peak_act_bytes = vp__calloc(p, sizeof(size_t));
    res->predicted_peak_bytes = vp__calloc(p, sizeof(double));
    res->bubble_measured = vp__calloc(p, sizeof(double));
    if (!res->layer_start || !res->peak_act_bytes || !res->predicted_peak_bytes ||
        !res->bubble_measured)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    memcpy(res->layer_start, r->l0, ((size_t)s->route_len + 1) * sizeof(int));
    res->train.peak_act_bytes = 0;
    for (size_t d = 0; d < p; d++) {
        res->peak_act_bytes[d] = (size_t)r->peak[d];
        if (res->peak_act_bytes[d] > res->train.peak_act_bytes)
            res->train.peak_act_bytes = res->peak_act_bytes[d];
        res->bubble_measured[d] = r->span[d] > 0 ? 1.0 - r->busy[d] / r->span[d] : 0.0;
    }
    vp_status rc = vp_pipeline_plan_check(s, &r->o->train.model, &res->bit_exact, err);
    if (rc == VP_OK)
        rc = vp_runtime_predict_peaks(s, &r->o->train.model, res->predicted_peak_bytes, err);
    if (rc == VP_OK && r->o->op_ms)
        rc = predict_step(r, &res->predicted_step_ms, err);
    if (rc != VP_OK || r->rank_lo != 0)
        return rc;
    res->measured = vp_timeline_new(s->family, s->p, s->S, s->m);
    if (!res->measured)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    memcpy(res->measured->stage_chunk, s->stage_chunk, (size_t)s->S * sizeof(int32_t));
    res->measured->has_mem = 1;
    snprintf(res->measured->mem_unit, sizeof res->measured->mem_unit, "MiB");
    for (size_t d = 0; d < p && rc == VP_OK; d++)
        for (int k = 0; k < s->dev[d].n && rc == VP_OK; k++) {
            vp_slice sl = {.op = s->dev[d].ops[k],
                           .start = r->t_start[d][k],
                           .end = r->t_end[d][k],
                           .mem = r->t_mem[d][k]};
            rc = vp_timeline_add(res->measured, (int)d, sl, err);
        }
    return rc;
}

vp_status vp_pipeline_train(const vp_pipeline_options *o, const vp_data *data,
                            vp_train_callback callback, void *user, vp_pipeline_result *result,
                            vp_error *err) {
    memset(result, 0, sizeof *result);
    const vp_schedule *s = o->schedule;
    if (!s)
        return vp__fail(err, VP_EINVAL, "no schedule");
    if (o->train.m != s->m)
        return vp__fail(err, VP_EINVAL, "the schedule has m=%d microbatches, training asks %d",
                        s->m, o->train.m);
    if (o->train.steps < 1 || o->train.eval_batches < 1)
        return vp__fail(err, VP_EINVAL, "need at least one step and one validation batch");
    if (o->emulate && !o->op_ms)
        return vp__fail(err, VP_EINVAL, "emulation needs the pass times (op_ms)");
    if (o->op_ms && o->op_ms->S != s->S)
        return vp__fail(err, VP_EINVAL, "the pass times have %d stages, the schedule %d",
                        o->op_ms->S, s->S);
    if (o->emulate && (o->train.checkpoint_dir || o->train.resume_dir))
        return vp__fail(err, VP_EINVAL, "an emulated run has no model state to checkpoint");
    vp_status rc = vp_pipeline_plan_check(s, &o->train.model, NULL, err);
    if (rc != VP_OK)
        return rc;
    run r = {.o = o, .s = s, .data = data, .callback = callback, .user = user};
    r.L = o->train.model.n_layer;
    r.units = r.L + 2;
    r.io_floats = (size_t)o->train.model.microbatch * (size_t)o->train.model.seq_len *
                  (size_t)o->train.model.width;
    r.res.val_loss = NAN;
    if (o->transport == VP_TRANSPORT_MPI) {
        rc = vp_transport_mpi_new(s->p, o->watchdog_s, &r.t, &r.rank_lo, err);
        r.rank_hi = r.rank_lo + 1;
    } else {
        r.t = vp_transport_threads_new(s->p, o->watchdog_s);
        r.rank_hi = s->p;
        if (!r.t)
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
    }
    if (o->emulate)
        r.emu = o->op_ms;
    if (rc == VP_OK)
        rc = run_alloc(&r, err);
    int local = r.rank_hi - r.rank_lo;
    rank_ctx *ctx = rc == VP_OK ? vp__calloc((size_t)local, sizeof *ctx) : NULL;
    pthread_t *threads = rc == VP_OK ? vp__calloc((size_t)local, sizeof *threads) : NULL;
    if (rc == VP_OK && (!ctx || !threads))
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    int started = 0;
    if (rc == VP_OK && o->transport == VP_TRANSPORT_MPI) {
        ctx[0] = (rank_ctx){.r = &r, .rank = r.rank_lo};
        rank_main(&ctx[0]); /* MPI calls stay on the thread that initialised MPI */
    }
    for (int i = 0; rc == VP_OK && o->transport != VP_TRANSPORT_MPI && i < local; i++) {
        ctx[i] = (rank_ctx){.r = &r, .rank = r.rank_lo + i};
        if (pthread_create(&threads[i], NULL, rank_main, &ctx[i]) != 0) {
            r.t->vt->abort(r.t, ctx[i].rank, VP_ERUNTIME, "cannot start a rank thread");
            rc = vp__fail(err, VP_ERUNTIME, "cannot start a rank thread");
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    if (rc == VP_OK && vp_transport_error(r.t)) {
        /* Under MPI the first failure's message came from another process: add what the
         * rank of this one was doing. */
        char here[300] = "";
        if (o->transport == VP_TRANSPORT_MPI)
            vp__transport_report(r.t, here, sizeof here);
        if (strstr(vp_transport_error(r.t), here))
            here[0] = '\0'; /* this process's own report already */
        rc = vp__fail(err, vp_transport_status(r.t), "%s%s", vp_transport_error(r.t), here);
    }
    if (rc == VP_OK)
        rc = fill_result(&r, result, err);
    if (rc != VP_OK)
        vp_pipeline_result_release(result);
    free(ctx);
    free(threads);
    run_free(&r);
    if (r.t)
        r.t->vt->free(r.t);
    return rc;
}
