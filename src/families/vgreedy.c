/* The greedy V search (families.h): passes placed one at a time, in time order, on the V
 * placement under a memory limit: the kind of schedule the Zero Bubble authors' automatic
 * schedulers produce, which repeat no building block.
 *
 * Device d runs four chains of passes, each in microbatch order: F⁰ (stage d), F¹ (stage
 * 2p-1-d), B¹ (the backward of stage 2p-1-d) and B⁰ (stage d), and the W of every B it has
 * run, oldest first. One run:
 *  - A device's next pass is the chain head whose dependency is placed and that can start
 *    first (at its dependency's end, plus c across devices, or at the device's free time),
 *    ties going to backwards (B¹ B⁰ F¹ F⁰) or, by option, to forwards (F¹ F⁰ B¹ B⁰).
 *  - A forward is admitted only while the device's activation stays under the limit,
 *    counted as the simulator counts it (what a pass takes when it starts, what it frees
 *    when it ends), running pending W first when they free enough. An F⁰ must also leave
 *    room for one F¹, so the oldest microbatch in flight always gets its F¹ and the greedy
 *    never deadlocks; before its first F¹ a device keeps a share of the limit free (the
 *    warm-up's depth, an option), for the chunk-1 activations that follow.
 *  - Of all devices, the one whose next pass starts first places it (ties: the lower
 *    device). No pass placed later can start earlier, so the idle time before it is final:
 *    pending W that fit it go there, and by option one more W when the wait would raise
 *    the worst idle time of any device (the authors' rule), delaying the pass.
 *  - When every chain is done, the remaining W.
 * The times a run keeps are those of the eager replay of the orders it writes (a pass
 * starts at the later of its device's free time and its dependency's end), so its span,
 * makespan and peak are the simulator's. Eight variants (warm-up share 1/2 or 2/5 of the
 * limit, backwards or forwards first, the extra W or not) are timed, each stopped as soon
 * as a device's span is sure to lose, and the best (the first on ties) is run again into
 * its schedule; large shapes pick their variant on a shortened run (SCREEN_CELLS). Nothing
 * runs when the V search's lower bound shows that no schedule within the limit can beat
 * the one in hand.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/families_internal.h"

#define EPS 1e-9

/* A device's four chains, numbered as their column in `next`; chunk 0 is stage d, chunk 1
 * stage 2p-1-d. */
enum { F0, F1, B1, B0, CHAINS };
static const int chunk_of[CHAINS] = {0, 1, 1, 0};

/* The options of one run. */
typedef struct variant {
    double warm; /* share of the limit an F⁰ leaves free before the device's first F¹
                    (rounded to chunk-1 activations, at least one) */
    int forward_first; /* ties go to forwards (F¹ F⁰ B¹ B⁰), else to backwards (B¹ B⁰ F¹ F⁰) */
    int fill;          /* one more W into a gap it does not fit when the wait would raise the
                          worst idle time of any device */
} variant;

/* The variants, in the order they are tried (the first wins ties). */
static const variant variants[] = {
    {0.5, 0, 0}, {0.5, 0, 1}, {0.5, 1, 0}, {0.5, 1, 1},
    {0.4, 0, 0}, {0.4, 0, 1}, {0.4, 1, 0}, {0.4, 1, 1},
};
#define N_VARIANTS ((int)(sizeof variants / sizeof variants[0]))

/* A device's pass durations and memory, by chain (W by chunk), in units. */
typedef struct dev_model {
    double dur[CHAINS], up[CHAINS], net[CHAINS];
    double wdur[2], wnet[2];
} dev_model;

typedef struct greedy {
    int p, m;
    const vp_cost_model *cm;
    dev_model *dm; /* [p] */
    double limit;
    variant v;
    vp_vrank rank;
    double stop; /* give up once a device's span (makespan ranking: its end) is sure to
                    exceed this (0: never) */
    int *next;   /* [p*CHAINS] next microbatch of each chain */
    double *rdy; /* [p*CHAINS] what the dependency of its next pass allows (ready), -1 while
                    not placed or when the chain is done */
    double *cur, *mem, *first, *idle, *left; /* [p] free time, memory, first start, idle
                                                after it, work still to place */
    double worst_idle, peak;
    int *wq, *wh, *wt; /* [p*2m] pending W (mb*2 + chunk) per device; head, tail [p] */
    double *tf, *tb;   /* [2p*m] ends of F and B by stage; < 0 while not placed */
    double *at;        /* [p] start of the device's next chain pass (INFINITY: none) */
    int *what, *wneed; /* [p] its chain, and the W it must run first for memory */
    int *tree, leaves; /* tournament over devices by `at`: the winner of each node (leaves
                          from index `leaves`, padded with devices >= p) */
    double *tkey;      /* the winner's `at` per node (padding: INFINITY) */
    vp_schedule *s;    /* the schedule written, when recording */
} greedy;

static int stage_of(const greedy *g, int chain, int d) {
    return chunk_of[chain] ? 2 * g->p - 1 - d : d;
}

static int is_forward(int chain) {
    return chain == F0 || chain == F1;
}

/* The pass durations and memory of every device under cm (2p stages, V placement). */
static void model_devices(greedy *g) {
    for (int d = 0; d < g->p; d++) {
        dev_model *x = &g->dm[d];
        for (int c = 0; c < CHAINS; c++) {
            int kind = is_forward(c) ? VP_OP_F : VP_OP_B, stage = stage_of(g, c, d);
            double down;
            x->dur[c] = vp_cost_model_pass_time(g->cm, kind, stage);
            vp_cost_model_pass_memory(g->cm, kind, stage, 0, &x->up[c], &down);
            x->net[c] = x->up[c] - down;
        }
        for (int k = 0; k < 2; k++) {
            int stage = k ? 2 * g->p - 1 - d : d;
            double up, down;
            x->wdur[k] = vp_cost_model_pass_time(g->cm, VP_OP_W, stage);
            vp_cost_model_pass_memory(g->cm, VP_OP_W, stage, 0, &up, &down);
            x->wnet[k] = up - down;
        }
    }
}

/* Earliest start the dependency of chain's pass of microbatch j allows on device d, or -1
 * while that dependency is not placed. The bottom of the V (F⁰ to F¹ and B¹ to B⁰ on
 * device p-1) and the loss (F¹ to B¹ on device 0) stay on the device; every other
 * dependency crosses to a neighbour and costs c. */
static double ready(const greedy *g, int chain, int d, int j) {
    int p = g->p, s = stage_of(g, chain, d);
    size_t m = (size_t)g->m;
    double end;
    if (chain == F0 && d == 0)
        return 0;
    if (is_forward(chain))
        end = g->tf[(size_t)(s - 1) * m + j];
    else if (s == 2 * p - 1)
        end = g->tf[(size_t)s * m + j];
    else
        end = g->tb[(size_t)(s + 1) * m + j];
    int local =
        (chain == F1 && d == p - 1) || (chain == B0 && d == p - 1) || (chain == B1 && d == 0);
    return end < 0 || local ? end : end + g->cm->c;
}

/* Recomputes what device d's chain head is ready at. */
static void refresh(greedy *g, int d, int chain) {
    int j = g->next[d * CHAINS + chain];
    g->rdy[d * CHAINS + chain] = j < g->m ? ready(g, chain, d, j) : -1;
}

/* The chain whose head may wait for the pass of chain just placed on device d: the next
 * device along the V, or the same device at its bottom and at the loss; *e receives its
 * device. -1 for B⁰ on device 0 (nothing waits). */
static int dependent(const greedy *g, int chain, int d, int *e) {
    static const int turn[CHAINS] = {F1, B1, B0, -1}; /* where each chain turns */
    int down = chain == F0 || chain == B1, end = down ? g->p - 1 : 0;
    *e = d == end ? d : down ? d + 1 : d - 1;
    return d == end ? turn[chain] : chain;
}

/* Memory a forward of chain needs free when it starts on device d: its own peak, and an
 * F⁰ also room for one chunk-1 activation after it (before the device's first F¹: for the
 * variant's share of the limit in whole chunk-1 activations). */
static double room_for(const greedy *g, int chain, int d) {
    const dev_model *x = &g->dm[d];
    if (chain == F1)
        return x->up[F1];
    double keep = 1;
    if (g->next[d * CHAINS + F1] == 0 && x->up[F1] > 0) {
        double most = floor((g->limit - x->net[F0]) / x->up[F1] + EPS); /* F⁰ still fits */
        keep = fmax(1, fmin(most, floor(g->v.warm * g->limit / x->up[F1] + 0.5)));
    }
    return fmax(x->up[F0], x->net[F0] + keep * x->up[F1]);
}

/* ---- the tournament: the device whose next pass starts first ---------------------- */

/* Sets device d's leaf to its `at` and replays the matches above it (ties: the lower
 * device, which sits in the left subtree), up to the first node whose result stays. */
static void tree_update(greedy *g, int d) {
    int x = g->leaves + d;
    g->tkey[x] = g->at[d];
    for (x /= 2; x >= 1; x /= 2) {
        int l = 2 * x + (g->tkey[2 * x + 1] < g->tkey[2 * x]);
        if (g->tree[x] == g->tree[l] && g->tkey[x] == g->tkey[l] && g->tree[l] != d)
            break;
        g->tkey[x] = g->tkey[l];
        g->tree[x] = g->tree[l];
    }
}

/* ---- choosing a device's next pass --------------------------------------------------- */

/* Earliest start of a forward of chain on device d that may first run pending W for
 * memory (from t, the device's free time); *w receives how many. -1 when even every
 * pending W would not make room. */
static double forward_start(const greedy *g, int chain, int d, int *w) {
    const dev_model *x = &g->dm[d];
    const int *q = &g->wq[(size_t)d * 2 * g->m];
    double level = g->mem[d], need = room_for(g, chain, d), t = g->cur[d];
    for (*w = 0; level + need > g->limit + EPS; (*w)++) {
        if (g->wh[d] + *w >= g->wt[d])
            return -1;
        int chunk = q[g->wh[d] + *w] & 1;
        level += x->wnet[chunk];
        t += x->wdur[chunk];
    }
    return t;
}

/* Chooses device d's next chain pass: the one that can start first, ties to the
 * variant's preference (at, what, wneed). */
static void plan_device(greedy *g, int d) {
    static const int order[2][CHAINS] = {{B1, B0, F1, F0}, {F1, F0, B1, B0}};
    g->at[d] = INFINITY;
    g->what[d] = -1;
    for (int x = 0; x < CHAINS; x++) {
        int chain = order[g->v.forward_first][x], w = 0;
        double r = g->rdy[d * CHAINS + chain];
        double t = r < 0 ? -1 : is_forward(chain) ? forward_start(g, chain, d, &w) : g->cur[d];
        if (t < 0)
            continue;
        double start = r > t ? r : t;
        if (start < g->at[d] - EPS * (1 + start)) {
            g->at[d] = start;
            g->what[d] = chain;
            g->wneed[d] = w;
        }
    }
    tree_update(g, d);
}

/* ---- placing passes ------------------------------------------------------------------ */

/* Places a pass of duration dur and memory (up, net) on device d at the later of its free
 * time and r; returns its end. */
static double occupy(greedy *g, int d, double r, double dur, double up, double net) {
    double start = r > g->cur[d] ? r : g->cur[d];
    if (g->first[d] < 0) {
        g->first[d] = start;
    } else {
        g->idle[d] += start - g->cur[d];
        g->worst_idle = g->idle[d] > g->worst_idle ? g->idle[d] : g->worst_idle;
    }
    g->cur[d] = start + dur;
    g->left[d] -= dur;
    g->peak = g->mem[d] + up > g->peak ? g->mem[d] + up : g->peak;
    g->mem[d] += net;
    return g->cur[d];
}

/* Places device d's oldest pending W. */
static vp_status place_w(greedy *g, int d) {
    int item = g->wq[(size_t)d * 2 * g->m + g->wh[d]++], chunk = item & 1;
    occupy(g, d, 0, g->dm[d].wdur[chunk], 0, g->dm[d].wnet[chunk]);
    int stage = chunk ? 2 * g->p - 1 - d : d;
    return g->s ? vp_schedule_push_pass(g->s, d, VP_OP_W, stage, item >> 1) : VP_OK;
}

/* Places the next pass of chain on device d. */
static vp_status place_chain(greedy *g, int d, int chain) {
    int j = g->next[d * CHAINS + chain]++, stage = stage_of(g, chain, d);
    const dev_model *x = &g->dm[d];
    double end = occupy(g, d, ready(g, chain, d, j), x->dur[chain], x->up[chain], x->net[chain]);
    size_t at = (size_t)stage * g->m + j;
    if (is_forward(chain)) {
        g->tf[at] = end;
    } else {
        g->tb[at] = end;
        g->wq[(size_t)d * 2 * g->m + g->wt[d]++] = 2 * j + chunk_of[chain];
    }
    vp_op_kind kind = is_forward(chain) ? VP_OP_F : VP_OP_B;
    return g->s ? vp_schedule_push_pass(g->s, d, kind, stage, j) : VP_OK;
}

/* 1 when the variant puts one more W into the gap before a pass starting at `start`. */
static int fill_more(const greedy *g, int d, double start) {
    double gap = start - g->cur[d];
    return g->v.fill && g->wh[d] < g->wt[d] && gap > EPS * (1 + start) &&
           gap > g->worst_idle - g->idle[d] + EPS;
}

/* 1 when pending W fits the gap before a pass starting at `start` on device d. */
static int w_fits(const greedy *g, int d, double start) {
    if (g->wh[d] >= g->wt[d])
        return 0;
    int chunk = g->wq[(size_t)d * 2 * g->m + g->wh[d]] & 1;
    return g->cur[d] + g->dm[d].wdur[chunk] <= start + EPS * (1 + start);
}

/* Places the pass of device d, which starts first of all, with the W before it; 1 when
 * the device is sure to lose against g->stop. */
static int step(greedy *g, int d, vp_status *rc) {
    double start = g->at[d];
    for (int w = 0; w < g->wneed[d] && *rc == VP_OK; w++)
        *rc = place_w(g, d);
    while (*rc == VP_OK && w_fits(g, d, start))
        *rc = place_w(g, d);
    if (*rc == VP_OK && fill_more(g, d, start))
        *rc = place_w(g, d);
    int chain = g->what[d], e, next = dependent(g, chain, d, &e);
    if (*rc == VP_OK)
        *rc = place_chain(g, d, chain);
    refresh(g, d, chain);
    if (next >= 0)
        refresh(g, e, next);
    plan_device(g, d);
    if (e != d)
        plan_device(g, e);
    double lb = g->cur[d] + g->left[d] - (g->rank == VP_VRANK_SPAN ? g->first[d] : 0);
    return g->stop > 0 && lb > g->stop * (1 + EPS) + EPS;
}

/* ---- one run ----------------------------------------------------------------------- */

/* Work of device d, all passes. */
static double device_work(const greedy *g, int d) {
    const dev_model *x = &g->dm[d];
    return g->m * (x->dur[F0] + x->dur[F1] + x->dur[B1] + x->dur[B0] + x->wdur[0] + x->wdur[1]);
}

/* Resets g for a run of variant v, recording into a new schedule when record is set. */
static vp_status reset(greedy *g, variant v, int record) {
    int p = g->p, m = g->m;
    g->v = v;
    g->worst_idle = g->peak = 0;
    memset(g->next, 0, (size_t)p * CHAINS * sizeof *g->next);
    for (size_t x = 0; x < (size_t)2 * p * m; x++)
        g->tf[x] = g->tb[x] = -1;
    for (int d = 0; d < p; d++) {
        g->cur[d] = g->mem[d] = g->idle[d] = 0;
        g->first[d] = -1;
        g->wh[d] = g->wt[d] = 0;
        g->left[d] = device_work(g, d);
    }
    for (int x = 2 * g->leaves - 1; x >= 1; x--) {
        g->tree[x] = x >= g->leaves ? x - g->leaves : g->tree[2 * x];
        g->tkey[x] = INFINITY;
    }
    for (int d = 0; d < p; d++) {
        for (int c = 0; c < CHAINS; c++)
            refresh(g, d, c);
        plan_device(g, d);
    }
    g->s = NULL;
    if (!record)
        return VP_OK;
    vp_shape shape = {.p = p, .S = 2 * p, .m = m, .placement = VP_PLACE_V};
    return vp_schedule_new("v-greedy", shape, &g->s, NULL);
}

/* The figures of the run just made (every pass placed). */
static vp_vgrid_metrics run_metrics(const greedy *g) {
    vp_vgrid_metrics x = {.peak = g->peak, .complete = 1};
    double busy = 0;
    for (int d = 0; d < g->p; d++) {
        busy += device_work(g, d);
        x.makespan = g->cur[d] > x.makespan ? g->cur[d] : x.makespan;
        x.span = g->cur[d] - g->first[d] > x.span ? g->cur[d] - g->first[d] : x.span;
    }
    x.bubble = x.span > 0 ? 1 - busy / g->p / x.span : 0;
    return x;
}

/* One run of variant v: VP_OK with *out complete, or out->complete = 0 when it stopped
 * against g->stop or found no pass to place. VP_ENOMEM. */
static vp_status run(greedy *g, variant v, int record, vp_vgrid_metrics *out) {
    *out = (vp_vgrid_metrics){0};
    vp_status rc = reset(g, v, record);
    for (int d = g->tree[1]; rc == VP_OK && g->tkey[1] < INFINITY; d = g->tree[1])
        if (step(g, d, &rc))
            return rc;
    for (int d = 0; d < g->p; d++) {
        for (int c = 0; c < CHAINS; c++)
            if (g->next[d * CHAINS + c] < g->m)
                return rc;
        while (rc == VP_OK && g->wh[d] < g->wt[d])
            rc = place_w(g, d);
    }
    if (rc == VP_OK)
        *out = run_metrics(g);
    return rc;
}

/* ---- the search over variants -------------------------------------------------------- */

static void greedy_free(greedy *g) {
    free(g->next);
    free(g->rdy);
    free(g->cur);
    free(g->mem);
    free(g->first);
    free(g->idle);
    free(g->left);
    free(g->wq);
    free(g->wh);
    free(g->wt);
    free(g->tf);
    free(g->tb);
    free(g->at);
    free(g->what);
    free(g->wneed);
    free(g->dm);
    free(g->tree);
    free(g->tkey);
}

static vp_status greedy_init(greedy *g, const vp_spec *spec, const vp_cost_model *cm,
                             const vp_vgreedy_opts *opts, vp_error *err) {
    int p = spec->p;
    size_t cells = (size_t)2 * p * (size_t)spec->m;
    *g = (greedy){.p = p, .m = spec->m, .cm = cm, .limit = opts->limit, .rank = opts->rank};
    for (g->leaves = 1; g->leaves < p; g->leaves *= 2)
        ;
    g->next = vp__calloc((size_t)p * CHAINS, sizeof *g->next);
    g->rdy = vp__calloc((size_t)p * CHAINS, sizeof *g->rdy);
    g->cur = vp__calloc((size_t)p, sizeof *g->cur);
    g->mem = vp__calloc((size_t)p, sizeof *g->mem);
    g->first = vp__calloc((size_t)p, sizeof *g->first);
    g->idle = vp__calloc((size_t)p, sizeof *g->idle);
    g->left = vp__calloc((size_t)p, sizeof *g->left);
    g->wq = vp__calloc(cells, sizeof *g->wq);
    g->wh = vp__calloc((size_t)p, sizeof *g->wh);
    g->wt = vp__calloc((size_t)p, sizeof *g->wt);
    g->tf = vp__calloc(cells, sizeof *g->tf);
    g->tb = vp__calloc(cells, sizeof *g->tb);
    g->at = vp__calloc((size_t)p, sizeof *g->at);
    g->what = vp__calloc((size_t)p, sizeof *g->what);
    g->wneed = vp__calloc((size_t)p, sizeof *g->wneed);
    g->dm = vp__calloc((size_t)p, sizeof *g->dm);
    g->tree = vp__calloc((size_t)2 * g->leaves, sizeof *g->tree);
    g->tkey = vp__calloc((size_t)2 * g->leaves, sizeof *g->tkey);
    if (g->next && g->rdy && g->cur && g->mem && g->first && g->idle && g->left && g->wq && g->wh &&
        g->wt && g->tf && g->tb && g->at && g->what && g->wneed && g->dm && g->tree && g->tkey) {
        model_devices(g);
        return VP_OK;
    }
    greedy_free(g);
    return vp__fail(err, VP_ENOMEM, "out of memory");
}

/* VP_EINVAL unless every device can hold one microbatch's two chunks under the limit; a
 * limit <= 0 becomes the least that holds them. */
static vp_status check_limit(greedy *g, vp_error *err) {
    double most = 0;
    g->v.warm = 0;
    for (int d = 0; d < g->p; d++) {
        double need = room_for(g, F0, d);
        most = need > most ? need : most;
    }
    if (g->limit <= 0)
        g->limit = most;
    if (isfinite(g->limit) && most <= g->limit + EPS)
        return VP_OK;
    return vp__fail(err, VP_EINVAL,
                    "a greedy V schedule needs a memory limit of at least %g units (one "
                    "microbatch's two chunks on a device), got %g",
                    most, g->limit);
}

/* The first figure a ranking compares. */
static double first_of(const vp_vgrid_metrics *x, vp_vrank rank) {
    return rank == VP_VRANK_SPAN ? x->span : x->makespan;
}

/* The index of the variant of [first, end) that ranks first (before *best when have_best),
 * or -1. */
static vp_status best_variant(greedy *g, int first, int end, vp_vgrid_metrics *best, int have_best,
                              int *winner) {
    *winner = -1;
    for (int i = first; i < end; i++) {
        vp_vgrid_metrics x;
        g->stop = have_best ? first_of(best, g->rank) : 0;
        vp_status rc = run(g, variants[i], 0, &x);
        if (rc != VP_OK)
            return rc;
        if (x.complete && (!have_best || vp_vsearch_ranks_before(&x, best, g->rank))) {
            *best = x;
            have_best = 1;
            *winner = i;
        }
    }
    return VP_OK;
}

/* Runs the winner again into its schedule, validated, with the simulator's figures. */
static vp_status record(greedy *g, int winner, vp_schedule **out, vp_vgrid_metrics *metrics,
                        vp_error *err) {
    vp_vgrid_metrics x;
    g->stop = 0;
    vp_status rc = run(g, variants[winner], 1, &x);
    if (rc == VP_OK && !x.complete)
        rc = vp__fail(err, VP_EINVAL, "the greedy V search's best run did not complete");
    else if (rc != VP_OK)
        rc = vp__fail(err, rc, "out of memory");
    if (rc == VP_OK)
        rc = vp_schedule_validate(g->s, err);
    if (rc == VP_OK)
        rc = vp__sim_metrics(g->s, g->cm, metrics, err);
    if (rc != VP_OK) {
        vp_schedule_free(g->s);
        g->s = NULL;
    }
    *out = g->s;
    g->s = NULL;
    return rc;
}

/* Shapes of more device-microbatches choose their variant on a run shortened to 2p + 8
 * microbatches (the warm-up, the cool-down and a few periods of the stable phase between),
 * then time only that one at full length: about four full runs instead of nine. */
#define SCREEN_CELLS 8192L

/* The variant of g's search: every one timed in full, or for a large shape (SCREEN_CELLS)
 * the one that ranks first on the shortened run, timed in full. *winner: the variant that
 * ranks before *best (when have_best), or -1. */
static vp_status choose(greedy *g, const vp_spec *spec, vp_vgrid_metrics *best, int have_best,
                        int *winner, vp_error *err) {
    int m = 2 * g->p + 8;
    if ((long)g->p * g->m <= SCREEN_CELLS || g->m <= m)
        return best_variant(g, 0, N_VARIANTS, best, have_best, winner);
    vp_spec shorter = *spec;
    shorter.m = m;
    vp_vgreedy_opts opts = {.limit = g->limit, .rank = g->rank};
    vp_vgrid_metrics x;
    greedy s;
    int pick = -1;
    vp_status rc = greedy_init(&s, &shorter, g->cm, &opts, err);
    if (rc != VP_OK)
        return rc;
    rc = best_variant(&s, 0, N_VARIANTS, &x, 0, &pick);
    greedy_free(&s);
    *winner = -1;
    return rc == VP_OK && pick >= 0 ? best_variant(g, pick, pick + 1, best, have_best, winner) : rc;
}

vp_status vp_vgreedy_run(const vp_spec *spec, const vp_vgreedy_opts *opts, vp_schedule **out,
                         vp_vgrid_metrics *metrics, vp_error *err) {
    *out = NULL;
    if (spec->p < 2 || spec->m < 1)
        return vp__fail(err, VP_EINVAL, "a V search needs p >= 2 and m >= 1 (got p=%d, m=%d)",
                        spec->p, spec->m);
    vp_cost_model *cm = NULL;
    vp_status rc = vp__vshape_costs(spec, &cm, err);
    greedy g;
    if (rc == VP_OK)
        rc = greedy_init(&g, spec, cm, opts, err);
    if (rc != VP_OK) {
        vp_cost_model_free(cm);
        return rc;
    }
    rc = check_limit(&g, err);
    vp_vgrid_metrics best = opts->beat ? *opts->beat : (vp_vgrid_metrics){0};
    int winner = -1;
    if (rc == VP_OK &&
        !(opts->beat && vp__vlimit_cannot_beat(cm, spec->p, spec->m, g.limit, opts->beat, g.rank)))
        rc = choose(&g, spec, &best, opts->beat != NULL, &winner, err);
    if (rc == VP_ENOMEM)
        rc = vp__fail(err, rc, "out of memory");
    if (rc == VP_OK && winner >= 0)
        rc = record(&g, winner, out, metrics, err);
    greedy_free(&g);
    vp_cost_model_free(cm);
    return rc;
}
