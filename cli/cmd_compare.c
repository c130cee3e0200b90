/* vpipe compare: every family simulated for the same p, m and costs. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vpipe/render.h"

/* Draws the simulated timelines as one gallery on a shared time scale. */
static int write_gallery(const char *path, vp_timeline **tls, int n, const vp_costs *costs) {
    vp_error err = {0};
    vp_render_opts ro = {.costs = costs};
    FILE *f = cli_open_out(path);
    if (!f)
        return VP_EXIT_INPUT;
    vp_status rc = vp_render_svg_gallery(f, (const vp_timeline *const *)tls, n, &ro, &err);
    cli_close_out(f);
    return rc == VP_OK ? 0 : cli_lib_error(&err);
}

static const char usage[] =
    "usage: vpipe compare -p P -m M [--cost ...] [--memory-model ...] [--json] [--svg FILE]\n\n"
    "Builds and simulates every family (vpipe list) for the same p, m and costs\n"
    "and prints them side by side. Families whose constraints the shape does not\n"
    "meet are listed with the reason.\n\n"
    "  --json                an array of the objects `simulate --json` prints\n"
    "  --svg FILE            draw every family on one time scale\n";

int cmd_compare(int argc, char **argv) {
    int as_json = 0;
    const char *svg = NULL;
    cli_spec o;
    cli_spec_init(&o);
    for (int i = 1; i < argc; i++) {
        int code;
        cli_arg arg = cli_common_arg(argc, argv, &i, &o, &as_json, usage, &code);
        if (arg == CLI_ARG_EXIT)
            return code;
        if (arg == CLI_ARG_TAKEN)
            continue;
        if (!strcmp(argv[i], "--svg")) {
            if (!(svg = cli_flag_value(argc, argv, &i)))
                return VP_EXIT_USAGE;
        } else
            return cli_error(VP_EXIT_USAGE, "compare: unexpected argument '%s'", argv[i]);
    }
    if (!o.have_p || !o.have_m)
        return cli_error(VP_EXIT_USAGE, "compare needs -p and -m");
    json_t *arr = json_array();
    vp_timeline **tls = vp_family_count() ? calloc((size_t)vp_family_count(), sizeof *tls) : NULL;
    int ntl = 0;
    if (!as_json)
        printf("p=%d m=%d  costs F=%g B=%g W=%g c=%g\n\n%-12s %10s %9s %10s %8s %8s\n", o.spec.p,
               o.spec.m, o.spec.costs.f, o.spec.costs.b, o.spec.costs.w, o.spec.costs.c, "family",
               "makespan", "bubble", "bubble/ms", "peak", "min-peak");
    int rc = 0;
    for (int i = 0; i < vp_family_count() && !rc; i++) {
        const vp_family *f = vp_family_at(i);
        vp_schedule *s;
        vp_error err = {0};
        if (vp_family_build(f->name, &o.spec, &s, &err) != VP_OK) {
            if (err.status == VP_ENOMEM)
                rc = cli_lib_error(&err);
            else if (!as_json)
                printf("%-12s (skipped: %s)\n", f->name, err.message);
            continue;
        }
        vp_sim *sim;
        rc = cli_simulate(s, &o, NULL, &sim);
        if (!rc && svg) {
            if (vp_timeline_from_sim(s, sim, &tls[ntl], &err) != VP_OK)
                rc = cli_lib_error(&err);
            else
                ntl++;
        }
        if (!rc) {
            if (as_json) {
                json_array_append_new(arr, cli_sim_json(s, sim, &o.spec.costs));
            } else {
                double lo = sim->peak[0];
                for (int d = 1; d < sim->p; d++)
                    lo = sim->peak[d] < lo ? sim->peak[d] : lo;
                printf("%-12s %10g %8.2f%% %9.2f%% %8g %8g\n", f->name, sim->makespan,
                       100.0 * sim->bubble, 100.0 * sim->bubble_makespan, sim->peak_max, lo);
            }
            vp_sim_free(sim);
        }
        vp_schedule_free(s);
    }
    if (as_json && !rc)
        cli_print_json(stdout, arr);
    if (svg && !rc)
        rc = ntl ? write_gallery(svg, tls, ntl, &o.spec.costs)
                 : cli_error(VP_EXIT_USAGE, "no family fits p=%d, m=%d", o.spec.p, o.spec.m);
    for (int i = 0; i < ntl; i++)
        vp_timeline_free(tls[i]);
    free(tls);
    json_decref(arr);
    return rc;
}
