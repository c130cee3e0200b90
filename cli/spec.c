/* The option groups several subcommands share (the schedule spec, the model), and getting,
 * simulating and describing a schedule. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

/* Prints "<flag> '<value>': [column N: ]<message>" for a library parser's error; a
 * malformed value is a usage error, other statuses keep their exit code. */
static int value_error(const char *flag, const char *value, const vp_error *err) {
    /* a value the library refuses, malformed or out of range, is a usage error */
    int code = err->status == VP_ENOMEM ? VP_EXIT_FAILURE : VP_EXIT_USAGE;
    if (err->column > 0)
        return cli_error(code, "%s '%s': column %d: %s", flag, value, err->column, err->message);
    return cli_error(code, "%s '%s': %s", flag, value, err->message);
}

static int parse_cost(const char *flag, const char *value, void *dest) {
    cli_spec *o = dest;
    vp_error err = {0};
    if (vp_costs_parse(value, &o->spec.costs, &err) != VP_OK)
        return value_error(flag, value, &err);
    o->have_cost = true;
    return 0;
}

static int parse_memory_model(const char *flag, const char *value, void *dest) {
    vp_error err = {0};
    return vp_memcfg_parse(value, dest, &err) == VP_OK ? 0 : value_error(flag, value, &err);
}

/* A count of ops, also in scientific notation (1e9). */
static int parse_max_ops(const char *flag, const char *value, void *dest) {
    double x;
    int rc = cli_parse_double(flag, value, 1, 1e18, &x);
    if (!rc && x != floor(x))
        rc = cli_error(VP_EXIT_USAGE, "%s expects a whole number of ops, got '%s'", flag, value);
    if (!rc)
        *(long *)dest = (long)x;
    return rc;
}

int cli_parse_cost_file(const char *flag, const char *value, void *dest) {
    cli_cost_file *cf = dest;
    char *text;
    size_t len;
    vp_error err = {0};
    if (vp_read_file(value, VP_PROFILE_MAX, &text, &len, &err) != VP_OK) /* "<path>: <reason>" */
        return cli_error(vp_status_exit_code(err.status), "%s %s", flag, err.message);
    vp_status rc = vp_profile_read_json(text, len, &cf->profile, &err);
    free(text);
    if (rc != VP_OK && err.line > 0)
        return cli_error(VP_EXIT_INPUT, "%s %s:%d:%d: %s", flag, value, err.line, err.column,
                         err.message);
    if (rc != VP_OK)
        return cli_error(VP_EXIT_INPUT, "%s %s: %s", flag, value, err.message);
    cf->given = true;
    return 0;
}

#define SPEC_INT(short_, field, arg_, help_)                                                       \
    {                                                                                              \
        .short_name = short_, .kind = CLI_INT, .offset = offsetof(cli_spec, spec.field),           \
        .arg = arg_, .lo = 1, .hi = 1000000, .help = help_                                         \
    }

static const cli_opt spec_opts[] = {
    SPEC_INT('p', p, "P", "devices (pipeline ranks)"),
    SPEC_INT('m', m, "M", "microbatches per step"),
    SPEC_INT('v', v, "V", "chunks per device for `interleaved` (default 2)"),
    {.name = "cost",
     .kind = CLI_CUSTOM,
     .arg = "F=..,B=..,W=..,c=..,FB=..",
     .parse = parse_cost,
     .help = "costs per microbatch of one device's whole slice (default\n"
             "F=1,B=1,W=1,c=0; FB = overlapped F&B, default F+B);\n"
             "a family with v chunks per device charges 1/v per chunk pass"},
    {.name = "cost-file",
     .kind = CLI_CUSTOM,
     .offset = offsetof(cli_spec, profile),
     .arg = "FILE",
     .parse = cli_parse_cost_file,
     .help = "costs measured by `vpipe profile` (per stage, with the\n"
             "model's activation bytes) instead of --cost"},
    {.name = "memory-limit",
     .kind = CLI_DOUBLE,
     .offset = offsetof(cli_spec, spec.mem_limit),
     .arg = "U",
     .lo = 1,
     .hi = 1e9,
     .help = "activation memory limit in units for zb-1p/zb-2p's greedy\n"
             "(default: p for zb-1p, 2p for zb-2p)"},
    {.name = "memory-model",
     .kind = CLI_CUSTOM,
     .offset = offsetof(cli_spec, spec.mem),
     .arg = "at-w|zb:R",
     .parse = parse_memory_model,
     .help = "release-at-W (default) or the ZB split, R = share of an F's\n"
             "activation that B keeps for W"},
};

const cli_group cli_spec_group = CLI_GROUP("schedule", spec_opts);

static const cli_opt limit_opts[] = {
    {.name = "max-ops",
     .kind = CLI_CUSTOM,
     .arg = "N",
     .parse = parse_max_ops,
     .help = "refuse schedules that may hold more ops (default 1e8: about\n"
             "2-5 GB of schedule and simulation)"},
};

const cli_group cli_limit_group = CLI_GROUP("limits", limit_opts);

/* In vp_recompute's order. */
static const char *const recompute_names[] = {"none", "selective", "full", NULL};

static const cli_opt recompute_opts[] = {
    {.name = "recompute",
     .kind = CLI_ENUM,
     .choices = recompute_names,
     .help = "recompute before each backward (an R pass): full keeps only\n"
             "each stage's input from F until R, selective drops the\n"
             "attention core (default none; 1f1b-r is 1F1B with full).\n"
             "With --model other than vpipe:...: Megatron's way instead,\n"
             "inside B (no R passes); priced once either way; plan\n"
             "--model: fixes the search's recomputation"},
};

const cli_group cli_recompute_group = CLI_GROUP("recomputation", recompute_opts);

#define MODEL_INT(name_, field, hi_, help_)                                                        \
    {                                                                                              \
        .name = name_, .kind = CLI_INT, .offset = offsetof(vp_model_config, field), .arg = "N",    \
        .lo = 1, .hi = hi_, .help = help_                                                          \
    }

static const cli_opt model_opts[] = {
    MODEL_INT("layers", n_layer, 1 << 16, "transformer blocks"),
    MODEL_INT("width", width, 1 << 16, "residual width, divisible by --heads"),
    MODEL_INT("heads", n_head, 1 << 16, "attention heads"),
    MODEL_INT("seq", seq_len, 1 << 20, "tokens per sequence"),
    MODEL_INT("microbatch", microbatch, 1 << 20, "sequences per microbatch"),
};

const cli_group cli_model_group = CLI_GROUP("model", model_opts);

void cli_spec_init(cli_spec *o) {
    memset(o, 0, sizeof *o);
    o->spec = vp_spec_make(0, 0);
    o->recompute = -1;
}

/* With a profile and p known, generators see each rank's measured slice costs; a unit of
 * memory is the mean slice's activation bytes, so byte budgets work too. */
static int apply_profile(cli_spec *o) {
    int p = o->spec.p;
    free(o->dev_costs);
    o->dev_costs = calloc(3 * (size_t)p, sizeof *o->dev_costs);
    if (!o->dev_costs)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    double *d = o->dev_costs;
    vp_error err = {0};
    if (vp_profile_slice_costs(&o->profile.profile, p, d, &o->spec.costs, &err) != VP_OK ||
        vp_profile_unit_bytes(&o->profile.profile, p, &o->spec.mem.unit_bytes, &err) != VP_OK)
        return cli_error(VP_EXIT_USAGE, "--cost-file at -p %d: %s", p, err.message);
    return 0;
}

int cli_spec_ready(cli_spec *o) {
    vp_error err = {0};
    if (o->recompute >= 0)
        o->spec.recompute = (vp_recompute)o->recompute;
    if (o->spec.p > 0 && o->spec.m > 0 && vp_spec_check_size(&o->spec, &err) != VP_OK)
        return cli_lib_error(&err);
    if (o->have_cost && o->profile.given)
        return cli_error(VP_EXIT_USAGE, "give --cost or --cost-file, not both");
    return o->profile.given && o->spec.p > 0 ? apply_profile(o) : 0;
}

void cli_spec_release(cli_spec *o) {
    free(o->dev_costs);
    o->dev_costs = NULL;
}

int cli_obtain_schedule(const char *what, const cli_spec *o, vp_schedule **out) {
    vp_error err = {0};
    *out = NULL;
    if (vp_family_find(what)) {
        if (!o->spec.p || !o->spec.m)
            return cli_error(VP_EXIT_USAGE, "building '%s' needs -p and -m", what);
        return vp_family_build(what, &o->spec, out, &err) == VP_OK ? 0 : cli_lib_error(&err);
    }
    /* A bare word that names nothing is a mistyped family; anything else is a file. */
    struct stat st;
    if (strcmp(what, "-") && stat(what, &st) != 0 && !strchr(what, '/') && !strchr(what, '.'))
        return cli_error(VP_EXIT_USAGE, "'%s' is neither a family (vpipe list) nor a file", what);
    if (vp_schedule_load(what, out, &err) != VP_OK) {
        if (err.line > 0)
            return cli_error(VP_EXIT_INPUT, "%s:%d:%d: %s", what, err.line, err.column,
                             err.message);
        return cli_error(err.status == VP_ENOMEM ? VP_EXIT_FAILURE : VP_EXIT_INPUT, "%s",
                         err.message);
    }
    if ((o->spec.p && o->spec.p != (*out)->p) || (o->spec.m && o->spec.m != (*out)->m)) {
        int p = (*out)->p, m = (*out)->m;
        vp_schedule_free(*out);
        *out = NULL;
        return cli_error(VP_EXIT_INPUT, "%s has p=%d, m=%d, not the -p/-m given", what, p, m);
    }
    if (o->spec.recompute == VP_RECOMPUTE_NONE)
        return 0;
    vp_schedule *file = *out;
    vp_status rc = vp_schedule_recompute(file, o->spec.recompute, out, &err);
    vp_schedule_free(file);
    return rc == VP_OK ? 0 : cli_lib_error(&err);
}

const char *cli_costs_text(const vp_costs *c, char *buf, size_t size) {
    int n = snprintf(buf, size, "F=%g B=%g W=%g c=%g", c->f, c->b, c->w, c->c);
    if (c->fb >= 0 && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, " FB=%g", c->fb);
    if (c->r >= 0 && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " R=%g", c->r);
    return buf;
}

vp_status cli_sim_run(const vp_schedule *s, const cli_spec *o, vp_sim **out, vp_error *err) {
    vp_cost_model *cm = NULL;
    *out = NULL;
    vp_status rc = vp_cost_model_new(s, &o->spec.costs, &o->spec.mem, &cm, err);
    if (rc == VP_OK && o->profile.given)
        rc = vp_profile_cost_model(&o->profile.profile, s, NULL, cm, err);
    if (rc == VP_OK)
        rc = vp_simulate(s, cm, out, err);
    vp_cost_model_free(cm);
    return rc;
}

int cli_simulate(const vp_schedule *s, const cli_spec *o, vp_sim **out) {
    vp_error err = {0};
    return cli_sim_run(s, o, out, &err) == VP_OK ? 0 : cli_lib_error(&err);
}

json_t *cli_sim_json(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs) {
    char *text = NULL;
    json_t *j = vp_sim_json(s, sim, costs, &text, NULL) == VP_OK ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return j;
}
