/* Eager replay of a schedule, following the pass rules of pass.h: every op starts when
 * its device is free and the passes it waits for are done (+ the hop c when one ran on
 * another device); the copies of offloads and reloads run on each device's copy engine,
 * one at a time in the order they are issued.
 */
#ifndef VPIPE_REPLAY_H
#define VPIPE_REPLAY_H

#include <stdint.h>

#include "vpipe/schedule.h"

/* Duration of an op; ctx is the caller's. Asked about an O or L op, it answers the time of
 * that op's copy (the ops themselves take no compute time). */
typedef double (*vp__op_time_fn)(const void *ctx, const vp_op *op);

/* The [S*m] flags of the offloaded (stage, mb) pairs (those with an O op) into a new *out
 * (caller frees), or NULL when s has no O op. VP_ENOMEM. */
vp_status vp__offloaded(const vp_schedule *s, uint8_t **out, vp_error *err);

/* Peak host memory of device d's offloads: replaying its copies in the order they are
 * issued, an offloaded pair (offloaded, NULL for none) takes off[stage] when its F ends and
 * gives it back at its L. NaN when a level is not finite. */
double vp__host_peak(const vp_schedule *s, const uint8_t *offloaded, int d, const double *off);

/* What vp__replay_with fills, each optional (NULL), caller allocated. */
typedef struct vp__replay_out {
    double **start, **end;           /* [p][n_d] op times */
    double **copy_start, **copy_end; /* [p][n_d] for an O or L op, the times of its copy (O:
                                        the one it waits for; L: the one it issues); other
                                        ops are left as they are */
    double *copy_busy;               /* [p] time each copy engine copies */
    double *stall;                   /* [p] how much later the ops but O and L started than
                                        they would have without waiting for copies */
} vp__replay_out;

/* Replays s: each device runs its ops in order, each starting when the device is free and
 * its dependencies are done (+ c across devices). When start/end are non-NULL they receive
 * the times ([p][n_d], caller allocated). time_fn NULL means every op takes 1. Returns
 * VP_OK, or VP_EDEADLOCK naming the op each unfinished device waits on and the pass it
 * waits for, or VP_ENOMEM. The ops' kinds, stages and microbatches must be valid and on
 * their routes (vp_schedule_validate checks them before it replays); the replay aborts
 * on one that is not. */
vp_status vp__replay(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx, double c,
                     double **start, double **end, vp_error *err);

/* vp__replay with the copies' times and the copy engines' figures into out. */
vp_status vp__replay_with(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx, double c,
                          const vp__replay_out *out, vp_error *err);

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
