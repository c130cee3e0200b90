/* The answer in words (the reason) and as JSON. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "hybrid/hybrid_internal.h"

#define GIB 1073741824.0

const char *vp__hy_levers(const vp_hybrid_config *c, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    if (c->cp > 1)
        n += (size_t)snprintf(buf + n, size - n, ", CP %d", c->cp);
    if ((c->ep > 1 || c->etp > 1) && n < size)
        n += (size_t)snprintf(buf + n, size - n, ", EP %d, ETP %d", c->ep, c->etp);
    if (c->fp8 != VP_FP8_OFF && n < size)
        n += (size_t)snprintf(buf + n, size - n, ", FP8 %s", vp_fp8_name(c->fp8));
    if (c->zero >= 2 && n < size) /* ZeRO-0 and 1 are what a plan without the search reads as */
        n += (size_t)snprintf(buf + n, size - n, ", ZeRO-%d", c->zero);
    char names[96];
    if (c->recompute == VP_RECOMPUTE_SELECTIVE && c->recompute_modules && n < size)
        snprintf(buf + n, size - n, ", recompute modules %s",
                 vp_recompute_modules_text(c->recompute_modules, names, sizeof names));
    return buf;
}

/* "DP 2, TP 4, PP 5, mbs 2" of c (", offload 0.5" when it offloads). */
static const char *degrees(const vp_hybrid_config *c, char *buf, size_t size) {
    char ep[192];
    vp__hy_levers(c, ep, sizeof ep);
    int n = snprintf(buf, size, "DP %d, TP %d, PP %d%s, mbs %d", c->dp, c->tp, c->pp, ep, c->mbs);
    if (c->offload > 0 && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ", offload %g", c->offload);
    return buf;
}

/* How much longer b's step is than a's, percent. */
static double slower(const vp_hybrid_config *a, const vp_hybrid_config *b) {
    return 100 * (b->step_time_s / a->step_time_s - 1);
}

/* The best configuration of group, or NULL. */
static const vp_hybrid_config *best_of(const vp_hybrid *h, const char *group) {
    for (int i = 0; i < h->n_best; i++)
        if (!strcmp(h->best[i].group, group))
            return &h->best[i];
    return NULL;
}

void vp__hy_reason(vp_hybrid *h) {
    const vp_hybrid_config *w = &h->top[0], *runner = NULL, *one = best_of(h, "1f1b");
    for (int i = 0; i < h->n_best && !runner; i++)
        if (strcmp(h->best[i].group, w->group))
            runner = &h->best[i];
    char a[256], b[256];
    int n = snprintf(h->reason, sizeof h->reason,
                     "%s at %s (m %d, recompute %s) is the fastest that fits: %.4g s a step, MFU "
                     "%.1f%%",
                     w->family, degrees(w, a, sizeof a), w->m, vp_recompute_name(w->recompute),
                     w->step_time_s, 100 * w->mfu);
    size_t size = sizeof h->reason;
    if (w->tight && n > 0 && (size_t)n < size)
        n += snprintf(h->reason + n, size - (size_t)n,
                      " but tight: %.1f GiB of room, under the %.1f GiB margin (no configuration "
                      "leaves that much)",
                      w->headroom_bytes / GIB, h->margin_bytes / GIB);
    if (runner && n > 0 && (size_t)n < size)
        n += snprintf(h->reason + n, size - (size_t)n,
                      "; the runner-up family, %s (%s), takes %.1f%% longer", runner->group,
                      degrees(runner, b, sizeof b), slower(w, runner));
    if (one && one != runner && strcmp(w->group, "1f1b") && n > 0 && (size_t)n < size)
        n += snprintf(h->reason + n, size - (size_t)n, "; the best 1F1B (%s) %.1f%% longer",
                      degrees(one, b, sizeof b), slower(w, one));
    const vp_hybrid_config *v = &h->versus;
    if (v->family[0] && n > 0 && (size_t)n < size)
        n += snprintf(h->reason + n, size - (size_t)n,
                      ": at the winner's point 1F1B would take %.1f%% longer (bubble %.1f%% "
                      "against %.1f%%) and need %.1f GiB%s",
                      slower(w, v), 100 * v->bubble, 100 * w->bubble, v->memory_max_bytes / GIB,
                      v->fits ? "" : ", over the capacity");
    if (n > 0 && (size_t)n < size)
        snprintf(h->reason + n, size - (size_t)n, ".");
}

/* ---- JSON ---------------------------------------------------------------------------- */

static json_t *config_json(const vp_hybrid_config *c) {
    json_t *o = json_object();
    json_object_set_new(o, "family", json_string(c->family));
    if (c->params[0])
        json_object_set_new(o, "params", json_string(c->params));
    const char *ints[] = {"dp", "tp", "pp", "ep", "etp", "cp", "zero", "v", "mbs", "m"};
    int ivals[] = {c->dp,   c->tp, c->pp,  c->ep, c->etp, c->cp > 0 ? c->cp : 1,
                   c->zero, c->v,  c->mbs, c->m};
    for (int i = 0; i < 10; i++)
        json_object_set_new(o, ints[i], json_integer(ivals[i]));
    json_object_set_new(o, "recompute", json_string(vp_recompute_name(c->recompute)));
    char names[96];
    if (c->recompute == VP_RECOMPUTE_SELECTIVE && c->recompute_modules)
        json_object_set_new(
            o, "recompute_modules",
            json_string(vp_recompute_modules_text(c->recompute_modules, names, sizeof names)));
    if (c->fp8 != VP_FP8_OFF)
        json_object_set_new(o, "fp8", json_string(vp_fp8_name(c->fp8)));
    json_object_set_new(o, "step_time_s", json_real(c->step_time_s));
    json_object_set_new(o, "mfu", json_real(c->mfu));
    json_object_set_new(o, "bubble", json_real(c->bubble));
    json_object_set_new(o, "memory_max_bytes",
                        json_integer((json_int_t)llround(c->memory_max_bytes)));
    json_object_set_new(o, "fits", json_boolean(c->fits));
    json_object_set_new(o, "headroom_bytes", json_integer((json_int_t)llround(c->headroom_bytes)));
    json_object_set_new(o, "tight", json_boolean(c->tight));
    if (c->offload > 0) {
        json_object_set_new(o, "offload", json_real(c->offload));
        json_object_set_new(o, "host_max_bytes",
                            json_integer((json_int_t)llround(c->host_max_bytes)));
        json_object_set_new(o, "copy_occupancy", json_real(c->copy_occupancy));
    }
    return o;
}

/* The winner: its configuration with memory_per_rank and layers_per_stage from its
 * priced result. */
static json_t *winner_json(const vp_hybrid *h) {
    json_t *o = config_json(&h->top[0]);
    char *text = vp_price_result_json(h->winner.result);
    json_t *priced = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!priced) {
        json_decref(o);
        return NULL;
    }
    json_object_set(o, "memory_per_rank", json_object_get(priced, "memory_per_rank"));
    json_object_set(o, "layers_per_stage", json_object_get(priced, "layers_per_stage"));
    json_object_set(o, "expected_error", json_object_get(priced, "expected_error"));
    json_decref(priced);
    return o;
}

static void counts_json(json_t *o, const vp_hybrid *h) {
    const char *names[] = {"candidates",       "evaluated",   "pruned", "pruned_by_bound",
                           "pruned_by_memory", "over_memory", "refused"};
    long values[] = {
        h->candidates,   h->evaluated,     h->pruned_bound + h->pruned_memory + h->over_memory,
        h->pruned_bound, h->pruned_memory, h->over_memory,
        h->refused};
    for (int i = 0; i < 7; i++)
        json_object_set_new(o, names[i], json_integer(values[i]));
    json_object_set_new(o, "timed_out", json_boolean(h->timed_out));
    json_object_set_new(o, "elapsed_s", json_real(h->elapsed_s));
}

char *vp_hybrid_json(const vp_hybrid *h, const vp_hybrid_request *req) {
    json_t *o = json_object(), *per = json_object(), *top = json_array();
    json_t *best = winner_json(h);
    if (!o || !per || !top || !best) {
        json_decref(o);
        json_decref(per);
        json_decref(top);
        json_decref(best);
        return NULL;
    }
    json_object_set_new(o, "model", json_string(req->arch->name));
    json_object_set_new(o, "gpu", json_string(req->gpu->name));
    json_object_set_new(o, "gpus", json_integer(req->gpus));
    json_object_set_new(o, "global_batch", json_integer(req->global_batch));
    json_object_set_new(o, "seq", json_integer(req->work.seq));
    json_object_set_new(o, "best", best);
    for (int i = 0; i < h->n_best; i++)
        json_object_set_new(per, h->best[i].group, config_json(&h->best[i]));
    json_object_set_new(o, "best_per_family", per);
    for (int i = 0; i < h->n_top; i++)
        json_array_append_new(top, config_json(&h->top[i]));
    json_object_set_new(o, "top", top);
    json_object_set_new(o, "versus_1f1b",
                        h->versus.family[0] ? config_json(&h->versus) : json_null());
    json_object_set_new(o, "margin_bytes", json_integer((json_int_t)llround(h->margin_bytes)));
    json_object_set(o, "expected_error", json_object_get(best, "expected_error"));
    json_object_set_new(o, "reason", json_string(h->reason));
    counts_json(o, h);
    char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(o);
    return text;
}
