/* vpipe render FAMILY|FILE: terminal timeline, SVG picture or Chrome trace. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "vpipe/render.h"

typedef struct render_args {
    cli_spec spec;
    cli_real real;
    const char *what, *svg, *trace, *title;
    bool ascii, fit, color, no_color;
    int width;
} render_args;

static const cli_opt render_opts[] = {
    {.name = "ascii",
     .kind = CLI_FLAG,
     .offset = offsetof(render_args, ascii),
     .help = "terminal timeline to stdout: one row per device, each op as\n"
             "kind + microbatch (lowercase: odd chunk), '.' idle, then the\n"
             "legend, bubble and peak memory"},
    {.name = "svg",
     .kind = CLI_STRING,
     .offset = offsetof(render_args, svg),
     .arg = "OUT",
     .help = "SVG picture ('-' for stdout): lanes, memory curves, time axis"},
    {.name = "trace",
     .kind = CLI_STRING,
     .offset = offsetof(render_args, trace),
     .arg = "OUT",
     .help = "Chrome trace JSON for Perfetto / chrome://tracing"},
    {.name = "width",
     .kind = CLI_INT,
     .offset = offsetof(render_args, width),
     .arg = "N",
     .lo = 20,
     .hi = 100000,
     .help = "terminal columns (default 100) or SVG plot width in pixels\n"
             "(default: wide enough for every op to show its number)"},
    {.name = "fit",
     .kind = CLI_FLAG,
     .offset = offsetof(render_args, fit),
     .help = "terminal: scale time into one band instead of wrapping"},
    {.name = "color",
     .kind = CLI_FLAG,
     .offset = offsetof(render_args, color),
     .help = "terminal colours (default: when stdout is a terminal and\n"
             "NO_COLOR is unset)"},
    {.name = "no-color",
     .kind = CLI_FLAG,
     .offset = offsetof(render_args, no_color),
     .help = "no terminal colours"},
    {.name = "title",
     .kind = CLI_STRING,
     .offset = offsetof(render_args, title),
     .arg = "TEXT",
     .help = "replace the generated title"},
};
static const cli_group render_group = CLI_GROUP("drawing", render_opts);

static void init(void *args) {
    cli_spec_init(&((render_args *)args)->spec);
    cli_real_init(&((render_args *)args)->real);
}

/* The outputs asked for, checked before anything is drawn. */
static int check_outputs(render_args *a) {
    if (!a->what)
        return cli_error(VP_EXIT_USAGE, "render needs a family or a file (--help)");
    if (a->color && a->no_color)
        return cli_error(VP_EXIT_USAGE, "give --color or --no-color, not both");
    if ((a->svg && !strcmp(a->svg, "-")) + (a->trace && !strcmp(a->trace, "-")) + a->ascii > 1)
        return cli_error(VP_EXIT_USAGE, "render: only one output can go to stdout");
    if (!a->svg && !a->trace)
        a->ascii = true;
    int rc = a->svg ? cli_probe_output(a->svg) : 0;
    return rc ? rc : a->trace ? cli_probe_output(a->trace) : 0;
}

/* Draws tl with the renderer of kind ('a'scii, 's'vg, 't'race) and writes it to path;
 * costs are what the title shows. */
static int draw(const render_args *a, const vp_timeline *tl, const vp_costs *costs, char kind,
                const char *path) {
    vp_render_opts ro = {.costs = costs, .title = a->title, .width = a->width, .fit = a->fit};
    ro.color =
        kind == 'a' && !a->no_color && (a->color || (isatty(STDOUT_FILENO) && !getenv("NO_COLOR")));
    vp_error err = {0};
    char *text = NULL;
    vp_status st = kind == 'a'   ? vp_render_ascii(tl, &ro, &text, &err)
                   : kind == 's' ? vp_render_svg(tl, &ro, &text, &err)
                                 : vp_render_trace(tl, &text, &err);
    int rc = st != VP_OK ? cli_lib_error(&err) : cli_write(path, text, strlen(text));
    free(text);
    return rc;
}

/* The schedule and its simulation: built or read and simulated, or with --model priced
 * (*sim then borrowed from *priced, times in ms). */
static int obtain(const render_args *a, vp_schedule **s, vp_sim **sim, vp_price_result **priced) {
    if (!a->real.on) {
        int rc = cli_obtain_schedule(a->what, &a->spec, s);
        return rc ? rc : cli_simulate(*s, &a->spec, sim);
    }
    int rc = cli_price(a->what, &a->spec, &a->real, priced, s);
    *sim = rc ? NULL : (*priced)->sim;
    return rc;
}

static int run(void *args) {
    render_args *a = args;
    vp_schedule *s = NULL;
    vp_sim *sim = NULL;
    vp_price_result *priced = NULL;
    vp_timeline *tl = NULL;
    vp_error err = {0};
    int rc = check_outputs(a);
    if (!rc)
        rc = cli_spec_ready(&a->spec);
    if (!rc)
        rc = cli_real_ready(&a->real, &a->spec);
    if (!rc)
        rc = obtain(a, &s, &sim, &priced);
    if (!rc && vp_timeline_from_sim(s, sim, &tl, &err) != VP_OK)
        rc = cli_lib_error(&err);
    const vp_costs *costs = priced ? &priced->costs : &a->spec.spec.costs;
    if (!rc && a->ascii)
        rc = draw(a, tl, costs, 'a', "-");
    if (!rc && a->svg)
        rc = draw(a, tl, costs, 's', a->svg);
    if (!rc && a->trace)
        rc = draw(a, tl, costs, 't', a->trace);
    vp_timeline_free(tl);
    if (priced)
        vp_price_result_free(priced);
    else
        vp_sim_free(sim);
    vp_schedule_free(s);
    cli_real_release(&a->real);
    cli_spec_release(&a->spec);
    return rc;
}

static const cli_use uses[] = {
    {&cli_spec_group, offsetof(render_args, spec)},
    {&cli_limit_group, offsetof(render_args, spec.spec.max_ops)},
    {&cli_recompute_group, offsetof(render_args, spec.recompute)},
    {&cli_real_group, offsetof(render_args, real)},
    {&cli_split_group, offsetof(render_args, real.split)},
    {&render_group, 0},
};

const cli_command cli_cmd_render = {
    .name = "render",
    .summary = "draw a schedule: terminal timeline, SVG, Chrome trace",
    .usage = "FAMILY|FILE [-p P -m M ...] [--ascii] [--svg OUT] [--trace OUT]\n"
             "                    [--width N] [--fit] [--color|--no-color] [--title TEXT]",
    .about = "Simulates a schedule (a family built from -p/-m/..., or a vpipe JSON or PyTorch\n"
             "CSV file) and draws it. Without an output flag, draws the terminal timeline.\n"
             "With --model, the schedule is priced for a real model first: times in ms,\n"
             "memory curves in bytes.\n",
    CLI_USES(uses),
    .operand = "FAMILY|FILE",
    .operand_offset = offsetof(render_args, what),
    .args_size = sizeof(render_args),
    .init = init,
    .run = run,
};
