/* Eager replay of the per-device orders (see replay.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "schedule/pass.h"
#include "schedule/replay.h"

typedef struct {
    const vp_schedule *s;
    double *done; /* [S*m*VP__PASS_KINDS] end time of each pass, < 0 while not done */
    double c;
} replay_state;

/* Earliest start of op on device d given finished passes, or -1 when blocked. A chained
 * pass (the W of a BW) waits on the op's own previous pass, so only the others wait. */
static double op_ready(const replay_state *st, int d, const vp_op *op) {
    vp__pass passes[VP__OP_MAX_PASSES], deps[VP__PASS_MAX_DEPS];
    int n = vp__op_passes(op, passes);
    double t = 0.0;
    for (int i = 0; i < n; i++) {
        if (passes[i].chained)
            continue;
        int nd = vp__pass_deps(st->s, passes[i], deps);
        for (int k = 0; k < nd; k++) {
            double r = st->done[vp__pass_index(st->s, deps[k])];
            if (r < 0)
                return -1.0;
            if (st->s->stage_device[deps[k].stage] != d)
                r += st->c;
            if (r > t)
                t = r;
        }
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
    size_t npass = (size_t)s->S * (size_t)s->m * VP__PASS_KINDS;
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
                vp__pass passes[VP__OP_MAX_PASSES];
                int n = vp__op_passes(op, passes);
                for (int i = 0; i < n; i++)
                    st.done[vp__pass_index(s, passes[i])] = e;
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
