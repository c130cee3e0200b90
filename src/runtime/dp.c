/* Data parallelism: where each stage's gradients are reduced across the replicas, the
 * reduction itself (a reduce-scatter in replica order, then an all-gather of the sums
 * unless ZeRO-1 shards the optimiser), and ZeRO-1's all-gather of the parameters. Every
 * sum adds the replicas' copies in replica order, on every transport, with point-to-point
 * messages only: the bits never depend on who sends first. See vpipe/runtime.h. */
#include <stdlib.h>
#include <string.h>

#include "runtime/exec.h"

/* The stage whose weight gradient op k of a device's list computes, or -1. */
static int w_stage(const vp_op *op) {
    int kind = op->kind, stage = op->stage;
    if (kind == VP_OP_FB)
        kind = op->bkind, stage = op->stage2;
    return kind == VP_OP_W || kind == VP_OP_BW ? stage : -1;
}

vp_status vp__dp_plan(vp__run *r, vp_error *err) {
    const vp_schedule *s = r->s;
    r->reduce_at = vp__calloc((size_t)s->p, sizeof *r->reduce_at);
    if (!r->reduce_at)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int d = 0; d < s->p; d++) {
        const vp_oplist *ops = &s->dev[d];
        r->reduce_at[d] = vp__calloc((size_t)ops->n, sizeof **r->reduce_at);
        if (!r->reduce_at[d])
            return vp__fail(err, VP_ENOMEM, "out of memory");
        for (int k = 0; k < ops->n; k++)
            r->reduce_at[d][k] = -1;
        for (int st = 0; st < s->S; st++) { /* the last op computing st's weight gradients */
            int last = -1;
            for (int k = 0; k < ops->n; k++)
                if (w_stage(&ops->ops[k]) == st)
                    last = k;
            if (last >= 0)
                r->reduce_at[d][last] = st;
        }
    }
    return VP_OK;
}

void vp__dp_plan_free(vp__run *r) {
    for (int d = 0; r->reduce_at && d < r->s->p; d++)
        free(r->reduce_at[d]);
    free(r->reduce_at);
}

/* Shard k of stage st. */
static vp_shard shard_of(const vp__run *r, int st, int k) {
    vp_shard sh = {0};
    vp_stage_range range = vp__stage_range(r, st);
    vp_shard_of(&r->o->train.model, range, k, r->D, &sh, NULL); /* checked by the stage */
    return sh;
}

vp_shard vp__dp_shard(const vp__rank *c, int st) {
    return shard_of(c->r, st, c->replica);
}

/* Sends a copy of a[sh] of stage st to the same device of replica k. */
static vp_status send_shard(vp__rank *c, int st, int dir, int k, const float *a, vp_shard sh,
                            vp_error *err) {
    size_t n = sh.hi - sh.lo;
    float *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    memcpy(copy, a + sh.lo, n * sizeof *copy);
    vp__run *r = c->r;
    int to = k * r->s->p + c->dev;
    return r->t->vt->send(r->t, c->rank, to, (vp_msg_key){st, c->replica, dir}, copy, n, err);
}

/* Every other replica's shard of a (stage st, message dir) into its place in a. */
static vp_status take_shards(vp__rank *c, int st, int dir, float *a, vp_error *err) {
    vp_status rc = VP_OK;
    for (int k = 0; rc == VP_OK && k < c->r->D; k++) {
        if (k == c->replica)
            continue;
        vp_shard sh = shard_of(c->r, st, k);
        float *got = NULL;
        rc =
            c->r->t->vt->recv(c->r->t, c->rank, (vp_msg_key){st, k, dir}, sh.hi - sh.lo, &got, err);
        if (rc == VP_OK)
            memcpy(a + sh.lo, got, (sh.hi - sh.lo) * sizeof *got);
        free(got);
    }
    return rc;
}

/* Sends the rank's shard of a (stage st) to every other replica (message dir). */
static vp_status give_shard(vp__rank *c, int st, int dir, const float *a, vp_error *err) {
    vp_shard mine = vp__dp_shard(c, st);
    vp_status rc = VP_OK;
    for (int k = 0; rc == VP_OK && k < c->r->D; k++)
        if (k != c->replica)
            rc = send_shard(c, st, dir, k, a, mine, err);
    return rc;
}

/* The rank's shard of g := the replicas' copies of it added in replica order. */
static vp_status sum_shard(vp__rank *c, int st, float *g, vp_error *err) {
    vp_shard mine = vp__dp_shard(c, st);
    size_t n = mine.hi - mine.lo;
    float *acc = malloc((n ? n : 1) * sizeof *acc);
    if (!acc)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = VP_OK;
    for (int k = 0; rc == VP_OK && k < c->r->D; k++) {
        float *got = NULL;
        if (k != c->replica)
            rc = c->r->t->vt->recv(c->r->t, c->rank, (vp_msg_key){st, k, VP_MSG_REDUCE}, n, &got,
                                   err);
        const float *part = k == c->replica ? g + mine.lo : got;
        for (size_t i = 0; rc == VP_OK && i < n; i++)
            acc[i] = k == 0 ? part[i] : acc[i] + part[i];
        free(got);
    }
    if (rc == VP_OK)
        memcpy(g + mine.lo, acc, n * sizeof *acc);
    free(acc);
    return rc;
}

vp_status vp__dp_reduce(vp__rank *c, int st, vp_error *err) {
    vp__run *r = c->r;
    if (r->D == 1)
        return VP_OK;
    size_t n;
    float *g = vp_stage_grads(vp__stage_at(c, st), &n);
    vp_status rc = VP_OK;
    for (int k = 0; rc == VP_OK && k < r->D; k++) /* each owner's shard to its owner */
        if (k != c->replica)
            rc = send_shard(c, st, VP_MSG_REDUCE, k, g, shard_of(r, st, k), err);
    if (rc == VP_OK)
        rc = sum_shard(c, st, g, err);
    if (rc == VP_OK && !r->o->zero)
        rc = give_shard(c, st, VP_MSG_GATHER, g, err);
    if (rc == VP_OK && !r->o->zero)
        rc = take_shards(c, st, VP_MSG_GATHER, g, err);
    return rc;
}

vp_status vp__dp_gather_params(vp__rank *c, vp_error *err) {
    vp__run *r = c->r;
    if (r->D == 1 || !r->o->zero)
        return VP_OK;
    vp_status rc = VP_OK;
    for (int st = 0; rc == VP_OK && st < r->s->S; st++)
        if (vp__holds(c, st)) {
            size_t n;
            rc = give_shard(c, st, VP_MSG_GATHER, vp_stage_params(vp__stage_at(c, st), &n), err);
        }
    for (int st = 0; rc == VP_OK && st < r->s->S; st++)
        if (vp__holds(c, st)) {
            size_t n;
            rc = take_shards(c, st, VP_MSG_GATHER, vp_stage_params(vp__stage_at(c, st), &n), err);
        }
    return rc;
}
