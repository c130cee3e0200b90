/* plan: the fastest schedule within a memory budget and the memory/bubble frontier; with
 * --model, the whole configuration (hybrid.c) (door.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/door.h"
#include "vpipe/io.h"

static void plan_text(vp__buf *out, const vp_plan *plan, const vp_sim *sim, const vp_spec *spec) {
    const vp_plan_candidate *win = &plan->candidates[plan->chosen];
    char costs[128];
    vp__buf_printf(out, "plan p=%d m=%d  costs %s  budget %g %s", spec->p, spec->m,
                   vp__costs_text(&spec->costs, costs, sizeof costs), plan->budget,
                   plan->budget_in_bytes ? "bytes" : "units");
    if (!plan->budget_in_bytes && plan->ref_peak > 0)
        vp__buf_printf(out, " (%.3g of 1F1B's %g)", plan->budget / plan->ref_peak, plan->ref_peak);
    vp__buf_printf(out, "\n\nchosen: %s%s%s\n", win->family, win->params[0] ? " " : "",
                   win->params);
    vp__buf_printf(out, "  makespan %g   bubble %.2f%%   peak memory %g units", sim->makespan,
                   100.0 * sim->bubble, sim->peak_max);
    if (vp_schedule_param_copies(plan->schedule) > 1)
        vp__buf_printf(out, "   (%d parameter copies)", vp_schedule_param_copies(plan->schedule));
    vp__buf_printf(out, "\n  why: %s\n\nfrontier (memory -> makespan):\n", plan->reason);
    vp__buf_printf(out, "  %8s %10s %8s  %s\n", "memory", "makespan", "bubble", "schedule");
    for (int i = 0; i < plan->n_frontier; i++) {
        const vp_plan_candidate *f = &plan->candidates[plan->frontier[i]];
        vp__buf_printf(out, "  %8g %10g %7.2f%%  %s%s%s%s\n", f->peak, f->makespan,
                       100.0 * f->bubble, f->family, f->params[0] ? " " : "", f->params,
                       f == win ? "   <- chosen" : "");
    }
    vp__buf_printf(out, "\n%d candidates (--json lists them); %ld V blocks enumerated, %ld built\n",
                   plan->n_candidates, plan->blocks_tried, plan->blocks_built);
}

/* The chosen schedule to -o, then the report unless -o took stdout. */
static vp_status plan_report(vp__run *run, const vp_plan *plan, const vp_sim *sim, vp_error *err) {
    const char *out = run->req->output;
    char *text = NULL;
    vp_status rc = VP_OK;
    if (out && (rc = vp_json_write(plan->schedule, &text, err)) == VP_OK)
        rc = vp__write(run, out, text, err);
    if (rc != VP_OK || (out && !strcmp(out, "-")))
        return rc;
    if (run->req->json) {
        rc = vp_plan_json(plan, sim, &run->spec.costs, &text, err);
        return rc == VP_OK ? vp__say(run, text, err) : rc;
    }
    vp__buf b = {0};
    plan_text(&b, plan, sim, &run->spec);
    return vp__say_buf(run, &b, err);
}

/* Checks the options, then plans into *out. */
static vp_status plan_run(vp__run *run, vp_plan **out, vp_error *err) {
    const vp_request *q = run->req;
    vp_budget budget;
    if (!q->p || !q->m)
        return vp__fail(err, VP_EINVAL, "plan needs %s and %s", VP__NAME(run, "p"),
                        VP__NAME(run, "m"));
    if (!q->memory)
        return vp__fail(err, VP_EINVAL, "plan needs %s (0.5, 4u, 123456b or 64MiB)",
                        VP__NAME(run, "memory"));
    if (vp_budget_parse(q->memory, &budget, err) != VP_OK)
        return vp__value_error(run, "memory", q->memory, VP_OK, err);
    vp_status rc = vp__spec_ready(run, err);
    run->spec.threads = q->threads; /* the V blocks' search; the answer never depends on it */
    if (q->time_limit > 0)
        run->spec.time_limit_s = q->time_limit; /* else vp_spec_make's default */
    if (rc == VP_OK && q->output)
        rc = vp__probe(run, q->output, false, err);
    if (rc != VP_OK)
        return rc;
    vp__progress(run, "plan: searching every family and the V building blocks for p=%d m=%d...",
                 run->spec.p, run->spec.m);
    vp_plan_levers levers = {.offload = run->offload_auto};
    rc = vp_plan_run_levers(&run->spec, &budget, &levers, out, err);
    vp__progress_clear(run);
    return rc;
}

/* The search's options, which need --model (--threads and --time-limit serve both
 * searches). */
static vp_status search_without_model(const vp__run *run, vp_error *err) {
    static const char *const search[] = {"gpus",   "global_batch", "pp",      "top", "max_chunks",
                                         "margin", "emit",         "operand", NULL};
    if (!vp__first_given(run, search))
        return VP_OK;
    return vp__fail(err, VP_EINVAL, "%s, %s, %s, %s, %s, %s and %s search with %s",
                    VP__NAME(run, "gpus"), VP__NAME(run, "global_batch"), VP__NAME(run, "pp"),
                    VP__NAME(run, "top"), VP__NAME(run, "max_chunks"), VP__NAME(run, "margin"),
                    VP__NAME(run, "emit"), VP__NAME(run, "model"));
}

/* What takes standard output instead of the report: -o -, and --emit megatron's flags.
 * --json (a form of the report) is refused beside it, never dropped. */
static vp_status stdout_taken(const vp__run *run, vp_error *err) {
    const vp_request *q = run->req;
    bool to_stdout = q->output && !strcmp(q->output, "-");
    if (to_stdout && q->emit == VP_EMIT_MEGATRON)
        return vp__fail(err, VP_EINVAL, "%s - and %s megatron both write standard output",
                        VP__NAME(run, "output"), VP__NAME(run, "emit"));
    if (q->json && (to_stdout || q->emit == VP_EMIT_MEGATRON))
        return vp__fail(err, VP_EINVAL, "%s does not apply: %s %s puts %s on standard output",
                        VP__NAME(run, "json"), VP__NAME(run, to_stdout ? "output" : "emit"),
                        to_stdout ? "-" : "megatron",
                        to_stdout ? "the chosen schedule" : "Megatron-LM's flags");
    return VP_OK;
}

vp_status vp__plan(vp__run *run, vp_error *err) {
    vp_status taken = stdout_taken(run, err);
    if (taken != VP_OK)
        return taken;
    if (run->req->model)
        return vp__hybrid(run, err);
    vp_status rc = search_without_model(run, err);
    if (rc == VP_OK)
        rc = vp__real_ready(run, err); /* names the first stray real-model option */
    vp_plan *plan = NULL;
    vp_sim *sim = NULL;
    if (rc == VP_OK)
        rc = plan_run(run, &plan, err);
    if (rc == VP_OK)
        rc = vp__simulate(run, plan->schedule, &sim, err);
    if (rc == VP_OK)
        rc = plan_report(run, plan, sim, err);
    vp_sim_free(sim);
    vp_plan_free(plan);
    return rc;
}
