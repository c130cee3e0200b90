/* Building blocks (the timing of one microbatch's passes, repeated every interval) and V
 * blocks (building blocks of the V placement in unit slots).
 *
 * Module `block` (src/block/): blocks, their repetition, collisions, reorder, lifespans,
 * the block file format, and the V slot grid that builds V blocks. Depends on sim and
 * schedule.
 *
 * A block is the timing of one "copy": the start offset and duration of every pass of
 * the microbatches the copy carries, on a fixed stage -> device map. Copy j is the block
 * shifted by j*T (T the interval) and carries microbatches j*mb_per_copy + pass.mb, so a
 * pass may belong to an earlier or later microbatch than its copy (pass.mb < 0 or
 * >= mb_per_copy); repeating to m microbatches runs every copy that holds a microbatch of
 * [0, m) and drops (trims) the passes whose microbatch falls outside.
 *
 * The per-device order of a repeated block is its passes sorted by start time (ties: F
 * before B before BW before W; F by ascending stage, backward by descending stage; then
 * by microbatch). That order is the schedule: squeezing is the eager replay of
 * vp_simulate, which keeps every device's order and starts each pass as soon as its
 * dependencies allow. vp_block_reorder then moves passes earlier into idle gaps without
 * raising any device's peak. Peak memory depends only on the orders, so the lifespan
 * bound Σ⌈l_s/T⌉·act_s holds for the repeated order and for everything derived from it.
 *
 * Typical use:
 *   vp_block_new(p, 2 * p, VP_PLACE_V, &b, err);
 *   vp_block_cost_model(b, &costs, &mem, &cm, err);
 *   vp_block_add(b, VP_OP_F, s, 0, start, cm->f[s]);  ...
 *   vp_block_min_interval(b, &b->T, err);                  (or set b->T yourself)
 *   vp_block_repeat(b, m, "my-block", &sched, err);        (collision-checked)
 *   vp_simulate(sched, cm, &sim, err);                     (the squeeze)
 *
 * Block JSON (vp_block_read_json; `vpipe block --help` shows the same):
 *   {"format": "vpipe-block", "version": 1,   (version optional, 1)
 *    "p": 4,                      devices, >= 1
 *    "placement": "single",       "single" | "loop" | "v" | "bidir" | "custom" (default
 *                                 single)
 *    "stages": 4,                 optional for single (p), v and bidir (2p); required for
 *                                 loop (a multiple of p) and custom
 *    "stage_device": [0, 1, ...], custom only: device of every stage
 *    "mb_per_copy": 1,            optional, microbatches one copy carries (default 1)
 *    "interval": 6,               optional T; default: the smallest collision-free T
 *    "costs": "F=2,B=2,W=2,c=0",  optional default costs (a caller may override them)
 *    "passes": [["F", 0, 0], ["B", 3, 8], ["W", 3, 10, 0], ["F", 1, 2, 0, 2.5], ...]}
 * A pass is [kind, stage, start] with optional 4th element mb (microbatch offset within
 * the copy, default 0) and optional 5th element duration (default: from the costs).
 * kind is "F", "B", "W" or "BW". Every (stage, microbatch offset) on a route needs F and
 * either BW or both B and W, exactly once.
 */
#ifndef VPIPE_BLOCK_H
#define VPIPE_BLOCK_H

#include <stddef.h>

#include "vpipe/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VP_BLOCK_FORMAT "vpipe-block"
#define VP_BLOCK_VERSION 1

/* One pass of the block. */
typedef struct vp_block_pass {
    int kind;     /* VP_OP_F, VP_OP_B, VP_OP_W or VP_OP_BW */
    int stage;    /* 0 <= stage < S */
    int mb;       /* microbatch offset: copy j runs microbatch j*mb_per_copy + mb */
    double start; /* start time in copy 0 */
    double dur;   /* duration, >= 0 */
} vp_block_pass;

typedef struct vp_block {
    int p;                       /* devices */
    int S;                       /* stages */
    vp_placement_kind placement; /* how stage_device was made (CUSTOM: set by the caller) */
    int *stage_device;           /* [S] device of each stage (owned) */
    int mb_per_copy;             /* microbatches per copy, >= 1 (default 1) */
    double T;                    /* interval between copies (0 until set) */
    vp_block_pass *pass;         /* [n] passes of copy 0, any order (owned) */
    int n, cap;
} vp_block;

/* Allocates an empty block (no passes, T = 0, mb_per_copy = 1) for p devices and S stages
 * into *out, placed like vp_schedule_new places them (SINGLE S=p, LOOP S a multiple of p,
 * V and BIDIR S=2p; CUSTOM puts every stage on device 0 for the caller to change). Caller
 * frees with vp_block_free. VP_EINVAL, VP_ENOMEM; *out is NULL on failure. */
VP_API vp_status vp_block_new(int p, int S, vp_placement_kind placement, vp_block **out,
                              vp_error *err);

/* Releases a block; NULL is a no-op. */
VP_API void vp_block_free(vp_block *b);

/* A deep copy of b into a new *out (caller frees). VP_ENOMEM; *out is NULL on failure. */
VP_API vp_status vp_block_clone(const vp_block *b, vp_block **out, vp_error *err);

/* Appends a pass. VP_EINVAL when kind or stage is out of range, start is not finite or
 * dur < 0 / not finite (vp_block_check has the tighter limits), VP_ENOMEM when memory
 * runs out. */
VP_API vp_status vp_block_add(vp_block *b, vp_op_kind kind, int stage, int mb, double start,
                              double dur);

/* Index of the pass (kind, stage, mb) or -1. */
VP_API int vp_block_find(const vp_block *b, vp_op_kind kind, int stage, int mb);

/* A new cost model for the block's shape into *out (per-stage costs and memory deltas,
 * chunk passes charged 1/v as in vp_cost_model_new, whose errors pass through). Caller
 * frees with vp_cost_model_free; *out is NULL on failure. */
VP_API vp_status vp_block_cost_model(const vp_block *b, const vp_costs *costs, const vp_memcfg *mem,
                                     vp_cost_model **out, vp_error *err);

/* Checks the block's structure: stage_device in range, 1 <= mb_per_copy <= 64, every pass
 * with |start| <= 1e15, duration in [0, 1e15] and |mb| <= 1e6, and for each microbatch
 * class (offset mod mb_per_copy) the stages it uses form one route (a contiguous stage
 * range, equally long for every class) on which each stage has F and either BW or B and
 * W exactly once. Does not look at timing or T. VP_EINVAL naming the pass or the
 * missing one. */
VP_API vp_status vp_block_check(const vp_block *b, vp_error *err);

/* A collision: pass a of copy 0 overlaps pass b of copy `copy` on device `device`. */
typedef struct vp_block_collision {
    int device;
    int a, b; /* pass indices */
    int copy; /* copy of pass b (>= 0; 0 means the block overlaps itself) */
    double a_start, a_end, b_start, b_end; /* the overlapping intervals */
} vp_block_collision;

/* Checks that copies repeated every T (infinitely, both ways) never overlap on a device
 * (passes that only touch are fine; zero-length passes never collide). VP_OK when
 * collision-free; VP_EVALIDATION when two passes overlap, with *hit (optional) filled and a
 * message naming the device, both passes with their microbatches and their intervals;
 * VP_EINVAL when T <= 0, not finite, or so small that the block spans more than 1e6
 * intervals. Cost: O(n log n). */
VP_API vp_status vp_block_collisions(const vp_block *b, double T, vp_block_collision *hit,
                                     vp_error *err);

/* Smallest collision-free interval: at least the busiest device's work per copy; raised
 * past every collision found (the collision-free set need not be an interval, this
 * returns its least element). VP_EVALIDATION (naming the passes) when the block overlaps
 * itself within one copy, so no T works; VP_EINVAL when every pass has zero duration. */
VP_API vp_status vp_block_min_interval(const vp_block *b, double *T, vp_error *err);

/* The 1F1B block for p devices under cm (single placement, cm->S == p): F chained down
 * the devices (F_i = F_{i-1} + f_{i-1} + c), the backward chained back from the last
 * device right after its F; split = 0 uses BW passes, split = 1 puts a B and its W in
 * each BW's place (the chain still waits for the W, as in 1F1B). T is set to the
 * smallest collision-free interval. Repeating it gives the 1F1B order (for split = 0 the
 * same schedule as the `1f1b` family). Caller frees. VP_EINVAL when p or cm do not fit or
 * every cost is zero (no interval), VP_ENOMEM; *out is NULL on failure. */
VP_API vp_status vp_block_1f1b(int p, const vp_cost_model *cm, int split, vp_block **out,
                               vp_error *err);

/* Repeats the block every b->T and returns the schedule of m microbatches (family
 * names it, NULL: "block"): each device's passes ordered by start time (ties as in the
 * header comment), passes whose microbatch is outside [0, m) dropped. Runs
 * vp_block_check and vp_block_collisions first (their errors pass through). The result
 * has the block's placement (mb_first from the route of each microbatch's class) and
 * passes vp_schedule_validate for blocks whose own timing respects the dependencies
 * (callers building blocks by hand should validate). Caller frees. Cost: one sort of the
 * block's passes per device, then O(ops · log(passes per device)). */
VP_API vp_status vp_block_repeat(const vp_block *b, int m, const char *family, vp_schedule **out,
                                 vp_error *err);

/* Start time of every op of a repeated block before squeezing ([p][n_d], parallel to
 * s->dev[d].ops, as in vp_sim): the block time of the op's copy. s must come from
 * vp_block_repeat(b, ...). Fills times, a caller-allocated array of per-device arrays
 * (NAN for an op the block has no pass for). VP_ENOMEM. */
VP_API vp_status vp_block_times(const vp_block *b, const vp_schedule *s, double **times,
                                vp_error *err);

/* Reorders a (squeezed) schedule in place, in rounds on the eager replay under cm. Per
 * device and round: a pass other than W that has Ws right in front of it and would start
 * earlier ahead of some of them moves ahead of as many as it can, those Ws running after
 * it with the last still ending by the pass's old end (nothing depends on a W); on a
 * device with no such move in the round, a later pass whose dependency is done inside an
 * idle gap and that fits the rest of the gap moves into it. A move is taken only when
 * every level of the device's memory replay stays at or below its peak before reordering
 * (units, and bytes when cm has them), so the moves land mostly in warm-up and cool-down.
 * Never starts an F, B or BW later (a W may start later, but ends by the old end of the
 * pass that went ahead of it), so never raises a makespan or a peak (times compared
 * exactly on durations rounded to a decimal grid they lie on, else to 2^-52 of the
 * schedule's total work; peaks up to 1e-12 relative rounding). Every move starts the
 * moved pass strictly earlier, and a W moves earlier only into a gap, delaying nothing:
 * the start times decrease in a well-founded order, so it terminates (reorder.c states
 * the measure). Passes only (VP_EUNSUPPORTED for F&B ops and vocabulary-parallel
 * schedules: place their passes after reordering; VP_EINVAL for non-finite or
 * negative costs). *moved (optional) receives the number of moves. Cost: per round one
 * replay and O(ops) per device, plus O(ops of its device) per move. */
VP_API vp_status vp_block_reorder(vp_schedule *s, const vp_cost_model *cm, int *moved,
                                  vp_error *err);

/* Lifespan analysis of a block under a memory model. */
typedef struct vp_block_lifespan {
    int p, S;
    double T;
    double *life;   /* [S] start of F to end of the pass freeing the activation (W or BW) */
    double *bound;  /* [p] Σ over the device's stages of ⌈life_s / T⌉ · act_s (units) */
    double *steady; /* [p] exact steady-state occupancy: the most activation alive at one
                     * instant when copies repeat forever (<= bound; the two differ when
                     * the stages' worst moments do not coincide) */
    double *peak;   /* [p] peak of the repeated order for m microbatches, or NULL */
    int m;          /* microbatches of peak (0 when not simulated) */
} vp_block_lifespan;

/* Computes lifespans and the per-device bound at b->T with cm->act; when m > 0, also
 * repeats the block to m microbatches and replays memory for the peaks (the bound must
 * be >= them). Caller frees with vp_block_lifespan_free. VP_EINVAL when the block fails
 * vp_block_check, T is unset, or cm does not match; repeat errors pass through. */
VP_API vp_status vp_block_lifespan_new(const vp_block *b, const vp_cost_model *cm, int m,
                                       vp_block_lifespan **out, vp_error *err);
VP_API void vp_block_lifespan_free(vp_block_lifespan *ls);

/* Parses block JSON (format in the header comment) into a new block (caller frees).
 * Durations come from a pass's 5th element, else from the costs: *override when non-NULL,
 * else the file's "costs", else vp_costs_default(); *used (optional) receives the costs
 * applied. T is the file's "interval", or 0 when absent (call vp_block_min_interval).
 * Checks the structure with vp_block_check. VP_EPARSE with line/column for bad JSON and
 * with the JSON path of a bad field ("passes[3]: stage must be an integer in [0, 8)");
 * VP_EINVAL from vp_block_check. */
VP_API vp_status vp_block_read_json(const char *text, size_t len, const vp_costs *override,
                                    vp_costs *used, vp_block **out, vp_error *err);

/* Writes b as block JSON (every pass with its mb offset and duration, "interval" when T >
 * 0, "costs" when costs is non-NULL, with FB when costs->fb >= 0) into a new
 * NUL-terminated *text the caller frees with free(); reading it back gives the same block
 * and costs. VP_EINVAL when a time or cost is not finite, VP_EUNSUPPORTED for per-device
 * costs, VP_ENOMEM; *text is NULL on failure. */
VP_API vp_status vp_block_write_json(const vp_block *b, const vp_costs *costs, char **text,
                                     vp_error *err);

/* ---- V blocks ------------------------------------------------------------------------
 *
 * A V block (vp_vblock) is the building block of one microbatch on the V placement, in
 * unit slots (one slot per chunk pass, period 6 per device): F⁰ of device 0 at slot 0, the
 * phases (slot mod 6) of F¹, B¹ and B⁰ on device 0, and the offsets between neighbouring
 * devices: δ⁰ on the chunk-0 forward and the chunk-1 backward, δ¹ on the chunk-1 forward
 * and the chunk-0 backward, optionally changing once after device K. Every other slot
 * follows: a pass starts at the first slot of its phase after its dependency ends, and
 * each W goes into the first free phase after its B. V-Min, V-Half and V-ZB are three
 * such blocks (families.h); the planner searches all of them.
 *
 * Building a block into a schedule (the V slot grid, vgrid.c): repeat it every 6 slots,
 * lay the warm-up out canonically (forwards first, as many as the block's memory allows),
 * compact the cool-down onto its critical chain, fill idle slots with later passes that
 * never raise the peak, and replay (vp_simulate squeezes it with the real costs). Memory
 * is capped at the repeated block's own peak; the result is a per-device order, so costs
 * only matter in the final replay.
 */

/* A V-shape building block; see the header comment. */
typedef struct vp_vblock {
    int f1, b1, b0; /* phases on device 0 of F¹, B¹, B⁰: distinct, in 1..5 (F⁰ has 0) */
    int d0, d1;     /* offsets δ⁰, δ¹ from device i-1 to i for i <= k, in 1..5 */
    int k;          /* change point K: devices i > k use d0b, d1b (k >= p-1: none) */
    int d0b, d1b;   /* offsets after the change point, in 1..5 */
} vp_vblock;

/* Start slots of microbatch 0 at p devices, [p][6] in the order F⁰ F¹ B¹ B⁰ W¹ W⁰ (W¹
 * is the W of chunk 1, freed after B¹). Returns 0 and fills slots when the block is well
 * formed and collision-free at period 6; returns -1 (slots unspecified) otherwise. */
VP_API int vp_vblock_slots(const vp_vblock *vb, int p, int (*slots)[6]);

/* The block as a building block of the framework (V placement, T = 6, unit durations, W
 * passes where vp_vblock_slots puts them). Caller frees. VP_EINVAL when the block is
 * malformed or collides (the message says which). */
VP_API vp_status vp_vblock_to_block(const vp_vblock *vb, int p, vp_block **out, vp_error *err);

/* Builds the block into a schedule of m microbatches on p devices (family names it,
 * NULL: "v-block"). Any m >= 1 works (fewer than 2p microbatches just trim the warm-up);
 * p >= 2. The result validates; its peak (release-at-W, units) is at most half the
 * repeated block's peak in chunk activations. VP_EINVAL for a malformed or colliding
 * block or p < 2. Caller frees. */
VP_API vp_status vp_vblock_build(const vp_vblock *vb, int p, int m, const char *family,
                                 vp_schedule **out, vp_error *err);

/* Writes "f1=1 b1=2 b0=3 d=(1,1)" or, with a change point, "... d=(2,1)->(1,1)@K=3" into
 * buf (at most size bytes). Returns buf. */
VP_API char *vp_vblock_format(const vp_vblock *vb, int p, char *buf, int size);

/* A workspace of V slot grids for one shape (p >= 2 devices, m >= 1 microbatches), so
 * that a search can build thousands of blocks without allocating in its inner loop. */
typedef struct vp_vgrid vp_vgrid;

/* A new workspace (caller frees with vp_vgrid_free). VP_EINVAL for p < 2 or m < 1,
 * VP_ENOMEM. */
VP_API vp_status vp_vgrid_new(int p, int m, vp_vgrid **out, vp_error *err);
VP_API void vp_vgrid_free(vp_vgrid *g);

/* A memo of built V grids shared by workspaces (vp_vgrid_use_memo): a block's build reads
 * no costs, so a search that measures the same block at the same p and m under other
 * costs (the planner's configurations) builds it once. Safe to share between threads; it
 * keeps at most max_bytes of grids (building afresh past that). Caller frees with
 * vp_vgrid_memo_free, after the workspaces using it. VP_ENOMEM. */
typedef struct vp_vgrid_memo vp_vgrid_memo;
VP_API vp_status vp_vgrid_memo_new(size_t max_bytes, vp_vgrid_memo **out, vp_error *err);
VP_API void vp_vgrid_memo_free(vp_vgrid_memo *memo);

/* Makes g's vp_vgrid_measure take the builds it finds in memo and keep the others there
 * (NULL, the default: build every time). The figures and schedules are the same. */
VP_API void vp_vgrid_use_memo(vp_vgrid *g, vp_vgrid_memo *memo);

/* Peak of the block repeated every 6 slots, in chunk activations (what a built schedule
 * is capped at, before trimming to m). slots as from vp_vblock_slots. */
VP_API int vp_vgrid_peak(const vp_vgrid *g, const int (*slots)[6]);

/* Builds block slots (from vp_vblock_slots, so collision-free) into a new schedule named
 * family (NULL: "v-block"), as vp_vblock_build does. VP_ENOMEM, or VP_EINVAL when the
 * repeated block does not replay (never for collision-free slots). */
VP_API vp_status vp_vgrid_build(vp_vgrid *g, const int (*slots)[6], const char *family,
                                vp_schedule **out, vp_error *err);

/* What vp_vgrid_measure reports: the figures vp_simulate gives the schedule vp_vgrid_build
 * returns for the same slots. */
typedef struct vp_vgrid_metrics {
    double makespan;   /* end of the last pass */
    double span;       /* longest device span, last end - first start (vp_sim_longest_span);
                          a lower bound when !complete */
    double bubble;     /* 1 - mean busy / span (vp_sim.bubble) */
    double peak;       /* max over devices of the peak memory, units */
    double peak_bytes; /* the same in bytes, 0 when the cost model has none */
    int complete;      /* 0 when the replay stopped at the limit (only span is set) */
} vp_vgrid_metrics;

/* Builds block slots like vp_vgrid_build and replays the result under cm (2p stages, the V
 * placement's cost model, e.g. vp_cost_model_new of a V schedule) without making a
 * schedule: out receives exactly the figures vp_simulate gives the built schedule. When
 * limit > 0 the replay stops as soon as some device's span is sure to exceed limit by
 * more than 1e-9 relative (its time so far plus the work still ahead of it;
 * out->complete = 0, out->span that lower bound), so a search can drop a block that
 * cannot beat a span or a makespan. VP_EINVAL when cm has other than 2p stages; otherwise
 * as vp_vgrid_build. Cost: one build and O(passes). */
VP_API vp_status vp_vgrid_measure(vp_vgrid *g, const int (*slots)[6], const vp_cost_model *cm,
                                  double limit, vp_vgrid_metrics *out, vp_error *err);

/* The schedule (named family, NULL: "v-block", or "1f1b-v" after vp_vgrid_measure_bw) of
 * the block the last vp_vgrid_measure or vp_vgrid_measure_bw on g built, the one
 * vp_vgrid_build (vp_vgrid_build_bw) would return for its slots, without building it again
 * (caller frees). VP_EINVAL when no measure has built a block on g since it was made or
 * last used by another build; VP_ENOMEM. */
VP_API vp_status vp_vgrid_schedule(vp_vgrid *g, const char *family, vp_schedule **out,
                                   vp_error *err);

/* 1F1B-V's build: slots [p][4] (F⁰ F¹ B¹ B⁰; columns 4 and 5 unused) whose backwards are
 * full BW passes of two slots, repeated every 6 slots for exactly m microbatches, with
 * the canonical warm-up when `canonical`, then compacted: every pass to the earliest slot
 * its dependencies allow, forwards only while memory stays under the repeated block's
 * peak. VP_EVALIDATION when the block collides at period 6 or its canonical warm-up does
 * not replay (not a usable block); VP_ENOMEM. family NULL: "1f1b-v". */
VP_API vp_status vp_vgrid_build_bw(vp_vgrid *g, const int (*slots)[6], int canonical,
                                   const char *family, vp_schedule **out, vp_error *err);

/* Builds slots as vp_vgrid_build_bw does and replays the result under cm (2p stages, the
 * V placement's cost model) without making a schedule: out receives exactly the figures
 * vp_simulate gives the schedule vp_vgrid_build_bw returns (always complete). Errors as
 * vp_vgrid_build_bw, and VP_EINVAL when cm has other than 2p stages. Cost: one build and
 * O(passes). */
VP_API vp_status vp_vgrid_measure_bw(vp_vgrid *g, const int (*slots)[6], int canonical,
                                     const vp_cost_model *cm, vp_vgrid_metrics *out, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
