/* The planner's report as JSON (plan.h: vp_plan_json). */
#include "base/internal.h"
#include "sim/report.h"
#include "vpipe/plan.h"

/* A candidate: memory in units, and in bytes when known. */
static json_t *candidate_json(const vp_plan_candidate *c) {
    json_t *o = json_object();
    int bad = !o;
    bad |= json_object_set_new(o, "family", json_string(c->family));
    bad |= json_object_set_new(o, "params", json_string(c->params));
    bad |= json_object_set_new(o, "memory", json_real(c->peak));
    if (c->peak_bytes > 0)
        bad |= json_object_set_new(o, "memory_bytes", json_real(c->peak_bytes));
    bad |= json_object_set_new(o, "bubble", json_real(c->bubble));
    bad |= json_object_set_new(o, "makespan", json_real(c->makespan));
    bad |= json_object_set_new(o, "fits", json_boolean(c->fits));
    if (c->offload > 0) {
        bad |= json_object_set_new(o, "offload", json_real(c->offload));
        bad |= json_object_set_new(o, "offload_policy",
                                   json_string(vp_offload_policy_name(c->offload_policy)));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The candidates at index[0..n) (every candidate when index is NULL). */
static json_t *candidates_json(const vp_plan *plan, const int *index, int n) {
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        if (json_array_append_new(a, candidate_json(&plan->candidates[index ? index[i] : i])) !=
            0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

vp_status vp_plan_json(const vp_plan *plan, const vp_sim *sim, const vp_costs *costs, char **text,
                       vp_error *err) {
    json_t *o = vp__sim_report(plan->schedule, sim, costs);
    int bad = !o;
    bad |= json_object_set_new(o, "budget", json_real(plan->budget));
    bad |= json_object_set_new(o, "budget_unit",
                               json_string(plan->budget_in_bytes ? "bytes" : "units"));
    bad |= json_object_set_new(o, "ref_peak_1f1b", json_real(plan->ref_peak));
    bad |= json_object_set_new(o, "params", json_string(plan->candidates[plan->chosen].params));
    bad |= json_object_set_new(o, "reason", json_string(plan->reason));
    bad |= json_object_set_new(o, "blocks_tried", json_integer(plan->blocks_tried));
    bad |= json_object_set_new(o, "blocks_built", json_integer(plan->blocks_built));
    bad |= json_object_set_new(o, "timed_out", json_boolean(plan->timed_out));
    bad |=
        json_object_set_new(o, "frontier", candidates_json(plan, plan->frontier, plan->n_frontier));
    bad |= json_object_set_new(o, "candidates", candidates_json(plan, NULL, plan->n_candidates));
    if (bad) {
        json_decref(o);
        o = NULL;
    }
    return vp__report_text(o, text, err);
}
