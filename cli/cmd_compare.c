/* vpipe compare: every family simulated for the same p, m and costs. */
#include <stddef.h>

#include "cli.h"

static const cli_opt compare_opts[] = {
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, json),
     .help = "an array of the objects `simulate --json` prints"},
    {.name = "svg",
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, svg),
     .arg = "FILE",
     .help = "draw every family on one time scale (- is stdout)"},
    {.name = "threads",
     .kind = CLI_INT,
     .offset = offsetof(vp_request, threads),
     .arg = "N",
     .lo = 1,
     .hi = 256,
     .help = "families built at once (default: the machine's processors); the output\n"
             "never depends on it"},
};
static const cli_group compare_group = CLI_GROUP("output", compare_opts);

static const cli_use uses[] = {
    CLI_SCHEDULE_USES,
    {&compare_group, 0},
};

const cli_command cli_cmd_compare = {
    .name = "compare",
    .summary = "simulate every family side by side",
    .usage = "-p P -m M [--cost ...] [--memory-model ...] [--json] [--svg FILE]\n"
             "                     [--model NAME|FILE --gpu NAME|FILE --seq S --mbs B ...]",
    .about = "Builds and simulates every family (vpipe list) for the same p, m and costs\n"
             "and prints them side by side: makespan, bubble (1 - busy / longest device\n"
             "span), bubble/ms (1 - busy / makespan), peak (the largest device peak of\n"
             "activation memory, in units) and min-peak (the smallest). Families whose\n"
             "constraints the shape does not meet are listed with the reason.\n\n"
             "With --model, prices every family for a real model on a real accelerator:\n"
             "step time in seconds, MFU, bubble, the largest rank's memory in GiB, whether\n"
             "it fits, and every rank's GiB (simulate FAMILY --model ... itemises them).\n",
    CLI_USES(uses),
    .request = true,
};
