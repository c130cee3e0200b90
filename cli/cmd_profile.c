/* vpipe profile: measures the model's pass costs for simulate/plan/train --cost-file. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: vpipe profile [model flags] [--reps K] [-o FILE]\n"
            "\n"
            "Measures, on this machine with one BLAS thread, the time of F, B and W of the\n"
            "embeddings, of one transformer layer and of the head with its loss (median of K\n"
            "runs), and the time of one hop between ranks. Writes them as a vpipe profile\n"
            "(JSON) that `simulate`, `compare`, `plan` and `render` take with --cost-file:\n"
            "every stage of any split then costs the sum of its parts, and memory is also\n"
            "reported in bytes.\n"
            "\n"
            "model:\n%s"
            "  --reps K            measured runs per pass (5)\n"
            "  -o FILE             output (default - = stdout)\n",
            cli_model_help);
}

int cmd_profile(int argc, char **argv) {
    vp_train_options defaults;
    vp_train_options_default(&defaults);
    vp_model_config model = defaults.model;
    const char *out_path = "-";
    long reps = 5;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &model);
        if (r < 0)
            return -r;
        if (r)
            continue;
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return VP_EXIT_OK;
        } else if (!strcmp(argv[i], "--reps")) {
            const char *v = cli_flag_value(argc, argv, &i);
            if (!v || cli_parse_int("--reps", v, 1, 1000, &reps) != 0)
                return VP_EXIT_USAGE;
        } else if (!strcmp(argv[i], "-o")) {
            if (!(out_path = cli_flag_value(argc, argv, &i)))
                return VP_EXIT_USAGE;
        } else {
            return cli_error(VP_EXIT_USAGE, "profile: unexpected argument '%s'", argv[i]);
        }
    }
    vp_error err = {0};
    vp_profile pr;
    if (vp_profile_measure(&model, (int)reps, &pr, &err) != VP_OK)
        return cli_lib_error(&err);
    fprintf(stderr, "ms per microbatch      F        B        W\n");
    const char *names[VP_PART_COUNT] = {"embeddings", "one layer", "head + loss"};
    for (int k = 0; k < VP_PART_COUNT; k++)
        fprintf(stderr, "%-14s %9.3f %8.3f %8.3f\n", names[k], pr.f[k], pr.b[k], pr.w[k]);
    fprintf(stderr, "hop between ranks: %.4f ms\n", pr.c);
    char *text = vp_profile_write_json(&pr);
    if (!text)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    FILE *out = cli_open_out(out_path);
    if (out) {
        fprintf(out, "%s\n", text);
        cli_close_out(out);
    }
    free(text);
    return out ? VP_EXIT_OK : VP_EXIT_INPUT;
}
