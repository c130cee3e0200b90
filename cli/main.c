/* vpipe command line: dispatches to one cmd_*.c per subcommand. */
#include <string.h>

#include "cli.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"list", cmd_list, "list the schedule families and what they need"},
    {"schedule", cmd_schedule, "build a schedule and write it (json, text)"},
    {"simulate", cmd_simulate, "simulate a family or a schedule file: times, bubble, memory"},
    {"compare", cmd_compare, "simulate every family side by side"},
    {"validate", cmd_validate, "check a schedule file"},
    {"train", cmd_train, "train the transformer with a schedule"},
    {"profile", cmd_profile, "measure the model's pass costs for simulate/plan --cost-file"},
    {"render", cmd_render, "draw a schedule: terminal timeline, SVG, Chrome trace"},
    {"block", cmd_block, "build a schedule from your own building block; lifespan report"},
    {"plan", cmd_plan, "best schedule within a memory budget, and the memory/bubble frontier"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: vpipe <command> [options]   (vpipe <command> --help for details)\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit codes: 0 ok, 1 failure, 2 usage error, 3 bad input\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return VP_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return VP_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("vpipe %s\n", VP_VERSION_STRING);
        return VP_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    return cli_error(VP_EXIT_USAGE, "unknown command '%s' (try vpipe --help)", argv[1]);
}
