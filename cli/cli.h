/* Shared pieces of the vpipe command line: exit codes, error printing, number parsing.
 * Every cmd_*.c parses its own flags with these helpers and calls the library; no
 * scheduling logic lives in cli/. */
#ifndef VPIPE_CLI_H
#define VPIPE_CLI_H

#include <stdio.h>

#include <jansson.h>

#include "vpipe/vpipe.h"

enum {
    VP_EXIT_OK = 0,      /* success */
    VP_EXIT_FAILURE = 1, /* the request ran and failed (e.g. training diverged) */
    VP_EXIT_USAGE = 2,   /* bad flags or arguments */
    VP_EXIT_INPUT = 3    /* bad input data: malformed or invalid file */
};

/* Prints "vpipe: error: <message>" to stderr and returns code (for `return cli_error(...)`). */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints the library error and returns the exit code that fits its status
 * (VP_EPARSE/VP_EVALIDATION/VP_EIO/VP_EDEADLOCK -> 3, VP_EINVAL/VP_EUNSUPPORTED -> 2, else 1). */
int cli_lib_error(const vp_error *err);

/* Strict integer parse: whole string, base 10, within [lo, hi]. On failure prints a usage
 * error naming flag and returns -1; 0 on success. */
int cli_parse_int(const char *flag, const char *text, long lo, long hi, long *out);

/* Strict finite double parse, within [lo, hi]; same error contract as cli_parse_int. */
int cli_parse_double(const char *flag, const char *text, double lo, double hi, double *out);

/* Returns the value of a flag that takes one (argv[*i+1]), advancing *i, or prints a usage
 * error and returns NULL when it is missing. */
const char *cli_flag_value(int argc, char **argv, int *i);

/* Opens path for writing ("-" is stdout). Prints the error and returns NULL on failure. */
FILE *cli_open_out(const char *path);
void cli_close_out(FILE *f);

/* Options every schedule-building subcommand shares: -p, -m, -v, --cost, --cost-file,
 * --memory-model, --memory-limit. */
typedef struct cli_spec {
    vp_spec spec;
    int have_p, have_m;
    int have_profile; /* --cost-file: costs measured by vpipe profile */
    vp_profile profile;
} cli_spec;

/* Defaults: p, m unset, default costs and memory model. */
void cli_spec_init(cli_spec *o);

/* If argv[*i] is one of the shared flags, parses it (and its value, advancing *i) into o
 * and returns 1; returns 0 when the flag is not one of them; after printing an error,
 * returns minus the exit code (-VP_EXIT_USAGE, or -VP_EXIT_INPUT for an unreadable
 * --cost-file). */
int cli_spec_flag(int argc, char **argv, int *i, cli_spec *o);

/* Reads a vpipe profile (vpipe profile's output). Prints the error and returns its exit
 * code on failure; 0 on success. */
int cli_load_profile(const char *path, vp_profile *out);

/* What one step of a subcommand's argument loop found. */
typedef enum {
    CLI_ARG_OTHER = 0, /* not a shared argument: the subcommand's own */
    CLI_ARG_TAKEN = 1, /* a shared argument, parsed (and its value consumed) */
    CLI_ARG_EXIT = 2   /* stop and return *code: 0 after --help, else an error's code */
} cli_arg;

/* The part of the argument loop every schedule subcommand shares: --help prints usage
 * followed by the shared flags' help; -p, -m, -v, --cost... go to cli_spec_flag; --json
 * sets *json when json is non-NULL. */
cli_arg cli_common_arg(int argc, char **argv, int *i, cli_spec *o, int *json, const char *usage,
                       int *code);

/* Help text for the shared flags. */
extern const char cli_spec_help[];

/* Obtains the schedule a subcommand works on: `what` is a family name (built from o,
 * which then needs -p and -m) or a schedule file (read and validated; -p/-m, when given,
 * must match it). On failure prints the error and returns the exit code; 0 on success. */
int cli_obtain_schedule(const char *what, const cli_spec *o, vp_schedule **out);

/* Simulates s with o's costs and memory model. Prints the error and returns the exit code
 * on failure; 0 on success. *cm_out may be NULL when the caller does not need the model. */
int cli_simulate(const vp_schedule *s, const cli_spec *o, vp_cost_model **cm_out, vp_sim **out);

/* The JSON object scripts read for one simulated schedule (family, p, m, makespan,
 * bubble, bubble_makespan, peak_memory, peak_memory_max, ...). New reference. */
json_t *cli_sim_json(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs);

/* Prints json (an object or array) to out, indented, with a trailing newline. */
void cli_print_json(FILE *out, json_t *json);

/* Model flags (--layers, --width, --heads, --seq, --microbatch) shared by train and
 * profile: like cli_spec_flag, 1 when argv[*i] was one (parsed into m), 0 when not, minus
 * the exit code after an error. */
int cli_model_flag(int argc, char **argv, int *i, vp_model_config *m);
extern const char cli_model_help[];

/* Subcommands: int cmd_<name>(int argc, char **argv), argv[0] is the subcommand name. */
int cmd_list(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_block(int argc, char **argv);
int cmd_plan(int argc, char **argv);

#endif
