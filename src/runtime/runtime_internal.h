/* Internal pieces the reference loop (train.c) and the pipeline (exec.c) share: the step
 * policy of step.c. */
#ifndef VPIPE_RUNTIME_INTERNAL_H
#define VPIPE_RUNTIME_INTERNAL_H

#include "base/internal.h"
#include "vpipe/runtime.h"

/* The trajectory of a run on data (NULL: none) as a checkpoint records it. */
vp_checkpoint_run vp__checkpoint_run(const vp_train_options *o, const vp_data *data);

/* Takes o->checkpoint_dir for the run (vp_checkpoint_acquire; a checkpoint there that
 * the run does not resume from is refused unless o->overwrite_checkpoint); *lock is NULL
 * when the run saves none. */
vp_status vp__checkpoint_acquire(const vp_train_options *o, vp_checkpoint_lock **lock,
                                 vp_error *err);

/* Phase 3 after the commit of `step` (vp_checkpoint_prune): old files that cannot be
 * removed leave the new checkpoint whole, so the failure goes to p->note, not the run. */
void vp__checkpoint_prune(const vp_train_options *o, int step, vp_train_progress *p);

/* Checks the options both loops take, and that data (when given) holds a window of
 * seq_len + 1 bytes in each part. VP_EINVAL naming the option, VP_EIO for short data. */
vp_status vp__train_check(const vp_train_options *o, const vp_data *data, vp_error *err);

/* Whether the 0-based step gets the injected non-finite gradient (o->faults). */
bool vp__step_poisoned(const vp_train_options *o, int step);

/* What the step's sums decide, the same on every rank: sets p->lr; a non-finite p->loss
 * or p->grad_norm fails the step (VP_ERUNTIME) or, with skip_nonfinite, sets p->skipped
 * (the caller zeroes its gradients and skips the optimiser); otherwise *scale receives
 * the clip factor (1 for none) for AdamW at step + 1. */
vp_status vp__step_decide(const vp_train_options *o, int step, vp_train_progress *p, float *scale,
                          vp_error *err);

/* Whether the run evaluates / saves a checkpoint after `done` completed steps. */
bool vp__step_evaluates(const vp_train_options *o, int done);
bool vp__step_checkpoints(const vp_train_options *o, int done);

/* A result before any step of a run resumed at resumed_step (0: fresh): NaN losses. */
vp_train_result vp__result_start(int resumed_step);

/* Adds a finished step (p) to the result: steps, skipped steps, last loss of a step not
 * skipped, validation loss, and the mean step time and throughput of this run's steps
 * (tokens_per_step tokens each). */
void vp__result_add(vp_train_result *r, const vp_train_progress *p, double tokens_per_step);

/* FNV-1a of half `half` (0: the first, 1: the second) of a vocabulary stage's n parameters
 * (its token-table rows, its head rows), continuing from hash. */
uint64_t vp__digest_half(const float *params, size_t n, int half, uint64_t hash);

#endif
