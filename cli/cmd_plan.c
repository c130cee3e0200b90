/* vpipe plan: the fastest schedule within a memory budget, and the memory/bubble frontier;
 * with --model, the whole DP x TP x PP x schedule configuration. */
#include <stddef.h>

#include "cli.h"

static const cli_opt plan_opts[] = {
    {.name = "memory",
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, memory),
     .arg = "X",
     .help = "the budget: a fraction of 1F1B's peak (0.5), units (4u: one\n"
             "microbatch's activation of a device's whole slice), or bytes\n"
             "(123456b, 64MiB, 2GB, when the memory model knows the unit's\n"
             "size)"},
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, json),
     .help = "one object: the chosen schedule's `simulate --json` fields,\n"
             "plus budget, reason, param_copies, frontier, candidates; with\n"
             "--model: best, best_per_family, top, evaluated, pruned..."},
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(vp_request, output),
     .arg = "FILE",
     .help = "also write the chosen schedule (with --model: the winner's) as\n"
             "vpipe JSON (-o - writes it to stdout instead of the report)"},
    {.name = "threads",
     .kind = CLI_INT,
     .offset = offsetof(vp_request, threads),
     .arg = "N",
     .lo = 1,
     .hi = 256,
     .help = "worker threads of either search (default 1); the answer\n"
             "never depends on it"},
};
static const cli_group plan_group = CLI_GROUP("plan", plan_opts);

/* In vp_emit's order. */
static const char *const emit_names[] = {"torchtitan", "megatron", NULL};

static const cli_opt hybrid_opts[] = {
    {.name = "gpus",
     .kind = CLI_INT,
     .offset = offsetof(vp_request, gpus),
     .arg = "N",
     .lo = 1,
     .hi = 1 << 20,
     .help = "GPUs to use, N = DP x TP x PP (with --model)"},
    {.name = "global-batch",
     .kind = CLI_INT,
     .offset = offsetof(vp_request, global_batch),
     .arg = "B",
     .lo = 1,
     .hi = 1 << 24,
     .help = "sequences per step (with --model); DP x mbs divides it"},
    {.name = "pp",
     .kind = CLI_INT,
     .offset = offsetof(vp_request, pp),
     .arg = "N",
     .lo = 1,
     .hi = 1 << 20,
     .help = "fix the pipeline degree (--tp, --dp, --mbs and --recompute\n"
             "fix theirs; what is not fixed is searched)"},
    {.name = "top",
     .kind = CLI_INT,
     .offset = offsetof(vp_request, top),
     .arg = "K",
     .lo = 1,
     .hi = 1000,
     .help = "configurations to rank (default 10)"},
    {.name = "max-chunks",
     .kind = CLI_INT,
     .offset = offsetof(vp_request, max_chunks),
     .arg = "V",
     .lo = 1,
     .hi = 64,
     .help = "interleaved with 2..V chunks per device (default 4)"},
    {.name = "time-limit",
     .kind = CLI_DOUBLE,
     .offset = offsetof(vp_request, time_limit),
     .arg = "S",
     .lo = 0.001,
     .hi = 1e6,
     .help = "stop after S seconds with the best found so far (and say\n"
             "so); without --model the default is 60"},
    {.name = "margin",
     .kind = CLI_DOUBLE,
     .offset = offsetof(vp_request, margin),
     .arg = "GIB",
     .lo = 0,
     .hi = 1e6,
     .help = "room to leave below each GPU's capacity: a configuration with\n"
             "less is tight and ranks after those with room (default: the\n"
             "accelerator's measured memory error; 0: none)"},
    {.name = "emit",
     .kind = CLI_ENUM,
     .offset = offsetof(vp_request, emit),
     .choices = emit_names,
     .help = "torchtitan DIR: write DIR/job.toml (the parallelism part of\n"
             "a torchtitan job) and DIR/schedule.csv for the winner;\n"
             "megatron: print Megatron-LM's flags for the best 1F1B or\n"
             "interleaved configuration"},
};

static const cli_group hybrid_group = CLI_GROUP("hybrid search (with --model)", hybrid_opts);

static const cli_use uses[] = {
    {&cli_spec_group, 0},
    {&cli_limit_group, offsetof(vp_request, max_ops)},
    {&cli_recompute_group, offsetof(vp_request, recompute)},
    {&cli_offload_group, offsetof(vp_request, offload)},
    {&cli_vocab_group, offsetof(vp_request, vocab_parallel)},
    {&plan_group, 0},
    {&cli_real_group, 0},
    {&cli_split_group, offsetof(vp_request, split)},
    {&hybrid_group, 0},
};

const cli_command cli_cmd_plan = {
    .name = "plan",
    .summary = "best schedule within a memory budget; with --model, the best DP x TP x PP",
    .usage = "-p P -m M --memory X [--cost ...] [--memory-model ...] [--json] [-o FILE]\n"
             "       vpipe plan --model M --gpu G --gpus N --seq S --global-batch B [--json]\n"
             "                  [--top K] [--flash --sp --zero] [--emit torchtitan DIR|megatron]",
    .about = "Searches every family (vpipe list) and the V-shape building blocks (60 phase\n"
             "patterns x offsets 1..5 x one change point) for the schedule with the smallest\n"
             "makespan whose peak activation memory fits X, and prints it with the memory ->\n"
             "makespan frontier it found and the candidates it considered.\n\n"
             "With --model, searches the whole configuration of a real model on N GPUs for a\n"
             "global batch of B sequences: every data-, tensor- (within a node) and pipeline-\n"
             "parallel degree, microbatch size, family (interleaved with 2..--max-chunks\n"
             "chunks; the V building blocks of the budget planner's frontier as v-block;\n"
             "1F1B alone on one pipeline rank, where every family is the same gradient\n"
             "accumulation) and recomputation, each priced as `simulate --model` prices\n"
             "it; keeps those whose every rank fits the accelerator's memory (its reserve,\n"
             "--reserve, counted), ranks them by step time, and prints the top K, the best\n"
             "of every family, the winner's memory per rank and why it wins. Bounds prune\n"
             "the search (the answer is the exhaustive one); --tp, --dp, --mbs, --pp and\n"
             "--recompute fix a dimension. --emit torchtitan DIR writes DIR/job.toml\n"
             "(torchtitan's TOML job configuration: [training], [parallelism],\n"
             "[activation_checkpoint]) and DIR/schedule.csv; --emit megatron prints\n"
             "Megatron-LM's flags for the best 1F1B or interleaved configuration.\n",
    .epilog = "Exit codes: 0 ok, 2 bad flags, a budget below every schedule's peak, or (with\n"
              "--model) no configuration that fits (the message names the smallest memory\n"
              "one needs), 3 a bad model or accelerator file or an unwritable output,\n"
              "1 other failures.\n",
    CLI_USES(uses),
    .operand = "DIR",
    .operand_offset = offsetof(vp_request, operand),
    .request = true,
};
