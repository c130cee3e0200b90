/* Pipeline training runtime: executes any validated schedule on the transformer of
 * model.h, one rank per device, and measures what the simulator predicts.
 *
 * Each rank walks its op list in order. F receives its input from the previous stage
 * (or reads the batch), B receives its output gradient from the next stage (or starts
 * from the loss), W needs nothing from other ranks; hand-offs between two stages of one
 * rank go through the same mailbox at no cost. After the microbatches: the two replicas
 * of the bidirectional placement sum their gradients, every rank learns the losses and
 * the global gradient norm (summed per layer in layer order, as the single-rank
 * reference does), then clips and steps AdamW. Same seed, data and microbatching as
 * `vp_train_run` give bit-identical losses and parameters whenever every stage runs its
 * weight-gradient passes in microbatch order (vp_pipeline_plan_check tells).
 */
#ifndef VPIPE_RUNTIME_H
#define VPIPE_RUNTIME_H

#include "vpipe/model.h"
#include "vpipe/plan.h"
#include "vpipe/render.h"
#include "vpipe/schedule.h"

/* Splits n_layer layers over the route_len stages of a route into [l0[k], l0[k+1]),
 * k = 0..route_len-1 (l0 has route_len + 1 entries): equal shares, with the remainder
 * going to the middle stages first, so the first stage (embeddings) and the last (head
 * and loss) take fewer. VP_EINVAL when a middle stage would be empty (fewer than
 * route_len - 2 layers). */
vp_status vp_split_layers(int n_layer, int route_len, int *l0, vp_error *err);

/* ---- profiling: measured costs feed the cost model and the planner ---------------- */

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

typedef enum {
    VP_TRANSPORT_THREADS = 0, /* one thread per rank in this process (default) */
    VP_TRANSPORT_MPI = 1      /* one process per rank under mpirun (builds with Open MPI) */
} vp_transport_kind;

typedef struct vp_pipeline_options {
    vp_train_options train;      /* model, optimiser, steps, seed; train.m = schedule->m */
    const vp_schedule *schedule; /* borrowed */
    vp_transport_kind transport; /* threads (default) or MPI */
    double watchdog_s;           /* a receive waiting longer stops the run (<= 0: 60 s) */
    int fail_rank;               /* fault injection (tests): this rank fails ... */
    int fail_step;               /* ... at this 0-based step ... */
    int fail_op;                 /* ... before this op index (fail_rank < 0: never) */
    const vp_profile *profile;   /* optional measured costs: predict the step time (borrowed) */
    int emulate;                 /* 1: every pass waits its profiled time instead of computing
                                    (needs profile): no model, no losses, real transport */
    int fail_stall;              /* 1: instead of failing, the rank stalls (waits for a
                                    tensor nobody sends) until the watchdog stops the run */
} vp_pipeline_options;

/* Defaults: vp_train_options_default, no schedule, watchdog 60 s, no fault. */
void vp_pipeline_options_default(vp_pipeline_options *o);

typedef struct vp_pipeline_result {
    vp_train_result train;        /* as vp_train_run reports it (peak: max over ranks) */
    int p;                        /* ranks */
    int rank;                     /* lowest rank this process ran (0 on threads) */
    int route_len;                /* stages per route */
    int *layer_start;             /* [route_len + 1] the layer split */
    size_t *peak_act_bytes;       /* [p] measured peak activation bytes per rank */
    double *predicted_peak_bytes; /* [p] the simulator's prediction for the same model */
    double *bubble_measured;      /* [p] 1 - busy / span of the rank in the last step */
    int bit_exact;                /* 1 when bit-identity with vp_train_run is expected */
    double predicted_step_ms;     /* simulated makespan with o->profile's costs (0: none) */
    vp_timeline *measured;        /* last step, times in ms, memory in MiB */
} vp_pipeline_result;

/* Releases what a result holds (not the struct itself); NULL fields are fine. */
void vp_pipeline_result_release(vp_pipeline_result *r);

/* Checks that schedule s can train model cfg: it validates, the layers split over its
 * route, and m fits. Sets *bit_exact (optional) to 1 when every stage runs its weight
 * gradients in microbatch order and there is one model copy (then results are bit-
 * identical to the single-rank reference). VP_EINVALID / VP_EINVAL with the reason. */
vp_status vp_pipeline_plan_check(const vp_schedule *s, const vp_model_config *cfg, int *bit_exact,
                                 vp_error *err);

/* Trains with schedule o->schedule: on the threads transport every rank runs as a
 * thread of this process; under MPI this process runs the rank MPI gives it, and only
 * rank 0's process receives the parameter digest and the measured timeline.
 * callback runs on rank 0 after every step (false stops every rank after that step).
 * Fills *result (release with vp_pipeline_result_release). A failing rank stops every
 * rank: VP_ERUNTIME with the first failure's message (a watchdog report names each
 * rank's op). */
vp_status vp_pipeline_train(const vp_pipeline_options *o, const vp_data *data,
                            vp_train_callback callback, void *user, vp_pipeline_result *result,
                            vp_error *err);

/* Under MPI, stops every process of the job with exit code `code` (for the command line
 * after a failed run); without MPI, does nothing. */
void vp_runtime_mpi_abort(int code);

/* Measures cfg's parts on this machine (one BLAS thread): the median of reps runs after
 * one warm-up. VP_EINVAL for a bad config or reps < 1. */
vp_status vp_profile_measure(const vp_model_config *cfg, int reps, vp_profile *out, vp_error *err);

/* vpipe profile JSON:
 *   {"format": "vpipe-profile", "version": 1,
 *    "model": {"layers": 4, "width": 128, "heads": 4, "seq": 64, "microbatch": 8, "vocab": 256},
 *    "ms": {"embed": {"F": .., "B": .., "W": ..}, "layer": {..}, "head": {..}}, "c_ms": ..}
 * Write returns a new string (caller frees) or NULL; read checks every field (VP_EPARSE
 * with line/column or the field's name). */
char *vp_profile_write_json(const vp_profile *pr);
vp_status vp_profile_read_json(const char *text, size_t len, vp_profile *out, vp_error *err);

/* Fills cm (a model of schedule s) from the profile: per-stage F, B, W times for the layer
 * split vp_split_layers gives s, c, and, when cm has byte arrays, per-stage activation and
 * stash bytes from the size functions. VP_EINVAL when the layers do not split over s. */
vp_status vp_profile_cost_model(const vp_profile *pr, const vp_schedule *s, vp_cost_model *cm,
                                vp_error *err);

/* Bytes of one memory unit for the profiled model on p ranks: the mean over the p stages
 * of a one-stage-per-rank split of the activation bytes one microbatch leaves after F. */
vp_status vp_profile_unit_bytes(const vp_profile *pr, int p, double *bytes, vp_error *err);

/* Per-slice costs of a p-rank pipeline with one stage per rank (the model split with
 * vp_split_layers): dev_f/dev_b/dev_w [p] (caller storage) hold each rank's slice, costs
 * gets their means, c and pointers to the arrays. For generators and the planner. */
vp_status vp_profile_slice_costs(const vp_profile *pr, int p, double *dev_f, double *dev_b,
                                 double *dev_w, vp_costs *costs, vp_error *err);

/* ---- choosing a schedule for a memory budget from measured costs ------------------ */

/* The planner's answer for the model of profile pr on p ranks with m microbatches under
 * budget, checked in bytes: budget resolves to bytes (a fraction of 1F1B's predicted
 * peak for this model, units of the mean per-rank slice activation, or bytes), the
 * planner (plan.h) searches with the profile's per-rank costs and the model's memory
 * split (B keeps the stash for W), and the units budget tightens until the chosen
 * schedule's exact predicted peak bytes (size functions, every rank) fit. Fills *plan
 * (caller frees with vp_plan_free), *peak_bytes and *budget_bytes. VP_EINVAL naming the
 * smallest reachable peak when nothing fits. */
vp_status vp_autoplan(const vp_profile *pr, int p, int m, const vp_budget *budget, vp_plan **plan,
                      double *peak_bytes, double *budget_bytes, vp_error *err);

/* Sets cm's per-stage times to the mean measured duration of each stage's passes in tl
 * (a measured timeline of schedule s): f, b, w from F, B, W ops; a stage that only ran
 * full backwards gets b = w = half their mean; fb from F&B ops (by forward stage); c = 0.
 * Stages or kinds that tl never ran keep their value. */
void vp_runtime_measured_costs(const vp_schedule *s, const vp_timeline *tl, vp_cost_model *cm);

#endif
