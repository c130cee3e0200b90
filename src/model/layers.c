/* Linear, LayerNorm, GELU, embedding and softmax cross-entropy kernels (see kernels.h). */
#include <math.h>
#include <string.h>

#include "model/kernels.h"

/* ---- linear ---- */

void vp__linear_forward(float *out, const float *inp, const float *w, const float *b, int N, int IC,
                        int OC, bool naive) {
    vp__sgemm(naive, false, true, N, OC, IC, 1.0f, inp, IC, w, IC, 0.0f, out, OC);
    if (!b)
        return;
    for (int n = 0; n < N; n++) {
        float *o = out + (long)n * OC;
        for (int i = 0; i < OC; i++)
            o[i] += b[i];
    }
}

/* d/d(inp) of out = inp @ w^T + b */
void vp__linear_backward_input(float *dinp, const float *dout, const float *w, int N, int IC,
                               int OC, bool naive) {
    vp__sgemm(naive, false, false, N, IC, OC, 1.0f, dout, OC, w, IC, 0.0f, dinp, IC);
}

/* d/d(w), d/d(b) of out = inp @ w^T + b */
void vp__linear_backward_weight(float *dw, float *db, const float *dout, const float *inp, int N,
                                int IC, int OC, bool naive) {
    vp__sgemm(naive, true, false, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dw, IC);
    if (!db)
        return;
    for (int n = 0; n < N; n++) {
        const float *d = dout + (long)n * OC;
        for (int i = 0; i < OC; i++)
            db[i] += d[i];
    }
}

/* ---- layernorm ---- */

void vp__layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w,
                           const float *b, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *xr = x + (long)n * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++)
            m += xr[i];
        m /= C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float d = xr[i] - m;
            v += d * d;
        }
        v /= C;
        float s = 1.0f / sqrtf(v + 1e-5f);
        float *o = out + (long)n * C;
        for (int i = 0; i < C; i++)
            o[i] = (xr[i] - m) * s * w[i] + b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

/* d/dx of out = xhat * w + b, xhat = (x - mean) * rstd:
 * dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dout * w */
void vp__layernorm_backward_input(float *dx, float *part, const float *dres, const float *dout,
                                  const float *x, const float *mean, const float *rstd,
                                  const float *w, int N, int C) {
    memset(part, 0, 2 * (size_t)C * sizeof(float));
    for (int n = 0; n < N; n++) {
        const float *xr = x + (long)n * C, *dr = dout + (long)n * C;
        float m = mean[n], s = rstd[n];
        float dmean = 0.0f, dnorm_mean = 0.0f;
        for (int i = 0; i < C; i++) {
            float xhat = (xr[i] - m) * s;
            float dxhat = dr[i] * w[i];
            dmean += dxhat;
            dnorm_mean += dxhat * xhat;
        }
        dmean /= C;
        dnorm_mean /= C;
        float *o = dx + (long)n * C;
        const float *res = dres ? dres + (long)n * C : NULL;
        for (int i = 0; i < C; i++) {
            float xhat = (xr[i] - m) * s;
            float dxhat = dr[i] * w[i];
            part[i] += dr[i] * xhat;
            part[C + i] += dr[i];
            float g = (dxhat - dmean - xhat * dnorm_mean) * s;
            o[i] = res ? res[i] + g : g;
        }
    }
}

/* d/dw, d/db of out = xhat * w + b: sums over rows collected by backward_input */
void vp__layernorm_backward_weight(float *dw, float *db, const float *part, int C) {
    for (int i = 0; i < C; i++) {
        dw[i] += part[i];
        db[i] += part[C + i];
    }
}

/* ---- GELU ---- */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* tanh(u) = sign(u) (1 - e) / (1 + e), e = exp(-2|u|); exp by 2^k times a degree-6
 * Taylor polynomial on |r| <= ln2/2. Absolute error < 2e-7. Four lanes at a time with
 * GCC/Clang vector extensions (plain SSE2 in a default build): glibc's tanhf made GELU
 * a third of a small model's step. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

static inline v4f tanh4(v4f u) {
    v4i ui = (v4i)u, lim = (v4i){0} + 0x41100000;  /* bits of 9.0f */
    v4i sign = ui & INT32_MIN, a = ui & INT32_MAX; /* |u| as bits */
    v4i small = a < lim;
    a = (a & small) | (lim & ~small); /* min(|u|, 9): positive floats order as integers */
    v4f x = -2.0f * (v4f)a;
    v4f k = (x * 1.4426950408889634f - 12582912.0f) + 12582912.0f; /* round to integer */
    v4f r = x - k * 0.693145751953125f - k * 1.428606765330187e-06f;
    v4f p =
        1.0f +
        r * (1.0f + r * (0.5f + r * (0.16666667f +
                                     r * (0.041666668f + r * (0.008333334f + r * 0.0013888889f)))));
    v4f e = p * (v4f)((__builtin_convertvector(k, v4i) + 127) << 23);
    v4f t = (1.0f - e) / (1.0f + e);
    return (v4f)((v4i)t | sign);
}

/* Unaligned loads and stores of four floats. */
static inline v4f load4(const float *p) {
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store4(float *p, v4f v) {
    memcpy(p, &v, sizeof v);
}

/* 0.5 x (1 + tanh(u)), u = k (x + 0.044715 x^3) */
static inline v4f gelu4(v4f x) {
    return 0.5f * x * (1.0f + tanh4(GELU_K * (x + 0.044715f * x * x * x)));
}

/* d/dx of 0.5 x (1 + tanh(u)), u = k (x + 0.044715 x^3):
 * 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 * 0.044715 x^2) */
static inline v4f gelu_grad4(v4f x) {
    v4f t = tanh4(GELU_K * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 0.134145f * x * x);
}

/* Full lanes of four, then the tail through zero-padded copies. Element-wise, so the
 * output may alias an input. */
void vp__gelu_forward(float *out, const float *x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4)
        store4(out + i, gelu4(load4(x + i)));
    if (i < n) {
        float xt[4] = {0}, yt[4];
        memcpy(xt, x + i, (size_t)(n - i) * sizeof(float));
        store4(yt, gelu4(load4(xt)));
        memcpy(out + i, yt, (size_t)(n - i) * sizeof(float));
    }
}

void vp__gelu_backward(float *dx, const float *x, const float *dout, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4)
        store4(dx + i, gelu_grad4(load4(x + i)) * load4(dout + i));
    if (i < n) {
        float xt[4] = {0}, dt[4] = {0}, yt[4];
        memcpy(xt, x + i, (size_t)(n - i) * sizeof(float));
        memcpy(dt, dout + i, (size_t)(n - i) * sizeof(float));
        store4(yt, gelu_grad4(load4(xt)) * load4(dt));
        memcpy(dx + i, yt, (size_t)(n - i) * sizeof(float));
    }
}

/* ---- embedding ---- */

void vp__embedding_forward(float *out, const uint8_t *tokens, const float *wte, const float *wpe,
                           int B, int T, int C) {
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float *o = out + ((long)b * T + t) * C;
            const float *e = wte + (long)tokens[b * T + t] * C, *p = wpe + (long)t * C;
            for (int i = 0; i < C; i++)
                o[i] = e[i] + p[i];
        }
    }
}

void vp__embedding_add_positions(float *out, const float *wpe, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((long)b * T + t) * C;
            const float *p = wpe + (long)t * C;
            for (int i = 0; i < C; i++)
                o[i] = o[i] + p[i];
        }
}

/* d/d(wte), d/d(wpe) of out[b,t] = wte[tok[b,t]] + wpe[t] (dwte NULL: d/d(wpe) only) */
void vp__embedding_backward_weight(float *dwte, float *dwpe, const float *dout,
                                   const uint8_t *tokens, int B, int T, int C) {
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((long)b * T + t) * C;
            float *p = dwpe + (long)t * C;
            if (!dwte) {
                for (int i = 0; i < C; i++)
                    p[i] += d[i];
                continue;
            }
            float *e = dwte + (long)tokens[b * T + t] * C;
            for (int i = 0; i < C; i++) {
                e[i] += d[i];
                p[i] += d[i];
            }
        }
    }
}

/* ---- softmax cross-entropy ---- */

double vp__crossentropy_forward(float *logits, const uint8_t *targets, int N, int V) {
    double loss = 0.0;
    for (int n = 0; n < N; n++) {
        float *l = logits + (long)n * V;
        float mx = l[0];
        for (int i = 1; i < V; i++)
            mx = l[i] > mx ? l[i] : mx;
        float lt = l[targets[n]] - mx;
        float sum = 0.0f;
        for (int i = 0; i < V; i++) {
            l[i] = expf(l[i] - mx);
            sum += l[i];
        }
        float inv = 1.0f / sum;
        for (int i = 0; i < V; i++)
            l[i] *= inv;
        loss += (double)logf(sum) - lt;
    }
    return loss;
}

/* d/d(logits) of scale * sum_n -log softmax(logits[n])[target[n]] */
void vp__crossentropy_backward(float *probs, const uint8_t *targets, float scale, int N, int V) {
    for (int n = 0; n < N; n++) {
        float *p = probs + (long)n * V;
        p[targets[n]] -= 1.0f;
        for (int i = 0; i < V; i++)
            p[i] *= scale;
    }
}
