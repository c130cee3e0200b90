/* vpipe plan: the fastest schedule within a memory budget, and the memory/bubble frontier. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vpipe/plan.h"

static const char plan_help[] =
    "usage: vpipe plan -p P -m M --memory X [--cost ...] [--memory-model ...] [--json]\n"
    "                  [-o FILE]\n\n"
    "Searches every family (vpipe list) and the V-shape building blocks (60 phase\n"
    "patterns x offsets 1..5 x one change point) for the schedule with the smallest\n"
    "makespan whose peak activation memory fits X, and prints it with the memory ->\n"
    "makespan frontier it found and the candidates it considered.\n\n"
    "  --memory X            the budget: a fraction of 1F1B's peak (0.5), units (4u: one\n"
    "                        microbatch's activation of a device's whole slice), or bytes\n"
    "                        (123456b, when the memory model knows the unit's size)\n"
    "  --json                one object: the chosen schedule's `simulate --json` fields,\n"
    "                        plus budget, reason, param_copies, frontier, candidates\n"
    "  -o FILE               also write the chosen schedule as vpipe JSON (-o - writes it\n"
    "                        to stdout instead of the report)\n"
    "\nExit codes: 0 ok, 2 bad flags or a budget below every schedule's peak (the\n"
    "message names the smallest peak reached), 1 other failures.\n";

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

static void print_json(const vp_plan *plan, const vp_sim *sim, const cli_spec *o) {
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
    cli_print_json(stdout, j);
    json_decref(j);
}

static void print_text(const vp_plan *plan, const vp_sim *sim, const cli_spec *o) {
    const vp_plan_candidate *win = &plan->candidates[plan->chosen];
    const vp_costs *c = &o->spec.costs;
    printf("plan p=%d m=%d  costs F=%g B=%g W=%g c=%g  budget %g %s", o->spec.p, o->spec.m, c->f,
           c->b, c->w, c->c, plan->budget, plan->budget_in_bytes ? "bytes" : "units");
    if (!plan->budget_in_bytes && plan->ref_peak > 0)
        printf(" (%.3g of 1F1B's %g)", plan->budget / plan->ref_peak, plan->ref_peak);
    printf("\n\nchosen: %s%s%s\n", win->family, win->params[0] ? " " : "", win->params);
    printf("  makespan %g   bubble %.2f%%   peak memory %g units", sim->makespan,
           100.0 * sim->bubble, sim->peak_max);
    if (vp_schedule_param_copies(plan->schedule) > 1)
        printf("   (%d parameter copies)", vp_schedule_param_copies(plan->schedule));
    printf("\n  why: %s\n\nfrontier (memory -> makespan):\n", plan->reason);
    printf("  %8s %10s %8s  %s\n", "memory", "makespan", "bubble", "schedule");
    for (int i = 0; i < plan->n_frontier; i++) {
        const vp_plan_candidate *f = &plan->candidates[plan->frontier[i]];
        printf("  %8g %10g %7.2f%%  %s%s%s%s\n", f->peak, f->makespan, 100.0 * f->bubble, f->family,
               f->params[0] ? " " : "", f->params, f == win ? "   <- chosen" : "");
    }
    printf("\n%d candidates (--json lists them); %ld V blocks enumerated, %ld built\n",
           plan->n_candidates, plan->blocks_tried, plan->blocks_built);
}

int cmd_plan(int argc, char **argv) {
    const char *budget_text = NULL, *out_path = NULL;
    int as_json = 0;
    cli_spec o;
    cli_spec_init(&o);
    for (int i = 1; i < argc; i++) {
        int code;
        cli_arg arg = cli_common_arg(argc, argv, &i, &o, &as_json, plan_help, &code);
        if (arg == CLI_ARG_EXIT)
            return code;
        if (arg == CLI_ARG_TAKEN)
            continue;
        if (!strcmp(argv[i], "--memory") || !strcmp(argv[i], "-o")) {
            const char *val = cli_flag_value(argc, argv, &i);
            if (!val)
                return VP_EXIT_USAGE;
            if (argv[i - 1][1] == 'o')
                out_path = val;
            else
                budget_text = val;
        } else {
            return cli_error(VP_EXIT_USAGE, "plan: unexpected argument '%s'", argv[i]);
        }
    }
    if (!o.have_p || !o.have_m)
        return cli_error(VP_EXIT_USAGE, "plan needs -p and -m");
    if (!budget_text)
        return cli_error(VP_EXIT_USAGE, "plan needs --memory (0.5, 4u or 123456b)");
    vp_error err = {0};
    vp_budget budget;
    if (vp_budget_parse(budget_text, &budget, &err) != VP_OK)
        return cli_error(VP_EXIT_USAGE, "--memory '%s': column %d: %s", budget_text, err.column,
                         err.message);
    vp_plan *plan = NULL;
    if (vp_plan_run(&o.spec, &budget, &plan, &err) != VP_OK)
        return cli_lib_error(&err);
    vp_sim *sim = NULL;
    int rc = cli_simulate(plan->schedule, &o, NULL, &sim);
    if (!rc && out_path) {
        char *text = NULL;
        FILE *out =
            vp_json_write(plan->schedule, &text, &err) == VP_OK ? cli_open_out(out_path) : NULL;
        if (!text)
            rc = cli_lib_error(&err);
        else if (!out)
            rc = VP_EXIT_INPUT;
        else
            fputs(text, out);
        cli_close_out(out);
        free(text);
    }
    int report = !rc && !(out_path && !strcmp(out_path, "-"));
    if (report && as_json)
        print_json(plan, sim, &o);
    else if (report)
        print_text(plan, sim, &o);
    vp_sim_free(sim);
    vp_plan_free(plan);
    return rc;
}
