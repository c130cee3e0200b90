/* One pre-LN transformer block: x2 = x + proj(attn(qkv(ln1(x)))),
 * out = x2 + fcproj(gelu(fc(ln2(x2)))). Buffers come from the caller (the stage), which
 * owns their lifetime and accounting; these functions only compute. */
#include <stddef.h>

#include "model/kernels.h"

#define TENSOR(name, mult, square, decay, init)                                                    \
    { offsetof(vp__block_params, name), mult, square, decay, VP__INIT_##init }
const vp__layer_tensor vp__layer_tensors[VP__LAYER_TENSORS] = {
    TENSOR(ln1w, 1, false, false, ONES),      TENSOR(ln1b, 1, false, false, ZEROS),
    TENSOR(qkvw, 3, true, true, NORMAL),      TENSOR(qkvb, 3, false, false, ZEROS),
    TENSOR(projw, 1, true, true, RESIDUAL),   TENSOR(projb, 1, false, false, ZEROS),
    TENSOR(ln2w, 1, false, false, ONES),      TENSOR(ln2b, 1, false, false, ZEROS),
    TENSOR(fcw, 4, true, true, NORMAL),       TENSOR(fcb, 4, false, false, ZEROS),
    TENSOR(fcprojw, 4, true, true, RESIDUAL), TENSOR(fcprojb, 1, false, false, ZEROS),
};
#undef TENSOR

long vp__layer_tensor_count(int j, int C) {
    const vp__layer_tensor *t = &vp__layer_tensors[j];
    return (long)t->mult * C * (t->square ? C : 1);
}

int vp__block_param_count(int C) {
    long n = 0;
    for (int j = 0; j < VP__LAYER_TENSORS; j++)
        n += vp__layer_tensor_count(j, C);
    return (int)n;
}

void vp__block_params_at(vp__block_params *p, float *base, int C) {
    for (int j = 0; j < VP__LAYER_TENSORS; j++) {
        float **view = (float **)((char *)p + vp__layer_tensors[j].field);
        *view = base;
        base += vp__layer_tensor_count(j, C);
    }
}

int64_t vp__block_work_floats(vp__dims d) {
    int64_t N = (int64_t)d.B * d.T, hs = d.C / d.NH;
    return N * 4 * d.C + (int64_t)d.T * d.T + 3 * (int64_t)d.T * hs;
}

static void add_inplace(float *y, const float *x, long n) {
    for (long i = 0; i < n; i++)
        y[i] += x[i];
}

void vp__block_forward(float *out, vp__block_act *a, const vp__block_params *p, vp__dims d) {
    int N = d.B * d.T, C = d.C;
    vp__layernorm_forward(a->ln1, a->mean1, a->rstd1, a->x, p->ln1w, p->ln1b, N, C);
    vp__linear_forward(a->qkv, a->ln1, p->qkvw, p->qkvb, N, C, 3 * C, d.naive);
    vp__attention_forward(a->att, a->probs, a->qkv, d);
    vp__linear_forward(a->x2, a->att, p->projw, p->projb, N, C, C, d.naive);
    add_inplace(a->x2, a->x, (long)N * C);
    vp__layernorm_forward(a->ln2, a->mean2, a->rstd2, a->x2, p->ln2w, p->ln2b, N, C);
    vp__linear_forward(a->h, a->ln2, p->fcw, p->fcb, N, C, 4 * C, d.naive);
    vp__gelu_forward(a->hg, a->h, N * 4 * C);
    vp__linear_forward(out, a->hg, p->fcprojw, p->fcprojb, N, 4 * C, C, d.naive);
    add_inplace(out, a->x2, (long)N * C);
}

/* B of the block, walking the forward above backwards. work: [N,4C] then attention
 * scratch; the [N,4C] part holds dhg, then dln2, datt, dln1 in turn. */
void vp__block_backward_input(vp__block_act *a, float *dout, const vp__block_params *p, float *work,
                              vp__dims d) {
    int N = d.B * d.T, C = d.C;
    float *w = work, *attn_work = work + (long)N * 4 * C;
    a->dout = dout;
    /* out = x2 + fcproj(hg): dhg = dout @ fcprojw */
    vp__linear_backward_input(w, dout, p->fcprojw, N, 4 * C, C, d.naive);
    /* hg = gelu(h): dh = gelu'(h) * dhg, into h */
    vp__gelu_backward(a->h, a->h, w, N * 4 * C);
    /* h = fc(ln2): dln2 = dh @ fcw */
    vp__linear_backward_input(w, a->h, p->fcw, N, C, 4 * C, d.naive);
    /* ln2 = layernorm(x2), plus the residual: dx2 = dout + dln2/dx2, into x2 */
    vp__layernorm_backward_input(a->x2, a->part + 2 * C, dout, w, a->x2, a->mean2, a->rstd2,
                                 p->ln2w, N, C);
    /* x2 = x + proj(att): datt = dx2 @ projw */
    vp__linear_backward_input(w, a->x2, p->projw, N, C, C, d.naive);
    /* att = attention(qkv): dqkv, into qkv */
    vp__attention_backward(a->qkv, w, a->probs, attn_work, d);
    /* qkv = qkv-linear(ln1): dln1 = dqkv @ qkvw */
    vp__linear_backward_input(w, a->qkv, p->qkvw, N, C, 3 * C, d.naive);
    /* ln1 = layernorm(x), plus the residual: dx = dx2 + dln1/dx, into x */
    vp__layernorm_backward_input(a->x, a->part, a->x2, w, a->x, a->mean1, a->rstd1, p->ln1w, N, C);
}

/* W of the block: each linear's dW += dY^T X, db += sum dY; norms add their sums */
void vp__block_backward_weight(vp__block_params *g, const vp__block_act *a, vp__dims d) {
    int N = d.B * d.T, C = d.C;
    vp__linear_backward_weight(g->fcprojw, g->fcprojb, a->dout, a->hg, N, 4 * C, C, d.naive);
    vp__linear_backward_weight(g->fcw, g->fcb, a->h, a->ln2, N, C, 4 * C, d.naive);
    vp__linear_backward_weight(g->projw, g->projb, a->x2, a->att, N, C, C, d.naive);
    vp__linear_backward_weight(g->qkvw, g->qkvb, a->qkv, a->ln1, N, C, 3 * C, d.naive);
    vp__layernorm_backward_weight(g->ln1w, g->ln1b, a->part, C);
    vp__layernorm_backward_weight(g->ln2w, g->ln2b, a->part + 2 * C, C);
}
