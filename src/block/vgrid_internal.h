/* The V slot grid's state, shared by the engine (vgrid.c) and the readers of a built grid
 * (vgrid_read.c). Private to the block module. */
#ifndef VPIPE_VGRID_INTERNAL_H
#define VPIPE_VGRID_INTERNAL_H

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
    int p, m;       /* shape */
    int spare;      /* microbatches the arrays hold: max(m, 2p) */
    int mm;         /* microbatches repeated before trimming: max(mw, 2p) (split), mw (bw) */
    int mw;         /* microbatches the grid holds: m, or fewer when periods are inserted */
    int cut, extra; /* the grid stands for itself with `extra` copies of its period (the 6
                       slots before column cut) inserted at cut, microbatches after it
                       shifted; extra = 0: the grid as it is */
    int built;      /* the current grid is a finished measured build (vp_vgrid_schedule) */
    int bw;         /* the current grid is in bw mode (1F1B-V: a backward is a BW whose second
                       slot is its W cell) */
    int order_peak; /* peak of the orders the last squeeze placed (take_orders) */
    grid g[2];      /* current and spare grid */
    int cur;
    int32_t *at;      /* [p][4][mm] slot where (device, type, microbatch) ends, -1 */
    int8_t *ord_ty;   /* [p][6*mm] per-device order, for squeezing */
    int32_t *ord_mb;  /* [p][6*mm] */
    int *n_ord, *pos; /* [p] */
    long *waiting;    /* [p] squeeze: at-index of the pass a device waits for, -1 */
    int *queue;       /* [p] squeeze: devices to run, a ring */
    int *free_at;     /* [p] */
    int *count;       /* [p][T_N] passes of each type seen, for the fill */
    int *next;        /* [p][T_N] the fill: next slot of each type in the row */
    int *cand;        /* [p][3][T_N] the fill's candidates: slot, type, memory before */
    int *n_cand;      /* [p] */
    int *wq;          /* [6*mm] FIFO of B passes awaiting their W (stage, microbatch pairs) */
    double *end;      /* [p][4][spare] vp_vgrid_measure: end of (device, type, microbatch) */
    int8_t *wchunk;   /* [p][2*spare] vp_vgrid_measure: per device, FIFO of B chunks (0, 1) */

    vp_vgrid_memo *memo; /* vp_vgrid_use_memo's, or NULL */
};

/* A built split-mode grid as vp_vgrid_measure leaves it: what its replay and schedule read
 * (vgrid_memo.c keeps them, vgrid.c takes and restores them). */
typedef struct vp__vgrid_shot {
    int len, mw, mm, cut, extra, order_peak;
    int8_t *ty;  /* [p][len], row after row */
    int32_t *mb; /* [p][len] */
} vp__vgrid_shot;

/* The shot memo keeps for block slots t at w's p and m, or NULL; it stays until the memo
 * is freed. */
const vp__vgrid_shot *vp__vgrid_memo_find(vp_vgrid_memo *memo, const vp_vgrid *w,
                                          const int (*t)[6]);
/* Keeps a shot of w's current grid, built from slots t, unless the memo is full or has
 * one. */
void vp__vgrid_memo_keep(vp_vgrid_memo *memo, const vp_vgrid *w, const int (*t)[6]);

#define CELL(g, d, t) ((size_t)(d) * (size_t)(g)->cap + (size_t)(t))

static inline grid *cur_grid(vp_vgrid *w) {
    return &w->g[w->cur];
}

/* Index of (device, type, microbatch) in w->at: microbatch-major, so the passes one pass
 * waits for (same microbatch, a neighbouring device) sit close by. */
static inline size_t at_index(const vp_vgrid *w, int d, int type, int mb) {
    return ((size_t)mb * (size_t)w->p + (size_t)d) * 4 + (size_t)type;
}

/* The pass at virtual slot v of device d's row (the grid with its inserted periods): its
 * type (-1 idle) and microbatch. Slots run to the grid's length plus 6 * extra. */
static inline int virtual_cell(const vp_vgrid *w, int d, int v, int *mb) {
    const grid *g = &w->g[w->cur];
    int col = v, shift = 0;
    if (v >= w->cut && w->extra > 0) {
        int k = (v - w->cut) / PERIOD;
        col = k < w->extra ? w->cut - PERIOD + (v - w->cut) % PERIOD : v - PERIOD * w->extra;
        shift = k < w->extra ? k + 1 : w->extra;
    }
    int type = g->ty[CELL(g, d, col)];
    *mb = g->mb[CELL(g, d, col)] + (type == T_W ? 0 : shift);
    return type;
}

/* The pass (device, type) a pass waits for, same microbatch; 0 when it waits for none. In
 * bw mode a backward waits for the whole BW upstream, which ends with its W slot. */
static inline int pred(int p, int d, int type, int *pd, int *pt) {
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

/* Stage of a grid pass type on device d (W: stage of the B it follows, not known here). */
static inline int type_stage(int p, int d, int type) {
    return type == T_F0 || type == T_B0 ? d : 2 * p - 1 - d;
}

/* The grid as a schedule of w->m microbatches (vgrid_read.c): split mode binds each W to
 * the oldest B still waiting on its device; bw mode turns each backward into a BW. */
vp_status vp__vgrid_schedule(vp_vgrid *w, int bw, const char *family, vp_schedule **out,
                             vp_error *err);

/* Replays the current grid in slot order under cm into out (vp_vgrid_measure's replay,
 * vgrid_read.c; in bw mode each backward a BW, its W cell skipped). -1 when it does not
 * replay in slot order or memory runs out. */
int vp__vgrid_replay(vp_vgrid *w, const vp_cost_model *cm, double limit, vp_vgrid_metrics *out);

#endif
