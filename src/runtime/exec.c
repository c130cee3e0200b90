/* The executor: each rank walks its op list of the schedule on the model (one thread
 * per rank on the threads transport, this process's rank under MPI), sends and receives
 * tensors through the transport, and keeps the times of its last step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/exec.h"

static int is_first(const vp__run *r, int st) {
    return vp__route_pos(r->s, st) == 0;
}

static int is_last(const vp__run *r, int st) {
    return vp__route_pos(r->s, st) == r->s->route_len - 1;
}

/* Fails the rank: aborts every rank with its message (the first abort's is kept). */
static vp_status rank_fail(vp__rank *c, vp_status rc, const vp_error *e) {
    char msg[700];
    snprintf(msg, sizeof msg, "rank %d: %s", c->rank,
             e->message[0] ? e->message : vp_status_str(rc));
    c->r->t->vt->abort(c->r->t, c->rank, rc, msg);
    return rc;
}

void vp__emulate_for(double ms) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double ns = ts.tv_nsec + ms * 1e6;
    ts.tv_sec += (time_t)(ns / 1e9);
    ts.tv_nsec = (long)fmod(ns, 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ; /* interrupted: sleep on to the deadline */
}

/* The tensor an emulated pass hands on: real size, contents unused. */
static vp_status emulated_tensor(const vp__run *r, float **out, vp_error *err) {
    *out = malloc(r->io_floats * sizeof **out);
    return *out ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}

/* The tensors in flight of training ops (VP_MEM_IN_FLIGHT): one this rank made for
 * another stage (made = 1), or one that left (made = 0): sent to another rank, or taken
 * over by a stage of this rank. Nothing outside training ops (c->counting). */
static void count_in_flight(vp__rank *c, int made) {
    size_t bytes = c->r->io_floats * sizeof(float);
    if (c->counting)
        (made ? vp_mem_charge_to : vp_mem_uncharge_from)(c->r->mem[c->rank], VP_MEM_IN_FLIGHT,
                                                         bytes);
}

/* The sum in shard order of every vocabulary shard's part `what` of microbatch mb (n
 * floats) into a new *sum (emulated: received and dropped); the part of this rank's own
 * shard leaves the in-flight count. */
static vp_status receive_parts(vp__rank *c, int what, int mb, float **sum, vp_error *err) {
    vp__run *r = c->r;
    size_t n = r->io_floats;
    float *acc = malloc(n * sizeof *acc);
    vp_status rc = acc ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
    for (int e = 0; rc == VP_OK && e < r->K; e++) {
        float *part = NULL;
        rc = r->t->vt->recv(r->t, c->rank, vp_vocab_msg(what, e, mb), n, &part, err);
        if (rc == VP_OK && !r->emu)
            vp_vocab_add(acc, part, n, e == 0);
        free(part);
    }
    if (rc == VP_OK)
        count_in_flight(c, 0); /* this rank's shard's part */
    else
        free(acc);
    *sum = rc == VP_OK ? acc : NULL;
    return rc;
}

/* Hands buf (n floats, made by this rank's op, taken) to device `to` of the replica under
 * key: in flight while made, and until its pass takes it when it stays on this rank. */
static vp_status hand_on(vp__rank *c, int to, vp_msg_key key, float *buf, size_t n, vp_error *err) {
    count_in_flight(c, 1);
    vp_status rc = c->r->t->vt->send(c->r->t, c->rank, vp__peer(c, to), key, buf, n, err);
    if (to != c->dev)
        count_in_flight(c, 0);
    return rc;
}

/* Sends buf (io floats, counted in flight already) to the vocabulary pass `what` of
 * microbatch mb on every device: copies to the others (each in flight while made), the
 * tensor itself to this rank's shard. */
static vp_status broadcast(vp__rank *c, int what, int mb, float *buf, vp_error *err) {
    vp__run *r = c->r;
    vp_status rc = VP_OK;
    for (int e = 0; rc == VP_OK && e < r->K; e++) {
        if (e == c->dev)
            continue;
        float *copy = malloc(r->io_floats * sizeof *copy);
        if (!copy)
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
        else
            memcpy(copy, buf, r->io_floats * sizeof *copy);
        if (rc == VP_OK)
            rc = hand_on(c, e, vp_vocab_msg(what, e, mb), copy, r->io_floats, err);
    }
    if (rc == VP_OK)
        return r->t->vt->send(r->t, c->rank, c->rank, vp_vocab_msg(what, c->dev, mb), buf,
                              r->io_floats, err);
    free(buf);
    return rc;
}

/* The forward of (st, mb): input from the batch or the previous stage (with vocabulary
 * parallelism a first stage's from every shard's EF); *out receives the tensor for the
 * next stage (send_activation hands it on), or the loss goes to *loss on a route's last
 * stage (with vocabulary parallelism *out receives its output for the shards' S). In a
 * schedule that recomputes, a training forward then drops what its R rebuilds. */
static vp_status run_forward(vp__rank *c, int st, int mb, uint64_t batch, int validation,
                             double *loss, float **out, vp_error *err) {
    vp__run *r = c->r;
    int first = is_first(r, st), last = is_last(r, st);
    int embeds = first && !r->K, heads = last && !r->K;
    float *in = NULL;
    *out = NULL;
    vp_status rc = VP_OK;
    if ((embeds || heads) && !r->emu)
        rc = vp_data_batch(r->data, validation, r->o->train.seed, batch, &c->batch, err);
    if (rc == VP_OK && !first)
        rc =
            r->t->vt->recv(r->t, c->rank, (vp_msg_key){st, mb, VP_MSG_ACT}, r->io_floats, &in, err);
    else if (rc == VP_OK && r->K)
        rc = receive_parts(c, VP_VOCAB_EMB, mb, &in, err);
    if (rc == VP_OK && c->compute_start < 0)
        c->compute_start = vp__now_ms();
    if (rc == VP_OK && r->emu) {
        vp__emulate_for(r->emu->f[st]);
        free(in);
        if (!heads)
            rc = emulated_tensor(r, out, err);
    } else if (rc == VP_OK) {
        vp_stage_io io = {.in = in,
                          .tokens = embeds ? c->batch.tokens : NULL,
                          .targets = heads ? c->batch.targets : NULL,
                          .out = heads ? NULL : out,
                          .loss = heads ? loss : NULL};
        rc = vp_stage_forward(vp__stage_at(c, st), mb, &io, err);
        if (rc == VP_OK && !validation && r->s->recompute != VP_RECOMPUTE_NONE)
            rc = vp_stage_drop(vp__stage_at(c, st), mb, r->s->recompute == VP_RECOMPUTE_FULL, err);
    }
    return rc;
}

/* Before a pass that reads (st, mb)'s activation again (its R, else its backward): waits
 * for its reload's copy when the schedule offloads it. */
static vp_status await_reload(vp__rank *c, int st, int mb, vp_error *err) {
    double a, b;
    if (!vp__offloads(c->r, st, mb))
        return VP_OK;
    return vp__copier_wait(c->copier, VP_OP_L, st, mb, &a, &b, err);
}

/* O of (st, mb): waits for the copy to host its forward issued, then lets the device
 * buffers go; L: takes them again and issues the copy back. */
static vp_status run_copy_op(vp__rank *c, int k, const vp_op *op, vp_error *err) {
    vp__run *r = c->r;
    vp_status rc = VP_OK;
    if (op->kind == VP_OP_O) {
        rc = vp__copier_wait(c->copier, VP_OP_O, op->stage, op->mb, &c->t_copy0[k], &c->t_copy1[k],
                             err);
        c->compute_start = vp__now_ms();
        if (rc == VP_OK && !r->emu)
            rc = vp_stage_offload_release(vp__stage_at(c, op->stage), op->mb, err);
        return rc;
    }
    c->compute_start = vp__now_ms();
    if (!r->emu)
        rc = vp_stage_reload_reserve(vp__stage_at(c, op->stage), op->mb, err);
    if (rc == VP_OK)
        vp__copier_issue(c->copier, VP_OP_L, op->stage, op->mb);
    return rc;
}

/* R of (st, mb): the forward again, rebuilding what its F dropped (local: no message). */
static vp_status run_recompute(vp__rank *c, int st, int mb, vp_error *err) {
    vp__run *r = c->r;
    vp_status rc = await_reload(c, st, mb, err);
    if (rc != VP_OK)
        return rc;
    c->compute_start = vp__now_ms();
    if (r->emu) {
        vp__emulate_for(r->emu->r[st]);
        return VP_OK;
    }
    return vp_stage_recompute(vp__stage_at(c, st), mb, err);
}

/* Hands the forward output of (st, mb) to the next stage (none after a route's last; with
 * vocabulary parallelism there to every shard's S). */
static vp_status send_activation(vp__rank *c, int st, int mb, float *out, vp_error *err) {
    vp__run *r = c->r;
    if (is_last(r, st))
        return r->K ? broadcast(c, VP_VOCAB_HID, mb, out, err) : VP_OK;
    return r->t->vt->send(r->t, c->rank, vp__peer(c, r->s->stage_device[st + 1]),
                          (vp_msg_key){st + 1, mb, VP_MSG_ACT}, out, r->io_floats, err);
}

/* B, W or BW of (st, mb). A BW hands its input gradient upstream only after its W, as
 * one full backward does (and as the simulator times it). With vocabulary parallelism a
 * last stage starts from every shard's T part, and a first stage's input gradient goes to
 * every shard's EB. */
static vp_status run_backward(vp__rank *c, int kind, int st, int mb, vp_error *err) {
    vp__run *r = c->r;
    const vp_schedule *s = r->s;
    int first = is_first(r, st), last = is_last(r, st), back = kind != VP_OP_W;
    int embeds = first && !r->K, heads = last && !r->K;
    float loss_scale = 1.0f / (float)r->o->train.m; /* the global batch's mean */
    float *dout = NULL, *din = NULL;
    vp_status rc = VP_OK;
    if (back && !last)
        rc = r->t->vt->recv(r->t, c->rank, (vp_msg_key){st, mb, VP_MSG_GRAD}, r->io_floats, &dout,
                            err);
    else if (back && !heads)
        rc = receive_parts(c, VP_VOCAB_GRAD, mb, &dout, err);
    if (rc == VP_OK && back && !last && vp__holds(c, st + 1))
        count_in_flight(c, 0); /* taken over from the next stage, on this rank */
    if (rc == VP_OK && kind != VP_OP_W && r->s->recompute == VP_RECOMPUTE_NONE)
        rc = await_reload(c, st, mb, err); /* (a recomputing schedule's R waited) */
    if (rc == VP_OK && c->compute_start < 0)
        c->compute_start = vp__now_ms();
    if (rc == VP_OK && back) {
        if (r->emu) {
            vp__emulate_for(r->emu->b[st]);
            free(dout);
            if (!embeds)
                rc = emulated_tensor(r, &din, err);
        } else {
            rc = vp_stage_backward_input(vp__stage_at(c, st), mb, dout, loss_scale,
                                         embeds ? NULL : &din, err);
        }
    }
    if (rc == VP_OK && kind != VP_OP_B) {
        if (r->emu)
            vp__emulate_for(r->emu->w[st]);
        else
            rc = vp_stage_backward_weight(vp__stage_at(c, st), mb, err);
    }
    if (rc == VP_OK && back && !first) {
        count_in_flight(c, 1);
        rc = r->t->vt->send(r->t, c->rank, vp__peer(c, s->stage_device[st - 1]),
                            (vp_msg_key){st - 1, mb, VP_MSG_GRAD}, din, r->io_floats, err);
        if (!vp__holds(c, st - 1))
            count_in_flight(c, 0); /* gone to another rank */
    } else if (rc == VP_OK && back && !embeds) {
        count_in_flight(c, 1);
        rc = broadcast(c, VP_VOCAB_EMBG, mb, din, err);
    } else
        vp_stage_buffer_free(din); /* nothing to hand on, or a failed pass */
    return rc;
}

/* The devices of microbatch mb's first and last stage. */
static int first_device(const vp__run *r, int mb) {
    return r->s->stage_device[r->s->mb_first[mb]];
}

static int last_device(const vp__run *r, int mb) {
    return r->s->stage_device[vp_schedule_last_stage(r->s, mb)];
}

/* Receives the tensor of key from device `from` of the replica; one from this rank (its
 * own op made it) leaves the in-flight count. */
static vp_status take_from(vp__rank *c, int from, vp_msg_key key, size_t n, float **buf,
                           vp_error *err) {
    vp_status rc = c->r->t->vt->recv(c->r->t, c->rank, key, n, buf, err);
    if (rc == VP_OK && from == c->dev)
        count_in_flight(c, 0);
    return rc;
}

/* Floats of one shard's softmax statistics of a microbatch. */
static size_t stats_floats(const vp__run *r) {
    return VP_VOCAB_STATS * (r->io_floats / (size_t)r->o->train.model.width);
}

/* S of this rank's shard for microbatch mb (data batch `batch`): its statistics to every
 * shard's T (this one's too), each a copy in the transport. */
static vp_status run_output(vp__rank *c, int mb, uint64_t batch, int validation, vp_error *err) {
    vp__run *r = c->r;
    float *h = NULL, *stats = malloc(stats_floats(r) * sizeof *stats);
    vp_status rc = stats ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK && !r->emu)
        rc = vp_data_batch(r->data, validation, r->o->train.seed, batch, &c->batch, err);
    if (rc == VP_OK)
        rc = take_from(c, last_device(r, mb), vp_vocab_msg(VP_VOCAB_HID, c->dev, mb), r->io_floats,
                       &h, err);
    if (rc == VP_OK && c->compute_start < 0)
        c->compute_start = vp__now_ms();
    if (rc == VP_OK && r->emu) {
        vp__emulate_for(vp_cost_model_pass_time(r->emu, VP_OP_S, c->dev));
        free(h);
    } else if (rc == VP_OK) {
        rc = vp_vocab_output(vp__vocab_at(c), mb, h, c->batch.targets, stats, err);
    }
    int to = validation ? last_device(r, mb) : 0, end = validation ? to + 1 : r->K;
    for (; rc == VP_OK && to < end; to++) {
        float *copy = malloc(stats_floats(r) * sizeof *copy);
        if (!copy)
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
        else
            memcpy(copy, stats, stats_floats(r) * sizeof *copy);
        if (rc == VP_OK)
            rc =
                r->t->vt->send(r->t, c->rank, vp__peer(c, to),
                               vp_vocab_msg(VP_VOCAB_STAT, c->dev, mb), copy, stats_floats(r), err);
    }
    free(stats);
    return rc;
}

/* Every shard's statistics of microbatch mb, combined in shard order into combined; the
 * microbatch's loss into *loss. */
static vp_status combine(vp__rank *c, int mb, float *combined, double *loss, vp_error *err) {
    vp__run *r = c->r;
    size_t n = stats_floats(r);
    float **parts = vp__calloc((size_t)r->K, sizeof *parts);
    vp_status rc = parts ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
    for (int e = 0; rc == VP_OK && e < r->K; e++)
        rc = r->t->vt->recv(r->t, c->rank, vp_vocab_msg(VP_VOCAB_STAT, e, mb), n, &parts[e], err);
    if (rc == VP_OK && !r->emu)
        *loss = vp_vocab_combine((const float *const *)parts, r->K, (int)(n / VP_VOCAB_STATS),
                                 combined);
    for (int e = 0; parts && e < r->K; e++)
        free(parts[e]);
    free(parts);
    return rc;
}

/* A vocabulary pass of this rank's shard (EF, EB, S or T) of microbatch mb, the data
 * batch of the replica's microbatch 0 being batch0; T of a microbatch whose last stage
 * this rank holds puts the loss into losses[mb]. */
static vp_status run_vocab(vp__rank *c, const vp_op *op, uint64_t batch0, double *losses,
                           vp_error *err) {
    vp__run *r = c->r;
    int mb = op->mb;
    vp_stage *shard = vp__vocab_at(c);
    float *buf = NULL, *combined = NULL;
    vp_status rc = VP_OK;
    if (op->kind == VP_OP_S)
        return run_output(c, mb, batch0 + (uint64_t)mb, 0, err);
    if (op->kind == VP_OP_EF && !r->emu)
        rc = vp_data_batch(r->data, 0, r->o->train.seed, batch0 + (uint64_t)mb, &c->batch, err);
    if (rc == VP_OK && op->kind == VP_OP_EB)
        rc = take_from(c, first_device(r, mb), vp_vocab_msg(VP_VOCAB_EMBG, c->dev, mb),
                       r->io_floats, &buf, err);
    if (rc == VP_OK && op->kind == VP_OP_T &&
        (combined = malloc(stats_floats(r) * sizeof *combined)) == NULL)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK && op->kind == VP_OP_T)
        rc = combine(c, mb, combined, &losses[mb], err);
    if (rc == VP_OK)
        c->compute_start = vp__now_ms();
    if (rc == VP_OK && r->emu) {
        vp__emulate_for(vp_cost_model_pass_time(r->emu, op->kind, c->dev));
        if (op->kind != VP_OP_EB)
            rc = emulated_tensor(r, &buf, err);
    } else if (rc == VP_OK) {
        float *made = NULL;
        rc = op->kind == VP_OP_EF ? vp_vocab_embed(shard, mb, c->batch.tokens, &made, err)
             : op->kind == VP_OP_EB
                 ? vp_vocab_embed_backward(shard, mb, buf, err)
                 : vp_vocab_output_backward(shard, mb, combined, 1.0f / (float)r->o->train.m, &made,
                                            err);
        if (op->kind != VP_OP_EB) {
            free(buf);
            buf = made;
        }
    }
    free(combined);
    if (rc != VP_OK || op->kind == VP_OP_EB) {
        free(buf);
        return rc;
    }
    int to = op->kind == VP_OP_EF ? first_device(r, mb) : last_device(r, mb);
    return hand_on(c, to,
                   vp_vocab_msg(op->kind == VP_OP_EF ? VP_VOCAB_EMB : VP_VOCAB_GRAD, c->dev, mb),
                   buf, r->io_floats, err);
}

/* Runs one op; the loss of a last stage's forward goes to losses[mb]. The replica's
 * microbatch mb is batch step * m + replica * (m / D) + mb of the data (m the global
 * batch). */
static vp_status run_op(vp__rank *c, int k, const vp_op *op, int step, double *losses,
                        vp_error *err) {
    uint64_t batch =
        (uint64_t)step * (uint64_t)c->r->o->train.m + (uint64_t)c->replica * (uint64_t)c->r->s->m;
    if (op->kind == VP_OP_R)
        return run_recompute(c, op->stage, op->mb, err);
    if (op->kind == VP_OP_O || op->kind == VP_OP_L)
        return run_copy_op(c, k, op, err);
    if (vp_op_kind_is_vocab(op->kind))
        return run_vocab(c, op, batch, losses, err);
    if (op->kind != VP_OP_F && op->kind != VP_OP_FB)
        return run_backward(c, op->kind, op->stage, op->mb, err);
    float *out = NULL;
    int st = op->stage;
    vp_status rc =
        run_forward(c, st, op->mb, batch + (uint64_t)op->mb, 0, &losses[op->mb], &out, err);
    if (rc == VP_OK && !is_first(c->r, st) && vp__holds(c, st - 1))
        count_in_flight(c, 0); /* taken over from the previous stage, on this rank */
    if (rc == VP_OK && (!is_last(c->r, st) || c->r->K))
        count_in_flight(c, 1);
    /* An overlapped F&B finishes both halves before either result leaves, as one unit. */
    if (rc == VP_OK && op->kind == VP_OP_FB)
        rc = run_backward(c, op->bkind, op->stage2, op->mb2, err);
    if (rc != VP_OK) {
        vp_stage_buffer_free(out);
        return rc;
    }
    rc = send_activation(c, st, op->mb, out, err); /* the transport owns out from here */
    if (rc == VP_OK && !is_last(c->r, st) && !vp__holds(c, st + 1))
        count_in_flight(c, 0);                         /* gone to another rank */
    if (rc == VP_OK && vp__offloads(c->r, st, op->mb)) /* the op ends: its copy to host */
        vp__copier_issue(c->copier, VP_OP_O, st, op->mb);
    return rc;
}

/* Stages whose gradients count once: the first copy of a bidirectional model. */
static int counts_for_norm(const vp__run *r, int st) {
    return r->s->placement != VP_PLACE_BIDIR || st < r->s->route_len;
}

/* Bidirectional placement: each replica stage adds its twin's gradients (a + b = b + a,
 * so both copies end bit-identical). */
static vp_status sum_replicas(vp__rank *c, vp_error *err) {
    vp__run *r = c->r;
    const vp_schedule *s = r->s;
    if (s->placement != VP_PLACE_BIDIR)
        return VP_OK;
    vp_status rc = VP_OK;
    for (int st = 0; rc == VP_OK && st < s->S; st++) {
        if (!vp__holds(c, st))
            continue;
        int twin = (st + s->route_len) % s->S;
        size_t n;
        float *g = vp_stage_grads(vp__stage_at(c, st), &n);
        float *copy = malloc(n * sizeof *copy);
        if (!copy)
            return vp__fail(err, VP_ENOMEM, "out of memory");
        memcpy(copy, g, n * sizeof *copy);
        rc = r->t->vt->send(r->t, c->rank, vp__peer(c, s->stage_device[twin]),
                            (vp_msg_key){st, 0, VP_MSG_REPLICA}, copy, n, err);
    }
    for (int st = 0; rc == VP_OK && st < s->S; st++) {
        if (!vp__holds(c, st))
            continue;
        int twin = (st + s->route_len) % s->S;
        size_t n;
        float *g = vp_stage_grads(vp__stage_at(c, st), &n), *other = NULL;
        rc = r->t->vt->recv(r->t, c->rank, (vp_msg_key){twin, 0, VP_MSG_REPLICA}, n, &other, err);
        for (size_t i = 0; rc == VP_OK && i < n; i++)
            g[i] += other[i];
        free(other);
    }
    return rc;
}

/* Mean loss over the global batch's microbatches and global gradient norm, the same on
 * every rank and summed in the single-rank reference's order: the losses in microbatch
 * order, the norm's blocks in model order (each block from the replica owning it). */
static vp_status reduce_step(vp__rank *c, double *losses, double *loss, double *norm,
                             vp_error *err) {
    vp__run *r = c->r;
    const vp_schedule *s = r->s;
    int m = r->o->train.m, mine = c->replica * s->m; /* the global batch, this replica's */
    double *v = vp__calloc((size_t)(m + r->blocks), sizeof *v);
    if (!v)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int j = 0; j < s->m; j++)
        if (vp__holds(c, vp_schedule_last_stage(s, j)))
            v[mine + j] = losses[j];
    for (int st = 0; st < s->S; st++)
        if (vp__holds(c, st) && counts_for_norm(r, st)) {
            vp_shard sh = vp__dp_shard(c, st);
            vp_stage_grad_sumsq_blocks(vp__stage_at(c, st), sh, v + m + sh.b0);
        }
    if (r->K) { /* the rank's vocabulary shard, whole (one replica) */
        vp_shard sh;
        vp_shard_of(&r->o->train.model, vp_vocab_range(c->dev, r->K), 0, 1, &sh, NULL);
        vp_stage_grad_sumsq_blocks(vp__vocab_at(c), sh, v + m + sh.b0);
    }
    vp_status rc = r->t->vt->sum(r->t, c->rank, v, m + r->blocks, err);
    if (rc == VP_OK) {
        double lsum = 0.0, gsum = 0.0;
        for (int j = 0; j < m; j++)
            lsum += v[j];
        for (int b = 0; b < r->blocks; b++)
            gsum += v[m + b];
        *loss = lsum / m;
        *norm = sqrt(gsum);
    }
    free(v);
    return rc;
}

/* Validation with vocabulary parallelism, before the stages' forwards: EF of this rank's
 * shard for validation batch e, to the first stage. */
static vp_status evaluate_embed(vp__rank *c, int e, vp_error *err) {
    vp__run *r = c->r;
    float *part = NULL;
    vp_status rc = vp_data_batch(r->data, 1, r->o->train.seed, (uint64_t)e, &c->batch, err);
    if (rc == VP_OK)
        rc = vp_vocab_embed(vp__vocab_at(c), 0, c->batch.tokens, &part, err);
    vp_stage_discard(vp__vocab_at(c), 0);
    return rc == VP_OK ? hand_on(c, first_device(r, 0), vp_vocab_msg(VP_VOCAB_EMB, c->dev, 0), part,
                                 r->io_floats, err)
                       : rc;
}

/* ... and after them: S of this rank's shard, its statistics to the last stage's device,
 * which combines them into the batch's loss *loss. */
static vp_status evaluate_output(vp__rank *c, int e, double *loss, vp_error *err) {
    vp__run *r = c->r;
    vp_status rc = run_output(c, 0, (uint64_t)e, 1, err);
    vp_stage_discard(vp__vocab_at(c), 0);
    if (rc != VP_OK || c->dev != last_device(r, 0))
        return rc;
    float *combined = malloc(stats_floats(r) * sizeof *combined);
    rc = combined ? combine(c, 0, combined, loss, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    free(combined);
    return rc;
}

/* Forward-only validation loss over eval_batches windows, every rank of replica 0 taking
 * its stages of the first route in order (with vocabulary parallelism, its shard's EF
 * before them and S after). */
static vp_status evaluate(vp__rank *c, double *val, vp_error *err) {
    vp__run *r = c->r;
    const vp_schedule *s = r->s;
    int batches = r->o->train.eval_batches;
    double *v = vp__calloc((size_t)batches, sizeof *v);
    if (!v)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = VP_OK;
    for (int e = 0; rc == VP_OK && c->replica == 0 && e < batches; e++) {
        if (r->K)
            rc = evaluate_embed(c, e, err);
        for (int st = 0; rc == VP_OK && st < s->route_len; st++) {
            if (!vp__holds(c, st))
                continue;
            float *out = NULL;
            rc = run_forward(c, st, 0, (uint64_t)e, 1, &v[e], &out, err);
            vp_stage_discard(vp__stage_at(c, st), 0);
            if (rc == VP_OK)
                rc = send_activation(c, st, 0, out, err);
        }
        if (rc == VP_OK && r->K)
            rc = evaluate_output(c, e, &v[e], err);
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

/* The copy times of the step's O and L ops (every copy has ended), from t0. */
static void copy_times(vp__rank *c, double t0) {
    const vp_oplist *ops = &c->r->s->dev[c->dev];
    for (int k = 0; c->copier && k < ops->n; k++) {
        const vp_op *op = &ops->ops[k];
        if (op->kind == VP_OP_L)
            vp__copier_times(c->copier, VP_OP_L, op->stage, op->mb, &c->t_copy0[k], &c->t_copy1[k]);
        if (op->kind == VP_OP_O || op->kind == VP_OP_L) {
            c->t_copy0[k] -= t0;
            c->t_copy1[k] -= t0;
        }
    }
}

/* Runs the op list of one step and records the times of the last step: an op starts
 * when its inputs have arrived (waiting is idle time) and ends when its compute does.
 * Once an op completes a stage's last weight gradient of the step, the stage's gradients
 * are reduced across the replicas (between ops: idle time on the timeline). */
static vp_status run_ops(vp__rank *c, int step, double *losses, vp_error *err) {
    vp__run *r = c->r;
    const vp_oplist *ops = &r->s->dev[c->dev];
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
            /* nobody sends this: the watchdog (or another rank's failure) ends the wait */
            const vp_op *op = &ops->ops[k];
            float *never = NULL;
            return r->t->vt->recv(r->t, c->rank, (vp_msg_key){op->stage, op->mb, VP_MSG_STALL}, 0,
                                  &never, err);
        }
        c->compute_start = -1.0;
        c->counting = 1;
        vp_status rc = run_op(c, k, &ops->ops[k], step, losses, err);
        c->counting = 0;
        if (rc != VP_OK)
            return rc;
        double a = c->compute_start, b = vp__now_ms();
        busy += b - a;
        c->t_start[k] = a - t0;
        c->t_end[k] = b - t0;
        c->t_mem[k] = (double)vp_mem_current(r->mem[c->rank]) / (1024.0 * 1024.0);
        if (!r->emu && r->reduce_at[c->dev][k] >= 0)
            rc = vp__dp_reduce(c, r->reduce_at[c->dev][k], err);
        if (rc != VP_OK)
            return rc;
    }
    vp_transport_set_op(r->t, c->rank, -1, NULL);
    copy_times(c, t0);
    if ((double)vp_mem_peak(r->mem[c->rank]) > c->peak)
        c->peak = (double)vp_mem_peak(r->mem[c->rank]);
    c->busy = busy;
    c->span = ops->n ? c->t_end[ops->n - 1] - c->t_start[0] : 0.0;
    return VP_OK;
}

/* After a step's ops: replica sums, the losses and the global norm, then the step policy
 * (vp__step_decide, the same on every rank since every rank sees the same sums) and
 * AdamW on the rank's stages. */
static vp_status update(vp__rank *c, int step, double *losses, vp_train_progress *p,
                        vp_error *err) {
    vp__run *r = c->r;
    const vp_train_options *o = &r->o->train;
    const vp_schedule *s = r->s;
    if (vp__step_poisoned(o, step) && c->rank == s->stage_device[0]) { /* of replica 0 */
        size_t n;
        vp_stage_grads(vp__stage_at(c, 0), &n)[0] = NAN; /* the injected fault */
    }
    vp_status rc = sum_replicas(c, err);
    if (rc == VP_OK)
        rc = reduce_step(c, losses, &p->loss, &p->grad_norm, err);
    float scale;
    if (rc == VP_OK)
        rc = vp__step_decide(o, step, p, &scale, err);
    for (int st = 0; rc == VP_OK && st <= s->S; st++) {
        vp_stage *x = st < s->S ? (vp__holds(c, st) ? vp__stage_at(c, st) : NULL) : vp__vocab_at(c);
        if (x && p->skipped)
            vp_stage_zero_grad(x);
        else if (x)
            vp_stage_adamw(x, &o->adamw, step + 1, (float)p->lr, scale);
    }
    if (rc == VP_OK && !p->skipped)
        rc = vp__dp_gather_params(c, err);
    return rc;
}

/* The stages the rank holds, in stage order; with `writes`, only those whose state it
 * writes into a checkpoint: one copy of each element of the model (the first route's
 * stages, of replica 0 or, with ZeRO-1, the rank's shards of every replica). */
static int rank_stages(const vp__rank *c, bool writes, vp_stage **out) {
    const vp__run *r = c->r;
    int n = 0;
    if (writes && c->replica > 0 && !r->o->zero)
        return 0;
    for (int st = 0; st < r->s->S; st++)
        if (vp__holds(c, st) && (!writes || st < r->s->route_len))
            out[n++] = vp__stage_at(c, st);
    return n;
}

/* The shape of this run, as its checkpoints record it. */
static vp_checkpoint_shape run_shape(const vp__run *r) {
    vp_checkpoint_shape shape = {.p = r->s->p, .dp = r->D, .zero = r->o->zero};
    snprintf(shape.schedule, sizeof shape.schedule, "%s", r->s->family);
    snprintf(shape.transport, sizeof shape.transport, "%s",
             r->o->transport == VP_TRANSPORT_MPI ? "mpi" : "threads");
    return shape;
}

/* Saves the state after `step` completed steps: every rank writes its part, then rank 0
 * commits the set and prunes older files (see checkpoint.h; a failed prune goes to p's
 * note). */
static vp_status checkpoint(vp__rank *c, int step, vp_train_progress *p, vp_error *err) {
    vp__run *r = c->r;
    const vp_train_options *o = &r->o->train;
    vp_stage **mine = vp__calloc((size_t)r->s->S, sizeof *mine);
    if (!mine)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_checkpoint_meta meta = {.step = step,
                               .data_pos = (uint64_t)step * (uint64_t)o->m,
                               .n_parts = r->P,
                               .shape = run_shape(r)};
    vp_checkpoint_run traj = vp__checkpoint_run(o, r->data);
    const vp_checkpoint_part part = {c->rank, r->P, mine, rank_stages(c, true, mine)};
    vp_status rc =
        vp_checkpoint_write_part(o->checkpoint_dir, &traj, &part, step, meta.data_pos, err);
    if (rc == VP_OK)
        rc = r->t->vt->barrier(r->t, c->rank, err);
    if (rc == VP_OK && c->rank == 0)
        rc = vp_checkpoint_commit(o->checkpoint_dir, &meta, err);
    if (rc == VP_OK && c->rank == 0)
        vp__checkpoint_prune(o, step, p);
    if (rc == VP_OK)
        rc = r->t->vt->barrier(r->t, c->rank, err);
    free(mine);
    return rc;
}

/* Restores the rank's stages from o->resume_dir (of any shape); *step receives the steps
 * already done (all of them when the run had finished: then nothing is left to run). */
static vp_status resume(vp__rank *c, int *step, vp_error *err) {
    vp__run *r = c->r;
    const vp_train_options *o = &r->o->train;
    vp_stage **mine = vp__calloc((size_t)r->s->S, sizeof *mine);
    if (!mine)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_checkpoint_meta meta = {0};
    vp_checkpoint_run traj = vp__checkpoint_run(o, r->data);
    const vp_checkpoint_part part = {c->rank, r->P, mine, rank_stages(c, false, mine)};
    vp_status rc = vp_checkpoint_load(o->resume_dir, &traj, &part, &meta, err);
    free(mine);
    *step = meta.step;
    return rc;
}

/* The ops of one optimiser step on every rank and its update (emulated: only the ops;
 * losses, norm and lr are then NaN). */
static vp_status step_ops(vp__rank *c, int step, double *losses, vp_train_progress *p,
                          vp_error *err) {
    vp__run *r = c->r;
    const vp_schedule *s = r->s;
    for (int st = 0; !r->emu && st < s->S; st++)
        if (vp__holds(c, st))
            vp_stage_zero_grad(vp__stage_at(c, st));
    if (!r->emu && r->K)
        vp_stage_zero_grad(vp__vocab_at(c));
    vp_status rc = r->t->vt->barrier(r->t, c->rank, err);
    double t0 = vp__now_ms();
    if (rc == VP_OK)
        rc = run_ops(c, step, losses, err);
    p->loss = p->grad_norm = p->lr = NAN;
    if (rc == VP_OK && !r->emu)
        rc = update(c, step, losses, p, err);
    if (rc == VP_OK)
        rc = r->t->vt->barrier(r->t, c->rank, err);
    p->step_ms = vp__now_ms() - t0;
    const vp_model_config *cfg = &r->o->train.model;
    double tokens = (double)cfg->microbatch * cfg->seq_len * r->o->train.m;
    p->tokens_per_s = tokens / (p->step_ms / 1e3);
    return rc;
}

/* One step and what follows it: evaluation and checkpoint when due, the callback on rank
 * 0 (*stop when it asks every rank to stop; the model is then evaluated if it was not). */
static vp_status train_step(vp__rank *c, int step, double *losses, vp_train_progress *p, int *stop,
                            vp_error *err) {
    vp__run *r = c->r;
    const vp_train_options *o = &r->o->train;
    vp_status rc = step_ops(c, step, losses, p, err);
    bool eval = !r->emu && vp__step_evaluates(o, step + 1);
    if (rc == VP_OK && eval)
        rc = evaluate(c, &p->val_loss, err);
    p->checkpointed = rc == VP_OK && vp__step_checkpoints(o, step + 1);
    if (p->checkpointed)
        rc = checkpoint(c, step + 1, p, err);
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

/* Every rank's peak, busy time, span and peak bytes per category, summed so that every
 * rank learns them (the process's lowest rank keeps them in the run). */
static vp_status gather_sums(vp__rank *c, vp_error *err) {
    vp__run *r = c->r;
    int P = r->P, cats = VP_MEM_CATEGORIES;
    double *v = vp__calloc((size_t)((3 + cats) * P), sizeof *v);
    if (!v)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    v[c->rank] = c->peak;
    v[P + c->rank] = c->busy;
    v[2 * P + c->rank] = c->span;
    for (int cat = 0; cat < cats; cat++)
        v[3 * P + c->rank * cats + cat] =
            cat == VP_MEM_ACTIVATIONS ? c->peak
            : cat == VP_MEM_HOST      ? (double)vp_mem_peak(r->host[c->rank])
                                 : (double)vp_mem_peak_of(r->mem[c->rank], (vp_mem_category)cat);
    vp_status rc = r->t->vt->sum(r->t, c->rank, v, (3 + cats) * P, err);
    if (rc == VP_OK && c->rank == r->rank_lo) {
        memcpy(r->peak, v, (size_t)P * sizeof *v);
        memcpy(r->busy, v + P, (size_t)P * sizeof *v);
        memcpy(r->span, v + 2 * P, (size_t)P * sizeof *v);
        memcpy(r->memory, v + 3 * P, (size_t)(cats * P) * sizeof *v);
    }
    free(v);
    return rc;
}

/* The op times of replica 0's ranks, on rank 0: 5 floats per op (start, end, MiB after,
 * and for O and L ops their copy's start and end). */
static vp_status gather_times(vp__rank *c, vp_error *err) {
    vp__run *r = c->r;
    const vp_schedule *s = r->s;
    int n = s->dev[c->dev].n;
    vp_status rc = VP_OK;
    if (c->replica == 0) {
        float *times = malloc((size_t)(5 * n + 1) * sizeof *times);
        if (!times)
            return vp__fail(err, VP_ENOMEM, "out of memory");
        for (int k = 0; k < n; k++) {
            const double v[5] = {c->t_start[k], c->t_end[k], c->t_mem[k], c->t_copy0[k],
                                 c->t_copy1[k]};
            for (int i = 0; i < 5; i++)
                times[5 * k + i] = (float)v[i];
        }
        rc = r->t->vt->send(r->t, c->rank, 0, (vp_msg_key){c->rank, 0, VP_MSG_TIMES}, times,
                            (size_t)(5 * n), err);
    }
    for (int d = 0; rc == VP_OK && c->rank == 0 && d < s->p; d++) {
        float *got = NULL;
        rc = r->t->vt->recv(r->t, 0, (vp_msg_key){d, 0, VP_MSG_TIMES}, (size_t)(5 * s->dev[d].n),
                            &got, err);
        for (int k = 0; rc == VP_OK && k < s->dev[d].n; k++) {
            double *rows[5] = {r->t_start[d], r->t_end[d], r->t_mem[d], r->t_copy0[d],
                               r->t_copy1[d]};
            for (int i = 0; i < 5; i++)
                rows[i][k] = got[5 * k + i];
        }
        free(got);
    }
    return rc;
}

/* The parameters of replica 0's first route, in stage order, hashed on rank 0 as the
 * single-rank reference hashes its one stage. */
/* Sends a copy of stage x's parameters to rank 0 under key (id, 0, PARAMS). */
static vp_status send_params(vp__rank *c, int id, vp_stage *x, vp_error *err) {
    size_t count;
    const float *params = vp_stage_params(x, &count);
    float *copy = malloc((count ? count : 1) * sizeof *copy);
    if (!copy)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    memcpy(copy, params, count * sizeof *copy);
    return c->r->t->vt->send(c->r->t, c->rank, 0, (vp_msg_key){id, 0, VP_MSG_PARAMS}, copy, count,
                             err);
}

/* Rank 0's digest of the parameters of replica 0's first route (with vocabulary
 * parallelism the whole model's arrays in order: the shards' token-table rows, the
 * stages, the shards' head rows; shard d's come as id S + d). */
static vp_status digest_params(vp__rank *c, uint64_t *digest, vp_error *err) {
    vp__run *r = c->r;
    const vp_schedule *s = r->s;
    float **shard = vp__calloc((size_t)r->K + 1, sizeof *shard);
    size_t *n = vp__calloc((size_t)r->K + 1, sizeof *n);
    vp_status rc = shard && n ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
    for (int k = 0; rc == VP_OK && k < r->K; k++) {
        vp_stage_sizes sz;
        rc = vp_stage_sizes_of(&r->o->train.model, vp_vocab_range(k, r->K), &sz, err);
        n[k] = sz.param_bytes / sizeof(float);
        if (rc == VP_OK)
            rc = r->t->vt->recv(r->t, 0, (vp_msg_key){s->S + k, 0, VP_MSG_PARAMS}, n[k], &shard[k],
                                err);
    }
    *digest = VP_DIGEST_INIT;
    for (int k = 0; rc == VP_OK && k < r->K; k++)
        *digest = vp__digest_half(shard[k], n[k], 0, *digest);
    for (int st = 0; rc == VP_OK && st < s->route_len; st++) {
        vp_stage_sizes sz;
        float *got = NULL;
        rc = vp_stage_sizes_of(&r->o->train.model, vp__stage_range(r, st), &sz, err);
        if (rc == VP_OK)
            rc = r->t->vt->recv(r->t, 0, (vp_msg_key){st, 0, VP_MSG_PARAMS},
                                sz.param_bytes / sizeof(float), &got, err);
        if (rc == VP_OK)
            *digest = vp_digest(got, sz.param_bytes, *digest);
        free(got);
    }
    for (int k = 0; rc == VP_OK && k < r->K; k++)
        *digest = vp__digest_half(shard[k], n[k], 1, *digest);
    for (int k = 0; shard && k < r->K; k++)
        free(shard[k]);
    free(shard);
    free(n);
    return rc;
}

static vp_status gather_digest(vp__rank *c, vp_error *err) {
    vp__run *r = c->r;
    const vp_schedule *s = r->s;
    vp_status rc = VP_OK;
    for (int st = 0; rc == VP_OK && c->replica == 0 && st < s->route_len; st++)
        if (vp__holds(c, st))
            rc = send_params(c, st, vp__stage_at(c, st), err);
    if (rc == VP_OK && c->replica == 0 && r->K)
        rc = send_params(c, s->S + c->dev, vp__vocab_at(c), err);
    if (rc == VP_OK && c->rank == 0)
        rc = digest_params(c, &r->digest, err);
    return rc;
}

/* Gathers what the result reports (on rank 0: the times and the digest). */
static vp_status gather(vp__rank *c, vp_error *err) {
    vp_status rc = gather_sums(c, err);
    if (rc == VP_OK)
        rc = gather_times(c, err);
    if (rc == VP_OK && !c->r->emu)
        rc = gather_digest(c, err);
    return rc;
}

/* The rank's buffers: the batch, the op times, the losses of a step ([m], *losses). */
static vp_status rank_alloc(vp__rank *c, double **losses, vp_error *err) {
    const vp_model_config *cfg = &c->r->o->train.model;
    size_t N = (size_t)cfg->microbatch * (size_t)cfg->seq_len;
    size_t n = (size_t)c->r->s->dev[c->dev].n;
    *losses = vp__calloc((size_t)c->r->s->m, sizeof **losses);
    c->batch = (vp_batch){cfg->microbatch, cfg->seq_len, malloc(N), malloc(N)};
    c->t_start = vp__calloc(n, sizeof(double));
    c->t_end = vp__calloc(n, sizeof(double));
    c->t_mem = vp__calloc(n, sizeof(double));
    c->t_copy0 = vp__calloc(n, sizeof(double));
    c->t_copy1 = vp__calloc(n, sizeof(double));
    if (!*losses || !c->batch.tokens || !c->batch.targets || !c->t_start || !c->t_end ||
        !c->t_mem || !c->t_copy0 || !c->t_copy1)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    return c->r->offloaded ? vp__copier_new(c, &c->copier, err) : VP_OK;
}

static void rank_free(vp__rank *c, double *losses) {
    vp__copier_free(c->copier); /* its last copies end first */
    free(losses);
    free(c->batch.tokens);
    free(c->batch.targets);
    free(c->t_start);
    free(c->t_end);
    free(c->t_mem);
    free(c->t_copy0);
    free(c->t_copy1);
}

void *vp__rank_main(void *arg) {
    vp__rank *c = arg;
    vp__run *r = c->r;
    const vp_train_options *o = &r->o->train;
    vp_error err = {0};
    double *losses = NULL;
    vp_status rc = rank_alloc(c, &losses, &err);
    int start = 0;
    if (rc == VP_OK && o->resume_dir)
        rc = resume(c, &start, &err);
    bool reports = c->rank == r->rank_lo; /* the process's result */
    if (reports)
        r->res = vp__result_start(start);
    double tokens = (double)o->model.microbatch * o->model.seq_len * o->m;
    int stop = 0;
    for (int step = start; rc == VP_OK && !stop && step < o->steps; step++) {
        vp_train_progress p = {.step = step + 1, .steps = o->steps, .val_loss = NAN};
        rc = train_step(c, step, losses, &p, &stop, &err);
        if (rc == VP_OK && reports)
            vp__result_add(&r->res, &p, tokens);
    }
    if (rc == VP_OK)
        rc = gather(c, &err);
    if (rc != VP_OK)
        rank_fail(c, rc, &err);
    rank_free(c, losses);
    return NULL;
}
