/* vpipe checkpoints: parameters, AdamW moments, step and data position of a training
 * run, written atomically so that a killed run resumes bit for bit, and stored
 * independently of the run's shape, so that a run of another shape can resume them.
 *
 * Module `checkpoint` (src/checkpoint/). Depends on model and base.
 *
 * The state is stored as the whole model's flat arrays (those of a stage holding every
 * layer, vp_stage_offset_of: embeddings, layers in order, final norm and head): any
 * pipeline depth, split, schedule, placement, number of data-parallel replicas, ZeRO-1
 * sharding or transport writes and reads the same arrays. A checkpoint is a directory DIR
 * holding
 *   part-<k>.step-<s>.ckpt   part k of the set, after s completed optimiser steps: slices
 *                            of the whole model's arrays (a pipeline writes one part per
 *                            rank: the stages it holds, or their ZeRO-1 shards; a rank
 *                            whose state another rank already writes writes an empty part);
 *   meta.json                the commit record: {"format": "vpipe-checkpoint", "version": 3,
 *                            "step": s, "data_position": d, "parts": n, "files": [...],
 *                            "shape": {"p", "dp", "zero", "schedule", "transport"}}, the
 *                            shape of the run that wrote it (for messages only).
 * A checkpoint exists once meta.json names it. A run holds its directory for as long as
 * it saves there (vp_checkpoint_acquire: a lock, DIR/.vpipe-lock): a second run on the
 * same directory is refused, and a run never replaces a checkpoint it did not resume
 * from unless told to. Saving one step is three phases:
 *   1. every part is written (vp_checkpoint_write_part),
 *   2. after all of them succeeded, one writer commits (vp_checkpoint_commit),
 *   3. after the commit, that writer removes the superseded files (vp_checkpoint_prune).
 * Each file is written to a temporary file of its own (<name>.tmp.<pid>.<n>), fsync'ed,
 * renamed over <name>, and the directory fsync'ed (base's atomic writer), so a crash at
 * any moment leaves the previous committed checkpoint intact and loadable; files of an
 * uncommitted step are ignored and pruned later. Under MPI the directory must be shared
 * by the ranks.
 *
 * Part file, version 3, every number little-endian:
 *   offset 0    "VPIPECKP" magic (8 bytes)
 *          8    u32 version (3)
 *         12    u32 reserved (0)
 *         16    u64 total file bytes, checksum included
 *         24    i32 layers, width, heads, seq, microbatch, vocab   (the model)
 *         48    i32 part k, parts n
 *         56    i64 step: optimiser steps completed (skipped non-finite steps count)
 *         64    u64 data position: index of the next training batch (vp_data_batch)
 *         72    u64 seed: weights and data order. The seed is the only random state: data
 *                   windows are a pure function of (seed, batch index) and nothing else
 *                   draws random numbers, so there is no other RNG state to save.
 *         80    i32 m (microbatches per step: the global batch), steps, warmup, lr
 *                   schedule (0 cosine, 1 constant)
 *         96    f64 lr, min_lr, clip
 *        120    f32 beta1, beta2, eps, weight decay
 *        136    i32 slice count n, i32 reserved (0)
 *        144    u64 data bytes, u64 data digest: the training data (vp_data_digest)
 *        160    n slices: u64 offset o, u64 count c (elements [o, o + c) of the whole
 *               model's arrays); then f32 parameters[c], AdamW first moments m[c], second
 *               moments v[c]
 *   end - 8     u64 FNV-1a 64 (vp_digest from VP_DIGEST_INIT) of every byte before it.
 * Gradients are not saved: every step starts by zeroing them. Versions 1 and 2 (of older
 * vpipes: per-rank stage records; no record of the data) are refused with a message
 * saying so.
 *
 * Loading checks every part of the set, and refuses with the file's name and the
 * problem: a file that is not regular, magic, version, length (truncated or trailing
 * bytes; a part larger than any of the run's model is refused before it is read),
 * checksum (streamed: a part is never held in memory whole), the slices' own
 * consistency, that the model, optimiser and schedule options, seed and data match the
 * run being resumed (the shape may differ), and that the parts' slices tile the whole
 * model exactly. Statuses: VP_EIO (missing or unreadable), VP_EPARSE (not a checkpoint,
 * unsupported version, truncated, corrupt, slices missing or twice), VP_EINVAL (a
 * different run's checkpoint).
 */
#ifndef VPIPE_CHECKPOINT_H
#define VPIPE_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vpipe/model.h"

#define VP_CHECKPOINT_VERSION 3

/* What identifies a training trajectory: a checkpoint resumes only a run with the same
 * model, global batch, optimiser and schedule options, seed and data (the runtime fills
 * it from its options and data). */
typedef struct vp_checkpoint_run {
    vp_model_config model;
    int m;      /* microbatches per step, over every replica: the global batch */
    int steps;  /* optimiser steps of the whole run */
    int warmup; /* learning-rate warm-up steps */
    vp_lr_schedule schedule;
    double lr, min_lr, clip;
    vp_adamw adamw;
    uint64_t seed;        /* weights and data order */
    uint64_t data_bytes;  /* the training data: its length (vp_data_bytes) ... */
    uint64_t data_digest; /* ... and its digest (vp_data_digest) */
} vp_checkpoint_run;

/* The shape of the run that wrote a checkpoint: what a resumed run may change. */
typedef struct vp_checkpoint_shape {
    int p;              /* pipeline ranks (1: the single-rank reference) */
    int dp;             /* data-parallel replicas (reduction groups) */
    int zero;           /* 1: the AdamW moments were sharded across the replicas */
    char schedule[32];  /* the schedule's family, "single" for the reference */
    char transport[16]; /* "threads" or "mpi" */
} vp_checkpoint_shape;

/* The commit record of a checkpoint directory. */
typedef struct vp_checkpoint_meta {
    int step;          /* optimiser steps completed */
    uint64_t data_pos; /* index of the next training batch */
    int n_parts;       /* files in the set */
    vp_checkpoint_shape shape;
} vp_checkpoint_meta;

/* What a part file's header says. */
typedef struct vp_checkpoint_info {
    int version;
    int part, n_parts;
    int step;
    uint64_t data_pos;
    int n_slices;
    vp_checkpoint_run run; /* the trajectory it belongs to */
} vp_checkpoint_info;

/* One writer's or reader's part of a run: part `part` of `n_parts` and the stages it
 * holds (borrowed). A writer saves of each stage the elements whose AdamW moments it
 * holds (vp_stage_state_of: the whole stage, or its ZeRO-1 shard) as one slice: give each
 * element of the model to exactly one writer (one copy of each replicated stage). A
 * reader restores into each stage all its parameters and the moments it holds, from
 * whichever parts hold them. */
typedef struct vp_checkpoint_part {
    int part, n_parts;
    vp_stage *const *stages;
    int n_stages; /* may be 0: an empty part */
} vp_checkpoint_part;

/* ---- saving ------------------------------------------------------------------------- */

/* Creates dir (one level) when missing and checks that a file can be written in it (a
 * probe file of a name of its own, removed again), so that a run fails before its first
 * step rather than at its first checkpoint. VP_EIO with the directory and the reason. */
VP_API vp_status vp_checkpoint_prepare(const char *dir, vp_error *err);

/* A checkpoint directory held by a run (vp_checkpoint_acquire). */
typedef struct vp_checkpoint_lock vp_checkpoint_lock;

/* Before a run that saves checkpoints in dir: creates dir (one level) when missing and
 * takes it for the run: an exclusive lock (flock) on DIR/.vpipe-lock, a file that
 * records the holder ("pid N on HOST") and that vp_checkpoint_release removes (the lock
 * also ends with the process, the file then stays); then vp_checkpoint_prepare. Refuses a directory
 * another run holds (VP_EIO: "... is in use by pid N on HOST ..."), and one that already holds a
 * committed checkpoint (VP_EINVAL, naming its step) unless the run resumes from that
 * very directory (resume_dir, NULL for none, is dir) or replace is set (the run's first
 * save then supersedes it; until then it stays). Nothing in dir changes when it is
 * refused. *out (release it with vp_checkpoint_release) on success. Under MPI one
 * process holds the directory for the job. */
VP_API vp_status vp_checkpoint_acquire(const char *dir, const char *resume_dir, bool replace,
                                       vp_checkpoint_lock **out, vp_error *err);

/* Releases a directory; NULL is a no-op. */
VP_API void vp_checkpoint_release(vp_checkpoint_lock *lock);

/* Phase 1: writes DIR/part-<part>.step-<step>.ckpt atomically with the slices of this
 * part's stages, the trajectory run, step (optimiser steps completed) and data_pos (next
 * batch index). Creates dir (one level) when missing. Refuses (VP_ERUNTIME, nothing
 * written) when a parameter or moment is not finite. VP_EIO with the file and the reason
 * when writing fails; no partial file is left and earlier checkpoints stay as they were.
 * Thread-safe for different parts. */
VP_API vp_status vp_checkpoint_write_part(const char *dir, const vp_checkpoint_run *run,
                                          const vp_checkpoint_part *part, int step,
                                          uint64_t data_pos, vp_error *err);

/* Phase 2: makes meta->step the directory's checkpoint (of meta->n_parts parts, written
 * by a run of meta->shape) by replacing DIR/meta.json atomically. Call once, after phase
 * 1 succeeded for every part. VP_EINVAL for a bad record, VP_EIO when writing fails (the
 * previous commit stays). */
VP_API vp_status vp_checkpoint_commit(const char *dir, const vp_checkpoint_meta *meta,
                                      vp_error *err);

/* Phase 3: removes the part files of steps other than step (superseded or never
 * committed, of any shape) and leftover temporary files. Call once, after the commit of
 * step is done, by the run that holds the directory. VP_EIO when the directory cannot be
 * read or a file cannot be removed (the checkpoint of step is whole all the same: a
 * training run reports it and goes on). */
VP_API vp_status vp_checkpoint_prune(const char *dir, int step, vp_error *err);

/* The three phases for a run that holds every stage in one part: part is 0 of 1 and
 * meta->n_parts 1 (VP_EINVAL otherwise). */
VP_API vp_status vp_checkpoint_save(const char *dir, const vp_checkpoint_run *run,
                                    const vp_checkpoint_part *part, const vp_checkpoint_meta *meta,
                                    vp_error *err);

/* ---- loading ------------------------------------------------------------------------ */

/* Reads DIR/meta.json (a regular file of at most 4 MiB: the record of 65536 parts).
 * VP_EIO when there is none (no checkpoint) or it cannot be read, VP_EPARSE when it is
 * malformed. */
VP_API vp_status vp_checkpoint_latest(const char *dir, vp_checkpoint_meta *meta, vp_error *err);

/* Restores the stages of this reader's part from the committed checkpoint of dir, of
 * any shape: reads meta.json and every part file it names (each a regular file no
 * larger than a part of the run's model can be, streamed), checks them (see the top of
 * this header) against the run and the commit record, then copies into each stage its
 * parameters and the AdamW moments it holds, and zeroes its gradients. *meta (optional)
 * receives the step, data position and the shape of the run that wrote it. On any error
 * the stages are left untouched. */
VP_API vp_status vp_checkpoint_load(const char *dir, const vp_checkpoint_run *run,
                                    const vp_checkpoint_part *part, vp_checkpoint_meta *meta,
                                    vp_error *err);

/* ---- the readers (bytes in memory; name is used in messages) ---------------------------- */

/* Checks a part file's bytes (magic, version, length, checksum, slices within the model)
 * and fills *info. VP_EPARSE with the problem otherwise. */
VP_API vp_status vp_checkpoint_parse(const void *bytes, size_t size, const char *name,
                                     vp_checkpoint_info *info, vp_error *err);

/* vp_checkpoint_parse, then the checks against the run, that this one file's slices tile
 * the whole model, and the copy into the part's stages that vp_checkpoint_load does (a
 * checkpoint of one part). */
VP_API vp_status vp_checkpoint_restore(const void *bytes, size_t size, const char *name,
                                       const vp_checkpoint_run *run, const vp_checkpoint_part *part,
                                       vp_error *err);

/* Parses the text of a meta.json (at most 4 MiB). VP_EPARSE with the problem (a record
 * of an older version is refused as an older vpipe's). */
VP_API vp_status vp_checkpoint_meta_parse(const char *text, size_t len, const char *name,
                                          vp_checkpoint_meta *meta, vp_error *err);

#endif
