/* The first string API (request.h: vp_request_schedule, _simulate, _render, _plan and
 * _price): each fills a request from its JSON options and runs the door's own steps, so
 * an option means what it means on the command line. Unlike the door, a call reads the
 * options it needs and ignores the others. */
#include <stdlib.h>
#include <string.h>

#include "request/door.h"
#include "vpipe/render.h"

/* Every key of the first string API. */
static const char *const keys[] = {"family",
                                   "p",
                                   "m",
                                   "v",
                                   "costs",
                                   "memory_model",
                                   "memory_limit",
                                   "max_ops",
                                   "threads",
                                   "memory",
                                   "width",
                                   "fit",
                                   "color",
                                   "title",
                                   "model",
                                   "gpu",
                                   "seq",
                                   "mbs",
                                   "tp",
                                   "dp",
                                   "sp",
                                   "zero1",
                                   "flash",
                                   "recompute",
                                   "vocab_parallel",
                                   "split",
                                   "layers_per_stage",
                                   NULL};

/* A request of options (VP__SPELL_OLD) about s (NULL: none) for command cmd. */
typedef struct legacy {
    vp_request req;
    vp__run run;
} legacy;

static vp_status open_request(legacy *l, const char *options, vp__command cmd, const vp_schedule *s,
                              vp_error *err) {
    vp_request_init(&l->req, NULL);
    l->run = (vp__run){.req = &l->req, .cmd = cmd, .spelling = VP__SPELL_OLD};
    vp_status rc = vp__fill(options, -1, keys, &l->req, err);
    if (s) { /* the schedule given: the shape and the family options do not apply */
        l->req.schedule = s;
        l->req.p = l->req.m = 0;
        l->req.operand[0] = NULL;
    }
    return rc;
}

static void close_request(legacy *l) {
    vp__run_release(&l->run);
    vp_request_release(&l->req);
}

static vp_status required(const legacy *l, const char *key, vp_error *err) {
    if (vp__option_given(&l->req, vp__option_find(key, false)))
        return VP_OK;
    return vp__fail(err, VP_EINVAL, "%s is required", VP__NAME(&l->run, key));
}

/* p and m required, the spec resolved. */
static vp_status sized_spec(legacy *l, vp_error *err) {
    vp_status rc = required(l, "p", err);
    if (rc == VP_OK)
        rc = required(l, "m", err);
    return rc == VP_OK ? vp__spec_ready(&l->run, err) : rc;
}

/* The family option, required and known. */
static vp_status family(const legacy *l, const char **name, vp_error *err) {
    *name = l->req.operand[0];
    vp_status rc = required(l, "operand", err);
    if (rc == VP_OK && !vp_family_find(*name))
        rc = vp__unknown_family(*name, err);
    return rc;
}

vp_status vp_request_schedule(const char *options, vp_schedule **out, vp_error *err) {
    legacy l;
    const char *name = NULL;
    const vp_schedule *s = NULL;
    *out = NULL;
    vp_status rc = open_request(&l, options, VP__SCHEDULE, NULL, err);
    if (rc == VP_OK)
        rc = sized_spec(&l, err);
    if (rc == VP_OK)
        rc = family(&l, &name, err);
    if (rc == VP_OK)
        rc = vp__obtain(&l.run, name, out, &s, err);
    close_request(&l);
    return rc;
}

/* s recomputed as options ask, and simulated. */
static vp_status simulate(legacy *l, const vp_schedule *s, vp_schedule **owned,
                          const vp_schedule **got, vp_sim **sim, vp_error *err) {
    vp_status rc = vp__spec_ready(&l->run, err);
    if (rc == VP_OK)
        rc = vp__obtain(&l->run, NULL, owned, got, err);
    return rc == VP_OK ? vp__simulate(&l->run, *got, sim, err) : rc;
}

vp_status vp_request_simulate(const vp_schedule *s, const char *options, char **report,
                              vp_error *err) {
    legacy l;
    vp_schedule *owned = NULL;
    const vp_schedule *got = NULL;
    vp_sim *sim = NULL;
    *report = NULL;
    vp_status rc = open_request(&l, options, VP__SIMULATE, s, err);
    if (rc == VP_OK)
        rc = simulate(&l, s, &owned, &got, &sim, err);
    if (rc == VP_OK)
        rc = vp_sim_json(got, sim, &l.run.spec.costs, report, err);
    vp_sim_free(sim);
    vp_schedule_free(owned);
    close_request(&l);
    return rc;
}

vp_status vp_request_render(const vp_schedule *s, const char *format, const char *options,
                            char **text, vp_error *err) {
    legacy l;
    vp_schedule *owned = NULL;
    const vp_schedule *got = NULL;
    vp_sim *sim = NULL;
    vp_timeline *tl = NULL;
    *text = NULL;
    bool svg = !strcmp(format, "svg"), ascii = !strcmp(format, "ascii");
    if (!svg && !ascii && strcmp(format, "trace"))
        return vp__fail(err, VP_EINVAL, "unknown picture format '%s' (svg, ascii or trace)",
                        format);
    vp_status rc = open_request(&l, options, VP__RENDER, s, err);
    if (rc == VP_OK)
        rc = simulate(&l, s, &owned, &got, &sim, err);
    if (rc == VP_OK)
        rc = vp_timeline_from_sim(got, sim, &tl, err);
    vp_render_opts ro = {.costs = &l.run.spec.costs,
                         .title = l.req.title,
                         .width = l.req.width,
                         .fit = l.req.fit,
                         .color = l.req.color};
    if (rc == VP_OK)
        rc = svg     ? vp_render_svg(tl, &ro, text, err)
             : ascii ? vp_render_ascii(tl, &ro, text, err)
                     : vp_render_trace(tl, text, err);
    vp_timeline_free(tl);
    vp_sim_free(sim);
    vp_schedule_free(owned);
    close_request(&l);
    return rc;
}

vp_status vp_request_plan(const char *options, char **report, vp_schedule **chosen, vp_error *err) {
    legacy l;
    vp_plan *plan = NULL;
    vp_sim *sim = NULL;
    vp_budget budget;
    *report = NULL;
    if (chosen)
        *chosen = NULL;
    vp_status rc = open_request(&l, options, VP__PLAN, NULL, err);
    if (rc == VP_OK)
        rc = sized_spec(&l, err);
    if (rc == VP_OK)
        rc = required(&l, "memory", err);
    if (rc == VP_OK && vp_budget_parse(l.req.memory, &budget, err) != VP_OK)
        rc = vp__value_error(&l.run, "memory", l.req.memory, VP_OK, err);
    l.run.spec.threads = l.req.threads;
    if (rc == VP_OK)
        rc = vp_plan_run(&l.run.spec, &budget, &plan, err);
    if (rc == VP_OK)
        rc = vp__simulate(&l.run, plan->schedule, &sim, err);
    if (rc == VP_OK)
        rc = vp_plan_json(plan, sim, &l.run.spec.costs, report, err);
    if (rc == VP_OK && chosen) {
        *chosen = plan->schedule;
        plan->schedule = NULL;
    }
    vp_sim_free(sim);
    vp_plan_free(plan);
    close_request(&l);
    return rc;
}

vp_status vp_request_price(const vp_schedule *s, const char *options, char **report,
                           vp_schedule **built, vp_error *err) {
    legacy l;
    vp_price_result *r = NULL;
    vp_schedule *owned = NULL;
    const vp_schedule *got = NULL;
    const char *name = NULL;
    *report = NULL;
    if (built)
        *built = NULL;
    vp_status rc = open_request(&l, options, VP__SIMULATE, s, err);
    l.req.memory_model = NULL; /* pricing takes every stage's bytes from the model */
    if (rc == VP_OK)
        rc = required(&l, "model", err);
    if (rc == VP_OK)
        rc = s ? vp__spec_ready(&l.run, err) : sized_spec(&l, err);
    if (rc == VP_OK && !s)
        rc = family(&l, &name, err);
    if (rc == VP_OK)
        rc = vp__real_ready(&l.run, err);
    if (rc == VP_OK)
        rc = vp__price(&l.run, name, &r, &owned, &got, err);
    if (rc == VP_OK && !(*report = vp_price_result_json(r)))
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK && built && !s) {
        *built = owned;
        owned = NULL;
    }
    vp_price_result_free(r);
    vp_schedule_free(owned);
    close_request(&l);
    return rc;
}
