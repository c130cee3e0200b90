/* The V slot grid: V blocks built into schedules (block.h, "V blocks").
 *
 * Everything is built in unit slots (one slot per chunk pass, six per microbatch and
 * device) on a grid of devices x slots. A V block gives the slots of microbatch 0; it
 * becomes a framework block (vp_block: V placement, T = 6, collision-checked by
 * vp_block_collisions unless its phases already were) whose passes, repeated every 6
 * slots, fill the grid. The grid is then reshaped where the stable phase leaves room:
 *  - squeeze: replay each device's order as early as its dependencies allow;
 *  - warm-up: the passes before a device's first B⁰ are laid out canonically: chunk-0
 *    forwards first, then (F⁰, F¹) pairs, then (B¹, W, F) triples, with at most
 *    min(i+1, k/2) F¹ and k minus that many F⁰ up front (k the block's peak in chunk
 *    activations, i the device), so the pipeline fills as fast as memory allows;
 *  - cool-down: the last backwards go onto their critical chain (after the last F¹ of
 *    device 0, B¹ one slot per device down, then B⁰ back up, earlier microbatches every
 *    other slot), the W's they free follow in idle slots;
 *  - fill: an idle slot takes the first later pass of each kind that is ready by then
 *    and does not raise the device's memory above the cap.
 * Each reshaping step is kept only when it replays and does not raise the peak. W passes
 * are anonymous on the grid and bound to their B in FIFO order at the end. The result is
 * an order per device: vp_simulate replays it with the real costs (the squeeze).
 *
 * In bw mode (1F1B-V) a backward is a full BW of two slots and the warm-up is a
 * compaction: every pass moves to the earliest slot its dependencies allow, forwards only
 * while memory stays under the peak.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block/block_internal.h"

/* Pass types on the grid. W is a weight pass bound to a B later (split mode) or the
 * second slot of the BW that starts in the slot before it (1F1B-V). */
enum { T_F0 = 0, T_F1 = 1, T_B1 = 2, T_B0 = 3, T_W = 4, T_N = 5 };

#define PERIOD 6

typedef struct grid {
    int len, cap; /* slots in use / allocated per device row */
    int8_t *ty;   /* [p][cap] pass type, -1 idle */
    int32_t *mb;  /* [p][cap] microbatch of the pass (W: unused in split mode) */
} grid;

struct vp_vgrid {
    int p, m;  /* shape */
    int spare; /* microbatches the arrays hold: max(m, 2p) */
    int mm;    /* microbatches repeated before trimming: spare (split), m (bw) */
    int built; /* the current grid is a finished split-mode build (vp_vgrid_schedule) */
    grid g[2]; /* current and spare grid */
    int cur;
    int32_t *at;      /* [p][4][mm] slot where (device, type, microbatch) ends, -1 */
    int8_t *ord_ty;   /* [p][6*mm] per-device order, for squeezing */
    int32_t *ord_mb;  /* [p][6*mm] */
    int *n_ord, *pos; /* [p] */
    int *free_at;     /* [p] */
    int *count;       /* [p][T_N] passes of each type seen, for the fill */
    int *next;        /* [p][T_N] the fill: next slot of each type in the row */
    int *cand;        /* [p][3][T_N] the fill's candidates: slot, type, memory before */
    int *n_cand;      /* [p] */
    int *wq;          /* [6*mm] FIFO of B passes awaiting their W (stage, microbatch pairs) */
    double *end;      /* [p][4][spare] vp_vgrid_measure: end of (device, type, microbatch) */
    int8_t *wchunk;   /* [p][2*spare] vp_vgrid_measure: per device, FIFO of B chunks (0, 1) */
};

#define CELL(g, d, t) ((size_t)(d) * (size_t)(g)->cap + (size_t)(t))

static void grid_free(grid *g) {
    free(g->ty);
    free(g->mb);
    g->ty = NULL;
    g->mb = NULL;
}

/* Makes room for `need` slots per row, keeping the contents. 0 ok, -1 no memory. */
static int grid_reserve(grid *g, int p, int need) {
    if (need <= g->cap)
        return 0;
    int cap = g->cap * 2 > need ? g->cap * 2 : need;
    int8_t *ty = malloc((size_t)p * (size_t)cap);
    int32_t *mb = malloc((size_t)p * (size_t)cap * sizeof *mb);
    if (!ty || !mb) {
        free(ty);
        free(mb);
        return -1;
    }
    memset(ty, -1, (size_t)p * (size_t)cap);
    for (int d = 0; d < p && g->cap; d++) {
        memcpy(ty + (size_t)d * cap, g->ty + (size_t)d * g->cap, (size_t)g->cap);
        memcpy(mb + (size_t)d * cap, g->mb + (size_t)d * g->cap, (size_t)g->cap * sizeof *mb);
    }
    free(g->ty);
    free(g->mb);
    g->ty = ty;
    g->mb = mb;
    g->cap = cap;
    return 0;
}

/* Empties the grid. Cells past len are always idle, so only len columns are cleared. */
static void grid_clear(grid *g, int p) {
    for (int d = 0; d < p && g->len > 0; d++)
        memset(g->ty + CELL(g, d, 0), -1, (size_t)g->len);
    g->len = 0;
}

static int grid_copy(grid *dst, const grid *src, int p) {
    if (grid_reserve(dst, p, src->cap) != 0)
        return -1;
    grid_clear(dst, p);
    for (int d = 0; d < p; d++) {
        memcpy(dst->ty + CELL(dst, d, 0), src->ty + CELL(src, d, 0), (size_t)src->len);
        memcpy(dst->mb + CELL(dst, d, 0), src->mb + CELL(src, d, 0),
               (size_t)src->len * sizeof *src->mb);
    }
    dst->len = src->len;
    return 0;
}

void vp_vgrid_free(vp_vgrid *w) {
    if (!w)
        return;
    grid_free(&w->g[0]);
    grid_free(&w->g[1]);
    free(w->at);
    free(w->ord_ty);
    free(w->ord_mb);
    free(w->n_ord);
    free(w->pos);
    free(w->free_at);
    free(w->count);
    free(w->next);
    free(w->cand);
    free(w->n_cand);
    free(w->wq);
    free(w->end);
    free(w->wchunk);
    free(w);
}

vp_status vp_vgrid_new(int p, int m, vp_vgrid **out, vp_error *err) {
    *out = NULL;
    if (p < 2 || m < 1)
        return vp__fail(err, VP_EINVAL,
                        "a V grid needs p >= 2 devices and m >= 1 microbatches (got p=%d, m=%d)", p,
                        m);
    vp_vgrid *w = vp__calloc(1, sizeof *w);
    if (!w)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    w->p = p;
    w->m = m;
    w->spare = m > 2 * p ? m : 2 * p;
    size_t per = (size_t)PERIOD * (size_t)w->spare;
    w->at = vp__calloc((size_t)p * 4 * (size_t)w->spare, sizeof *w->at);
    w->ord_ty = vp__calloc((size_t)p * per, sizeof *w->ord_ty);
    w->ord_mb = vp__calloc((size_t)p * per, sizeof *w->ord_mb);
    w->n_ord = vp__calloc((size_t)p, sizeof *w->n_ord);
    w->pos = vp__calloc((size_t)p, sizeof *w->pos);
    w->free_at = vp__calloc((size_t)p, sizeof *w->free_at);
    w->count = vp__calloc((size_t)p * T_N, sizeof *w->count);
    w->wq = vp__calloc(2 * per, sizeof *w->wq);
    w->next = vp__calloc((size_t)p * T_N, sizeof *w->next);
    w->cand = vp__calloc((size_t)p * 3 * T_N, sizeof *w->cand);
    w->n_cand = vp__calloc((size_t)p, sizeof *w->n_cand);
    w->end = vp__calloc((size_t)p * 4 * (size_t)w->spare, sizeof *w->end);
    w->wchunk = vp__calloc((size_t)p * 2 * (size_t)w->spare, sizeof *w->wchunk);
    /* room for the repeated block (at most 6*spare slots after the last device's first
     * pass, itself within 25(p-1) slots); grids grow when a step needs more */
    int cols = PERIOD * w->spare + 32 * p + 64;
    if (!w->at || !w->ord_ty || !w->ord_mb || !w->n_ord || !w->pos || !w->free_at || !w->count ||
        !w->wq || !w->next || !w->cand || !w->n_cand || !w->end || !w->wchunk ||
        grid_reserve(&w->g[0], p, cols) != 0 || grid_reserve(&w->g[1], p, cols) != 0) {
        vp_vgrid_free(w);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    *out = w;
    return VP_OK;
}

/* ---- block geometry ---------------------------------------------------------------- */

static int mod6(int x) {
    return ((x % PERIOD) + PERIOD) % PERIOD;
}

/* First slot >= lo with the given phase. */
static int first_at(int lo, int phase) {
    return lo + mod6(phase - lo);
}

static int in_range(int x) {
    return x >= 1 && x <= 5;
}

int vp_vblock_slots(const vp_vblock *vb, int p, int (*t)[6]) {
    if (p < 2 || !in_range(vb->f1) || !in_range(vb->b1) || !in_range(vb->b0) || vb->f1 == vb->b1 ||
        vb->f1 == vb->b0 || vb->b1 == vb->b0 || !in_range(vb->d0) || !in_range(vb->d1) ||
        !in_range(vb->d0b) || !in_range(vb->d1b) || vb->k < 0)
        return -1;
    int sum1 = 0; /* chunk-1 forward offset from device p-1 to device 0 */
    for (int i = 1; i < p; i++)
        sum1 += i <= vb->k ? vb->d1 : vb->d1b;
    t[0][0] = 0;
    for (int i = 1; i < p; i++)
        t[i][0] = t[i - 1][0] + (i <= vb->k ? vb->d0 : vb->d0b);
    t[p - 1][1] = first_at(t[p - 1][0] + 1, vb->f1 - sum1);
    for (int i = p - 2; i >= 0; i--)
        t[i][1] = t[i + 1][1] + (i + 1 <= vb->k ? vb->d1 : vb->d1b);
    t[0][2] = first_at(t[0][1] + 1, vb->b1);
    for (int i = 1; i < p; i++)
        t[i][2] = t[i - 1][2] + (i <= vb->k ? vb->d0 : vb->d0b);
    t[p - 1][3] = first_at(t[p - 1][2] + 1, vb->b0 - sum1);
    for (int i = p - 2; i >= 0; i--)
        t[i][3] = t[i + 1][3] + (i + 1 <= vb->k ? vb->d1 : vb->d1b);
    for (int i = 0; i < p; i++) {
        int used[PERIOD] = {0};
        for (int x = 0; x < 4; x++) {
            if (used[mod6(t[i][x])])
                return -1;
            used[mod6(t[i][x])] = 1;
        }
        for (int x = 2; x < 4; x++) { /* each W in the first free phase after its B */
            int dist = 1;
            while (used[mod6(t[i][x] + dist)])
                dist++;
            used[mod6(t[i][x] + dist)] = 1;
            t[i][x + 2] = t[i][x] + dist;
        }
    }
    return 0;
}

/* Stage of a grid pass type on device d (W: stage of the B it follows, not known here). */
static int type_stage(int p, int d, int type) {
    return type == T_F0 || type == T_B0 ? d : 2 * p - 1 - d;
}

/* Fills a framework block (V placement, T = 6, unit passes) from slots [p][6] and runs
 * the framework's collision check (VP_EVALIDATION when copies overlap). */
static vp_status block_from_slots(const int (*t)[6], int p, vp_block **out, vp_error *err) {
    vp_block *b = vp_block_new(p, 2 * p, VP_PLACE_V, err);
    if (!b)
        return err ? err->status : VP_ENOMEM;
    static const int kind[6] = {VP_OP_F, VP_OP_F, VP_OP_B, VP_OP_B, VP_OP_W, VP_OP_W};
    static const int type[6] = {T_F0, T_F1, T_B1, T_B0, T_F1, T_F0}; /* W: its chunk's F */
    vp_status rc = VP_OK;
    for (int i = 0; i < p && rc == VP_OK; i++)
        for (int x = 0; x < 6 && rc == VP_OK; x++)
            rc = vp_block_add(b, kind[x], type_stage(p, i, type[x]), 0, t[i][x], 1);
    b->T = PERIOD;
    rc = rc != VP_OK ? vp__fail(err, rc, "out of memory")
                     : vp_block_collisions(b, PERIOD, NULL, err);
    if (rc != VP_OK) {
        vp_block_free(b);
        return rc;
    }
    *out = b;
    return VP_OK;
}

/* VP_EINVAL unless p >= 2: a V needs two devices. */
static vp_status need_two(const char *name, int p, vp_error *err) {
    if (p >= 2)
        return VP_OK;
    return vp__fail(err, VP_EINVAL,
                    "%s needs p >= 2 (a V folds the model over at least two devices; got p=%d)",
                    name, p);
}

/* vp_vblock_slots with a message: VP_EINVAL naming the block when it is malformed or
 * collides. */
static vp_status slots_or_fail(const vp_vblock *vb, int p, int (*t)[6], vp_error *err) {
    if (vp_vblock_slots(vb, p, t) == 0)
        return VP_OK;
    char buf[96];
    return vp__fail(err, VP_EINVAL,
                    "V block %s at p=%d is malformed or collides at period 6 (phases must be "
                    "distinct in 1..5, offsets in 1..5)",
                    vp_vblock_format(vb, p, buf, sizeof buf), p);
}

vp_status vp_vblock_to_block(const vp_vblock *vb, int p, vp_block **out, vp_error *err) {
    *out = NULL;
    vp_status rc = need_two("a V block", p, err);
    if (rc != VP_OK)
        return rc;
    int(*t)[6] = vp__calloc((size_t)p, sizeof *t);
    if (!t)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    rc = slots_or_fail(vb, p, t, err);
    if (rc == VP_OK)
        rc = block_from_slots((const int(*)[6])t, p, out, err);
    free(t);
    return rc;
}

char *vp_vblock_format(const vp_vblock *vb, int p, char *buf, int size) {
    int n = snprintf(buf, (size_t)size, "f1=%d b1=%d b0=%d d=(%d,%d)", vb->f1, vb->b1, vb->b0,
                     vb->d0, vb->d1);
    int changes = vb->k < p - 1 && (vb->d0b != vb->d0 || vb->d1b != vb->d1);
    if (changes && n > 0 && n < size)
        snprintf(buf + n, (size_t)(size - n), "->(%d,%d)@K=%d", vb->d0b, vb->d1b, vb->k);
    return buf;
}

/* ---- the grid engine --------------------------------------------------------------- */

static grid *cur_grid(vp_vgrid *w) {
    return &w->g[w->cur];
}

static size_t at_index(const vp_vgrid *w, int d, int type, int mb) {
    return ((size_t)d * 4 + (size_t)type) * (size_t)w->mm + (size_t)mb;
}

/* The pass (device, type) a pass waits for, same microbatch; 0 when it waits for none. In
 * bw mode a backward waits for the whole BW upstream, which ends with its W slot. */
static int pred(int p, int d, int type, int *pd, int *pt) {
    switch (type) {
    case T_F0:
        if (d == 0)
            return 0;
        *pd = d - 1;
        *pt = T_F0;
        return 1;
    case T_F1:
        *pd = d == p - 1 ? d : d + 1;
        *pt = d == p - 1 ? T_F0 : T_F1;
        return 1;
    case T_B1:
        *pd = d == 0 ? 0 : d - 1;
        *pt = d == 0 ? T_F1 : T_B1;
        return 1;
    case T_B0:
        *pd = d == p - 1 ? d : d + 1;
        *pt = d == p - 1 ? T_B1 : T_B0;
        return 1;
    default:
        return 0;
    }
}

/* Peak memory of each device of g, in chunk activations (F +1, W -1); returns the max. */
static int grid_peak(const grid *g, int p, int *per) {
    int best = 0;
    for (int d = 0; d < p; d++) {
        const int8_t *row = g->ty + CELL(g, d, 0);
        int cur = 0, peak = 0;
        for (int t = 0; t < g->len; t++) {
            if (row[t] == T_F0 || row[t] == T_F1) {
                if (++cur > peak)
                    peak = cur;
            } else if (row[t] == T_W) {
                cur--;
            }
        }
        if (per)
            per[d] = peak;
        if (peak > best)
            best = peak;
    }
    return best;
}

/* floor(a / PERIOD) for any sign of a. */
static int period_floor(int a) {
    return a >= 0 ? a / PERIOD : -((PERIOD - 1 - a) / PERIOD);
}

int vp_vgrid_peak(const vp_vgrid *w, const int (*t)[6]) {
    /* Copies alive at a time T far into the repetition: for each pass pair (F, its W), the
     * copies j with f + 6j <= T < wend + 6j, i.e. the multiples of 6 in (T - wend, T - f].
     * With T = 6N + r their count floor((r - f)/6) - floor((r - wend)/6) does not depend
     * on N, so six phases r cover every time. */
    int best = 0;
    for (int d = 0; d < w->p; d++) {
        for (int r = 0; r < PERIOD; r++) {
            int live = 0;
            for (int c = 0; c < 2; c++) {
                int f = t[d][c], wend = t[d][c == 0 ? 5 : 4] + 1;
                live += period_floor(r - f) - period_floor(r - wend);
            }
            if (live > best)
                best = live;
        }
    }
    return best;
}

/* Replays each device's order as early as dependencies allow (unit slots). In bw mode a
 * backward occupies its slot and the W slot after it. -1 when the order deadlocks. */
static int squeeze(vp_vgrid *w, int bw) {
    grid *g = cur_grid(w);
    int p = w->p, per = PERIOD * w->mm, total = 0;
    for (int d = 0; d < p; d++) {
        const int8_t *row = g->ty + CELL(g, d, 0);
        const int32_t *mbs = g->mb + CELL(g, d, 0);
        int8_t *oty = w->ord_ty + (size_t)d * per;
        int32_t *omb = w->ord_mb + (size_t)d * per;
        int n = 0;
        for (int t = 0; t < g->len; t++) {
            if (row[t] < 0 || (bw && row[t] == T_W))
                continue;
            if (n == per)
                return -1;
            oty[n] = row[t];
            omb[n++] = mbs[t];
        }
        w->n_ord[d] = n;
        w->pos[d] = 0;
        w->free_at[d] = 0;
        total += n;
    }
    int32_t *at = w->at;
    for (size_t i = 0; i < (size_t)p * 4 * (size_t)w->mm; i++)
        at[i] = -1;
    grid_clear(g, p);
    while (total > 0) {
        int before = total;
        for (int sweep = 0; sweep < 2; sweep++) {
            for (int x = 0; x < p; x++) {
                int d = sweep ? p - 1 - x : x, k = w->pos[d], n = w->n_ord[d], t0 = w->free_at[d];
                const int8_t *oty = w->ord_ty + (size_t)d * per;
                const int32_t *omb = w->ord_mb + (size_t)d * per;
                for (; k < n; k++) {
                    int type = oty[k], mb = omb[k], pd, pt, t = t0;
                    if (pred(p, d, type, &pd, &pt)) {
                        int e = at[at_index(w, pd, pt, mb)];
                        if (e < 0)
                            break;
                        if (e > t)
                            t = e;
                    }
                    int dur = bw && (type == T_B1 || type == T_B0) ? 2 : 1;
                    if (t + dur >= g->cap && grid_reserve(g, p, t + dur + 1) != 0)
                        return -1;
                    size_t c = CELL(g, d, t);
                    g->ty[c] = (int8_t)type;
                    g->mb[c] = mb;
                    if (dur == 2) {
                        g->ty[c + 1] = T_W;
                        g->mb[c + 1] = mb;
                    }
                    if (type != T_W)
                        at[at_index(w, d, type, mb)] = t + dur;
                    t0 = t + dur;
                    if (t0 > g->len)
                        g->len = t0;
                }
                total -= k - w->pos[d];
                w->pos[d] = k;
                w->free_at[d] = t0;
            }
        }
        if (total == before)
            return -1;
    }
    return 0;
}

/* VP_EVALIDATION naming the device when two passes of the block share a phase (slot mod
 * 6) on one device, so copies repeated every 6 slots would overlap; VP_EINVAL for a
 * negative slot. In bw mode the backwards (columns 2, 3) take two slots and there are no
 * W columns. */
static vp_status check_phases(const int (*t)[6], int p, int bw, vp_error *err) {
    for (int d = 0; d < p; d++) {
        int used[PERIOD] = {0};
        for (int x = 0; x < (bw ? 4 : 6); x++) {
            if (t[d][x] < 0)
                return vp__fail(err, VP_EINVAL, "V block slot %d of device %d is negative", x, d);
            for (int r = 0; r < (bw && x >= 2 ? 2 : 1); r++) {
                if (used[mod6(t[d][x] + r)]++)
                    return vp__fail(err, VP_EVALIDATION,
                                    "the V block collides at period 6: two passes of device %d "
                                    "share phase %d",
                                    d, mod6(t[d][x] + r));
            }
        }
    }
    return VP_OK;
}

/* Fills the current grid with the block repeated every 6 slots (copy j = microbatch j
 * for j < w->mm): every pass at its block time (slots [p][6] in the order F⁰ F¹ B¹ B⁰ W¹
 * W⁰; bw: F⁰ F¹ and two-slot backwards). check: refuse a block whose copies collide
 * (check_phases); without it the caller vouches for the slots. */
static vp_status repeat_block(vp_vgrid *w, const int (*t)[6], int bw, int check, vp_error *err) {
    int p = w->p, npass = bw ? 4 : 6, end = 0;
    vp_status rc = check ? check_phases(t, p, bw, err) : VP_OK;
    for (int d = 0; d < p && rc == VP_OK; d++)
        for (int x = 0; x < npass; x++) {
            if (t[d][x] < 0 || t[d][x] > INT32_MAX / 2 - PERIOD * w->mm)
                return vp__fail(err, VP_EINVAL, "V block slot %d of device %d out of range", x, d);
            int e = t[d][x] + PERIOD * (w->mm - 1) + (bw && x >= 2 ? 2 : 1);
            end = e > end ? e : end;
        }
    grid *g = cur_grid(w);
    if (rc == VP_OK && grid_reserve(g, p, end + 1) != 0)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc != VP_OK)
        return rc;
    grid_clear(g, p);
    for (int d = 0; d < p; d++)
        for (int x = 0; x < npass; x++) {
            int type = x < 4 ? x : T_W, two = bw && x >= 2;
            for (int j = 0; j < w->mm; j++) {
                size_t at = CELL(g, d, t[d][x] + PERIOD * j);
                g->ty[at] = (int8_t)type;
                g->mb[at] = j;
                if (two) {
                    g->ty[at + 1] = T_W;
                    g->mb[at + 1] = j;
                }
            }
        }
    g->len = end;
    return VP_OK;
}

/* Keeps each W that an earlier B still waits for and drops the others (split mode); the
 * W's still owed then go into the idle slots after the row's last W, or past its end. */
static int settle_w(grid *g, int p) {
    for (int d = 0; d < p; d++) {
        int8_t *row = g->ty + CELL(g, d, 0);
        int owed = 0, last = -1;
        for (int t = 0; t < g->len; t++) {
            if (row[t] == T_B1 || row[t] == T_B0)
                owed++;
            else if (row[t] == T_W && owed > 0)
                owed--, last = t;
            else if (row[t] == T_W)
                row[t] = -1;
        }
        int open = 0; /* B's before t not yet followed by their W */
        for (int t = 0; owed > 0; t++) {
            if (t >= g->len) {
                if (grid_reserve(g, p, t + 2) != 0)
                    return -1;
                row = g->ty + CELL(g, d, 0);
                g->len = t + 1;
            }
            if (row[t] == T_B1 || row[t] == T_B0)
                open++;
            else if (row[t] == T_W)
                open--;
            else if (row[t] < 0 && t > last && open > 0)
                row[t] = T_W, open--, owed--;
        }
    }
    return 0;
}

/* Canonical warm-up: the passes before each device's first B⁰, in the order described in
 * the file comment, written into the first slots (the squeeze places them). In bw mode
 * a backward keeps its second slot and the triples are (BW, F). */
static void warmup(vp_vgrid *w, int k, int bw) {
    grid *g = cur_grid(w);
    int p = w->p;
    if (k > 2 * p)
        k = 2 * p;
    for (int i = 0; i < p; i++) {
        int8_t *row = g->ty + CELL(g, i, 0);
        int32_t *mbs = g->mb + CELL(g, i, 0);
        int have[T_N] = {0}, end = 0;
        for (; end < g->len && row[end] != T_B0; end++)
            if (row[end] >= 0)
                have[row[end]]++;
        int q1 = i + 1 < k / 2 ? i + 1 : k / 2, q0 = k - q1;
        q1 = q1 < have[T_F1] ? q1 : have[T_F1];
        q0 = q0 < have[T_F0] ? q0 : have[T_F0];
        int used[T_N] = {0}, n = 0;
        memset(row, -1, (size_t)end);
#define EMIT(type) (row[n++] = (int8_t)(type), mbs[n - 1] = used[type]++)
        for (int x = 0; x < 2 * (p - 1 - i) && used[T_F0] < q0; x++)
            EMIT(T_F0);
        for (int x = 0; x <= i; x++) {
            if (used[T_F0] < q0)
                EMIT(T_F0);
            if (used[T_F1] < q1)
                EMIT(T_F1);
        }
        while (n < end && (used[T_F0] < have[T_F0] || used[T_F1] < have[T_F1] ||
                           used[T_B1] < have[T_B1] || used[T_W] < have[T_W])) {
            if (used[T_B1] < have[T_B1]) {
                EMIT(T_B1);
                if (bw) {
                    row[n] = T_W;
                    mbs[n] = mbs[n - 1];
                    n++;
                    used[T_W]++;
                }
            }
            if (!bw && used[T_W] < have[T_W])
                EMIT(T_W);
            if (used[T_F1] < have[T_F1])
                EMIT(T_F1);
            else if (used[T_F0] < have[T_F0])
                EMIT(T_F0);
        }
#undef EMIT
    }
}

/* Drops the passes of microbatches >= m (the spare copies of a short run). */
static int trim(vp_vgrid *w) {
    grid *g = cur_grid(w);
    for (int d = 0; d < w->p; d++)
        for (int t = 0; t < g->len; t++)
            if (g->ty[CELL(g, d, t)] >= 0 && g->ty[CELL(g, d, t)] != T_W &&
                g->mb[CELL(g, d, t)] >= w->m)
                g->ty[CELL(g, d, t)] = -1;
    return settle_w(g, w->p);
}

/* Cool-down onto the critical chain (file comment). -1 when the template collides. */
static int cooldown(vp_vgrid *w, int k) {
    grid *g = cur_grid(w);
    int p = w->p, m = w->m, start = -1;
    int nbb = (k + 1) / 2 < m ? (k + 1) / 2 : m;
    int nb = k - nbb < m ? k - nbb : m;
    for (int t = g->len - 1; t >= 0 && start < 0; t--)
        if (g->ty[CELL(g, 0, t)] == T_F1)
            start = t;
    if (start < 0 || grid_reserve(g, p, start + 2 * p + 2) != 0)
        return -1;
    for (int i = 0; i < p; i++) {
        int8_t *row = g->ty + CELL(g, i, 0);
        int32_t *mbs = g->mb + CELL(g, i, 0);
        int cb = 0, cbb = 0, cw = 0;
        for (int t = g->len - 1; t >= 0; t--) {
            if (row[t] == T_B1 && cb < i + 1 && cb < nb)
                row[t] = -1, cb++;
            else if (row[t] == T_B0 && cbb < nbb)
                row[t] = -1, cbb++;
        }
        for (int t = g->len - 1; t >= 0 && (cw < cb + cbb || cw < k); t--)
            if (row[t] == T_W)
                row[t] = -1, cw++;
        for (int q = 0; q < cbb + cb; q++) {
            int b0 = q < cbb, at = b0 ? start - i + 2 * p - 2 * q : start + 1 + i - 2 * (q - cbb);
            if (at < 0 || row[at] >= 0)
                return -1;
            row[at] = b0 ? T_B0 : T_B1;
            mbs[at] = m - 1 - (b0 ? q : q - cbb);
        }
    }
    if (start + 2 * p + 1 > g->len)
        g->len = start + 2 * p + 1;
    return settle_w(g, p);
}

/* The fill's view of device d's row after slot j: the first later pass of each type that
 * still occurs (w->next), in slot order, each with the highest memory the passes before
 * it reach relative to slot j (-1 until a forward needs it: memory_before). It stays
 * valid while the slots up to it are idle. */
static void fill_candidates(vp_vgrid *w, int d) {
    const int *next = w->next + (size_t)d * T_N;
    int *pos = w->cand + (size_t)d * 3 * T_N, *type_at = pos + T_N, *before = pos + 2 * T_N;
    int n = 0, len = cur_grid(w)->len;
    for (int type = 0; type < T_N; type++) {
        if (next[type] >= len)
            continue;
        int k = n++;
        for (; k > 0 && pos[k - 1] > next[type]; k--) {
            pos[k] = pos[k - 1];
            type_at[k] = type_at[k - 1];
        }
        pos[k] = next[type];
        type_at[k] = type;
    }
    for (int k = 0; k < n; k++)
        before[k] = -1;
    w->n_cand[d] = n;
}

/* The highest memory device d's passes after slot j and before slot x reach, relative to
 * slot j (0 at least). */
static int memory_before(const vp_vgrid *w, int d, int j, int x) {
    const grid *g = &w->g[w->cur];
    const int8_t *row = g->ty + CELL(g, d, 0);
    int delta = 0, high = 0;
    for (int t = j + 1; t < x; t++) {
        delta += row[t] == T_F0 || row[t] == T_F1 ? 1 : row[t] == T_W ? -1 : 0;
        high = delta > high ? delta : high;
    }
    return high;
}

/* Moves into idle slot j of device d the first candidate (in slot order) that is ready by
 * then and, for a forward, keeps memory under cap; returns 1 when one moved. */
static int fill_slot(vp_vgrid *w, int d, int j, int cap) {
    grid *g = cur_grid(w);
    int8_t *row = g->ty + CELL(g, d, 0);
    int32_t *mbs = g->mb + CELL(g, d, 0);
    const int *cnt = w->count + d * T_N;
    int *pos = w->cand + (size_t)d * 3 * T_N, *type_at = pos + T_N, *before = pos + 2 * T_N;
    for (int k = 0; k < w->n_cand[d]; k++) {
        int x = pos[k], type = type_at[k], ok, pd, pt;
        if (type == T_W)
            ok = w->n_ord[d] > cnt[T_W];
        else if (pred(w->p, d, type, &pd, &pt)) {
            int e = w->at[at_index(w, pd, pt, mbs[x])];
            ok = e >= 0 && e <= j;
        } else {
            ok = 1;
        }
        if (ok && (type == T_F0 || type == T_F1)) {
            if (before[k] < 0)
                before[k] = memory_before(w, d, j, x);
            ok = w->free_at[d] + before[k] < cap;
        }
        if (!ok)
            continue;
        row[j] = (int8_t)type;
        mbs[j] = mbs[x];
        row[x] = -1;
        return 1;
    }
    return 0;
}

/* First slot after `after` where device d's row has a pass of type, or the row's length. */
static int next_of(const grid *g, int d, int type, int after) {
    const int8_t *row = g->ty + CELL(g, d, 0);
    int x = after + 1;
    while (x < g->len && row[x] != type)
        x++;
    return x;
}

/* Fills idle slots with later passes (file comment); memory never exceeds cap. Slots are
 * visited column by column, so a dependency on another device counts once it has ended. */
static void fill(vp_vgrid *w, int cap) {
    grid *g = cur_grid(w);
    int p = w->p;
    for (size_t i = 0; i < (size_t)p * 4 * (size_t)w->mm; i++)
        w->at[i] = -1;
    /* per device: memory (in free_at), B's seen (in n_ord), passes of each type seen, the
     * next slot of each type, and the slot its candidates were found from (pos, -1: stale) */
    int *mem = w->free_at, *nbk = w->n_ord, *seen = w->count;
    for (int d = 0; d < p; d++) {
        mem[d] = nbk[d] = 0;
        w->pos[d] = -1;
        for (int x = 0; x < T_N; x++) {
            seen[d * T_N + x] = 0;
            w->next[d * T_N + x] = next_of(g, d, x, -1);
        }
    }
    for (int j = 0; j < g->len; j++) {
        for (int i = 0; i < p; i++) {
            int8_t *row = g->ty + CELL(g, i, 0);
            if (row[j] < 0) {
                if (w->pos[i] < 0) {
                    fill_candidates(w, i);
                    w->pos[i] = j;
                }
                if (!fill_slot(w, i, j, cap))
                    continue;
            }
            w->pos[i] = -1; /* the row changed at or after the candidates' slot */
            int type = row[j];
            int *cnt = seen + i * T_N, *next = w->next + i * T_N;
            /* the slot the type was next found at is j, or the one it just moved from */
            next[type] = next_of(g, i, type, next[type]);
            if (type != T_W)
                w->at[at_index(w, i, type, cnt[type])] = j + 1;
            cnt[type]++;
            nbk[i] += type == T_B1 || type == T_B0;
            mem[i] += type == T_F0 || type == T_F1 ? 1 : type == T_W ? -1 : 0;
        }
    }
    /* the trailing idle slots the moves left */
    int len = 0;
    for (int d = 0; d < p; d++)
        for (int t = g->len - 1; t >= len; t--)
            if (g->ty[CELL(g, d, t)] >= 0) {
                len = t + 1;
                break;
            }
    g->len = len;
}

/* The grid as a schedule of w->m microbatches: split mode binds each W to the oldest B
 * still waiting on its device; bw mode turns each backward into a BW. */
static vp_status to_schedule(vp_vgrid *w, int bw, const char *family, vp_schedule **out,
                             vp_error *err) {
    const grid *g = cur_grid(w);
    int p = w->p;
    vp_schedule *s = vp_schedule_new(family, p, 2 * p, w->m, VP_PLACE_V, err);
    if (!s)
        return err ? err->status : VP_ENOMEM;
    vp_status rc = VP_OK;
    for (int d = 0; d < p && rc == VP_OK; d++) {
        vp_oplist *l = &s->dev[d];
        if (vp__grow((void **)&l->ops, &l->cap, PERIOD * w->m, sizeof *l->ops) != 0) {
            rc = VP_ENOMEM;
            break;
        }
        int head = 0, tail = 0; /* FIFO of (stage, mb) in w->wq */
        for (int t = 0; t < g->len && rc == VP_OK; t++) {
            int type = g->ty[CELL(g, d, t)];
            if (type < 0 || (bw && type == T_W))
                continue;
            vp_op op = {.kind = VP_OP_W};
            if (type == T_W) {
                if (head == tail || l->n == l->cap) {
                    rc = VP_EINVAL;
                    break;
                }
                op.stage = w->wq[2 * head];
                op.mb = w->wq[2 * head + 1];
                head++;
            } else {
                op.kind = type <= T_F1 ? VP_OP_F : bw ? VP_OP_BW : VP_OP_B;
                op.stage = type_stage(p, d, type);
                op.mb = g->mb[CELL(g, d, t)];
                if (op.kind == VP_OP_B) {
                    w->wq[2 * tail] = op.stage;
                    w->wq[2 * tail + 1] = op.mb;
                    tail++;
                }
            }
            if (l->n == l->cap)
                rc = VP_EINVAL;
            else
                l->ops[l->n++] = op;
        }
    }
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return vp__fail(err, rc,
                        rc == VP_ENOMEM ? "out of memory" : "V engine produced an unbalanced grid");
    }
    *out = s;
    return VP_OK;
}

/* Runs step(w, k, bw) on the current grid; keeps the result when it returns 0, replays
 * (squeezes) and does not raise the peak above k, else restores the grid from before.
 * Returns 0 kept, 1 restored, -1 no memory. */
static int tentative(vp_vgrid *w, int (*step)(vp_vgrid *, int, int), int k, int bw) {
    int spare = 1 - w->cur;
    if (grid_copy(&w->g[spare], cur_grid(w), w->p) != 0)
        return -1;
    if (step(w, k, bw) == 0 && squeeze(w, bw) == 0 && grid_peak(cur_grid(w), w->p, NULL) <= k)
        return 0;
    w->cur = spare;
    return 1;
}

static int step_warmup(vp_vgrid *w, int k, int bw) {
    warmup(w, k, bw);
    return 0;
}

static int step_cooldown(vp_vgrid *w, int k, int bw) {
    (void)bw;
    return cooldown(w, k);
}

/* The grid of block slots t (collision-free): repeated, warm-up, trim, cool-down, fill
 * (file comment). */
static vp_status build_grid(vp_vgrid *w, const int (*t)[6], vp_error *err) {
    w->built = 0;
    w->mm = w->spare;
    vp_status rc = repeat_block(w, t, 0, 0, err);
    if (rc != VP_OK)
        return rc;
    /* The warm-up rewrites the order of each prefix, so it can start from the block times;
     * when it is not kept the block order itself is squeezed. */
    int cap = grid_peak(cur_grid(w), w->p, NULL), kept = tentative(w, step_warmup, cap, 0);
    if (kept < 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    if (kept > 0 && squeeze(w, 0) != 0)
        return vp__fail(err, VP_EINVAL, "the repeated V block does not replay");
    if (w->m < w->mm && (trim(w) != 0 || squeeze(w, 0) != 0))
        return vp__fail(err, VP_EINVAL, "the trimmed V block does not replay");
    int k = grid_peak(cur_grid(w), w->p, NULL);
    if (tentative(w, step_cooldown, k, 0) < 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    fill(w, k);
    return VP_OK;
}

vp_status vp_vgrid_build(vp_vgrid *w, const int (*t)[6], const char *family, vp_schedule **out,
                         vp_error *err) {
    *out = NULL;
    vp_status rc = build_grid(w, t, err);
    return rc == VP_OK ? to_schedule(w, 0, family ? family : "v-block", out, err) : rc;
}

/* One device's running figures in measure_grid. */
typedef struct dev_run {
    double free, first, busy, left; /* left: work still ahead of the device */
    double mem, peak, mem_bytes, peak_bytes;
    int head, tail; /* FIFO of backward chunks awaiting their W, in w->wchunk */
} dev_run;

/* Stage of the pass at device d's cell of type `type` (a W: its B's, from the FIFO; -1
 * when no B awaits it). */
static int run_stage(vp_vgrid *w, dev_run *r, int d, int type) {
    int8_t *fifo = w->wchunk + (size_t)d * 2 * w->mm;
    if (type == T_W)
        return r->head < r->tail ? type_stage(w->p, d, fifo[r->head++] ? T_F1 : T_F0) : -1;
    if (type == T_B1 || type == T_B0)
        fifo[r->tail++] = type == T_B1;
    return type_stage(w->p, d, type);
}

/* Times one pass under cm (as vp_simulate would) into r; returns its end, or -1 when a
 * dependency has not run yet (the grid does not replay in slot order). */
static double run_pass(vp_vgrid *w, const vp_cost_model *cm, dev_run *r, int d, int type, int mb) {
    int stage = run_stage(w, r, d, type), pd, pt;
    if (stage < 0)
        return -1;
    double start = r->free, dur = type <= T_F1  ? cm->f[stage]
                                  : type == T_W ? cm->w[stage]
                                                : cm->b[stage];
    if (type != T_W && pred(w->p, d, type, &pd, &pt)) {
        double e = w->end[at_index(w, pd, pt, mb)];
        if (e < 0)
            return -1;
        e += pd == d ? 0 : cm->c;
        start = e > start ? e : start;
    }
    double end = start + dur, up = 0, down = 0, up_b = 0, down_b = 0;
    if (r->first < 0)
        r->first = start;
    r->busy += end - start;
    r->left -= dur;
    r->free = end;
    if (type != T_W)
        w->end[at_index(w, d, type, mb)] = end;
    if (type <= T_F1)
        up = cm->act[stage], up_b = cm->act_bytes ? cm->act_bytes[stage] : 0;
    else if (type == T_W)
        down = cm->keep[stage], down_b = cm->keep_bytes ? cm->keep_bytes[stage] : 0;
    else
        down = cm->act[stage] - cm->keep[stage],
        down_b = cm->act_bytes ? cm->act_bytes[stage] - cm->keep_bytes[stage] : 0;
    r->mem += up;
    r->peak = r->mem > r->peak ? r->mem : r->peak;
    r->mem -= down;
    r->mem_bytes += up_b;
    r->peak_bytes = r->mem_bytes > r->peak_bytes ? r->mem_bytes : r->peak_bytes;
    r->mem_bytes -= down_b;
    return end;
}

/* Replays the current grid in slot order (every dependency sits in an earlier slot) under
 * cm into out; stops early past limit (vp_vgrid_measure). -1 when it does not replay. */
static int measure_grid(vp_vgrid *w, const vp_cost_model *cm, double limit, dev_run *run,
                        vp_vgrid_metrics *out) {
    const grid *g = cur_grid(w);
    int p = w->p;
    for (size_t i = 0; i < (size_t)p * 4 * (size_t)w->mm; i++)
        w->end[i] = -1;
    for (int d = 0; d < p; d++) {
        int s0 = type_stage(p, d, T_F0), s1 = type_stage(p, d, T_F1);
        run[d] = (dev_run){.first = -1};
        run[d].left =
            w->m * (cm->f[s0] + cm->b[s0] + cm->w[s0] + cm->f[s1] + cm->b[s1] + cm->w[s1]);
    }
    double slack = limit + 1e-9 * (1 + limit);
    *out = (vp_vgrid_metrics){.complete = 1};
    for (int t = 0; t < g->len; t++)
        for (int d = 0; d < p; d++) {
            int type = g->ty[CELL(g, d, t)];
            if (type < 0)
                continue;
            double end = run_pass(w, cm, &run[d], d, type, g->mb[CELL(g, d, t)]);
            if (end < 0)
                return -1;
            if (limit > 0 && end - run[d].first + run[d].left > slack) {
                *out = (vp_vgrid_metrics){.span = end - run[d].first + run[d].left};
                return 0;
            }
        }
    double busy = 0;
    for (int d = 0; d < p; d++) {
        const dev_run *r = &run[d];
        busy += r->busy;
        out->makespan = r->free > out->makespan ? r->free : out->makespan;
        out->span = r->free - r->first > out->span ? r->free - r->first : out->span;
        out->peak = r->peak > out->peak ? r->peak : out->peak;
        out->peak_bytes = r->peak_bytes > out->peak_bytes ? r->peak_bytes : out->peak_bytes;
    }
    out->bubble = out->span > 0 ? 1.0 - busy / p / out->span : 0.0;
    return 0;
}

vp_status vp_vgrid_measure(vp_vgrid *w, const int (*t)[6], const vp_cost_model *cm, double limit,
                           vp_vgrid_metrics *out, vp_error *err) {
    *out = (vp_vgrid_metrics){0};
    if (cm->S != 2 * w->p)
        return vp__fail(err, VP_EINVAL, "cost model has %d stages, a V grid of %d devices %d",
                        cm->S, w->p, 2 * w->p);
    dev_run *run = vp__calloc((size_t)w->p, sizeof *run);
    vp_status rc = run ? build_grid(w, t, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK && measure_grid(w, cm, limit, run, out) != 0)
        rc = vp__fail(err, VP_EINVAL, "the built V block does not replay in slot order");
    free(run);
    w->built = rc == VP_OK;
    return rc;
}

vp_status vp_vgrid_schedule(vp_vgrid *w, const char *family, vp_schedule **out, vp_error *err) {
    *out = NULL;
    if (!w->built)
        return vp__fail(err, VP_EINVAL, "no V block was measured on this grid");
    return to_schedule(w, 0, family ? family : "v-block", out, err);
}

vp_status vp_vblock_build(const vp_vblock *vb, int p, int m, const char *family, vp_schedule **out,
                          vp_error *err) {
    *out = NULL;
    vp_status rc = need_two(family ? family : "v-block", p, err);
    if (rc != VP_OK)
        return rc;
    int(*t)[6] = vp__calloc((size_t)p, sizeof *t);
    vp_vgrid *w = NULL;
    rc = t ? vp_vgrid_new(p, m, &w, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        rc = slots_or_fail(vb, p, t, err);
    if (rc == VP_OK)
        rc = vp_vgrid_build(w, (const int(*)[6])t, family, out, err);
    vp_vgrid_free(w);
    free(t);
    return rc;
}

/* Memory after each slot of device d's row ([cap] ints), chunk activations. */
static void row_memory(const grid *g, int d, int *mem) {
    int cur = 0;
    for (int t = 0; t < g->len; t++) {
        int type = g->ty[CELL(g, d, t)];
        cur += type == T_F0 || type == T_F1 ? 1 : type == T_W ? -1 : 0;
        mem[t] = cur;
    }
}

/* 1F1B-V's warm-up (vp_vgrid_build_bw): every pass, in slot order, to the earliest slot
 * its dependencies and its device allow; a forward only as far back as memory stays under
 * the peak. */
static int v1f1b_compact(vp_vgrid *w) {
    grid *g = cur_grid(w);
    int p = w->p, peak = grid_peak(g, p, NULL);
    int *mem = vp__calloc((size_t)p * (size_t)g->len + 1, sizeof *mem);
    if (!mem)
        return -1;
    for (int d = 0; d < p; d++)
        row_memory(g, d, mem + (size_t)d * g->len);
    for (size_t i = 0; i < (size_t)p * 4 * (size_t)w->mm; i++)
        w->at[i] = -1;
    for (int i = 0; i < g->len; i++) {
        for (int d = 0; d < p; d++) {
            int8_t *row = g->ty + CELL(g, d, 0);
            int32_t *mbs = g->mb + CELL(g, d, 0);
            int *m_row = mem + (size_t)d * g->len;
            int type = row[i];
            if (type < 0 || type == T_W)
                continue;
            int mb = mbs[i], pos = 0, pd, pt;
            if (mb > 0 && w->at[at_index(w, d, type, mb - 1)] > pos)
                pos = w->at[at_index(w, d, type, mb - 1)];
            if (pred(p, d, type, &pd, &pt) && w->at[at_index(w, pd, pt, mb)] > pos)
                pos = w->at[at_index(w, pd, pt, mb)];
            int two = type == T_B1 || type == T_B0, to = i;
            while (pos < i && (row[pos] >= 0 || (two && row[pos + 1] >= 0)))
                pos++;
            if (two && pos < i) {
                to = pos;
                for (int x = pos + 1; x < i + 1; x++)
                    m_row[x]--;
            } else if (!two && pos < i) {
                int place = i;
                while (place > pos && m_row[place - 1] < peak)
                    place--;
                while (place < i && row[place] >= 0)
                    place++;
                to = place;
                for (int x = place; x < i; x++)
                    m_row[x]++;
            }
            if (to != i) {
                row[to] = (int8_t)type;
                mbs[to] = mb;
                row[i] = -1;
                if (two) {
                    row[to + 1] = T_W;
                    mbs[to + 1] = mb;
                    row[i + 1] = -1;
                }
            }
            w->at[at_index(w, d, type, mb)] = to + 1 + two;
        }
    }
    free(mem);
    return 0;
}

vp_status vp_vgrid_build_bw(vp_vgrid *w, const int (*t)[6], int canonical, const char *family,
                            vp_schedule **out, vp_error *err) {
    *out = NULL;
    w->built = 0;
    w->mm = w->m; /* no spare copies: the compaction handles short runs */
    vp_status rc = repeat_block(w, t, 1, 1, err);
    if (rc == VP_OK && canonical) {
        int kept = tentative(w, step_warmup, grid_peak(cur_grid(w), w->p, NULL), 1);
        if (kept < 0)
            rc = vp__fail(err, VP_ENOMEM, "out of memory");
        else if (kept > 0)
            rc = vp__fail(err, VP_EVALIDATION, "the canonical warm-up does not replay");
    }
    if (rc == VP_OK && v1f1b_compact(w) != 0)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    return rc == VP_OK ? to_schedule(w, 1, family ? family : "1f1b-v", out, err) : rc;
}
