/* vpipe plot LOG: the loss plot of a training log (vpipe train --log). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vpipe/render.h"

typedef struct plot_args {
    const char *log;
    const char *out;
} plot_args;

static const cli_opt plot_opts[] = {
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(plot_args, out),
     .arg = "FILE",
     .help = "the SVG; - is stdout"},
};
static const cli_group plot_group = CLI_GROUP("output", plot_opts);

static void init(void *args) {
    plot_args *a = args;
    a->out = "-";
}

static int run(void *args) {
    plot_args *a = args;
    vp_error err = {0};
    if (!a->log)
        return cli_error(VP_EXIT_USAGE, "plot needs a log (vpipe plot --help)");
    if (vp_file_same(a->log, a->out))
        return cli_error(VP_EXIT_USAGE, "-o %s is the log it draws: name another file", a->out);
    if (cli_probe_output(a->out, &err) != VP_OK)
        return cli_lib_error(&err);
    char *svg = NULL;
    if (vp_render_loss_file(a->log, &svg, &err) != VP_OK)
        return cli_lib_error(&err);
    int rc = cli_write(a->out, svg, strlen(svg));
    free(svg);
    return rc;
}

static const cli_use uses[] = {
    {&plot_group, 0},
};

const cli_command cli_cmd_plot = {
    .name = "plot",
    .summary = "draw the loss of a training log (train --log) as an SVG",
    .usage = "LOG [-o FILE]",
    .about = "Reads a training log (vpipe train --log: one JSON object per step; - reads\n"
             "stdin; logs of a run and of its extension may be concatenated) and draws the\n"
             "loss and the validation loss against steps as an SVG page.\n",
    CLI_USES(uses),
    .operand = "LOG",
    .operand_offset = offsetof(plot_args, log),
    .args_size = sizeof(plot_args),
    .init = init,
    .run = run,
};
