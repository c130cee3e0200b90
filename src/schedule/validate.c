/* The validator: the gate every schedule passes before it is simulated, drawn, exported
 * or executed. Reports the first problem with device, position and op. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "schedule/placement.h"
#include "schedule/replay.h"
#include "vpipe/schedule.h"

/* Seen passes of one (stage, microbatch), or of one (shard, microbatch) of the vocabulary
 * (ef, eb, s, t). */
typedef struct {
    uint8_t f, b, w, bw, r, o, l;
    uint8_t ef, eb, s, t;
} pass_count;

/* A placement other than custom is a promise about the stage map (what exporters and
 * the runtime rely on): its S, its routes and every stage's device. */
static vp_status check_placement(const vp_schedule *s, vp_error *err) {
    vp_placement_kind pl = s->placement;
    const char *name = vp_placement_name(pl);
    if ((unsigned)pl > VP_PLACE_CUSTOM)
        return vp__fail(err, VP_EVALIDATION, "unknown placement %d", (int)pl);
    if (pl == VP_PLACE_CUSTOM)
        return VP_OK;
    if (vp__placement_stages(pl, s->p, s->S) != s->S)
        return vp__fail(err, VP_EVALIDATION, "placement \"%s\" needs S %s (S=%d, p=%d)", name,
                        vp__placement_rule(pl), s->S, s->p);
    int route = pl == VP_PLACE_BIDIR ? s->p : s->S;
    if (s->route_len != route)
        return vp__fail(err, VP_EVALIDATION,
                        "placement \"%s\" has routes of %d stages, the schedule says %d", name,
                        route, s->route_len);
    for (int st = 0; st < s->S; st++) {
        int d = vp__placement_device(pl, s->p, st);
        if (s->stage_device[st] != d)
            return vp__fail(err, VP_EVALIDATION,
                            "placement \"%s\" puts stage %d on device %d, the stage map on "
                            "device %d (declare \"custom\" for a map of its own)",
                            name, st, d, s->stage_device[st]);
    }
    return VP_OK;
}

static vp_status check_shape(const vp_schedule *s, vp_error *err) {
    if (s->p < 1 || s->S < 1 || s->m < 1)
        return vp__fail(err, VP_EVALIDATION, "schedule needs p, S, m >= 1 (p=%d, S=%d, m=%d)", s->p,
                        s->S, s->m);
    if (s->route_len < 1 || s->route_len > s->S)
        return vp__fail(err, VP_EVALIDATION, "route length %d outside 1..S=%d", s->route_len, s->S);
    for (int i = 0; i < s->S; i++)
        if (s->stage_device[i] < 0 || s->stage_device[i] >= s->p)
            return vp__fail(err, VP_EVALIDATION, "stage %d is placed on device %d, outside 0..%d",
                            i, s->stage_device[i], s->p - 1);
    for (int j = 0; j < s->m; j++)
        if (s->mb_first[j] < 0 || s->mb_first[j] + s->route_len > s->S)
            return vp__fail(err, VP_EVALIDATION,
                            "microbatch %d's route starts at stage %d and does not fit in %d "
                            "stages",
                            j, s->mb_first[j], s->S);
    return check_placement(s, err);
}

/* An op's place in the schedule, for messages. */
typedef struct {
    int d, k;
    const vp_op *op;
} op_at;

/* VP_EVALIDATION "device D, position K (LABEL): <message>". */
static vp_status fail_op(vp_error *err, op_at at, const char *fmt, ...) VP_PRINTF(3, 4);
static vp_status fail_op(vp_error *err, op_at at, const char *fmt, ...) {
    char label[48], what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    vp_op_format(at.op, label, sizeof label);
    return vp__fail(err, VP_EVALIDATION, "device %d, position %d (%s): %s", at.d, at.k, label,
                    what);
}

/* Checks the placement and route of one pass of the op at `at`. */
static vp_status check_place(const vp_schedule *s, op_at at, int stage, int mb, vp_error *err) {
    if (stage < 0 || stage >= s->S || mb < 0 || mb >= s->m)
        return fail_op(err, at, "stage or microbatch out of range (S=%d, m=%d)", s->S, s->m);
    if (stage < s->mb_first[mb] || stage > vp_schedule_last_stage(s, mb))
        return fail_op(err, at, "stage %d is not on microbatch %d's route (stages %d..%d)", stage,
                       mb, s->mb_first[mb], vp_schedule_last_stage(s, mb));
    if (s->stage_device[stage] != at.d)
        return fail_op(err, at, "stage %d belongs on device %d", stage, s->stage_device[stage]);
    return VP_OK;
}

/* Checks an R of the op at `at` against what its (stage, microbatch) has seen. */
static vp_status check_r(const vp_schedule *s, pass_count *c, op_at at, vp_error *err) {
    if (s->recompute == VP_RECOMPUTE_NONE)
        return fail_op(err, at, "R in a schedule that does not recompute");
    if (c->r)
        return fail_op(err, at, "duplicate recomputation");
    if (!c->f)
        return fail_op(err, at, "R comes before its forward");
    if (c->b || c->bw)
        return fail_op(err, at, "R comes after its backward");
    if (c->o && !c->l)
        return fail_op(err, at, "R comes before its reload (what it reads is on the host)");
    c->r = 1;
    return VP_OK;
}

/* Checks an O or L of the op at `at` against what its (stage, microbatch) has seen. */
static vp_status check_copy(const vp_schedule *s, pass_count *c, op_at at, int kind,
                            vp_error *err) {
    const char *what = kind == VP_OP_O ? "offload" : "reload";
    if (!(s->offload[at.op->stage] > 0))
        return fail_op(err, at, "%s of stage %d, which offloads nothing (its share is 0)", what,
                       at.op->stage);
    if (kind == VP_OP_O ? c->o : c->l)
        return fail_op(err, at, "duplicate %s", what);
    if (kind == VP_OP_O && !c->f)
        return fail_op(err, at, "offload comes before its forward");
    if (kind == VP_OP_L && !c->o)
        return fail_op(err, at, "reload comes before its offload");
    if (c->b || c->bw || c->w)
        return fail_op(err, at,
                       kind == VP_OP_O ? "offload of an activation its backward already freed"
                                       : "reload comes after its backward");
    if (c->r)
        return fail_op(err, at, "%s comes after its recomputation", what);
    if (kind == VP_OP_O)
        c->o = 1;
    else
        c->l = 1;
    return VP_OK;
}

/* Checks one pass (kind F, B, W, BW, R, O or L) of the op at `at` and counts it. */
static vp_status check_pass(const vp_schedule *s, pass_count *seen, op_at at, int kind, int stage,
                            int mb, vp_error *err) {
    vp_status rc = check_place(s, at, stage, mb, err);
    if (rc != VP_OK)
        return rc;
    pass_count *c = &seen[(size_t)stage * (size_t)s->m + (size_t)mb];
    switch (kind) {
    case VP_OP_F:
        if (c->f)
            return fail_op(err, at, "duplicate forward");
        c->f = 1;
        return VP_OK;
    case VP_OP_R:
        return check_r(s, c, at, err);
    case VP_OP_O:
    case VP_OP_L:
        return check_copy(s, c, at, kind, err);
    case VP_OP_B:
    case VP_OP_BW:
        if (c->b || c->bw)
            return fail_op(err, at, "duplicate backward");
        if (!c->f)
            return fail_op(err, at, "backward comes before its forward");
        if (s->recompute != VP_RECOMPUTE_NONE && !c->r)
            return fail_op(err, at, "backward comes before its R (the schedule recomputes)");
        if (c->o && !c->l)
            return fail_op(err, at,
                           "backward comes before its reload (the activation is on the "
                           "host)");
        if (kind == VP_OP_BW && c->w)
            return fail_op(err, at, "full backward after a separate W");
        if (kind == VP_OP_B)
            c->b = 1;
        else
            c->bw = 1;
        return VP_OK;
    case VP_OP_W:
        if (c->w || c->bw)
            return fail_op(err, at, "duplicate weight backward");
        if (!c->b)
            return fail_op(err, at, "W comes before its B on this device");
        c->w = 1;
        return VP_OK;
    }
    return vp__fail(err, VP_EVALIDATION, "device %d, position %d: unknown op kind %d", at.d, at.k,
                    kind);
}

/* Checks a vocabulary pass (EF, EB, S or T) of the op at `at` and counts it in vocab[]
 * (per shard and microbatch). */
static vp_status check_vocab(const vp_schedule *s, pass_count *vocab, op_at at, vp_error *err) {
    const vp_op *op = at.op;
    if (!s->vocab_parallel)
        return fail_op(err, at, "a vocabulary pass in a schedule without vocabulary parallelism");
    if (op->stage < 0 || op->stage >= s->p || op->mb < 0 || op->mb >= s->m)
        return fail_op(err, at, "shard or microbatch out of range (p=%d shards, m=%d)", s->p, s->m);
    if (op->stage != at.d)
        return fail_op(err, at, "shard %d belongs on device %d", op->stage, op->stage);
    pass_count *c = &vocab[(size_t)op->stage * (size_t)s->m + (size_t)op->mb];
    uint8_t *slot = op->kind == VP_OP_EF   ? &c->ef
                    : op->kind == VP_OP_EB ? &c->eb
                    : op->kind == VP_OP_S  ? &c->s
                                           : &c->t;
    if (*slot)
        return fail_op(err, at, "duplicate %s", vp_op_kind_name((vp_op_kind)op->kind));
    if (op->kind == VP_OP_T && !c->s)
        return fail_op(err, at, "T comes before its S on this device");
    *slot = 1;
    return VP_OK;
}

static vp_status check_ops(const vp_schedule *s, pass_count *seen, pass_count *vocab,
                           vp_error *err) {
    for (int d = 0; d < s->p; d++) {
        for (int k = 0; k < s->dev[d].n; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            op_at at = {d, k, op};
            vp_status rc;
            if (op->kind == VP_OP_FB) {
                if (op->bkind != VP_OP_B && op->bkind != VP_OP_BW)
                    return fail_op(err, at, "the backward half of F&B must be B or BW");
                rc = check_pass(s, seen, at, VP_OP_F, op->stage, op->mb, err);
                if (rc == VP_OK)
                    rc = check_pass(s, seen, at, op->bkind, op->stage2, op->mb2, err);
            } else if (vp_op_kind_is_vocab(op->kind)) {
                rc = check_vocab(s, vocab, at, err);
            } else if (op->kind < VP_OP_KIND_COUNT) {
                rc = check_pass(s, seen, at, op->kind, op->stage, op->mb, err);
            } else {
                rc = vp__fail(err, VP_EVALIDATION, "device %d, position %d: unknown op kind %d", d,
                              k, op->kind);
            }
            if (rc != VP_OK)
                return rc;
        }
    }
    return VP_OK;
}

/* Every (shard, microbatch) of a vocabulary-parallel schedule has its four passes. */
static vp_status check_vocab_complete(const vp_schedule *s, const pass_count *vocab,
                                      vp_error *err) {
    for (int j = 0; s->vocab_parallel && j < s->m; j++)
        for (int d = 0; d < s->p; d++) {
            const pass_count *c = &vocab[(size_t)d * (size_t)s->m + (size_t)j];
            const char *missing = !c->ef ? "EF" : !c->s ? "S" : !c->t ? "T" : !c->eb ? "EB" : NULL;
            if (missing)
                return vp__fail(err, VP_EVALIDATION,
                                "device %d: missing %s of vocabulary shard %d, microbatch %d "
                                "(vocabulary parallelism needs EF, S, T and EB of every shard "
                                "and microbatch)",
                                d, missing, d, j);
        }
    return VP_OK;
}

static vp_status check_complete(const vp_schedule *s, const pass_count *seen, vp_error *err) {
    for (int j = 0; j < s->m; j++) {
        for (int st = s->mb_first[j]; st <= vp_schedule_last_stage(s, j); st++) {
            const pass_count *c = &seen[(size_t)st * (size_t)s->m + (size_t)j];
            const char *missing = NULL;
            if (!c->f)
                missing = "F";
            else if (s->recompute != VP_RECOMPUTE_NONE && !c->r)
                missing = "R (the schedule recomputes)";
            else if (!c->b && !c->bw)
                missing = "backward (B or BW)";
            else if (c->b && !c->w)
                missing = "W";
            else if (c->o && !c->l)
                missing = "L (its offload is never reloaded)";
            if (missing)
                return vp__fail(err, VP_EVALIDATION,
                                "device %d: missing %s of stage %d, microbatch %d (after its "
                                "last op, position %d)",
                                s->stage_device[st], missing, st, j, s->dev[s->stage_device[st]].n);
        }
    }
    return VP_OK;
}

/* Checks the offload shares and the host limit are in range. */
static vp_status check_shares(const vp_schedule *s, vp_error *err) {
    for (int i = 0; i < s->S; i++)
        if (!(s->offload[i] >= 0 && s->offload[i] <= 1))
            return vp__fail(err, VP_EVALIDATION, "stage %d's offload share %g is outside [0, 1]", i,
                            s->offload[i]);
    if (!(s->host_limit >= 0) || isinf(s->host_limit))
        return vp__fail(err, VP_EVALIDATION, "host limit %g is not a finite number >= 0",
                        s->host_limit);
    return VP_OK;
}

/* With a host limit, checks every device's host memory against it. */
static vp_status check_host(const vp_schedule *s, vp_error *err) {
    if (s->host_limit == 0 || !vp_schedule_offloads(s))
        return VP_OK;
    double *peak = vp__calloc((size_t)s->p, sizeof *peak);
    vp_status rc = peak ? vp_schedule_host_peak(s, peak, err) : VP_ENOMEM;
    for (int d = 0; rc == VP_OK && d < s->p; d++)
        if (peak[d] > s->host_limit * (1 + 1e-12))
            rc = vp__fail(err, VP_EVALIDATION,
                          "device %d's offloads hold %g units on the host, over the limit %g", d,
                          peak[d], s->host_limit);
    free(peak);
    return rc == VP_ENOMEM ? vp__fail(err, VP_ENOMEM, "out of memory") : rc;
}

vp_status vp_schedule_validate(const vp_schedule *s, vp_error *err) {
    vp_status rc = check_shape(s, err);
    if (rc != VP_OK)
        return rc;
    if ((unsigned)s->recompute > VP_RECOMPUTE_FULL)
        return vp__fail(err, VP_EVALIDATION, "unknown recomputation %d", (int)s->recompute);
    rc = check_shares(s, err);
    if (rc != VP_OK)
        return rc;
    if ((unsigned)s->vocab_parallel > 1)
        return vp__fail(err, VP_EVALIDATION, "vocabulary parallelism is 0 or 1, not %d",
                        s->vocab_parallel);
    size_t shards = s->vocab_parallel ? (size_t)s->p : 0;
    pass_count *seen = vp__calloc((size_t)s->S * (size_t)s->m, sizeof *seen);
    pass_count *vocab = vp__calloc(shards * (size_t)s->m + 1, sizeof *vocab);
    if (!seen || !vocab)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        rc = check_ops(s, seen, vocab, err);
    if (rc == VP_OK)
        rc = check_complete(s, seen, err);
    if (rc == VP_OK)
        rc = check_vocab_complete(s, vocab, err);
    free(seen);
    free(vocab);
    if (rc == VP_OK)
        rc = check_host(s, err);
    if (rc == VP_OK)
        rc = vp__replay(s, NULL, NULL, 0.0, NULL, NULL, err);
    return rc;
}
