/* Profiling: measured pass costs of the model's parts, their file format, the cost
 * models and per-slice costs made from them, choosing a schedule for a memory budget
 * from them, and preparing a training run (vpipe train's one library call).
 *
 * Module `profile` (src/profile/). Depends on runtime (the hop measurement, byte
 * predictions, the run), request (a profile as a request's measured costs, a run's
 * schedule), plan, families, model, data, sim and schedule.
 */
#ifndef VPIPE_PROFILE_H
#define VPIPE_PROFILE_H

#include "vpipe/model.h"
#include "vpipe/plan.h"
#include "vpipe/request.h"
#include "vpipe/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parts of the model whose costs a profile measures. */
enum { VP_PART_EMBED = 0, VP_PART_LAYER = 1, VP_PART_HEAD = 2, VP_PART_COUNT = 3 };

/* Measured time of each pass of each part, per microbatch, in milliseconds: the
 * embeddings (a first stage without layers), one transformer layer, and the final norm,
 * head and loss (a last stage without layers); plus the time of one hop between ranks
 * on the threads transport. Any split's stage costs are sums of these. */
typedef struct vp_profile {
    vp_model_config model;
    double f[VP_PART_COUNT], b[VP_PART_COUNT], w[VP_PART_COUNT];
    double c;
} vp_profile;

/* Measures cfg's parts on this machine with one BLAS thread (it sets
 * vp_blas_set_threads(1), a process-wide setting it leaves so): the median of reps runs
 * after one warm-up. VP_EINVAL for a bad config or reps < 1. */
VP_API vp_status vp_profile_measure(const vp_model_config *cfg, int reps, vp_profile *out,
                                    vp_error *err);

/* vpipe profile JSON:
 *   {"format": "vpipe-profile", "version": 1,
 *    "model": {"layers": 4, "width": 128, "heads": 4, "seq": 64, "microbatch": 8, "vocab": 256},
 *    "ms": {"embed": {"F": .., "B": .., "W": ..}, "layer": {..}, "head": {..}}, "c_ms": ..}
 * Write returns a new string (caller frees) or NULL (also for a non-finite time); its
 * numbers carry 17 significant digits, so reading it back gives the same bits. Read
 * checks every field (VP_EPARSE with line/column or the field's name; an integer out of
 * range is refused, never truncated) and refuses a text over VP_PROFILE_MAX bytes. */
#define VP_PROFILE_MAX ((size_t)1 << 20)
VP_API char *vp_profile_write_json(const vp_profile *pr);
VP_API vp_status vp_profile_read_json(const char *text, size_t len, vp_profile *out, vp_error *err);

/* Fills cm (a model of schedule s) from the profile: per-stage F, B, W times (R as F: a
 * selective recomputation takes less) for the layer split layer_start ([route_len + 1],
 * NULL: vp_split_layers's), c, and per-stage bytes from the size functions
 * (vp_runtime_model_bytes; cm->has_bytes set); with vocabulary parallelism the embedding's
 * and the head's times go to the p shards' passes, a p-th each (EF: the embedding's F; EB:
 * its B + W; S: the head's F; T: its B + W). VP_EINVAL when the layers do not split over
 * s. */
VP_API vp_status vp_profile_cost_model(const vp_profile *pr, const vp_schedule *s,
                                       const int *layer_start, vp_cost_model *cm, vp_error *err);

/* Bytes of one memory unit for the profiled model on p ranks: the mean over the p stages
 * of a one-stage-per-rank split of the activation bytes one microbatch leaves after F. */
VP_API vp_status vp_profile_unit_bytes(const vp_profile *pr, int p, double *bytes, vp_error *err);

/* Per-slice costs of a p-rank pipeline with one stage per rank (the model split with
 * vp_split_layers): dev[3p] (caller storage) holds each rank's slice F in dev[0..p), B in
 * dev[p..2p) and W in dev[2p..3p); costs gets their means, c and pointers into dev. For
 * generators and the planner. */
VP_API vp_status vp_profile_slice_costs(const vp_profile *pr, int p, double *dev, vp_costs *costs,
                                        vp_error *err);

/* A profile file (vp_read_file of at most VP_PROFILE_MAX bytes, vp_profile_read_json) as the
 * measured costs of a request: the reader of --cost-file (vp_request.read_costs). Errors of
 * the two readers. */
VP_API vp_status vp_profile_cost_reader(const char *path, vp_cost_source *out, vp_error *err);

/* vp_request_call that also reads "cost_file" (vp_profile_cost_reader). */
VP_API vp_status vp_profile_request_call(const char *command, const char *options, char **reply,
                                         vp_error *err);

/* ---- choosing a schedule for a memory budget from measured costs ------------------ */

/* What vp_autoplan answers: the plan (owned by the caller: vp_plan_free), the chosen
 * schedule's predicted peak activation bytes (the largest rank's) and the budget in bytes. */
typedef struct vp_autoplan_result {
    vp_plan *plan;
    double peak_bytes;
    double budget_bytes;
} vp_autoplan_result;

/* The planner's answer for the model of profile pr on p ranks with m microbatches under
 * budget, checked in bytes: budget resolves to bytes (a fraction of 1F1B's predicted
 * peak for this model, units of the mean per-rank slice activation, or bytes), the
 * planner (plan.h) searches with the profile's per-rank costs and the model's memory
 * split (B keeps the stash for W), and the units budget tightens until the chosen
 * schedule's exact predicted peak bytes (size functions, every rank) fit. Fills *out (its
 * plan NULL on failure). VP_EINVAL naming the smallest reachable peak when nothing fits. */
VP_API vp_status vp_autoplan(const vp_profile *pr, int p, int m, const vp_budget *budget,
                             vp_autoplan_result *out, vp_error *err);

/* ---- preparing a training run (vpipe train) ---------------------------------------- */

/* What `vpipe train` asks: its options, as vp_train_request_init leaves them when not
 * given. Strings are borrowed. */
typedef struct vp_train_request {
    vp_pipeline_options po; /* the model, optimiser, steps, data order, durability, faults,
                               dp, zero, watchdog as given (settled by vp_train_prepare);
                               train.m 0: not given (1, or a schedule file's);
                               train.min_lr < 0: not given (a tenth of train.lr) */
    const char *schedule;   /* a family, "single" (the reference) or "auto" (the planner's
                               choice under memory); NULL: 1f1b when p > 1 */
    const char *schedule_file;
    const char *data;        /* the text to train on; NULL: the default corpus */
    const char *memory;      /* --schedule auto's budget: 0.5, 4u or bytes */
    const char *cost_file;   /* a profile (vp_profile_read_json) */
    const char *trace, *svg; /* the measured step's pictures (probed before step 1) */
    const char *log, *plot;  /* the training log (vp_train_log_line per step) and its loss
                                plot (vp_render_loss_svg), probed before step 1 */
    const char *fail_at;     /* "R:S:K": rank R fails before op K of step S (po.train.faults) */
    const char *stall_at;    /* "R:S:K": rank R stalls there instead */
    int p;                   /* pipeline ranks; 0: not given (1, or a schedule file's) */
    int chunks;              /* -v (0: the family's default) */
    int warmup;              /* -1: 10% of the steps */
    int lr_schedule;         /* 0 cosine, 1 constant */
    int transport;           /* 0 threads, 1 MPI */
    double weight_decay;
    long max_ops;                 /* 0: the default op limit */
    int split;                    /* a vp_split_goal; -1: not given (even) */
    const char *layers_per_stage; /* "3,4,4,3" (placed after split as in vp_request) */
    int recompute;                /* a vp_recompute; -1: not given */
    const char *offload;          /* --offload shares (vp_offload_parse; placed after recompute
                                     as in vp_request) */
    int offload_policy;           /* a vp_offload_policy; -1: not given */
    bool vocab_parallel;          /* --vocab-parallel: one vocabulary shard per rank (the
                                     reference's shards: --vocab-shards, po.train.vocab_shards) */
    bool json, emulate;
    /* How the caller is served. */
    void *user;
    /* A line to show: on standard output when out (the run's report: the planner's choice,
     * the split), else on standard error (a status); a failure stops the preparation. */
    vp_status (*say)(void *user, const char *line, bool out, vp_error *err);
    /* Checks that a file (dir: a directory, which it may create) can be written. */
    vp_status (*probe)(void *user, const char *path, bool dir, vp_error *err);
} vp_train_request;

/* Defaults: vp_pipeline_options_default with vp_train_options_default, nothing given (p
 * and train.m 0). */
VP_API void vp_train_request_init(vp_train_request *q);

/* What a run needs, prepared. The pointers of po point into this struct. */
typedef struct vp_train_ready {
    bool reference;         /* the single-rank reference runs (vp_train_run) */
    vp_pipeline_options po; /* the run's options: settled, and for a pipelined run its
                               schedule, layer split, op times and emulation, train.m the
                               global batch */
    vp_data *data;
    const char *data_path; /* the text read */
    const char *transport; /* "threads" or "mpi" */
    vp_schedule *schedule; /* a pipelined run's */
    int *layer_start;
    vp_cost_model *op_ms; /* from the profile, when one was given or measured */
    vp_profile profile;
    bool have_profile;
} vp_train_ready;

/* Prepares the run q asks, cheapest first: the injected faults; the profile file; every check of
 * the options alone (flags that conflict, the replicas dividing the batch, faults inside the run,
 * the model, and for a run given by flags its shape: the layers filling the stages, the op limit);
 * the outputs (q->probe); the profile's model; the data; then for a pipelined run its schedule
 * (--schedule auto: the planner from the profile, measured when none was given; a file, whose p
 * and m the given -p and -m must match (VP_EVALIDATION otherwise); a family),
 * the faults against it, the layer split (said as a report line), and the profile an emulation
 * needs. Fills *out (release with vp_train_ready_release; empty on failure). Errors with the
 * command line's messages (VP_EINVAL for options, VP_EIO/VP_EPARSE for files, the readers' and
 * builders'). */
VP_API vp_status vp_train_prepare(const vp_train_request *q, vp_train_ready *out, vp_error *err);

/* Releases what a prepared run holds; NULL fields are fine. */
VP_API void vp_train_ready_release(vp_train_ready *r);

#ifdef __cplusplus
}
#endif

#endif
