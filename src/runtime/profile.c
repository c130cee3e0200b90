/* Profiling: measured costs of the model's parts, their file format, and the cost models
 * and per-slice costs made from them; and costs read off a measured timeline. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "runtime/transport.h"
#include "vpipe/runtime.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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
    int L = cfg->n_layer;
    int l0 = part == VP_PART_HEAD ? L : 0, l1 = part == VP_PART_LAYER ? 1 : l0;
    bool first = part == VP_PART_EMBED, last = part == VP_PART_HEAD;
    size_t N = (size_t)cfg->microbatch * (size_t)cfg->seq_len, io = N * (size_t)cfg->width;
    vp_mem *mem = vp_mem_new();
    uint8_t *tokens = malloc(N), *targets = malloc(N);
    double *tf = vp__calloc((size_t)reps, sizeof *tf), *tb = vp__calloc((size_t)reps, sizeof *tb),
           *tw = vp__calloc((size_t)reps, sizeof *tw);
    vp_stage *st = NULL;
    vp_status rc = mem && tokens && targets && tf && tb && tw
                       ? vp_stage_new(cfg, l0, l1, first, last, 1, 1, mem, &st, err)
                       : vp__fail(err, VP_ENOMEM, "out of memory");
    for (size_t i = 0; rc == VP_OK && i < N; i++)
        tokens[i] = targets[i] = (uint8_t)((i * 7 + 3) % (size_t)cfg->vocab);
    for (int rep = -1; rc == VP_OK && rep < reps; rep++) {
        float *out = NULL, *din = NULL;
        double loss, t0 = vp__now_ms();
        rc = vp_stage_forward(st, 0, first ? NULL : tensor(mem, io), tokens, last ? targets : NULL,
                              last ? NULL : &out, last ? &loss : NULL, err);
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
        *f = median(tf, reps);
        *b = median(tb, reps);
        *w = median(tw, reps);
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

typedef struct {
    vp_transport *t;
    int reps;
    size_t n;
    vp_status rc;
    vp_error err;
} echo_ctx;

/* Rank 1 of the hop measurement: sends every tensor it gets back. */
static void *echo(void *arg) {
    echo_ctx *e = arg;
    for (int i = 0; e->rc == VP_OK && i < e->reps; i++) {
        float *buf = NULL;
        e->rc = e->t->vt->recv(e->t, 1, (vp_msg_key){1, i, VP_MSG_ACT}, e->n, &buf, &e->err);
        if (e->rc == VP_OK)
            e->rc = e->t->vt->send(e->t, 1, 0, (vp_msg_key){0, i, VP_MSG_GRAD}, buf, e->n, &e->err);
    }
    return NULL;
}

/* One hop on the threads transport: half the median round trip of a tensor. */
static vp_status measure_hop(size_t n, int reps, double *c, vp_error *err) {
    echo_ctx e = {.t = vp_transport_threads_new(2, 10.0), .reps = reps, .n = n};
    double *trip = vp__calloc((size_t)reps, sizeof *trip);
    float *buf = malloc(n * sizeof *buf);
    pthread_t th;
    if (!e.t || !trip || !buf || pthread_create(&th, NULL, echo, &e) != 0) {
        if (e.t)
            e.t->vt->free(e.t);
        free(trip);
        free(buf);
        return vp__fail(err, VP_ENOMEM, "cannot set up the hop measurement");
    }
    vp_status rc = VP_OK;
    for (int i = 0; rc == VP_OK && i < reps; i++) {
        double t0 = vp__now_ms();
        rc = e.t->vt->send(e.t, 0, 1, (vp_msg_key){1, i, VP_MSG_ACT}, buf, n, err);
        buf = NULL;
        if (rc == VP_OK)
            rc = e.t->vt->recv(e.t, 0, (vp_msg_key){0, i, VP_MSG_GRAD}, n, &buf, err);
        trip[i] = vp__now_ms() - t0;
    }
    if (rc != VP_OK)
        e.t->vt->abort(e.t, 0, VP_ERUNTIME, "hop measurement failed");
    pthread_join(th, NULL);
    if (rc == VP_OK && e.rc != VP_OK) {
        rc = e.rc;
        if (err)
            *err = e.err;
    }
    if (rc == VP_OK)
        *c = median(trip, reps) / 2;
    free(buf);
    free(trip);
    e.t->vt->free(e.t);
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
        rc = measure_hop(io, 10 * reps, &pr.c, err);
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
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
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

vp_status vp_profile_read_json(const char *text, size_t len, vp_profile *out, vp_error *err) {
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return vp__fail_at(err, VP_EPARSE, jerr.line > 0 ? jerr.line : 1,
                           jerr.column > 0 ? jerr.column : 1, "%s", jerr.text);
    vp_profile pr = {0};
    int version = 0;
    json_t *ms = NULL;
    vp_model_config *m = &pr.model;
    json_error_t perr;
    vp_status rc = VP_OK;
    json_t *format = json_object_get(root, "format");
    if (!json_is_string(format) || strcmp(json_string_value(format), "vpipe-profile"))
        rc = vp__fail(err, VP_EPARSE, "not a vpipe profile (field \"format\")");
    else if (json_unpack_ex(root, &perr, 0, "{s:i,s:{s:i,s:i,s:i,s:i,s:i,s:i},s:o}", "version",
                            &version, "model", "layers", &m->n_layer, "width", &m->width, "heads",
                            &m->n_head, "seq", &m->seq_len, "microbatch", &m->microbatch, "vocab",
                            &m->vocab, "ms", &ms) != 0)
        rc = vp__fail(err, VP_EPARSE, "vpipe profile: %s", perr.text);
    else if (version != 1)
        rc = vp__fail(err, VP_EPARSE, "unsupported profile version %d (this vpipe reads 1)",
                      version);
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
    if (rc == VP_OK && vp_model_config_check(m, err) != VP_OK)
        rc = vp__fail(err, VP_EPARSE, "profile model: %s", err ? err->message : "invalid");
    json_decref(root);
    if (rc == VP_OK)
        *out = pr;
    return rc;
}

/* ---- costs from a profile ---------------------------------------------------------- */

/* Time of one pass kind over layers [l0, l1) plus the embeddings / head when first / last. */
static double part_sum(const double *t, int l0, int l1, int first, int last) {
    return (first ? t[VP_PART_EMBED] : 0) + (l1 - l0) * t[VP_PART_LAYER] +
           (last ? t[VP_PART_HEAD] : 0);
}

vp_status vp_profile_cost_model(const vp_profile *pr, const vp_schedule *s, vp_cost_model *cm,
                                vp_error *err) {
    int R = s->route_len;
    int *l0 = vp__calloc((size_t)R + 1, sizeof *l0);
    if (!l0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = vp_split_layers(pr->model.n_layer, R, l0, err);
    for (int st = 0; rc == VP_OK && st < s->S; st++) {
        int k = st % R, first = k == 0, last = k == R - 1;
        cm->f[st] = part_sum(pr->f, l0[k], l0[k + 1], first, last);
        cm->b[st] = part_sum(pr->b, l0[k], l0[k + 1], first, last);
        cm->w[st] = part_sum(pr->w, l0[k], l0[k + 1], first, last);
        cm->fb[st] = -1.0;
        if (cm->act_bytes) {
            vp_stage_sizes sz;
            rc = vp_stage_sizes_of(&pr->model, l0[k], l0[k + 1], first, last, &sz, err);
            cm->act_bytes[st] = (double)sz.act_bytes;
            cm->keep_bytes[st] = (double)sz.stash_bytes;
        }
    }
    cm->c = pr->c;
    free(l0);
    return rc;
}

vp_status vp_profile_slice_costs(const vp_profile *pr, int p, double *dev_f, double *dev_b,
                                 double *dev_w, vp_costs *costs, vp_error *err) {
    int *l0 = vp__calloc((size_t)p + 1, sizeof *l0);
    if (!l0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = vp_split_layers(pr->model.n_layer, p, l0, err);
    double sf = 0, sb = 0, sw = 0;
    for (int d = 0; rc == VP_OK && d < p; d++) {
        dev_f[d] = part_sum(pr->f, l0[d], l0[d + 1], d == 0, d == p - 1);
        dev_b[d] = part_sum(pr->b, l0[d], l0[d + 1], d == 0, d == p - 1);
        dev_w[d] = part_sum(pr->w, l0[d], l0[d + 1], d == 0, d == p - 1);
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
        rc = vp_stage_sizes_of(&pr->model, l0[d], l0[d + 1], d == 0, d == p - 1, &sz, err);
        total += (double)sz.act_bytes;
    }
    free(l0);
    *bytes = total / p;
    return rc;
}

/* ---- costs from a measured timeline ------------------------------------------------ */

void vp_runtime_measured_costs(const vp_schedule *s, const vp_timeline *tl, vp_cost_model *cm) {
    double *sum = vp__calloc((size_t)s->S * VP_OP_KIND_COUNT, sizeof *sum);
    int *count = vp__calloc((size_t)s->S * VP_OP_KIND_COUNT, sizeof *count);
    if (!sum || !count) {
        free(sum);
        free(count);
        return;
    }
    for (int d = 0; d < tl->p; d++)
        for (int k = 0; k < tl->dev[d].n; k++) {
            const vp_slice *sl = &tl->dev[d].slices[k];
            int i = sl->op.stage * VP_OP_KIND_COUNT + sl->op.kind;
            sum[i] += sl->end - sl->start;
            count[i]++;
        }
    for (int st = 0; st < s->S; st++) {
        const double *su = &sum[st * VP_OP_KIND_COUNT];
        const int *n = &count[st * VP_OP_KIND_COUNT];
        if (n[VP_OP_F])
            cm->f[st] = su[VP_OP_F] / n[VP_OP_F];
        if (n[VP_OP_B])
            cm->b[st] = su[VP_OP_B] / n[VP_OP_B];
        if (n[VP_OP_W])
            cm->w[st] = su[VP_OP_W] / n[VP_OP_W];
        if (n[VP_OP_BW] && !n[VP_OP_B])
            cm->b[st] = cm->w[st] = su[VP_OP_BW] / n[VP_OP_BW] / 2;
        if (n[VP_OP_FB])
            cm->fb[st] = su[VP_OP_FB] / n[VP_OP_FB];
    }
    cm->c = 0.0;
    free(sum);
    free(count);
}
