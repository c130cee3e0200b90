/* Eager replay of a schedule: the one place that knows the pass dependencies.
 *
 * Passes are identified per (stage, microbatch, F|B|W); BW completes B and W, F&B
 * completes the F of its forward half and the backward of its other half. Dependencies:
 * F(s,j) after F(s-1,j) unless s is the first stage of j's route; B(s,j) after F(s,j) on
 * the route's last stage, else after B(s+1,j); W(s,j) after B(s,j). A dependency on a
 * pass of another device costs the hop time c.
 */
#ifndef VPIPE_REPLAY_H
#define VPIPE_REPLAY_H

#include "vpipe/schedule.h"

/* Duration of an op; ctx is the caller's. */
typedef double (*vp__op_time_fn)(const void *ctx, const vp_op *op);

/* Replays s: each device runs its ops in order, each starting when the device is free and
 * its dependencies are done (+ c across devices). When start/end are non-NULL they receive
 * the times ([p][n_d], caller allocated). time_fn NULL means every op takes 1. Returns
 * VP_OK, or VP_EDEADLOCK naming the op each unfinished device waits on, or VP_ENOMEM.
 * Assumes the ops' stages and microbatches are in range (validated). */
vp_status vp__replay(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx, double c,
                     double **start, double **end, vp_error *err);

#endif
