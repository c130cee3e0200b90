/* vpipe simulate FAMILY|FILE: times, bubble and memory of one schedule. */
#include <stddef.h>

#include "cli.h"

typedef struct simulate_args {
    cli_spec spec;
    cli_real real;
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
    cli_real_init(&((simulate_args *)args)->real);
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

/* The report on stdout: text or JSON, of the simulation, or with --model of the pricing. */
static int report(const simulate_args *a, const vp_schedule *s, const vp_sim *sim,
                  const vp_price_result *priced) {
    if (a->json) {
        if (!priced) {
            char *text = NULL;
            vp_error err = {0};
            vp_status st = vp_sim_json(s, sim, &a->spec.spec.costs, &text, &err);
            return cli_write_result("-", st, text, &err);
        }
        json_t *j = cli_price_json(s, priced);
        int rc = cli_write_json("-", j);
        json_decref(j);
        return rc;
    }
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    vp_workload shown = a->real.work;
    if (s->recompute != VP_RECOMPUTE_NONE) /* priced in its R passes (vp_workload) */
        shown.recompute = s->recompute;
    if (priced)
        cli_price_text(out.f, priced, &shown, a->real.setup.measured != NULL);
    else
        print_text(out.f, s, sim, &a->spec.spec.costs);
    return cli_out_end(&out, "-");
}

static int run(void *args) {
    simulate_args *a = args;
    if (!a->what)
        return cli_error(VP_EXIT_USAGE, "simulate needs a family or a file (--help)");
    vp_schedule *s = NULL;
    vp_sim *sim = NULL;
    vp_price_result *priced = NULL;
    int rc = cli_spec_ready(&a->spec);
    if (!rc)
        rc = cli_real_ready(&a->real, &a->spec);
    if (!rc && a->real.on) {
        rc = cli_price(a->what, &a->spec, &a->real, &priced, &s);
        if (!rc)
            rc = report(a, s, NULL, priced);
    } else if (!rc) {
        rc = cli_obtain_schedule(a->what, &a->spec, &s);
        if (!rc)
            rc = cli_simulate(s, &a->spec, &sim);
        if (!rc)
            rc = report(a, s, sim, NULL);
    }
    vp_price_result_free(priced);
    vp_sim_free(sim);
    vp_schedule_free(s);
    cli_real_release(&a->real);
    cli_spec_release(&a->spec);
    return rc;
}

static const cli_use uses[] = {
    {&cli_spec_group, offsetof(simulate_args, spec)},
    {&cli_limit_group, offsetof(simulate_args, spec.spec.max_ops)},
    {&cli_recompute_group, offsetof(simulate_args, spec.recompute)},
    {&cli_real_group, offsetof(simulate_args, real)},
    {&cli_split_group, offsetof(simulate_args, real.split)},
    {&simulate_group, 0},
};

const cli_command cli_cmd_simulate = {
    .name = "simulate",
    .summary = "simulate a family or a schedule file: times, bubble, memory",
    .usage = "FAMILY|FILE [-p P -m M] [--cost ...] [--memory-model ...] [--json]\n"
             "                      [--model NAME|FILE --gpu NAME|FILE --seq S --mbs B ...]",
    .about = "Replays a schedule eagerly (every op as soon as its device is free and its\n"
             "inputs are ready) and reports makespan, bubble (1 - busy / longest device\n"
             "span, and over the makespan) and peak activation memory per device in\n"
             "units (one microbatch's activation of one device's whole slice).\n\n"
             "With --model, prices it for a real model on a real accelerator: every\n"
             "rank's memory (parameters, gradients, optimizer states, the schedule's peak\n"
             "of activations, pipeline buffers, workspace, reserve) in GiB, whether it\n"
             "fits, and the step time in seconds with MFU and throughput. --json then adds\n"
             "step_time_s, mfu, samples_per_s_per_gpu, tokens_per_s, memory_per_rank\n"
             "(bytes), memory_max_bytes, fits, layers_per_stage and per_stage.\n",
    CLI_USES(uses),
    .operand = "FAMILY|FILE",
    .operand_offset = offsetof(simulate_args, what),
    .args_size = sizeof(simulate_args),
    .init = init,
    .run = run,
};
