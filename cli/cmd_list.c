/* vpipe list: the families and what they need. */
#include <string.h>

#include "cli.h"

int cmd_list(int argc, char **argv) {
    int as_json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: vpipe list [--json]\n\nLists every schedule family vpipe can build, "
                   "with what it needs.\n");
            return VP_EXIT_OK;
        }
        if (!strcmp(argv[i], "--json"))
            as_json = 1;
        else
            return cli_error(VP_EXIT_USAGE, "list: unknown argument '%s'", argv[i]);
    }
    json_t *arr = as_json ? json_array() : NULL;
    for (int i = 0; i < vp_family_count(); i++) {
        const vp_family *f = vp_family_at(i);
        if (arr)
            json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "name", f->name, "summary",
                                                 f->summary, "needs", f->needs));
        else
            printf("%-12s %s\n%-12s needs %s\n", f->name, f->summary, "", f->needs);
    }
    if (arr) {
        cli_print_json(stdout, arr);
        json_decref(arr);
    }
    return VP_EXIT_OK;
}
