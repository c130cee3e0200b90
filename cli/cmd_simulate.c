/* vpipe simulate FAMILY|FILE: times, bubble and memory of one schedule. */
#include <string.h>

#include "cli.h"

static void print_text(const vp_schedule *s, const vp_sim *sim, const vp_costs *c) {
    printf("%s  p=%d  m=%d  stages=%d  placement=%s  costs F=%g B=%g W=%g c=%g\n", s->family, s->p,
           s->m, s->S, vp_placement_name(s->placement), c->f, c->b, c->w, c->c);
    printf("makespan %g   bubble %.2f%% (longest span %g)   bubble over makespan %.2f%%\n",
           sim->makespan, 100.0 * sim->bubble, vp_sim_longest_span(sim),
           100.0 * sim->bubble_makespan);
    printf("peak memory %g units (max over devices)\n\n", sim->peak_max);
    printf("device      start        end       busy  peak(units)%s\n",
           sim->peak_bytes ? "  peak(bytes)" : "");
    for (int d = 0; d < s->p; d++) {
        printf("%6d %10g %10g %10g %12g", d, sim->dev_first[d], sim->dev_last[d], sim->dev_busy[d],
               sim->peak[d]);
        if (sim->peak_bytes)
            printf(" %12.0f", sim->peak_bytes[d]);
        putchar('\n');
    }
}

static const char usage[] =
    "usage: vpipe simulate FAMILY|FILE [-p P -m M] [--cost ...] [--memory-model ...] [--json]\n\n"
    "Replays a schedule eagerly (every op as soon as its device is free and its\n"
    "inputs are ready) and reports makespan, bubble (1 - busy / longest device\n"
    "span, and over the makespan) and peak activation memory per device in\n"
    "units (one microbatch's activation of one device's whole slice).\n\n"
    "  --json                one JSON object\n";

int cmd_simulate(int argc, char **argv) {
    const char *what = NULL;
    int as_json = 0;
    cli_spec o;
    cli_spec_init(&o);
    for (int i = 1; i < argc; i++) {
        int code;
        cli_arg arg = cli_common_arg(argc, argv, &i, &o, &as_json, usage, &code);
        if (arg == CLI_ARG_EXIT)
            return code;
        if (arg == CLI_ARG_TAKEN)
            continue;
        if (!what && (argv[i][0] != '-' || !argv[i][1]))
            what = argv[i];
        else
            return cli_error(VP_EXIT_USAGE, "simulate: unexpected argument '%s'", argv[i]);
    }
    if (!what)
        return cli_error(VP_EXIT_USAGE, "simulate needs a family or a file (--help)");
    vp_schedule *s;
    int rc = cli_obtain_schedule(what, &o, &s);
    if (rc)
        return rc;
    vp_sim *sim;
    rc = cli_simulate(s, &o, NULL, &sim);
    if (!rc) {
        if (as_json) {
            json_t *j = cli_sim_json(s, sim, &o.spec.costs);
            cli_print_json(stdout, j);
            json_decref(j);
        } else {
            print_text(s, sim, &o.spec.costs);
        }
    }
    vp_sim_free(sim);
    vp_schedule_free(s);
    return rc;
}
