/* The string API: requests stated as JSON text, answered with text.
 *
 * Module `request` (src/request/): what bindings call (the Python package, a browser
 * page): the options of every call are one JSON object, and every answer is text (JSON,
 * SVG, terminal text, a Chrome trace) or a schedule, which io.h writes as vpipe JSON or
 * PyTorch CSV and reads back from text. The answers are the bytes the command line
 * prints for the same request. Depends on plan, price, io, render, families, sim,
 * schedule and base.
 *
 * Options, each optional unless a call needs it; names are the command line's long flags
 * with '_' for '-', values as on the command line:
 *   "family"          a family name (vpipe list), for vp_request_schedule and pricing
 *   "p", "m"          devices and microbatches (integers >= 1)
 *   "v"               chunks per device for `interleaved` (integer >= 1)
 *   "costs"           "F=2,B=2,W=2,c=0.5,FB=3" (vp_costs_parse; default F=B=W=1, c=0)
 *   "memory_model"    "at-w" or "zb:R" (vp_memcfg_parse)
 *   "memory_limit"    units, for zb-1p and zb-2p (number >= 0)
 *   "max_ops"         the op limit (number >= 1; default VP_MAX_OPS_DEFAULT)
 *   "threads"         the planner's worker threads (integer >= 1; results never depend on it)
 *   "memory"          the planner's budget: "0.5", "4u" or "123456b" (vp_budget_parse)
 *   "width", "fit", "color", "title"   drawing (vp_render_opts; width 20..100000)
 *   "model", "gpu"    pricing: a preset name or the path of a config.json / accelerator JSON
 *   "seq", "mbs", "tp", "dp" (integers >= 1), "sp", "zero1", "flash" (booleans),
 *   "recompute" ("none", "selective", "full"), "split" ("time", "memory", "even"),
 *   "layers_per_stage" (array of integers)   the training setup (price.h)
 * A call reads the options it needs and ignores the others, so one object can serve
 * every call. NULL or "" is {}. An unknown option, or a value of the wrong type or out of
 * range, is VP_EINVAL naming the option; malformed JSON is VP_EPARSE with line and column.
 * Every text answer is a new NUL-terminated string the caller frees with free(); every
 * schedule a new one the caller frees with vp_schedule_free; both NULL on failure.
 */
#ifndef VPIPE_REQUEST_H
#define VPIPE_REQUEST_H

#include "vpipe/plan.h"
#include "vpipe/price.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds options' family for p and m (both required) with its costs, memory model,
 * memory limit and op limit (`vpipe schedule`). VP_EINVAL for an unknown family, VP_ELIMIT
 * over the op limit, the generator's errors. */
VP_API vp_status vp_request_schedule(const char *options, vp_schedule **out, vp_error *err);

/* Simulates s under options' costs and memory model: vp_sim_json's report (`vpipe
 * simulate --json`). Errors of vp_cost_model_new and vp_simulate. */
VP_API vp_status vp_request_simulate(const vp_schedule *s, const char *options, char **report,
                                     vp_error *err);

/* Simulates s as vp_request_simulate does and draws it: format "svg" (`vpipe render
 * --svg`), "ascii" (`--ascii`, colours only with "color": true) or "trace" (`--trace`).
 * VP_EINVAL for another format, the renderer's errors. */
VP_API vp_status vp_request_render(const vp_schedule *s, const char *format, const char *options,
                                   char **text, vp_error *err);

/* Plans for options' p, m (required) and budget "memory" (required): vp_plan_json's report
 * (`vpipe plan --json`), and in *chosen (optional, may be NULL) the chosen schedule.
 * Errors of vp_budget_parse (VP_EINVAL naming "memory") and vp_plan_run. */
VP_API vp_status vp_request_plan(const char *options, char **report, vp_schedule **chosen,
                                 vp_error *err);

/* Prices a schedule for options' model and gpu (both required) under its training setup:
 * vp_price_result_json's report. With s NULL, builds options' family for p and m with the
 * priced costs (vp_price_family) and returns that schedule in *built (optional); else
 * prices s (vp_price_schedule) and leaves *built NULL. Errors of the model and
 * accelerator readers, vp_price_check and the pricing. */
VP_API vp_status vp_request_price(const vp_schedule *s, const char *options, char **report,
                                  vp_schedule **built, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
