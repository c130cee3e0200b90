/* The accuracy of the prices: every run priced with its own accelerator, its signed
 * errors, and their sums per source and per accelerator (with the held-out split and the
 * order of the runs), as a value and as JSON. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "calibrate/calibrate_internal.h"

#define GIB 1073741824.0

static void price_row(const vp_run_set *set, int i, vp_accuracy_row *row) {
    const vp_run *run = &set->runs[i];
    *row = (vp_accuracy_row){.run = i};
    if (vp_calibrate_price(set, i, NULL, &row->price, &row->err) != VP_OK)
        return;
    row->priced = true;
    const vp_run_price *p = &row->price;
    /* measured tokens/s per GPU: given, or from the step time (tokens per step per GPU are
       the prediction's: tokens_per_s x step) */
    row->measured_tokens = run->tokens_per_s_per_gpu
                               ? run->tokens_per_s_per_gpu
                               : p->tokens_per_s_per_gpu * p->step_time_s / run->step_time_s;
    row->error = p->tokens_per_s_per_gpu / row->measured_tokens - 1;
    row->has_memory = run->peak_mem_gib > 0;
    if (row->has_memory) {
        row->measured_memory_bytes = run->peak_mem_gib * GIB;
        row->memory_error = p->memory_bytes / row->measured_memory_bytes - 1;
    }
}

/* The group called name in *groups (added when new), or NULL when memory runs out. */
static vp_accuracy_group *group_of(vp_accuracy_group **groups, int *n, const char *name) {
    for (int g = 0; g < *n; g++)
        if (!strcmp((*groups)[g].name, name))
            return &(*groups)[g];
    vp_accuracy_group *grown = realloc(*groups, (size_t)(*n + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    *groups = grown;
    vp_accuracy_group *g = &grown[(*n)++];
    *g = (vp_accuracy_group){0};
    snprintf(g->name, sizeof g->name, "%s", name);
    return g;
}

/* Adds one priced row's errors to g (means are sums until finish_group). */
static void add_row(vp_accuracy_group *g, const vp_run *run, const vp_accuracy_row *row) {
    g->rows++;
    if (!row->priced)
        return;
    double e = fabs(row->error);
    g->priced++;
    g->mean += e;
    if (e > g->worst) {
        g->worst = e;
        g->worst_signed = row->error;
    }
    if (run->tuned) {
        g->tuned++;
    } else {
        g->held_mean += e;
        g->held_worst = e > g->held_worst ? e : g->held_worst;
    }
    g->not_fitting += !row->price.fits;
    if (row->has_memory) {
        double m = fabs(row->memory_error);
        g->memory++;
        g->memory_mean += m;
        g->memory_worst = m > g->memory_worst ? m : g->memory_worst;
    }
}

/* Published and predicted model FLOP/s per GPU of a row (in MFU units: the prediction's
 * MFU, scaled by measured over predicted throughput for the published one). */
static double published_mfu(const vp_accuracy_row *r) {
    return r->price.mfu * r->measured_tokens / r->price.tokens_per_s_per_gpu;
}

/* Pairs of the group's priced rows far enough apart in the published figures, and those
 * vpipe orders the same way. */
static void order_pairs(vp_accuracy_group *g, const vp_accuracy *acc, const vp_run_set *set,
                        bool by_source) {
    for (int i = 0; i < acc->n; i++)
        for (int j = i + 1; j < acc->n; j++) {
            const vp_accuracy_row *a = &acc->rows[i], *b = &acc->rows[j];
            const char *ka = by_source ? set->runs[i].source : a->price.gpu;
            const char *kb = by_source ? set->runs[j].source : b->price.gpu;
            if (!a->priced || !b->priced || strcmp(ka, g->name) || strcmp(kb, g->name))
                continue;
            double pa = published_mfu(a), pb = published_mfu(b);
            if (fabs(pa / pb - 1) <= 0.01)
                continue;
            g->pairs++;
            g->concordant += (pa > pb) == (a->price.mfu > b->price.mfu);
        }
}

static void finish_group(vp_accuracy_group *g) {
    int held = g->priced - g->tuned;
    g->mean = g->priced ? g->mean / g->priced : 0;
    g->held_mean = held ? g->held_mean / held : 0;
    g->memory_mean = g->memory ? g->memory_mean / g->memory : 0;
}

static vp_status summarise(vp_accuracy *acc, const vp_run_set *set, vp_error *err) {
    for (int i = 0; i < acc->n; i++) {
        const vp_run *run = &set->runs[i];
        const vp_accuracy_row *row = &acc->rows[i];
        vp_accuracy_group *s =
            group_of(&acc->by_source, &acc->n_sources, run->source[0] ? run->source : "runs");
        if (!s)
            return vp__fail(err, VP_ENOMEM, "out of memory");
        add_row(s, run, row);
        if (!row->priced)
            continue;
        vp_accuracy_group *g = group_of(&acc->by_gpu, &acc->n_gpus, row->price.gpu);
        if (!g)
            return vp__fail(err, VP_ENOMEM, "out of memory");
        add_row(g, run, row);
    }
    for (int k = 0; k < acc->n_sources; k++) {
        order_pairs(&acc->by_source[k], acc, set, true);
        finish_group(&acc->by_source[k]);
    }
    for (int k = 0; k < acc->n_gpus; k++) {
        order_pairs(&acc->by_gpu[k], acc, set, false);
        finish_group(&acc->by_gpu[k]);
    }
    return VP_OK;
}

vp_status vp_calibrate_accuracy(const vp_run_set *set, vp_accuracy **out, vp_error *err) {
    *out = NULL;
    double t0 = vp__now_ms();
    vp_accuracy *acc = vp__calloc(1, sizeof *acc);
    if (acc)
        acc->rows = vp__calloc((size_t)set->n + 1, sizeof *acc->rows);
    if (!acc || !acc->rows) {
        vp_calibrate_accuracy_free(acc);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    acc->n = set->n;
    for (int i = 0; i < set->n; i++) {
        price_row(set, i, &acc->rows[i]);
        if (acc->rows[i].err.status == VP_ENOMEM) {
            vp_calibrate_accuracy_free(acc);
            return vp__fail(err, VP_ENOMEM, "out of memory");
        }
    }
    vp_status rc = summarise(acc, set, err);
    if (rc != VP_OK) {
        vp_calibrate_accuracy_free(acc);
        return rc;
    }
    acc->elapsed_s = (vp__now_ms() - t0) / 1e3;
    *out = acc;
    return VP_OK;
}

void vp_calibrate_accuracy_free(vp_accuracy *acc) {
    if (!acc)
        return;
    free(acc->rows);
    free(acc->by_source);
    free(acc->by_gpu);
    free(acc);
}

/* ---- JSON ----------------------------------------------------------------------------- */

static void set_str(json_t *o, const char *key, const char *v) {
    json_object_set_new(o, key, json_string(v));
}

static void set_int(json_t *o, const char *key, long v) {
    json_object_set_new(o, key, json_integer(v));
}

static void set_real(json_t *o, const char *key, double v) {
    json_object_set_new(o, key, json_real(v));
}

/* The run as written: labels and configuration ("*" cells as "*"). */
static json_t *run_json(const vp_run *r) {
    json_t *o = json_object();
    set_str(o, "id", r->id);
    set_str(o, "source", r->source);
    set_int(o, "line", r->line);
    set_str(o, "model", r->model);
    set_str(o, "gpu", r->gpu);
    const char *names[] = {"tp", "pp", "vp", "dp", "mbs", "gbs", "seq"};
    int values[] = {r->tp, r->pp, r->vp, r->dp, r->mbs, r->gbs, r->seq};
    for (int k = 0; k < 7; k++)
        json_object_set_new(o, names[k],
                            values[k] == VP_RUN_ANY ? json_string("*") : json_integer(values[k]));
    set_str(o, "schedule", r->schedule);
    set_str(o, "recompute",
            r->recompute == VP_RUN_ANY ? "*" : vp_recompute_name((vp_recompute)r->recompute));
    const char *more[] = {"cp", "ep", "zero", "grad_bytes"};
    int more_values[] = {r->cp, r->ep, r->zero, r->grad_bytes};
    for (int k = 0; k < 4; k++)
        set_int(o, more[k], more_values[k]);
    const char *flags[] = {"flash",      "sp",         "tp_overlap", "pp_overlap",
                           "ep_overlap", "fp8_params", "eager"};
    bool flag_values[] = {r->flash,      r->sp,         r->tp_overlap, r->pp_overlap,
                          r->ep_overlap, r->fp8_params, r->eager};
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        json_object_set_new(o, flags[k], json_boolean(flag_values[k]));
    set_str(o, "fp8", vp_fp8_name(r->fp8));
    set_str(o, "ep_dispatch", vp_ep_dispatch_name(r->ep_dispatch));
    set_str(o, "ep_routing", vp_ep_routing_name(r->ep_routing));
    set_str(o, "attn_kernel", vp_attn_kernel_name(r->attn_kernel));
    set_str(o, "framework", vp_framework_name(r->framework));
    set_str(o, "optimizer_dtype", vp_optimizer_dtype_name(r->optimizer));
    set_str(o, "cp_comm", vp_cp_comm_name(r->cp_comm));
    char modules[96];
    set_str(o, "recompute_modules",
            vp_recompute_modules_text(r->recompute_modules, modules, sizeof modules));
    if (r->dp_overlap != VP_OVERLAP_MODELLED)
        set_real(o, "dp_overlap", r->dp_overlap);
    set_str(o, "cite", r->cite);
    set_str(o, "note", r->note);
    json_object_set_new(o, "tuned", json_boolean(r->tuned));
    return o;
}

static json_t *row_json(const vp_accuracy_row *row, const vp_run *run) {
    json_t *o = run_json(run);
    json_object_set_new(o, "priced", json_boolean(row->priced));
    if (!row->priced) {
        set_str(o, "why", run->why_not[0] ? run->why_not : row->err.message);
        return o;
    }
    const vp_run_price *p = &row->price;
    set_str(o, "priced_gpu", p->gpu);
    set_real(o, "measured_tokens_per_s_per_gpu", row->measured_tokens);
    set_real(o, "tokens_per_s_per_gpu", p->tokens_per_s_per_gpu);
    set_real(o, "step_time_s", p->step_time_s);
    set_real(o, "mfu", p->mfu);
    set_real(o, "error", row->error);
    set_str(o, "family", p->family);
    set_int(o, "v", p->v);
    set_int(o, "chosen_mbs", p->mbs);
    set_str(o, "chosen_recompute", vp_recompute_name(p->recompute));
    json_object_set_new(o, "fits", json_boolean(p->fits));
    set_real(o, "memory_gib", p->memory_bytes / GIB);
    set_real(o, "total_gib", p->total_bytes / GIB);
    if (row->has_memory) {
        set_real(o, "measured_memory_gib", row->measured_memory_bytes / GIB);
        set_real(o, "memory_error", row->memory_error);
    }
    return o;
}

static json_t *group_json(const vp_accuracy_group *g) {
    json_t *o = json_object();
    set_str(o, "name", g->name);
    const char *ints[] = {"rows", "priced", "tuned", "memory", "not_fitting"};
    long ivals[] = {g->rows, g->priced, g->tuned, g->memory, g->not_fitting};
    for (int k = 0; k < 5; k++)
        set_int(o, ints[k], ivals[k]);
    const char *reals[] = {"mean",           "worst",       "worst_signed", "held_out_mean",
                           "held_out_worst", "memory_mean", "memory_worst"};
    double rvals[] = {g->mean,       g->worst,       g->worst_signed, g->held_mean,
                      g->held_worst, g->memory_mean, g->memory_worst};
    for (int k = 0; k < 7; k++)
        set_real(o, reals[k], rvals[k]);
    set_int(o, "pairs", g->pairs);
    set_int(o, "concordant", g->concordant);
    return o;
}

char *vp_calibrate_accuracy_json(const vp_accuracy *acc, const vp_run_set *set) {
    json_t *o = json_object(), *rows = json_array(), *src = json_array(), *gpus = json_array();
    if (!o || !rows || !src || !gpus) {
        json_decref(o);
        json_decref(rows);
        json_decref(src);
        json_decref(gpus);
        return NULL;
    }
    for (int i = 0; i < acc->n; i++)
        json_array_append_new(rows, row_json(&acc->rows[i], &set->runs[i]));
    for (int k = 0; k < acc->n_sources; k++)
        json_array_append_new(src, group_json(&acc->by_source[k]));
    for (int k = 0; k < acc->n_gpus; k++)
        json_array_append_new(gpus, group_json(&acc->by_gpu[k]));
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "sources", src);
    json_object_set_new(o, "gpus", gpus);
    set_real(o, "elapsed_s", acc->elapsed_s);
    char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(o);
    return text;
}
