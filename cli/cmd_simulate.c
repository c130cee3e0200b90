/* vpipe simulate FAMILY|FILE: times, bubble and memory of one schedule. */
#include <stddef.h>

#include "cli.h"

typedef struct simulate_args {
    cli_spec spec;
    const char *what;
    bool json;
} simulate_args;

static const cli_opt simulate_opts[] = {
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(simulate_args, json),
     .help = "one JSON object"},
};
static const cli_group simulate_group = CLI_GROUP("output", simulate_opts);

static void init(void *args) {
    cli_spec_init(&((simulate_args *)args)->spec);
}

static void print_text(FILE *out, const vp_schedule *s, const vp_sim *sim, const vp_costs *c) {
    char costs[128];
    fprintf(out, "%s  p=%d  m=%d  stages=%d  placement=%s  costs %s", s->family, s->p, s->m, s->S,
            vp_placement_name(s->placement), cli_costs_text(c, costs, sizeof costs));
    if (s->recompute != VP_RECOMPUTE_NONE)
        fprintf(out, "  recompute %s", vp_recompute_name(s->recompute));
    fputc('\n', out);
    fprintf(out, "makespan %g   bubble %.2f%% (longest span %g)   bubble over makespan %.2f%%\n",
            sim->makespan, 100.0 * sim->bubble, vp_sim_longest_span(sim),
            100.0 * sim->bubble_makespan);
    fprintf(out, "peak memory %g units (max over devices)\n\n", sim->peak_max);
    fprintf(out, "device      start        end       busy  peak(units)%s\n",
            sim->peak_bytes ? "  peak(bytes)" : "");
    for (int d = 0; d < s->p; d++) {
        fprintf(out, "%6d %10g %10g %10g %12g", d, sim->dev_first[d], sim->dev_last[d],
                sim->dev_busy[d], sim->peak[d]);
        if (sim->peak_bytes)
            fprintf(out, " %12.0f", sim->peak_bytes[d]);
        fputc('\n', out);
    }
}

/* The report on stdout: text or JSON. */
static int report(const simulate_args *a, const vp_schedule *s, const vp_sim *sim) {
    if (a->json) {
        json_t *j = cli_sim_json(s, sim, &a->spec.spec.costs);
        int rc = cli_write_json("-", j);
        json_decref(j);
        return rc;
    }
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    print_text(out.f, s, sim, &a->spec.spec.costs);
    return cli_out_end(&out, "-");
}

static int run(void *args) {
    simulate_args *a = args;
    if (!a->what)
        return cli_error(VP_EXIT_USAGE, "simulate needs a family or a file (--help)");
    vp_schedule *s = NULL;
    vp_sim *sim = NULL;
    int rc = cli_spec_ready(&a->spec);
    if (!rc)
        rc = cli_obtain_schedule(a->what, &a->spec, &s);
    if (!rc)
        rc = cli_simulate(s, &a->spec, &sim);
    if (!rc)
        rc = report(a, s, sim);
    vp_sim_free(sim);
    vp_schedule_free(s);
    cli_spec_release(&a->spec);
    return rc;
}

static const cli_use uses[] = {
    {&cli_spec_group, offsetof(simulate_args, spec)},
    {&cli_limit_group, offsetof(simulate_args, spec.spec.max_ops)},
    {&cli_recompute_group, offsetof(simulate_args, spec.spec.recompute)},
    {&simulate_group, 0},
};

const cli_command cli_cmd_simulate = {
    .name = "simulate",
    .summary = "simulate a family or a schedule file: times, bubble, memory",
    .usage = "FAMILY|FILE [-p P -m M] [--cost ...] [--memory-model ...] [--json]",
    .about = "Replays a schedule eagerly (every op as soon as its device is free and its\n"
             "inputs are ready) and reports makespan, bubble (1 - busy / longest device\n"
             "span, and over the makespan) and peak activation memory per device in\n"
             "units (one microbatch's activation of one device's whole slice).\n",
    CLI_USES(uses),
    .operand = "FAMILY|FILE",
    .operand_offset = offsetof(simulate_args, what),
    .args_size = sizeof(simulate_args),
    .init = init,
    .run = run,
};
