/* The search: enumerate the legal configurations with their bounds, visit them by
 * increasing step-time bound in batches (pruning on the results of earlier batches,
 * evaluating the rest on worker threads), then rank, explain, and price the winner. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "hybrid/hybrid_internal.h"

/* Candidates decided together: pruning looks only at earlier batches' results. */
#define BATCH 16

enum { UNVISITED = -1, PRUNED_BOUND = -2, PRUNED_MEMORY = -3 };

typedef struct cand {
    vp_hybrid_config c;
    int shape; /* index into the search's shapes */
    double lb_step, lb_mem;
    int verdict; /* a vp__hy_verdict once evaluated, else UNVISITED or PRUNED_* */
    vp_error err;
} cand;

/* A family's shape at one pipeline degree (built once, at m = 2 pp). */
typedef struct shape {
    int family, pp, v;
    vp_schedule *s; /* NULL: the family does not take pp */
} shape;

typedef struct search {
    const vp_hybrid_request *req;
    vp_hybrid *h;
    cand *c;
    long n, cap;
    shape *shapes;
    int n_shapes, cap_shapes;
    vp__hy_levels **levels; /* each allocated on its own: pointers to them stay valid */
    int n_levels;
    vp__hy_memo *memo;
    double margin; /* bytes (the request's, or the default) */
    double t0;
} search;

/* ---- enumeration ------------------------------------------------------------------ */

static const char *family_name(int f) {
    return f == VP__HY_VBLOCK ? "v-block" : vp_family_at(f)->name;
}

/* The shape of family f at pp (and v chunks), built once; none (s NULL) when the family
 * does not fit or recomputes in R passes (the search prices recomputation inside B). */
static vp_status shape_of(search *S, int f, int pp, int v, int *out, vp_error *err) {
    for (int i = 0; i < S->n_shapes; i++)
        if (S->shapes[i].family == f && S->shapes[i].pp == pp && S->shapes[i].v == v) {
            *out = i;
            return VP_OK;
        }
    if (vp__grow((void **)&S->shapes, &S->cap_shapes, S->n_shapes + 1, sizeof *S->shapes))
        return vp__fail(err, VP_ENOMEM, "out of memory");
    shape *sh = &S->shapes[S->n_shapes];
    *sh = (shape){f, pp, v, NULL};
    vp_spec spec = vp_spec_make(pp, 2 * pp);
    spec.v = v;
    spec.vocab_parallel = S->req->vocab_parallel;
    int vblock_max = S->req->vblock_max_pp ? S->req->vblock_max_pp : 32;
    vp_status rc = f == VP__HY_VBLOCK
                       ? (pp < 2 || pp > vblock_max
                              ? VP_EINVAL
                              : vp_schedule_new("v-block", (vp_shape){pp, 2 * pp, 1, VP_PLACE_V},
                                                &sh->s, NULL))
                       : vp_family_build(family_name(f), &spec, &sh->s, NULL);
    if (rc == VP_ENOMEM)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    if (sh->s && f == VP__HY_VBLOCK) /* the block's shape: its passes come with its build */
        sh->s->vocab_parallel = S->req->vocab_parallel;
    if (sh->s && sh->s->recompute != VP_RECOMPUTE_NONE) { /* 1f1b-r: the recompute dimension's */
        vp_schedule_free(sh->s);                          /* 1F1B, not searched twice */
        sh->s = NULL;
    }
    *out = S->n_shapes++;
    return VP_OK;
}

/* A layout of one point, kept for the families that share its shape (placement, S). */
typedef struct point_layout {
    vp_placement_kind placement;
    int S;
    vp_price_layout *lay; /* NULL: the layers do not fill the shape */
} point_layout;

/* The bounds of candidate x from its point's layout for its shape (made on first use).
 * Returns 0, 1 when the configuration is not legal (layers do not fill), -1 on error. */
static int bound(search *S, cand *x, point_layout *lays, int *n_lays, vp_error *err) {
    const vp_schedule *sh = S->shapes[x->shape].s;
    point_layout *pl = NULL;
    for (int i = 0; i < *n_lays && !pl; i++)
        if (lays[i].placement == sh->placement && lays[i].S == sh->S)
            pl = &lays[i];
    vp__hy_setup hs;
    vp__hy_setup_make(S->req, &x->c, &hs);
    if (!pl) {
        pl = &lays[(*n_lays)++];
        *pl = (point_layout){sh->placement, sh->S, NULL};
        vp_status rc = vp_price_layout_new(&hs.setup, sh, &pl->lay, err);
        if (rc == VP_ENOMEM)
            return -1;
    }
    if (!pl->lay)
        return 1;
    vp_price_bound b;
    if (vp_price_layout_bound_of(&hs.setup, pl->lay, sh, x->c.m, &b, err) != VP_OK)
        return -1;
    x->lb_step = b.step_time_s;
    x->lb_mem = b.memory_max_bytes;
    return 0;
}

static vp_status add_candidate(search *S, const cand *x) {
    if (S->n == S->cap) {
        long cap = S->cap ? 2 * S->cap : 1024;
        cand *grown = realloc(S->c, (size_t)cap * sizeof *grown);
        if (!grown)
            return VP_ENOMEM;
        S->c = grown;
        S->cap = cap;
    }
    S->c[S->n++] = *x;
    return VP_OK;
}

/* Every legal family (and chunk count) at one point (degrees, mbs, m, recomputation). On
 * one pipeline rank every family is the same gradient accumulation over the m microbatches
 * (no bubble, no sends): 1F1B alone stands for it, its order keeping the fewest
 * activations (one microbatch's), where the others would list the same step again. */
static vp_status add_point(search *S, const vp_hybrid_config *point, vp_error *err) {
    int max_v = S->req->max_chunks ? S->req->max_chunks : 4;
    point_layout lays[16];
    int n_lays = 0;
    vp_status rc = VP_OK;
    for (int f = 0; f <= VP__HY_VBLOCK && rc == VP_OK; f++) {
        if (point->pp == 1 && strcmp(family_name(f), "1f1b"))
            continue;
        bool chunked = f < VP__HY_VBLOCK && !strcmp(family_name(f), "interleaved");
        for (int v = chunked ? 2 : 0; v <= (chunked ? max_v : 0) && rc == VP_OK; v++) {
            cand x = {.c = *point, .verdict = UNVISITED};
            snprintf(x.c.family, sizeof x.c.family, "%s", family_name(f));
            x.c.v = v;
            vp__hy_group(&x.c);
            rc = shape_of(S, f, point->pp, v, &x.shape, err);
            if (rc != VP_OK || !S->shapes[x.shape].s || n_lays == 16)
                continue;
            int legal = bound(S, &x, lays, &n_lays, err);
            if (legal < 0)
                rc = err ? err->status : VP_ENOMEM;
            if (legal != 0)
                continue;
            if (x.lb_mem > S->req->gpu->memory_bytes) {
                x.verdict = PRUNED_MEMORY;
                S->h->pruned_memory++;
            }
            S->h->candidates++;
            if (add_candidate(S, &x) != VP_OK)
                rc = vp__fail(err, VP_ENOMEM, "out of memory");
        }
    }
    for (int i = 0; i < n_lays; i++)
        vp_price_layout_free(lays[i].lay);
    return rc;
}

/* Whether value is free, or fixed to it. */
static bool allowed(int fixed, int value) {
    return fixed <= 0 || fixed == value;
}

/* Whether the request's time limit has passed (marks the answer timed out when so). */
static bool out_of_time(search *S) {
    double limit = S->req->time_limit_s;
    if (limit > 0 && (vp__now_ms() - S->t0) / 1e3 > limit)
        S->h->timed_out = true;
    return S->h->timed_out;
}

/* The FP8 recipes searched: the request's, or off and the accelerator's best. */
static int fp8_choices(const vp_hybrid_request *q, vp_fp8 out[2]) {
    out[0] = q->fp8_search ? VP_FP8_OFF : q->work.fp8;
    out[1] = vp_price_fp8_best(q->gpu);
    return q->fp8_search && out[1] != VP_FP8_OFF ? 2 : 1;
}

/* Every recomputation, ZeRO stage and FP8 recipe of one point (degrees and microbatch):
 * the ZeRO stages the request searches, one where nothing is sharded (DP x CP and
 * expert-DP 1), 0 and 1 under a pipeline (where 2 and 3 price as 1); the FP8 recipes
 * searched. */
static vp_status add_stages(search *S, const vp_hybrid_config *point, vp_error *err) {
    const vp_hybrid_request *q = S->req;
    long cp = point->cp > 0 ? point->cp : 1, edp = (long)point->tp * cp * point->dp;
    edp /= (long)point->ep * point->etp; /* expert-DP: the expert layers' fold */
    bool shards = point->dp * cp > 1 || (q->arch->experts > 0 && edp > 1);
    /* under a pipeline ZeRO-2 and 3 price as ZeRO-1 (FSDP keeps a stage gathered) */
    int z0 = q->zero_search ? 0 : q->work.zero;
    int z1 = q->zero_search && shards ? (point->pp > 1 ? 1 : 3) : z0;
    vp_fp8 fp8[2];
    int n_fp8 = fp8_choices(q, fp8);
    for (int rc = VP_RECOMPUTE_NONE; rc <= VP_RECOMPUTE_FULL; rc++) {
        bool no_try =
            rc == VP_RECOMPUTE_SELECTIVE && !vp_price_selective_differs(q->arch, &q->work);
        if ((q->recompute >= 0 && q->recompute != rc) || (q->recompute < 0 && no_try))
            continue;
        for (int z = z0; z <= z1; z++)
            for (int f = 0; f < n_fp8; f++) {
                vp_hybrid_config pt = *point;
                pt.recompute = (vp_recompute)rc;
                /* selective reruns the request's modules (0: core_attn) */
                pt.recompute_modules = rc == VP_RECOMPUTE_SELECTIVE ? q->work.recompute_modules : 0;
                pt.zero = z;
                pt.fp8 = fp8[f];
                vp_status st = add_point(S, &pt, err);
                if (st != VP_OK || out_of_time(S))
                    return st;
            }
    }
    return VP_OK;
}

/* The points of one DP x TP x PP x CP x EP x ETP: every microbatch size DP x mbs divides
 * the batch by, then add_stages's. */
static vp_status enumerate_mbs(search *S, const vp_hybrid_config *base, vp_error *err) {
    const vp_hybrid_request *q = S->req;
    int B = q->global_batch, dp = base->dp;
    for (int mbs = 1; mbs <= B / dp; mbs++) {
        if ((B / dp) % mbs || !allowed(q->mbs, mbs))
            continue;
        vp_hybrid_config pt = *base;
        pt.mbs = mbs;
        pt.m = B / dp / mbs;
        vp_status st = add_stages(S, &pt, err);
        if (st != VP_OK || S->h->timed_out)
            return st; /* out of time: the points so far are searched */
    }
    return VP_OK;
}

/* The points of one DP x TP x PP x CP: every EP dividing the experts and ETP 1 or TP where
 * TP divides the expert FFN width (1 for a dense model; what torchtitan runs, and
 * Megatron-LM's usual choices) whose EP x ETP divides TP x CP x DP (the expert layers fold
 * the same GPUs), then enumerate_mbs's. A fixed --etp is searched whatever it is. */
static vp_status enumerate_at(search *S, int dp, int tp, int pp, int cp, vp_error *err) {
    const vp_hybrid_request *q = S->req;
    const vp_arch *a = q->arch;
    int most = a->experts > 0 ? a->experts : 1;
    int etps[2] = {1, a->experts > 0 ? tp : 1}, n_etp = etps[1] > 1 ? 2 : 1;
    if (q->etp > 0)
        etps[0] = q->etp, n_etp = 1;
    for (int ep = 1; ep <= most; ep++)
        for (int k = 0; k < n_etp; k++) {
            int etp = etps[k];
            if (most % ep || ((long)tp * cp * dp) % ((long)ep * etp) || !allowed(q->ep, ep) ||
                (a->experts > 0 && a->expert_ffn % etp))
                continue;
            vp_hybrid_config base = {.dp = dp, .tp = tp, .pp = pp, .ep = ep, .etp = etp, .cp = cp};
            vp_status st = enumerate_mbs(S, &base, err);
            if (st != VP_OK || S->h->timed_out)
                return st;
        }
    return VP_OK;
}

/* Every point: TP within a node dividing the heads and KV heads, CP as vp__hy_cp_legal
 * allows, PP x DP the rest, and enumerate_at's points of each. */
static vp_status enumerate(search *S, vp_error *err) {
    const vp_hybrid_request *q = S->req;
    const vp_arch *a = q->arch;
    int node = q->gpu->gpus_per_node, B = q->global_batch;
    for (int tp = 1; tp <= node; tp++) {
        if (node % tp || q->gpus % tp || a->heads % tp || a->kv_heads % tp || !allowed(q->tp, tp))
            continue;
        for (int cp = 1; cp <= q->gpus / tp; cp++) {
            if (!vp__hy_cp_legal(q, tp, cp))
                continue;
            int rest = q->gpus / tp / cp; /* PP x DP */
            for (int pp = 1; pp <= rest; pp++) {
                int dp = rest / pp;
                /* every family has at least pp stages on a route: pp - 2 layers at least */
                if (rest % pp || B % dp || !allowed(q->pp, pp) || !allowed(q->dp, dp) ||
                    pp > a->layers + 2 || !vp__hy_cp_wanted(q, tp, pp, cp))
                    continue;
                vp_status st = enumerate_at(S, dp, tp, pp, cp, err);
                if (st != VP_OK || S->h->timed_out)
                    return st;
            }
        }
    }
    return VP_OK;
}

/* ---- visiting ------------------------------------------------------------------------- */

/* The K fastest that fit so far and the best of every group. */
typedef struct standings {
    long *top; /* candidate indices, fastest first */
    int n_top, k;
    long *best; /* per group, candidate indices */
    int n_best;
} standings;

/* Ranked before: room before tight, then faster, then enumerated first. */
static bool faster(const cand *a, long ia, const cand *b, long ib) {
    if (a->c.tight != b->c.tight)
        return b->c.tight;
    return a->c.step_time_s < b->c.step_time_s || (a->c.step_time_s == b->c.step_time_s && ia < ib);
}

static void record(search *S, standings *st, long i) {
    cand *x = &S->c[i];
    int g = 0;
    while (g < st->n_best && strcmp(S->c[st->best[g]].c.group, x->c.group))
        g++;
    if (g == st->n_best)
        st->best[st->n_best++] = i;
    else if (faster(x, i, &S->c[st->best[g]], st->best[g]))
        st->best[g] = i;
    int at = st->n_top < st->k ? st->n_top++ : st->k;
    while (at > 0 && faster(x, i, &S->c[st->top[at - 1]], st->top[at - 1])) {
        if (at < st->k)
            st->top[at] = st->top[at - 1];
        at--;
    }
    if (at < st->k)
        st->top[at] = i;
}

/* Whether x, from its bounds, cannot rank before the configuration r: r has room and x's
 * step-time bound is at least r's, or x is tight for sure (its memory bound leaves less than
 * the margin) and r has room, or both are tight and x's bound is at least r's. */
static bool behind(const search *S, const cand *x, const vp_hybrid_config *r) {
    bool tight = x->lb_mem > S->req->gpu->memory_bytes - S->margin;
    if (!r->tight)
        return tight || x->lb_step >= r->step_time_s;
    return tight && x->lb_step >= r->step_time_s;
}

/* Whether x's bound cannot win: behind the K-th best and its group's best. */
static bool prunable(const search *S, const standings *st, const cand *x) {
    if (st->n_top < st->k || !behind(S, x, &S->c[st->top[st->k - 1]].c))
        return false;
    for (int g = 0; g < st->n_best; g++)
        if (!strcmp(S->c[st->best[g]].c.group, x->c.group))
            return behind(S, x, &S->c[st->best[g]].c);
    return false;
}

/* The V levels of pp (found once). */
static const vp__hy_levels *levels_of(search *S, int pp, vp_error *err) {
    for (int i = 0; i < S->n_levels; i++)
        if (S->levels[i]->pp == pp)
            return S->levels[i];
    vp__hy_levels **grown = realloc(S->levels, (size_t)(S->n_levels + 1) * sizeof *grown);
    vp__hy_levels *found = vp__calloc(1, sizeof *found);
    if (grown)
        S->levels = grown;
    if (!grown || !found) {
        free(found);
        vp__fail(err, VP_ENOMEM, "out of memory");
        return NULL;
    }
    if (vp__hy_levels_find(pp, S->req->threads, found, err) != VP_OK) {
        free(found);
        return NULL;
    }
    return S->levels[S->n_levels++] = found;
}

/* Work shared by the threads of one batch. */
typedef struct batch {
    search *S;
    const long *idx; /* candidates to evaluate */
    const vp__hy_levels **levels;
    int n;
    atomic_int next;
} batch;

static void *work(void *arg) {
    batch *b = arg;
    for (int k; (k = atomic_fetch_add(&b->next, 1)) < b->n;) {
        cand *x = &b->S->c[b->idx[k]];
        const vp_schedule *sh = b->S->shapes[x->shape].s;
        x->verdict =
            (int)vp__hy_evaluate(b->S->req, sh, b->levels[k], b->S->memo, &x->c, NULL, &x->err);
    }
    return NULL;
}

/* Evaluates the n candidates idx on up to threads threads. */
static vp_status evaluate_batch(search *S, const long *idx, int n, vp_error *err) {
    const vp__hy_levels *levels[BATCH] = {0};
    for (int k = 0; k < n; k++) {
        const cand *x = &S->c[idx[k]];
        if (!strcmp(x->c.family, "v-block") && !(levels[k] = levels_of(S, x->c.pp, err)))
            return err ? err->status : VP_ENOMEM;
    }
    batch b = {S, idx, levels, n, 0};
    int threads = S->req->threads > n ? n : S->req->threads;
    pthread_t tid[BATCH];
    int started = 0;
    while (started + 1 < threads && pthread_create(&tid[started], NULL, work, &b) == 0)
        started++;
    work(&b);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    return VP_OK;
}

/* Tallies the batch's verdicts into h and the standings. */
static vp_status tally(search *S, standings *st, const long *idx, int n, vp_error *err) {
    for (int k = 0; k < n; k++) {
        cand *x = &S->c[idx[k]];
        if (x->verdict == VP__HY_FAILED) {
            if (err)
                *err = x->err;
            return x->err.status ? x->err.status : VP_ENOMEM;
        }
        S->h->evaluated += x->verdict == VP__HY_PRICED;
        S->h->over_memory += x->verdict == VP__HY_OVER;
        S->h->refused += x->verdict == VP__HY_REFUSED;
        if (x->verdict == VP__HY_PRICED && x->c.fits)
            record(S, st, idx[k]);
    }
    return VP_OK;
}

/* A candidate to visit: its bound, then its enumeration order. */
typedef struct ranked {
    double lb;
    long i;
} ranked;

static int by_bound(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->lb != y->lb)
        return x->lb < y->lb ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Visits the unpruned candidates by increasing bound, batch by batch. */
static vp_status visit(search *S, standings *st, vp_error *err) {
    ranked *order = vp__calloc((size_t)S->n + 1, sizeof *order);
    long n = 0;
    if (!order)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (long i = 0; i < S->n; i++)
        if (S->c[i].verdict == UNVISITED)
            order[n++] = (ranked){S->c[i].lb_step, i};
    qsort(order, (size_t)n, sizeof *order, by_bound);
    vp_status rc = VP_OK;
    for (long at = 0; at < n && rc == VP_OK; at += BATCH) {
        if (at > 0 && out_of_time(S)) /* one batch always: a best to return */
            break;
        long todo[BATCH];
        int k = 0;
        for (long j = at; j < at + BATCH && j < n; j++) {
            cand *x = &S->c[order[j].i];
            if (prunable(S, st, x)) {
                x->verdict = PRUNED_BOUND;
                S->h->pruned_bound++;
            } else {
                todo[k++] = order[j].i;
            }
        }
        rc = evaluate_batch(S, todo, k, err);
        if (rc == VP_OK)
            rc = tally(S, st, todo, k, err);
        if (S->req->progress)
            S->req->progress(S->req->progress_arg, at + BATCH < n ? at + BATCH : n, n);
    }
    free(order);
    return rc;
}

/* ---- the answer ------------------------------------------------------------------------ */

#define GIB 1073741824.0

/* "v-min, DP 1, TP 8, PP 8, mbs 1, recompute full" of c into buf. */
static const char *describe(const vp_hybrid_config *c, char *buf, size_t size) {
    char chunks[32] = "";
    if (c->v)
        snprintf(chunks, sizeof chunks, " with %d chunks", c->v);
    char ep[192];
    vp__hy_levers(c, ep, sizeof ep);
    int n = snprintf(buf, size, "%s%s, DP %d, TP %d, PP %d%s, mbs %d, recompute %s", c->family,
                     chunks, c->dp, c->tp, c->pp, ep, c->mbs, vp_recompute_name(c->recompute));
    if (c->offload > 0 && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ", offload %g", c->offload);
    return buf;
}

/* Nothing fits: the smallest memory any configuration needs. Candidates go by memory
 * bound; those never built are built until no bound is below the least found. Returns
 * VP_EINVAL naming it (or why there is nothing to name). */
static vp_status no_fit(search *S, vp_error *err) {
    const vp_hybrid_request *q = S->req;
    if (S->h->timed_out)
        return vp__fail(err, VP_EINVAL,
                        "the time limit (%g s) ended the search before any configuration that "
                        "fits was found (%ld of %ld candidates evaluated)",
                        q->time_limit_s, S->h->evaluated, S->h->candidates);
    if (S->n == 0)
        return vp__fail(err, VP_EINVAL,
                        "no legal configuration of %s on %d GPUs with a global batch of %d: TP "
                        "within a node of %d dividing %d heads and %d KV heads, PP x DP = the "
                        "rest, DP x mbs dividing the batch, layers filling every stage",
                        q->arch->name, q->gpus, q->global_batch, q->gpu->gpus_per_node,
                        q->arch->heads, q->arch->kv_heads);
    ranked *order = vp__calloc((size_t)S->n, sizeof *order);
    if (!order)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (long i = 0; i < S->n; i++)
        order[i] = (ranked){S->c[i].lb_mem, i}; /* ranked by the memory bound here */
    qsort(order, (size_t)S->n, sizeof *order, by_bound);
    long best = -1;
    vp_status rc = VP_OK;
    for (long j = 0; j < S->n && rc == VP_OK; j++) {
        cand *x = &S->c[order[j].i];
        if (best >= 0 && x->lb_mem >= S->c[best].c.memory_max_bytes)
            break;
        if (x->verdict == PRUNED_MEMORY) {
            const vp__hy_levels *lv = NULL;
            if (!strcmp(x->c.family, "v-block") && !(lv = levels_of(S, x->c.pp, err)))
                rc = err ? err->status : VP_ENOMEM;
            else
                x->verdict = (int)vp__hy_evaluate(q, S->shapes[x->shape].s, lv, S->memo, &x->c,
                                                  NULL, &x->err);
        }
        if (x->verdict == VP__HY_FAILED)
            rc = vp__fail(err, x->err.status, "%s", x->err.message);
        bool known = x->verdict == VP__HY_PRICED || x->verdict == VP__HY_OVER;
        if (known && (best < 0 || x->c.memory_max_bytes < S->c[best].c.memory_max_bytes))
            best = order[j].i;
    }
    free(order);
    if (rc != VP_OK)
        return rc;
    char what[160] = "none builds";
    if (best >= 0)
        describe(&S->c[best].c, what, sizeof what);
    return vp__fail(err, VP_EINVAL,
                    "no configuration of %s fits %d %s (%.1f GiB each): the smallest needs "
                    "%.1f GiB per GPU (%s; every item a process holds counted, %.1f GiB of "
                    "reserve among them)",
                    q->arch->name, q->gpus, q->gpu->name, q->gpu->memory_bytes / GIB,
                    best >= 0 ? S->c[best].c.memory_max_bytes / GIB : 0.0, what,
                    q->work.reserve_bytes / GIB);
}

/* Room before tight, then fastest first; equal times by group name (a total order: qsort
 * need not be stable). */
static int by_step(const void *a, const void *b) {
    const vp_hybrid_config *x = a, *y = b;
    if (x->tight != y->tight)
        return x->tight ? 1 : -1;
    if (x->step_time_s != y->step_time_s)
        return x->step_time_s < y->step_time_s ? -1 : 1;
    return strcmp(x->group, y->group);
}

/* The ranked lists, the winner priced, 1F1B at the winner's point, and the reason. */
static vp_status finish(search *S, const standings *st, vp_error *err) {
    vp_hybrid *h = S->h;
    h->top = vp__calloc((size_t)st->n_top, sizeof *h->top);
    h->best = vp__calloc((size_t)st->n_best, sizeof *h->best);
    if (!h->top || !h->best)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < st->n_top; i++)
        h->top[h->n_top++] = S->c[st->top[i]].c;
    for (int i = 0; i < st->n_best; i++)
        h->best[h->n_best++] = S->c[st->best[i]].c;
    qsort(h->best, (size_t)h->n_best, sizeof *h->best, by_step);
    vp_status rc = vp_hybrid_price(S->req, &h->top[0], &h->winner, err);
    if (rc == VP_OK && strcmp(h->top[0].family, "1f1b")) {
        vp_hybrid_config one = h->top[0];
        vp_hybrid_priced versus;
        snprintf(one.family, sizeof one.family, "1f1b");
        one.params[0] = '\0';
        one.v = 0;
        if (vp_hybrid_price(S->req, &one, &versus, NULL) == VP_OK)
            h->versus = versus.config;
        vp_hybrid_priced_release(&versus);
    }
    if (rc == VP_OK)
        vp__hy_reason(h);
    return rc;
}

vp_hybrid_request vp_hybrid_request_make(const vp_arch *arch, const vp_gpu *gpu, int gpus,
                                         int global_batch) {
    return (vp_hybrid_request){.arch = arch,
                               .gpu = gpu,
                               .work = vp_workload_default(arch),
                               .split = VP_SPLIT_TIME,
                               .gpus = gpus,
                               .global_batch = global_batch,
                               .recompute = -1,
                               .margin_bytes = -1};
}

/* The request's own fields, and its model, accelerator and workload as pricing checks
 * them. */
static vp_status check_request(const vp_hybrid_request *q, vp_error *err) {
    if (!q || !q->arch || !q->gpu)
        return vp__fail(err, VP_EINVAL, "the search needs a model and an accelerator");
    if (q->gpus < 1 || q->gpus > (1 << 20) || q->global_batch < 1 || q->global_batch > (1 << 24))
        return vp__fail(err, VP_EINVAL,
                        "GPUs must be in [1, 2^20] and the global batch in [1, 2^24] (got %d, %d)",
                        q->gpus, q->global_batch);
    if (q->tp < 0 || q->pp < 0 || q->dp < 0 || q->mbs < 0 || q->ep < 0 || q->etp < 0 || q->cp < 0 ||
        q->recompute < -1 || q->recompute > VP_RECOMPUTE_FULL || q->max_chunks < 0 ||
        q->max_chunks > 64 || q->vblock_max_pp < 0 || q->top < 0 || q->threads < 0 ||
        q->fp8_search < 0 || q->fp8_search > 1 || !(q->time_limit_s >= 0) ||
        !isfinite(q->time_limit_s) || !isfinite(q->margin_bytes))
        return vp__fail(err, VP_EINVAL,
                        "fixed degrees, top, threads, chunks and the time limit must be >= 0, "
                        "recompute -1 or a vp_recompute, fp8_search 0 or 1, the margin finite");
    vp_workload w = q->work;
    w.tp = w.mbs = 1;
    w.ep = q->ep > 0 ? q->ep : 1;    /* a fixed EP and ETP divide the experts, on the DP */
    w.etp = q->etp > 0 ? q->etp : 1; /* that folds them (the search keeps to folds) */
    w.dp = w.ep * w.etp;
    w.cp = q->cp > 0 ? q->cp : 1; /* a fixed CP leaves 2 chunks of the sequence per rank */
    w.recompute = w.recompute_modules ? VP_RECOMPUTE_SELECTIVE : VP_RECOMPUTE_NONE;
    vp_price_setup su = {.arch = q->arch, .gpu = q->gpu, .work = &w, .split = q->split};
    return vp_price_check(&su, err);
}

static void release(search *S) {
    for (int i = 0; i < S->n_shapes; i++)
        vp_schedule_free(S->shapes[i].s);
    for (int i = 0; i < S->n_levels; i++) {
        vp__hy_levels_release(S->levels[i]);
        free(S->levels[i]);
    }
    vp__hy_memo_free(S->memo);
    free(S->shapes);
    free(S->levels);
    free(S->c);
}

vp_status vp_hybrid_run(const vp_hybrid_request *req, vp_hybrid **out, vp_error *err) {
    *out = NULL;
    vp_status rc = check_request(req, err);
    if (rc != VP_OK)
        return rc;
    search S = {.req = req,
                .t0 = vp__now_ms(),
                .margin = vp__hy_margin(req),
                .h = vp__calloc(1, sizeof(vp_hybrid)),
                .memo = vp__hy_memo_new()};
    int k = req->top ? req->top : 10, groups = vp_family_count() + 2;
    standings st = {vp__calloc((size_t)k, sizeof(long)), 0, k,
                    vp__calloc((size_t)groups, sizeof(long)), 0};
    if (!S.h || !st.top || !st.best || !S.memo)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        rc = enumerate(&S, err);
    if (rc == VP_OK)
        rc = visit(&S, &st, err);
    if (rc == VP_OK)
        rc = st.n_top ? finish(&S, &st, err) : no_fit(&S, err);
    if (S.h) {
        S.h->elapsed_s = (vp__now_ms() - S.t0) / 1e3;
        S.h->margin_bytes = S.margin;
    }
    release(&S);
    free(st.top);
    free(st.best);
    if (rc != VP_OK) {
        vp_hybrid_free(S.h);
        return rc;
    }
    *out = S.h;
    return VP_OK;
}

void vp_hybrid_free(vp_hybrid *h) {
    if (!h)
        return;
    vp_hybrid_priced_release(&h->winner);
    free(h->top);
    free(h->best);
    free(h);
}
