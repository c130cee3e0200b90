/* vpipe simulate FAMILY|FILE: times, bubble and memory of one schedule. */
#include <stddef.h>

#include "cli.h"

static const cli_opt simulate_opts[] = {
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, json),
     .help = "one JSON object"},
};
static const cli_group simulate_group = CLI_GROUP("output", simulate_opts);

static const cli_use uses[] = {
    CLI_SCHEDULE_USES,
    {&simulate_group, 0},
};

const cli_command cli_cmd_simulate = {
    .name = "simulate",
    .summary = "simulate a family or a schedule file: times, bubble, memory",
    .usage = "FAMILY|FILE [-p P -m M] [--cost ...] [--memory-model ...] [--json]\n"
             "                      [--model NAME|FILE --gpu NAME|FILE --seq S --mbs B ...]",
    .about = "Replays a schedule eagerly (every op as soon as its device is free and its\n"
             "inputs are ready) and reports makespan, bubble (1 - busy / longest device\n"
             "span, and over the makespan) and peak activation memory per device in\n"
             "units (one microbatch's activation of one device's whole slice).\n\n"
             "With --model, prices it for a real model on a real accelerator: every\n"
             "rank's memory (parameters, gradients, optimizer states, the schedule's peak\n"
             "of activations, pipeline buffers, workspace, reserve) in GiB, whether it\n"
             "fits, and the step time in seconds with MFU and throughput. --json then adds\n"
             "step_time_s, mfu, samples_per_s_per_gpu, tokens_per_s, memory_per_rank\n"
             "(bytes), memory_max_bytes, fits, layers_per_stage and per_stage.\n",
    CLI_USES(uses),
    .operand = "FAMILY|FILE",
    .operand_offset = offsetof(vp_request, operand),
    .request = true,
};
