/* Training: the single-rank reference loop and the pipeline runtime that executes any
 * validated schedule on the transformer of model.h, one rank per device, and measures
 * what the simulator predicts.
 *
 * Module `runtime` (src/runtime/; transports in src/runtime/transport/). Depends on
 * price (the layer split), checkpoint, model, data, render, sim and schedule.
 *
 * Each rank walks its op list in order. F receives its input from the previous stage
 * (or reads the batch), B receives its output gradient from the next stage (or starts
 * from the loss), W needs nothing from other ranks; hand-offs between two stages of one
 * rank go through the same mailbox at no cost. In a schedule that recomputes, F drops
 * what its R rebuilds (vp_stage_drop) and R runs the forward again (vp_stage_recompute).
 *
 * Memory. Each rank's allocator counts its bytes per category (vp_mem_category):
 * parameters, gradients, AdamW moments (with ZeRO-1 only those of the rank's shards) and
 * B's scratch of its stages from their creation; activations as the passes take and drop
 * them; and tensors in flight (VP_MEM_IN_FLIGHT, "in_flight"): every tensor one of its ops
 * makes for another stage (F's output, B's input gradient), from when it is made until it
 * leaves the rank (the transport takes it at the end of the op) or the op of a stage on
 * the same rank takes it over (a tensor's time in the transport is not counted, nor are
 * the copies the replicas' reduction sends). The price module's "buffers" are another
 * thing (a receive buffer per remote neighbour, vp_rank_memory); the runtime has none.
 * The prediction of each (vp_runtime_predict_memory) comes from the model's size
 * functions, the shards, the simulator and the schedule's op order, and equals the
 * measured peak byte for byte. After the microbatches: the two replicas
 * of the bidirectional placement sum their gradients, every rank learns the losses and
 * the global gradient norm (summed by block in model order, as the single-rank reference
 * does: vpipe/model.h), then clips and steps AdamW. Same seed, data and microbatching as
 * `vp_train_run` give bit-identical losses and parameters whenever every stage runs its
 * weight-gradient passes in microbatch order (vp_pipeline_plan_check tells).
 *
 * Vocabulary parallelism (a schedule with vocab_parallel and train.vocab_shards = its p):
 * rank d also holds the vocabulary stage of shard d (vpipe/model.h) and runs its EF, EB, S
 * and T. A route's first stage adds the shards' embedding parts, every T every shard's
 * softmax statistics (so every rank computes the same loss) and the last stage the shards'
 * output-gradient parts, each in shard order: the same bits as vp_train_run with
 * vocab_shards = p. The parts, the last stage's output for every S and the first stage's
 * input gradient for every EB count in flight as the stages' tensors do (the statistics,
 * three floats a token, do not). The gradient norm adds the shards' blocks first.
 *
 * Data parallelism (train.dp = D > 1): D replicas of the pipeline, p * D ranks; rank
 * r * p + d is device d of replica r. A step's global batch is train.m microbatches;
 * replica r takes microbatches r * m / D .. (r + 1) * m / D - 1 of the step (the data
 * batches step * m + those), and every microbatch's loss is scaled by 1 / train.m. A
 * stage's gradients are reduced across its D replicas as soon as the op holding the
 * stage's last weight gradient of the step is done: each replica owns one block-aligned
 * shard of the stage (vp_shard_of) and adds the D copies of its shard in replica order,
 * ((g0 + g1) + g2) + ..., the reduce-scatter; without ZeRO the owners then send their
 * sums to every replica (an all-gather of the gradients). What overlaps: the reduction
 * runs on the rank between its ops, so the rank's own later ops (of its other stage)
 * wait for it, while every other rank keeps computing (in 1F1B the last stage reduces
 * while the first still runs its tail); the copies leave as non-blocking sends, which
 * under MPI travel while the rank goes on. The collectives are point-to-point messages
 * of the transport (send, recv), so every transport adds in the same order. The
 * reference `vp_train_run` with the same dp sums the same groups in the same order, so
 * results are bit-identical to it. With zero = 1 (ZeRO-1) each rank holds the AdamW
 * moments of its shard only, updates its shard of the parameters after the norm, and the
 * replicas all-gather the parameters: the same bits as without ZeRO, since AdamW is
 * elementwise and the norm adds the same blocks.
 */
#ifndef VPIPE_RUNTIME_H
#define VPIPE_RUNTIME_H

#include "vpipe/checkpoint.h"
#include "vpipe/data.h"
#include "vpipe/model.h"
#include "vpipe/price.h"
#include "vpipe/render.h"
#include "vpipe/schedule.h"
#include "vpipe/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the single-rank reference -------------------------------------------------------- */

/* Faults a run injects on purpose, for tests and drills (vpipe train --inject-nan,
 * --fail-at, --stall-at). */
typedef struct vp_faults {
    int nonfinite_step; /* poison this 1-based step's gradients with NaN (0: never; at most
                           the run's steps) */
    int rank;           /* pipelines: this rank fails (rank < 0: never; < p) ... */
    int step;           /* ... at this 0-based step of the run ... */
    int op;             /* ... before this index of its op list */
    int stall;          /* 1: instead of failing, the rank stalls (waits for a tensor nobody
                           sends) until the watchdog stops the run */
} vp_faults;

typedef struct vp_train_options {
    vp_model_config model;
    int m;           /* microbatches per step (gradient accumulation): the global batch */
    int dp;          /* reduction groups (data-parallel replicas), dividing m: the gradients
                        of each group of m / dp consecutive microbatches accumulate apart and
                        the groups' sums are added in group order, as dp replicas reduce them
                        (1: one group) */
    int steps;       /* optimiser steps: the run stops after this many */
    int decay_steps; /* the learning-rate schedule's length (vp_lr_at): the cosine decays
                        to min_lr at step decay_steps and stays there after; 0: steps. A
                        checkpoint records it and a resumed run must keep it, while its
                        steps may differ: a run extended past its schedule trains on at
                        min_lr */
    double lr;       /* peak learning rate */
    double min_lr;   /* cosine floor, at most lr */
    int warmup;      /* warm-up steps (cosine only) */
    vp_lr_schedule schedule;
    vp_adamw adamw;
    double clip;      /* global gradient-norm limit; 0 disables */
    uint64_t seed;    /* weights and data order */
    int eval_every;   /* validation every K steps (0: only at the end) */
    int eval_batches; /* validation microbatches per evaluation */
    /* durability (vpipe/checkpoint.h) */
    const char *checkpoint_dir; /* save checkpoints here (NULL: never) */
    int checkpoint_every;       /* every K steps and after the last (0: only after the last) */
    const char *resume_dir;     /* continue from the checkpoint here (NULL: start fresh) */
    bool overwrite_checkpoint;  /* the run may replace a checkpoint checkpoint_dir holds that
                                   it does not resume from (default: refused) */
    bool skip_nonfinite;        /* a non-finite loss or gradient norm skips the step (zeroes
                                   the gradients, no optimiser step) instead of failing */
    vp_faults faults;           /* injected faults (none by default) */
    int vocab_shards;           /* vocabulary parallelism (vpipe/model.h): the token table and
                                   the head split into this many shards (0: none), their
                                   parts and softmax statistics combined in shard order;
                                   a pipeline with it runs a vocabulary-parallel schedule of
                                   p = vocab_shards devices, one shard each. Not yet with dp
                                   > 1 or checkpoints */
} vp_train_options;

/* Sensible defaults for everything (4 layers, width 128, 4 heads, seq 64, microbatch 8,
 * m 1, dp 1, 200 steps, lr 1e-3 cosine with 10% warm-up, weight decay 0.1, clip 1, seed 1). */
VP_API void vp_train_options_default(vp_train_options *opts);

typedef struct vp_train_progress {
    int step; /* 1-based */
    int steps;
    double loss;     /* mean training loss of the step */
    double val_loss; /* NAN unless evaluated after this step */
    double lr;
    double grad_norm; /* before clipping */
    double step_ms;
    double tokens_per_s;
    bool skipped;      /* the step was not finite and skipped (skip_nonfinite) */
    bool checkpointed; /* a checkpoint of this step was saved */
    int ranks;         /* entries of peak_bytes: the run's ranks (p times dp; 1 unpipelined) */
    const double *peak_bytes; /* [ranks] each rank's peak device bytes so far, the sum of its
                                 peaks per memory category but host (as the summary's
                                 table); NULL when emulated. Valid during the callback only */
    char note[640];           /* when not empty, what went wrong without stopping the run (old
                                 checkpoint files that could not be removed) */
} vp_train_progress;

/* One line of a training log (vpipe train --log) for progress p: a JSON object and a
 * newline, {"step", "steps", "loss", "val_loss", "lr", "grad_norm", "tokens_per_s",
 * "step_ms", "peak_bytes": [ranks] or null, "skipped", "checkpointed"}, a number that is
 * not finite (no validation this step, an emulated run) null, reals to 17 significant
 * digits. vp_render_loss_svg reads it back. New string in *line (free with free());
 * VP_ENOMEM. */
VP_API vp_status vp_train_log_line(const vp_train_progress *p, char **line, vp_error *err);

/* Called after every step; return false to stop early. */
typedef bool (*vp_train_callback)(const vp_train_progress *progress, void *user);

typedef struct vp_train_result {
    int steps;             /* steps completed, counting those before a resume */
    int resumed_step;      /* the step a resumed run started from (0: fresh) */
    int skipped_steps;     /* non-finite steps skipped in this run (skip_nonfinite) */
    double train_loss;     /* mean loss of the last step that was not skipped (NaN: none) */
    double val_loss;       /* final validation loss (NaN: no step ran) */
    double step_ms;        /* mean over this run's steps (0: none ran) */
    double tokens_per_s;   /* mean over this run's steps (0: none ran) */
    size_t peak_act_bytes; /* peak of the rank's allocator */
    uint64_t param_digest; /* vp_stage_digest over the final parameters */
} vp_train_result;

/* Trains on one rank with one stage: per step, for each microbatch j: F, B, W (with
 * dp > 1: into a separate gradient sum per group, then the groups' sums added in order);
 * then the global-norm clip and AdamW. This order and its sums are the reference that pipelined
 * runs reproduce bit for bit. Sets OpenBLAS to one thread (vp_blas_set_threads(1), a
 * process-wide setting it leaves so). Everything that can be checked before the first
 * step is: the options, the data's length, and with checkpoint_dir that the run can hold
 * the directory for itself (vp_checkpoint_acquire: created, probed, locked until the run
 * returns; another run's directory, or a checkpoint there the run does not resume from
 * and may not overwrite, is refused). With resume_dir it
 * first restores the checkpoint there (written by a run of any shape: pipelined or not,
 * any dp) and continues from its step and data position, bit-identical to a run never
 * interrupted when the checkpoint's run summed the same groups (dp); the run's steps may
 * differ from the checkpoint's run's (not its decay_steps): an extended run continues its
 * schedule, so it equals one uninterrupted run of these options bit for bit. A checkpoint
 * of the run's last step is a run already done: VP_OK with steps = resumed_step = the run's
 * steps, the digest of the restored parameters, NaN losses and no step; one past them is
 * refused (VP_EINVAL). With
 * checkpoint_dir it saves one (the three phases of checkpoint.h) after every
 * checkpoint_every-th step and after the last, never from a non-finite state; old files
 * that cannot be removed after a save are reported in the progress's note. VP_EINVAL for
 * bad options (a fault at a rank included: there is one rank), a checkpoint of another
 * run (other options or data) or one it may not overwrite, VP_EIO when the data is
 * shorter than a window, a checkpoint cannot be read or written or its directory is in
 * use by another run, VP_EPARSE for
 * a corrupt checkpoint, VP_ERUNTIME when the loss or gradient norm is not finite (unless
 * skip_nonfinite). */
VP_API vp_status vp_train_run(const vp_train_options *opts, const vp_data *data,
                              vp_train_callback callback, void *user, vp_train_result *result,
                              vp_error *err);

/* ---- the pipeline ------------------------------------------------------------------------ */

typedef enum {
    VP_TRANSPORT_THREADS = 0, /* one thread per rank in this process (default) */
    VP_TRANSPORT_MPI = 1      /* one process per rank under mpirun (builds with Open MPI) */
} vp_transport_kind;

typedef struct vp_pipeline_options {
    vp_train_options train;      /* model, optimiser, steps, seed; train.dp replicas, and
                                    train.m = schedule->m * train.dp */
    const vp_schedule *schedule; /* borrowed */
    vp_transport_kind transport; /* threads (default) or MPI */
    double watchdog_s;           /* a receive waiting longer stops the run (<= 0: 60 s) */
    const vp_cost_model *op_ms;  /* optional per-stage pass times of this schedule, in ms
                                    (e.g. from a profile, profile.h): predicts the step
                                    time (borrowed) */
    int emulate;                 /* 1: every pass waits its op_ms time instead of computing
                                    (needs op_ms): no model, no losses, real transport; data
                                    may be NULL; one replica: train.dp = 1) */
    int zero;                    /* 1: ZeRO-1 across the train.dp > 1 replicas (the AdamW
                                    moments and update sharded, the parameters
                                    all-gathered); 0: every replica steps every parameter */
    const int *layer_start;      /* [route_len + 1] the layer split of the routes (any split
                                    vp_split_check accepts; borrowed); NULL: the even split
                                    of vp_split_layers */
} vp_pipeline_options;

/* Defaults: vp_train_options_default, no schedule, watchdog 60 s, no fault, even split. */
VP_API void vp_pipeline_options_default(vp_pipeline_options *o);

typedef struct vp_pipeline_result {
    vp_train_result train;        /* as vp_train_run reports it (peak: max over ranks) */
    int p;                        /* ranks: the schedule's p times dp */
    int dp;                       /* replicas */
    int rank;                     /* lowest rank this process ran (0 on threads) */
    int route_len;                /* stages per route */
    int *layer_start;             /* [route_len + 1] the layer split */
    size_t *peak_act_bytes;       /* [p] measured peak activation bytes per rank */
    double *predicted_peak_bytes; /* [p] the simulator's prediction for the same model */
    double *memory;               /* [p * VP_MEM_CATEGORIES] measured peak bytes of rank d in
                                     category c at [d * VP_MEM_CATEGORIES + c] (0 emulated;
                                     with ZeRO-1 the optimizer category is the rank's
                                     shards' moments) */
    double *predicted_memory;     /* [p * VP_MEM_CATEGORIES] vp_runtime_predict_memory's */
    double *bubble_measured;      /* [p] 1 - busy / span of the rank in the last step */
    int bit_exact;                /* 1 when bit-identity with vp_train_run (same dp) is
                                     expected */
    double predicted_step_ms;     /* simulated makespan with o->op_ms (0: none) */
    vp_timeline *measured;        /* last step of replica 0, times in ms, memory in MiB */
    int emulated;                 /* 1: the passes were emulated, so losses, lr and grad norm
                                     are NaN and param_digest and the measured peaks are 0:
                                     not applicable; step times are real */
    /* Set on failure as well (then nothing else is): */
    int failed_rank; /* the rank whose failure stopped the run (-1: none, or before it) */
    int report;      /* 1 when this process is the one to report the failure: always on
                        the threads transport; under MPI the process of failed_rank (or of
                        rank 0 when every process failed alike before the run), so that
                        the job prints the error once */
} vp_pipeline_result;

/* Releases what a result holds (not the struct itself); NULL fields are fine. */
VP_API void vp_pipeline_result_release(vp_pipeline_result *r);

/* Checks that schedule s can train model cfg with the layer split layer_start
 * ([route_len + 1], NULL: the even split), cheapest first: the model, whether the split
 * fills the route's stages, then the validation (a replay of every op) and the placement.
 * Sets *bit_exact (optional) to 1 when every stage runs its weight gradients in
 * microbatch order and there is one model copy (then results are bit-identical to the
 * single-rank reference). VP_EVALIDATION / VP_EINVAL with the reason. */
VP_API vp_status vp_pipeline_plan_check(const vp_schedule *s, const vp_model_config *cfg,
                                        const int *layer_start, int *bit_exact, vp_error *err);

/* Trains with schedule o->schedule on train.dp replicas: on the threads transport every
 * rank runs as a thread of this process; under MPI (p * dp processes) this process runs
 * the rank MPI gives it, and only rank 0's process receives the parameter digest and the
 * measured timeline. Sets OpenBLAS to one thread per process (vp_blas_set_threads(1),
 * left so). Under MPI the first call initialises MPI (MPI_Init, and an atexit handler
 * that calls MPI_Finalize) and duplicates MPI_COMM_WORLD once for the processes'
 * agreement on the outcome; every process of the job must call it with the same options.
 * Before the first step it checks what it can (the options as vp_train_run does; the
 * replicas: dp dividing train.m into the schedule's m, zero only with dp > 1, no
 * emulated replicas; the data's length; the faults against the schedule: a rank
 * < p * dp, a step of the run, an op of that rank's list; vp_pipeline_plan_check; the
 * checkpoint directory, created and probed, and held by the process of rank 0 as
 * vp_train_run holds it). train.resume_dir may hold a checkpoint of
 * any shape (vpipe/checkpoint.h): the run continues bit for bit when that run summed the
 * same groups (dp). A checkpoint of the run's last step is a run already done, as for
 * vp_train_run (the digest of the restored parameters, NaN losses). callback runs on
 * rank 0 after every step (false stops every rank after that step).
 * Fills *result (release with vp_pipeline_result_release). A failing rank stops every
 * rank; every process returns the same status and message, of the rank that failed
 * first (VP_ERUNTIME for a rank's failure or a watchdog, whose report names each rank's
 * op), and result->report tells the one process that should print it. */
VP_API vp_status vp_pipeline_train(const vp_pipeline_options *o, const vp_data *data,
                                   vp_train_callback callback, void *user,
                                   vp_pipeline_result *result, vp_error *err);

/* The measured step of a pipelined run of s (pr->measured, renamed "measured") beside
 * its simulation with every stage's measured mean op times and model's activation bytes
 * per stage under pr's split, both in MiB: an SVG gallery in a new *svg (caller frees).
 * Errors of the cost model and the renderers. */
VP_API vp_status vp_pipeline_svg(const vp_schedule *s, vp_pipeline_result *pr,
                                 const vp_model_config *model, char **svg, vp_error *err);

/* Under MPI, stops every process of the job with exit code `code` (for the command line
 * after a failed run): it first waits until every process has called it, so that the
 * process reporting the failure has printed it: at most 10 s, or 1 s once a process did
 * not answer when the outcome was agreed (a stopped or dead process never comes). Without
 * MPI, or before MPI was initialised, does nothing. */
VP_API void vp_runtime_mpi_abort(int code);

/* ---- the layer split ------------------------------------------------------------------------ */

/* The layer split of model cfg over schedule s's routes into layer_start[route_len + 1],
 * by goal: VP_SPLIT_EVEN is vp_split_layers's; VP_SPLIT_MEMORY and VP_SPLIT_TIME are the
 * price module's split of vp_arch_vpipe (vp_price_layout_new), balancing each rank's
 * bytes (parameters, gradients and AdamW moments, plus each stage's activation times the
 * most microbatches s keeps alive on it, the embedding, head and loss on the stages that
 * hold them; a recomputing s is balanced as if it kept everything) or each rank's pass
 * time (FLOPs). VP_EINVAL when the model does not fill s's stages, VP_ENOMEM. */
VP_API vp_status vp_runtime_split(const vp_schedule *s, const vp_model_config *cfg,
                                  vp_split_goal goal, int *layer_start, vp_error *err);

/* What a run resuming the committed checkpoint in dir continues (vp_checkpoint_inspect,
 * without restoring it): its step and data position, and its run's trajectory, whose
 * steps and learning-rate schedule a resumed run keeps unless given others. Errors of
 * vp_checkpoint_inspect. */
VP_API vp_status vp_train_resume_point(const char *dir, vp_checkpoint_info *info, vp_error *err);

/* ---- sampling ------------------------------------------------------------------------------ */

/* The most bytes one vp_sample_run generates. */
#define VP_SAMPLE_MAX (1 << 20)

/* What vpipe sample asks. */
typedef struct vp_sample_options {
    const char *resume_dir; /* the checkpoint (of any run's shape) */
    const char *prompt;     /* prompt_len bytes (one or more) the text continues */
    size_t prompt_len;
    int tokens;         /* bytes to generate: [1, VP_SAMPLE_MAX] */
    int p;              /* the model split into p stages as a p-rank pipeline's route
                           (vp_split_layers), run one after another: 1 whole */
    double temperature; /* 0: the most probable byte; else drawn by probabilities raised to
                           1 / temperature, in [0, 100] */
    uint64_t seed;      /* the draws: byte k's uniform number is a function of (seed, k) */
} vp_sample_options;

typedef struct vp_sample_result {
    char *text;            /* the generated bytes, NUL-terminated (may hold NULs: len) */
    size_t len;            /* tokens */
    int step;              /* the checkpoint's step */
    vp_model_config model; /* the checkpoint's model */
    uint64_t digest;       /* FNV-1a 64 of every probability row drawn from: equal for every p */
} vp_sample_result;

/* Continues the prompt with o->tokens bytes from the committed checkpoint in o->resume_dir:
 * for each byte, the training forward pass (vp_stage_forward, one row of the checkpoint's
 * model, microbatch 1) over the last seq_len bytes of the text, through the p stages in
 * order, and a draw from the softmax at its last position. The split changes nothing:
 * every p gives the same bits. Fills *r (free r->text with free()). VP_EINVAL for options
 * outside their ranges or a model that cannot be split in p, the checkpoint's errors
 * (vp_checkpoint_inspect, vp_checkpoint_load), VP_ENOMEM. */
VP_API vp_status vp_sample_run(const vp_sample_options *o, vp_sample_result *r, vp_error *err);

/* ---- measuring ---------------------------------------------------------------------------- */

/* One hop between two ranks on the threads transport: half the median round trip of a
 * tensor of `floats` floats over reps trips, in ms. */
VP_API vp_status vp_runtime_measure_hop(size_t floats, int reps, double *ms, vp_error *err);

/* The predicted peak bytes of every rank of the run o describes (o->schedule, the model
 * o->train.model, o->train.dp replicas, o->zero, the split o->layer_start, NULL: even),
 * per category, into out[p * dp * VP_MEM_CATEGORIES] (caller storage; rank r's category
 * c at [r * VP_MEM_CATEGORIES + c]): its stages' parameters, gradients and scratch
 * (vp_stage_sizes_of); their moments (vp_shard_moment_bytes: with ZeRO-1 of the rank's
 * shards, vp_shard_of); the simulator's peak of activations (vp_runtime_model_bytes); the
 * peak of tensors in flight from the op order. VP_EINVAL as vp_runtime_model_bytes or
 * vp_shard_of, VP_ENOMEM. */
VP_API vp_status vp_runtime_predict_memory(const vp_pipeline_options *o, double *out,
                                           vp_error *err);

/* Fills cm's byte arrays for model cfg under schedule s with the layer split layer_start
 * (NULL: vp_split_layers's) and sets cm->has_bytes and cm->bw_holds_keep (a stage's BW
 * runs its B, then its W): per stage the bytes F adds (act),
 * those B keeps for W (stash) and, when s recomputes, those held from F until R (the
 * input, or all but the attention core). VP_EINVAL when cm is not s's or the layers do
 * not split over s's route. */
VP_API vp_status vp_runtime_model_bytes(vp_cost_model *cm, const vp_schedule *s,
                                        const vp_model_config *cfg, const int *layer_start,
                                        vp_error *err);

/* Sets cm's per-stage times to the mean measured duration of each stage's passes in tl
 * (a measured timeline of schedule s): f, b, w, r from F, B, W, R ops; a stage that only
 * ran full backwards gets b = w = half their mean; fb from F&B ops (by forward stage); c = 0.
 * Stages or kinds that tl never ran keep their value. VP_EINVAL when cm or tl is not of
 * s's shape, VP_ENOMEM (cm unchanged). */
VP_API vp_status vp_runtime_measured_costs(const vp_schedule *s, const vp_timeline *tl,
                                           vp_cost_model *cm, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
