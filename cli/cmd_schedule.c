/* vpipe schedule FAMILY: builds a schedule and writes it. */
#include <stddef.h>

#include "cli.h"

/* In vp_format's order. */
static const char *const formats[] = {"json", "text", "torch-csv", "torch-csv-comms", NULL};

static const cli_opt schedule_opts[] = {
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, output),
     .arg = "FILE",
     .help = "output file; - is stdout"},
    {.name = "format",
     .kind = CLI_ENUM,
     .offset = offsetof(vp_request, format),
     .choices = formats,
     .help = "vpipe JSON, text, or PyTorch's compute_only CSV (torch-csv)\n"
             "or its CSV with SEND/RECV (torch-csv-comms); the CSV exports\n"
             "print on stderr which torchtitan schedule to pair them with"},
};
static const cli_group schedule_group = CLI_GROUP("output", schedule_opts);

static const cli_use uses[] = {
    CLI_SCHEDULE_USES,
    {&schedule_group, 0},
};

const cli_command cli_cmd_schedule = {
    .name = "schedule",
    .summary = "build a schedule and write it (json, text, PyTorch CSV)",
    .usage = "FAMILY -p P -m M [options]",
    .about = "Builds a schedule of FAMILY (vpipe list) and writes it: vpipe JSON (default),\n"
             "text, one line of ops per device (F3.1 = forward of stage 3, microbatch 1),\n"
             "or PyTorch's pipelining CSV.\n\n"
             "With --model, cost-aware families are built with the real model's per-device\n"
             "pass times and memory (the layer split goes to stderr).\n",
    CLI_USES(uses),
    .operand = "FAMILY",
    .operand_offset = offsetof(vp_request, operand),
    .request = true,
};
