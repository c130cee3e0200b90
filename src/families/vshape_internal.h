/* The V-shape slot engine shared by the V families (vshape.c) and the planner (src/plan).
 *
 * A workspace holds the slot grids and scratch arrays of one shape (p devices, m
 * microbatches) so that the planner can build thousands of blocks without allocating in
 * its inner loop.
 */
#ifndef VPIPE_VSHAPE_INTERNAL_H
#define VPIPE_VSHAPE_INTERNAL_H

#include "core/internal.h"
#include "vpipe/plan.h"

typedef struct vp__vwork vp__vwork;

/* Workspace for building V blocks at p >= 2 devices and m >= 1 microbatches. NULL when
 * memory runs out. */
vp__vwork *vp__vwork_new(int p, int m);
void vp__vwork_free(vp__vwork *w);

/* Peak of the block repeated every 6 slots, in chunk activations (what the built
 * schedule is capped at, before trimming to m). slots as from vp_vblock_slots. */
int vp__vblock_peak(const vp__vwork *w, const int (*slots)[6]);

/* Builds block slots (from vp_vblock_slots) into a new schedule named family: repeat,
 * canonical warm-up, cool-down, fill (see plan.h). VP_ENOMEM, or VP_EINVAL when the
 * repeated block does not replay (never for collision-free slots). */
vp_status vp__vwork_build(vp__vwork *w, const int (*slots)[6], const char *family,
                          vp_schedule **out, vp_error *err);

#endif
