/* The simulation report as JSON (sim.h: vp_sim_json; report.h). */
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "sim/report.h"

static json_t *double_array(const double *v, int n) {
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_real(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* The offload figures of a simulation of s (which offloads) into o; nonzero on failure. */
static int offload_report(json_t *o, const vp_schedule *s, const vp_sim *sim) {
    int p = sim->p, bad = 0;
    double *per = vp__calloc((size_t)p, sizeof *per);
    if (!per)
        return 1;
    for (int d = 0; d < p; d++)
        for (int k = 0; k < s->dev[d].n; k++)
            per[d] += s->dev[d].ops[k].kind == VP_OP_O;
    bad |= json_object_set_new(o, "offload", double_array(s->offload, s->S));
    bad |= json_object_set_new(o, "offloaded", double_array(per, p));
    bad |= json_object_set_new(o, "offload_share", double_array(sim->offload_share, p));
    bad |= json_object_set_new(o, "copy_busy", double_array(sim->copy_busy, p));
    for (int d = 0; d < p; d++)
        per[d] = sim->makespan > 0 ? sim->copy_busy[d] / sim->makespan : 0.0;
    bad |= json_object_set_new(o, "copy_occupancy", double_array(per, p));
    bad |= json_object_set_new(o, "offload_stall", double_array(sim->stall, p));
    bad |= json_object_set_new(o, "host_peak_memory", double_array(sim->host_peak, p));
    if (sim->host_peak_bytes)
        bad |=
            json_object_set_new(o, "host_peak_memory_bytes", double_array(sim->host_peak_bytes, p));
    free(per);
    return bad;
}

json_t *vp__sim_report(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs) {
    json_t *o = json_object();
    json_t *c =
        json_pack("{s:f,s:f,s:f,s:f}", "F", costs->f, "B", costs->b, "W", costs->w, "c", costs->c);
    int bad = !o;
    if (costs->fb >= 0)
        bad |= json_object_set_new(c, "FB", json_real(costs->fb));
    if (costs->r >= 0)
        bad |= json_object_set_new(c, "R", json_real(costs->r));
    if (s->vocab_parallel) {
        bad |= json_object_set_new(c, "S", json_real(costs->s));
        bad |= json_object_set_new(c, "T", json_real(costs->t));
        bad |= json_object_set_new(c, "E", json_real(costs->e));
    }
    if (costs->o >= 0)
        bad |= json_object_set_new(c, "O", json_real(costs->o));
    if (costs->l >= 0)
        bad |= json_object_set_new(c, "L", json_real(costs->l));
    bad |= json_object_set_new(o, "family", json_string(s->family));
    bad |= json_object_set_new(o, "p", json_integer(s->p));
    bad |= json_object_set_new(o, "m", json_integer(s->m));
    bad |= json_object_set_new(o, "stages", json_integer(s->S));
    bad |= json_object_set_new(o, "placement", json_string(vp_placement_name(s->placement)));
    bad |= json_object_set_new(o, "recompute", json_string(vp_recompute_name(s->recompute)));
    if (s->vocab_parallel)
        bad |= json_object_set_new(o, "vocab_parallel", json_true());
    bad |= json_object_set_new(o, "costs", c);
    bad |= json_object_set_new(o, "makespan", json_real(sim->makespan));
    bad |= json_object_set_new(o, "longest_span", json_real(vp_sim_longest_span(sim)));
    bad |= json_object_set_new(o, "bubble", json_real(sim->bubble));
    bad |= json_object_set_new(o, "bubble_makespan", json_real(sim->bubble_makespan));
    bad |= json_object_set_new(o, "peak_memory", double_array(sim->peak, sim->p));
    bad |= json_object_set_new(o, "peak_memory_max", json_real(sim->peak_max));
    bad |= json_object_set_new(o, "param_copies", json_integer(vp_schedule_param_copies(s)));
    if (sim->peak_bytes)
        bad |= json_object_set_new(o, "peak_memory_bytes", double_array(sim->peak_bytes, sim->p));
    bad |= json_object_set_new(o, "busy", double_array(sim->dev_busy, sim->p));
    if (sim->host_peak)
        bad |= offload_report(o, s, sim);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

vp_status vp__report_text(json_t *report, char **text, vp_error *err) {
    char *body = report ? json_dumps(report, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
    json_decref(report);
    size_t n = body ? strlen(body) : 0;
    *text = body ? realloc(body, n + 2) : NULL;
    if (!*text) {
        free(body);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    memcpy(*text + n, "\n", 2);
    return VP_OK;
}

vp_status vp_sim_json(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs, char **text,
                      vp_error *err) {
    return vp__report_text(vp__sim_report(s, sim, costs), text, err);
}
