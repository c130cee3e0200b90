/* Choosing a schedule for a memory budget from measured costs, checked in exact bytes. */
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "vpipe/profile.h"

/* Largest predicted peak bytes over ranks of schedule s for the profiled model. */
static vp_status peak_bytes_of(const vp_profile *pr, const vp_schedule *s, double *out,
                               vp_error *err) {
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    vp_sim *sim = NULL;
    vp_status rc = vp_cost_model_new(s, &costs, &mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_profile_cost_model(pr, s, NULL, cm, err);
    if (rc == VP_OK)
        rc = vp_simulate(s, cm, &sim, err);
    if (rc == VP_OK) {
        *out = 0;
        for (int d = 0; d < s->p; d++)
            *out = sim->peak_bytes[d] > *out ? sim->peak_bytes[d] : *out;
    }
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    return rc;
}

/* The planner's spec for the profiled model: per-rank slice costs, and the memory split
 * of the real model (B keeps stash/act of an activation until W). slices: [3p]. */
static vp_status profiled_spec(const vp_profile *pr, int p, int m, double *slices, vp_spec *spec,
                               vp_error *err) {
    *spec = vp_spec_make(p, m);
    vp_status rc = vp_profile_slice_costs(pr, p, slices, &spec->costs, err);
    vp_stage_sizes sz;
    if (rc == VP_OK)
        rc = vp_stage_sizes_of(&pr->model, (vp_stage_range){0, 1, false, false, 0, 0}, &sz, err);
    if (rc == VP_OK) {
        spec->mem.kind = VP_MEM_ZB;
        spec->mem.zb_ratio = (double)sz.stash_bytes / (double)sz.act_bytes;
    }
    return rc;
}

/* The budget in bytes: a fraction of 1F1B's peak, units of the mean slice activation,
 * or bytes as given. */
static vp_status budget_in_bytes(const vp_profile *pr, const vp_spec *spec, const vp_budget *budget,
                                 double *out, vp_error *err) {
    if (budget->kind == VP_BUDGET_BYTES) {
        *out = budget->value;
        return VP_OK;
    }
    if (budget->kind == VP_BUDGET_UNITS) {
        double unit = 0;
        vp_status rc = vp_profile_unit_bytes(pr, spec->p, &unit, err);
        *out = budget->value * unit;
        return rc;
    }
    vp_schedule *ref = NULL;
    vp_status rc = vp_family_build("1f1b", spec, &ref, err);
    double ref_bytes = 0;
    if (rc == VP_OK)
        rc = peak_bytes_of(pr, ref, &ref_bytes, err);
    vp_schedule_free(ref);
    *out = budget->value * ref_bytes;
    return rc;
}

vp_status vp_autoplan(const vp_profile *pr, int p, int m, const vp_budget *budget,
                      vp_autoplan_result *out, vp_error *err) {
    *out = (vp_autoplan_result){0};
    double *slices = vp__calloc(3 * (size_t)p, sizeof *slices);
    if (!slices)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_spec spec;
    vp_status rc = profiled_spec(pr, p, m, slices, &spec, err);
    if (rc == VP_OK)
        rc = budget_in_bytes(pr, &spec, budget, &out->budget_bytes, err);
    /* Start from the budget in units (1F1B holds p) and tighten by a quarter unit while the
     * exact bytes (uneven stages: embeddings, head) do not fit. */
    double unit = 0;
    if (rc == VP_OK && budget->kind == VP_BUDGET_FRACTION)
        unit = budget->value * p;
    else if (rc == VP_OK && budget->kind == VP_BUDGET_UNITS)
        unit = budget->value;
    else if (rc == VP_OK) {
        double one_unit = 0;
        rc = vp_profile_unit_bytes(pr, p, &one_unit, err);
        unit = one_unit > 0 ? budget->value / one_unit : 0;
    }
    for (; rc == VP_OK; unit -= 0.25) {
        vp_budget units = {VP_BUDGET_UNITS, unit};
        vp_plan *try = NULL;
        rc = vp_plan_run(&spec, &units, &try, err);
        if (rc != VP_OK)
            break;
        rc = peak_bytes_of(pr, try->schedule, &out->peak_bytes, err);
        if (rc == VP_OK && out->peak_bytes <= out->budget_bytes) {
            out->plan = try;
            break;
        }
        vp_plan_free(try);
    }
    if (rc == VP_EINVAL && !out->plan && err) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        vp__fail(err, VP_EINVAL, "no schedule fits %.0f bytes of activations at p=%d, m=%d: %s",
                 out->budget_bytes, p, m, why);
    }
    free(slices);
    return out->plan ? VP_OK : rc;
}
