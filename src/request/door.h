/* The door's insides (request.h): the option table, the request being run, and the
 * helpers every command shares. Private to request. */
#ifndef VPIPE_REQUEST_DOOR_H
#define VPIPE_REQUEST_DOOR_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/internal.h"
#include "vpipe/request.h"

/* ---- commands and options (table.c) ----------------------------------------------------- */

typedef enum {
    VP__LIST,
    VP__SIMULATE,
    VP__COMPARE,
    VP__RENDER,
    VP__SCHEDULE,
    VP__VALIDATE,
    VP__PLAN,
    VP__BLOCK,
    VP__MODEL,
    VP__CALIBRATE,
    VP__COMMANDS
} vp__command;

/* The command called name, or -1. */
int vp__command_find(const char *name);
const char *vp__command_name(vp__command c);

/* Fails with "unknown command 'name'", naming the command it most likely misspells. */
vp_status vp__unknown_command(const char *name, vp_error *err);

typedef enum {
    VP__INT,    /* int in [lo, hi] */
    VP__LONG,   /* long in [lo, hi], a whole number (JSON: 1e8 too) */
    VP__NUMBER, /* double in [lo, hi] */
    VP__TEXT,   /* const char * */
    VP__FLAG,   /* bool */
    VP__CHOICE, /* int: the index of a choice */
    VP__COUNTS, /* const char * "a,b,c" (JSON: an array of integers too) */
    VP__OPERAND /* const char *[2] */
} vp__kind;

typedef struct vp__option {
    const char *key;     /* JSON key: "memory_model" */
    const char *flag;    /* the command line's spelling: "--memory-model", "-p" */
    const char *old_key; /* the first string API's key when another ("costs") */
    vp__kind kind;
    size_t offset;              /* in vp_request */
    double lo, hi;              /* VP__INT, VP__LONG, VP__NUMBER */
    double unset;               /* numbers, choices, integers: the value meaning "not given" */
    const char *const *choices; /* VP__CHOICE: NULL-terminated */
    const char *noun;           /* VP__CHOICE: "recomputation" (messages) */
    unsigned commands;          /* bit (1 << vp__command) of every command taking it */
    bool boolean;               /* VP__INT: JSON true and false read as 1 and 0 (an old flag) */
} vp__option;

/* Every option, and their count. */
extern const vp__option vp__options[];
extern const int vp__n_options;

/* The option of key (JSON or, with old, the first string API's), or NULL. */
const vp__option *vp__option_find(const char *key, bool old);

/* Whether req gives option o (its field differs from "not given"). */
bool vp__option_given(const vp_request *req, const vp__option *o);

/* How a message names an option: flags, JSON keys, or the first string API's keys. */
enum { VP__SPELL_OLD = 2 };

/* Option key as spelling says ("--seq", "option 'seq'"), into buf[80]; returns buf. */
const char *vp__name_as(int spelling, const char *key, char *buf);

/* Fills req (vp_request_init'ed) from the JSON object text, spelled as JSON keys: for
 * command cmd (its keys only), or with cmd < 0 any of allowed (the first string API's
 * keys, VP__SPELL_OLD). vp_request_release releases what it holds, also on failure. */
vp_status vp__fill(const char *text, int cmd, const char *const *allowed, vp_request *req,
                   vp_error *err);

/* ---- the request being run ---------------------------------------------------------------- */

typedef struct vp__run {
    const vp_request *req;
    vp__command cmd;
    int spelling;
    vp_reply *reply;
    /* the schedule options, resolved (spec.c) */
    vp_spec spec;
    bool have_cost;         /* --cost given */
    vp_cost_source costs;   /* --cost-file, read (ctx non-NULL) */
    double *dev;            /* [3p] per-device costs from it, which spec.costs borrows */
    double *offload_shares; /* --offload's shares, which spec.offload borrows */
    bool offload_auto;      /* plan --offload auto: the planner tries shares itself */
    /* a real model, resolved (real.c) when --model is given */
    bool real;
    vp_arch arch;
    vp_gpu gpu;
    vp_workload work;
    int *layers; /* --layers-per-stage */
    int n_layers;
    vp_price_setup setup;
} vp__run;

/* Option key as the request spells it, into a temporary buffer (valid in the enclosing
 * block). */
#define VP__NAME(run, key) vp__name_as((run)->spelling, (key), (char[80]){""})

/* Releases what run resolved (not the reply). */
void vp__run_release(vp__run *run);

/* Fails naming an option's value: "<name> '<value>': [column N: ]<err's message>" (flags)
 * or "<name>: [column N: ]<message>" (JSON), with status; VP_OK: the parser's, a value it
 * found malformed or out of range (VP_EPARSE, VP_EVALIDATION) being a usage error
 * (VP_EINVAL) but in the first string API. */
vp_status vp__value_error(const vp__run *run, const char *key, const char *value, vp_status status,
                          vp_error *err);

/* The first of keys (NULL-terminated) that req gives, or NULL. */
const char *vp__first_given(const vp__run *run, const char *const *keys);

/* Fails with "unknown family 'name' (vpipe list)", naming the family it most likely
 * misspells where one is near. */
vp_status vp__unknown_family(const char *name, vp_error *err);

/* ---- the reply (reply.c) -------------------------------------------------------------------- */

/* Appends a part: text (taken; NULL means memory ran out) to stdout, to path ("-" is
 * stdout), or as a note. VP_ENOMEM when memory runs out. */
vp_status vp__say(vp__run *run, char *text, vp_error *err);
vp_status vp__write(vp__run *run, const char *path, char *text, vp_error *err);
vp_status vp__note(vp__run *run, char *text, vp_error *err);

/* vp__say of a vp__buf's text. */
vp_status vp__say_buf(vp__run *run, vp__buf *b, vp_error *err);

/* A new string of the format; NULL when memory runs out. */
char *vp__printf(const char *fmt, ...) VP_PRINTF(1, 2);

/* Shows a status line (formatted) through the request's progress callback. */
void vp__progress(const vp__run *run, const char *fmt, ...) VP_PRINTF(2, 3);
void vp__progress_clear(const vp__run *run);

/* Asks the caller whether path (dir: a directory) can be written. */
vp_status vp__probe(const vp__run *run, const char *path, bool dir, vp_error *err);

/* ---- the schedule options (spec.c) ---------------------------------------------------------- */

/* Resolves the schedule options into run->spec: --recompute, the size guard (with -p and
 * -m), --cost, --memory-model, and --cost-file (its per-device costs with -p). */
vp_status vp__spec_ready(vp__run *run, vp_error *err);

/* The schedule a command works on: the caller's, a family built from the spec (which then
 * needs -p and -m) or a schedule file read and validated (-p/-m, when given, must match
 * it), recomputing as the spec asks. *s is the schedule; *owned (the caller frees it)
 * holds it when made here, NULL when it is the caller's as it is. */
vp_status vp__obtain(vp__run *run, const char *what, vp_schedule **owned, const vp_schedule **s,
                     vp_error *err);

/* Simulates s with the resolved costs and memory model (measured ones from --cost-file). */
vp_status vp__simulate(const vp__run *run, const vp_schedule *s, vp_sim **out, vp_error *err);

/* "F=1 B=1 W=1 c=0" (and " FB=x", " R=x" when set, " S=x T=x E=x" when one is not 0) of c
 * into buf. Returns buf. */
const char *vp__costs_text(const vp_costs *c, char *buf, size_t size);

/* A library JSON text (taken) as a value; NULL when text is NULL or memory ran out. */
json_t *vp__json_take(char *text);

/* json (released here) as indented text with a newline, to stdout. VP_ENOMEM. */
vp_status vp__say_json(vp__run *run, json_t *json, vp_error *err);

/* vp_sim_json's report as a JSON value (compare --json, block --json); NULL: no memory. */
json_t *vp__sim_json(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs);

/* ---- a real model (real.c) ----------------------------------------------------------------- */

/* The accelerator name (a preset or a JSON file: --gpu) into *gpu. A failure names --gpu
 * and the value: bad content of a file is bad input (its position), an unknown name a
 * usage error. */
vp_status vp__gpu_resolve(const vp__run *run, const char *name, vp_gpu *gpu, vp_error *err);

/* Without --model: refuses the real-model options given. With it: the model, the
 * accelerator (--gpu, default h100-80gb), the workload and the setup, checked; a model
 * other than vpipe's own takes --recompute into its workload and leaves the spec's. */
vp_status vp__real_ready(vp__run *run, vp_error *err);

/* Prices what (the caller's schedule, a family built with the setup's costs, or a
 * schedule file) under the setup: new *r, and in *s the schedule priced (in *owned when
 * made here: the caller frees it). */
vp_status vp__price(vp__run *run, const char *what, vp_price_result **r, vp_schedule **owned,
                    const vp_schedule **s, vp_error *err);

/* "TP 8 + SP, DP 2 + ZeRO-1, seq 8192, mbs 1, FlashAttention, recompute none" into buf. */
char *vp__workload_text(const vp_workload *w, char *buf, size_t size);

/* ", bf16 optimizer states" or ", bf16 moments" as w's optimizer keeps them; "" for fp32
 * states. */
const char *vp__optimizer_text(const vp_workload *w);

/* The JSON of a priced schedule: vp__sim_json's fields and vp_price_result_json's. */
json_t *vp__price_json(const vp_schedule *s, const vp_price_result *r);

/* "layers per stage: 9,10,...\n" and the human report of a priced schedule. */
void vp__split_text(vp__buf *out, const vp_price_result *r);
void vp__price_text(vp__buf *out, const vp_price_result *r, const vp_workload *w, bool measured);

/* ---- the commands (one file each) ------------------------------------------------------------ */

vp_status vp__list(vp__run *run, vp_error *err);
vp_status vp__simulate_cmd(vp__run *run, vp_error *err);
vp_status vp__compare(vp__run *run, vp_error *err);
vp_status vp__render(vp__run *run, vp_error *err);
vp_status vp__schedule(vp__run *run, vp_error *err);
vp_status vp__validate(vp__run *run, vp_error *err);
vp_status vp__plan(vp__run *run, vp_error *err);
vp_status vp__hybrid(vp__run *run, vp_error *err);
vp_status vp__block(vp__run *run, vp_error *err);
vp_status vp__model(vp__run *run, vp_error *err);
vp_status vp__calibrate(vp__run *run, vp_error *err);

#endif
