/* The compacted V pattern (families.h): the construction of the V-Min and V-Half
 * generators of the Controllable Memory authors. A V block's passes keep the block's rhythm
 * in the stable phase; only the warm-up and the cool-down are compacted, greedily, into
 * free unit slots that raise no device's memory above what the pattern holds.
 *
 * Device d runs, in unit slots, four chains of passes of one chunk each: F⁰ F¹ B¹ B⁰ at the
 * block's slots of microbatch 0 plus 6j for microbatch j, and the W of its backwards.
 * Putting the W: each free slot, in time order, takes one pending W (one whose B has run),
 * the oldest first; those still pending go after the device's last pass. One construction:
 *  1. Lay the pattern out for m microbatches and put the W. The cap is the most memory any
 *     device holds.
 *  2. Visit every pass in time order (devices in order within a slot). The warm-up (the
 *     passes visited before device 0's first B⁰) and the cool-down (those visited after the
 *     first F⁰ of the last microbatch) move to the earliest free slot after their
 *     dependency (the pass feeding it, the same device's pass of the chain before it on the
 *     V, the previous microbatch of its chain; a W: the device's k-th B in time for its
 *     k-th W) at which the device's memory stays within the cap; the stable phase between
 *     stays. Then squeeze at unit cost: every pass to the earliest slot its device order
 *     and dependencies allow.
 *  3. Drop the W and compact the cool-down alone once more, a W now releasing its memory
 *     in whichever slot is free first (the cap recounted so); put the W and squeeze.
 *  4. Drop the W and put them again per chunk, chunk 1's first when both are pending.
 * The device orders of that layout are the schedule; the simulator times it with the
 * spec's costs. Memory is counted as the simulator counts it (an F takes its activation,
 * a B frees all but what its W keeps, the W the rest), with the deltas of the device's
 * chunk-0 stage for a W whose chunk the count does not follow (the V families' cost models
 * give every stage the same).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "families/families_internal.h"

#define EPS 1e-9

/* A device's chains: the four passes, then its W: every W in W1 while they are not split
 * by chunk (steps 1-3), chunk 1's in W1 and chunk 0's in W0 once they are (step 4). A pass
 * is coded chain * 2m + its index in the chain. */
enum { F0, F1, B1, B0, W1, W0, CHAINS };

typedef struct layout {
    int p, m, n;  /* devices, microbatches, slots per device */
    int *at;      /* [p][7m] slot of every pass: F⁰ F¹ B¹ B⁰ (m each), W1 (2m), W0 (m) */
    int *occ;     /* [n][p] pass code in every slot of every device, -1 when free */
    int *end;     /* [p] the device's last slot in use */
    double *lvl;  /* [p][n] the device's memory after each slot */
    int *pend;    /* [p][n] W pending after each slot (W released in free slots) */
    int *fresh;   /* [p][4m] squeeze: the new slots of F⁰ F¹ B¹ B⁰ */
    double *ends; /* [p][4m] timing: the ends of F⁰ F¹ B¹ B⁰ */
    double *dev;  /* [4p] timing: each device's free time, first start, work left, memory */
    double up[CHAINS], net[CHAINS], cap;
    int split;    /* the W are split by chunk */
    int released; /* the W are not laid out: each free slot releases one pending */
} layout;

static const int chunk_of[CHAINS] = {0, 1, 1, 0, 1, 0};

/* The stage of a chain's passes on device d. */
static int stage_of(const layout *x, int chain, int d) {
    return chunk_of[chain] ? 2 * x->p - 1 - d : d;
}

static int *at(layout *x, int d, int chain, int j) {
    return &x->at[(size_t)d * 7 * x->m + (chain <= W1 ? chain : 6) * (size_t)x->m + j];
}

static int *cell(layout *x, int d, int s) {
    return &x->occ[(size_t)s * x->p + d];
}

static int chain_len(const layout *x, int chain) {
    return chain < W1 || x->split ? x->m : chain == W1 ? 2 * x->m : 0;
}

static int imax(int a, int b) {
    return a > b ? a : b;
}

/* ---- memory ------------------------------------------------------------------------ */

/* The device's memory before slot s. */
static double before(const layout *x, int d, int s) {
    return s > 0 ? x->lvl[(size_t)d * x->n + s - 1] : 0;
}

/* Replays device d's memory from slot t to its last slot, with pass code moved from slot
 * s to t (code -1: nothing moved), writing the levels when write is set. Stops once the
 * replay is past s and as many W are pending as before (from there on nothing differs).
 * Returns 0 when a level exceeds the cap. */
static int replay(layout *x, int d, int t, int s, int code, int write) {
    double lv = before(x, d, t);
    int pend = t > 0 ? x->pend[(size_t)d * x->n + t - 1] : 0;
    for (int u = t; u <= x->end[d]; u++) {
        size_t k = (size_t)d * x->n + u;
        int c = u == t && code >= 0 ? code : u == s ? -1 : *cell(x, d, u);
        if (c >= 0) {
            int chain = c / (2 * x->m);
            lv += x->net[chain];
            pend += x->released && (chain == B1 || chain == B0);
        } else if (x->released && pend > 0) {
            lv += x->net[W1];
            pend--;
        }
        if (!write && lv > x->cap + EPS)
            return 0;
        if (u > s && code >= 0 && pend == x->pend[k])
            return 1;
        if (write) {
            x->lvl[k] = lv;
            x->pend[k] = pend;
        }
    }
    return 1;
}

/* The most memory any device holds (levels recounted). */
static double peak_of(layout *x) {
    double most = 0;
    for (int d = 0; d < x->p; d++) {
        replay(x, d, 0, -1, -1, 1);
        for (int u = 0; u <= x->end[d]; u++)
            most = fmax(most, x->lvl[(size_t)d * x->n + u]);
    }
    return most;
}

/* ---- laying passes out ------------------------------------------------------------- */

/* Rebuilds the slot table and last slots from the slots of the chains below `chains`. */
static void index_slots(layout *x, int chains) {
    memset(x->occ, -1, (size_t)x->p * x->n * sizeof *x->occ);
    for (int d = 0; d < x->p; d++) {
        x->end[d] = 0;
        for (int c = 0; c < chains; c++)
            for (int j = 0; j < chain_len(x, c); j++) {
                int s = *at(x, d, c, j);
                *cell(x, d, s) = c * 2 * x->m + j;
                x->end[d] = s > x->end[d] ? s : x->end[d];
            }
    }
}

/* Puts the W of device d into its free slots, oldest first; per chunk (chunk 1's first)
 * when split, else in one chain of the B's order. */
static void put_w(layout *x, int d) {
    int split = x->split;
    int pend[2] = {0, 0}, done[2] = {0, 0}, end = x->end[d], u;
    for (u = 0; u <= end; u++) {
        int c = *cell(x, d, u);
        if (c >= 0) {
            int chain = c / (2 * x->m);
            if (chain == B1 || chain == B0)
                pend[split && chain == B0]++;
        } else {
            for (int k = 0; k < 2; k++)
                if (pend[k] > 0) {
                    *at(x, d, W1 + k, done[k]++) = u;
                    pend[k]--;
                    break;
                }
        }
    }
    for (int k = 0; k < 2; k++)
        for (; pend[k] > 0; pend[k]--)
            *at(x, d, W1 + k, done[k]++) = u++;
}

/* Puts the W of every device (per chunk when split) and indexes the slots. */
static void put_all_w(layout *x, int split) {
    x->split = split;
    x->released = 0;
    index_slots(x, B0 + 1);
    for (int d = 0; d < x->p; d++)
        put_w(x, d);
    index_slots(x, CHAINS);
}

/* The slot of the device's k-th B in time (k < 2m): of the k + 1 earliest, i are B¹ and
 * k + 1 - i are B⁰ (each chain in time order), i found by bisection. */
static int kth_b(layout *x, int d, int k) {
    const int *a = at(x, d, B1, 0), *b = at(x, d, B0, 0);
    int lo = imax(0, k + 1 - x->m), hi = k + 1 < x->m ? k + 1 : x->m;
    while (lo < hi) {
        int i = (lo + hi) / 2; /* a[i] is among them when it precedes b[k - i] */
        if (a[i] < b[k - i])
            lo = i + 1;
        else
            hi = i;
    }
    return imax(lo > 0 ? a[lo - 1] : -1, lo <= k ? b[k - lo] : -1);
}

/* The latest slot among the dependencies of pass (chain, j) on device d: the pass feeding
 * it (the previous device along the V, or the same device's pass of the chain before it),
 * the previous microbatch of its chain; -1 for none. */
static int dependency(layout *x, int d, int chain, int j) {
    static const int step[B0 + 1] = {-1, 1, -1, 1}; /* the neighbour feeding each chain */
    int dep = j > 0 ? *at(x, d, chain, j - 1) : -1;
    if (chain >= W1)
        return chain == W1 && !x->split ? imax(dep, kth_b(x, d, j)) : dep;
    int e = d + step[chain];
    if (chain > F0)
        dep = imax(dep, *at(x, d, chain - 1, j));
    if (e >= 0 && e < x->p)
        dep = imax(dep, *at(x, e, chain, j));
    return dep;
}

/* ---- compacting -------------------------------------------------------------------- */

/* The earliest free slot in [lo, s) that pass code (from slot s of device d) can move to
 * without a level over the cap, W laid out: a level between the new slot and s rises by
 * what the pass leaves, so scanning down from s the first level that cannot take it ends
 * the search. s when none. */
static int earliest_laid(layout *x, int d, int code, int lo, int s) {
    int chain = code / (2 * x->m), best = s;
    double top = -INFINITY;
    for (int t = s - 1; t >= lo; t--) {
        int c = *cell(x, d, t);
        if (c >= 0) {
            top = fmax(top, before(x, d, t) + x->up[c / (2 * x->m)]);
            if (top + x->net[chain] > x->cap + EPS)
                break;
        } else if (before(x, d, t) + x->up[chain] <= x->cap + EPS) {
            best = t;
        }
    }
    return best;
}

/* The same with the W released in free slots: the first free slot whose replay stays
 * within the cap. */
static int earliest_released(layout *x, int d, int code, int lo, int s) {
    for (int t = lo; t < s; t++)
        if (*cell(x, d, t) < 0 && replay(x, d, t, s, code, 0))
            return t;
    return s;
}

/* Moves pass code of device d from slot s to t < s. */
static void move(layout *x, int d, int code, int s, int t) {
    int chain = code / (2 * x->m);
    if (x->released) {
        replay(x, d, t, s, code, 1);
    } else {
        for (int u = t; u < s; u++)
            x->lvl[(size_t)d * x->n + u] += x->net[chain];
    }
    *cell(x, d, s) = -1;
    *cell(x, d, t) = code;
    *at(x, d, chain, code % (2 * x->m)) = t;
}

/* The pass that ends the stable phase, which starts with device 0's first B⁰ at slot *s:
 * the first F⁰ of the last microbatch after it in time order (slot into *s, device into
 * *d); 0 when none (the stable phase lasts to the end). Nothing moves in the stable phase,
 * so it is found without visiting it. */
static int cool_down_start(layout *x, int *s, int *d) {
    int first = x->n, dev = -1;
    for (int e = 0; e < x->p; e++) {
        int t = *at(x, e, F0, x->m - 1);
        if ((t > *s || (t == *s && e > 0)) && t < first) {
            first = t;
            dev = e;
        }
    }
    *s = first;
    *d = dev;
    return dev >= 0;
}

/* Step 2 (warm_up set) or 3: visits every pass in time order and moves the warm-up's (when
 * warm_up) and the cool-down's to their earliest slot within the cap. */
static void compact(layout *x, int warm_up) {
    int cool = 0; /* past the stable phase */
    for (int s = 0; s < x->n; s++)
        for (int d = 0; d < x->p; d++) {
            int code = *cell(x, d, s);
            if (code < 0)
                continue;
            int chain = code / (2 * x->m), j = code % (2 * x->m);
            if (!cool && chain == B0 && d == 0) {
                if (!cool_down_start(x, &s, &d))
                    return;
                cool = 1;
                continue;
            }
            if (!cool && !warm_up)
                continue;
            int lo = dependency(x, d, chain, j) + 1;
            int t = x->released ? earliest_released(x, d, code, lo, s)
                                : earliest_laid(x, d, code, lo, s);
            if (t < s)
                move(x, d, code, s, t);
        }
}

/* Every pass laid out to the earliest slot its device order and its dependencies allow at
 * unit cost, visited in time order; the new slots of F⁰ F¹ B¹ B⁰ kept (the W are put
 * again after it). */
static void squeeze(layout *x) {
    size_t m = (size_t)x->m;
    for (int d = 0; d < x->p; d++)
        x->end[d] = -1; /* here: the device's last new slot */
    for (int s = 0; s < x->n; s++)
        for (int d = 0; d < x->p; d++) {
            int code = *cell(x, d, s);
            if (code < 0)
                continue;
            int chain = code / (2 * x->m), j = code % (2 * x->m), e = d + (chain & 1 ? 1 : -1);
            int t = x->end[d] + 1;
            if (chain < W1) {
                size_t me = (size_t)d * 4 * m + chain * m + j;
                if (chain > F0)
                    t = imax(t, x->fresh[me - m] + 1);
                if (e >= 0 && e < x->p)
                    t = imax(t, x->fresh[(size_t)e * 4 * m + chain * m + j] + 1);
                x->fresh[me] = t;
            }
            x->end[d] = t;
        }
    for (int d = 0; d < x->p; d++)
        memcpy(at(x, d, F0, 0), &x->fresh[(size_t)d * 4 * m], 4 * m * sizeof *x->fresh);
}

/* ---- the construction -------------------------------------------------------------- */

/* The memory deltas of device 0's passes under cm (every device's, for the V families). */
static void model_memory(layout *x, const vp_cost_model *cm) {
    int stage[B0 + 1] = {0, 2 * x->p - 1, 2 * x->p - 1, 0};
    for (int c = 0; c <= B0; c++) {
        double down;
        vp_cost_model_pass_memory(cm, c < B1 ? VP_OP_F : VP_OP_B, stage[c], 0, &x->up[c], &down);
        x->net[c] = x->up[c] - down;
    }
    double up, down;
    vp_cost_model_pass_memory(cm, VP_OP_W, 0, 0, &up, &down);
    x->up[W1] = x->up[W0] = up;
    x->net[W1] = x->net[W0] = up - down;
}

/* Steps 1-4 from the block's slots of microbatch 0 (columns F⁰ F¹ B¹ B⁰). */
static void construct(layout *x, const int (*slots)[6]) {
    for (int d = 0; d < x->p; d++)
        for (int c = 0; c <= B0; c++)
            for (int j = 0; j < x->m; j++)
                *at(x, d, c, j) = slots[d][c] + 6 * j;
    put_all_w(x, 0);
    x->cap = peak_of(x);
    compact(x, 1);
    squeeze(x);
    index_slots(x, B0 + 1);
    x->released = 1;
    x->cap = peak_of(x);
    compact(x, 0);
    put_all_w(x, 0);
    squeeze(x);
    put_all_w(x, 1);
}

/* The figures of the layout under cm, timed as the simulator times the schedule it makes (a
 * pass starts once its device is free and the pass feeding it has ended, plus c across
 * devices; the V turns at device p-1 and at the loss on device 0), its peak from the
 * memory deltas. Stops (complete = 0) once a device's span (ranking by span; else its end)
 * is sure to pass stop > 0. */
static vp_vgrid_metrics time_layout(layout *x, const vp_cost_model *cm, vp_vrank rank,
                                    double stop) {
    static const int kind[CHAINS] = {VP_OP_F, VP_OP_F, VP_OP_B, VP_OP_B, VP_OP_W, VP_OP_W};
    static const int step[B0 + 1] = {-1, 1, -1, 1}, turn[B0 + 1] = {-1, F0, F1, B1};
    int p = x->p;
    size_t m = (size_t)x->m;
    double *cur = x->dev, *first = cur + p, *left = first + p, *mem = left + p, busy = 0;
    vp_vgrid_metrics out = {0};
    for (int d = 0; d < p; d++) {
        cur[d] = mem[d] = left[d] = 0;
        first[d] = -1;
        for (int c = 0; c < CHAINS; c++)
            left[d] += m * vp_cost_model_pass_time(cm, kind[c], stage_of(x, c, d));
        busy += left[d];
    }
    for (int s = 0; s < x->n; s++)
        for (int d = 0; d < p; d++) {
            int code = *cell(x, d, s);
            if (code < 0)
                continue;
            int chain = code / (2 * x->m), j = code % (2 * x->m);
            double dur = vp_cost_model_pass_time(cm, kind[chain], stage_of(x, chain, d));
            double start = cur[d];
            if (chain < W1) { /* what feeds it: the neighbour's pass, or at a turn its own */
                int hop = d + step[chain] >= 0 && d + step[chain] < p;
                int e = hop ? d + step[chain] : d, from = hop ? chain : turn[chain];
                double dep = from < 0 ? 0 : x->ends[(size_t)e * 4 * m + from * m + j];
                start = fmax(start, hop ? dep + cm->c : dep);
            }
            if (first[d] < 0)
                first[d] = start;
            cur[d] = start + dur;
            left[d] -= dur;
            out.peak = fmax(out.peak, mem[d] + x->up[chain]);
            mem[d] += x->net[chain];
            if (chain < W1)
                x->ends[(size_t)d * 4 * m + chain * m + j] = cur[d];
            double lb = cur[d] + left[d] - (rank == VP_VRANK_SPAN ? first[d] : 0);
            if (stop > 0 && lb > stop * (1 + EPS) + EPS)
                return (vp_vgrid_metrics){.span = lb};
        }
    for (int d = 0; d < p; d++) {
        out.makespan = fmax(out.makespan, cur[d]);
        out.span = fmax(out.span, cur[d] - first[d]);
    }
    out.bubble = out.span > 0 ? 1 - busy / p / out.span : 0;
    out.complete = 1;
    return out;
}

/* The schedule of the layout: every device's passes in slot order. */
static vp_status emit(layout *x, vp_schedule **out, vp_error *err) {
    static const int kind[CHAINS] = {VP_OP_F, VP_OP_F, VP_OP_B, VP_OP_B, VP_OP_W, VP_OP_W};
    vp_shape shape = {.p = x->p, .S = 2 * x->p, .m = x->m, .placement = VP_PLACE_V};
    vp_status rc = vp_schedule_new("v-compact", shape, out, err);
    for (int d = 0; d < x->p && rc == VP_OK; d++)
        for (int u = 0; u <= x->end[d] && rc == VP_OK; u++) {
            int c = *cell(x, d, u);
            if (c < 0)
                continue;
            int chain = c / (2 * x->m);
            rc = vp_schedule_push_pass(*out, d, kind[chain], stage_of(x, chain, d), c % (2 * x->m));
        }
    return rc == VP_ENOMEM ? vp__fail(err, rc, "out of memory") : rc;
}

static void layout_free(layout *x) {
    free(x->at);
    free(x->occ);
    free(x->end);
    free(x->lvl);
    free(x->pend);
    free(x->fresh);
    free(x->ends);
    free(x->dev);
}

/* A layout for the block's slots of microbatch 0 (last: the latest of them) for spec. */
static vp_status layout_init(layout *x, const vp_spec *spec, int last, vp_error *err) {
    int p = spec->p, m = spec->m;
    *x = (layout){.p = p, .m = m, .n = last + 8 * m + 2};
    size_t cells = (size_t)p * x->n;
    x->at = vp__calloc((size_t)p * 7 * m, sizeof *x->at);
    x->fresh = vp__calloc((size_t)p * 4 * m, sizeof *x->fresh);
    x->ends = vp__calloc((size_t)p * 4 * m, sizeof *x->ends);
    x->occ = vp__calloc(cells, sizeof *x->occ);
    x->lvl = vp__calloc(cells, sizeof *x->lvl);
    x->pend = vp__calloc(cells, sizeof *x->pend);
    x->end = vp__calloc((size_t)p, sizeof *x->end);
    x->dev = vp__calloc((size_t)4 * p, sizeof *x->dev);
    if (x->at && x->fresh && x->ends && x->occ && x->lvl && x->pend && x->end && x->dev)
        return VP_OK;
    layout_free(x);
    return vp__fail(err, VP_ENOMEM, "out of memory");
}

/* The block's slots of microbatch 0 into slots, the latest into *last. */
static vp_status block_slots(const vp_vblock *vb, int p, int (*slots)[6], int *last,
                             vp_error *err) {
    char name[96];
    if (vp_vblock_slots(vb, p, slots) != 0)
        return vp__fail(err, VP_EINVAL, "the V block %s is malformed or collides at p=%d",
                        vp_vblock_format(vb, p, name, sizeof name), p);
    *last = 0;
    for (int d = 0; d < p; d++)
        for (int c = 0; c <= B0; c++)
            *last = imax(*last, slots[d][c]);
    return VP_OK;
}

/* 1 when the timed figures x cannot be what opts asks for. */
static int unwanted(const vp_vgrid_metrics *x, const vp_vcompact_opts *opts) {
    return !x->complete || (opts->limit > 0 && x->peak > opts->limit + EPS) ||
           (opts->beat && !vp_vsearch_ranks_before(x, opts->beat, opts->rank));
}

vp_status vp_vcompact_run(const vp_spec *spec, const vp_vblock *vb, const vp_vcompact_opts *opts,
                          vp_schedule **out, vp_vgrid_metrics *metrics, vp_error *err) {
    *out = NULL;
    int p = spec->p, last = 0;
    if (p < 2 || spec->m < 1)
        return vp__fail(err, VP_EINVAL, "a V pattern needs p >= 2 and m >= 1 (got p=%d, m=%d)", p,
                        spec->m);
    if (p > INT_MAX / 16 || spec->m > INT_MAX / 16)
        return vp__fail(err, VP_ELIMIT,
                        "a V pattern lays out at most %d devices and microbatches "
                        "(got p=%d, m=%d)",
                        INT_MAX / 16, p, spec->m);
    vp_status size = vp_spec_check_size(spec, err);
    if (size != VP_OK)
        return size;
    int(*slots)[6] = vp__calloc((size_t)p, sizeof *slots);
    if (!slots)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    layout x = {0};
    vp_cost_model *cm = NULL;
    vp_status rc = block_slots(vb, p, slots, &last, err);
    if (rc == VP_OK)
        rc = vp__vshape_costs(spec, &cm, err);
    if (rc == VP_OK)
        rc = layout_init(&x, spec, last, err);
    if (rc == VP_OK) {
        model_memory(&x, cm);
        construct(&x, (const int(*)[6])slots);
        const vp_vgrid_metrics *beat = opts->beat;
        double stop = !beat ? 0 : opts->rank == VP_VRANK_SPAN ? beat->span : beat->makespan;
        vp_vgrid_metrics timed = time_layout(&x, cm, opts->rank, stop);
        if (!unwanted(&timed, opts))
            rc = emit(&x, out, err);
        layout_free(&x);
    }
    if (rc == VP_OK && *out)
        rc = vp_schedule_validate(*out, err);
    if (rc == VP_OK && *out)
        rc = vp__sim_metrics(*out, cm, metrics, err);
    if (rc != VP_OK) {
        vp_schedule_free(*out);
        *out = NULL;
    }
    vp_cost_model_free(cm);
    free(slots);
    return rc;
}
