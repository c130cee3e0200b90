/* vpipe list: the families and what they need. */
#include <stddef.h>

#include "cli.h"

static const cli_opt list_opts[] = {
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(vp_request, json),
     .help = "an array of {name, summary, needs}"},
};
static const cli_group list_group = CLI_GROUP(NULL, list_opts);

static const cli_use uses[] = {{&list_group, 0}};

const cli_command cli_cmd_list = {
    .name = "list",
    .summary = "list the schedule families and what they need",
    .usage = "[--json]",
    .about = "Lists every schedule family vpipe can build, with what it needs.\n",
    CLI_USES(uses),
    .request = true,
};
