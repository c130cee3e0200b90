/* Every option of every command in one table: its JSON key, its command-line spelling,
 * its kind and bounds, where it goes in a vp_request, and the commands taking it (door.h).
 * A new option is one field in vp_request, one row here (the JSON filler, the "given"
 * test and the messages follow from it) and one entry in a flag table of cli/; a new
 * command one name below, one vp__command, one run function (request.c) and one cli/
 * cmd_*.c with `.request = true`. tests/test_cli_parity.c checks that the rows and the
 * flag tables agree. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "request/door.h"

static const char *const command_names[VP__COMMANDS] = {"list",     "simulate", "compare", "render",
                                                        "schedule", "validate", "plan",    "block",
                                                        "model",    "calibrate"};

int vp__command_find(const char *name) {
    for (int c = 0; name && c < VP__COMMANDS; c++)
        if (!strcmp(name, command_names[c]))
            return c;
    return -1;
}

const char *vp__command_name(vp__command c) {
    return command_names[c];
}

vp_status vp__unknown_command(const char *name, vp_error *err) {
    vp__nearest near = {.word = name};
    for (int c = 0; name && c < VP__COMMANDS; c++)
        vp__nearest_offer(&near, command_names[c]);
    return vp__fail(err, VP_EINVAL, "unknown command '%s'%s", name ? name : "(null)",
                    vp__did_you_mean(near.best, NULL).text);
}

#define ON(c) (1u << VP__##c)
/* What takes the schedule options, the real-model options. */
#define BUILD                                                                                      \
    (ON(SIMULATE) | ON(COMPARE) | ON(RENDER) | ON(SCHEDULE) | ON(VALIDATE) | ON(PLAN) | ON(BLOCK))
#define REAL (ON(SIMULATE) | ON(COMPARE) | ON(RENDER) | ON(SCHEDULE) | ON(PLAN) | ON(MODEL))
#define AT(field) offsetof(vp_request, field)

/* In vp_recompute's, vp_split_goal's, vp_emit's and vp_format's orders. */
static const char *const recomputes[] = {"none", "selective", "full", NULL};
static const char *const splits[] = {"time", "memory", "even", NULL};
static const char *const dispatches[] = {"alltoall", "deepep", NULL};     /* vp_ep_dispatch */
static const char *const routings[] = {"random", "round-robin", NULL};    /* vp_ep_routing */
static const char *const attn_kernels[] = {"fused", "fa2", NULL};         /* vp_attn_kernel */
static const char *const frameworks[] = {"megatron", "torchtitan", NULL}; /* vp_framework */
static const char *const optimizer_dtypes[] = {"fp32", "bf16", "bf16-moments", NULL};
static const char *const emits[] = {"torchtitan", "megatron", NULL};
static const char *const formats[] = {"json", "text", "torch-csv", "torch-csv-comms", NULL};
static const char *const offload_policies[] = {"none", "uniform", "selective", NULL};
/* vp_fp8's order, then VP_REQUEST_FP8_AUTO. */
static const char *const fp8s[] = {"off",     "tensorwise", "blockwise", "mxfp8",
                                   "delayed", "auto",       NULL};
_Static_assert(VP_REQUEST_FP8_AUTO == VP_FP8_DELAYED + 1, "auto follows the recipes");
static const char *const cp_comms[] = {"p2p", "allgather", NULL}; /* vp_cp_comm's order */

#define INT(key_, flag_, field, lo_, hi_, on)                                                      \
    {                                                                                              \
        .key = key_, .flag = flag_, .kind = VP__INT, .offset = AT(field), .lo = lo_, .hi = hi_,    \
        .commands = on                                                                             \
    }
#define NUMBER(key_, flag_, field, lo_, hi_, unset_, on)                                           \
    {                                                                                              \
        .key = key_, .flag = flag_, .kind = VP__NUMBER, .offset = AT(field), .lo = lo_, .hi = hi_, \
        .unset = unset_, .commands = on                                                            \
    }
#define TEXT(key_, flag_, field, on)                                                               \
    { .key = key_, .flag = flag_, .kind = VP__TEXT, .offset = AT(field), .commands = on }
/* An option the first string API names otherwise (old). */
#define RENAMED(key_, flag_, old, kind_, field, on)                                                \
    {                                                                                              \
        .key = key_, .flag = flag_, .old_key = old, .kind = kind_, .offset = AT(field),            \
        .commands = on                                                                             \
    }
#define FLAG(key_, flag_, field, on)                                                               \
    { .key = key_, .flag = flag_, .kind = VP__FLAG, .offset = AT(field), .commands = on }
#define CHOICE(key_, flag_, field, list, noun_, unset_, on)                                        \
    {                                                                                              \
        .key = key_, .flag = flag_, .kind = VP__CHOICE, .offset = AT(field), .choices = list,      \
        .noun = noun_, .unset = unset_, .commands = on                                             \
    }

const vp__option vp__options[] = {
    {.key = "operand",
     .flag = "FILE",
     .old_key = "family",
     .kind = VP__OPERAND,
     .offset = AT(operand),
     .commands = ON(SIMULATE) | ON(RENDER) | ON(SCHEDULE) | ON(VALIDATE) | ON(PLAN) | ON(BLOCK) |
                 ON(MODEL)},
    /* the schedule */
    INT("p", "-p", p, 1, INT_MAX, BUILD),
    INT("m", "-m", m, 1, INT_MAX, BUILD),
    INT("v", "-v", v, 1, INT_MAX, BUILD),
    RENAMED("cost", "--cost", "costs", VP__TEXT, cost, BUILD),
    TEXT("cost_file", "--cost-file", cost_file, BUILD),
    TEXT("memory_model", "--memory-model", memory_model, BUILD),
    NUMBER("memory_limit", "--memory-limit", memory_limit, 0, HUGE_VAL, 0, BUILD),
    {.key = "max_ops",
     .flag = "--max-ops",
     .kind = VP__LONG,
     .offset = AT(max_ops),
     .lo = 1,
     .hi = 1e18,
     .commands = BUILD},
    CHOICE("recompute", "--recompute", recompute, recomputes, "recomputation", -1,
           (BUILD & ~ON(VALIDATE) & ~ON(BLOCK)) | ON(MODEL)),
    TEXT("offload", "--offload", offload, BUILD & ~ON(VALIDATE) & ~ON(BLOCK)),
    CHOICE("offload_policy", "--offload-policy", offload_policy, offload_policies, "offload policy",
           -1, BUILD & ~ON(VALIDATE) & ~ON(BLOCK)),
    FLAG("vocab_parallel", "--vocab-parallel", vocab_parallel, BUILD & ~ON(BLOCK)),
    /* a real model */
    TEXT("model", "--model", model, REAL),
    TEXT("gpu", "--gpu", gpu, REAL | ON(CALIBRATE)),
    INT("seq", "--seq", seq, 1, INT_MAX, REAL),
    INT("mbs", "--mbs", mbs, 1, INT_MAX, REAL),
    INT("tp", "--tp", tp, 1, INT_MAX, REAL),
    FLAG("sp", "--sp", sp, REAL),
    INT("dp", "--dp", dp, 1, INT_MAX, REAL),
    INT("ep", "--ep", ep, 1, INT_MAX, REAL),
    INT("etp", "--etp", etp, 1, INT_MAX, REAL),
    {.key = "zero", /* 0..3; an old boolean (true: 1); not given: -1 */
     .flag = "--zero",
     .old_key = "zero1",
     .kind = VP__INT,
     .offset = AT(zero),
     .lo = 0,
     .hi = 3,
     .unset = -1,
     .boolean = true,
     .commands = REAL},
    {.key = "flash", /* 0 or 1; an old boolean; not given: -1 (real.c: on for a real model) */
     .flag = "--flash",
     .kind = VP__INT,
     .offset = AT(flash),
     .lo = 0,
     .hi = 1,
     .unset = -1,
     .boolean = true,
     .commands = REAL},
    CHOICE("attn_kernel", "--attn-kernel", attn_kernel, attn_kernels, "attention kernel", -1, REAL),
    CHOICE("framework", "--framework", framework, frameworks, "framework", -1, REAL),
    FLAG("eager", "--eager", eager, REAL),
    TEXT("recompute_modules", "--recompute-modules", recompute_modules, REAL),
    CHOICE("optimizer_dtype", "--optimizer-dtype", optimizer_dtype, optimizer_dtypes,
           "optimizer precision", -1, REAL),
    FLAG("tp_overlap", "--tp-overlap", tp_overlap, REAL),
    FLAG("pp_overlap", "--pp-overlap", pp_overlap, REAL),
    FLAG("ep_overlap", "--ep-overlap", ep_overlap, REAL),
    CHOICE("ep_dispatch", "--ep-dispatch", ep_dispatch, dispatches, "dispatch", -1, REAL),
    CHOICE("ep_routing", "--ep-routing", ep_routing, routings, "routing", -1, REAL),
    NUMBER("reserve", "--reserve", reserve, 0, 1e6, -1, REAL),
    NUMBER("dp_overlap", "--dp-overlap", dp_overlap, 0, 1, -1, REAL),
    CHOICE("fp8", "--fp8", fp8, fp8s, "FP8 recipe", -1, REAL),
    FLAG("fp8_params", "--fp8-params", fp8_params, REAL),
    INT("grad_bytes", "--grad-bytes", grad_bytes, 2, 4, REAL),
    CHOICE("split", "--split", split, splits, "split", -1, REAL & ~ON(MODEL)),
    {.key = "layers_per_stage",
     .flag = "--layers-per-stage",
     .kind = VP__COUNTS,
     .offset = AT(layers_per_stage),
     .commands = REAL & ~ON(MODEL)},
    /* the whole-configuration search */
    INT("gpus", "--gpus", gpus, 1, 1 << 20, ON(PLAN)),
    INT("global_batch", "--global-batch", global_batch, 1, 1 << 24, ON(PLAN)),
    INT("pp", "--pp", pp, 1, 1 << 20, ON(PLAN)),
    INT("top", "--top", top, 1, 1000, ON(PLAN)),
    INT("max_chunks", "--max-chunks", max_chunks, 1, 64, ON(PLAN)),
    INT("threads", "--threads", threads, 1, INT_MAX, ON(PLAN) | ON(COMPARE)),
    NUMBER("time_limit", "--time-limit", time_limit, 0.001, 1e6, 0, ON(PLAN)),
    NUMBER("margin", "--margin", margin, 0, 1e6, -1, ON(PLAN)),
    CHOICE("emit", "--emit", emit, emits, "export", -1, ON(PLAN)),
    TEXT("memory", "--memory", memory, ON(PLAN)),
    /* calibration */
    TEXT("runs", "--runs", runs, ON(CALIBRATE)),
    TEXT("constants", "--constants", constants, ON(CALIBRATE)),
    /* what to answer */
    FLAG("json", "--json", json,
         ON(LIST) | ON(SIMULATE) | ON(COMPARE) | ON(PLAN) | ON(BLOCK) | ON(MODEL) | ON(CALIBRATE)),
    TEXT("output", "-o", output, ON(SCHEDULE) | ON(PLAN) | ON(BLOCK) | ON(CALIBRATE)),
    CHOICE("format", "--format", format, formats, "format", 0, ON(SCHEDULE)),
    TEXT("svg", "--svg", svg, ON(COMPARE) | ON(RENDER)),
    TEXT("trace", "--trace", trace, ON(RENDER)),
    FLAG("ascii", "--ascii", ascii, ON(RENDER)),
    INT("width", "--width", width, 20, 100000, ON(RENDER)),
    FLAG("fit", "--fit", fit, ON(RENDER)),
    FLAG("color", "--color", color, ON(RENDER)),
    FLAG("no_color", "--no-color", no_color, ON(RENDER)),
    TEXT("title", "--title", title, ON(RENDER)),
    FLAG("reorder", "--reorder", reorder, ON(BLOCK)),
    FLAG("example", "--example", example, ON(BLOCK)),
    /* context parallelism (a real model) */
    INT("cp", "--cp", cp, 1, INT_MAX, REAL),
    CHOICE("cp_comm", "--cp-comm", cp_comm, cp_comms, "CP exchange", -1, REAL),
};
const int vp__n_options = sizeof vp__options / sizeof vp__options[0];

const vp__option *vp__option_find(const char *key, bool old) {
    for (int i = 0; i < vp__n_options; i++) {
        const vp__option *o = &vp__options[i];
        if (!strcmp(key, old && o->old_key ? o->old_key : o->key))
            return o;
    }
    return NULL;
}

bool vp__option_given(const vp_request *req, const vp__option *o) {
    const char *at = (const char *)req + o->offset;
    switch (o->kind) {
    case VP__INT:
        return *(const int *)at != (int)o->unset;
    case VP__LONG:
        return *(const long *)at != 0;
    case VP__NUMBER:
        return *(const double *)at != o->unset;
    case VP__CHOICE:
        return *(const int *)at != (int)o->unset;
    case VP__FLAG:
        return *(const bool *)at;
    case VP__TEXT:
    case VP__COUNTS:
        return *(const char *const *)at != NULL;
    case VP__OPERAND:
        return ((const char *const *)at)[0] || req->schedule;
    }
    return false;
}

const char *vp__name_as(int spelling, const char *key, char *buf) {
    const vp__option *o = vp__option_find(key, false);
    if (spelling == VP_SPELL_FLAGS && o)
        snprintf(buf, 80, "%s", o->flag);
    else
        snprintf(buf, 80, "option '%s'",
                 spelling == VP__SPELL_OLD && o && o->old_key ? o->old_key : key);
    return buf;
}

const char *vp__first_given(const vp__run *run, const char *const *keys) {
    for (int i = 0; keys[i]; i++)
        if (vp__option_given(run->req, vp__option_find(keys[i], false)))
            return keys[i];
    return NULL;
}
