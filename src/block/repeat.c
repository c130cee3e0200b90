/* Repeating a block: collision check, smallest interval, per-device order, block times.
 *
 * Every pass i is written start_i = q_i*T + r_i with 0 <= r_i < T. Copies repeat with
 * period T, so on one device the passes, sorted once by r (the "phase"), give the order
 * inside every period; the whole order is the periods in turn, each emitting the passes
 * whose copy holds a microbatch in [0, m) (a heap merges the passes' runs of copies, so
 * the cost is linear-logarithmic in the ops, however sparse the block). Collisions are overlaps of
 * the phase intervals on the circle of length T.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "block/block_internal.h"

/* A pass placed on the circle of length T. */
typedef struct phase {
    int i;      /* pass index */
    long q;     /* period of copy 0's pass: start = q*T + r */
    double r;   /* phase in [0, T) */
    double eps; /* tolerance for ties */
    int rank;   /* tie order: F, B, BW, W */
    int key2;   /* tie order inside a kind: F by ascending stage, backward by descending */
    long key3;  /* tie order by microbatch relative to the period: mb - q*k */
} phase;

static int kind_rank(int kind) {
    switch (kind) {
    case VP_OP_F:
        return 0;
    case VP_OP_B:
        return 1;
    case VP_OP_BW:
        return 2;
    default:
        return 3;
    }
}

static int phase_cmp(const void *pa, const void *pb) {
    const phase *a = pa, *b = pb;
    if (fabs(a->r - b->r) > a->eps)
        return a->r < b->r ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->key2 != b->key2)
        return a->key2 < b->key2 ? -1 : 1;
    if (a->key3 != b->key3)
        return a->key3 < b->key3 ? -1 : 1;
    return a->i < b->i ? -1 : (a->i > b->i);
}

/* Largest |start| + dur of the block: the time scale for tolerances. */
static double block_scale(const vp_block *b, double T) {
    double scale = T;
    for (int i = 0; i < b->n; i++) {
        double x = fabs(b->pass[i].start) + b->pass[i].dur;
        if (x > scale)
            scale = x;
    }
    return scale;
}

/* Checks T against the block: positive, finite, and not so small that the block spans
 * more than a million intervals (which would only mean a typo, and slow loops). */
static vp_status interval_ok(const vp_block *b, double T, vp_error *err) {
    if (!(T > 0) || !isfinite(T))
        return vp__fail(err, VP_EINVAL, "interval T must be a finite number > 0 (got %g)", T);
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < b->n; i++) {
        if (b->pass[i].start < lo)
            lo = b->pass[i].start;
        if (b->pass[i].start + b->pass[i].dur > hi)
            hi = b->pass[i].start + b->pass[i].dur;
    }
    if (b->n && (hi - lo) / T > 1e6)
        return vp__fail(err, VP_EINVAL,
                        "interval T=%g is too small: the block spans more than 1e6 intervals", T);
    return VP_OK;
}

/* Pass indices grouped by device: idx[start[d] .. start[d+1]). */
typedef struct buckets {
    int *idx, *start;
} buckets;

static void buckets_free(buckets *bk) {
    free(bk->idx);
    free(bk->start);
    bk->idx = bk->start = NULL;
}

static int buckets_make(const vp_block *b, buckets *bk) {
    bk->idx = vp__calloc((size_t)(b->n ? b->n : 1), sizeof *bk->idx);
    bk->start = vp__calloc((size_t)b->p + 1, sizeof *bk->start);
    if (!bk->idx || !bk->start) {
        buckets_free(bk);
        return -1;
    }
    for (int i = 0; i < b->n; i++)
        bk->start[b->stage_device[b->pass[i].stage] + 1]++;
    for (int d = 0; d < b->p; d++)
        bk->start[d + 1] += bk->start[d];
    int *fill = vp__calloc((size_t)b->p, sizeof *fill);
    if (!fill) {
        buckets_free(bk);
        return -1;
    }
    for (int i = 0; i < b->n; i++) {
        int d = b->stage_device[b->pass[i].stage];
        bk->idx[bk->start[d] + fill[d]++] = i;
    }
    free(fill);
    return 0;
}

/* A min-heap of (period, phase position) pairs: the next op of each pass. */
typedef struct slot {
    long P;
    int x;
} slot;

/* Scratch space of one call: phases of one device, the device buckets, and the heap
 * (with each pass's last period) used to emit a device's order. */
typedef struct work {
    phase *ph;
    buckets bk;
    slot *heap;
    long *last;
} work;

static void work_free(work *w) {
    free(w->ph);
    free(w->heap);
    free(w->last);
    buckets_free(&w->bk);
}

static int work_make(const vp_block *b, work *w) {
    size_t n = (size_t)(b->n ? b->n : 1);
    w->ph = vp__calloc(n, sizeof *w->ph);
    w->heap = vp__calloc(n, sizeof *w->heap);
    w->last = vp__calloc(n, sizeof *w->last);
    if (!w->ph || !w->heap || !w->last || buckets_make(b, &w->bk) != 0) {
        work_free(w);
        return -1;
    }
    return 0;
}

/* Fills ph with the passes of device d at interval T (only those with dur > min_dur),
 * sorted by phase; returns their number. */
static int device_phases(const vp_block *b, const buckets *bk, int d, double T, double eps,
                         double min_dur, phase *ph) {
    int n = 0, k = b->mb_per_copy;
    for (int x = bk->start[d]; x < bk->start[d + 1]; x++) {
        int i = bk->idx[x];
        const vp_block_pass *ps = &b->pass[i];
        if (ps->dur <= min_dur)
            continue;
        double qf = floor(ps->start / T);
        double r = ps->start - qf * T;
        if (r < 0)
            r = 0;
        if (r > T - eps) {
            r = 0;
            qf += 1;
        }
        phase v = {.i = i, .q = (long)qf, .r = r, .eps = eps, .rank = kind_rank(ps->kind)};
        v.key2 = ps->kind == VP_OP_F ? ps->stage : -ps->stage;
        v.key3 = (long)ps->mb - v.q * k;
        ph[n++] = v;
    }
    qsort(ph, (size_t)n, sizeof *ph, phase_cmp);
    return n;
}

/* Fills hit and the message for an overlap of pass a (copy 0) and pass bb (copy c). */
static vp_status report(const vp_block *b, int d, int a, int bb, long c, double T,
                        vp_block_collision *hit, vp_error *err) {
    if (c < 0) {
        int t = a;
        a = bb;
        bb = t;
        c = -c;
    }
    const vp_block_pass *pa = &b->pass[a], *pb = &b->pass[bb];
    vp_block_collision h = {.device = d, .a = a, .b = bb, .copy = (int)c};
    h.a_start = pa->start;
    h.a_end = pa->start + pa->dur;
    h.b_start = pb->start + (double)c * T;
    h.b_end = h.b_start + pb->dur;
    if (hit)
        *hit = h;
    vp_op oa = {.kind = (uint8_t)pa->kind, .stage = pa->stage, .mb = pa->mb};
    vp_op ob = {.kind = (uint8_t)pb->kind,
                .stage = pb->stage,
                .mb = (int32_t)(c * b->mb_per_copy + pb->mb)};
    char la[48], lb[48];
    vp_op_format(&oa, la, sizeof la);
    vp_op_format(&ob, lb, sizeof lb);
    return vp__fail(err, VP_EVALIDATION,
                    "blocks collide on device %d at interval T=%g: %s [%g, %g) overlaps %s "
                    "[%g, %g) (copy %ld)",
                    d, T, la, h.a_start, h.a_end, lb, h.b_start, h.b_end, c);
}

/* Collision check with a caller-provided scratch array of b->n phases. */
static vp_status collisions(const vp_block *b, const work *w, double T, vp_block_collision *hit,
                            vp_error *err) {
    double eps = vp__block_eps(block_scale(b, T));
    phase *ph = w->ph;
    for (int d = 0; d < b->p; d++) {
        int n = device_phases(b, &w->bk, d, T, eps, eps, ph);
        for (int x = 0; x < n; x++) {
            const phase *a = &ph[x], *y = &ph[(x + 1) % n];
            double dur = b->pass[a->i].dur;
            if (dur > T + eps) /* longer than the period: overlaps its own next copy */
                return report(b, d, a->i, a->i, 1, T, hit, err);
            if (n < 2)
                continue;
            int wrap = x + 1 == n;
            double next = y->r + (wrap ? T : 0.0);
            if (a->r + dur > next + eps)
                return report(b, d, a->i, y->i, a->q - y->q + wrap, T, hit, err);
        }
    }
    return VP_OK;
}

vp_status vp_block_collisions(const vp_block *b, double T, vp_block_collision *hit, vp_error *err) {
    vp_status rc = interval_ok(b, T, err);
    if (rc != VP_OK)
        return rc;
    work w = {0};
    if (work_make(b, &w) != 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    rc = collisions(b, &w, T, hit, err);
    work_free(&w);
    return rc;
}

/* Busiest device's work per copy. */
static double max_device_work(const vp_block *b) {
    double *sum = vp__calloc((size_t)b->p, sizeof *sum), best = 0;
    if (!sum)
        return -1;
    for (int i = 0; i < b->n; i++)
        sum[b->stage_device[b->pass[i].stage]] += b->pass[i].dur;
    for (int d = 0; d < b->p; d++)
        if (sum[d] > best)
            best = sum[d];
    free(sum);
    return best;
}

vp_status vp_block_min_interval(const vp_block *b, double *T, vp_error *err) {
    vp_status rc = vp_block_check(b, err);
    if (rc != VP_OK)
        return rc;
    double t = max_device_work(b);
    if (t < 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    if (!(t > vp__block_eps(block_scale(b, 0))))
        return vp__fail(err, VP_EINVAL, "every pass of the block has zero duration: no interval");
    work w = {0};
    if (work_make(b, &w) != 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    /* Each collision of a with copy c of b rules out the open interval of T ending at
     * (end_a - start_b) / c; jumping there skips no collision-free value. The jumps take
     * values from a finite set and increase, so the loop ends; the cap is a safety net. */
    for (int iter = 0; iter < 100000; iter++) {
        vp_block_collision hit;
        rc = interval_ok(b, t, err);
        if (rc != VP_OK)
            break;
        rc = collisions(b, &w, t, &hit, err);
        if (rc == VP_OK) {
            work_free(&w);
            *T = t;
            return VP_OK;
        }
        if (hit.copy == 0) {
            work_free(&w);
            return rc; /* the block overlaps itself: the message names the passes */
        }
        double next = (hit.a_end - b->pass[hit.b].start) / hit.copy;
        if (!(next > t)) /* rounding: step past the tie */
            next = t + vp__block_eps(block_scale(b, t));
        t = next;
    }
    work_free(&w);
    return rc != VP_OK ? rc : vp__fail(err, VP_EINVAL, "no collision-free interval found");
}

/* Range of copies j whose pass i carries a microbatch in [0, m): j*k + mb in [0, m). */
static void copy_range(int k, int mb, int m, long *lo, long *hi) {
    long a = -(long)mb, z = (long)m - 1 - mb;
    *lo = a >= 0 ? (a + k - 1) / k : -((-a) / k);
    *hi = z >= 0 ? z / k : -((-z + k - 1) / k);
}

static int slot_less(slot a, slot b) {
    return a.P < b.P || (a.P == b.P && a.x < b.x);
}

static void heap_push(slot *h, int *n, slot v) {
    int i = (*n)++;
    while (i > 0 && slot_less(v, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static slot heap_pop(slot *h, int *n) {
    slot top = h[0], v = h[--*n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && slot_less(h[c + 1], h[c]))
            c++;
        if (!slot_less(h[c], v))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
    return top;
}

/* Emits device d's order for m microbatches into s from its sorted phases: period by
 * period, each period in phase order, merging the passes' runs of copies. */
static vp_status emit_device(const vp_block *b, int m, const work *w, int n, vp_schedule *s,
                             int d) {
    int k = b->mb_per_copy, hn = 0;
    long total = 0;
    const phase *ph = w->ph;
    slot *heap = w->heap;
    long *last = w->last;
    for (int x = 0; x < n; x++) {
        long lo, hi;
        copy_range(k, b->pass[ph[x].i].mb, m, &lo, &hi);
        if (hi < lo)
            continue;
        total += hi - lo + 1;
        last[x] = hi + ph[x].q;
        heap_push(heap, &hn, (slot){lo + ph[x].q, x});
    }
    vp_oplist *l = &s->dev[d];
    vp_status rc = VP_OK;
    if (total > (long)1 << 30)
        rc = VP_EINVAL;
    else if (vp__grow((void **)&l->ops, &l->cap, (int)total, sizeof(vp_op)) != 0)
        rc = VP_ENOMEM;
    while (rc == VP_OK && hn > 0) {
        slot t = heap_pop(heap, &hn);
        const vp_block_pass *ps = &b->pass[ph[t.x].i];
        vp_op op = {.kind = (uint8_t)ps->kind,
                    .stage = ps->stage,
                    .mb = (int32_t)((t.P - ph[t.x].q) * k + ps->mb)};
        l->ops[l->n++] = op;
        if (t.P < last[t.x])
            heap_push(heap, &hn, (slot){t.P + 1, t.x});
    }
    return rc;
}

vp_status vp_block_repeat(const vp_block *b, int m, const char *family, vp_schedule **out,
                          vp_error *err) {
    *out = NULL;
    if (m < 1)
        return vp__fail(err, VP_EINVAL, "repeat needs m >= 1 (got %d)", m);
    vp_status rc = vp_block_check(b, err);
    if (rc != VP_OK)
        return rc;
    double T = b->T;
    rc = interval_ok(b, T, err);
    if (rc != VP_OK)
        return rc;
    work w = {0};
    if (work_make(b, &w) != 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    rc = collisions(b, &w, T, NULL, err);
    vp_schedule *s = NULL;
    if (rc == VP_OK)
        rc = vp__block_shape(b, m, family, &s, err);
    double eps = vp__block_eps(block_scale(b, T));
    for (int d = 0; rc == VP_OK && d < b->p; d++) {
        int n = device_phases(b, &w.bk, d, T, eps, -1.0, w.ph);
        rc = emit_device(b, m, &w, n, s, d);
        if (rc != VP_OK)
            rc = vp__fail(err, rc, rc == VP_ENOMEM ? "out of memory" : "schedule too large");
    }
    work_free(&w);
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return rc;
    }
    *out = s;
    return VP_OK;
}

vp_status vp_block_times(const vp_block *b, const vp_schedule *s, double **times, vp_error *err) {
    VP_ASSERT(s->p == b->p && s->S == b->S); /* s comes from vp_block_repeat(b) */
    int k = b->mb_per_copy;
    /* pass index per (class, stage, kind); the block check makes it unique */
    int *idx = vp__calloc((size_t)k * (size_t)b->S * 4, sizeof *idx);
    if (!idx)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (size_t c = 0; c < (size_t)k * (size_t)b->S * 4; c++)
        idx[c] = -1;
    for (int i = 0; i < b->n; i++) {
        const vp_block_pass *ps = &b->pass[i];
        idx[((size_t)vp__block_class(b, ps->mb) * b->S + ps->stage) * 4 + ps->kind] = i;
    }
    for (int d = 0; d < s->p; d++) {
        for (int x = 0; x < s->dev[d].n; x++) {
            const vp_op *op = &s->dev[d].ops[x];
            int i = -1;
            if (op->kind < 4 && op->stage >= 0 && op->stage < b->S)
                i = idx[((size_t)vp__block_class(b, op->mb) * b->S + op->stage) * 4 + op->kind];
            times[d][x] =
                i < 0 ? NAN : b->pass[i].start + (double)((op->mb - b->pass[i].mb) / k) * b->T;
        }
    }
    free(idx);
    return VP_OK;
}
