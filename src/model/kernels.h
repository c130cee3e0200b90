/* Numeric kernels of the transformer (fp32, row-major). Shapes use N = B*T rows.
 * Forward kernels write their outputs; backward-input kernels write (or accumulate,
 * where said) input gradients; backward-weight kernels accumulate (+=) into gradients.
 * Argument order follows llm.c: outputs, then inputs, then weights, then dimensions. */
#ifndef VPIPE_MODEL_KERNELS_H
#define VPIPE_MODEL_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- matmul (matmul.c) ---- */

/* C[M,N] = alpha * op(A) op(B) + beta * C, row-major; op(A) is [M,K] (A is [K,M] when
 * ta), op(B) is [K,N] (B is [N,K] when tb). cblas_sgemm, or with naive the reference
 * below (every kernel that multiplies takes this choice from its caller, the stage). */
void vp__sgemm(bool naive, bool ta, bool tb, int M, int N, int K, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* The same product with plain loops (double accumulator); the reference. */
void vp__sgemm_naive(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc);

/* ---- linear (layers.c): out = inp @ W^T + b; naive selects the reference matmul ---- */

/* out[N,OC] = inp[N,IC] @ w[OC,IC]^T + b[OC] (b may be NULL) */
void vp__linear_forward(float *out, const float *inp, const float *w, const float *b, int N, int IC,
                        int OC, bool naive);
/* B: dinp[N,IC] = dout[N,OC] @ w[OC,IC] */
void vp__linear_backward_input(float *dinp, const float *dout, const float *w, int N, int IC,
                               int OC, bool naive);
/* W: dw[OC,IC] += dout[N,OC]^T @ inp[N,IC]; db[OC] += sum_n dout[n,:] (db may be NULL) */
void vp__linear_backward_weight(float *dw, float *db, const float *dout, const float *inp, int N,
                                int IC, int OC, bool naive);

/* ---- layernorm (layers.c): out = (x - mean) * rstd * w + b, eps 1e-5 ---- */

/* out[N,C], mean[N], rstd[N] from x[N,C], w[C], b[C] */
void vp__layernorm_forward(float *out, float *mean, float *rstd, const float *x, const float *w,
                           const float *b, int N, int C);
/* B: dx[N,C] = dres[N,C] + d(out)/dx applied to dout[N,C] (dres may be NULL: no residual;
 * dx may alias x or dres). Also writes the weight-gradient sums of this call:
 * part[0:C] = sum_n dout*xhat, part[C:2C] = sum_n dout (rows in order). */
void vp__layernorm_backward_input(float *dx, float *part, const float *dres, const float *dout,
                                  const float *x, const float *mean, const float *rstd,
                                  const float *w, int N, int C);
/* W: dw[C] += part[0:C]; db[C] += part[C:2C] */
void vp__layernorm_backward_weight(float *dw, float *db, const float *part, int C);

/* ---- GELU, tanh approximation (layers.c) ---- */

/* out[n] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
void vp__gelu_forward(float *out, const float *x, int n);
/* B: dx[n] = gelu'(x) * dout (dx may alias x or dout) */
void vp__gelu_backward(float *dx, const float *x, const float *dout, int n);

/* The shape of a microbatch's activations (B sequences of T tokens, width C, NH heads),
 * and the matmul the kernels of a stage use (naive: the plain-loop reference). */
typedef struct vp__dims {
    int B, T, C, NH;
    bool naive;
} vp__dims;

/* ---- causal multi-head attention (attention.c) ----
 * qkv[B,T,3C] holds q, k, v side by side; head h uses columns h*hs..(h+1)*hs of each. */

/* out[B,T,C] = softmax(q k^T / sqrt(hs), causal) v per head; probs[B,NH,T,T] kept */
void vp__attention_forward(float *out, float *probs, const float *qkv, vp__dims d);
/* probs[B,NH,T,T] alone, the same bits vp__attention_forward keeps (a selective
 * recomputation rebuilds them) */
void vp__attention_probs(float *probs, const float *qkv, vp__dims d);
/* B: overwrites qkv with dqkv[B,T,3C] given dout[B,T,C] and probs;
 * work holds T*T + 3*T*hs floats. */
void vp__attention_backward(float *qkv, const float *dout, const float *probs, float *work,
                            vp__dims d);

/* ---- embedding (layers.c): out[b,t] = wte[tok[b,t]] + wpe[t] ---- */

/* out[B,T,C] from tokens[B,T], wte[V,C], wpe[T,C] */
void vp__embedding_forward(float *out, const uint8_t *tokens, const float *wte, const float *wpe,
                           int B, int T, int C);
/* out[b,t] := out[b,t] + wpe[t] (the vocabulary shards' token embeddings, added up) */
void vp__embedding_add_positions(float *out, const float *wpe, int B, int T, int C);
/* W: dwte[tok] += dout[b,t]; dwpe[t] += dout[b,t], in (b, t) order (dwte NULL: dwpe only) */
void vp__embedding_backward_weight(float *dwte, float *dwpe, const float *dout,
                                   const uint8_t *tokens, int B, int T, int C);

/* ---- softmax cross-entropy (layers.c) ---- */

/* logits[N,V] -> probs in place; returns sum_n -log p[n, targets[n]] (double) */
double vp__crossentropy_forward(float *logits, const uint8_t *targets, int N, int V);
/* B: probs[N,V] -> dlogits in place: (p - onehot(target)) * scale */
void vp__crossentropy_backward(float *probs, const uint8_t *targets, float scale, int N, int V);

/* ---- transformer block (block.c) ---- */

typedef struct vp__block_params {
    float *ln1w, *ln1b;       /* [C], [C] */
    float *qkvw, *qkvb;       /* [3C,C], [3C] */
    float *projw, *projb;     /* [C,C], [C] */
    float *ln2w, *ln2b;       /* [C], [C] */
    float *fcw, *fcb;         /* [4C,C], [4C] */
    float *fcprojw, *fcprojb; /* [C,4C], [C] */
} vp__block_params;

/* How a parameter tensor starts: zeros, ones, normal with std 0.02, or (the projections
 * into the residual stream) normal with std 0.02 / sqrt(2 * layers). */
typedef enum { VP__INIT_ZEROS, VP__INIT_ONES, VP__INIT_NORMAL, VP__INIT_RESIDUAL } vp__init;

/* One of the tensors of a block, in the order of the flat parameter arrays: its field in
 * vp__block_params, its element count (mult * C, times C again when square), whether
 * weight decay applies (matrices), and how it starts. The one table of the layout. */
typedef struct vp__layer_tensor {
    size_t field;
    int mult;
    bool square, decay;
    vp__init init;
} vp__layer_tensor;

enum { VP__LAYER_TENSORS = 12 };
extern const vp__layer_tensor vp__layer_tensors[VP__LAYER_TENSORS];

/* Element count of block tensor j for width C. */
long vp__layer_tensor_count(int j, int C);

/* Parameter count of one block, and the views of its tensors laid out from base. */
int vp__block_param_count(int C);
void vp__block_params_at(vp__block_params *p, float *base, int C);

/* Buffers of one block for one microbatch. After F all but dout hold activations;
 * B turns x into dx, x2 into dx2, qkv into dqkv, h into dh, takes dout, fills part;
 * W reads ln1, att, ln2, hg (the linears' inputs) and the dY buffers. */
typedef struct vp__block_act {
    float *x;                   /* [N,C]  input            -> dx after B */
    float *ln1, *mean1, *rstd1; /* [N,C], [N], [N] */
    float *qkv;                 /* [N,3C]                  -> dqkv */
    float *probs;               /* [B,NH,T,T] */
    float *att;                 /* [N,C]  attention output (input of proj) */
    float *x2;                  /* [N,C]  x + proj(att)    -> dx2 */
    float *ln2, *mean2, *rstd2; /* [N,C], [N], [N] */
    float *h;                   /* [N,4C] fc output        -> dh */
    float *hg;                  /* [N,4C] gelu(h) (input of fcproj) */
    float *part;                /* [4C]   ln1 then ln2 weight-gradient sums */
    float *dout;                /* [N,C]  output gradient (dY of fcproj), set by B */
} vp__block_act;

/* Scratch floats block backward needs: N*4C + T*T + 3*T*hs. */
int64_t vp__block_work_floats(vp__dims d);

/* out[N,C] = x2 + fcproj(gelu(fc(ln2(x2)))), x2 = x + proj(attn(qkv(ln1(x)))) */
void vp__block_forward(float *out, vp__block_act *a, const vp__block_params *p, vp__dims d);
/* B: given dout (stored in a->dout), leaves dx in a->x */
void vp__block_backward_input(vp__block_act *a, float *dout, const vp__block_params *p, float *work,
                              vp__dims d);
/* W: g += this microbatch's weight gradients */
void vp__block_backward_weight(vp__block_params *g, const vp__block_act *a, vp__dims d);

/* ---- the BLAS kernel (blas.c) ---- */

/* CPU features the choice of a BLAS kernel looks at (vp__cpu_features). */
enum {
    VP__CPU_AVX2 = 1 << 0,
    VP__CPU_FMA = 1 << 1,
    VP__CPU_AVX512F = 1 << 2,
    VP__CPU_AVX512CD = 1 << 3,
    VP__CPU_AVX512BW = 1 << 4,
    VP__CPU_AVX512DQ = 1 << 5,
    VP__CPU_AVX512VL = 1 << 6,
    VP__CPU_AVX512BF16 = 1 << 7
};

/* The features of the CPU this runs on, as the operating system enables them (0 off
 * x86). */
unsigned vp__cpu_features(void);

/* vp_blas_better_kernel for a CPU with the features cpu (VP__CPU_* bits). */
const char *vp__blas_choose(const char *kernel, unsigned cpu);

#endif
