/* vpipe render FAMILY|FILE: terminal timeline, SVG picture or Chrome trace. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "vpipe/render.h"

static const char help[] =
    "usage: vpipe render FAMILY|FILE [-p P -m M ...] [--ascii] [--svg OUT] [--trace OUT]\n"
    "                    [--width N] [--fit] [--color|--no-color] [--title TEXT]\n\n"
    "Simulates a schedule (a family built from -p/-m/..., or a vpipe JSON or PyTorch CSV\n"
    "file) and draws it. Without an output flag, draws the terminal timeline.\n\n"
    "  --ascii               terminal timeline to stdout: one row per device, each op as\n"
    "                        kind + microbatch (lowercase: odd chunk), '.' idle, then the\n"
    "                        legend, bubble and peak memory\n"
    "  --svg OUT             SVG picture ('-' for stdout): lanes, memory curves, time axis\n"
    "  --trace OUT           Chrome trace JSON for Perfetto / chrome://tracing\n"
    "  --width N             terminal columns (default 100) or SVG plot width in pixels\n"
    "                        (default: wide enough for every op to show its number)\n"
    "  --fit                 terminal: scale time into one band instead of wrapping\n"
    "  --color, --no-color   terminal colours (default: when stdout is a terminal and\n"
    "                        NO_COLOR is unset)\n"
    "  --title TEXT          replace the generated title\n";

typedef struct render_args {
    const char *what, *svg, *trace, *title;
    int ascii, fit, color; /* color: -1 auto */
    long width;
} render_args;

static int parse(int argc, char **argv, render_args *a, cli_spec *o) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        int r = cli_spec_flag(argc, argv, &i, o);
        if (r < 0)
            return -r;
        if (r)
            continue;
        if (!strcmp(f, "--ascii")) {
            a->ascii = 1;
        } else if (!strcmp(f, "--fit")) {
            a->fit = 1;
        } else if (!strcmp(f, "--color") || !strcmp(f, "--no-color")) {
            a->color = f[2] == 'c';
        } else if (!strcmp(f, "--svg") || !strcmp(f, "--trace") || !strcmp(f, "--title")) {
            const char *v = cli_flag_value(argc, argv, &i);
            if (!v)
                return VP_EXIT_USAGE;
            if (!strcmp(f, "--svg"))
                a->svg = v;
            else if (!strcmp(f, "--trace"))
                a->trace = v;
            else
                a->title = v;
        } else if (!strcmp(f, "--width")) {
            const char *v = cli_flag_value(argc, argv, &i);
            if (!v || cli_parse_int(f, v, 20, 100000, &a->width))
                return VP_EXIT_USAGE;
        } else if (!a->what && (f[0] != '-' || !f[1])) {
            a->what = f;
        } else {
            return cli_error(VP_EXIT_USAGE, "render: unexpected argument '%s'", f);
        }
    }
    if (!a->what)
        return cli_error(VP_EXIT_USAGE, "render needs a family or a file (--help)");
    if ((a->svg && !strcmp(a->svg, "-")) + (a->trace && !strcmp(a->trace, "-")) + a->ascii > 1)
        return cli_error(VP_EXIT_USAGE, "render: only one output can go to stdout");
    if (!a->svg && !a->trace)
        a->ascii = 1;
    return 0;
}

/* Writes one output with fn; path "-" is stdout. */
static int emit(const char *path, const vp_timeline *tl, const vp_render_opts *ro,
                vp_status (*fn)(FILE *, const vp_timeline *, const vp_render_opts *, vp_error *)) {
    FILE *f = cli_open_out(path);
    if (!f)
        return VP_EXIT_FAILURE;
    vp_error err = {0};
    vp_status st = fn(f, tl, ro, &err);
    cli_close_out(f);
    return st ? cli_lib_error(&err) : 0;
}

static vp_status trace_fn(FILE *f, const vp_timeline *tl, const vp_render_opts *ro, vp_error *err) {
    (void)ro;
    return vp_render_trace(f, tl, err);
}

int cmd_render(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help")) {
            printf("%s%s", help, cli_spec_help);
            return VP_EXIT_OK;
        }
    render_args a = {.color = -1};
    cli_spec o;
    cli_spec_init(&o);
    int rc = parse(argc, argv, &a, &o);
    if (rc)
        return rc;
    vp_schedule *s;
    if ((rc = cli_obtain_schedule(a.what, &o, &s)))
        return rc;
    vp_sim *sim = NULL;
    vp_timeline *tl = NULL;
    vp_error err = {0};
    rc = cli_simulate(s, &o, NULL, &sim);
    if (!rc && vp_timeline_from_sim(s, sim, &tl, &err))
        rc = cli_lib_error(&err);
    vp_render_opts ro = {
        .costs = &o.spec.costs, .title = a.title, .width = (int)a.width, .fit = a.fit};
    if (!rc && a.ascii) {
        ro.color = a.color >= 0 ? a.color : isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
        rc = emit("-", tl, &ro, vp_render_ascii);
    }
    if (!rc && a.svg) {
        ro.color = 0;
        rc = emit(a.svg, tl, &ro, vp_render_svg);
    }
    if (!rc && a.trace)
        rc = emit(a.trace, tl, &ro, trace_fn);
    vp_timeline_free(tl);
    vp_sim_free(sim);
    vp_schedule_free(s);
    return rc;
}
