/* Offload: the shares a schedule offloads and where its O and L ops go (sim.h).
 *
 * Placement works device by device on the schedule simulated without any copy (O and L
 * take no compute time, so those times stay right while no copy is late):
 *   1. a pair pays when at least two ops and its two copies' time lie between the end of
 *      its F and the start of its consumer (its R, else its backward); the policy picks
 *      among those (all; or the longest-lived first up to the share);
 *   2. reloads are packed as late as they may go: from the last consumer back, each copy
 *      ends by its consumer's start and before the next reload begins; its L is inserted
 *      before the last op that starts no later than the copy must;
 *   3. the copy engine is replayed in issue order (each F's copy at its end, each L's at
 *      the end of the op before it) and each O is inserted before the first op that starts
 *      after its copy has ended; a pair whose copy to host would make an op wait is
 *      dropped (it saves nothing).
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "vpipe/sim.h"

/* ---- names and the option ---- */

static const char *const policy_names[] = {"none", "uniform", "selective"};

const char *vp_offload_policy_name(vp_offload_policy policy) {
    return (unsigned)policy <= VP_OFFLOAD_SELECTIVE ? policy_names[policy] : "?";
}

vp_status vp_offload_policy_parse(const char *text, vp_offload_policy *out, vp_error *err) {
    for (int i = 0; i <= VP_OFFLOAD_SELECTIVE; i++)
        if (!strcmp(text, policy_names[i])) {
            *out = (vp_offload_policy)i;
            return VP_OK;
        }
    return vp__fail(err, VP_EINVAL, "unknown offload policy '%s' (none, uniform or selective)",
                    text);
}

vp_status vp_offload_parse(const char *text, vp_offload *spec, double **shares, vp_error *err) {
    *shares = NULL;
    vp_offload o = {.policy = VP_OFFLOAD_UNIFORM};
    if (!strcmp(text, "none")) {
        *spec = (vp_offload){.policy = VP_OFFLOAD_NONE};
        return VP_OK;
    }
    int n = 1;
    for (const char *c = text; *c; c++)
        n += *c == ',';
    double *v = vp__calloc((size_t)n, sizeof *v);
    if (!v)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    const char *p = text;
    int any = 0;
    for (int i = 0; i < n; i++) {
        const char *end = vp__read_number(p, &v[i]);
        if (!end || (*end && *end != ',') || v[i] > 1) {
            free(v);
            return vp__fail_at(err, VP_EPARSE, 1, (int)(p - text) + 1,
                               "expected a share in [0, 1] (or \"none\"), got '%.*s'",
                               (int)strcspn(p, ","), p);
        }
        any |= v[i] > 0;
        p = *end ? end + 1 : end;
    }
    if (n == 1) {
        o.share = v[0];
        free(v);
    } else {
        o.shares = *shares = v;
        o.n = n;
    }
    if (!any)
        o.policy = VP_OFFLOAD_NONE;
    *spec = o;
    return VP_OK;
}

/* The share spec gives stage i (spec checked). */
static double share_of(const vp_offload *spec, int i) {
    return spec->shares ? spec->shares[i] : spec->share;
}

/* ---- step one: the shares ---- */

vp_status vp_schedule_offload_shares(const vp_schedule *s, const vp_offload *spec,
                                     vp_schedule **out, vp_error *err) {
    *out = NULL;
    if ((unsigned)spec->policy > VP_OFFLOAD_SELECTIVE)
        return vp__fail(err, VP_EINVAL, "unknown offload policy %d", (int)spec->policy);
    if (spec->shares && spec->n != s->S)
        return vp__fail(err, VP_EINVAL,
                        "offload gives %d shares; the schedule has %d stage%s (give one share, "
                        "or one per stage)",
                        spec->n, s->S, s->S == 1 ? "" : "s");
    for (int i = 0; i < s->S; i++)
        if (!(share_of(spec, i) >= 0 && share_of(spec, i) <= 1))
            return vp__fail(err, VP_EINVAL, "offload share %g is outside [0, 1]",
                            share_of(spec, i));
    if (!(spec->host_limit >= 0) || isinf(spec->host_limit))
        return vp__fail(err, VP_EINVAL, "host limit %g is not a finite number >= 0",
                        spec->host_limit);
    vp_schedule *c = NULL;
    vp_status rc = vp_schedule_copy_shape(s, &c, err);
    if (rc != VP_OK)
        return rc;
    c->host_limit = spec->host_limit;
    for (int i = 0; i < s->S; i++) {
        double x = spec->policy == VP_OFFLOAD_NONE ? 0.0 : share_of(spec, i);
        c->offload[i] = spec->policy == VP_OFFLOAD_SELECTIVE && x > 0 ? 1.0 : x;
    }
    for (int d = 0; rc == VP_OK && d < s->p; d++)
        for (int k = 0; rc == VP_OK && k < s->dev[d].n; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            if (op->kind != VP_OP_O && op->kind != VP_OP_L)
                rc = vp_schedule_push(c, d, *op);
        }
    if (rc != VP_OK) {
        vp_schedule_free(c);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    *out = c;
    return VP_OK;
}

/* ---- step two: the places ---- */

/* One offloaded pair of a device: its stage and microbatch, the positions of its F and
 * its consumer, and the ops its O and L go before. */
typedef struct pair {
    int32_t stage, mb;
    int kf, kb, ko, kl;
    double gap; /* consumer start - F end: how long the activation waits */
} pair;

/* What placement reads: the schedule, its model and simulation, the policy. */
typedef struct place {
    const vp_schedule *s;
    const vp_cost_model *cm;
    const vp_sim *sim;
    const vp_offload *spec;
    int *at; /* [S*m] index of each pair in the device's list, -1 */
} place;

/* The pairs of device d whose stage offloads, with their F and consumer positions, into
 * *out (caller frees) and their count into *n. VP_ENOMEM. */
static vp_status device_pairs(const place *pl, int d, pair **out, int *n, vp_error *err) {
    const vp_schedule *s = pl->s;
    const vp_oplist *l = &s->dev[d];
    pair *ps = vp__calloc((size_t)l->n + 1, sizeof *ps);
    if (!ps)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    int np = 0;
    for (int k = 0; k < l->n; k++) {
        const vp_op *op = &l->ops[k];
        if ((op->kind == VP_OP_F || op->kind == VP_OP_FB) && s->offload[op->stage] > 0) {
            pl->at[(size_t)op->stage * (size_t)s->m + (size_t)op->mb] = np;
            ps[np++] = (pair){.stage = op->stage, .mb = op->mb, .kf = k, .kb = -1};
        }
        int32_t st = op->kind == VP_OP_FB ? op->stage2 : op->stage;
        int32_t mb = op->kind == VP_OP_FB ? op->mb2 : op->mb;
        if (op->kind == VP_OP_F || op->kind == VP_OP_W || vp_op_kind_is_vocab(op->kind) ||
            s->offload[st] <= 0)
            continue;
        int i = pl->at[(size_t)st * (size_t)s->m + (size_t)mb];
        if (i >= 0 && ps[i].kb < 0)
            ps[i].kb = k; /* its R, else its B, BW or F&B's backward: the first to read it */
    }
    for (int i = 0; i < np; i++) {
        pl->at[(size_t)ps[i].stage * (size_t)s->m + (size_t)ps[i].mb] = -1;
        ps[i].gap = ps[i].kb >= 0 ? pl->sim->start[d][ps[i].kb] - pl->sim->end[d][ps[i].kf] : -1;
    }
    *out = ps;
    *n = np;
    return VP_OK;
}

/* Whether pair pr pays: two ops and both copies' time between its F and its consumer. */
static int pays(const place *pl, const pair *pr) {
    return pr->kb >= pr->kf + 2 && pr->gap >= pl->cm->o[pr->stage] + pl->cm->l[pr->stage];
}

static int by_gap_desc(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->gap != y->gap)
        return x->gap < y->gap ? 1 : -1;
    return x->kf - y->kf;
}

static int by_kf(const void *a, const void *b) {
    return ((const pair *)a)->kf - ((const pair *)b)->kf;
}

static int by_kb_desc(const void *a, const void *b) {
    return ((const pair *)b)->kb - ((const pair *)a)->kb;
}

/* Keeps the pairs the policy chooses among the n of ps (those that pay; for the selective
 * policy, the longest-lived first while the activation offloaded stays within the share
 * of the device's, or with a share per stage of the stage's) at the front of ps, by F
 * position, their count into *kept. VP_ENOMEM. */
static vp_status choose(const place *pl, pair *ps, int n, int *kept, vp_error *err) {
    const vp_cost_model *cm = pl->cm;
    *kept = 0;
    if (pl->spec->policy != VP_OFFLOAD_SELECTIVE) {
        for (int i = 0; i < n; i++)
            if (pays(pl, &ps[i]))
                ps[(*kept)++] = ps[i];
        return VP_OK;
    }
    double total = 0.0, *budget = vp__calloc((size_t)cm->S, sizeof *budget);
    if (!budget)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        total += cm->hold[ps[i].stage];
        budget[ps[i].stage] += share_of(pl->spec, ps[i].stage) * cm->hold[ps[i].stage];
    }
    double left = pl->spec->share * total;
    qsort(ps, (size_t)n, sizeof *ps, by_gap_desc);
    for (int i = 0; i < n; i++) {
        double *room = pl->spec->shares ? &budget[ps[i].stage] : &left;
        double need = cm->off[ps[i].stage];
        if (pays(pl, &ps[i]) && need <= *room * (1 + 1e-12) + 1e-300) {
            *room -= need;
            ps[(*kept)++] = ps[i];
        }
    }
    free(budget);
    qsort(ps, (size_t)*kept, sizeof *ps, by_kf);
    return VP_OK;
}

/* Places the L of each of the n pairs of ps (any order) on device d: reloads packed back
 * to back from the last consumer, each inserted before the last op that lets its copy
 * start in time (at least two ops after its F). */
static void place_reloads(const place *pl, int d, pair *ps, int n) {
    const double *start = pl->sim->start[d], *end = pl->sim->end[d];
    qsort(ps, (size_t)n, sizeof *ps, by_kb_desc);
    double next = INFINITY; /* start of the next reload's copy */
    for (int i = 0; i < n; i++) {
        pair *pr = &ps[i];
        double t_end = fmin(start[pr->kb], next), t_start = t_end - pl->cm->l[pr->stage];
        next = t_start;
        int kl = pr->kb;
        while (kl > pr->kf + 2 && end[kl - 1] > t_start)
            kl--;
        pr->kl = kl;
    }
    qsort(ps, (size_t)n, sizeof *ps, by_kf);
}

/* Sorts the n pair indices of order by the op their L is issued after (kl - 1), then by
 * consumer: insertion, as the order changes little from one round to the next. */
static void sort_reloads(const pair *ps, int *order, int n) {
    for (int i = 1; i < n; i++) {
        int x = order[i], j = i;
        for (; j > 0; j--) {
            const pair *a = &ps[order[j - 1]], *b = &ps[x];
            if (a->kl < b->kl || (a->kl == b->kl && a->kb <= b->kb))
                break;
            order[j] = order[j - 1];
        }
        order[j] = x;
    }
}

/* Replays device d's copy engine for the live pairs of ps (n, by F position; live[i]
 * nonzero) in issue order (an F's copy at its end, an L's just after the op before it;
 * at one op, the F's first, then the reloads by consumer; lorder: the pairs by reload),
 * placing each O before the first op after its F that starts once its copy has ended. A
 * pair whose O finds no such op before its L or whose copy to host would take the host
 * over its limit is dropped there (its copies never run). A pair whose reload would end
 * after its consumer starts gets its L issued earlier by as much (at least one op;
 * dropped when none is left after its O, or with drop_late). Returns how many pairs it
 * dropped or moved. */
static int replay_copies(const place *pl, int d, pair *ps, int n, char *live, int *lorder,
                         bool drop_late) {
    const vp_schedule *s = pl->s;
    const double *start = pl->sim->start[d], *end = pl->sim->end[d];
    double v = s->placement == VP_PLACE_BIDIR ? 1.0 : (double)s->S / (double)s->p;
    int changed = 0, io = 0, il = 0;
    sort_reloads(ps, lorder, n);
    double free_at = 0.0, host = 0.0;
    while (io < n || il < n) {
        bool is_l = io >= n || (il < n && ps[lorder[il]].kl - 1 < ps[io].kf);
        int i = is_l ? lorder[il++] : io++;
        pair *pr = &ps[i];
        if (!live[i]) /* dropped (at its O: its reload never happens) */
            continue;
        double cst = fmax(end[is_l ? pr->kl - 1 : pr->kf], free_at);
        double cend = cst + (is_l ? pl->cm->l : pl->cm->o)[pr->stage];
        double units = s->offload[pr->stage] / v;
        if (is_l) {
            free_at = cend;
            host -= units;
            double lateness = cend - start[pr->kb];
            if (lateness <= 1e-9 * (1 + fabs(start[pr->kb])))
                continue;
            changed++;
            if (drop_late || pr->kl <= pr->ko + 1) {
                live[i] = 0;
                continue;
            }
            double target = end[pr->kl - 1] - lateness; /* issue that much earlier */
            do
                pr->kl--;
            while (pr->kl > pr->ko + 1 && end[pr->kl - 1] > target);
            continue;
        }
        pr->ko = pr->kf + 1;
        while (pr->ko < pr->kl - 1 && start[pr->ko] < cend)
            pr->ko++;
        int late = start[pr->ko] < cend - 1e-9 * (1 + fabs(cend));
        int over = s->host_limit > 0 && host + units > s->host_limit * (1 + 1e-12);
        if (late || over) { /* dropped before its copy runs */
            live[i] = 0, changed++;
            continue;
        }
        free_at = cend;
        host += units;
    }
    return changed;
}

/* Keeps the copy engine of device d within 90% of its span: when the copies of the n pairs
 * of ps (by F position) would take more, only an evenly spaced part of them stays live
 * (pairs by F order), so no stretch of the run (the warm-up's long-lived pairs) takes the
 * engine from the rest. */
static void thin(const place *pl, int d, const pair *ps, int n, char *live) {
    const vp_oplist *l = &pl->s->dev[d];
    double need = 0, span = l->n ? pl->sim->end[d][l->n - 1] - pl->sim->start[d][0] : 0;
    for (int i = 0; i < n; i++)
        need += pl->cm->o[ps[i].stage] + pl->cm->l[ps[i].stage];
    if (!(need > 0.9 * span))
        return;
    double q = 0.9 * span / need; /* the share of pairs the engine can serve */
    for (int i = 0; i < n; i++)
        live[i] = floor((i + 1) * q) > floor(i * q);
}

/* The O and L of device d into ps[0..*n) (the pairs kept, by F position). VP_ENOMEM. */
static vp_status place_device(const place *pl, int d, pair **ps, int *n, vp_error *err) {
    int all = 0;
    vp_status rc = device_pairs(pl, d, ps, &all, err);
    if (rc == VP_OK)
        rc = choose(pl, *ps, all, n, err);
    if (rc != VP_OK || *n == 0)
        return rc;
    char *live = vp__calloc((size_t)*n, 1);
    int *lorder = vp__calloc((size_t)*n, sizeof *lorder);
    if (!live || !lorder) {
        free(live);
        free(lorder);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    memset(live, 1, (size_t)*n);
    thin(pl, d, *ps, *n, live);
    place_reloads(pl, d, *ps, *n);
    for (int i = 0; i < *n; i++)
        lorder[i] = i;
    for (int round = 0; replay_copies(pl, d, *ps, *n, live, lorder, round >= 16) > 0; round++)
        ; /* each round mends or drops; after 16, late reloads are dropped */
    int kept = 0;
    for (int i = 0; i < *n; i++)
        if (live[i])
            (*ps)[kept++] = (*ps)[i];
    *n = kept;
    free(live);
    free(lorder);
    return VP_OK;
}

/* Orders pairs by the op their O goes before (then F position), and by the op their L
 * goes before (then consumer position). */
static int by_ko(const void *a, const void *b) {
    const pair *x = a, *y = b;
    return x->ko != y->ko ? x->ko - y->ko : x->kf - y->kf;
}

static int by_kl(const void *a, const void *b) {
    const pair *x = a, *y = b;
    return x->kl != y->kl ? x->kl - y->kl : x->kb - y->kb;
}

/* Device d's list with the O and L of its n pairs ps inserted into out: before op k, the
 * O ops that go there, then the L ops. ps is reordered. VP_ENOMEM. */
static vp_status assemble(const vp_schedule *s, int d, pair *ps, int n, vp_schedule *out) {
    pair *ls = n ? vp__malloc((size_t)n, sizeof *ls) : NULL;
    if (n && !ls)
        return VP_ENOMEM;
    if (n) { /* (ps is NULL on a device without pairs) */
        memcpy(ls, ps, (size_t)n * sizeof *ls);
        qsort(ps, (size_t)n, sizeof *ps, by_ko);
        qsort(ls, (size_t)n, sizeof *ls, by_kl);
    }
    vp_status rc = VP_OK;
    int io = 0, il = 0;
    for (int k = 0; rc == VP_OK && k <= s->dev[d].n; k++) {
        for (; rc == VP_OK && io < n && ps[io].ko == k; io++)
            rc = vp_schedule_push_pass(out, d, VP_OP_O, ps[io].stage, ps[io].mb);
        for (; rc == VP_OK && il < n && ls[il].kl == k; il++)
            rc = vp_schedule_push_pass(out, d, VP_OP_L, ls[il].stage, ls[il].mb);
        if (rc == VP_OK && k < s->dev[d].n)
            rc = vp_schedule_push(out, d, s->dev[d].ops[k]);
    }
    free(ls);
    return rc;
}

vp_status vp_schedule_offload_place(const vp_schedule *s, const vp_cost_model *cm,
                                    const vp_sim *given, const vp_offload *spec, vp_schedule **out,
                                    vp_error *err) {
    *out = NULL;
    if (cm->S != s->S)
        return vp__fail(err, VP_EINVAL, "cost model has %d stages, schedule %d", cm->S, s->S);
    if (given && given->p != s->p)
        return vp__fail(err, VP_EINVAL, "the simulation given is not the schedule's");
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++)
            if (s->dev[d].ops[k].kind == VP_OP_O || s->dev[d].ops[k].kind == VP_OP_L)
                return vp__fail(err, VP_EINVAL,
                                "the schedule already offloads (take it through "
                                "vp_schedule_offload_shares first)");
    vp_schedule *c = NULL;
    vp_sim *sim = NULL;
    vp_status rc = vp_schedule_copy_shape(s, &c, err); /* the lists again, with O and L */
    if (rc == VP_OK && !given)
        rc = vp_simulate(s, cm, &sim, err);
    place pl = {.s = s, .cm = cm, .sim = given ? given : sim, .spec = spec};
    if (rc == VP_OK && !(pl.at = vp__malloc((size_t)s->S * (size_t)s->m, sizeof *pl.at)))
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    for (size_t i = 0; rc == VP_OK && i < (size_t)s->S * (size_t)s->m; i++)
        pl.at[i] = -1;
    for (int d = 0; rc == VP_OK && d < s->p; d++) {
        pair *ps = NULL;
        int n = 0;
        if (spec->policy != VP_OFFLOAD_NONE)
            rc = place_device(&pl, d, &ps, &n, err);
        if (rc == VP_OK && assemble(s, d, ps, n, c) != VP_OK)
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
        free(ps);
    }
    free(pl.at);
    vp_sim_free(sim);
    if (rc != VP_OK) {
        vp_schedule_free(c);
        return rc;
    }
    *out = c;
    return VP_OK;
}

vp_status vp_schedule_offload(const vp_schedule *s, const vp_costs *costs, const vp_memcfg *mem,
                              const vp_offload *spec, vp_schedule **out, vp_error *err) {
    *out = NULL;
    vp_schedule *shared = NULL;
    vp_cost_model *cm = NULL;
    vp_status rc = vp_schedule_offload_shares(s, spec, &shared, err);
    if (rc == VP_OK)
        rc = vp_cost_model_new(shared, costs, mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_schedule_offload_place(shared, cm, NULL, spec, out, err);
    vp_cost_model_free(cm);
    vp_schedule_free(shared);
    return rc;
}
