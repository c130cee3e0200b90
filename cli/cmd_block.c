/* vpipe block FILE: build a schedule from a user's building block and report its
 * timing, memory and lifespans. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vpipe/block.h"
#include "vpipe/io.h"

static const char block_help[] =
    "usage: vpipe block FILE [-m M] [--cost ...] [--memory-model ...] [--reorder]\n"
    "                   [-o OUT.json] [--json]\n"
    "       vpipe block --example [-p P] [--cost ...]\n\n"
    "Repeats a building block (the start of every pass of one microbatch) every interval T,\n"
    "keeps each device's order and replays it eagerly (the squeeze), and reports makespan,\n"
    "bubble, peak memory per device and the block's lifespans: per stage the time from its\n"
    "F to the end of its W (or BW), and per device the bound sum ceil(l/T)*act, the exact\n"
    "steady-state occupancy and the simulated peak. FILE may be - for stdin.\n\n"
    "  -m M                  microbatches (default 2p)\n"
    "  --cost ...            durations of passes the file leaves open, and the costs of\n"
    "                        the simulation (default: the file's \"costs\", else F=B=W=1)\n"
    "  --memory-model at-w|zb:R   memory accounting (default at-w)\n"
    "  --reorder             move passes into idle gaps without raising any peak\n"
    "  -o OUT.json           write the schedule (vpipe JSON; - for stdout)\n"
    "  --json                print the report as one JSON object\n"
    "  --example             print the 1F1B block for -p P (default 4) as a starting point\n\n"
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
    if (vp_block_new(p, p, VP_PLACE_SINGLE, &shape, &err) == VP_OK &&
        vp_block_cost_model(shape, costs, &mem, &cm, &err) == VP_OK)
        vp_block_1f1b(p, cm, 0, &b, &err);
    char *text = NULL;
    if (b)
        vp_block_write_json(b, costs, &text, &err);
    int rc = VP_EXIT_OK;
    if (text)
        fputs(text, stdout);
    else
        rc = err.message[0] ? cli_lib_error(&err) : cli_error(VP_EXIT_FAILURE, "out of memory");
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

static void print_text(const vp_block *b, int T_given, const vp_schedule *s, const vp_sim *sim,
                       const vp_block_lifespan *ls, int moved) {
    printf("block  p=%d  stages=%d  placement=%s  mb_per_copy=%d  passes=%d\n", b->p, b->S,
           vp_placement_name(b->placement), b->mb_per_copy, b->n);
    printf("interval T=%g%s\n", b->T, T_given ? "" : " (smallest collision-free)");
    printf("schedule  m=%d  makespan %g  bubble %.2f%% (longest span %g)  over makespan %.2f%%",
           s->m, sim->makespan, 100.0 * sim->bubble, vp_sim_longest_span(sim),
           100.0 * sim->bubble_makespan);
    if (moved >= 0)
        printf("  reorder moves %d", moved);
    printf("\n\ndevice      start        end       busy    peak   bound  steady\n");
    for (int d = 0; d < s->p; d++)
        printf("%6d %10g %10g %10g %7g %7g %7g\n", d, sim->dev_first[d], sim->dev_last[d],
               sim->dev_busy[d], sim->peak[d], ls->bound[d], ls->steady[d]);
    printf("\nstage  device   lifespan  ceil(l/T)\n");
    for (int st = 0; st < b->S; st++)
        printf("%5d %7d %10g %10g\n", st, b->stage_device[st], ls->life[st],
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
static int read_block(const char *path, const cli_spec *o, int have_cost, vp_costs *used,
                      vp_block **out, int *T_given) {
    vp_error err = {0};
    char *text = NULL;
    size_t len = 0;
    if (vp_read_file(path, 0, &text, &len, &err) != VP_OK)
        return cli_lib_error(&err);
    vp_status rc =
        vp_block_read_json(text, len, have_cost ? &o->spec.costs : NULL, used, out, &err);
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
static int build(const vp_block *b, int m, cli_spec *o, int reorder, int *moved, vp_schedule **s,
                 vp_sim **sim, vp_block_lifespan **ls) {
    vp_error err = {0};
    vp_cost_model *cm = NULL;
    vp_status rc = vp_block_repeat(b, m, "block", s, &err);
    if (rc == VP_OK && vp_schedule_validate(*s, &err) != VP_OK)
        return cli_error(VP_EXIT_INPUT, "the block's timing breaks a dependency: %s", err.message);
    if (rc == VP_OK) {
        rc = vp_block_cost_model(b, &o->spec.costs, &o->spec.mem, &cm, &err);
    }
    if (rc == VP_OK)
        rc = vp_block_lifespan_new(b, cm, m, ls, &err);
    if (rc == VP_OK && reorder)
        rc = vp_block_reorder(*s, cm, moved, &err);
    vp_cost_model_free(cm);
    if (rc != VP_OK)
        return block_error(&err);
    return cli_simulate(*s, o, NULL, sim);
}

int cmd_block(int argc, char **argv) {
    const char *path = NULL, *out_path = NULL;
    int as_json = 0, reorder = 0, example = 0, have_cost = 0;
    cli_spec o;
    cli_spec_init(&o);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cost"))
            have_cost = 1;
        int code;
        cli_arg arg = cli_common_arg(argc, argv, &i, &o, &as_json, block_help, &code);
        if (arg == CLI_ARG_EXIT)
            return code;
        if (arg == CLI_ARG_TAKEN)
            continue;
        if (!strcmp(argv[i], "--reorder"))
            reorder = 1;
        else if (!strcmp(argv[i], "--example"))
            example = 1;
        else if (!strcmp(argv[i], "-o")) {
            if (!(out_path = cli_flag_value(argc, argv, &i)))
                return VP_EXIT_USAGE;
        } else if (!path && (argv[i][0] != '-' || !argv[i][1]))
            path = argv[i];
        else
            return cli_error(VP_EXIT_USAGE, "block: unexpected argument '%s'", argv[i]);
    }
    if (example)
        return path ? cli_error(VP_EXIT_USAGE, "block --example takes no FILE")
                    : print_example(o.have_p ? o.spec.p : 4, &o.spec.costs);
    if (!path)
        return cli_error(VP_EXIT_USAGE, "block needs a block file (--help shows the format)");
    if (o.have_p || o.spec.v)
        return cli_error(VP_EXIT_USAGE, "block: -p and -v come from the block file");
    vp_block *b = NULL;
    int T_given = 0;
    int rc = read_block(path, &o, have_cost, &o.spec.costs, &b, &T_given);
    if (rc)
        return rc;
    int m = o.have_m ? o.spec.m : 2 * b->p;
    int moved = reorder ? 0 : -1;
    vp_schedule *s = NULL;
    vp_sim *sim = NULL;
    vp_block_lifespan *ls = NULL;
    rc = build(b, m, &o, reorder, &moved, &s, &sim, &ls);
    if (!rc && out_path) {
        char *text = NULL;
        vp_error err = {0};
        FILE *f = vp_json_write(s, &text, &err) == VP_OK ? cli_open_out(out_path) : NULL;
        if (!text)
            rc = cli_lib_error(&err);
        else if (!f)
            rc = VP_EXIT_FAILURE;
        else {
            fputs(text, f);
            cli_close_out(f);
        }
        free(text);
    }
    if (!rc && as_json) {
        json_t *j = json_pack("{s:o, s:o}", "simulation", cli_sim_json(s, sim, &o.spec.costs),
                              "lifespan", lifespan_json(b, ls));
        json_object_set_new(j, "reorder_moves", json_integer(moved));
        cli_print_json(stdout, j);
        json_decref(j);
    } else if (!rc && (!out_path || strcmp(out_path, "-"))) {
        print_text(b, T_given, s, sim, ls, moved);
    }
    vp_block_lifespan_free(ls);
    vp_sim_free(sim);
    vp_schedule_free(s);
    vp_block_free(b);
    return rc;
}
