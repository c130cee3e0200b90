/* The memory-budget planner and the V-shape block space it searches (schedules.md §4).
 *
 * A V block (vp_vblock) is the building block of one microbatch on the V placement, in
 * unit slots (one slot per chunk pass, period 6 per device): F⁰ of device 0 at slot 0, the
 * phases (slot mod 6) of F¹, B¹ and B⁰ on device 0, and the offsets between neighbouring
 * devices: δ⁰ on the chunk-0 forward and the chunk-1 backward, δ¹ on the chunk-1 forward
 * and the chunk-0 backward, optionally changing once after device K. Every other slot
 * follows: a pass starts at the first slot of its phase after its dependency ends, and
 * each W goes into the first free phase after its B. V-Min, V-Half and V-ZB are three
 * such blocks; the planner searches all of them (60 phase patterns x offsets x change
 * point) together with every registered family.
 *
 * Building a block into a schedule: repeat it every 6 slots (the building-block framework,
 * block.h), lay the warm-up out canonically (forwards first, as many as the block's
 * memory allows), compact the cool-down onto its critical chain, fill idle slots with
 * later passes that never raise the peak, and replay (vp_simulate squeezes it with the
 * real costs). Memory is capped at the repeated block's own peak; the result is a per-
 * device order, so costs only matter in the final replay.
 */
#ifndef VPIPE_PLAN_H
#define VPIPE_PLAN_H

#include "vpipe/block.h"
#include "vpipe/families.h"

/* A V-shape building block; see the header comment. */
typedef struct vp_vblock {
    int f1, b1, b0; /* phases on device 0 of F¹, B¹, B⁰: distinct, in 1..5 (F⁰ has 0) */
    int d0, d1;     /* offsets δ⁰, δ¹ from device i-1 to i for i <= k, in 1..5 */
    int k;          /* change point K: devices i > k use d0b, d1b (k >= p-1: none) */
    int d0b, d1b;   /* offsets after the change point, in 1..5 */
} vp_vblock;

/* The block of a named V family at p devices: "v-min" (offsets 1,1), "v-half" (2,1) or
 * "v-zb" (4,2), with the start slots of schedules.md §4. VP_EINVAL for other names or
 * p < 2. */
vp_status vp_vblock_preset(const char *family, int p, vp_vblock *out, vp_error *err);

/* Start slots of microbatch 0 at p devices, [p][6] in the order F⁰ F¹ B¹ B⁰ W¹ W⁰ (W¹
 * is the W of chunk 1, freed after B¹). Returns 0 and fills slots when the block is well
 * formed and collision-free at period 6; returns -1 (slots unspecified) otherwise. */
int vp_vblock_slots(const vp_vblock *vb, int p, int (*slots)[6]);

/* The block as a building block of the framework (V placement, T = 6, unit durations, W
 * passes where vp_vblock_slots puts them). Caller frees. VP_EINVAL when the block is
 * malformed or collides (the message says which). */
vp_status vp_vblock_to_block(const vp_vblock *vb, int p, vp_block **out, vp_error *err);

/* Builds the block into a schedule of spec->m microbatches on spec->p devices (family
 * names it, NULL: "v-block"). Any m >= 1 works (fewer than 2p microbatches just trim the
 * warm-up); p >= 2. The result validates; its peak (release-at-W, units) is at most half
 * the repeated block's peak in chunk activations. VP_EINVAL for a malformed or colliding
 * block or p < 2. Caller frees. */
vp_status vp_vblock_build(const vp_vblock *vb, const vp_spec *spec, const char *family,
                          vp_schedule **out, vp_error *err);

/* Writes "f1=1 b1=2 b0=3 d=(1,1)" or, with a change point, "... d=(2,1)->(1,1)@K=3" into
 * buf (at most size bytes). Returns buf. */
char *vp_vblock_format(const vp_vblock *vb, int p, char *buf, int size);

/* Parameter copies a schedule needs: 2 for the bidirectional placement (DualPipe keeps
 * both model copies on every device and sums their gradients), 1 otherwise. */
int vp_schedule_param_copies(const vp_schedule *s);

/* A memory budget as a user states it. */
typedef enum {
    VP_BUDGET_FRACTION = 0, /* a fraction of 1F1B's peak ("0.5") */
    VP_BUDGET_UNITS = 1,    /* units, one microbatch's activation of a whole slice ("4u") */
    VP_BUDGET_BYTES = 2     /* bytes ("123456b"), needs the memory model's unit_bytes */
} vp_budget_kind;

typedef struct vp_budget {
    vp_budget_kind kind;
    double value; /* > 0, finite */
} vp_budget;

/* Parses "0.5", "4u" or "123456b" (number, then an optional unit suffix). VP_EPARSE with
 * the column of the problem. */
vp_status vp_budget_parse(const char *text, vp_budget *out, vp_error *err);

/* One schedule the planner considered: a registered family, or the best V block it found
 * at one peak level. */
typedef struct vp_plan_candidate {
    char family[32];   /* family name, or "v-block" */
    char params[96];   /* block parameters (vp_vblock_format) for "v-block", else "" */
    double peak;       /* max over devices, units */
    double peak_bytes; /* max over devices, bytes (0 when unit_bytes is unknown) */
    double makespan;   /* simulated, with the spec's costs */
    double bubble;     /* 1 - busy / longest device span (vp_sim.bubble) */
    int fits;          /* peak within the budget */
    int is_vblock;     /* 1 for a V block (vblock is set) */
    vp_vblock vblock;
} vp_plan_candidate;

/* Result of vp_plan_run. Owned by the caller (vp_plan_free). */
typedef struct vp_plan {
    vp_schedule *schedule;         /* the chosen schedule (owned) */
    int chosen;                    /* its index in candidates */
    double budget;                 /* the budget resolved to units, or bytes for a byte budget */
    int budget_in_bytes;           /* 1 when budget and fits compare bytes */
    double ref_peak;               /* 1F1B's peak in units (what a fraction refers to) */
    vp_plan_candidate *candidates; /* [n_candidates]: families in registry order, then V
                                      levels by increasing peak */
    int n_candidates;
    int *frontier; /* [n_frontier] candidate indices: the memory -> makespan
                      Pareto points by increasing peak */
    int n_frontier;
    long blocks_tried, blocks_built; /* V blocks enumerated / collision-free and built */
    char reason[1024];               /* why the chosen schedule won, a few clauses */
} vp_plan;

/* Searches every registered family (built from spec) and the V block space (phase
 * patterns x offsets 1..5 x one change point, δ¹ = 1, as in schedules.md §4) for the
 * schedule with the smallest makespan (ties: smaller bubble, then less memory) whose peak
 * fits the budget; fills the candidates, the memory -> makespan frontier and a reason. A
 * fraction refers to 1F1B's peak under spec's memory model; a byte budget needs
 * spec->mem.unit_bytes > 0. VP_EINVAL when the budget is malformed, bytes are not known,
 * or no schedule fits (the message names the smallest peak reached and by what). Cost:
 * one build and one simulation per family and per collision-free V block. */
vp_status vp_plan_run(const vp_spec *spec, const vp_budget *budget, vp_plan **out, vp_error *err);

/* Releases a plan; NULL is a no-op. */
void vp_plan_free(vp_plan *plan);

#endif
