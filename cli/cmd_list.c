/* vpipe list: the families and what they need. */
#include <stddef.h>

#include "cli.h"

typedef struct list_args {
    bool json;
} list_args;

static const cli_opt list_opts[] = {
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(list_args, json),
     .help = "an array of {name, summary, needs}"},
};
static const cli_group list_group = CLI_GROUP(NULL, list_opts);

static int run(void *args) {
    const list_args *a = args;
    if (a->json) {
        json_t *arr = json_array();
        for (int i = 0; i < vp_family_count(); i++) {
            const vp_family *f = vp_family_at(i);
            json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "name", f->name, "summary",
                                                 f->summary, "needs", f->needs));
        }
        int rc = cli_write_json("-", arr);
        json_decref(arr);
        return rc;
    }
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    for (int i = 0; i < vp_family_count(); i++) {
        const vp_family *f = vp_family_at(i);
        fprintf(out.f, "%-12s %s\n%-12s needs %s\n", f->name, f->summary, "", f->needs);
    }
    return cli_out_end(&out, "-");
}

static const cli_use uses[] = {{&list_group, 0}};

const cli_command cli_cmd_list = {
    .name = "list",
    .summary = "list the schedule families and what they need",
    .usage = "[--json]",
    .about = "Lists every schedule family vpipe can build, with what it needs.\n",
    CLI_USES(uses),
    .args_size = sizeof(list_args),
    .run = run,
};
