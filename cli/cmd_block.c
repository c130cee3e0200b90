/* vpipe block FILE: build a schedule from a user's building block and report its
 * timing, memory and lifespans. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vpipe/block.h"
#include "vpipe/io.h"

typedef struct block_args {
    cli_spec spec;
    const char *path, *out;
    bool json, reorder, example;
} block_args;

static const cli_opt block_opts[] = {
    {.name = "reorder",
     .kind = CLI_FLAG,
     .offset = offsetof(block_args, reorder),
     .help = "move passes into idle gaps without raising any peak"},
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(block_args, out),
     .arg = "OUT.json",
     .help = "write the schedule (vpipe JSON; - for stdout)"},
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(block_args, json),
     .help = "print the report as one JSON object"},
    {.name = "example",
     .kind = CLI_FLAG,
     .offset = offsetof(block_args, example),
     .help = "print the 1F1B block for -p P (default 4) as a starting point"},
};
static const cli_group block_group = CLI_GROUP("block", block_opts);

static void init(void *args) {
    cli_spec_init(&((block_args *)args)->spec);
}

static const char block_epilog[] =
    "Block file (JSON):\n"
    "  {\"format\": \"vpipe-block\", \"version\": 1,\n"
    "   \"p\": 4,                      devices\n"
    "   \"placement\": \"single\",       single | loop | v | bidir | custom (default single)\n"
    "   \"stages\": 4,                 optional for single (p), v and bidir (2p)\n"
    "   \"stage_device\": [0, ...],    custom only: device of every stage\n"
    "   \"mb_per_copy\": 1,            microbatches one copy carries (default 1)\n"
    "   \"interval\": 6,               T; default: the smallest collision-free T\n"
    "   \"costs\": \"F=2,B=2,W=2,c=0\",  default costs for the durations\n"
    "   \"passes\": [[\"F\", 0, 0], [\"BW\", 3, 8], [\"W\", 1, 12, 0, 2.5], ...]}\n"
    "  A pass is [kind, stage, start, mb, duration]: kind F, B, W or BW; mb (default 0)\n"
    "  is the microbatch offset in the copy (copy j runs microbatch j*mb_per_copy + mb;\n"
    "  passes outside [0, m) are dropped); duration defaults to the costs (a chunk of a\n"
    "  device with v stages costs 1/v); durations given in the file shape the block (its\n"
    "  order), the simulation charges the costs. Every stage needs F and BW, or F, B, W.\n\n"
    "Exit codes: 0 ok, 2 usage, 3 malformed or colliding block (the message names the\n"
    "device and the two passes), or a block whose timing breaks a dependency.\n";

/* Prints the 1F1B block for p devices. */
static int print_example(int p, const vp_costs *costs) {
    vp_error err = {0};
    vp_block *shape = NULL, *b = NULL;
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    char *text = NULL;
    vp_status st = vp_block_new(p, p, VP_PLACE_SINGLE, &shape, &err);
    if (st == VP_OK)
        st = vp_block_cost_model(shape, costs, &mem, &cm, &err);
    if (st == VP_OK)
        st = vp_block_1f1b(p, cm, 0, &b, &err);
    if (st == VP_OK)
        st = vp_block_write_json(b, costs, &text, &err);
    int rc = st == VP_OK ? cli_write("-", text, strlen(text)) : cli_lib_error(&err);
    free(text);
    vp_block_free(b);
    vp_cost_model_free(cm);
    vp_block_free(shape);
    return rc;
}

/* Library errors about the user's block are bad input (3); memory is a failure (1). */
static int block_error(const vp_error *err) {
    if (err->status == VP_ENOMEM)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    if (err->status == VP_EIO)
        return cli_lib_error(err);
    if (err->line > 0)
        return cli_error(VP_EXIT_INPUT, "line %d, column %d: %s", err->line, err->column,
                         err->message);
    return cli_error(VP_EXIT_INPUT, "%s", err->message);
}

static void print_text(FILE *out, const vp_block *b, int T_given, const vp_schedule *s,
                       const vp_sim *sim, const vp_block_lifespan *ls, int moved) {
    fprintf(out, "block  p=%d  stages=%d  placement=%s  mb_per_copy=%d  passes=%d\n", b->p, b->S,
            vp_placement_name(b->placement), b->mb_per_copy, b->n);
    fprintf(out, "interval T=%g%s\n", b->T, T_given ? "" : " (smallest collision-free)");
    fprintf(out,
            "schedule  m=%d  makespan %g  bubble %.2f%% (longest span %g)  over makespan %.2f%%",
            s->m, sim->makespan, 100.0 * sim->bubble, vp_sim_longest_span(sim),
            100.0 * sim->bubble_makespan);
    if (moved >= 0)
        fprintf(out, "  reorder moves %d", moved);
    fprintf(out, "\n\ndevice      start        end       busy    peak   bound  steady\n");
    for (int d = 0; d < s->p; d++)
        fprintf(out, "%6d %10g %10g %10g %7g %7g %7g\n", d, sim->dev_first[d], sim->dev_last[d],
                sim->dev_busy[d], sim->peak[d], ls->bound[d], ls->steady[d]);
    fprintf(out, "\nstage  device   lifespan  ceil(l/T)\n");
    for (int st = 0; st < b->S; st++)
        fprintf(out, "%5d %7d %10g %10g\n", st, b->stage_device[st], ls->life[st],
                ls->life[st] > 0 ? ceil(ls->life[st] / b->T - 1e-9) : 0.0);
}

static json_t *lifespan_json(const vp_block *b, const vp_block_lifespan *ls) {
    json_t *stages = json_array(), *devices = json_array();
    for (int st = 0; st < b->S; st++)
        json_array_append_new(stages, json_pack("{s:i, s:i, s:f}", "stage", st, "device",
                                                b->stage_device[st], "lifespan", ls->life[st]));
    for (int d = 0; d < b->p; d++)
        json_array_append_new(devices,
                              json_pack("{s:i, s:f, s:f, s:f}", "device", d, "bound", ls->bound[d],
                                        "steady", ls->steady[d], "peak", ls->peak[d]));
    return json_pack("{s:f, s:o, s:o}", "interval", b->T, "stages", stages, "devices", devices);
}

/* Reads the block file with the costs (the file's unless --cost was given). */
static int read_block(const char *path, cli_spec *o, vp_block **out, int *T_given) {
    vp_error err = {0};
    char *text = NULL;
    size_t len = 0;
    if (vp_read_file(path, 0, &text, &len, &err) != VP_OK)
        return cli_lib_error(&err);
    vp_status rc = vp_block_read_json(text, len, o->have_cost ? &o->spec.costs : NULL,
                                      &o->spec.costs, out, &err);
    free(text);
    *T_given = rc == VP_OK && (*out)->T > 0;
    if (rc == VP_OK && !*T_given)
        rc = vp_block_min_interval(*out, &(*out)->T, &err);
    if (rc == VP_OK)
        rc = vp_block_collisions(*out, (*out)->T, NULL, &err);
    if (rc != VP_OK) {
        vp_block_free(*out);
        *out = NULL;
        return block_error(&err);
    }
    return 0;
}

/* Repeats, validates, optionally reorders and simulates. */
static int build(const vp_block *b, int m, const cli_spec *o, bool reorder, int *moved,
                 vp_schedule **s, vp_sim **sim, vp_block_lifespan **ls) {
    vp_error err = {0};
    vp_cost_model *cm = NULL;
    vp_status rc = vp_block_repeat(b, m, "block", s, &err);
    if (rc == VP_OK && (rc = vp_schedule_validate(*s, &err)) != VP_OK)
        return rc == VP_ENOMEM
                   ? cli_lib_error(&err) /* not the block's fault */
                   : cli_error(VP_EXIT_INPUT, "the block's timing breaks a dependency: %s",
                               err.message);
    if (rc == VP_OK)
        rc = vp_block_cost_model(b, &o->spec.costs, &o->spec.mem, &cm, &err);
    if (rc == VP_OK)
        rc = vp_block_lifespan_new(b, cm, m, ls, &err);
    if (rc == VP_OK && reorder)
        rc = vp_block_reorder(*s, cm, moved, &err);
    vp_cost_model_free(cm);
    if (rc != VP_OK)
        return block_error(&err);
    return cli_simulate(*s, o, sim);
}

/* The number of ops m microbatches of b make, refused over the limit before anything is
 * built: each microbatch runs every pass of its copy's class once. */
static int check_size(const vp_block *b, int m, const vp_spec *spec) {
    long limit = spec->max_ops > 0 ? spec->max_ops : VP_MAX_OPS_DEFAULT;
    double ops = (double)b->n / b->mb_per_copy * m;
    if (ops <= (double)limit)
        return 0;
    return cli_error(VP_EXIT_USAGE,
                     "block: m=%d makes about %.3g ops of %d passes per copy, over the limit of "
                     "%ld; raise the limit (--max-ops) if the machine has the memory",
                     m, ops, b->n, limit);
}

/* The report: JSON, or text unless -o took stdout. */
static int report(const block_args *a, const vp_block *b, int T_given, const vp_schedule *s,
                  const vp_sim *sim, const vp_block_lifespan *ls, int moved) {
    if (a->json) {
        json_t *j = json_pack("{s:o, s:o}", "simulation", cli_sim_json(s, sim, &a->spec.spec.costs),
                              "lifespan", lifespan_json(b, ls));
        json_object_set_new(j, "reorder_moves", json_integer(moved));
        int rc = cli_write_json("-", j);
        json_decref(j);
        return rc;
    }
    if (a->out && !strcmp(a->out, "-"))
        return 0;
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    print_text(out.f, b, T_given, s, sim, ls, moved);
    return cli_out_end(&out, "-");
}

/* Checks the flags that do not need the file. */
static int check_flags(block_args *a) {
    if (a->example)
        return a->path ? cli_error(VP_EXIT_USAGE, "block --example takes no FILE") : 0;
    if (!a->path)
        return cli_error(VP_EXIT_USAGE, "block needs a block file (--help shows the format)");
    if (a->spec.spec.p || a->spec.spec.v)
        return cli_error(VP_EXIT_USAGE, "block: -p and -v come from the block file");
    int rc = cli_spec_ready(&a->spec);
    return rc ? rc : a->out ? cli_probe_output(a->out) : 0;
}

static int run(void *args) {
    block_args *a = args;
    int rc = check_flags(a);
    if (rc || a->example) {
        rc = rc ? rc : print_example(a->spec.spec.p ? a->spec.spec.p : 4, &a->spec.spec.costs);
        cli_spec_release(&a->spec);
        return rc;
    }
    vp_block *b = NULL;
    int T_given = 0, moved = a->reorder ? 0 : -1;
    vp_schedule *s = NULL;
    vp_sim *sim = NULL;
    vp_block_lifespan *ls = NULL;
    rc = read_block(a->path, &a->spec, &b, &T_given);
    int m = a->spec.spec.m ? a->spec.spec.m : b ? 2 * b->p : 0;
    if (!rc)
        rc = check_size(b, m, &a->spec.spec);
    if (!rc)
        rc = build(b, m, &a->spec, a->reorder, &moved, &s, &sim, &ls);
    char *text = NULL;
    vp_error err = {0};
    if (!rc && a->out)
        rc = vp_json_write(s, &text, &err) == VP_OK ? cli_write(a->out, text, strlen(text))
                                                    : cli_lib_error(&err);
    if (!rc)
        rc = report(a, b, T_given, s, sim, ls, moved);
    free(text);
    vp_block_lifespan_free(ls);
    vp_sim_free(sim);
    vp_schedule_free(s);
    vp_block_free(b);
    cli_spec_release(&a->spec);
    return rc;
}

static const cli_use uses[] = {
    {&cli_spec_group, offsetof(block_args, spec)},
    {&cli_limit_group, offsetof(block_args, spec.spec.max_ops)},
    {&block_group, 0},
};

const cli_command cli_cmd_block = {
    .name = "block",
    .summary = "build a schedule from your own building block; lifespan report",
    .usage = "FILE [-m M] [--cost ...] [--memory-model ...] [--reorder] [-o OUT.json] [--json]\n"
             "       vpipe block --example [-p P] [--cost ...]",
    .about = "Repeats a building block (the start of every pass of one microbatch) every\n"
             "interval T, keeps each device's order and replays it eagerly (the squeeze), and\n"
             "reports makespan, bubble, peak memory per device and the block's lifespans: per\n"
             "stage the time from its F to the end of its W (or BW), and per device the bound\n"
             "sum ceil(l/T)*act, the exact steady-state occupancy and the simulated peak. FILE\n"
             "may be - for stdin. -m defaults to 2p; --cost sets the durations of passes the\n"
             "file leaves open and the costs of the simulation (default: the file's \"costs\",\n"
             "else F=B=W=1).\n",
    .epilog = block_epilog,
    CLI_USES(uses),
    .operand = "FILE",
    .operand_offset = offsetof(block_args, path),
    .args_size = sizeof(block_args),
    .init = init,
    .run = run,
};
