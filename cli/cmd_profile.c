/* vpipe profile: measures the model's pass costs for simulate/plan/train --cost-file. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct profile_args {
    vp_model_config model;
    int reps;
    const char *out;
} profile_args;

static const cli_opt profile_opts[] = {
    {.name = "reps",
     .kind = CLI_INT,
     .offset = offsetof(profile_args, reps),
     .arg = "K",
     .lo = 1,
     .hi = 1000,
     .help = "measured runs per pass"},
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(profile_args, out),
     .arg = "FILE",
     .help = "output file; - is stdout"},
};
static const cli_group profile_group = CLI_GROUP("measuring", profile_opts);

static void init(void *args) {
    profile_args *a = args;
    vp_train_options defaults;
    vp_train_options_default(&defaults);
    a->model = defaults.model;
    a->reps = 5;
    a->out = "-";
}

static int run(void *args) {
    profile_args *a = args;
    vp_error err = {0};
    if (cli_probe_output(a->out, &err) != VP_OK)
        return cli_lib_error(&err);
    int rc;
    vp_profile pr;
    cli_progress("profile: measuring the passes (%d runs each)...", a->reps);
    vp_status st = vp_profile_measure(&a->model, a->reps, &pr, &err);
    cli_progress_clear();
    if (st != VP_OK)
        return cli_lib_error(&err);
    fprintf(stderr, "ms per microbatch      F        B        W\n");
    const char *names[VP_PART_COUNT] = {"embeddings", "one layer", "head + loss"};
    for (int k = 0; k < VP_PART_COUNT; k++)
        fprintf(stderr, "%-14s %9.3f %8.3f %8.3f\n", names[k], pr.f[k], pr.b[k], pr.w[k]);
    fprintf(stderr, "hop between ranks: %.4f ms\n", pr.c);
    cli_blas_describe(stderr);
    char *text = vp_profile_write_json(&pr);
    rc = text ? cli_write_line(a->out, text) : cli_error(VP_EXIT_FAILURE, "out of memory");
    free(text);
    return rc;
}

static const cli_use uses[] = {
    {&cli_model_group, offsetof(profile_args, model)},
    {&profile_group, 0},
};

const cli_command cli_cmd_profile = {
    .name = "profile",
    .summary = "measure the model's pass costs for simulate/plan --cost-file",
    .usage = "[model flags] [--reps K] [-o FILE]",
    .about = "Measures, on this machine with one BLAS thread, the time of F, B and W of the\n"
             "embeddings, of one transformer layer and of the head with its loss (median of K\n"
             "runs), and the time of one hop between ranks. Writes them as a vpipe profile\n"
             "(JSON) that `simulate`, `compare`, `plan` and `render` take with --cost-file:\n"
             "every stage of any split then costs the sum of its parts, and memory is also\n"
             "reported in bytes.\n",
    CLI_USES(uses),
    .args_size = sizeof(profile_args),
    .init = init,
    .run = run,
};
