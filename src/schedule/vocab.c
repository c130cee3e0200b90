/* Vocabulary parallelism's passes placed into a schedule by time (replay.h).
 *
 * Every op gets a key: its start in a replay of s in which each op lasts its time plus a
 * tiny epsilon (so that an op that depends on another, or follows it on its device, starts
 * strictly later), and the vocabulary passes keys between those of the ops they must
 * follow and precede. Each device then runs its ops in key order; since every dependency
 * goes from a smaller key to a larger one, the result cannot deadlock, and the ops of s
 * keep their order, so its memory per device is s's plus what the vocabulary passes hold.
 */
#include <stdlib.h>

#include "schedule/pass.h"
#include "schedule/replay.h"

/* A vocabulary pass to place: its time, a class ordering it among passes of the same time
 * (0 and 1 before the ops of s that start then, which have class 2), microbatch, kind. */
typedef struct vkey {
    double t;
    int cls, mb, kind;
} vkey;

static int vkey_cmp(const void *a, const void *b) {
    const vkey *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls - y->cls;
    if (x->mb != y->mb)
        return x->mb - y->mb;
    return x->kind - y->kind;
}

/* The replay's op time plus epsilon. */
typedef struct eps_time {
    vp__op_time_fn fn;
    const void *ctx;
    double eps;
} eps_time;

static double with_eps(const void *ctx, const vp_op *op) {
    const eps_time *e = ctx;
    return (e->fn ? e->fn(e->ctx, op) : 1.0) + e->eps;
}

/* Times of one microbatch's vocabulary passes: EF before the op before F of its first
 * stage, S at the end of F of its last stage, T halfway to the start of that stage's
 * backward, EB at the end of the first stage's backward. */
typedef struct mb_times {
    double ef, s, b_last, eb;
} mb_times;

/* Fills t[m] from the replay's start and end of every op of s. */
static void find_times(const vp_schedule *s, double **start, double **end, mb_times *t) {
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++) {
            vp__pass passes[VP__OP_MAX_PASSES];
            int n = vp__op_passes(&s->dev[d].ops[k], passes);
            for (int i = 0; i < n; i++) {
                vp__pass ps = passes[i];
                int first = ps.stage == s->mb_first[ps.mb];
                int last = ps.stage == vp_schedule_last_stage(s, ps.mb);
                mb_times *mt = &t[ps.mb];
                if (ps.kind == VP__PASS_F && first)
                    mt->ef = start[d][k > 0 ? k - 1 : k];
                if (ps.kind == VP__PASS_F && last)
                    mt->s = end[d][k];
                if (ps.kind == VP__PASS_B && last)
                    mt->b_last = start[d][k];
                if (ps.kind == VP__PASS_B && first)
                    mt->eb = end[d][k];
            }
        }
}

/* Device d's ops: s's in order, each vocabulary pass of keys[0..4m) before the first op of
 * s that starts later than it (or at its time). */
static vp_status merge_device(const vp_schedule *s, int d, double *start, const vkey *keys,
                              vp_schedule *out) {
    int n = s->dev[d].n, nv = 4 * s->m, k = 0, v = 0;
    vp_status rc = VP_OK;
    while (rc == VP_OK && (k < n || v < nv)) {
        if (v < nv && (k == n || keys[v].t <= start[k])) {
            vp_op op = {.kind = (uint8_t)keys[v].kind, .stage = d, .mb = keys[v].mb};
            rc = vp_schedule_push(out, d, op);
            v++;
        } else {
            rc = vp_schedule_push(out, d, s->dev[d].ops[k++]);
        }
    }
    return rc;
}

/* The keys of every microbatch's four vocabulary passes, sorted, into keys[4m]. */
static void vocab_keys(const vp_schedule *s, const mb_times *t, vkey *keys) {
    for (int j = 0; j < s->m; j++) {
        const mb_times *mt = &t[j];
        keys[4 * j] = (vkey){mt->ef, 0, j, VP_OP_EF};
        keys[4 * j + 1] = (vkey){mt->s, 0, j, VP_OP_S};
        keys[4 * j + 2] = (vkey){mt->s + (mt->b_last - mt->s) / 2, 1, j, VP_OP_T};
        keys[4 * j + 3] = (vkey){mt->eb, 0, j, VP_OP_EB};
    }
    qsort(keys, 4 * (size_t)s->m, sizeof *keys, vkey_cmp);
}

/* The longest op of s under fn (1 without fn). */
static double longest_op(const vp_schedule *s, vp__op_time_fn fn, const void *ctx) {
    double most = 0.0;
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++) {
            double t = fn ? fn(ctx, &s->dev[d].ops[k]) : 1.0;
            most = t > most ? t : most;
        }
    return most;
}

vp_status vp__schedule_vocab(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx,
                             double c, vp_schedule **out, vp_error *err) {
    *out = NULL;
    if (s->vocab_parallel)
        return vp__fail(err, VP_EINVAL, "the schedule already has its vocabulary passes");
    size_t p = (size_t)s->p, m = (size_t)s->m;
    double most = longest_op(s, time_fn, ctx) + c;
    eps_time et = {time_fn, ctx, (most > 0 ? most : 1.0) * 1e-6};
    double **start = vp__calloc(p, sizeof *start), **end = vp__calloc(p, sizeof *end);
    mb_times *t = vp__calloc(m, sizeof *t);
    vkey *keys = vp__calloc(4 * m, sizeof *keys);
    vp_status rc = start && end && t && keys ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
    for (size_t d = 0; rc == VP_OK && d < p; d++) {
        size_t n = (size_t)s->dev[d].n + 1;
        start[d] = vp__calloc(n, sizeof **start);
        end[d] = vp__calloc(n, sizeof **end);
        if (!start[d] || !end[d])
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
    }
    if (rc == VP_OK)
        rc = vp__replay(s, with_eps, &et, c, start, end, err);
    if (rc == VP_OK) {
        find_times(s, start, end, t);
        vocab_keys(s, t, keys);
        rc = vp_schedule_copy_shape(s, out, err);
    }
    if (rc == VP_OK)
        (*out)->vocab_parallel = 1;
    for (int d = 0; rc == VP_OK && d < s->p; d++)
        if (merge_device(s, d, start[d], keys, *out) != VP_OK)
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
    for (size_t d = 0; start && end && d < p; d++) {
        free(start[d]);
        free(end[d]);
    }
    free(start);
    free(end);
    free(t);
    free(keys);
    if (rc != VP_OK) {
        vp_schedule_free(*out);
        *out = NULL;
    }
    return rc;
}
