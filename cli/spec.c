/* The flags every schedule-building subcommand shares, and getting a schedule from a
 * family name or a file. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

const char cli_spec_help[] =
    "  -p P                  devices (pipeline ranks)\n"
    "  -m M                  microbatches per step\n"
    "  -v V                  chunks per device for `interleaved` (default 2)\n"
    "  --cost F=..,B=..,W=..,c=..,FB=..\n"
    "                        costs per microbatch of one device's whole slice (default\n"
    "                        F=1,B=1,W=1,c=0; FB = overlapped F&B, default F+B);\n"
    "                        a family with v chunks per device charges 1/v per chunk pass\n"
    "  --cost-file FILE      costs measured by `vpipe profile` (per stage, with the\n"
    "                        model's activation bytes) instead of --cost\n"
    "  --memory-limit U      activation memory limit in units for zb-1p/zb-2p's greedy\n"
    "                        (default: p for zb-1p, 2p for zb-2p)\n"
    "  --memory-model at-w|zb:R\n"
    "                        release-at-W (default) or the ZB split, R = share of an F's\n"
    "                        activation that B keeps for W\n";

void cli_spec_init(cli_spec *o) {
    memset(o, 0, sizeof *o);
    o->spec = vp_spec_make(0, 0);
}

/* With a profile and p known, generators see each rank's measured slice costs. The
 * per-device arrays live as long as the process (the last profile's). */
static int apply_profile(cli_spec *o) {
    static double *slices;
    if (!o->have_profile || o->spec.p < 1)
        return 1;
    double *grown = realloc(slices, 3 * (size_t)o->spec.p * sizeof *grown);
    if (!grown) {
        return -cli_error(VP_EXIT_FAILURE, "out of memory");
    }
    slices = grown;
    vp_error err = {0};
    int p = o->spec.p;
    /* A unit of memory is the mean slice's activation bytes, so byte budgets work too. */
    if (vp_profile_slice_costs(&o->profile, p, slices, slices + p, slices + 2 * p, &o->spec.costs,
                               &err) != VP_OK ||
        vp_profile_unit_bytes(&o->profile, p, &o->spec.mem.unit_bytes, &err) != VP_OK) {
        return -cli_error(VP_EXIT_USAGE, "--cost-file at -p %d: %s", p, err.message);
    }
    return 1;
}

int cli_load_profile(const char *path, vp_profile *out) {
    char *text;
    size_t len;
    vp_error err = {0};
    vp_status rc = vp_read_file(path, 0, &text, &len, &err);
    if (rc == VP_OK) {
        rc = vp_profile_read_json(text, len, out, &err);
        free(text);
    }
    if (rc == VP_OK)
        return 0;
    if (err.line > 0)
        return cli_error(VP_EXIT_INPUT, "%s:%d:%d: %s", path, err.line, err.column, err.message);
    return cli_error(VP_EXIT_INPUT, "%s: %s", path, err.message);
}

int cli_spec_flag(int argc, char **argv, int *i, cli_spec *o) {
    const char *flag = argv[*i];
    long n;
    if (!strcmp(flag, "--cost-file")) {
        const char *val = cli_flag_value(argc, argv, i);
        if (!val)
            return -VP_EXIT_USAGE;
        int code = cli_load_profile(val, &o->profile);
        if (code)
            return -code;
        o->have_profile = 1;
        return apply_profile(o);
    }
    if (!strcmp(flag, "-p") || !strcmp(flag, "-m") || !strcmp(flag, "-v")) {
        const char *val = cli_flag_value(argc, argv, i);
        if (!val || cli_parse_int(flag, val, 1, 100000, &n) != 0)
            return -VP_EXIT_USAGE;
        if (flag[1] == 'p') {
            o->spec.p = (int)n;
            o->have_p = 1;
            return apply_profile(o);
        } else if (flag[1] == 'm') {
            o->spec.m = (int)n;
            o->have_m = 1;
        } else {
            o->spec.v = (int)n;
        }
        return 1;
    }
    if (!strcmp(flag, "--memory-limit")) {
        const char *val = cli_flag_value(argc, argv, i);
        return val && cli_parse_double(flag, val, 1.0, 1e9, &o->spec.mem_limit) == 0
                   ? 1
                   : -VP_EXIT_USAGE;
    }
    if (!strcmp(flag, "--cost") || !strcmp(flag, "--memory-model")) {
        const char *val = cli_flag_value(argc, argv, i);
        if (!val)
            return -VP_EXIT_USAGE;
        vp_error err = {0};
        vp_status rc = flag[2] == 'c' ? vp_costs_parse(val, &o->spec.costs, &err)
                                      : vp_memcfg_parse(val, &o->spec.mem, &err);
        if (rc != VP_OK) {
            return -cli_error(VP_EXIT_USAGE, "%s '%s': column %d: %s", flag, val, err.column,
                              err.message);
        }
        return 1;
    }
    return 0;
}

cli_arg cli_common_arg(int argc, char **argv, int *i, cli_spec *o, int *json, const char *usage,
                       int *code) {
    if (!strcmp(argv[*i], "--help")) {
        printf("%s%s", usage, cli_spec_help);
        *code = VP_EXIT_OK;
        return CLI_ARG_EXIT;
    }
    if (json && !strcmp(argv[*i], "--json")) {
        *json = 1;
        return CLI_ARG_TAKEN;
    }
    int r = cli_spec_flag(argc, argv, i, o);
    *code = -r;
    return r < 0 ? CLI_ARG_EXIT : r ? CLI_ARG_TAKEN : CLI_ARG_OTHER;
}

static int is_file(const char *path) {
    struct stat st;
    return !strcmp(path, "-") || (stat(path, &st) == 0 && !S_ISDIR(st.st_mode));
}

int cli_obtain_schedule(const char *what, const cli_spec *o, vp_schedule **out) {
    vp_error err = {0};
    *out = NULL;
    if (vp_family_find(what)) {
        if (!o->have_p || !o->have_m)
            return cli_error(VP_EXIT_USAGE, "building '%s' needs -p and -m", what);
        if (vp_family_build(what, &o->spec, out, &err) != VP_OK)
            return cli_lib_error(&err);
        return 0;
    }
    /* A bare word that is no file is a mistyped family; anything path-like is a file. */
    if (!is_file(what) && !strchr(what, '/') && !strchr(what, '.'))
        return cli_error(VP_EXIT_USAGE, "'%s' is neither a family (vpipe list) nor a file", what);
    if (vp_schedule_load(what, out, &err) != VP_OK) {
        if (err.line > 0)
            return cli_error(VP_EXIT_INPUT, "%s:%d:%d: %s", what, err.line, err.column,
                             err.message);
        return cli_error(err.status == VP_ENOMEM ? VP_EXIT_FAILURE : VP_EXIT_INPUT, "%s",
                         err.message);
    }
    if ((o->have_p && o->spec.p != (*out)->p) || (o->have_m && o->spec.m != (*out)->m)) {
        int p = (*out)->p, m = (*out)->m;
        vp_schedule_free(*out);
        *out = NULL;
        return cli_error(VP_EXIT_INPUT, "%s has p=%d, m=%d, not the -p/-m given", what, p, m);
    }
    return 0;
}

int cli_simulate(const vp_schedule *s, const cli_spec *o, vp_cost_model **cm_out, vp_sim **out) {
    vp_error err = {0};
    vp_cost_model *cm = NULL;
    if (vp_cost_model_new(s, &o->spec.costs, &o->spec.mem, &cm, &err) != VP_OK)
        return cli_lib_error(&err);
    if (o->have_profile && vp_profile_cost_model(&o->profile, s, cm, &err) != VP_OK) {
        vp_cost_model_free(cm);
        return cli_lib_error(&err);
    }
    if (vp_simulate(s, cm, out, &err) != VP_OK) {
        vp_cost_model_free(cm);
        return cli_lib_error(&err);
    }
    if (cm_out)
        *cm_out = cm;
    else
        vp_cost_model_free(cm);
    return 0;
}

static json_t *double_array(const double *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

json_t *cli_sim_json(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs) {
    json_t *o = json_object();
    json_object_set_new(o, "family", json_string(s->family));
    json_object_set_new(o, "p", json_integer(s->p));
    json_object_set_new(o, "m", json_integer(s->m));
    json_object_set_new(o, "stages", json_integer(s->S));
    json_object_set_new(o, "placement", json_string(vp_placement_name(s->placement)));
    json_object_set_new(
        o, "costs",
        json_pack("{s:f,s:f,s:f,s:f}", "F", costs->f, "B", costs->b, "W", costs->w, "c", costs->c));
    json_object_set_new(o, "makespan", json_real(sim->makespan));
    json_object_set_new(o, "longest_span", json_real(vp_sim_longest_span(sim)));
    json_object_set_new(o, "bubble", json_real(sim->bubble));
    json_object_set_new(o, "bubble_makespan", json_real(sim->bubble_makespan));
    json_object_set_new(o, "peak_memory", double_array(sim->peak, sim->p));
    json_object_set_new(o, "peak_memory_max", json_real(sim->peak_max));
    json_object_set_new(o, "param_copies", json_integer(vp_schedule_param_copies(s)));
    if (sim->peak_bytes)
        json_object_set_new(o, "peak_memory_bytes", double_array(sim->peak_bytes, sim->p));
    json_object_set_new(o, "busy", double_array(sim->dev_busy, sim->p));
    return o;
}

void cli_print_json(FILE *out, json_t *json) {
    json_dumpf(json, out, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    fputc('\n', out);
}
