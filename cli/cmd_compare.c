/* vpipe compare: every family simulated for the same p, m and costs. */
#include <string.h>

#include "cli.h"

int cmd_compare(int argc, char **argv) {
    int as_json = 0;
    cli_spec o;
    cli_spec_init(&o);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: vpipe compare -p P -m M [--cost ...] [--memory-model ...] [--json]\n\n"
                   "Builds and simulates every family (vpipe list) for the same p, m and costs\n"
                   "and prints them side by side. Families whose constraints the shape does not\n"
                   "meet are listed with the reason.\n\n"
                   "  --json                an array of the objects `simulate --json` prints\n%s",
                   cli_spec_help);
            return VP_EXIT_OK;
        }
        int r = cli_spec_flag(argc, argv, &i, &o);
        if (r < 0)
            return VP_EXIT_USAGE;
        if (r)
            continue;
        if (!strcmp(argv[i], "--json"))
            as_json = 1;
        else
            return cli_error(VP_EXIT_USAGE, "compare: unexpected argument '%s'", argv[i]);
    }
    if (!o.have_p || !o.have_m)
        return cli_error(VP_EXIT_USAGE, "compare needs -p and -m");
    json_t *arr = json_array();
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
    json_decref(arr);
    return rc;
}
