/* The string API (request.h): options in, text out. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "request/options.h"
#include "vpipe/io.h"
#include "vpipe/render.h"
#include "vpipe/request.h"

vp_status vp_request_schedule(const char *options, vp_schedule **out, vp_error *err) {
    json_t *o = NULL;
    vp_spec spec;
    const char *family = NULL;
    *out = NULL;
    vp_status rc = vp__options_open(options, &o, err);
    if (rc == VP_OK)
        rc = vp__options_family(o, &spec, &family, err);
    if (rc == VP_OK)
        rc = vp_family_build(family, &spec, out, err);
    json_decref(o);
    return rc;
}

/* Simulates s under spec's costs and memory model into a new *sim. */
static vp_status simulate_spec(const vp_schedule *s, const vp_spec *spec, vp_sim **sim,
                               vp_error *err) {
    vp_cost_model *cm = NULL;
    vp_status rc = vp_cost_model_new(s, &spec->costs, &spec->mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_simulate(s, cm, sim, err);
    vp_cost_model_free(cm);
    return rc;
}

/* The options *o of text, their spec, and a simulation of s under it. */
static vp_status simulate(const vp_schedule *s, const char *options, vp_spec *spec, json_t **o,
                          vp_sim **sim, vp_error *err) {
    *sim = NULL;
    vp_status rc = vp__options_open(options, o, err);
    if (rc == VP_OK)
        rc = vp__options_spec(*o, spec, err);
    return rc == VP_OK ? simulate_spec(s, spec, sim, err) : rc;
}

vp_status vp_request_simulate(const vp_schedule *s, const char *options, char **report,
                              vp_error *err) {
    json_t *o = NULL;
    vp_spec spec;
    vp_sim *sim = NULL;
    *report = NULL;
    vp_status rc = simulate(s, options, &spec, &o, &sim, err);
    if (rc == VP_OK)
        rc = vp_sim_json(s, sim, &spec.costs, report, err);
    vp_sim_free(sim);
    json_decref(o);
    return rc;
}

/* The drawing options of o (their costs borrowed from spec, their title from o). */
static vp_status render_opts(const json_t *o, const vp_spec *spec, vp_render_opts *ro,
                             vp_error *err) {
    bool fit = false, color = false;
    *ro = (vp_render_opts){.costs = &spec->costs};
    vp_status rc = vp__option_int(o, "width", 20, 100000, &ro->width, err);
    if (rc == VP_OK)
        rc = vp__option_bool(o, "fit", &fit, err);
    if (rc == VP_OK)
        rc = vp__option_bool(o, "color", &color, err);
    if (rc == VP_OK)
        rc = vp__option_string(o, "title", &ro->title, err);
    ro->fit = fit;
    ro->color = color;
    return rc;
}

vp_status vp_request_render(const vp_schedule *s, const char *format, const char *options,
                            char **text, vp_error *err) {
    json_t *o = NULL;
    vp_spec spec;
    vp_sim *sim = NULL;
    vp_timeline *tl = NULL;
    vp_render_opts ro;
    *text = NULL;
    if (strcmp(format, "svg") && strcmp(format, "ascii") && strcmp(format, "trace"))
        return vp__fail(err, VP_EINVAL, "unknown picture format '%s' (svg, ascii or trace)",
                        format);
    vp_status rc = simulate(s, options, &spec, &o, &sim, err);
    if (rc == VP_OK)
        rc = render_opts(o, &spec, &ro, err);
    if (rc == VP_OK)
        rc = vp_timeline_from_sim(s, sim, &tl, err);
    if (rc == VP_OK)
        rc = !strcmp(format, "svg")     ? vp_render_svg(tl, &ro, text, err)
             : !strcmp(format, "ascii") ? vp_render_ascii(tl, &ro, text, err)
                                        : vp_render_trace(tl, text, err);
    vp_timeline_free(tl);
    vp_sim_free(sim);
    json_decref(o);
    return rc;
}

/* Plans for o: spec and budget from the options. */
static vp_status run_plan(const json_t *o, vp_spec *spec, vp_plan **plan, vp_error *err) {
    vp_budget budget;
    vp_status rc = vp__options_sized_spec(o, spec, err);
    if (rc == VP_OK)
        rc = vp__option_required(o, "memory", err);
    VP__OPTION_PARSE(o, "memory", vp_budget_parse, &budget, err);
    if (rc == VP_OK)
        rc = vp_plan_run(spec, &budget, plan, err);
    return rc;
}

vp_status vp_request_plan(const char *options, char **report, vp_schedule **chosen, vp_error *err) {
    json_t *o = NULL;
    vp_spec spec;
    vp_plan *plan = NULL;
    vp_sim *sim = NULL;
    *report = NULL;
    if (chosen)
        *chosen = NULL;
    vp_status rc = vp__options_open(options, &o, err);
    if (rc == VP_OK)
        rc = run_plan(o, &spec, &plan, err);
    if (rc == VP_OK)
        rc = simulate_spec(plan->schedule, &spec, &sim, err);
    if (rc == VP_OK)
        rc = vp_plan_json(plan, sim, &spec.costs, report, err);
    if (rc == VP_OK && chosen) {
        *chosen = plan->schedule;
        plan->schedule = NULL;
    }
    vp_sim_free(sim);
    vp_plan_free(plan);
    json_decref(o);
    return rc;
}
