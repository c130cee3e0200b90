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

/* A copy of s's shape and placement with empty op lists (family, routes, recomputation and
 * vocabulary parallelism too) into a new *out. VP_ENOMEM. */
vp_status vp__schedule_copy_shape(const vp_schedule *s, vp_schedule **out, vp_error *err);

/* The vocabulary-parallel version of s (valid, without vocabulary passes) into a new
 * *out: s's ops in their order on every device, with EF, EB, S and T of every (shard,
 * microbatch) inserted on the shard's device where a replay of s with time_fn (ctx; c per
 * hop between devices) puts them: EF before the op that precedes the F of the microbatch's
 * first stage on that stage's device, S when the F of its last stage ends, T halfway from
 * there to the start of that stage's backward (the statistics' all-reduce and the
 * gradient's sum each get half of that gap to hide in), EB when the first stage's backward
 * ends. The result passes vp_schedule_validate (it cannot deadlock: see vocab.c), and each
 * device holds what s holds plus the vocabulary passes' own. VP_EINVAL when s already has
 * vocabulary passes, VP_ENOMEM. */
vp_status vp__schedule_vocab(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx,
                             double c, vp_schedule **out, vp_error *err);

#endif
