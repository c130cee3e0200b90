/* Eager replay of a schedule, following the pass rules of pass.h: every op starts when
 * its device is free and the passes it waits for are done (+ the hop c when one ran on
 * another device).
 */
#ifndef VPIPE_REPLAY_H
#define VPIPE_REPLAY_H

#include "vpipe/schedule.h"

/* Duration of an op; ctx is the caller's. */
typedef double (*vp__op_time_fn)(const void *ctx, const vp_op *op);

/* Replays s: each device runs its ops in order, each starting when the device is free and
 * its dependencies are done (+ c across devices). When start/end are non-NULL they receive
 * the times ([p][n_d], caller allocated). time_fn NULL means every op takes 1. Returns
 * VP_OK, or VP_EDEADLOCK naming the op each unfinished device waits on and the pass it
 * waits for, or VP_ENOMEM. The ops' kinds, stages and microbatches must be valid and on
 * their routes (vp_schedule_validate checks them before it replays); the replay aborts
 * on one that is not. */
vp_status vp__replay(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx, double c,
                     double **start, double **end, vp_error *err);

#endif
