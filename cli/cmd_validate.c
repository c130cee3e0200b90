/* vpipe validate FILE|FAMILY: checks a schedule; exit 0 when valid, 3 when not. */
#include <stddef.h>

#include "cli.h"

static const cli_use uses[] = {
    {&cli_spec_group, 0},
    {&cli_limit_group, offsetof(vp_request, max_ops)},
    {&cli_vocab_group, offsetof(vp_request, vocab_parallel)},
};

const cli_command cli_cmd_validate = {
    .name = "validate",
    .summary = "check a schedule file",
    .usage = "FILE | FAMILY -p P -m M",
    .about = "Checks a schedule file (vpipe JSON or PyTorch CSV; - reads stdin) or a built\n"
             "family: every pass present once, on its stage's device, in dependency order,\n"
             "and the replay free of deadlock. Exit 0 when valid, 3 with the first problem\n"
             "(device, position, op) when not.\n",
    CLI_USES(uses),
    .operand = "FILE|FAMILY",
    .operand_offset = offsetof(vp_request, operand),
    .request = true,
};
