/* Profiling: measured pass costs of the model's parts, their file format, the cost
 * models and per-slice costs made from them, and choosing a schedule for a memory budget
 * from them.
 *
 * Module `profile` (src/profile/). Depends on runtime (the hop measurement, byte
 * predictions), plan, families, sim and model.
 */
#ifndef VPIPE_PROFILE_H
#define VPIPE_PROFILE_H

#include "vpipe/model.h"
#include "vpipe/plan.h"
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
 * (vp_runtime_model_bytes; cm->has_bytes set). VP_EINVAL when the layers do not split
 * over s. */
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

#ifdef __cplusplus
}
#endif

#endif
