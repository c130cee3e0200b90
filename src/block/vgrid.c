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

#include "block/vgrid_internal.h"

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
    free(w->waiting);
    free(w->queue);
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
    w->waiting = vp__calloc((size_t)p, sizeof *w->waiting);
    w->queue = vp__calloc((size_t)p, sizeof *w->queue);
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
        !w->wq || !w->waiting || !w->queue || !w->next || !w->cand || !w->n_cand || !w->end ||
        !w->wchunk || grid_reserve(&w->g[0], p, cols) != 0 ||
        grid_reserve(&w->g[1], p, cols) != 0) {
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

/* Fills a framework block (V placement, T = 6, unit passes) from slots [p][6] and runs
 * the framework's collision check (VP_EVALIDATION when copies overlap). */
static vp_status block_from_slots(const int (*t)[6], int p, vp_block **out, vp_error *err) {
    vp_block *b = NULL;
    vp_status made = vp_block_new(p, 2 * p, VP_PLACE_V, &b, err);
    if (made != VP_OK)
        return made;
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

/* The device of the pass that waits for device d's pass of `type` (same microbatch), or -1
 * for the chunk-0 backward of device 0, which ends the V (pred, the other way round). */
static int successor(int p, int d, int type) {
    switch (type) {
    case T_F0:
    case T_B1:
        return d == p - 1 ? d : d + 1;
    case T_F1:
        return d == 0 ? 0 : d - 1;
    case T_B0:
        return d == 0 ? -1 : d - 1;
    default:
        return -1;
    }
}

/* Copies each device's order out of the grid (bw: without the W halves) and returns the
 * peak memory of the orders in chunk activations (F +1; W -1, or in bw mode a backward
 * -1, its W half following it); -1 when a row holds more passes than it can. */
static int take_orders(vp_vgrid *w, int bw) {
    const grid *g = cur_grid(w);
    int per = PERIOD * w->mm, peak = 0;
    for (int d = 0; d < w->p; d++) {
        const int8_t *row = g->ty + CELL(g, d, 0);
        const int32_t *mbs = g->mb + CELL(g, d, 0);
        int8_t *oty = w->ord_ty + (size_t)d * per;
        int32_t *omb = w->ord_mb + (size_t)d * per;
        int n = 0, mem = 0;
        for (int t = 0; t < g->len; t++) {
            int type = row[t];
            if (type < 0 || (bw && type == T_W))
                continue;
            if (n == per)
                return -1;
            mem += type <= T_F1 ? 1 : type == T_W || (bw && type <= T_B0) ? -1 : 0;
            peak = mem > peak ? mem : peak;
            oty[n] = (int8_t)type;
            omb[n++] = mbs[t];
        }
        w->n_ord[d] = n;
    }
    return peak;
}

/* Places device d's passes from its order position on, each at the first slot after its
 * device and its dependency are free, until one waits for a pass not placed yet (whose
 * at-index goes to w->waiting[d]) or the order ends. Wakes the devices whose dependency
 * it places. 0 ok, -1 no memory. */
static int run_device(vp_vgrid *w, int d, int bw, int *queue, int *tail) {
    grid *g = cur_grid(w);
    int p = w->p, per = PERIOD * w->mm, k = w->pos[d], n = w->n_ord[d], t0 = w->free_at[d];
    const int8_t *oty = w->ord_ty + (size_t)d * per;
    const int32_t *omb = w->ord_mb + (size_t)d * per;
    for (; k < n; k++) {
        int type = oty[k], mb = omb[k], pd, pt, t = t0;
        if (pred(p, d, type, &pd, &pt)) {
            size_t need = at_index(w, pd, pt, mb);
            if (w->at[need] < 0) {
                w->waiting[d] = (long)need;
                break;
            }
            t = w->at[need] > t ? w->at[need] : t;
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
        t0 = t + dur;
        g->len = t0 > g->len ? t0 : g->len;
        if (type == T_W)
            continue;
        size_t done = at_index(w, d, type, mb);
        w->at[done] = t0;
        int next = successor(p, d, type);
        if (next >= 0 && w->waiting[next] == (long)done) {
            w->waiting[next] = -1;
            queue[(*tail)++ % p] = next;
        }
    }
    w->pos[d] = k;
    w->free_at[d] = t0;
    return 0;
}

/* Replays each device's order as early as dependencies allow (unit slots): the devices
 * run until they wait, and a device runs again when the pass it waits for is placed. In
 * bw mode a backward occupies its slot and the W slot after it. Sets w->order_peak (the
 * orders' peak, take_orders). -1 when the order deadlocks (or no memory). */
static int squeeze(vp_vgrid *w, int bw) {
    grid *g = cur_grid(w);
    int p = w->p, head = 0, tail = 0;
    w->order_peak = take_orders(w, bw);
    if (w->order_peak < 0)
        return -1;
    for (size_t i = 0; i < (size_t)p * 4 * (size_t)w->mm; i++)
        w->at[i] = -1;
    grid_clear(g, p);
    for (int d = 0; d < p; d++) {
        w->pos[d] = w->free_at[d] = 0;
        w->waiting[d] = -1;
        w->queue[tail++] = d;
    }
    while (head < tail)
        if (run_device(w, w->queue[head++ % p], bw, w->queue, &tail) != 0)
            return -1;
    for (int d = 0; d < p; d++)
        if (w->pos[d] < w->n_ord[d])
            return -1;
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
                g->mb[CELL(g, d, t)] >= w->mw)
                g->ty[CELL(g, d, t)] = -1;
    return settle_w(g, w->p);
}

/* Cool-down onto the critical chain (file comment). -1 when the template collides. */
static int cooldown(vp_vgrid *w, int k) {
    grid *g = cur_grid(w);
    int p = w->p, m = w->mw, start = -1;
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

/* Runs step(w, k, bw) on the current grid; keeps the result when it returns 0, replays
 * (squeezes) and does not raise the peak above k, else restores the grid from before.
 * Returns 0 kept, 1 restored, -1 no memory. */
static int tentative(vp_vgrid *w, int (*step)(vp_vgrid *, int, int), int k, int bw) {
    int spare = 1 - w->cur;
    if (grid_copy(&w->g[spare], cur_grid(w), w->p) != 0)
        return -1;
    if (step(w, k, bw) == 0 && squeeze(w, bw) == 0 && w->order_peak <= k)
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

/* The grid of block slots t (collision-free) for mw microbatches: repeated, warm-up, trim,
 * cool-down, fill (file comment). */
static vp_status build_copies(vp_vgrid *w, const int (*t)[6], int mw, vp_error *err) {
    w->built = 0;
    w->bw = 0;
    w->mw = mw;
    w->mm = mw > 2 * w->p ? mw : 2 * w->p;
    w->extra = 0;
    w->cut = -1;
    vp_status rc = repeat_block(w, t, 0, 0, err);
    if (rc != VP_OK)
        return rc;
    /* The warm-up rewrites the order of each prefix, so it can start from the block times;
     * when it is not kept the block order itself is squeezed. */
    int cap = vp_vgrid_peak(w, t), kept = tentative(w, step_warmup, cap, 0);
    if (kept < 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    if (kept > 0 && squeeze(w, 0) != 0)
        return vp__fail(err, VP_EINVAL, "the repeated V block does not replay");
    if (w->mw < w->mm && (trim(w) != 0 || squeeze(w, 0) != 0))
        return vp__fail(err, VP_EINVAL, "the trimmed V block does not replay");
    int k = w->order_peak; /* of the grid the last squeeze placed: the current one */
    if (tentative(w, step_cooldown, k, 0) < 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    fill(w, k);
    return VP_OK;
}

/* 1 when column c of every row repeats 6 slots later, one microbatch on. */
static int repeats(const grid *g, int p, int c) {
    for (int d = 0; d < p; d++) {
        int type = g->ty[CELL(g, d, c)];
        if (type != g->ty[CELL(g, d, c + PERIOD)] ||
            (type >= 0 && type != T_W && g->mb[CELL(g, d, c + PERIOD)] != g->mb[CELL(g, d, c)] + 1))
            return 0;
    }
    return 1;
}

/* Where the built grid can take more periods: the first column c such that the 18 slots
 * before it repeat 6 slots later on every row and every pass from 6 slots before it on
 * waits for a pass at most 12 slots before that, so copies of the 6 slots before c
 * inserted at c, the microbatches after c shifted, form the grid of more microbatches.
 * Returns 1 with w->cut set, 0 when there is none. */
static int find_cut(vp_vgrid *w) {
    const grid *g = cur_grid(w);
    int p = w->p, run = 0, cut = -1;
    for (int c = 0; c + PERIOD < g->len && cut < 0; c++) {
        run = repeats(g, p, c) ? run + 1 : 0;
        if (run == 3 * PERIOD)
            cut = c + 1;
    }
    for (int d = 0; d < p && cut >= 0; d++)
        for (int type = 0; type < 4 && cut >= 0; type++)
            for (int mb = 0, pd, pt; mb < w->mw && cut >= 0; mb++) {
                int end = w->at[at_index(w, d, type, mb)];
                if (end - 1 >= cut - PERIOD && pred(p, d, type, &pd, &pt) &&
                    w->at[at_index(w, pd, pt, mb)] - 1 < cut - 3 * PERIOD)
                    cut = -1;
            }
    w->cut = cut;
    return cut >= 0;
}

/* Microbatches to build when m is larger, periods being inserted for the rest (find_cut):
 * 2p + 8, enough for the warm-up, a repeating stretch and the cool-down of every block
 * seen (a full build is the fallback); 0 when m is not larger. */
static int fewer_copies(const vp_vgrid *w) {
    int few = 2 * w->p + 8;
    return few < w->m ? few : 0;
}

/* The grid of block slots t for w->m microbatches: built for fewer with periods inserted
 * when that works (fewer_copies, find_cut), else in full. */
static vp_status build_grid(vp_vgrid *w, const int (*t)[6], vp_error *err) {
    int few = fewer_copies(w);
    if (few > 0) {
        vp_status rc = build_copies(w, t, few, err);
        if (rc != VP_OK || find_cut(w)) {
            w->extra = rc == VP_OK ? w->m - few : 0;
            return rc;
        }
    }
    return build_copies(w, t, w->m, err);
}

vp_status vp_vgrid_build(vp_vgrid *w, const int (*t)[6], const char *family, vp_schedule **out,
                         vp_error *err) {
    *out = NULL;
    vp_status rc = build_grid(w, t, err);
    return rc == VP_OK ? vp__vgrid_schedule(w, 0, family ? family : "v-block", out, err) : rc;
}

/* Makes shot (of a build at w's p and m) w's current grid, as build_grid left it. */
static vp_status restore(vp_vgrid *w, const vp__vgrid_shot *shot, vp_error *err) {
    grid *g = cur_grid(w);
    if (grid_reserve(g, w->p, shot->len + 1) != 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    grid_clear(g, w->p);
    for (int d = 0; d < w->p && shot->len > 0; d++) {
        memcpy(g->ty + CELL(g, d, 0), shot->ty + (size_t)d * shot->len, (size_t)shot->len);
        memcpy(g->mb + CELL(g, d, 0), shot->mb + (size_t)d * shot->len,
               (size_t)shot->len * sizeof *g->mb);
    }
    g->len = shot->len;
    w->built = w->bw = 0;
    w->mw = shot->mw;
    w->mm = shot->mm;
    w->cut = shot->cut;
    w->extra = shot->extra;
    w->order_peak = shot->order_peak;
    return VP_OK;
}

vp_status vp_vgrid_measure(vp_vgrid *w, const int (*t)[6], const vp_cost_model *cm, double limit,
                           vp_vgrid_metrics *out, vp_error *err) {
    *out = (vp_vgrid_metrics){0};
    if (cm->S != 2 * w->p)
        return vp__fail(err, VP_EINVAL, "cost model has %d stages, a V grid of %d devices %d",
                        cm->S, w->p, 2 * w->p);
    const vp__vgrid_shot *shot = w->memo ? vp__vgrid_memo_find(w->memo, w, t) : NULL;
    vp_status rc = shot ? restore(w, shot, err) : build_grid(w, t, err);
    if (rc == VP_OK && w->memo && !shot)
        vp__vgrid_memo_keep(w->memo, w, t);
    if (rc == VP_OK && vp__vgrid_replay(w, cm, limit, out) != 0)
        rc = vp__fail(err, VP_EINVAL, "the built V block does not replay in slot order");
    w->built = rc == VP_OK;
    return rc;
}

vp_status vp_vgrid_schedule(vp_vgrid *w, const char *family, vp_schedule **out, vp_error *err) {
    *out = NULL;
    if (!w->built)
        return vp__fail(err, VP_EINVAL, "no V block was measured on this grid");
    return vp__vgrid_schedule(w, w->bw, family ? family : w->bw ? "1f1b-v" : "v-block", out, err);
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

/* Memory after each slot of every row (chunk activations: F +1, W -1), under range
 * updates: the rows are cut into runs of `run` slots, each with the largest value in it
 * and an amount added to all of it, so an update or a search over n slots costs
 * O(run + n / run) instead of O(n). Moves span about p slots, so runs are about sqrt(p)
 * long (a power of two). */
typedef struct row_mem {
    int len, runs;  /* slots and runs per row */
    int run, shift; /* slots per run, 1 << shift */
    int *val;       /* [p][len] memory after the slot, less its run's add */
    int *top, *add; /* [p][runs] largest val in the run; added to the whole run */
} row_mem;

static void row_mem_free(row_mem *rm) {
    free(rm->val);
    free(rm->top);
    free(rm->add);
}

/* The largest val of run r of row d. */
static void run_top(row_mem *rm, int d, int r) {
    const int *v = rm->val + (size_t)d * rm->len;
    int lo = r << rm->shift, hi = lo + rm->run < rm->len ? lo + rm->run : rm->len, top = v[lo];
    for (int x = lo + 1; x < hi; x++)
        top = v[x] > top ? v[x] : top;
    rm->top[(size_t)d * rm->runs + r] = top;
}

/* The memory rows of g. 0 ok, -1 no memory. */
static int row_mem_init(row_mem *rm, const grid *g, int p) {
    for (rm->shift = 1; (1 << 2 * rm->shift) < p; rm->shift++)
        ;
    rm->run = 1 << rm->shift;
    rm->len = g->len;
    rm->runs = (g->len + rm->run - 1) >> rm->shift;
    rm->val = vp__calloc((size_t)p * (size_t)rm->len + 1, sizeof *rm->val);
    rm->top = vp__calloc((size_t)p * (size_t)rm->runs + 1, sizeof *rm->top);
    rm->add = vp__calloc((size_t)p * (size_t)rm->runs + 1, sizeof *rm->add);
    if (!rm->val || !rm->top || !rm->add)
        return -1;
    for (int d = 0; d < p; d++) {
        int cur = 0, *v = rm->val + (size_t)d * rm->len;
        for (int t = 0; t < g->len; t++) {
            int type = g->ty[CELL(g, d, t)];
            cur += type == T_F0 || type == T_F1 ? 1 : type == T_W ? -1 : 0;
            v[t] = cur;
        }
        for (int r = 0; r < rm->runs; r++)
            run_top(rm, d, r);
    }
    return 0;
}

/* Adds delta to the memory after slots [lo, hi) of row d. */
static void row_mem_add(row_mem *rm, int d, int lo, int hi, int delta) {
    int *v = rm->val + (size_t)d * rm->len, *add = rm->add + (size_t)d * rm->runs;
    while (lo < hi) {
        int r = lo >> rm->shift, end = (r + 1) << rm->shift;
        if (lo == r << rm->shift && end <= hi) { /* the whole run */
            add[r] += delta;
            lo = end;
            continue;
        }
        int *top = &rm->top[(size_t)d * rm->runs + r], was_top = 0;
        for (int stop = end < hi ? end : hi; lo < stop; lo++) {
            was_top |= v[lo] == *top;
            v[lo] += delta;
            *top = v[lo] > *top ? v[lo] : *top;
        }
        if (delta < 0 && was_top) /* the largest may have gone down */
            run_top(rm, d, r);
    }
}

/* The last slot x in [lo, hi) of row d whose memory after it is at least level, or -1. */
static int row_mem_last_at(const row_mem *rm, int d, int lo, int hi, int level) {
    const int *v = rm->val + (size_t)d * rm->len, *add = rm->add + (size_t)d * rm->runs,
              *top = rm->top + (size_t)d * rm->runs;
    int x = hi - 1;
    while (x >= lo) {
        int r = x >> rm->shift, start = r << rm->shift;
        if (x == start + rm->run - 1 && start >= lo && top[r] + add[r] < level) {
            x = start - 1; /* a whole run below the level */
            continue;
        }
        if (v[x] + add[r] >= level)
            return x;
        x--;
    }
    return -1;
}

/* 1F1B-V's warm-up (vp_vgrid_build_bw): every pass, in slot order, to the earliest slot
 * its dependencies and its device allow; a forward only as far back as memory stays under
 * the peak. */
static int v1f1b_compact(vp_vgrid *w) {
    grid *g = cur_grid(w);
    int p = w->p, peak = grid_peak(g, p, NULL), end = 0;
    row_mem rm = {0};
    if (row_mem_init(&rm, g, p) != 0) {
        row_mem_free(&rm);
        return -1;
    }
    for (size_t i = 0; i < (size_t)p * 4 * (size_t)w->mm; i++)
        w->at[i] = -1;
    for (int i = 0; i < g->len; i++) {
        for (int d = 0; d < p; d++) {
            int8_t *row = g->ty + CELL(g, d, 0);
            int32_t *mbs = g->mb + CELL(g, d, 0);
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
                row_mem_add(&rm, d, pos + 1, i + 1, -1);
            } else if (!two && pos < i) {
                int place = row_mem_last_at(&rm, d, pos, i, peak) + 1;
                place = place > pos ? place : pos;
                while (place < i && row[place] >= 0)
                    place++;
                to = place;
                row_mem_add(&rm, d, place, i, 1);
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
            end = to + 1 + two > end ? to + 1 + two : end;
        }
    }
    g->len = end; /* without the columns the moves emptied at the end */
    row_mem_free(&rm);
    return 0;
}

/* 1F1B-V's grid of block slots t for mw microbatches: repeated, the canonical warm-up when
 * asked, compacted (vp_vgrid_build_bw). */
static vp_status build_bw_copies(vp_vgrid *w, const int (*t)[6], int canonical, int mw,
                                 vp_error *err) {
    w->mm = w->mw = mw; /* no spare copies: the compaction handles short runs */
    w->extra = 0;
    w->cut = -1;
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
    return rc;
}

/* 1F1B-V's grid for w->m microbatches: built for fewer with periods inserted when that
 * works (fewer_copies, find_cut), else in full. */
static vp_status build_bw_grid(vp_vgrid *w, const int (*t)[6], int canonical, vp_error *err) {
    w->built = 0;
    w->bw = 1;
    int few = fewer_copies(w);
    if (few > 0) {
        vp_status rc = build_bw_copies(w, t, canonical, few, err);
        if (rc != VP_OK || find_cut(w)) {
            w->extra = rc == VP_OK ? w->m - few : 0;
            return rc;
        }
    }
    return build_bw_copies(w, t, canonical, w->m, err);
}

vp_status vp_vgrid_build_bw(vp_vgrid *w, const int (*t)[6], int canonical, const char *family,
                            vp_schedule **out, vp_error *err) {
    *out = NULL;
    vp_status rc = build_bw_grid(w, t, canonical, err);
    return rc == VP_OK ? vp__vgrid_schedule(w, 1, family ? family : "1f1b-v", out, err) : rc;
}

vp_status vp_vgrid_measure_bw(vp_vgrid *w, const int (*t)[6], int canonical,
                              const vp_cost_model *cm, vp_vgrid_metrics *out, vp_error *err) {
    *out = (vp_vgrid_metrics){0};
    if (cm->S != 2 * w->p)
        return vp__fail(err, VP_EINVAL, "cost model has %d stages, a V grid of %d devices %d",
                        cm->S, w->p, 2 * w->p);
    vp_status rc = build_bw_grid(w, t, canonical, err);
    if (rc == VP_OK && vp__vgrid_replay(w, cm, 0, out) != 0)
        rc = vp__fail(err, VP_EINVAL, "the compacted 1F1B-V grid does not replay in slot order");
    w->built = rc == VP_OK;
    return rc;
}
