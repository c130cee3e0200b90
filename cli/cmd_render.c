/* vpipe render FAMILY|FILE: terminal timeline, SVG picture or Chrome trace. */
#include <stddef.h>

#include "cli.h"

static const cli_opt render_opts[] = {
    {.name = "ascii",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, ascii),
     .help = "terminal timeline to stdout: one row per device, each op as\n"
             "kind + microbatch (lowercase: odd chunk), '.' idle, then the\n"
             "legend, bubble and peak memory"},
    {.name = "svg",
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, svg),
     .arg = "OUT",
     .help = "SVG picture ('-' for stdout): lanes, memory curves, time axis"},
    {.name = "trace",
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, trace),
     .arg = "OUT",
     .help = "Chrome trace JSON for Perfetto / chrome://tracing"},
    {.name = "width",
     .kind = CLI_INT,
     .offset = offsetof(vp_request, width),
     .arg = "N",
     .lo = 20,
     .hi = 100000,
     .help = "terminal columns (default 100) or SVG plot width in pixels\n"
             "(default: wide enough for every op to show its number)"},
    {.name = "fit",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, fit),
     .help = "terminal: scale time into one band instead of wrapping"},
    {.name = "color",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, color),
     .help = "terminal colours (default: when stdout is a terminal and\n"
             "NO_COLOR is unset)"},
    {.name = "no-color",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, no_color),
     .help = "no terminal colours"},
    {.name = "title",
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, title),
     .arg = "TEXT",
     .help = "replace the generated title"},
};
static const cli_group render_group = CLI_GROUP("drawing", render_opts);

static const cli_use uses[] = {
    CLI_SCHEDULE_USES,
    {&render_group, 0},
};

const cli_command cli_cmd_render = {
    .name = "render",
    .summary = "draw a schedule: terminal timeline, SVG, Chrome trace",
    .usage = "FAMILY|FILE [-p P -m M ...] [--ascii] [--svg OUT] [--trace OUT]\n"
             "                    [--width N] [--fit] [--color|--no-color] [--title TEXT]",
    .about = "Simulates a schedule (a family built from -p/-m/..., or a vpipe JSON or PyTorch\n"
             "CSV file) and draws it. Without an output flag, draws the terminal timeline.\n"
             "With --model, the schedule is priced for a real model first: times in ms,\n"
             "memory curves in bytes.\n",
    CLI_USES(uses),
    .operand = "FAMILY|FILE",
    .operand_offset = offsetof(vp_request, operand),
    .request = true,
};
