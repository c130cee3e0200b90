/* Shared pieces of the vpipe command line: exit codes, error printing, the one output
 * writer, progress, and the flag groups several subcommands share. Every cmd_*.c declares
 * its options in tables (flags.h) that write into the library's request (vpipe/request.h),
 * makes one call and prints what it answers: no option's meaning is decided in cli/. */
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

/* ---- the BLAS kernel (blas.c) --------------------------------------------------------- */

/* For the commands that compute (train, profile), first thing in main: when OpenBLAS fell
 * back to a generic kernel on a CPU with AVX2 or AVX-512 (vp_blas_better_kernel), sets
 * OPENBLAS_CORETYPE to the kernel the library names and re-executes this program once
 * (/proc/self/exe, same arguments); if that fails, warns and goes on. Nothing happens
 * when OPENBLAS_CORETYPE is set (the user's choice, or the re-executed run) or with
 * VPIPE_BLAS_KERNEL=library. Only a program of vpipe's own calls it, never the libraries:
 * a process hosting them (Python) is never re-executed. */
void cli_blas_select(char **argv);

/* Prints "blas: <OpenBLAS's configuration>; kernel K, <who chose it>" and a newline. */
void cli_blas_describe(FILE *out);

/* The same as {"library", "kernel", "chosen_by": "vpipe" | "OPENBLAS_CORETYPE" |
 * "library", "library_kernel" (when vpipe replaced it)}; new reference, NULL when out of
 * memory. */
json_t *cli_blas_json(void);

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

/* The JSON value of text, a library's JSON string (taken: freed here; NULL gives NULL).
 * New reference, NULL when memory ran out. */
json_t *cli_json_take(char *text);

/* Serialises json (indented, with a trailing newline) and writes it to path with
 * cli_write. Returns 0 or the exit code after printing the error (also for a NULL json:
 * memory ran out building it). */
int cli_write_json(const char *path, json_t *json);

/* Checks, before any long work, that an output file can be created at path: "-" and
 * existing devices pass; a directory, a missing directory or one that refuses a new
 * file fail with "cannot write <path>: <reason>" (VP_EIO, exit 3). Leaves nothing behind. */
vp_status cli_probe_output(const char *path, vp_error *err);

/* Creates directory dir when it is missing (its parent must exist) and checks that a new
 * file can be created in it; fails with "cannot write in <dir>: <reason>" (VP_EIO) when
 * not. Leaves nothing behind but the directory. */
vp_status cli_prepare_dir(const char *dir, vp_error *err);

/* The library's probe callback (vp_request.probe): cli_prepare_dir for a directory,
 * cli_probe_output for a file. */
vp_status cli_probe(void *user, const char *path, bool dir, vp_error *err);

/* ---- progress ------------------------------------------------------------------------ */

/* Shows one updating status line on stderr, only when stderr is a terminal: the line
 * replaces the previous one. Nothing at all when stderr is not a terminal. */
void cli_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Erases the status line (when one is shown). */
void cli_progress_clear(void);

/* The library's progress callback: cli_progress of line, or cli_progress_clear for NULL. */
void cli_progress_line(void *user, const char *line);

/* ---- the flag groups of vp_request ----------------------------------------------------- */

/* -p, -m, -v, --cost, --cost-file, --memory-limit, --memory-model; --max-ops; --recompute;
 * --offload and --offload-policy; the real model; the layer split. Each group's options
 * write into vp_request (the recompute, offload and split groups at their first field's
 * offset, so train's request can place them too). */
extern const cli_group cli_vocab_group;
extern const cli_group cli_spec_group, cli_limit_group, cli_recompute_group, cli_offload_group,
    cli_real_group, cli_split_group;

/* The groups, in help order, of a command that builds one schedule request and may price
 * it (compare, render, schedule, simulate): a cli_use list's entries before its own group. */
// clang-format off
#define CLI_SCHEDULE_USES                                                                     \
    {&cli_spec_group, 0},                                                                     \
    {&cli_limit_group, offsetof(vp_request, max_ops)},                                        \
    {&cli_recompute_group, offsetof(vp_request, recompute)},                                  \
    {&cli_offload_group, offsetof(vp_request, offload)},                                      \
    {&cli_vocab_group, offsetof(vp_request, vocab_parallel)},                                 \
    {&cli_real_group, 0},                                                                     \
    {&cli_split_group, offsetof(vp_request, split)}
// clang-format on

/* The model flags (--layers, --width, --heads, --seq, --microbatch) of a
 * vp_model_config, shared by train and profile. */
extern const cli_group cli_model_group;

/* Runs a request command: the callbacks set, one vp_request_run, and its reply written
 * (stdout and files with cli_write, notes to stderr). Returns the exit code. */
int cli_request_run(const char *command, vp_request *req);

/* ---- subcommands ------------------------------------------------------------------------- */

extern const cli_command cli_cmd_list, cli_cmd_schedule, cli_cmd_simulate, cli_cmd_compare,
    cli_cmd_validate, cli_cmd_train, cli_cmd_profile, cli_cmd_render, cli_cmd_block, cli_cmd_plan,
    cli_cmd_model, cli_cmd_calibrate, cli_cmd_plot, cli_cmd_sample;

/* Every subcommand, in the order `vpipe --help` lists them. */
extern const cli_command *const cli_commands[];
extern const size_t cli_command_count;

#endif
