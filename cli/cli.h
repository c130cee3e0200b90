/* Shared pieces of the vpipe command line: exit codes, error printing, the one output
 * writer, progress, the option groups several subcommands share, and getting, simulating
 * and describing a schedule. Every cmd_*.c declares its options in tables (flags.h) and
 * calls the library; no scheduling logic lives in cli/. */
#ifndef VPIPE_CLI_H
#define VPIPE_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "flags.h"
#include "vpipe/vpipe.h"

enum {
    VP_EXIT_OK = 0,      /* success */
    VP_EXIT_FAILURE = 1, /* the request ran and failed (e.g. training diverged) */
    VP_EXIT_USAGE = 2,   /* bad flags or arguments, requests over a limit */
    VP_EXIT_INPUT = 3    /* bad input data, unreadable or unwritable files */
};

/* Prints "vpipe: error: <message>" to stderr and returns code (for `return cli_error(...)`). */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints the library error and returns the exit code of its status. */
int cli_lib_error(const vp_error *err);

/* ---- output ------------------------------------------------------------------------- */

/* The one writer every output goes through: len bytes of text to path ("-" is stdout)
 * with vp_write_file (atomic, every write checked). On failure prints "cannot write
 * <path>: <reason>" and returns 3 (1 when memory ran out); a previous file at path is left
 * untouched. Returns 0 on success. */
int cli_write(const char *path, const char *text, size_t len);

/* Writes text and a newline to path with cli_write. Returns 0 or the exit code. */
int cli_write_line(const char *path, const char *text);

/* Formats text and writes it to stdout with cli_write. Returns 0 or the exit code. */
int cli_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Text collected in memory (an open_memstream) and written in one piece by cli_out_end. */
typedef struct cli_out {
    FILE *f; /* print into this; NULL when it could not be opened */
    char *text;
    size_t len;
} cli_out;

/* Opens o; prints the error and returns 1 when memory runs out, 0 otherwise. */
int cli_out_begin(cli_out *o);

/* Closes o and returns its text (caller frees); NULL after printing the error when memory
 * ran out. */
char *cli_out_take(cli_out *o);

/* Closes o and, when path is non-NULL, writes its text to path with cli_write; releases
 * the text either way. Returns 0 or the exit code after printing the error. */
int cli_out_end(cli_out *o, const char *path);

/* Checks, before any long work, that an output file can be created at path: "-" and
 * existing devices pass; a directory, a missing directory or one that refuses a new
 * file print "cannot write <path>: <reason>" and return 3. Leaves nothing behind. */
int cli_probe_output(const char *path);

/* Creates directory dir when it is missing (its parent must exist) and checks that a new
 * file can be created in it; prints "cannot write in <dir>: <reason>" and returns 3 when
 * not. Leaves nothing behind but the directory. */
int cli_prepare_dir(const char *dir);

/* Serialises json (indented, with a trailing newline) and writes it to path with
 * cli_write. Returns 0 or the exit code after printing the error. */
int cli_write_json(const char *path, json_t *json);

/* ---- progress ------------------------------------------------------------------------ */

/* Shows one updating status line on stderr, only when stderr is a terminal: the line
 * replaces the previous one. Nothing at all when stderr is not a terminal. */
void cli_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Erases the status line (when one is shown). */
void cli_progress_clear(void);

/* ---- option groups --------------------------------------------------------------------- */

/* --cost-file FILE: a profile measured by `vpipe profile`. */
typedef struct cli_cost_file {
    bool given;
    vp_profile profile;
} cli_cost_file;

/* Custom parser of --cost-file: reads the profile into a cli_cost_file. Exit 3 for an
 * unreadable or malformed file. */
int cli_parse_cost_file(const char *flag, const char *value, void *dest);

/* What the schedule-building subcommands share: -p, -m, -v, --cost, --cost-file,
 * --memory-model, --memory-limit (the group cli_spec_group). */
typedef struct cli_spec {
    vp_spec spec;          /* p, m are 0 until given */
    bool have_cost;        /* --cost was given */
    cli_cost_file profile; /* --cost-file */
    double *dev_costs;     /* [3p] per-device costs from the profile that spec.costs
                              borrows (owned; cli_spec_release frees) */
} cli_spec;

extern const cli_group cli_spec_group;

/* --max-ops N of a long (a vp_spec's max_ops), for every command that builds schedules. */
extern const cli_group cli_limit_group;

/* --recompute none|selective|full of a vp_recompute (vp_recompute_parse): a vp_spec's
 * recompute, which builds every family's recomputing version; cli_obtain_schedule gives
 * a schedule file the same. */
extern const cli_group cli_recompute_group;

/* Defaults: p, m unset, default costs and memory model, the default op limit. */
void cli_spec_init(cli_spec *o);

/* After parsing: with --cost-file and -p, the profile's per-device costs; with -p and
 * -m, the size guard (vp_spec_check_size), so oversized requests stop before anything is
 * allocated. Prints the error and returns the exit code, 0 when ready. */
int cli_spec_ready(cli_spec *o);

/* Releases what o owns. */
void cli_spec_release(cli_spec *o);

/* The model flags (--layers, --width, --heads, --seq, --microbatch) of a
 * vp_model_config, shared by train and profile. */
extern const cli_group cli_model_group;

/* ---- schedules ------------------------------------------------------------------------- */

/* Obtains the schedule a subcommand works on: `what` is a family name (built from o,
 * which then needs -p and -m) or a schedule file (read and validated; -p/-m, when given,
 * must match it), recomputing as o->spec.recompute asks (none leaves a file as it is).
 * On failure prints the error and returns the exit code; 0 on success. */
int cli_obtain_schedule(const char *what, const cli_spec *o, vp_schedule **out);

/* Simulates s with o's costs and memory model. Prints the error and returns the exit code
 * on failure (3 when the costs make the results not finite); 0 on success. */
int cli_simulate(const vp_schedule *s, const cli_spec *o, vp_sim **out);

/* "F=1 B=1 W=1 c=0" (and " FB=x", " R=x" when set) of costs, into buf. Returns buf. */
const char *cli_costs_text(const vp_costs *c, char *buf, size_t size);

/* The JSON object scripts read for one simulated schedule (family, p, m, recompute,
 * makespan, bubble, bubble_makespan, peak_memory, peak_memory_max, ...). New reference. */
json_t *cli_sim_json(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs);

/* ---- subcommands ------------------------------------------------------------------------- */

extern const cli_command cli_cmd_list, cli_cmd_schedule, cli_cmd_simulate, cli_cmd_compare,
    cli_cmd_validate, cli_cmd_train, cli_cmd_profile, cli_cmd_render, cli_cmd_block, cli_cmd_plan;

/* Every subcommand, in the order `vpipe --help` lists them. */
extern const cli_command *const cli_commands[];
extern const size_t cli_command_count;

#endif
