/* Causal multi-head self-attention. Each (sequence, head) is three sgemm calls forward
 * and five backward over full T x T score matrices; the causal mask zeroes the upper
 * triangle of the probabilities, so it contributes nothing. */
#include <math.h>
#include <string.h>

#include "model/kernels.h"

/* p[T,T] = softmax(scale * q[T,hs] @ k[T,hs]^T, causal) of one (sequence, head). */
static void head_probs(float *p, const float *q, const float *k, int T, int hs, int C3,
                       bool naive) {
    float scale = 1.0f / sqrtf((float)hs);
    vp__sgemm(naive, false, true, T, T, hs, scale, q, C3, k, C3, 0.0f, p, T);
    for (int t = 0; t < T; t++) {
        float *row = p + (long)t * T;
        float mx = row[0];
        for (int s = 1; s <= t; s++)
            mx = row[s] > mx ? row[s] : mx;
        float sum = 0.0f;
        for (int s = 0; s <= t; s++) {
            row[s] = expf(row[s] - mx);
            sum += row[s];
        }
        float inv = 1.0f / sum;
        for (int s = 0; s <= t; s++)
            row[s] *= inv;
        for (int s = t + 1; s < T; s++)
            row[s] = 0.0f;
    }
}

/* The probabilities of every (sequence, head), and with out the output p @ v. */
static void attention(float *out, float *probs, const float *qkv, vp__dims d) {
    int B = d.B, T = d.T, C = d.C, NH = d.NH, hs = C / NH, C3 = 3 * C;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q = qkv + (long)b * T * C3 + h * hs, *k = q + C, *v = q + 2 * C;
            float *p = probs + ((long)b * NH + h) * T * T;
            head_probs(p, q, k, T, hs, C3, d.naive);
            /* out[T,hs] = p[T,T] @ v[T,hs] */
            if (out)
                vp__sgemm(d.naive, false, false, T, hs, T, 1.0f, p, T, v, C3, 0.0f,
                          out + (long)b * T * C + h * hs, C);
        }
    }
}

void vp__attention_forward(float *out, float *probs, const float *qkv, vp__dims d) {
    attention(out, probs, qkv, d);
}

void vp__attention_probs(float *probs, const float *qkv, vp__dims d) {
    attention(NULL, probs, qkv, d);
}

/* d/d(q,k,v) of out = softmax(scale * q k^T, causal) v. With dp = dout v^T:
 * dv = p^T dout, ds = p * (dp - rowsum(p * dp)), dq = scale ds k, dk = scale ds^T q */
void vp__attention_backward(float *qkv, const float *dout, const float *probs, float *work,
                            vp__dims dims) {
    int B = dims.B, T = dims.T, C = dims.C, NH = dims.NH, hs = C / NH, C3 = 3 * C;
    bool naive = dims.naive;
    float scale = 1.0f / sqrtf((float)hs);
    float *ds = work, *dq = work + (long)T * T, *dk = dq + (long)T * hs, *dv = dk + (long)T * hs;
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            float *q = qkv + (long)b * T * C3 + h * hs, *k = q + C, *v = q + 2 * C;
            const float *p = probs + ((long)b * NH + h) * T * T;
            const float *d = dout + (long)b * T * C + h * hs;
            vp__sgemm(naive, false, true, T, T, hs, 1.0f, d, C, v, C3, 0.0f, ds, T);
            vp__sgemm(naive, true, false, T, hs, T, 1.0f, p, T, d, C, 0.0f, dv, hs);
            for (int t = 0; t < T; t++) {
                const float *pr = p + (long)t * T;
                float *dr = ds + (long)t * T;
                float dot = 0.0f;
                for (int s = 0; s <= t; s++)
                    dot += pr[s] * dr[s];
                for (int s = 0; s <= t; s++)
                    dr[s] = pr[s] * (dr[s] - dot);
                for (int s = t + 1; s < T; s++)
                    dr[s] = 0.0f;
            }
            vp__sgemm(naive, false, false, T, hs, T, scale, ds, T, k, C3, 0.0f, dq, hs);
            vp__sgemm(naive, true, false, T, hs, T, scale, ds, T, q, C3, 0.0f, dk, hs);
            for (int t = 0; t < T; t++) {
                memcpy(q + (long)t * C3, dq + (long)t * hs, (size_t)hs * sizeof(float));
                memcpy(k + (long)t * C3, dk + (long)t * hs, (size_t)hs * sizeof(float));
                memcpy(v + (long)t * C3, dv + (long)t * hs, (size_t)hs * sizeof(float));
            }
        }
    }
}
