/* vpipe command line: dispatches to one cmd_*.c per subcommand. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static char *usage(void) {
    cli_out o;
    if (cli_out_begin(&o))
        return NULL;
    fprintf(o.f, "usage: vpipe <command> [options]   (vpipe <command> --help for details)\n\n"
                 "commands:\n");
    for (size_t i = 0; i < cli_command_count; i++)
        fprintf(o.f, "  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
    fprintf(o.f, "\nexit codes: 0 ok, 1 failure, 2 usage error, 3 bad input\n");
    return cli_out_take(&o);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        char *text = usage();
        if (!text)
            return VP_EXIT_FAILURE;
        int rc =
            argc < 2 ? (fputs(text, stderr), VP_EXIT_USAGE) : cli_write("-", text, strlen(text));
        free(text);
        return rc;
    }
    if (!strcmp(argv[1], "--version")) {
        return cli_print("vpipe %s\n", VP_VERSION_STRING);
    }
    if (!strcmp(argv[1], "train") || !strcmp(argv[1], "profile"))
        cli_blas_select(argv); /* the commands that multiply matrices: may start again */
    for (size_t i = 0; i < cli_command_count; i++)
        if (!strcmp(argv[1], cli_commands[i]->name))
            return cli_run(cli_commands[i], argc - 1, argv + 1);
    for (size_t i = 0; i < cli_command_count; i++)
        if (vp_typo_edits(argv[1], strlen(argv[1]), cli_commands[i]->name) >= 0)
            return cli_error(VP_EXIT_USAGE, "unknown command '%s' (did you mean %s? vpipe --help)",
                             argv[1], cli_commands[i]->name);
    return cli_error(VP_EXIT_USAGE, "unknown command '%s' (try vpipe --help)", argv[1]);
}
