/* The one front door: every request of every caller as one typed value, answered by the
 * library with what the command line prints and writes.
 *
 * Module `request` (src/request/). The command line, the Python package and the browser
 * page are thin callers of this header: the command line's flag tables write straight into
 * a vp_request, a binding states the same request as a JSON object (vp_request_call), and
 * vp_request_run decides everything an option means (family or file, per-device measured
 * costs, where recomputation goes, the defaults of --gpu and --split, plan versus plan
 * --model, compare's worker threads) and answers a vp_reply: the bytes of stdout, the files
 * to write, the notes for stderr and the exit code. The library never prints and never
 * writes a file: the caller does, so the answer is the same bytes through every door.
 * Depends on calibrate, hybrid, plan, price, io, render, families, block, sim, schedule
 * and base.
 *
 * Commands: "list", "compare", "simulate", "plan" (a memory budget, or with "model" the
 * whole DP x TP x PP x schedule configuration), "render", "schedule", "validate", "block",
 * "model" (operand "list", or "show" and a model) and "calibrate" (accelerator constants
 * fitted to measured runs). The options each takes are the command line's (`vpipe
 * COMMAND --help`); an option a command does not take, or that would be ignored in the
 * request it is part of, is refused with a message naming it.
 *
 * JSON keys (vp_request_call, vp_request_from_json): the command's long flags with '_' for
 * '-', "-p", "-m", "-v" as "p", "m", "v", "-o" as "output", positional arguments as
 * "operand" (a string, or an array of two for `model show NAME`). Values: integers and
 * numbers as JSON numbers ("max_ops" may be 1e8), flags true or false (false is as if not
 * given), choices and texts as strings, "layers_per_stage" an array of integers or
 * "3,4,4,3". A message is the command line's with each flag spelled "option 'key'". By
 * command (a key is required where the command line requires its flag):
 *   list      json
 *   simulate  operand (family or file), p, m, v, cost, cost_file, memory_model,
 *             memory_limit, max_ops, recompute, vocab_parallel, offload, offload_policy,
 *             model, gpu, seq, mbs, tp, sp, dp, ep, etp, zero, flash, tp_overlap, pp_overlap,
 *             reserve, dp_overlap, split, layers_per_stage, ep_overlap, ep_dispatch,
 *             ep_routing, fp8, fp8_params, grad_bytes, cp, cp_comm, attn_kernel, framework,
 *             eager, recompute_modules, optimizer_dtype, json
 *   compare   the same without operand, plus svg, threads
 *   render    simulate's without json, plus ascii, svg, trace, width, fit, color,
 *             no_color, title
 *   schedule  simulate's without json (operand: a family), plus output, format
 *   validate  operand, p, m, v, cost, cost_file, memory_model, memory_limit, max_ops,
 *             vocab_parallel
 *   plan      p, m, v, cost, cost_file, memory_model, memory_limit, max_ops, recompute,
 *             vocab_parallel, offload, offload_policy, memory, json, output, model, gpu,
 *             seq, mbs, tp, sp, dp, ep, etp, zero, flash, tp_overlap, pp_overlap, reserve,
 *             dp_overlap, split, layers_per_stage, ep_overlap, ep_dispatch, ep_routing, fp8,
 *             fp8_params, grad_bytes, cp, cp_comm, attn_kernel, framework, eager,
 *             recompute_modules, optimizer_dtype, gpus, global_batch, pp, top, max_chunks,
 *             threads,
 *             time_limit, margin, emit, operand (emit torchtitan's DIR)
 *   block     operand (a block file), p, m, v, cost, cost_file, memory_model, memory_limit,
 *             max_ops, reorder, output, json, example
 *   model     operand ("list" | ["show", NAME]), json; show also model (instead of
 *             NAME), seq, mbs, tp, sp, dp, zero, flash, recompute, fp8, framework,
 *             recompute_modules (gpu, tp_overlap,
 *             pp_overlap, reserve, dp_overlap, ep_overlap, ep_dispatch, ep_routing,
 *             fp8_params, grad_bytes, attn_kernel, eager and optimizer_dtype are refused:
 *             they price a pipeline)
 *   calibrate runs (a RUNS.csv path, required), output (required: the calibrated
 *             accelerator's file), gpu (the accelerator the fit starts from),
 *             constants (those to fit, comma-separated), json
 */
#ifndef VPIPE_REQUEST_H
#define VPIPE_REQUEST_H

#include <stdbool.h>

#include "vpipe/plan.h"
#include "vpipe/price.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the typed request ----------------------------------------------------------------- */

/* How messages name an option: as the command line's flag ("--memory-model 'x': ...") or
 * as a JSON key ("option 'memory_model': ..."). */
typedef enum { VP_SPELL_FLAGS = 0, VP_SPELL_JSON = 1 } vp_spelling;

/* schedule --format. */
typedef enum {
    VP_FORMAT_JSON = 0,
    VP_FORMAT_TEXT = 1,
    VP_FORMAT_TORCH_CSV = 2,
    VP_FORMAT_TORCH_CSV_COMMS = 3
} vp_format;

/* plan --model --emit. */
typedef enum { VP_EMIT_NONE = -1, VP_EMIT_TORCHTITAN = 0, VP_EMIT_MEGATRON = 1 } vp_emit;

/* vp_request.fp8's "auto": plan --model searches FP8 (after vp_fp8's recipes). */
#define VP_REQUEST_FP8_AUTO 5

/* Costs measured outside the schedule library: --cost-file names a `vpipe profile` file,
 * which libvpipe-runtime reads (vp_profile_cost_reader, profile.h). */
typedef struct vp_cost_source {
    void *ctx;
    /* Each rank's slice costs of a p-rank pipeline (one stage per rank) into dev[3p] (F,
     * then B, then W), their means, c and pointers into dev into *costs, and the bytes of
     * one memory unit into *unit_bytes. */
    vp_status (*slices)(void *ctx, int p, double *dev, vp_costs *costs, double *unit_bytes,
                        vp_error *err);
    /* Fills cm, a cost model of s, with the measured per-stage times and bytes. */
    vp_status (*fill)(void *ctx, const vp_schedule *s, vp_cost_model *cm, vp_error *err);
    void (*release)(void *ctx);
} vp_cost_source;

/* Reads the file at path into *out. Errors: VP_EIO naming the file, VP_EPARSE with line
 * and column, VP_ENOMEM. */
typedef vp_status (*vp_cost_reader)(const char *path, vp_cost_source *out, vp_error *err);

/* Every option of every command, "not given" as vp_request_init leaves it. Strings are
 * borrowed (argv, a JSON object) and must outlive the run. */
typedef struct vp_request {
    const char *operand[2];      /* FAMILY|FILE, a block file, DIR, "list"/"show" NAME */
    const vp_schedule *schedule; /* a schedule the caller holds, instead of operand[0] */
    /* the schedule: -p, -m, -v (0: not given), --cost, --cost-file, --memory-model,
     * --memory-limit (units; 0: not given), --max-ops (0: the default), --recompute (a
     * vp_recompute; -1: not given), --vocab-parallel, --offload (shares, vp_offload_parse;
     * plan: also "auto"), --offload-policy (a vp_offload_policy; -1: not given) */
    int p, m, v;
    const char *cost, *cost_file, *memory_model;
    double memory_limit;
    long max_ops;
    int recompute;
    bool vocab_parallel; /* --vocab-parallel: the vocabulary split over the devices */
    const char *offload;
    int offload_policy;
    /* a real model: --model, --gpu, --seq, --mbs, --tp, --dp, --ep, --etp (0: not given),
     * --sp, --tp-overlap, --pp-overlap, --reserve (GiB), --dp-overlap (-1:
     * not given), --split (a vp_split_goal, -1), --layers-per-stage "a,b,..."; --zero N
     * (the ZeRO stage 0..3, vp_workload.zero; -1: not given, plan searches it); --flash
     * 0|1 (FlashAttention; -1: not given, on for a model Megatron-LM or torchtitan runs,
     * off for vpipe's own GPT, which has no FlashAttention) */
    const char *model, *gpu;
    int seq, mbs, tp, dp, ep, etp, zero, flash;
    bool sp, tp_overlap, pp_overlap;
    bool ep_overlap;               /* --ep-overlap: the combined 1F1B (vp_workload.ep_overlap) */
    int ep_dispatch;               /* --ep-dispatch: a vp_ep_dispatch, -1 when not given */
    int ep_routing;                /* --ep-routing: a vp_ep_routing, -1 when not given */
    int attn_kernel;               /* --attn-kernel: a vp_attn_kernel, -1 when not given */
    int framework;                 /* --framework: a vp_framework, -1 when not given
                                      (megatron) */
    bool eager;                    /* --eager: torchtitan without torch.compile
                                      (vp_workload.eager) */
    const char *recompute_modules; /* --recompute-modules: names (vp_recompute_modules_parse) */
    int optimizer_dtype; /* --optimizer-dtype: a vp_optimizer_dtype; -1 not given (fp32) */
    /* --cp (0: not given), --cp-comm (a vp_cp_comm; -1: not given) */
    int cp, cp_comm;
    double reserve, dp_overlap;
    int split;
    const char *layers_per_stage;
    /* --fp8: a vp_fp8 recipe, VP_REQUEST_FP8_AUTO (plan: off and the accelerator's best,
     * vp_price_fp8_best, searched), -1 not given (off); --fp8-params: the FP8 copies are
     * the weights (vp_workload.fp8_params) */
    int fp8;
    bool fp8_params;
    /* --grad-bytes: gradient bytes, 2 (16-bit accumulation and reduction) or 4 (fp32, the
     * default; 0: not given) */
    int grad_bytes;
    /* the whole-configuration search: --gpus, --global-batch, --pp, --top, --max-chunks,
     * --threads (also compare's and the budget planner's; 0: not given), --time-limit (also
     * the budget planner's; 0: not given), --margin (GiB; -1: not given), --emit (vp_emit) */
    int gpus, global_batch, pp, top, max_chunks, threads;
    double time_limit, margin;
    int emit;
    /* plan --memory X */
    const char *memory;
    /* calibrate --runs RUNS.csv (read by the library, as --model's config.json is),
     * --constants LIST (--gpu: the accelerator the fit starts from) */
    const char *runs, *constants;
    /* what to answer: --json, -o, schedule --format (vp_format), render's --svg, --trace,
     * --ascii, --width (0: not given), --fit, --color, --no-color, --title; block's
     * --reorder, --example */
    bool json;
    const char *output;
    int format;
    const char *svg, *trace;
    bool ascii, fit, color, no_color;
    int width;
    const char *title;
    bool reorder, example;

    /* How the caller is served (none of these is an option). */
    vp_spelling spelling;
    bool color_terminal;       /* stdout is a terminal that takes colours: render's default */
    vp_cost_reader read_costs; /* reads --cost-file; NULL: --cost-file is refused */
    void *user;                /* handed to the callbacks */
    void (*progress)(void *user, const char *line); /* a status line (NULL: clear it),
                                                       from the calling thread; may be NULL */
    /* Called once the request is checked, before long work, for every file it will write
     * (dir: a directory it writes into): the caller checks that it can write there and
     * may refuse (filling err: the run stops with that error). May be NULL. */
    vp_status (*probe)(void *user, const char *path, bool dir, vp_error *err);
    void *owned; /* what vp_request_from_json allocated (vp_request_release) */
} vp_request;

/* Every option not given, the command's defaults in place (schedule: output "-", format
 * json), spelled as flags, no callbacks. command may be NULL. */
VP_API void vp_request_init(vp_request *req, const char *command);

/* Fills *req (vp_request_init first) from options, a JSON object of command's keys (see
 * the header comment; NULL or "" is {}), spelled as JSON keys. The request borrows
 * strings it owns: release it with vp_request_release. VP_EPARSE with line and column
 * for malformed JSON or a key given twice; VP_EINVAL naming the key for an unknown
 * command, a key command does not take, or a value of the wrong type, out of range or not
 * a choice. */
VP_API vp_status vp_request_from_json(const char *command, const char *options, vp_request *req,
                                      vp_error *err);

/* Releases what vp_request_from_json allocated (nothing otherwise); req is then
 * "not given" throughout. */
VP_API void vp_request_release(vp_request *req);

/* ---- the reply ------------------------------------------------------------------------- */

typedef enum {
    VP_REPLY_STDOUT = 0, /* bytes for standard output */
    VP_REPLY_FILE = 1,   /* a file to write (path) */
    VP_REPLY_NOTE = 2    /* text for standard error, printed as it is */
} vp_reply_kind;

typedef struct vp_reply_part {
    vp_reply_kind kind;
    char *path; /* VP_REPLY_FILE: where; NULL otherwise */
    char *text; /* NUL-terminated */
    size_t len;
} vp_reply_part;

/* What a command answers, in the order the command line emits it (a file written, then a
 * note saying so; a table, then a gallery). exit_code is 0, or the command line's exit
 * code of an outcome that still answers (compare --svg when no family fits: the table,
 * a note with the error, 2). */
typedef struct vp_reply {
    vp_reply_part *parts;
    int n_parts;
    int exit_code;
} vp_reply;

/* Releases a reply; NULL is a no-op. */
VP_API void vp_reply_free(vp_reply *reply);

/* The reply as JSON text: {"stdout": "...", "files": [{"path": "...", "text": "..."}],
 * "notes": ["..."], "exit": N} (stdout the parts concatenated in order). New string in
 * *text (free with vp_free). VP_EINVAL when an answer is not UTF-8, VP_ENOMEM. */
VP_API vp_status vp_reply_json(const vp_reply *reply, char **text, vp_error *err);

/* ---- the door -------------------------------------------------------------------------- */

/* Runs command with req: checks every option (refusing those command does not take or
 * would ignore, naming them as req->spelling says), decides what they mean, does the work
 * and answers a new *reply (NULL on failure). Errors: the status whose exit code
 * (vp_status_exit_code) is the command line's, and err's message exactly what the
 * command line prints after "vpipe: error: " (line and column already in it; err's line
 * and column 0). */
VP_API vp_status vp_request_run(const char *command, const vp_request *req, vp_reply **reply,
                                vp_error *err);

/* Runs `command` (a subcommand: "list", "compare", "simulate", "plan", "render",
 * "schedule", "validate", "block", "model", "calibrate") with options, a JSON object whose
 * keys are the command's long flags with '_' for '-' ("cost", "memory_model", "recompute",
 * "model", "gpu", "global_batch", "json", ...; flags true/false; the positional argument(s) as
 * "operand" (a string, or an array for commands taking several); "-p"/"-m"/"-v" as "p",
 * "m", "v") and answers *reply, a new JSON text {"stdout": "...", "files": [{"path": "...",
 * "text": "..."}], "notes": ["..."], "exit": N} (vp_reply_json; free with vp_free).
 * Errors: the status and err, exactly the CLI's message (vp_request_from_json's, then
 * vp_request_run's); "cost_file" is refused here (vp_profile_request_call reads it). */
VP_API vp_status vp_request_call(const char *command, const char *options, char **reply,
                                 vp_error *err);

/* vp_request_call with s (borrowed, validated; NULL: none) as the operand and
 * read_costs (NULL: none) reading "cost_file": the one body of the calls below and of
 * vp_profile_request_call. */
VP_API vp_status vp_request_call_with(const char *command, const vp_schedule *s,
                                      const char *options, vp_cost_reader read_costs, char **reply,
                                      vp_error *err);

/* vp_request_call with s (borrowed, validated) as the operand: simulate, render, validate
 * and schedule (which writes s in its format) of a schedule a binding holds; "-p"/"-m",
 * when given, must match it. */
VP_API vp_status vp_request_call_schedule(const char *command, const vp_schedule *s,
                                          const char *options, char **reply, vp_error *err);

/* ---- pieces the runtime's requests share (train: profile.h) ----------------------------- */

/* The counts of "3,4,4,3" (--layers-per-stage: each in [0, 2^20]) into a new array
 * *counts[*n] (caller frees with vp_free, also on failure). VP_EINVAL "expects counts like
 * 3,4,4,3, got '...'" or "expects an integer in [0, 1048576], got '...'" (the caller
 * names the option before it), VP_ENOMEM. */
VP_API vp_status vp_request_counts(const char *text, int **counts, int *n, vp_error *err);

/* The schedule `what` names, as the commands find it: a family built from spec (which then
 * needs p and m), or a schedule file read and validated (spec's p and m, when set, must
 * match it), recomputed as spec->recompute says and offloaded as spec->offload does. New
 * schedule in *out (caller frees).
 * The command line's messages, spelled as flags; the status gives its exit code. */
VP_API vp_status vp_request_obtain(const char *what, const vp_spec *spec, vp_schedule **out,
                                   vp_error *err);

/* ---- the first string API (kept for its callers) ---------------------------------------- *
 *
 * Options of these five, each optional unless a call needs it (every value as in the
 * header comment, with these keys): "family"; "p", "m", "v"; "costs" (the text of --cost);
 * "memory_model"; "memory_limit" (units, >= 0); "max_ops"; "threads" (the budget
 * planner's); "memory" (the budget); "width", "fit", "color", "title"; "model", "gpu",
 * "seq", "mbs", "tp", "dp", "sp", "zero1", "flash", "recompute", "vocab_parallel", "split",
 * "layers_per_stage" (an array). Unlike vp_request_call, a call reads the options it needs
 * and ignores the others, so one object can serve every call. Each runs the door's own
 * steps, so "recompute" means what it means on the command line. NULL or "" is {}. An
 * unknown option, or a value of the wrong type or out of range, is VP_EINVAL naming the
 * option; malformed JSON is VP_EPARSE with line and column. Every text answer is a new
 * NUL-terminated string the caller frees with vp_free (or free()); every schedule a new
 * one the caller frees with vp_schedule_free; both NULL on failure. */

/* Builds options' family for p and m (both required) with its costs, memory model, memory
 * limit, op limit and recomputation (`vpipe schedule`). VP_EINVAL for an unknown family,
 * VP_ELIMIT over the op limit, the generator's errors. */
VP_API vp_status vp_request_schedule(const char *options, vp_schedule **out, vp_error *err);

/* Simulates s (recomputing as options' "recompute" asks, as `vpipe simulate FILE
 * --recompute` does) under options' costs and memory model: vp_sim_json's report
 * (`vpipe simulate --json`). Errors of vp_cost_model_new and vp_simulate. */
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

/* Prices a schedule for options' model (required) on its gpu (default h100-80gb, as on
 * the command line) under its training setup: vp_price_result_json's report. With s NULL,
 * builds options' family for p and m with the priced costs (vp_price_family) and returns
 * that schedule in *built (optional); else prices s (vp_price_schedule) and leaves *built
 * NULL. "recompute" goes where the command line sends it (vpipe's own model: R passes).
 * Errors of the model and accelerator readers, vp_price_check and the pricing. */
VP_API vp_status vp_request_price(const vp_schedule *s, const char *options, char **report,
                                  vp_schedule **built, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
