/* The measured step beside its simulation (runtime.h: vp_pipeline_svg). */
#include <stdio.h>

#include "base/internal.h"
#include "vpipe/render.h"
#include "vpipe/runtime.h"

#define MIB (1024.0 * 1024.0)

/* The simulation of s: every stage's measured mean op times and the model's activation
 * bytes per stage, in MiB like the measured memory. */
static vp_status simulated(const vp_schedule *s, const vp_pipeline_result *pr,
                           const vp_model_config *model, vp_timeline **out, vp_error *err) {
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    vp_sim *sim = NULL;
    vp_status rc = vp_cost_model_new(s, &costs, &mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_runtime_model_bytes(cm, s, model, pr->layer_start, err);
    if (rc == VP_OK)
        rc = vp_runtime_measured_costs(s, pr->measured, cm, err);
    if (rc == VP_OK) {
        for (int st = 0; st < cm->S; st++) {
            cm->act[st] = cm->act_bytes[st] / MIB;
            cm->keep[st] = cm->keep_bytes[st] / MIB;
            cm->hold[st] = cm->hold_bytes[st] / MIB;
        }
        rc = vp_simulate(s, cm, &sim, err);
    }
    if (rc == VP_OK)
        rc = vp_timeline_from_sim(s, sim, out, err);
    if (rc == VP_OK) {
        snprintf((*out)->family, sizeof(*out)->family, "simulated");
        snprintf((*out)->mem_unit, sizeof(*out)->mem_unit, "MiB");
    }
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    return rc;
}

vp_status vp_pipeline_svg(const vp_schedule *s, vp_pipeline_result *pr,
                          const vp_model_config *model, char **svg, vp_error *err) {
    vp_timeline *sim_tl = NULL;
    *svg = NULL;
    vp_status rc = simulated(s, pr, model, &sim_tl, err);
    if (rc == VP_OK) {
        snprintf(pr->measured->family, sizeof pr->measured->family, "measured");
        const vp_timeline *tls[2] = {pr->measured, sim_tl};
        vp_render_opts ro = {.title = "vpipe train: measured step (ms) and its simulation"};
        rc = vp_render_svg_gallery(tls, 2, &ro, svg, err);
    }
    vp_timeline_free(sim_tl);
    return rc;
}
