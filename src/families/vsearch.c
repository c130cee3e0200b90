/* The V block search (families.h): every block of the space built on the V slot grid and
 * measured with the spec's costs, keeping the best per peak level or the best overall.
 *
 * The space, in enumeration order (which breaks ties): the 60 phase patterns (F¹, B¹, B⁰
 * on device 0, distinct phases in 1..5, lexicographic), then δ⁰ in 1..5, then the δ⁰
 * after the change point (equal: no change point, else smaller), then the change point K
 * in 1..p-2; δ¹ is 1 throughout.
 *
 * Pruning never changes the answer. A block whose repeated peak exceeds the memory cap is
 * not built. A block is not built when a lower bound on its span (so on its makespan)
 * shows it cannot rank before the block it would have to beat, and its replay stops once
 * it can no longer (vp_vgrid_measure's limit). Blocks are taken in batches of fixed size; every
 * decision in a batch uses the results of the batches before it, and results merge in enumeration
 * order, so the answer and the counters do not depend on how many threads share a batch.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "families/families_internal.h"

#define EPS 1e-9
#define BATCH 16
#define MAX_THREADS 64
#define SMALL_BUILD 512 /* device-microbatches below which blocks build too fast to share out */

void vp_vsearch_free(vp_vsearch *s) {
    if (!s)
        return;
    free(s->levels);
    free(s);
}

/* ---- the space ---------------------------------------------------------------------- */

/* Offset choices (δ⁰, later δ⁰, K) per phase pattern at p devices. */
static long combos(int p) {
    return 5 + 10L * (p > 2 ? p - 2 : 0);
}

long vp_vsearch_size(int p) {
    return p < 2 ? 0 : 60 * combos(p);
}

/* The k-th (from 0) phase in 1..5 other than a and b. */
static int nth_other(int k, int a, int b) {
    int x = 1;
    for (; x == a || x == b || k-- > 0; x++)
        ;
    return x;
}

/* Pattern i is the i-th distinct (f1, b1, b0) in lexicographic order: 12 per F¹ phase, 3
 * per B¹ phase after it (a search asks for one per block: no enumeration of the 125). */
void vp_vsearch_pattern(int i, vp_vblock *vb) {
    if (i >= VP_VSEARCH_PATTERNS)
        return;
    i = i < 0 ? 0 : i;
    vb->f1 = 1 + i / 12;
    vb->b1 = nth_other(i % 12 / 3, vb->f1, vb->f1);
    vb->b0 = nth_other(i % 3, vb->f1, vb->b1);
}

void vp_vsearch_block(int p, long index, vp_vblock *out) {
    vp_vblock vb = {.d1 = 1, .d1b = 1, .k = p - 1};
    vp_vsearch_pattern((int)(index / combos(p)), &vb);
    long c = index % combos(p), later = 0;
    for (vb.d0 = 1; vb.d0 <= 5; vb.d0++) {
        later = (vb.d0 - 1) * (long)(p - 2); /* (later δ⁰, K) pairs before the plain δ⁰ */
        if (c <= later)
            break;
        c -= later + 1;
    }
    vb.d0b = vb.d0;
    if (c < later) {
        vb.d0b = 1 + (int)(c / (p - 2));
        vb.k = 1 + (int)(c % (p - 2));
    }
    *out = vb;
}

/* ---- bounds ------------------------------------------------------------------------- */

/* What the bounds need of the shape and costs. */
typedef struct bound {
    int p, m;
    int uniform;            /* every pass costs u, no hop time */
    double u;               /* the common pass time when uniform */
    double reach, work, fc; /* first F¹ back on device 0, device 0's work, its F */
    double floor;           /* no device ends before its first F can arrive plus its work */
    int predictable;        /* a block's peak is cap/2 units (release-at-W, m >= 2p) */
} bound;

static bound make_bound(const vp_cost_model *cm, int p, int m) {
    bound bd = {.p = p, .m = m, .uniform = cm->c == 0, .u = cm->f[0], .predictable = m >= 2 * p};
    for (int s = 0; s < cm->S; s++) {
        bd.uniform &= cm->f[s] == bd.u && cm->b[s] == bd.u && cm->w[s] == bd.u;
        bd.predictable &= cm->keep[s] == cm->act[s] && cm->act[s] == 0.5;
        bd.reach += cm->f[s];
    }
    double arrive = 0;
    for (int d = 0; d < p; d++) {
        int s0 = d, s1 = 2 * p - 1 - d;
        double work = m * (cm->f[s0] + cm->b[s0] + cm->w[s0] + cm->f[s1] + cm->b[s1] + cm->w[s1]);
        bd.floor = arrive + work > bd.floor ? arrive + work : bd.floor;
        if (d == 0)
            bd.work = work;
        arrive += cm->f[s0] + cm->c;
    }
    bd.reach += 2 * (p - 1) * cm->c;
    bd.fc = cm->f[0] > cm->f[2 * p - 1] ? cm->f[0] : cm->f[2 * p - 1];
    return bd;
}

/* Lower bounds on the longest span and the makespan of the schedule built from any block
 * whose repeated block holds k chunk activations. Device 0 starts at 0 and runs only
 * forwards until microbatch 0's chunk-1 forward comes back to it (reach), at most k of
 * them (memory), so it idles at least reach - k·F of that time; at equal pass times u, no
 * hop time and m >= 2p, the [CM] bound: at least 6p - 1 - 3k idle slots. The makespan is
 * at least that span, and at least any device's earliest start plus its work. */
static vp_vgrid_metrics lower_bounds(const bound *bd, int k) {
    int forwards = k < 2 * bd->m ? k : 2 * bd->m;
    double idle = bd->reach - forwards * bd->fc, span = bd->work + (idle > 0 ? idle : 0);
    if (bd->uniform && bd->m >= 2 * bd->p) {
        int slots = 6 * bd->p - 1 - 3 * k;
        double paper = (6.0 * bd->m + (slots > 0 ? slots : 0)) * bd->u;
        span = paper > span ? paper : span;
    }
    return (vp_vgrid_metrics){.span = span, .makespan = span > bd->floor ? span : bd->floor};
}

static int differs(double a, double b) {
    return fabs(a - b) > EPS * (1 + fabs(b));
}

/* The figure a ranking compares first: the makespan, or the longest span (VP_VRANK_SPAN). */
static double first_of(const vp_vgrid_metrics *x, vp_vrank rank) {
    return rank == VP_VRANK_SPAN ? x->span : x->makespan;
}

int vp_vsearch_ranks_before(const vp_vgrid_metrics *a, const vp_vgrid_metrics *b, vp_vrank rank) {
    if (differs(first_of(a, rank), first_of(b, rank)) || rank != VP_VRANK_MAKESPAN)
        return differs(first_of(a, rank), first_of(b, rank)) &&
               first_of(a, rank) < first_of(b, rank);
    if (differs(a->span, b->span))
        return a->span < b->span;
    return differs(a->peak, b->peak) && a->peak < b->peak;
}

/* 1 when a (enumeration index ia) ranks before b (ib): vp_vsearch_ranks_before, then the
 * earlier in the enumeration. */
static int ranks_before(const vp_vgrid_metrics *a, long ia, const vp_vgrid_metrics *b, long ib,
                        vp_vrank rank) {
    if (vp_vsearch_ranks_before(a, b, rank) || vp_vsearch_ranks_before(b, a, rank))
        return vp_vsearch_ranks_before(a, b, rank);
    return ia < ib;
}

/* 1 when no schedule whose span and makespan are at least lb's and whose peak is at least
 * peak (0: unknown) can rank before inc from a later index: its first figure is worse, or
 * at best equal and (ranking by makespan) its span and peak cannot break the tie. */
static int cannot_beat(const vp_vgrid_metrics *lb, double peak, const vp_vgrid_metrics *inc,
                       vp_vrank rank) {
    double one = first_of(inc, rank);
    if (first_of(lb, rank) > one + EPS * (1 + one))
        return 1;
    if (first_of(lb, rank) < one - EPS * (1 + one))
        return 0;
    return rank != VP_VRANK_MAKESPAN ||
           (inc->span <= lb->span + EPS * (1 + inc->span) && peak > 0 && !differs(peak, inc->peak));
}

vp_status vp__sim_metrics(const vp_schedule *s, const vp_cost_model *cm, vp_vgrid_metrics *out,
                          vp_error *err) {
    vp_sim *sim = NULL;
    vp_status rc = vp_simulate(s, cm, &sim, err);
    if (rc != VP_OK)
        return rc;
    *out = (vp_vgrid_metrics){.makespan = sim->makespan,
                              .span = vp_sim_longest_span(sim),
                              .bubble = sim->bubble,
                              .peak = sim->peak_max,
                              .complete = 1};
    for (int d = 0; sim->peak_bytes && d < sim->p; d++)
        if (sim->peak_bytes[d] > out->peak_bytes)
            out->peak_bytes = sim->peak_bytes[d];
    vp_sim_free(sim);
    return VP_OK;
}

int vp__vlimit_cannot_beat(const vp_cost_model *cm, int p, int m, double limit,
                           const vp_vgrid_metrics *best, vp_vrank rank) {
    double act = fmin(cm->act[0], cm->act[2 * p - 1]);
    if (!(act > 0) || limit / act > 4.0 * p * m)
        return 0;
    bound bd = make_bound(cm, p, m);
    vp_vgrid_metrics lb = lower_bounds(&bd, (int)floor(limit / act + EPS));
    return cannot_beat(&lb, 0, best, rank);
}

int vp__vblock_cannot_beat(const vp_cost_model *cm, int p, int m, int cap,
                           const vp_vgrid_metrics *best, vp_vrank rank) {
    bound bd = make_bound(cm, p, m);
    vp_vgrid_metrics lb = lower_bounds(&bd, cap);
    return cannot_beat(&lb, bd.predictable ? cap / 2.0 : 0, best, rank);
}

/* ---- the search state ------------------------------------------------------------- */

/* A kept block. */
typedef struct kept {
    vp_vgrid_metrics m;
    long index;
} kept;

/* What one block of a batch came to. */
typedef struct outcome {
    int measured; /* built and measured to the end */
    int built;
    vp_vgrid_metrics m;
    vp_status rc;
    vp_error err;
} outcome;

typedef struct search {
    const vp_spec *spec;
    const vp_vsearch_opts *opts;
    const vp_cost_model *cm;
    bound bd;
    long n;
    kept *levels; /* best_only: one (the block to beat has index -1) */
    int n_levels, cap_levels, have_best;
    long built;
    /* the batch being worked on */
    long first, count, next_claim;
    outcome out[BATCH];
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    int generation, busy, quit;
    int timed_out; /* opts->deadline_ms passed */
} search;

/* The kept block at peak (best_only: the overall best), or NULL. */
static const kept *kept_at(const search *sr, double peak) {
    if (sr->opts->best_only)
        return sr->have_best ? &sr->levels[0] : NULL;
    for (int i = 0; i < sr->n_levels; i++)
        if (!differs(sr->levels[i].m.peak, peak))
            return &sr->levels[i];
    return NULL;
}

/* Builds and measures block `index` into *o unless the results so far rule it out. */
static void try_block(search *sr, vp_vgrid *g, int (*t)[6], long index, outcome *o) {
    int p = sr->spec->p;
    vp_vblock vb;
    vp_vsearch_block(p, index, &vb);
    if (vp_vblock_slots(&vb, p, t) != 0)
        return;
    int cap = vp_vgrid_peak(g, (const int(*)[6])t);
    if (cap > sr->opts->max_cap || cap < sr->opts->min_cap)
        return;
    double peak = sr->bd.predictable ? cap / 2.0 : 0, limit = 0;
    if (sr->bd.predictable && sr->opts->max_peak > 0 && peak > sr->opts->max_peak + EPS)
        return;
    const kept *inc = sr->opts->best_only || sr->bd.predictable ? kept_at(sr, peak) : NULL;
    if (inc) {
        vp_vgrid_metrics lb = lower_bounds(&sr->bd, cap);
        if (cannot_beat(&lb, peak, &inc->m, sr->opts->rank))
            return;
        limit = first_of(&inc->m, sr->opts->rank);
    }
    o->built = 1;
    o->rc = vp_vgrid_measure(g, (const int(*)[6])t, sr->cm, limit, &o->m, &o->err);
    o->measured = o->rc == VP_OK && o->m.complete;
}

/* Keeps o (block index) when it is the best of its level (or overall). 0 ok, -1 no memory. */
static int keep(search *sr, const outcome *o, long index) {
    const vp_vsearch_opts *opts = sr->opts;
    if (opts->max_peak > 0 && o->m.peak > opts->max_peak + EPS)
        return 0;
    kept x = {.m = o->m, .index = index};
    kept *inc = (kept *)kept_at(sr, o->m.peak);
    if (inc) {
        if (ranks_before(&x.m, x.index, &inc->m, inc->index, opts->rank))
            *inc = x;
        return 0;
    }
    if (vp__grow((void **)&sr->levels, &sr->cap_levels, sr->n_levels + 1, sizeof *sr->levels))
        return -1;
    sr->levels[sr->n_levels++] = x;
    sr->have_best = 1;
    return 0;
}

/* ---- batches and workers ----------------------------------------------------------- */

/* Claims blocks of the current batch until none is left. */
static void work_batch(search *sr, vp_vgrid *g, int (*t)[6]) {
    for (;;) {
        pthread_mutex_lock(&sr->mu);
        long i = sr->next_claim < sr->count ? sr->next_claim++ : -1;
        pthread_mutex_unlock(&sr->mu);
        if (i < 0)
            return;
        try_block(sr, g, t, sr->first + i, &sr->out[i]);
    }
}

/* One worker's scratch: a grid for the shape and the block's slots. */
typedef struct scratch {
    search *sr;
    vp_vgrid *g;
    int (*t)[6];
} scratch;

static void *worker_main(void *arg) {
    scratch *sc = arg;
    search *sr = sc->sr;
    int seen = 0;
    pthread_mutex_lock(&sr->mu);
    for (;;) {
        while (!sr->quit && sr->generation == seen)
            pthread_cond_wait(&sr->go, &sr->mu);
        if (sr->quit)
            break;
        seen = sr->generation;
        pthread_mutex_unlock(&sr->mu);
        work_batch(sr, sc->g, sc->t);
        pthread_mutex_lock(&sr->mu);
        if (--sr->busy == 0)
            pthread_cond_signal(&sr->done);
    }
    pthread_mutex_unlock(&sr->mu);
    return NULL;
}

/* Runs one batch on the calling thread and the n_helpers workers. */
static void run_batch(search *sr, scratch *own, int n_helpers) {
    memset(sr->out, 0, sizeof sr->out);
    sr->next_claim = 0;
    if (n_helpers > 0) {
        pthread_mutex_lock(&sr->mu);
        sr->generation++;
        sr->busy = n_helpers;
        pthread_cond_broadcast(&sr->go);
        pthread_mutex_unlock(&sr->mu);
    }
    work_batch(sr, own->g, own->t);
    if (n_helpers > 0) {
        pthread_mutex_lock(&sr->mu);
        while (sr->busy > 0)
            pthread_cond_wait(&sr->done, &sr->mu);
        pthread_mutex_unlock(&sr->mu);
    }
}

/* 1 when, best_only, no block the memory cap allows can beat the kept one any more. */
static int settled(const search *sr) {
    if (!sr->opts->best_only || !sr->have_best)
        return 0;
    for (int k = sr->opts->min_cap > 1 ? sr->opts->min_cap : 1; k <= sr->opts->max_cap; k++) {
        vp_vgrid_metrics lb = lower_bounds(&sr->bd, k);
        if (!cannot_beat(&lb, sr->bd.predictable ? k / 2.0 : 0, &sr->levels[0].m, sr->opts->rank))
            return 0;
    }
    return 1;
}

/* Merges the batch in enumeration order. */
static vp_status merge_batch(search *sr, vp_error *err) {
    for (long i = 0; i < sr->count; i++) {
        const outcome *o = &sr->out[i];
        if (o->rc != VP_OK) {
            if (err)
                *err = o->err;
            return o->rc;
        }
        sr->built += o->built;
        if (o->measured && keep(sr, o, sr->first + i) != 0)
            return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    return VP_OK;
}

/* The batches, with helpers started when the spec allows threads. */
static vp_status run_all(search *sr, scratch *sc, int n_threads, vp_error *err) {
    pthread_t tid[MAX_THREADS];
    int started = 0;
    for (int i = 1; i < n_threads; i++) {
        if (pthread_create(&tid[i], NULL, worker_main, &sc[i]) != 0)
            break;
        started++;
    }
    vp_status rc = VP_OK;
    for (sr->first = 0; sr->first < sr->n && rc == VP_OK && !settled(sr); sr->first += BATCH) {
        if (sr->opts->deadline_ms > 0 && vp__now_ms() > sr->opts->deadline_ms) {
            sr->timed_out = 1;
            break;
        }
        sr->count = sr->n - sr->first < BATCH ? sr->n - sr->first : BATCH;
        run_batch(sr, &sc[0], started);
        rc = merge_batch(sr, err);
    }
    pthread_mutex_lock(&sr->mu);
    sr->quit = 1;
    pthread_cond_broadcast(&sr->go);
    pthread_mutex_unlock(&sr->mu);
    for (int i = 1; i <= started; i++)
        pthread_join(tid[i], NULL);
    return rc;
}

/* Levels by increasing peak into a new vp_vsearch (the kept block to beat left out). */
static vp_status finish(search *sr, vp_vsearch **out, vp_error *err) {
    vp_vsearch *res = vp__calloc(1, sizeof *res);
    if (!res)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    res->tried = sr->n;
    res->built = sr->built;
    res->seen = sr->first < sr->n ? sr->first : sr->n;
    res->timed_out = sr->timed_out;
    res->levels = vp__calloc((size_t)sr->n_levels + 1, sizeof *res->levels);
    if (!res->levels) {
        free(res);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    for (int i = 0; i < sr->n_levels; i++) {
        const kept *k = &sr->levels[i];
        if (k->index < 0)
            continue;
        vp_vsearch_level x = {.metrics = k->m, .index = k->index};
        vp_vsearch_block(sr->spec->p, k->index, &x.vblock);
        int j = res->n_levels++;
        for (; j > 0 && res->levels[j - 1].metrics.peak > x.metrics.peak; j--)
            res->levels[j] = res->levels[j - 1];
        res->levels[j] = x;
    }
    *out = res;
    return VP_OK;
}

/* Scratch for n threads (grids for the spec's shape). */
static vp_status make_scratch(search *sr, scratch *sc, int n, vp_error *err) {
    for (int i = 0; i < n; i++) {
        sc[i].sr = sr;
        sc[i].t = vp__calloc((size_t)sr->spec->p, sizeof *sc[i].t);
        if (!sc[i].t)
            return vp__fail(err, VP_ENOMEM, "out of memory");
        vp_status rc = vp_vgrid_new(sr->spec->p, sr->spec->m, &sc[i].g, err);
        if (rc != VP_OK)
            return rc;
        vp_vgrid_use_memo(sc[i].g, sr->spec->grids);
    }
    return VP_OK;
}

vp_status vp__vshape_costs(const vp_spec *spec, vp_cost_model **out, vp_error *err) {
    return vp__spec_cost_model(spec, (vp_shape){spec->p, 2 * spec->p, spec->m, VP_PLACE_V}, out,
                               err);
}

vp_status vp_vsearch_run(const vp_spec *spec, const vp_vsearch_opts *opts, vp_vsearch **out,
                         vp_error *err) {
    *out = NULL;
    if (spec->p < 2 || spec->m < 1)
        return vp__fail(err, VP_EINVAL, "a V search needs p >= 2 and m >= 1 (got p=%d, m=%d)",
                        spec->p, spec->m);
    search sr = {.spec = spec, .opts = opts, .n = vp_vsearch_size(spec->p)};
    vp_cost_model *cm = NULL;
    vp_status made = vp__vshape_costs(spec, &cm, err);
    if (made != VP_OK)
        return made;
    sr.cm = cm;
    sr.bd = make_bound(cm, spec->p, spec->m);
    long cells = (long)spec->p * (spec->m < 2 * spec->p + 8 ? spec->m : 2 * spec->p + 8);
    int n_threads = spec->threads < 1 || cells < SMALL_BUILD ? 1
                    : spec->threads > MAX_THREADS            ? MAX_THREADS
                                                             : spec->threads;
    scratch sc[MAX_THREADS] = {{0}};
    pthread_mutex_init(&sr.mu, NULL);
    pthread_cond_init(&sr.go, NULL);
    pthread_cond_init(&sr.done, NULL);
    vp_status rc = make_scratch(&sr, sc, n_threads, err);
    if (rc == VP_OK && opts->best_only && opts->beat) {
        outcome o = {.m = *opts->beat};
        rc = keep(&sr, &o, -1) == 0 ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
    }
    if (rc == VP_OK)
        rc = run_all(&sr, sc, n_threads, err);
    if (rc == VP_OK)
        rc = finish(&sr, out, err);
    for (int i = 0; i < n_threads; i++) {
        vp_vgrid_free(sc[i].g);
        free(sc[i].t);
    }
    pthread_cond_destroy(&sr.done);
    pthread_cond_destroy(&sr.go);
    pthread_mutex_destroy(&sr.mu);
    free(sr.levels);
    vp_cost_model_free(cm);
    return rc;
}
