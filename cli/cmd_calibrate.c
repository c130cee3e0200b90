/* vpipe calibrate: fits an accelerator's constants to measured runs (RUNS.csv) and writes
 * it as a --gpu file. The flags only: the library reads the runs, fits and reports
 * (vp_request_run). */
#include <stddef.h>

#include "cli.h"

static const cli_opt calibrate_opts[] = {
    {.name = "runs",
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, runs),
     .arg = "RUNS.csv",
     .help = "measured runs, one a line (columns: vpipe calibrate --help)"},
    {.name = "gpu",
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, gpu),
     .arg = "BASE",
     .help = "accelerator the fit starts from: a preset or a JSON file\n"
             "(default: the one the runs name)"},
    {.name = "constants",
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, constants),
     .arg = "LIST",
     .help = "constants to fit, comma-separated: gemm, memory, comm, layer,\n"
             "chunk, attention, context, fragmentation (default: the first\n"
             "five, and the memory ones when runs give peak_mem_gib)"},
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, output),
     .arg = "OUT.json",
     .help = "where the calibrated accelerator goes (use it with --gpu)"},
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, json),
     .help = "the fit as one JSON object instead of the report"},
};
static const cli_group calibrate_group = CLI_GROUP("calibration", calibrate_opts);

static const cli_use uses[] = {{&calibrate_group, 0}};

const cli_command cli_cmd_calibrate = {
    .name = "calibrate",
    .summary = "fit an accelerator's constants to measured runs",
    .usage = "--runs RUNS.csv [--gpu BASE] [--constants LIST] -o OUT.json [--json]",
    .about = "Fits the accelerator-and-framework constants (matrix-multiply efficiency,\n"
             "memory-bound traffic, communication efficiency, per-layer and per-chunk\n"
             "overhead, memory beyond the tensors) to your measured runs by least squares,\n"
             "writes the result as an accelerator file for --gpu, and prints each run's fit,\n"
             "its leave-one-out error, and which constants the runs could not pin down.\n"
             "RUNS.csv: a header, then one run a line; columns model, gpu, tp, pp, vp, dp,\n"
             "cp, ep, mbs, gbs, seq, schedule, recompute, flash, sp, zero, fp8, step_time_s,\n"
             "tokens_per_s_per_gpu, peak_mem_gib (empty cells take the defaults; each run\n"
             "gives step_time_s or tokens_per_s_per_gpu; flags 0/1; fp8 0/1 or a recipe;\n"
             "zero 0-3). Optional: id, mem_kind (process, reserved, allocated),\n"
             "dp_overlap, tp_overlap, pp_overlap, grad_bytes, ep_overlap, ep_dispatch,\n"
             "ep_routing, fp8_params, attn_kernel, framework, eager, recompute_modules,\n"
             "optimizer_dtype, cp_comm (include/vpipe/calibrate.h).\n",
    CLI_USES(uses),
    .request = true,
};
