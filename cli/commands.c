/* The list of subcommands (main.c dispatches to them; the tests check their tables). */
#include "cli.h"

const cli_command *const cli_commands[] = {
    &cli_cmd_list,  &cli_cmd_schedule,  &cli_cmd_simulate, &cli_cmd_compare, &cli_cmd_validate,
    &cli_cmd_train, &cli_cmd_profile,   &cli_cmd_render,   &cli_cmd_block,   &cli_cmd_plan,
    &cli_cmd_model, &cli_cmd_calibrate, &cli_cmd_plot,     &cli_cmd_sample,
};
const size_t cli_command_count = sizeof cli_commands / sizeof cli_commands[0];
