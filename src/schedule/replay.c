/* Eager replay of the per-device orders (see replay.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "schedule/replay.h"

enum { PASS_F = 0, PASS_B = 1, PASS_W = 2 };

typedef struct {
    const vp_schedule *s;
    double *done; /* [S*m*3] end time of each pass, < 0 while not done */
    double c;
} replay_state;

static double *pass_slot(const replay_state *st, int stage, int mb, int pass) {
    return &st->done[((size_t)stage * (size_t)st->s->m + (size_t)mb) * 3 + (size_t)pass];
}

/* The pass that (stage, mb, pass) waits for, as (stage, pass) of the same microbatch;
 * returns 0 when it has none. */
static int dependency(const vp_schedule *s, int stage, int mb, int pass, int *dstage, int *dpass) {
    int first = s->mb_first[mb], last = vp_schedule_last_stage(s, mb);
    switch (pass) {
    case PASS_F:
        if (stage == first)
            return 0;
        *dstage = stage - 1;
        *dpass = PASS_F;
        return 1;
    case PASS_B:
        *dstage = stage == last ? stage : stage + 1;
        *dpass = stage == last ? PASS_F : PASS_B;
        return 1;
    default:
        *dstage = stage;
        *dpass = PASS_B;
        return 1;
    }
}

/* Earliest start allowed by one pass's dependency, or -1 when it is not done yet. */
static double ready_time(const replay_state *st, int device, int stage, int mb, int pass) {
    int ds, dp;
    if (!dependency(st->s, stage, mb, pass, &ds, &dp))
        return 0.0;
    double t = *pass_slot(st, ds, mb, dp);
    if (t < 0)
        return -1.0;
    return st->s->stage_device[ds] == device ? t : t + st->c;
}

/* Passes an op completes: up to 3 (stage, mb, pass) triples. Returns their count. */
static int op_passes(const vp_op *op, int out[3][3]) {
    int n = 0;
    int bstage = op->stage, bmb = op->mb, bkind = op->kind;
    if (op->kind == VP_OP_F || op->kind == VP_OP_FB) {
        out[n][0] = op->stage, out[n][1] = op->mb, out[n][2] = PASS_F, n++;
        if (op->kind == VP_OP_F)
            return n;
        bstage = op->stage2, bmb = op->mb2, bkind = op->bkind;
    }
    if (bkind == VP_OP_B || bkind == VP_OP_BW)
        out[n][0] = bstage, out[n][1] = bmb, out[n][2] = PASS_B, n++;
    if (bkind == VP_OP_W || bkind == VP_OP_BW)
        out[n][0] = bstage, out[n][1] = bmb, out[n][2] = PASS_W, n++;
    return n;
}

/* Earliest start of op on device d given finished passes, or -1 when blocked. Passes the
 * op itself completes (the W of a BW waits on the B of the same op) are not waited on. */
static double op_ready(const replay_state *st, int d, const vp_op *op) {
    int passes[3][3];
    int n = op_passes(op, passes);
    double t = 0.0;
    for (int i = 0; i < n; i++) {
        int stage = passes[i][0], mb = passes[i][1], pass = passes[i][2];
        if (pass == PASS_W && i > 0 && passes[i - 1][2] == PASS_B)
            continue;
        double r = ready_time(st, d, stage, mb, pass);
        if (r < 0)
            return -1.0;
        if (r > t)
            t = r;
    }
    return t;
}

static vp_status report_deadlock(const replay_state *st, const int *pos, vp_error *err) {
    const vp_schedule *s = st->s;
    char msg[400];
    int len = 0;
    for (int d = 0; d < s->p && len < (int)sizeof msg - 40; d++) {
        if (pos[d] >= s->dev[d].n)
            continue;
        char label[48];
        vp_op_format(&s->dev[d].ops[pos[d]], label, sizeof label);
        len += snprintf(msg + len, sizeof msg - (size_t)len, "%sdevice %d at position %d (%s)",
                        len ? ", " : "", d, pos[d], label);
    }
    return vp__fail(err, VP_EDEADLOCK, "replay deadlocks: every remaining device waits: %s", msg);
}

vp_status vp__replay(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx, double c,
                     double **start, double **end, vp_error *err) {
    replay_state st = {.s = s, .c = c};
    size_t npass = (size_t)s->S * (size_t)s->m * 3;
    st.done = malloc(npass * sizeof *st.done);
    int *pos = vp__calloc((size_t)s->p, sizeof *pos);
    double *free_at = vp__calloc((size_t)s->p, sizeof *free_at);
    vp_status rc = VP_OK;
    if (!st.done || !pos || !free_at) {
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < npass; i++)
        st.done[i] = -1.0;

    long remaining = vp_schedule_op_count(s);
    while (remaining > 0) {
        long before = remaining;
        for (int d = 0; d < s->p; d++) {
            const vp_oplist *l = &s->dev[d];
            while (pos[d] < l->n) {
                const vp_op *op = &l->ops[pos[d]];
                double t = op_ready(&st, d, op);
                if (t < 0)
                    break;
                if (t < free_at[d])
                    t = free_at[d];
                double e = t + (time_fn ? time_fn(ctx, op) : 1.0);
                int passes[3][3];
                int n = op_passes(op, passes);
                for (int i = 0; i < n; i++)
                    *pass_slot(&st, passes[i][0], passes[i][1], passes[i][2]) = e;
                if (start)
                    start[d][pos[d]] = t;
                if (end)
                    end[d][pos[d]] = e;
                free_at[d] = e;
                pos[d]++;
                remaining--;
            }
        }
        if (remaining == before) {
            rc = report_deadlock(&st, pos, err);
            break;
        }
    }
out:
    free(st.done);
    free(pos);
    free(free_at);
    return rc;
}
