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

/* Writes what a library writer made: when st is VP_OK, text to path with cli_write, else
 * err's message. Frees text either way. Returns 0 or the exit code. */
int cli_write_result(const char *path, vp_status st, char *text, const vp_error *err);

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

/* The JSON value of text, a library's JSON string (taken: freed here; NULL gives NULL).
 * New reference, NULL when memory ran out. */
json_t *cli_json_take(char *text);

/* Serialises json (indented, with a trailing newline) and writes it to path with
 * cli_write. Returns 0 or the exit code after printing the error (also for a NULL json:
 * memory ran out building it). */
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
    int recompute;         /* --recompute (cli_recompute_group): a vp_recompute, -1 until
                              given; cli_spec_ready sets spec.recompute from it */
} cli_spec;

extern const cli_group cli_spec_group;

/* --max-ops N of a long (a vp_spec's max_ops), for every command that builds schedules. */
extern const cli_group cli_limit_group;

/* --recompute none|selective|full into an int (a vp_recompute, -1 until given): the one
 * recomputation option of every command, registered at a cli_spec's recompute (train: its
 * own). It recomputes as the model's implementation does. Without --model, and with
 * vpipe's own model (vpipe:...), it is the spec's recompute: every family's recomputing
 * version with R passes (cli_obtain_schedule gives a schedule file the same), as vpipe's
 * runtime runs them. With another --model it is the workload's recompute, Megatron's
 * activation checkpointing inside B, and the schedule gets no R passes
 * (cli_real_ready); plan --model fixes the hybrid search's recompute with it. Either way
 * the price module counts it once (vp_workload). */
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

/* cli_simulate without printing: the library's status, err set on failure. Reads o only,
 * so threads may share it. */
vp_status cli_sim_run(const vp_schedule *s, const cli_spec *o, vp_sim **out, vp_error *err);

/* "F=1 B=1 W=1 c=0" (and " FB=x", " R=x" when set) of costs, into buf. Returns buf. */
const char *cli_costs_text(const vp_costs *c, char *buf, size_t size);

/* The library's simulation report (vp_sim_json) as a JSON object, for outputs that hold
 * several (compare --json, block --json). New reference; NULL when memory runs out. */
json_t *cli_sim_json(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs);

/* ---- real models ------------------------------------------------------------------------ */

/* A list of counts (--layers-per-stage), owned by its holder. */
typedef struct cli_int_list {
    int *v;
    int n;
} cli_int_list;

/* The layer split (the group cli_split_group): --split time|memory|even (a vp_split_goal,
 * -1 until given) and --layers-per-stage a,b,... (owned: cli_split_release). The same
 * options for a real model's pricing and planning (in cli_real) and for train. */
typedef struct cli_split {
    int goal;
    cli_int_list layers;
} cli_split;

extern const cli_group cli_split_group;

/* "time", "memory" or "even". Static string. */
const char *cli_split_name(vp_split_goal goal);

/* Releases what sp owns. */
void cli_split_release(cli_split *sp);

/* The real-model options (the group cli_real_group): --model, --gpu, --seq, --mbs, --tp,
 * --sp, --dp, --zero, --flash, --reserve, --dp-overlap; with them the layer split
 * (cli_split_group, registered at split) and --recompute (cli_recompute_group, at the
 * command's cli_spec). Shared by simulate, compare, render, schedule, plan and model. */
typedef struct cli_real {
    const char *model, *gpu; /* as given, NULL until given */
    int seq, mbs, tp, dp;    /* 0 until given */
    bool sp, zero, flash;
    int recompute;                  /* the spec's --recompute, copied by cli_real_ready */
    cli_split split;                /* --split, --layers-per-stage */
    double reserve_gib, dp_overlap; /* -1 until given */
    /* filled by cli_real_ready when --model is given */
    bool on;
    vp_arch arch;
    vp_gpu accel;
    vp_workload work;
    vp_price_setup setup; /* points into this struct and at the spec's costs */
} cli_real;

extern const cli_group cli_real_group;

/* Defaults: nothing given. */
void cli_real_init(cli_real *r);

/* After parsing (and after cli_spec_ready, whose costs it borrows as measured ms when
 * --cost or --cost-file was given): without --model, checks that no other real-model
 * option was given; with it, resolves the model and the accelerator (a malformed file:
 * exit 3 with its position; an unknown name: 2), builds the workload and the setup and
 * checks them (heads not divisible by --tp, a sequence longer than the model's
 * positions...: 2), and sets r->on. A model other than vpipe's own takes --recompute into
 * its workload and clears o->spec.recompute (cli_recompute_group). Prints the error and
 * returns the exit code, 0 when ready. */
int cli_real_ready(cli_real *r, cli_spec *o);

/* Releases what r owns. */
void cli_real_release(cli_real *r);

/* "TP 8 + SP, DP 2 + ZeRO-1, seq 8192, mbs 1, FlashAttention, recompute none" of w into
 * buf. Returns buf. */
char *cli_workload_text(const vp_workload *w, char *buf, size_t size);

/* Prices what (a family, built from o with the setup's costs: needs -p and -m; or a
 * schedule file, as cli_obtain_schedule) under real's setup. *r and *s receive the result
 * and the schedule (caller frees both). Prints the error and returns the exit code; 0 on
 * success. */
int cli_price(const char *what, const cli_spec *o, const cli_real *real, vp_price_result **r,
              vp_schedule **s);

/* The JSON of a priced schedule: cli_sim_json's fields (times in ms) and
 * vp_price_result_json's. New reference, NULL when memory runs out. */
json_t *cli_price_json(const vp_schedule *s, const vp_price_result *r);

/* "layers per stage: 9,10,...\n". */
void cli_print_split(FILE *out, const vp_price_result *r);

/* The human report of a schedule priced under w (measured: with measured costs): setting,
 * step time and its parts, MFU, bubble, rates, pass times, the split, and every rank's
 * memory items in GiB with the verdict. */
void cli_price_text(FILE *out, const vp_price_result *r, const vp_workload *w, bool measured);

/* ---- the hybrid search (plan --model) ---------------------------------------------------- */

/* The search's own options (the group cli_hybrid_group): --gpus, --global-batch, --pp,
 * --top, --max-chunks, --threads, --time-limit, --emit. */
typedef struct cli_hybrid {
    int gpus, global_batch, pp, top, max_chunks, threads; /* 0 until given */
    double time_limit;                                    /* 0 until given */
    int emit;                                             /* -1 none, 0 torchtitan, 1 megatron */
} cli_hybrid;

extern const cli_group cli_hybrid_group;

void cli_hybrid_init(cli_hybrid *h);

/* What plan writes: --memory (the schedule planner's budget, refused with --model), -o,
 * --json, and the directory operand of --emit torchtitan. */
typedef struct cli_plan_out {
    const char *budget, *out, *dir;
    bool json;
} cli_plan_out;

/* Runs plan with --model: checks the flags, searches, then prints the report (text or
 * --json; -o writes the winner's schedule) and the exports. Prints the error and returns
 * the exit code: 2 for bad flags and when nothing fits (the message names the smallest
 * memory needed), 3 for a bad model file or an unwritable output. */
int cli_plan_hybrid(cli_spec *o, cli_real *r, const cli_hybrid *h, const cli_plan_out *po);

/* ---- subcommands ------------------------------------------------------------------------- */

extern const cli_command cli_cmd_list, cli_cmd_schedule, cli_cmd_simulate, cli_cmd_compare,
    cli_cmd_validate, cli_cmd_train, cli_cmd_profile, cli_cmd_render, cli_cmd_block, cli_cmd_plan,
    cli_cmd_model;

/* Every subcommand, in the order `vpipe --help` lists them. */
extern const cli_command *const cli_commands[];
extern const size_t cli_command_count;

#endif
