/* Gradient checks: every fp32 backward (B input gradients and W weight gradients) of
 * the model against central finite differences of an independent double-precision
 * reference forward written here with plain loops.
 *
 * Each check builds fp32 inputs, copies them exactly into doubles, and compares
 *   analytic: the fp32 F, then B with the output gradient r (or from the loss), then W;
 *   numeric:  (J(x + h e_i) - J(x - h e_i)) / 2h in double, h = 1e-5, where J is
 *             sum(r * y) for a layer output y, or the loss itself.
 * Error per tensor: max_i |analytic_i - numeric_i| / max_i |numeric_i|. The numeric
 * side is accurate to ~1e-9, so the error is the fp32 rounding of the analytic side:
 * observed at most 3e-6 (see the printed figures). Tolerance TOL = 1e-4 leaves a
 * 30x margin and still fails on any real mistake (a wrong term is O(1) off).
 * The fp32 forwards are checked against the reference too (TOL_FWD = 1e-4 relative).
 * Parameters are drawn with std 0.3 (not the 0.02 init) so nonlinear parts matter. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/internal.h"
#include "model/kernels.h"
#include "model/stage_internal.h"
#include "vpipe/model.h"

#define TOL 1e-4
#define TOL_FWD 1e-4
#define FD_H 1e-5

/* tiny dimensions: B sequences of T tokens, width C, NH heads, vocab V, L layers */
enum { B = 2, T = 5, C = 8, NH = 2, V = 11, L = 3, N = B * T };

/* ---- double-precision reference ---- */

static void rlayernorm(double *out, const double *x, const double *w, const double *b, int n,
                       int c) {
    for (int i = 0; i < n; i++) {
        double m = 0, v = 0;
        for (int j = 0; j < c; j++)
            m += x[i * c + j];
        m /= c;
        for (int j = 0; j < c; j++)
            v += (x[i * c + j] - m) * (x[i * c + j] - m);
        v /= c;
        for (int j = 0; j < c; j++)
            out[i * c + j] = (x[i * c + j] - m) / sqrt(v + 1e-5) * w[j] + b[j];
    }
}

/* out[n,oc] = inp[n,ic] w[oc,ic]^T + b */
static void rlinear(double *out, const double *inp, const double *w, const double *b, int n, int ic,
                    int oc) {
    for (int i = 0; i < n; i++)
        for (int o = 0; o < oc; o++) {
            double s = b ? b[o] : 0.0;
            for (int k = 0; k < ic; k++)
                s += inp[i * ic + k] * w[o * ic + k];
            out[i * oc + o] = s;
        }
}

static void rgelu(double *out, const double *x, int n) {
    for (int i = 0; i < n; i++)
        out[i] = 0.5 * x[i] *
                 (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x[i] + 0.044715 * pow(x[i], 3))));
}

static void rattention(double *out, const double *qkv, int b_, int t_, int c, int nh) {
    int hs = c / nh;
    double *p = malloc(sizeof(double) * (size_t)t_);
    for (int b = 0; b < b_; b++)
        for (int h = 0; h < nh; h++)
            for (int t = 0; t < t_; t++) {
                const double *q = qkv + (b * t_ + t) * 3 * c + h * hs;
                double mx = -1e300, sum = 0;
                for (int s = 0; s <= t; s++) {
                    const double *k = qkv + (b * t_ + s) * 3 * c + c + h * hs;
                    double dot = 0;
                    for (int i = 0; i < hs; i++)
                        dot += q[i] * k[i];
                    p[s] = dot / sqrt(hs);
                    mx = p[s] > mx ? p[s] : mx;
                }
                for (int s = 0; s <= t; s++)
                    sum += (p[s] = exp(p[s] - mx));
                for (int i = 0; i < hs; i++) {
                    double o = 0;
                    for (int s = 0; s <= t; s++)
                        o += p[s] / sum * qkv[(b * t_ + s) * 3 * c + 2 * c + h * hs + i];
                    out[(b * t_ + t) * c + h * hs + i] = o;
                }
            }
    free(p);
}

/* block parameters in the stage layout, as offsets into a flat array */
static void block_offsets(long off[13], int c) {
    long sizes[12] = {c, c, 3L * c * c, 3L * c, (long)c * c, c,
                      c, c, 4L * c * c, 4L * c, 4L * c * c,  c};
    off[0] = 0;
    for (int i = 0; i < 12; i++)
        off[i + 1] = off[i] + sizes[i];
}

static void rblock(double *out, const double *x, const double *p, int b_, int t_, int c, int nh) {
    int n = b_ * t_;
    long o[13];
    block_offsets(o, c);
    double *ln = malloc(sizeof(double) * n * c), *qkv = malloc(sizeof(double) * n * 3 * c);
    double *att = malloc(sizeof(double) * n * c), *x2 = malloc(sizeof(double) * n * c);
    double *h = malloc(sizeof(double) * n * 4 * c), *hg = malloc(sizeof(double) * n * 4 * c);
    rlayernorm(ln, x, p + o[0], p + o[1], n, c);
    rlinear(qkv, ln, p + o[2], p + o[3], n, c, 3 * c);
    rattention(att, qkv, b_, t_, c, nh);
    rlinear(x2, att, p + o[4], p + o[5], n, c, c);
    for (int i = 0; i < n * c; i++)
        x2[i] += x[i];
    rlayernorm(ln, x2, p + o[6], p + o[7], n, c);
    rlinear(h, ln, p + o[8], p + o[9], n, c, 4 * c);
    rgelu(hg, h, n * 4 * c);
    rlinear(out, hg, p + o[10], p + o[11], n, 4 * c, c);
    for (int i = 0; i < n * c; i++)
        out[i] += x2[i];
    free(ln);
    free(qkv);
    free(att);
    free(x2);
    free(h);
    free(hg);
}

/* mean over rows of -log softmax(logits)[target] */
static double rcrossentropy(const double *logits, const uint8_t *targets, int n, int v) {
    double loss = 0;
    for (int i = 0; i < n; i++) {
        double mx = -1e300, sum = 0;
        for (int j = 0; j < v; j++)
            mx = logits[i * v + j] > mx ? logits[i * v + j] : mx;
        for (int j = 0; j < v; j++)
            sum += exp(logits[i * v + j] - mx);
        loss += log(sum) + mx - logits[i * v + targets[i]];
    }
    return loss / n;
}

static double dot(const double *a, const double *b, long n) {
    double s = 0;
    for (long i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* ---- helpers ---- */

static uint64_t rng_state = 42;

/* fp32 values with std s (or mean 1 +- s for norm weights), mirrored into doubles */
static void fill(float *f, double *d, long n, float mean, float s) {
    vp__rng_normal(&rng_state, f, n, s);
    for (long i = 0; i < n; i++) {
        f[i] += mean;
        if (d)
            d[i] = f[i];
    }
}

static double *to_double(const float *f, long n) {
    double *d = malloc(sizeof(double) * (size_t)n);
    for (long i = 0; i < n; i++)
        d[i] = f[i];
    return d;
}

static double max_rel_diff(const float *a, const double *b, long n) {
    double num = 0, den = 1e-30;
    for (long i = 0; i < n; i++) {
        num = fmax(num, fabs(a[i] - b[i]));
        den = fmax(den, fabs(b[i]));
    }
    return num / den;
}

/* Compares an analytic gradient with central differences of J over up to 48 of the
 * tensor's coordinates (all when it is small); returns the normalised error. */
static double fd_check(const char *what, double (*J)(void *), void *ctx, double *x, long n,
                       const float *grad) {
    long count = n < 48 ? n : 48;
    double num = 0, den = 1e-30;
    for (long k = 0; k < count; k++) {
        long i = n <= 48 ? k : (k * 7919 + 13) % n;
        double keep = x[i];
        x[i] = keep + FD_H;
        double jp = J(ctx);
        x[i] = keep - FD_H;
        double jm = J(ctx);
        x[i] = keep;
        double g = (jp - jm) / (2 * FD_H);
        num = fmax(num, fabs(grad[i] - g));
        den = fmax(den, fabs(g));
    }
    double e = num / den;
    printf("  %-22s max |grad| %.3e  error %.2e\n", what, den, e);
    assert_true(den > 1e-8); /* the check must see a real gradient */
    assert_true(e < TOL);
    return e;
}

/* ---- layernorm ---- */

typedef struct {
    double *x, *w, *b, *r;
} ln_ctx;

static double ln_J(void *p) {
    ln_ctx *c = p;
    double y[N * C];
    rlayernorm(y, c->x, c->w, c->b, N, C);
    return dot(y, c->r, N * C);
}

static void test_layernorm(void **state) {
    (void)state;
    float x[N * C], w[C], b[C], r[N * C], y[N * C], mean[N], rstd[N], dx[N * C], part[2 * C];
    double xd[N * C], wd[C], bd[C], rd[N * C], yd[N * C];
    fill(x, xd, N * C, 0.5f, 1.0f);
    fill(w, wd, C, 1.0f, 0.3f);
    fill(b, bd, C, 0.0f, 0.3f);
    fill(r, rd, N * C, 0.0f, 1.0f);
    vp__layernorm_forward(y, mean, rstd, x, w, b, N, C);
    rlayernorm(yd, xd, wd, bd, N, C);
    assert_true(max_rel_diff(y, yd, N * C) < TOL_FWD);
    float dw[C] = {0}, db[C] = {0};
    vp__layernorm_backward_input(dx, part, NULL, r, x, mean, rstd, w, N, C);
    vp__layernorm_backward_weight(dw, db, part, C);
    ln_ctx c = {xd, wd, bd, rd};
    printf("layernorm\n");
    fd_check("dx (B)", ln_J, &c, xd, N * C, dx);
    fd_check("dw (W)", ln_J, &c, wd, C, dw);
    fd_check("db (W)", ln_J, &c, bd, C, db);
}

/* ---- attention ---- */

typedef struct {
    double *qkv, *r;
} att_ctx;

static double att_J(void *p) {
    att_ctx *c = p;
    double y[N * C];
    rattention(y, c->qkv, B, T, C, NH);
    return dot(y, c->r, N * C);
}

static void test_attention(void **state) {
    (void)state;
    float qkv[N * 3 * C], r[N * C], y[N * C], probs[B * NH * T * T];
    double qd[N * 3 * C], rd[N * C], yd[N * C];
    fill(qkv, qd, N * 3 * C, 0.0f, 1.0f);
    fill(r, rd, N * C, 0.0f, 1.0f);
    vp__dims d = {B, T, C, NH, false};
    vp__attention_forward(y, probs, qkv, d);
    rattention(yd, qd, B, T, C, NH);
    assert_true(max_rel_diff(y, yd, N * C) < TOL_FWD);
    float *work = calloc((size_t)vp__block_work_floats(d), sizeof(float));
    vp__attention_backward(qkv, r, probs, work, d); /* qkv now holds dqkv */
    att_ctx c = {qd, rd};
    printf("attention\n");
    fd_check("dqkv (B)", att_J, &c, qd, N * 3 * C, qkv);
    free(work);
}

/* ---- MLP: y = fcproj(gelu(fc(x))) ---- */

typedef struct {
    double *x, *fcw, *fcb, *pw, *pb, *r;
} mlp_ctx;

static double mlp_J(void *p) {
    mlp_ctx *c = p;
    double h[N * 4 * C], y[N * C];
    rlinear(h, c->x, c->fcw, c->fcb, N, C, 4 * C);
    rgelu(h, h, N * 4 * C);
    rlinear(y, h, c->pw, c->pb, N, 4 * C, C);
    return dot(y, c->r, N * C);
}

static void test_mlp(void **state) {
    (void)state;
    enum { H = 4 * C };
    float x[N * C], fcw[H * C], fcb[H], pw[C * H], pb[C], r[N * C];
    double xd[N * C], fcwd[H * C], fcbd[H], pwd[C * H], pbd[C], rd[N * C];
    fill(x, xd, N * C, 0.0f, 1.0f);
    fill(fcw, fcwd, H * C, 0.0f, 0.3f);
    fill(fcb, fcbd, H, 0.0f, 0.3f);
    fill(pw, pwd, C * H, 0.0f, 0.3f);
    fill(pb, pbd, C, 0.0f, 0.3f);
    fill(r, rd, N * C, 0.0f, 1.0f);
    float h[N * H], hg[N * H], y[N * C], dhg[N * H], dx[N * C];
    vp__linear_forward(h, x, fcw, fcb, N, C, H, false);
    vp__gelu_forward(hg, h, N * H);
    vp__linear_forward(y, hg, pw, pb, N, H, C, false);
    mlp_ctx c = {xd, fcwd, fcbd, pwd, pbd, rd};
    double yd[N * C], hd[N * H];
    rlinear(hd, xd, fcwd, fcbd, N, C, H);
    rgelu(hd, hd, N * H);
    rlinear(yd, hd, pwd, pbd, N, H, C);
    assert_true(max_rel_diff(y, yd, N * C) < TOL_FWD);
    /* B */
    vp__linear_backward_input(dhg, r, pw, N, H, C, false);
    vp__gelu_backward(h, h, dhg, N * H); /* h now holds dh */
    vp__linear_backward_input(dx, h, fcw, N, C, H, false);
    /* W */
    float dfcw[H * C] = {0}, dfcb[H] = {0}, dpw[C * H] = {0}, dpb[C] = {0};
    vp__linear_backward_weight(dpw, dpb, r, hg, N, H, C, false);
    vp__linear_backward_weight(dfcw, dfcb, h, x, N, C, H, false);
    printf("mlp (linear, gelu, linear)\n");
    fd_check("dx (B)", mlp_J, &c, xd, N * C, dx);
    fd_check("dfc w (W)", mlp_J, &c, fcwd, H * C, dfcw);
    fd_check("dfc b (W)", mlp_J, &c, fcbd, H, dfcb);
    fd_check("dproj w (W)", mlp_J, &c, pwd, C * H, dpw);
    fd_check("dproj b (W)", mlp_J, &c, pbd, C, dpb);
}

/* ---- whole block ---- */

typedef struct {
    double *x, *p, *r;
} block_ctx;

static double block_J(void *p) {
    block_ctx *c = p;
    double y[N * C];
    rblock(y, c->x, c->p, B, T, C, NH);
    return dot(y, c->r, N * C);
}

static void test_block(void **state) {
    (void)state;
    int np = vp__block_param_count(C);
    long off[13];
    block_offsets(off, C);
    float *pf = malloc(sizeof(float) * np), *gf = calloc((size_t)np, sizeof(float));
    double *pd = malloc(sizeof(double) * np);
    for (int t = 0; t < 12; t++) {
        bool norm_w = t == 0 || t == 6;
        fill(pf + off[t], pd + off[t], off[t + 1] - off[t], norm_w ? 1.0f : 0.0f, 0.3f);
    }
    vp__block_params p, g;
    vp__block_params_at(&p, pf, C);
    vp__block_params_at(&g, gf, C);
    float x[N * C], r[N * C], y[N * C];
    double xd[N * C], rd[N * C], yd[N * C];
    fill(x, xd, N * C, 0.0f, 1.0f);
    fill(r, rd, N * C, 0.0f, 1.0f);
    float ln1[N * C], m1[N], s1[N], qkv[N * 3 * C], probs[B * NH * T * T], att[N * C], x2[N * C],
        ln2[N * C], m2[N], s2[N], h[N * 4 * C], hg[N * 4 * C], part[4 * C], xin[N * C], dout[N * C];
    memcpy(xin, x, sizeof x);
    memcpy(dout, r, sizeof r);
    vp__block_act a = {xin, ln1, m1, s1, qkv, probs, att, x2, ln2, m2, s2, h, hg, part, NULL};
    vp__dims d = {B, T, C, NH, false};
    float *work = calloc((size_t)vp__block_work_floats(d), sizeof(float));
    vp__block_forward(y, &a, &p, d);
    rblock(yd, xd, pd, B, T, C, NH);
    assert_true(max_rel_diff(y, yd, N * C) < TOL_FWD);
    vp__block_backward_input(&a, dout, &p, work, d);
    vp__block_backward_weight(&g, &a, d);
    block_ctx c = {xd, pd, rd};
    const char *names[12] = {"ln1 w", "ln1 b", "qkv w", "qkv b", "proj w",   "proj b",
                             "ln2 w", "ln2 b", "fc w",  "fc b",  "fcproj w", "fcproj b"};
    printf("block\n");
    fd_check("dx (B)", block_J, &c, xd, N * C, a.x);
    for (int t = 0; t < 12; t++)
        fd_check(names[t], block_J, &c, pd + off[t], off[t + 1] - off[t], gf + off[t]);
    free(work);
    free(pf);
    free(gf);
    free(pd);
}

/* ---- stages: embedding only, head only, a middle stage, a whole model ---- */

static const vp_model_config cfg = {
    .n_layer = L, .width = C, .n_head = NH, .seq_len = T, .microbatch = B, .vocab = V};

/* Reference forward of a stage in the stage's parameter layout. Returns the loss on a
 * last stage, else sum(r * out). */
typedef struct {
    int l0, l1;
    bool first, last;
    double *p, *in, *r;
    const uint8_t *tokens, *targets;
} stage_ctx;

static double stage_J(void *pv) {
    stage_ctx *c = pv;
    double *x = malloc(sizeof(double) * N * C), *y = malloc(sizeof(double) * N * C);
    const double *p = c->p;
    if (c->first) {
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++)
                for (int i = 0; i < C; i++)
                    x[(b * T + t) * C + i] = p[c->tokens[b * T + t] * C + i] + p[V * C + t * C + i];
        p += V * C + T * C;
    } else {
        memcpy(x, c->in, sizeof(double) * N * C);
    }
    for (int l = c->l0; l < c->l1; l++) {
        rblock(y, x, p, B, T, C, NH);
        memcpy(x, y, sizeof(double) * N * C);
        p += vp__block_param_count(C);
    }
    double J;
    if (c->last) {
        double *logits = malloc(sizeof(double) * N * V);
        rlayernorm(y, x, p, p + C, N, C);
        rlinear(logits, y, p + 2 * C, NULL, N, C, V);
        J = rcrossentropy(logits, c->targets, N, V);
        free(logits);
    } else {
        J = dot(x, c->r, N * C);
    }
    free(x);
    free(y);
    return J;
}

static void check_stage(int l0, int l1, bool first, bool last) {
    vp_mem *mem = vp_mem_new();
    vp_stage *st = NULL;
    assert_int_equal(vp_stage_new(&cfg, (vp_stage_range){l0, l1, first, last, 0, 0},
                                  &(vp_stage_options){.n_slots = 1, .seed = 7}, mem, &st, NULL),
                     VP_OK);
    size_t np, ng;
    float *pf = vp_stage_params(st, &np), *gf = vp_stage_grads(st, &ng);
    double *pd = malloc(sizeof(double) * np);
    for (int t = 0; t < st->n_tensors; t++) {            /* larger parameters, norms around 1 */
        bool norm_w = pf[st->tensors[t].offset] == 1.0f; /* only norm weights start at 1 */
        fill(pf + st->tensors[t].offset, pd + st->tensors[t].offset, st->tensors[t].count,
             norm_w ? 1.0f : 0.0f, 0.3f);
    }
    uint8_t tokens[N], targets[N];
    for (int i = 0; i < N; i++) {
        tokens[i] = (uint8_t)((i * 7 + 3) % V);
        targets[i] = (uint8_t)((i * 5 + 1) % V);
    }
    float *in = NULL, r[N * C], *out = NULL, *din = NULL;
    double ind[N * C], rd[N * C], loss = 0;
    fill(r, rd, N * C, 0.0f, 1.0f);
    if (!first) {
        in = malloc(sizeof(float) * N * C);
        fill(in, ind, N * C, 0.0f, 1.0f);
    }
    stage_ctx c = {l0, l1, first, last, pd, ind, rd, tokens, targets};
    assert_int_equal(vp_stage_forward(st, 0,
                                      &(vp_stage_io){.in = in,
                                                     .tokens = first ? tokens : NULL,
                                                     .targets = last ? targets : NULL,
                                                     .out = last ? NULL : &out,
                                                     .loss = last ? &loss : NULL},
                                      NULL),
                     VP_OK);
    if (last) {
        assert_true(fabs(loss - stage_J(&c)) < TOL_FWD * fabs(stage_J(&c)));
    } else {
        double *od = malloc(sizeof(double) * N * C);
        /* forward value: sum(r * out) against the reference */
        for (int i = 0; i < N * C; i++)
            od[i] = out[i];
        assert_true(fabs(dot(od, rd, N * C) - stage_J(&c)) < 1e-3 * sqrt(N * C));
        free(od);
        vp_stage_buffer_free(out);
    }
    float *dout = NULL;
    if (!last) {
        dout = malloc(sizeof(float) * N * C);
        memcpy(dout, r, sizeof r);
    }
    assert_int_equal(vp_stage_backward_input(st, 0, dout, 1.0f, first ? NULL : &din, NULL), VP_OK);
    assert_int_equal(vp_stage_backward_weight(st, 0, NULL), VP_OK);
    printf("stage [%d, %d)%s%s\n", l0, l1, first ? " first" : "", last ? " last" : "");
    if (!first)
        fd_check("d input (B)", stage_J, &c, ind, N * C, din);
    for (int t = 0; t < st->n_tensors; t++) {
        char name[32];
        snprintf(name, sizeof name, "tensor %d (W)", t);
        fd_check(name, stage_J, &c, pd + st->tensors[t].offset, st->tensors[t].count,
                 gf + st->tensors[t].offset);
    }
    assert_int_equal(vp_mem_current(mem), 0);
    vp_stage_buffer_free(din); /* in and dout belong to the stage */
    free(pd);
    vp_stage_free(st);
    vp_mem_free(mem);
}

static void test_embedding(void **state) {
    (void)state;
    check_stage(0, 0, true, false);
}

static void test_head_loss(void **state) {
    (void)state;
    check_stage(L, L, false, true);
}

static void test_middle_stage(void **state) {
    (void)state;
    check_stage(0, 1, true, false);
    check_stage(1, 2, false, false);
    check_stage(2, 3, false, true);
}

static void test_whole_model(void **state) {
    (void)state;
    check_stage(0, L, true, true);
}

/* The naive matmul is the reference for sgemm, in every transpose combination. */
static void test_sgemm_matches_naive(void **state) {
    (void)state;
    enum { M = 13, K = 17, NN = 11 };
    float a[K * M + M * K], b[K * NN + NN * K], c1[M * NN], c2[M * NN];
    fill(a, NULL, sizeof a / sizeof a[0], 0.0f, 1.0f);
    fill(b, NULL, sizeof b / sizeof b[0], 0.0f, 1.0f);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            fill(c1, NULL, M * NN, 0.0f, 1.0f);
            memcpy(c2, c1, sizeof c1);
            int lda = ta ? M : K, ldb = tb ? K : NN;
            vp__sgemm(false, ta, tb, M, NN, K, 0.5f, a, lda, b, ldb, 1.0f, c1, NN);
            vp__sgemm_naive(ta, tb, M, NN, K, 0.5f, a, lda, b, ldb, 1.0f, c2, NN);
            for (int i = 0; i < M * NN; i++)
                assert_true(fabsf(c1[i] - c2[i]) < 1e-5f * (1.0f + fabsf(c2[i])));
        }
}

/* A whole stage made with the naive matmul option agrees with the sgemm one. */
static void test_stage_naive_matmul(void **state) {
    (void)state;
    double loss[2];
    float *grads[2];
    size_t n = 0;
    for (int naive = 0; naive < 2; naive++) {
        vp_mem *mem = vp_mem_new();
        vp_stage *st = NULL;
        assert_int_equal(
            vp_stage_new(&cfg, (vp_stage_range){0, L, true, true, 0, 0},
                         &(vp_stage_options){.n_slots = 1, .seed = 3, .naive_matmul = naive}, mem,
                         &st, NULL),
            VP_OK);
        uint8_t tok[N], tgt[N];
        for (int i = 0; i < N; i++) {
            tok[i] = (uint8_t)(i % V);
            tgt[i] = (uint8_t)((i + 1) % V);
        }
        assert_int_equal(
            vp_stage_forward(
                st, 0, &(vp_stage_io){.tokens = tok, .targets = tgt, .loss = &loss[naive]}, NULL),
            0);
        assert_int_equal(vp_stage_backward_input(st, 0, NULL, 1.0f, NULL, NULL), 0);
        assert_int_equal(vp_stage_backward_weight(st, 0, NULL), 0);
        float *g = vp_stage_grads(st, &n);
        grads[naive] = malloc(n * sizeof(float));
        memcpy(grads[naive], g, n * sizeof(float));
        vp_stage_free(st);
        vp_mem_free(mem);
    }
    assert_true(fabs(loss[0] - loss[1]) < 1e-5);
    double *gd = to_double(grads[1], (long)n);
    assert_true(max_rel_diff(grads[0], gd, (long)n) < 1e-4);
    free(gd);
    free(grads[0]);
    free(grads[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_block),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_head_loss),
        cmocka_unit_test(test_middle_stage),
        cmocka_unit_test(test_whole_model),
        cmocka_unit_test(test_sgemm_matches_naive),
        cmocka_unit_test(test_stage_naive_matmul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
