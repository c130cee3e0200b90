/* vpipe checkpoints: parameters, AdamW moments, step and data position of a training
 * run, written atomically so that a killed run resumes bit for bit.
 *
 * Module `checkpoint` (src/checkpoint/). Depends on model and base.
 *
 * A checkpoint is a directory DIR holding
 *   rank-<r>.step-<s>.ckpt   one file per rank r: every stage that rank holds, after s
 *                            completed optimiser steps (the single-rank run is rank 0 of 1);
 *   meta.json                the commit record: {"format": "vpipe-checkpoint", "version": 1,
 *                            "step": s, "data_position": d, "ranks": n, "files": [...]}.
 * A checkpoint exists once meta.json names it. Saving one step is three phases:
 *   1. every rank writes its file (vp_checkpoint_write_rank),
 *   2. after all of them succeeded, one rank commits (vp_checkpoint_commit),
 *   3. after the commit, every rank removes its superseded files (vp_checkpoint_prune).
 * Each file is written to <name>.tmp, fsync'ed, renamed over <name>, and the directory
 * fsync'ed (base's atomic writer), so a crash at any moment leaves the
 * previous committed checkpoint intact and loadable; files of an uncommitted step are
 * ignored and pruned later. One run writes to a directory at a time. Under MPI the
 * directory must be shared by the ranks.
 *
 * Rank file, version 1, every number little-endian:
 *   offset 0    "VPIPECKP" magic (8 bytes)
 *          8    u32 version (1)
 *         12    u32 reserved (0)
 *         16    u64 total file bytes, checksum included
 *         24    i32 layers, width, heads, seq, microbatch, vocab   (the model)
 *         48    i32 rank, ranks
 *         56    i64 step: optimiser steps completed (skipped non-finite steps count)
 *         64    u64 data position: index of the next training batch (vp_data_batch)
 *         72    u64 seed: weights and data order. The seed is the only random state: data
 *                   windows are a pure function of (seed, batch index) and nothing else
 *                   draws random numbers, so there is no other RNG state to save.
 *         80    i32 m, steps, warmup, lr schedule (0 cosine, 1 constant)
 *         96    f64 lr, min_lr, clip
 *        120    f32 beta1, beta2, eps, weight decay
 *        136    i32 stage count n, i32 reserved (0)
 *        144    n stage records: i32 l0, l1, first, last; u64 parameter count P; then
 *               f32 parameters[P], AdamW first moments m[P], second moments v[P]
 *   end - 8     u64 FNV-1a 64 (vp_digest from VP_DIGEST_INIT) of every byte before it.
 * Gradients are not saved: every step starts by zeroing them.
 *
 * Loading checks, and refuses with the file's name and the problem: magic, version,
 * length (truncated or trailing bytes), checksum, the records' own consistency, and that
 * the model, optimiser and schedule options, seed, rank count and every stage's layer
 * range match the run being resumed. Statuses: VP_EIO (missing or unreadable), VP_EPARSE
 * (not a checkpoint, unsupported version, truncated, corrupt), VP_EINVAL (a different
 * run's checkpoint).
 */
#ifndef VPIPE_CHECKPOINT_H
#define VPIPE_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "vpipe/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VP_CHECKPOINT_VERSION 1

/* What identifies a training trajectory: a checkpoint resumes only a run with the same
 * model, optimiser and schedule options and seed (the runtime fills it from its
 * options). */
typedef struct vp_checkpoint_run {
    vp_model_config model;
    int m;      /* microbatches per step */
    int steps;  /* optimiser steps of the whole run */
    int warmup; /* learning-rate warm-up steps */
    vp_lr_schedule schedule;
    double lr, min_lr, clip;
    vp_adamw adamw;
    uint64_t seed; /* weights and data order */
} vp_checkpoint_run;

/* The commit record of a checkpoint directory. */
typedef struct vp_checkpoint_meta {
    int step;          /* optimiser steps completed */
    uint64_t data_pos; /* index of the next training batch */
    int n_ranks;       /* files in the set */
} vp_checkpoint_meta;

/* What a rank file's header says. */
typedef struct vp_checkpoint_info {
    int version;
    int rank, n_ranks;
    int step;
    uint64_t data_pos;
    int n_stages;
    vp_checkpoint_run run; /* the trajectory it belongs to */
} vp_checkpoint_info;

/* One rank's part of a run: which rank of how many, and the stages it holds (borrowed),
 * in the order the run keeps them. */
typedef struct vp_checkpoint_part {
    int rank, n_ranks;
    vp_stage *const *stages;
    int n_stages;
} vp_checkpoint_part;

/* ---- saving ------------------------------------------------------------------------- */

/* Before a run: creates dir (one level) when missing and checks that a file can be
 * written in it (a probe file, removed again), so that a run fails before its first
 * step rather than at its first checkpoint. VP_EIO with the directory and the reason. */
VP_API vp_status vp_checkpoint_prepare(const char *dir, vp_error *err);

/* Phase 1: writes DIR/rank-<rank>.step-<step>.ckpt atomically with the stages of this
 * rank's part, the trajectory run, step (optimiser steps completed) and data_pos (next
 * batch index). Creates dir (one level) when missing. Refuses (VP_ERUNTIME, nothing
 * written) when a parameter or moment is not finite. VP_EIO with the file and the reason
 * when writing fails; no partial file is left and earlier checkpoints stay as they were.
 * Thread-safe for different ranks. */
VP_API vp_status vp_checkpoint_write_rank(const char *dir, const vp_checkpoint_run *run,
                                          const vp_checkpoint_part *part, int step,
                                          uint64_t data_pos, vp_error *err);

/* Phase 2: makes step the directory's checkpoint by replacing DIR/meta.json atomically.
 * Call once, after phase 1 succeeded on every rank. VP_EIO when writing fails (the
 * previous commit stays). */
VP_API vp_status vp_checkpoint_commit(const char *dir, int n_ranks, int step, uint64_t data_pos,
                                      vp_error *err);

/* Phase 3: removes rank's files of steps other than step (superseded or never
 * committed) and its leftover temporary files. Call after the commit of step is done.
 * VP_EIO when the directory cannot be read or a file cannot be removed. */
VP_API vp_status vp_checkpoint_prune(const char *dir, int rank, int step, vp_error *err);

/* The three phases for a run that holds every stage in one rank: part is rank 0 of 1
 * (VP_EINVAL otherwise). */
VP_API vp_status vp_checkpoint_save(const char *dir, const vp_checkpoint_run *run,
                                    const vp_checkpoint_part *part, int step, uint64_t data_pos,
                                    vp_error *err);

/* ---- loading ------------------------------------------------------------------------ */

/* Reads DIR/meta.json. VP_EIO when there is none (no checkpoint) or it cannot be read,
 * VP_EPARSE when it is malformed. */
VP_API vp_status vp_checkpoint_latest(const char *dir, vp_checkpoint_meta *meta, vp_error *err);

/* Restores the stages of this rank's part from the committed checkpoint of dir: reads
 * meta.json and the rank's file of that step (a regular file, of any size), checks it
 * (see the top of this header) against the run (run, the part's rank and rank count, the
 * stages' layer ranges) and the commit record, then copies the parameters and AdamW
 * moments into the stages and zeroes their gradients. *meta (optional) receives the step
 * and data position to continue from. On any error the stages are left untouched. */
VP_API vp_status vp_checkpoint_load(const char *dir, const vp_checkpoint_run *run,
                                    const vp_checkpoint_part *part, vp_checkpoint_meta *meta,
                                    vp_error *err);

/* ---- the readers (bytes in memory; name is used in messages) ---------------------------- */

/* Checks a rank file's bytes (magic, version, length, checksum, records consistent with
 * the model) and fills *info. VP_EPARSE with the problem otherwise. */
VP_API vp_status vp_checkpoint_parse(const void *bytes, size_t size, const char *name,
                                     vp_checkpoint_info *info, vp_error *err);

/* vp_checkpoint_parse, then the checks against the run and the part and the copy into
 * its stages that vp_checkpoint_load does. */
VP_API vp_status vp_checkpoint_restore(const void *bytes, size_t size, const char *name,
                                       const vp_checkpoint_run *run, const vp_checkpoint_part *part,
                                       vp_error *err);

/* Parses the text of a meta.json. VP_EPARSE with the problem. */
VP_API vp_status vp_checkpoint_meta_parse(const char *text, size_t len, const char *name,
                                          vp_checkpoint_meta *meta, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
