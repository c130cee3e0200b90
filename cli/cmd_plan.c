/* vpipe plan: the fastest schedule within a memory budget, and the memory/bubble frontier. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vpipe/plan.h"

typedef struct plan_args {
    cli_spec spec;
    const char *budget, *out;
    bool json;
} plan_args;

static const cli_opt plan_opts[] = {
    {.name = "memory",
     .kind = CLI_STRING,
     .offset = offsetof(plan_args, budget),
     .arg = "X",
     .help = "the budget: a fraction of 1F1B's peak (0.5), units (4u: one\n"
             "microbatch's activation of a device's whole slice), or bytes\n"
             "(123456b, when the memory model knows the unit's size)"},
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(plan_args, json),
     .help = "one object: the chosen schedule's `simulate --json` fields,\n"
             "plus budget, reason, param_copies, frontier, candidates"},
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(plan_args, out),
     .arg = "FILE",
     .help = "also write the chosen schedule as vpipe JSON (-o - writes it\n"
             "to stdout instead of the report)"},
};
static const cli_group plan_group = CLI_GROUP("plan", plan_opts);

static void init(void *args) {
    cli_spec_init(&((plan_args *)args)->spec);
}

/* A candidate as JSON (memory in units; bytes too when known). */
static json_t *cand_json(const vp_plan_candidate *c) {
    json_t *o = json_object();
    json_object_set_new(o, "family", json_string(c->family));
    json_object_set_new(o, "params", json_string(c->params));
    json_object_set_new(o, "memory", json_real(c->peak));
    if (c->peak_bytes > 0)
        json_object_set_new(o, "memory_bytes", json_real(c->peak_bytes));
    json_object_set_new(o, "bubble", json_real(c->bubble));
    json_object_set_new(o, "makespan", json_real(c->makespan));
    json_object_set_new(o, "fits", json_boolean(c->fits));
    return o;
}

static int print_json(const vp_plan *plan, const vp_sim *sim, const cli_spec *o) {
    json_t *j = cli_sim_json(plan->schedule, sim, &o->spec.costs);
    json_object_set_new(j, "budget", json_real(plan->budget));
    json_object_set_new(j, "budget_unit", json_string(plan->budget_in_bytes ? "bytes" : "units"));
    json_object_set_new(j, "ref_peak_1f1b", json_real(plan->ref_peak));
    json_object_set_new(j, "param_copies", json_integer(vp_schedule_param_copies(plan->schedule)));
    json_object_set_new(j, "params", json_string(plan->candidates[plan->chosen].params));
    json_object_set_new(j, "reason", json_string(plan->reason));
    json_object_set_new(j, "blocks_tried", json_integer(plan->blocks_tried));
    json_object_set_new(j, "blocks_built", json_integer(plan->blocks_built));
    json_t *front = json_array(), *cands = json_array();
    for (int i = 0; i < plan->n_frontier; i++)
        json_array_append_new(front, cand_json(&plan->candidates[plan->frontier[i]]));
    for (int i = 0; i < plan->n_candidates; i++)
        json_array_append_new(cands, cand_json(&plan->candidates[i]));
    json_object_set_new(j, "frontier", front);
    json_object_set_new(j, "candidates", cands);
    int rc = cli_write_json("-", j);
    json_decref(j);
    return rc;
}

static void print_text(FILE *out, const vp_plan *plan, const vp_sim *sim, const cli_spec *o) {
    const vp_plan_candidate *win = &plan->candidates[plan->chosen];
    char costs[128];
    fprintf(out, "plan p=%d m=%d  costs %s  budget %g %s", o->spec.p, o->spec.m,
            cli_costs_text(&o->spec.costs, costs, sizeof costs), plan->budget,
            plan->budget_in_bytes ? "bytes" : "units");
    if (!plan->budget_in_bytes && plan->ref_peak > 0)
        fprintf(out, " (%.3g of 1F1B's %g)", plan->budget / plan->ref_peak, plan->ref_peak);
    fprintf(out, "\n\nchosen: %s%s%s\n", win->family, win->params[0] ? " " : "", win->params);
    fprintf(out, "  makespan %g   bubble %.2f%%   peak memory %g units", sim->makespan,
            100.0 * sim->bubble, sim->peak_max);
    if (vp_schedule_param_copies(plan->schedule) > 1)
        fprintf(out, "   (%d parameter copies)", vp_schedule_param_copies(plan->schedule));
    fprintf(out, "\n  why: %s\n\nfrontier (memory -> makespan):\n", plan->reason);
    fprintf(out, "  %8s %10s %8s  %s\n", "memory", "makespan", "bubble", "schedule");
    for (int i = 0; i < plan->n_frontier; i++) {
        const vp_plan_candidate *f = &plan->candidates[plan->frontier[i]];
        fprintf(out, "  %8g %10g %7.2f%%  %s%s%s%s\n", f->peak, f->makespan, 100.0 * f->bubble,
                f->family, f->params[0] ? " " : "", f->params, f == win ? "   <- chosen" : "");
    }
    fprintf(out, "\n%d candidates (--json lists them); %ld V blocks enumerated, %ld built\n",
            plan->n_candidates, plan->blocks_tried, plan->blocks_built);
}

/* The chosen schedule to -o, then the report unless -o took stdout. */
static int write_results(const plan_args *a, const vp_plan *plan, const vp_sim *sim) {
    if (a->out) {
        char *text = NULL;
        vp_error err = {0};
        int rc = vp_json_write(plan->schedule, &text, &err) == VP_OK
                     ? cli_write(a->out, text, strlen(text))
                     : cli_lib_error(&err);
        free(text);
        if (rc || !strcmp(a->out, "-"))
            return rc;
    }
    if (a->json)
        return print_json(plan, sim, &a->spec);
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    print_text(out.f, plan, sim, &a->spec);
    return cli_out_end(&out, "-");
}

/* Checks the flags, then plans. */
static int plan(plan_args *a, vp_plan **out) {
    vp_error err = {0};
    vp_budget budget;
    if (!a->spec.spec.p || !a->spec.spec.m)
        return cli_error(VP_EXIT_USAGE, "plan needs -p and -m");
    if (!a->budget)
        return cli_error(VP_EXIT_USAGE, "plan needs --memory (0.5, 4u or 123456b)");
    if (vp_budget_parse(a->budget, &budget, &err) != VP_OK)
        return cli_error(VP_EXIT_USAGE, "--memory '%s': column %d: %s", a->budget, err.column,
                         err.message);
    int rc = cli_spec_ready(&a->spec);
    if (!rc && a->out)
        rc = cli_probe_output(a->out);
    if (rc)
        return rc;
    cli_progress("plan: searching every family and the V building blocks for p=%d m=%d...",
                 a->spec.spec.p, a->spec.spec.m);
    rc = vp_plan_run(&a->spec.spec, &budget, out, &err) != VP_OK ? cli_lib_error(&err) : 0;
    cli_progress_clear();
    return rc;
}

static int run(void *args) {
    plan_args *a = args;
    vp_plan *p = NULL;
    vp_sim *sim = NULL;
    int rc = plan(a, &p);
    if (!rc)
        rc = cli_simulate(p->schedule, &a->spec, &sim);
    if (!rc)
        rc = write_results(a, p, sim);
    vp_sim_free(sim);
    vp_plan_free(p);
    cli_spec_release(&a->spec);
    return rc;
}

static const cli_use uses[] = {
    {&cli_spec_group, offsetof(plan_args, spec)},
    {&cli_limit_group, offsetof(plan_args, spec.spec.max_ops)},
    {&cli_recompute_group, offsetof(plan_args, spec.spec.recompute)},
    {&plan_group, 0},
};

const cli_command cli_cmd_plan = {
    .name = "plan",
    .summary = "best schedule within a memory budget, and the memory/bubble frontier",
    .usage = "-p P -m M --memory X [--cost ...] [--memory-model ...] [--json] [-o FILE]",
    .about = "Searches every family (vpipe list) and the V-shape building blocks (60 phase\n"
             "patterns x offsets 1..5 x one change point) for the schedule with the smallest\n"
             "makespan whose peak activation memory fits X, and prints it with the memory ->\n"
             "makespan frontier it found and the candidates it considered.\n",
    .epilog = "Exit codes: 0 ok, 2 bad flags or a budget below every schedule's peak (the\n"
              "message names the smallest peak reached), 1 other failures.\n",
    CLI_USES(uses),
    .args_size = sizeof(plan_args),
    .init = init,
    .run = run,
};
