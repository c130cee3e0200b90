/* vpipe block FILE: build a schedule from a user's building block and report its
 * timing, memory and lifespans. */
#include <stddef.h>

#include "cli.h"

static const cli_opt block_opts[] = {
    {.name = "reorder",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, reorder),
     .help = "move passes into idle gaps without raising any peak"},
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, output),
     .arg = "OUT.json",
     .help = "write the schedule (vpipe JSON; - for stdout)"},
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, json),
     .help = "print the report as one JSON object"},
    {.name = "example",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, example),
     .help = "print the 1F1B block for -p P (default 4) as a starting point"},
};
static const cli_group block_group = CLI_GROUP("block", block_opts);

static const char block_epilog[] =
    "Block file (JSON):\n"
    "  {\"format\": \"vpipe-block\", \"version\": 1,\n"
    "   \"p\": 4,                      devices\n"
    "   \"placement\": \"single\",       single | loop | v | bidir | custom (default single)\n"
    "   \"stages\": 4,                 optional for single (p), v and bidir (2p)\n"
    "   \"stage_device\": [0, ...],    custom only: device of every stage\n"
    "   \"mb_per_copy\": 1,            microbatches one copy carries (default 1)\n"
    "   \"interval\": 6,               T; default: the smallest collision-free T\n"
    "   \"costs\": \"F=2,B=2,W=2,c=0\",  default costs for the durations\n"
    "   \"passes\": [[\"F\", 0, 0], [\"BW\", 3, 8], [\"W\", 1, 12, 0, 2.5], ...]}\n"
    "  A pass is [kind, stage, start, mb, duration]: kind F, B, W or BW; mb (default 0)\n"
    "  is the microbatch offset in the copy (copy j runs microbatch j*mb_per_copy + mb;\n"
    "  passes outside [0, m) are dropped); duration defaults to the costs (a chunk of a\n"
    "  device with v stages costs 1/v); durations given in the file shape the block (its\n"
    "  order), the simulation charges the costs. Every stage needs F and BW, or F, B, W.\n\n"
    "Exit codes: 0 ok, 2 usage, 3 malformed or colliding block (the message names the\n"
    "device and the two passes), or a block whose timing breaks a dependency.\n";

static const cli_use uses[] = {
    {&cli_spec_group, 0},
    {&cli_limit_group, offsetof(vp_request, max_ops)},
    {&block_group, 0},
};

const cli_command cli_cmd_block = {
    .name = "block",
    .summary = "build a schedule from your own building block; lifespan report",
    .usage = "FILE [-m M] [--cost ...] [--memory-model ...] [--reorder] [-o OUT.json] [--json]\n"
             "       vpipe block --example [-p P] [--cost ...]",
    .about = "Repeats a building block (the start of every pass of one microbatch) every\n"
             "interval T, keeps each device's order and replays it eagerly (the squeeze), and\n"
             "reports makespan, bubble, peak memory per device and the block's lifespans: per\n"
             "stage the time from its F to the end of its W (or BW), and per device the bound\n"
             "sum ceil(l/T)*act, the exact steady-state occupancy and the simulated peak. FILE\n"
             "may be - for stdin. -m defaults to 2p; --cost sets the durations of passes the\n"
             "file leaves open and the costs of the simulation (default: the file's \"costs\",\n"
             "else F=B=W=1).\n",
    .epilog = block_epilog,
    CLI_USES(uses),
    .operand = "FILE",
    .operand_offset = offsetof(vp_request, operand),
    .request = true,
};
