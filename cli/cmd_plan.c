/* vpipe plan: the fastest schedule within a memory budget, and the memory/bubble frontier. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vpipe/plan.h"

typedef struct plan_args {
    cli_spec spec;
    cli_real real;
    cli_hybrid hy;
    cli_plan_out po;
} plan_args;

static const cli_opt plan_opts[] = {
    {.name = "memory",
     .kind = CLI_STRING,
     .offset = offsetof(plan_args, po.budget),
     .arg = "X",
     .help = "the budget: a fraction of 1F1B's peak (0.5), units (4u: one\n"
             "microbatch's activation of a device's whole slice), or bytes\n"
             "(123456b, when the memory model knows the unit's size)"},
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(plan_args, po.json),
     .help = "one object: the chosen schedule's `simulate --json` fields,\n"
             "plus budget, reason, param_copies, frontier, candidates; with\n"
             "--model: best, best_per_family, top, evaluated, pruned..."},
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(plan_args, po.out),
     .arg = "FILE",
     .help = "also write the chosen schedule (with --model: the winner's) as\n"
             "vpipe JSON (-o - writes it to stdout instead of the report)"},
};
static const cli_group plan_group = CLI_GROUP("plan", plan_opts);

static void init(void *args) {
    plan_args *a = args;
    cli_spec_init(&a->spec);
    cli_real_init(&a->real);
    cli_hybrid_init(&a->hy);
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
    char *text = NULL;
    vp_error err = {0};
    if (a->po.out) {
        vp_status st = vp_json_write(plan->schedule, &text, &err);
        int rc = cli_write_result(a->po.out, st, text, &err);
        if (rc || !strcmp(a->po.out, "-"))
            return rc;
    }
    if (a->po.json) {
        vp_status st = vp_plan_json(plan, sim, &a->spec.spec.costs, &text, &err);
        return cli_write_result("-", st, text, &err);
    }
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
    if (!a->po.budget)
        return cli_error(VP_EXIT_USAGE, "plan needs --memory (0.5, 4u or 123456b)");
    if (vp_budget_parse(a->po.budget, &budget, &err) != VP_OK)
        return cli_error(VP_EXIT_USAGE, "--memory '%s': column %d: %s", a->po.budget, err.column,
                         err.message);
    int rc = cli_spec_ready(&a->spec);
    if (!rc && a->po.out)
        rc = cli_probe_output(a->po.out);
    if (rc)
        return rc;
    cli_progress("plan: searching every family and the V building blocks for p=%d m=%d...",
                 a->spec.spec.p, a->spec.spec.m);
    rc = vp_plan_run(&a->spec.spec, &budget, out, &err) != VP_OK ? cli_lib_error(&err) : 0;
    cli_progress_clear();
    return rc;
}

/* The search's options without --model. */
static int hybrid_flags_without_model(const plan_args *a) {
    const cli_hybrid *h = &a->hy;
    if (h->gpus || h->global_batch || h->pp || h->top || h->max_chunks || h->threads ||
        h->emit >= 0 || a->po.dir)
        return cli_error(VP_EXIT_USAGE, "--gpus, --global-batch, --pp, --top, --max-chunks, "
                                        "--threads and --emit search with --model");
    return 0;
}

static int run(void *args) {
    plan_args *a = args;
    if (a->real.model) {
        int rc = cli_spec_ready(&a->spec);
        if (!rc)
            rc = cli_plan_hybrid(&a->spec, &a->real, &a->hy, &a->po);
        cli_real_release(&a->real);
        cli_spec_release(&a->spec);
        return rc;
    }
    int flags_rc = hybrid_flags_without_model(a);
    if (a->hy.time_limit > 0)
        a->spec.spec.time_limit_s = a->hy.time_limit;
    if (!flags_rc)
        flags_rc = cli_real_ready(&a->real, &a->spec); /* names the first stray option */
    cli_real_release(&a->real);
    if (flags_rc)
        return flags_rc;
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
    {&cli_recompute_group, offsetof(plan_args, spec.recompute)},
    {&plan_group, 0},
    {&cli_real_group, offsetof(plan_args, real)},
    {&cli_split_group, offsetof(plan_args, real.split)},
    {&cli_hybrid_group, offsetof(plan_args, hy)},
};

const cli_command cli_cmd_plan = {
    .name = "plan",
    .summary = "best schedule within a memory budget; with --model, the best DP x TP x PP",
    .usage = "-p P -m M --memory X [--cost ...] [--memory-model ...] [--json] [-o FILE]\n"
             "       vpipe plan --model M --gpu G --gpus N --seq S --global-batch B [--json]\n"
             "                  [--top K] [--flash --sp --zero] [--emit torchtitan DIR|megatron]",
    .about = "Searches every family (vpipe list) and the V-shape building blocks (60 phase\n"
             "patterns x offsets 1..5 x one change point) for the schedule with the smallest\n"
             "makespan whose peak activation memory fits X, and prints it with the memory ->\n"
             "makespan frontier it found and the candidates it considered.\n\n"
             "With --model, searches the whole configuration of a real model on N GPUs for a\n"
             "global batch of B sequences: every data-, tensor- (within a node) and pipeline-\n"
             "parallel degree, microbatch size, family (interleaved with 2..--max-chunks\n"
             "chunks; the V building blocks of the budget planner's frontier as v-block) and\n"
             "recomputation, each priced as `simulate --model` prices it; keeps those whose\n"
             "every rank fits the accelerator's memory (its reserve, --reserve, counted),\n"
             "ranks them by step time, and prints the top K, the best of every family, the\n"
             "winner's memory per rank and why it wins. Bounds prune the search (the\n"
             "answer is the exhaustive one); --tp, --dp, --mbs, --pp and --recompute fix a\n"
             "dimension. --emit torchtitan DIR writes DIR/job.toml (torchtitan's TOML job\n"
             "configuration: [training], [parallelism], [activation_checkpoint]) and\n"
             "DIR/schedule.csv; --emit megatron prints Megatron-LM's flags for the best\n"
             "1F1B or interleaved configuration.\n",
    .epilog = "Exit codes: 0 ok, 2 bad flags, a budget below every schedule's peak, or (with\n"
              "--model) no configuration that fits (the message names the smallest memory\n"
              "one needs), 3 a bad model or accelerator file or an unwritable output,\n"
              "1 other failures.\n",
    CLI_USES(uses),
    .operand = "DIR",
    .operand_offset = offsetof(plan_args, po.dir),
    .args_size = sizeof(plan_args),
    .init = init,
    .run = run,
};
