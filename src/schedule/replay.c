/* Event-driven eager replay of the per-device orders (see replay.h).
 *
 * A device runs its ops in order for as long as the next one's dependencies are done;
 * when one is not, the device joins the waiters of that pass and leaves the run. Finishing
 * an op finishes its passes and hands their waiters back to the stack of devices to run.
 * Every op is started once and every device waits on a pass at most once per dependency
 * of its ops, so the replay costs O(ops + dependencies), whatever the order in which
 * devices run. That order changes nothing: an op's start is the max of its device's
 * free time and its dependencies' ends (+ c across devices), computed from the same
 * values in the same order whenever it runs, so the times are those of the sweep the
 * replay replaced (a wave over devices, repeated until nothing moves). A deadlock leaves
 * every unfinished device waiting; the fixpoint is the sweep's too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "schedule/pass.h"
#include "schedule/replay.h"

/* One pass: its end time (< 0 while not done) and the first device waiting for it. */
typedef struct {
    double end;
    int waiter; /* -1: none */
} pass_state;

typedef struct {
    const vp_schedule *s;
    double c;
    vp__op_time_fn time_fn;
    const void *ctx;
    const vp__replay_out *out;
    const uint8_t *offloaded; /* [S*m] flags of the offloaded pairs, or NULL */
    double *copy_free;        /* [p] when each copy engine is free */
    double *compute_free;     /* [p] end of each device's last op but O and L */
    double *ostart;           /* [S*m] start of each offload's copy (with out->copy_start) */
    pass_state *pass;         /* [vp__pass_rows * m * vp__pass_kinds] */
    int *next_waiter;         /* [p] next device waiting for the same pass, or -1 */
    vp__pass *waits;          /* [p] the pass each device last waited for */
    int *pos;                 /* [p] position of each device's next op */
    double *free_at;          /* [p] end of each device's last op */
    int *stack, top;          /* [p] devices to run; a device is here or in one waiter list */
} replay_state;

/* When dependency dep (not a collective) lets an op of device d start, or -1 when it is
 * not done. */
static double dep_ready(const replay_state *st, int d, vp__pass dep) {
    double r = st->pass[vp__pass_index(st->s, dep)].end;
    if (r >= 0 && vp__pass_device(st->s, dep.stage, dep.kind) != d)
        r += st->c;
    return r;
}

/* Earliest start allowed by the dependencies of passes[0..n), the passes of an op on
 * device d (before the device is free), or -1 when one is not done; *blocked then
 * receives that pass (of one shard, for a collective). A chained pass (the W of a BW)
 * waits on the op's own previous pass, so only the others wait. What the copies (O and L)
 * allow goes to *copy_at, the rest is returned. */
static double ready_at(const replay_state *st, int d, const vp__pass *passes, int n,
                       vp__pass *blocked, double *copy_at) {
    vp__pass deps[VP__PASS_MAX_DEPS];
    double t = 0.0;
    for (int i = 0; i < n; i++) {
        int nd = passes[i].chained ? 0 : vp__pass_deps(st->s, st->offloaded, passes[i], deps);
        for (int k = 0; k < nd; k++) {
            int every = deps[k].stage == VP__EVERY_SHARD;
            for (int e = 0; e < (every ? st->s->p : 1); e++) {
                vp__pass dep = deps[k];
                dep.stage = every ? e : dep.stage;
                double r = dep_ready(st, d, dep);
                if (r < 0) {
                    *blocked = dep;
                    return -1.0;
                }
                double *at = dep.kind == VP__PASS_L ? copy_at : &t;
                if (r > *at)
                    *at = r;
            }
        }
    }
    return t;
}

/* Marks passes[0..n) done at time e and moves their waiters to the stack. */
static void finish(replay_state *st, const vp__pass *passes, int n, double e) {
    for (int i = 0; i < n; i++) {
        pass_state *ps = &st->pass[vp__pass_index(st->s, passes[i])];
        ps->end = e;
        for (int w = ps->waiter; w >= 0; w = st->next_waiter[w])
            st->stack[st->top++] = w;
        ps->waiter = -1;
    }
}

/* Duration of op (1 without a time function); an O or L op's is its copy's. */
static double duration(const replay_state *st, const vp_op *op) {
    return st->time_fn ? st->time_fn(st->ctx, op) : 1.0;
}

/* Runs the copy op issues at time `at`, if any, on device d's copy engine (k: the op's
 * position). */
static void issue_copy(replay_state *st, int d, int k, const vp_op *op, double at) {
    vp__pass copy;
    if (!vp__op_copy_issue(st->s, st->offloaded, op, &copy))
        return;
    vp_op copy_op = {
        .kind = (uint8_t)vp__pass_op_kind(copy.kind), .stage = copy.stage, .mb = copy.mb};
    double cs = at > st->copy_free[d] ? at : st->copy_free[d];
    double ce = cs + duration(st, &copy_op);
    st->copy_free[d] = ce;
    const vp__replay_out *out = st->out;
    if (out && out->copy_busy)
        out->copy_busy[d] += ce - cs;
    if (copy.kind == VP__PASS_O && st->ostart)
        st->ostart[(size_t)copy.stage * (size_t)st->s->m + (size_t)copy.mb] = cs;
    if (copy.kind == VP__PASS_L && out && out->copy_start) {
        out->copy_start[d][k] = cs;
        out->copy_end[d][k] = ce;
    }
    finish(st, &copy, 1, ce);
}

/* Runs device d until its next op waits (it joins that pass's waiters) or it is done;
 * returns the number of ops run. */
static long run_device(replay_state *st, int d) {
    const vp_oplist *l = &st->s->dev[d];
    const vp__replay_out *out = st->out;
    int k = st->pos[d];
    double free_at = st->free_at[d], compute_free = st->compute_free[d];
    for (; k < l->n; k++) {
        const vp_op *op = &l->ops[k];
        vp__pass passes[VP__OP_MAX_PASSES], blocked, copy;
        int n = vp__op_passes(op, passes);
        double copy_at = 0.0, t = ready_at(st, d, passes, n, &blocked, &copy_at);
        int waits_copy = vp__op_copy_wait(op, &copy);
        if (t >= 0 && waits_copy) {
            copy_at = st->pass[vp__pass_index(st->s, copy)].end;
            if (copy_at < 0)
                t = -1.0, blocked = copy;
        }
        if (t < 0) {
            pass_state *ps = &st->pass[vp__pass_index(st->s, blocked)];
            st->waits[d] = blocked;
            st->next_waiter[d] = ps->waiter;
            ps->waiter = d;
            break;
        }
        int copy_op = op->kind == VP_OP_O || op->kind == VP_OP_L;
        double unstalled = t > compute_free ? t : compute_free; /* without copies */
        if (t < free_at)
            t = free_at;
        if (copy_at > t)
            t = copy_at;
        if (!copy_op && t > unstalled && out && out->stall)
            out->stall[d] += t - unstalled;
        double e = copy_op ? t : t + duration(st, op);
        if (!copy_op)
            compute_free = e;
        if (out && out->start)
            out->start[d][k] = t;
        if (out && out->end)
            out->end[d][k] = e;
        if (waits_copy && out && out->copy_start) {
            out->copy_start[d][k] =
                st->ostart[(size_t)op->stage * (size_t)st->s->m + (size_t)op->mb];
            out->copy_end[d][k] = copy_at;
        }
        free_at = e;
        finish(st, passes, n, e);
        issue_copy(st, d, k, op, e);
    }
    long ran = k - st->pos[d];
    st->pos[d] = k;
    st->free_at[d] = free_at;
    st->compute_free[d] = compute_free;
    return ran;
}

/* VP_EDEADLOCK naming, for each unfinished device (as many as fit), its next op and the
 * pass it waits for. */
static vp_status report_deadlock(const replay_state *st, vp_error *err) {
    const vp_schedule *s = st->s;
    char msg[400];
    int len = 0, more = 0;
    for (int d = 0; d < s->p; d++) {
        if (st->pos[d] >= s->dev[d].n)
            continue;
        if (len >= (int)sizeof msg - 80) {
            more++;
            continue;
        }
        const vp_op *op = &s->dev[d].ops[st->pos[d]];
        vp__pass dep = st->waits[d];
        vp_op dep_op = {.kind = vp__pass_op_kind(dep.kind), .stage = dep.stage, .mb = dep.mb};
        char label[48], wait[48];
        vp_op_format(op, label, sizeof label);
        vp_op_format(&dep_op, wait, sizeof wait);
        len +=
            snprintf(msg + len, sizeof msg - (size_t)len,
                     "%sdevice %d at position %d (%s) waits for %s on device %d", len ? ", " : "",
                     d, st->pos[d], label, wait, vp__pass_device(s, dep.stage, dep.kind));
    }
    if (more)
        return vp__fail(err, VP_EDEADLOCK,
                        "replay deadlocks: every remaining device waits: %s, and %d more devices",
                        msg, more);
    return vp__fail(err, VP_EDEADLOCK, "replay deadlocks: every remaining device waits: %s", msg);
}

/* Whether (stage, mb) lies on mb's route. */
static int on_route(const vp_schedule *s, int32_t stage, int32_t mb) {
    return (uint32_t)mb < (uint32_t)s->m &&
           (uint32_t)(stage - s->mb_first[mb]) < (uint32_t)s->route_len;
}

/* Whether every op's passes lie on their routes, the vocabulary's on a shard of a
 * vocabulary-parallel schedule (what the replay trusts: then every pass it looks up,
 * dependencies included, is in range). */
static int ops_on_routes(const vp_schedule *s) {
    int ok = 1;
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            if (vp_op_kind_is_vocab(op->kind))
                ok &= s->vocab_parallel && (uint32_t)op->stage < (uint32_t)s->p &&
                      (uint32_t)op->mb < (uint32_t)s->m;
            else
                ok &= on_route(s, op->stage, op->mb) &&
                      (op->kind != VP_OP_FB || on_route(s, op->stage2, op->mb2));
        }
    return ok;
}

vp_status vp__replay(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx, double c,
                     double **start, double **end, vp_error *err) {
    vp__replay_out out = {.start = start, .end = end};
    return vp__replay_with(s, time_fn, ctx, c, &out, err);
}

vp_status vp__replay_with(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx, double c,
                          const vp__replay_out *out, vp_error *err) {
    VP_ASSERT(ops_on_routes(s)); /* the caller validated s */
    size_t npass = vp__pass_rows(s) * (size_t)s->m * (size_t)vp__pass_kinds(s), p = (size_t)s->p;
    replay_state st = {.s = s, .c = c, .time_fn = time_fn, .ctx = ctx, .out = out};
    uint8_t *offloaded = NULL;
    vp_status rc = vp__offloaded(s, &offloaded, err);
    if (rc != VP_OK)
        return rc;
    st.offloaded = offloaded;
    if (offloaded && out->copy_start)
        st.ostart = vp__calloc((size_t)s->S * (size_t)s->m, sizeof *st.ostart);
    st.pass = vp__malloc(npass, sizeof *st.pass); /* filled below */
    st.next_waiter = vp__calloc(p, sizeof *st.next_waiter);
    st.waits = vp__calloc(p, sizeof *st.waits);
    st.pos = vp__calloc(p, sizeof *st.pos);
    st.free_at = vp__calloc(p, sizeof *st.free_at);
    st.copy_free = vp__calloc(p, sizeof *st.copy_free);
    st.compute_free = vp__calloc(p, sizeof *st.compute_free);
    st.stack = vp__calloc(p, sizeof *st.stack);
    if (!st.pass || !st.next_waiter || !st.waits || !st.pos || !st.free_at || !st.copy_free ||
        !st.compute_free || !st.stack || (offloaded && out->copy_start && !st.ostart)) {
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < npass; i++)
        st.pass[i] = (pass_state){.end = -1.0, .waiter = -1};
    for (int d = s->p - 1; d >= 0; d--) /* device 0 runs first */
        st.stack[st.top++] = d;
    long remaining = vp_schedule_op_count(s);
    while (st.top > 0) {
        int d = st.stack[--st.top];
        remaining -= run_device(&st, d);
    }
    if (remaining > 0)
        rc = report_deadlock(&st, err);
out:
    free(offloaded);
    free(st.ostart);
    free(st.pass);
    free(st.next_waiter);
    free(st.waits);
    free(st.pos);
    free(st.free_at);
    free(st.copy_free);
    free(st.compute_free);
    free(st.stack);
    return rc;
}
