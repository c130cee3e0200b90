/* Profiling: measured costs of the model's parts, their file format, and the cost models
 * and per-slice costs made from them; and costs read off a measured timeline. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/internal.h"
#include "vpipe/profile.h"

/* An in-flight tensor of n floats with small deterministic values. */
static float *tensor(vp_mem *mem, size_t n) {
    float *t = vp_mem_alloc_uncharged(mem, n * sizeof *t);
    for (size_t i = 0; t && i < n; i++)
        t[i] = 0.01f * (float)((i * 2654435761u) % 200) - 1.0f;
    return t;
}

/* Times F, B and W of one part: the median of reps runs after a warm-up. */
static vp_status measure_part(const vp_model_config *cfg, int part, int reps, double *f, double *b,
                              double *w, vp_error *err) {
    int L = cfg->n_layer, l0 = part == VP_PART_HEAD ? L : 0;
    vp_stage_range range = {
        l0, part == VP_PART_LAYER ? 1 : l0, part == VP_PART_EMBED, part == VP_PART_HEAD, 0, 0};
    bool first = range.first, last = range.last;
    const vp_stage_options opt = {.n_slots = 1, .seed = 1};
    size_t N = (size_t)cfg->microbatch * (size_t)cfg->seq_len, io = N * (size_t)cfg->width;
    vp_mem *mem = vp_mem_new();
    uint8_t *tokens = malloc(N), *targets = malloc(N);
    double *tf = vp__calloc((size_t)reps, sizeof *tf), *tb = vp__calloc((size_t)reps, sizeof *tb),
           *tw = vp__calloc((size_t)reps, sizeof *tw);
    vp_stage *st = NULL;
    vp_status rc = mem && tokens && targets && tf && tb && tw
                       ? vp_stage_new(cfg, range, &opt, mem, &st, err)
                       : vp__fail(err, VP_ENOMEM, "out of memory");
    for (size_t i = 0; rc == VP_OK && i < N; i++)
        tokens[i] = targets[i] = (uint8_t)((i * 7 + 3) % (size_t)cfg->vocab);
    for (int rep = -1; rc == VP_OK && rep < reps; rep++) {
        float *out = NULL, *din = NULL;
        double loss, t0 = vp__now_ms();
        vp_stage_io fio = {.in = first ? NULL : tensor(mem, io),
                           .tokens = tokens,
                           .targets = last ? targets : NULL,
                           .out = last ? NULL : &out,
                           .loss = last ? &loss : NULL};
        rc = vp_stage_forward(st, 0, &fio, err);
        double t1 = vp__now_ms();
        vp_stage_buffer_free(out);
        if (rc == VP_OK)
            rc = vp_stage_backward_input(st, 0, last ? NULL : tensor(mem, io), 1.0f,
                                         first ? NULL : &din, err);
        double t2 = vp__now_ms();
        vp_stage_buffer_free(din);
        if (rc == VP_OK)
            rc = vp_stage_backward_weight(st, 0, err);
        double t3 = vp__now_ms();
        if (rep >= 0) {
            tf[rep] = t1 - t0;
            tb[rep] = t2 - t1;
            tw[rep] = t3 - t2;
        }
    }
    if (rc == VP_OK) {
        *f = vp__median(tf, reps);
        *b = vp__median(tb, reps);
        *w = vp__median(tw, reps);
    }
    vp_stage_free(st);
    vp_mem_free(mem);
    free(tokens);
    free(targets);
    free(tf);
    free(tb);
    free(tw);
    return rc;
}

vp_status vp_profile_measure(const vp_model_config *cfg, int reps, vp_profile *out, vp_error *err) {
    vp_status rc = vp_model_config_check(cfg, err);
    if (rc != VP_OK)
        return rc;
    if (reps < 1)
        return vp__fail(err, VP_EINVAL, "profiling needs at least one run (got %d)", reps);
    vp_blas_set_threads(1);
    vp_profile pr = {.model = *cfg};
    for (int part = 0; rc == VP_OK && part < VP_PART_COUNT; part++)
        rc = measure_part(cfg, part, reps, &pr.f[part], &pr.b[part], &pr.w[part], err);
    size_t io = (size_t)cfg->microbatch * (size_t)cfg->seq_len * (size_t)cfg->width;
    if (rc == VP_OK)
        rc = vp_runtime_measure_hop(io, 10 * reps, &pr.c, err);
    if (rc == VP_OK)
        *out = pr;
    return rc;
}

/* ---- file -------------------------------------------------------------------------- */

static const char *part_names[VP_PART_COUNT] = {"embed", "layer", "head"};

char *vp_profile_write_json(const vp_profile *pr) {
    json_t *ms = json_object();
    for (int k = 0; k < VP_PART_COUNT; k++)
        json_object_set_new(
            ms, part_names[k],
            json_pack("{s:f,s:f,s:f}", "F", pr->f[k], "B", pr->b[k], "W", pr->w[k]));
    const vp_model_config *m = &pr->model;
    json_t *root = json_pack("{s:s,s:i,s:{s:i,s:i,s:i,s:i,s:i,s:i},s:o,s:f}", "format",
                             "vpipe-profile", "version", 1, "model", "layers", m->n_layer, "width",
                             m->width, "heads", m->n_head, "seq", m->seq_len, "microbatch",
                             m->microbatch, "vocab", m->vocab, "ms", ms, "c_ms", pr->c);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(root);
    return text;
}

/* A finite number >= 0 at key of obj. */
static vp_status get_ms(json_t *obj, const char *key, const char *where, double *out,
                        vp_error *err) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
        return vp__fail(err, VP_EPARSE, "%s.%s must be a number >= 0", where, key);
    *out = json_number_value(v);
    return VP_OK;
}

/* An integer at key of obj within [lo, hi] (never truncated to fit an int). */
static vp_status get_int(json_t *obj, const char *key, const char *where, int lo, int hi, int *out,
                         vp_error *err) {
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return vp__fail(err, VP_EPARSE, "%s%s must be an integer in [%d, %d]", where, key, lo, hi);
    *out = (int)json_integer_value(v);
    return VP_OK;
}

/* The "model" object of a profile, checked as a model. */
static vp_status read_model(json_t *root, vp_model_config *m, vp_error *err) {
    json_t *o = json_object_get(root, "model");
    if (!json_is_object(o))
        return vp__fail(err, VP_EPARSE, "profile: \"model\" must be an object");
    const char *keys[6] = {"layers", "width", "heads", "seq", "microbatch", "vocab"};
    int *fields[6] = {&m->n_layer, &m->width, &m->n_head, &m->seq_len, &m->microbatch, &m->vocab};
    vp_status rc = VP_OK;
    for (int i = 0; rc == VP_OK && i < 6; i++)
        rc = get_int(o, keys[i], "model.", 1, INT_MAX, fields[i], err);
    vp_error why = {0};
    if (rc == VP_OK && vp_model_config_check(m, &why) != VP_OK)
        rc = vp__fail(err, VP_EPARSE, "profile model: %s", why.message);
    return rc;
}

vp_status vp_profile_read_json(const char *text, size_t len, vp_profile *out, vp_error *err) {
    if (len > VP_PROFILE_MAX)
        return vp__fail(err, VP_EPARSE, "a profile is at most %zu bytes (this one: %zu)",
                        VP_PROFILE_MAX, len);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return vp__fail_at(err, VP_EPARSE, jerr.line > 0 ? jerr.line : 1,
                           jerr.column > 0 ? jerr.column : 1, "%s", jerr.text);
    vp_profile pr = {0};
    int version = 0;
    vp_status rc = VP_OK;
    json_t *format = json_object_get(root, "format");
    if (!json_is_string(format) || strcmp(json_string_value(format), "vpipe-profile"))
        rc = vp__fail(err, VP_EPARSE, "not a vpipe profile (field \"format\")");
    else if (get_int(root, "version", "profile: ", 0, INT_MAX, &version, err) != VP_OK)
        rc = VP_EPARSE;
    else if (version != 1)
        rc = vp__fail(err, VP_EPARSE, "unsupported profile version %d (this vpipe reads 1)",
                      version);
    json_t *ms = json_object_get(root, "ms");
    if (rc == VP_OK && !json_is_object(ms))
        rc = vp__fail(err, VP_EPARSE, "profile: \"ms\" must be an object");
    for (int k = 0; rc == VP_OK && k < VP_PART_COUNT; k++) {
        json_t *part = json_object_get(ms, part_names[k]);
        char where[32];
        snprintf(where, sizeof where, "ms.%s", part_names[k]);
        rc = get_ms(part, "F", where, &pr.f[k], err);
        if (rc == VP_OK)
            rc = get_ms(part, "B", where, &pr.b[k], err);
        if (rc == VP_OK)
            rc = get_ms(part, "W", where, &pr.w[k], err);
    }
    if (rc == VP_OK)
        rc = get_ms(root, "c_ms", "profile", &pr.c, err);
    if (rc == VP_OK)
        rc = read_model(root, &pr.model, err);
    json_decref(root);
    if (rc == VP_OK)
        *out = pr;
    return rc;
}

/* ---- costs from a profile ---------------------------------------------------------- */

/* Time of one pass kind over a stage's range: its layers plus the embeddings / head (with
 * vocabulary parallelism the shards' instead). */
static double part_sum(const double *t, vp_stage_range r) {
    bool ends = !r.vocab_shards;
    return (r.first && ends ? t[VP_PART_EMBED] : 0) + (r.l1 - r.l0) * t[VP_PART_LAYER] +
           (r.last && ends ? t[VP_PART_HEAD] : 0);
}

/* The vocabulary passes of the p shards of s: a p-th of the embedding's forward (EF) and
 * weight gradient (EB), of the head's forward (S), and of its input and weight gradients
 * (T). The first stage's position add and the last stage's final norm are not timed
 * apart: the profile's parts hold them with the embedding and the head. */
static void vocab_ms(const vp_profile *pr, const vp_schedule *s, vp_cost_model *cm) {
    int p = s->p;
    for (int d = 0; s->vocab_parallel && d < p; d++) {
        cm->vocab[d] = pr->f[VP_PART_EMBED] / p;
        cm->vocab[p + d] = (pr->b[VP_PART_EMBED] + pr->w[VP_PART_EMBED]) / p;
        cm->vocab[2 * p + d] = pr->f[VP_PART_HEAD] / p;
        cm->vocab[3 * p + d] = (pr->b[VP_PART_HEAD] + pr->w[VP_PART_HEAD]) / p;
    }
}

vp_status vp_profile_cost_model(const vp_profile *pr, const vp_schedule *s, const int *layer_start,
                                vp_cost_model *cm, vp_error *err) {
    int R = s->route_len;
    int *l0 = vp__calloc((size_t)R + 1, sizeof *l0);
    if (!l0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    /* the bytes first: they check the split */
    vp_status rc = vp_runtime_model_bytes(cm, s, &pr->model, layer_start, err);
    if (rc == VP_OK && layer_start)
        memcpy(l0, layer_start, ((size_t)R + 1) * sizeof *l0);
    else if (rc == VP_OK)
        rc = vp_split_layers(pr->model.n_layer, R, l0, err);
    for (int st = 0; rc == VP_OK && st < s->S; st++) {
        vp_stage_range range = vp_split_range(l0, st % R, R);
        range.vocab_shards = s->vocab_parallel ? s->p : 0;
        cm->f[st] = part_sum(pr->f, range);
        cm->b[st] = part_sum(pr->b, range);
        cm->w[st] = part_sum(pr->w, range);
        cm->r[st] = cm->f[st];
        cm->fb[st] = -1.0;
    }
    if (rc == VP_OK)
        vocab_ms(pr, s, cm);
    cm->c = pr->c;
    free(l0);
    return rc;
}

vp_status vp_profile_slice_costs(const vp_profile *pr, int p, double *dev, vp_costs *costs,
                                 vp_error *err) {
    double *dev_f = dev, *dev_b = dev + p, *dev_w = dev + 2 * p;
    int *l0 = vp__calloc((size_t)p + 1, sizeof *l0);
    if (!l0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = vp_split_layers(pr->model.n_layer, p, l0, err);
    double sf = 0, sb = 0, sw = 0;
    for (int d = 0; rc == VP_OK && d < p; d++) {
        vp_stage_range range = vp_split_range(l0, d, p);
        dev_f[d] = part_sum(pr->f, range);
        dev_b[d] = part_sum(pr->b, range);
        dev_w[d] = part_sum(pr->w, range);
        sf += dev_f[d], sb += dev_b[d], sw += dev_w[d];
    }
    free(l0);
    if (rc != VP_OK)
        return rc;
    *costs = vp_costs_default();
    costs->f = sf / p;
    costs->b = sb / p;
    costs->w = sw / p;
    costs->c = pr->c;
    costs->dev_f = dev_f;
    costs->dev_b = dev_b;
    costs->dev_w = dev_w;
    return VP_OK;
}

vp_status vp_profile_unit_bytes(const vp_profile *pr, int p, double *bytes, vp_error *err) {
    int *l0 = vp__calloc((size_t)p + 1, sizeof *l0);
    vp_status rc = l0 ? vp_split_layers(pr->model.n_layer, p, l0, err)
                      : vp__fail(err, VP_ENOMEM, "out of memory");
    double total = 0;
    for (int d = 0; rc == VP_OK && d < p; d++) {
        vp_stage_sizes sz;
        rc = vp_stage_sizes_of(&pr->model, vp_split_range(l0, d, p), &sz, err);
        total += (double)sz.act_bytes;
    }
    free(l0);
    *bytes = total / p;
    return rc;
}
