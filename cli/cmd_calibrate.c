/* vpipe calibrate: fits an accelerator's constants to measured runs (RUNS.csv) and writes
 * it as a --gpu file. Everything but the flags and the printing is in the library
 * (vp_calibrate_file). */
#include <stddef.h>
#include <stdlib.h>

#include "cli.h"

typedef struct calibrate_args {
    const char *runs, *gpu, *fit, *out;
    bool json;
} calibrate_args;

static const cli_opt calibrate_opts[] = {
    {.name = "runs",
     .kind = CLI_STRING,
     .offset = offsetof(calibrate_args, runs),
     .arg = "RUNS.csv",
     .help = "measured runs, one a line (columns: vpipe calibrate --help)"},
    {.name = "gpu",
     .kind = CLI_STRING,
     .offset = offsetof(calibrate_args, gpu),
     .arg = "BASE",
     .help = "accelerator the fit starts from: a preset or a JSON file\n"
             "(default: the one the runs name)"},
    {.name = "fit",
     .kind = CLI_STRING,
     .offset = offsetof(calibrate_args, fit),
     .arg = "LIST",
     .help = "constants to fit, comma-separated: gemm, memory, comm, layer,\n"
             "chunk, attention, context, fragmentation (default: the first\n"
             "five, and the memory ones when runs give peak_mem_gib)"},
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(calibrate_args, out),
     .arg = "OUT.json",
     .help = "where the calibrated accelerator goes (use it with --gpu)"},
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(calibrate_args, json),
     .help = "the fit as one JSON object instead of the report"},
};
static const cli_group calibrate_group = CLI_GROUP("calibration", calibrate_opts);

static int run(void *args) {
    calibrate_args *a = args;
    if (!a->runs || !a->out)
        return cli_error(VP_EXIT_USAGE, "calibrate needs --runs RUNS.csv and -o OUT.json");
    int rc = cli_probe_output(a->out);
    if (rc)
        return rc;
    vp_run_set *runs = NULL;
    vp_calibration *c = NULL;
    vp_error err = {0};
    if (vp_calibrate_file(a->runs, a->gpu, a->fit, &runs, &c, &err) != VP_OK)
        return cli_lib_error(&err);
    char *gpu = vp_gpu_json(&c->gpu);
    char *report = a->json ? vp_calibrate_json(c, runs) : vp_calibrate_text(c, runs);
    rc = gpu && report ? cli_write_line(a->out, gpu) : cli_error(VP_EXIT_FAILURE, "out of memory");
    if (!rc)
        rc = cli_print("%s%s", report, a->json ? "\n" : "");
    if (!rc && runs->ignored[0])
        fprintf(stderr, "vpipe: note: columns not read: %s\n", runs->ignored);
    free(gpu);
    free(report);
    vp_calibrate_fit_free(c);
    vp_calibrate_free(runs);
    return rc;
}

static const cli_use uses[] = {{&calibrate_group, 0}};

const cli_command cli_cmd_calibrate = {
    .name = "calibrate",
    .summary = "fit an accelerator's constants to measured runs",
    .usage = "--runs RUNS.csv [--gpu BASE] [--fit LIST] -o OUT.json [--json]",
    .about = "Fits the accelerator-and-framework constants (matrix-multiply efficiency,\n"
             "memory-bound traffic, communication efficiency, per-layer and per-chunk\n"
             "overhead, memory beyond the tensors) to your measured runs by least squares,\n"
             "writes the result as an accelerator file for --gpu, and prints each run's fit,\n"
             "its leave-one-out error, and which constants the runs could not pin down.\n"
             "RUNS.csv: a header, then one run a line; columns model, gpu, tp, pp, vp, dp,\n"
             "cp, ep, mbs, gbs, seq, schedule, recompute, flash, sp, zero, fp8, step_time_s,\n"
             "tokens_per_s_per_gpu, peak_mem_gib (empty cells take the defaults; each run\n"
             "gives step_time_s or tokens_per_s_per_gpu; flags 0/1; cp, ep > 1 and fp8 are\n"
             "not expressible yet). Optional: id, mem_kind (process, reserved, allocated),\n"
             "dp_overlap, tp_overlap, pp_overlap, grad_bytes (include/vpipe/calibrate.h).\n",
    CLI_USES(uses),
    .args_size = sizeof(calibrate_args),
    .run = run,
};
