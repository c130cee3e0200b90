/* The shape of a model's pieces: which kind each layer is (a dense or a mixture-of-experts
 * MLP, full or sliding-window attention), the attention's widths, and the matrix
 * multiplies of one forward pass of a piece on one rank. Parameters, FLOPs and pass times
 * are all read off that one list of multiplies, so they cannot disagree.
 *
 * Per rank: tensor parallelism splits the attention's heads and the MLP's inner width
 * over tp (MLA's down-projections to its latents are duplicated on every TP rank, as
 * Megatron-LM runs them); context parallelism gives each rank seq / cp of the tokens and,
 * with its causal load balancing, 1/cp of the attention. The experts of a layer are split
 * over ep ranks and each expert's inner width over etp; with balanced routing (the
 * frameworks' benchmarks force it) each rank's experts take top_k x capacity x its own
 * tokens, every ETP rank of an expert all of that expert's tokens. */
#include "price/price_internal.h"

int vp__head_dim(const vp_arch *a) {
    return a->head_dim ? a->head_dim : a->hidden / a->heads;
}

vp__attn vp__attention(const vp_arch *a) {
    double H = a->heads;
    if (a->kv_lora > 0) {
        double qk = a->qk_nope + a->qk_rope;
        return (vp__attn){
            .q = H * qk, .k = H * qk, .v = H * a->v_head, .d_qk = qk, .d_v = a->v_head};
    }
    double d = vp__head_dim(a), kv = a->kv_heads * d;
    return (vp__attn){.q = H * d, .k = kv, .v = kv, .d_qk = d, .d_v = d};
}

unsigned vp__layer_kind(const vp_arch *a, int l) {
    unsigned kind = 0;
    if (a->experts > 0 && l >= a->dense_layers)
        kind |= VP__MOE;
    if (a->window > 0 && l % a->window_period < a->window_layers)
        kind |= VP__WINDOW;
    return kind;
}

unsigned vp__main_kind(const vp_arch *a) {
    return vp__layer_kind(a, a->layers - 1);
}

void vp__kind_counts(const vp_arch *a, int l0, int l1, int counts[VP__KINDS]) {
    for (int k = 0; k < VP__KINDS; k++)
        counts[k] = 0;
    for (int l = l0; l < l1; l++)
        counts[vp__layer_kind(a, l)]++;
}

double vp__tokens(const vp_workload *t) {
    return (double)t->mbs * t->seq / t->cp;
}

double vp__keys(const vp_arch *a, const vp_workload *t, unsigned kind) {
    double s = t->seq, w = a->window;
    return (kind & VP__WINDOW) && w < s ? 2 * w - w * w / s : s;
}

double vp__capacity(const vp_arch *a) {
    return a->capacity > 0 ? a->capacity : 1;
}

double vp__expert_rows(const vp_arch *a, const vp_workload *t) {
    return vp__tokens(t) / t->tp * a->top_k * vp__capacity(a);
}

double vp__attention_flops(const vp_arch *a, const vp_workload *t, unsigned kind) {
    vp__attn at = vp__attention(a);
    return 2 * vp__tokens(t) * vp__keys(a, t, kind) * a->heads * (at.d_qk + at.d_v) / t->tp;
}

/* Gates of an MLP: SwiGLU's gate and up, or one matrix. */
static double gates(const vp_arch *a) {
    return a->ffn_kind == VP_FFN_SWIGLU ? 2 : 1;
}

static int push(vp__gemm *g, int n, double m, double cols, double k, double count, bool fp8) {
    g[n] = (vp__gemm){m, cols, k, count, fp8, false};
    return n + 1;
}

/* The attention's linears: query, key and value (MLA: through their latents), output. */
static int attention_gemms(const vp_arch *a, double T, double tp, vp__gemm *g, int n) {
    vp__attn at = vp__attention(a);
    double h = a->hidden;
    if (a->kv_lora > 0) {
        double q_in = a->q_lora > 0 ? a->q_lora : h;
        if (a->q_lora > 0)
            n = push(g, n, T, a->q_lora, h, 1, true);
        n = push(g, n, T, at.q / tp, q_in, 1, true);
        n = push(g, n, T, a->kv_lora + a->qk_rope, h, 1, true);
        n = push(g, n, T, a->heads * (a->qk_nope + a->v_head) / tp, a->kv_lora, 1, true);
    } else {
        n = push(g, n, T, (at.q + at.k + at.v) / tp, h, 1, true);
    }
    return push(g, n, T, h, a->heads * at.d_v / tp, 1, true);
}

bool vp__op_recompute(const vp_workload *t) {
    return t->framework == VP_FRAMEWORK_TORCHTITAN && t->recompute == VP_RECOMPUTE_SELECTIVE;
}

bool vp__op_priced(const vp_arch *a) {
    return a->kv_lora == 0 && a->experts == 0 && a->ffn_kind == VP_FFN_SWIGLU;
}

/* An MLP of inner width f over rows tokens, f split over tp, count of them. */
static int mlp_gemms(const vp_arch *a, double rows, double f, double count, vp__gemm *g, int n) {
    n = push(g, n, rows, gates(a) * f, a->hidden, count, true);
    return push(g, n, rows, a->hidden, f, count, true);
}

unsigned vp__selective_modules(const vp_workload *t) {
    if (t->recompute != VP_RECOMPUTE_SELECTIVE || t->framework != VP_FRAMEWORK_MEGATRON)
        return 0;
    return t->recompute_modules ? t->recompute_modules : VP_RECOMPUTE_CORE_ATTN;
}

int vp__recomputed_gemms(const vp_arch *a, const vp_workload *t, unsigned kind, vp__gemm *g,
                         bool *core) {
    vp__attn at = vp__attention(a);
    double T = vp__tokens(t), tp = t->tp, h = a->hidden;
    int n = 0;
    *core = false;
    if (vp__op_recompute(t)) {
        *core = true;
        n = push(g, n, T, at.k / tp, h, 1, true);              /* key */
        n = push(g, n, T, h, a->heads * at.d_v / tp, 1, true); /* output */
        return push(g, n, T, a->ffn / tp, h, 1, true);         /* up */
    }
    unsigned m = vp__selective_modules(t);
    *core = m & VP_RECOMPUTE_CORE_ATTN;
    if ((m & VP_RECOMPUTE_MLA_UP_PROJ) && a->kv_lora > 0) {
        n = push(g, n, T, at.q / tp, a->q_lora > 0 ? a->q_lora : h, 1, true);
        n = push(g, n, T, a->heads * (a->qk_nope + a->v_head) / tp, a->kv_lora, 1, true);
    }
    if ((m & VP_RECOMPUTE_MLP) && !(kind & VP__MOE))
        n = mlp_gemms(a, T, a->ffn / tp, 1, g, n);
    if ((m & VP_RECOMPUTE_SHARED_EXPERTS) && (kind & VP__MOE) && a->shared_experts > 0)
        n = mlp_gemms(a, T, (double)a->shared_experts * a->expert_ffn / tp, 1, g, n);
    return n;
}

int vp__piece_gemms(const vp_arch *a, const vp_workload *t, vp_price_part part, unsigned kind,
                    vp__gemm *g) {
    double T = vp__tokens(t), tp = t->tp, h = a->hidden;
    if (part == VP_PRICE_EMBEDDING)
        return 0;
    if (part == VP_PRICE_HEAD)
        return push(g, 0, T, a->vocab / tp, h, 1, false);
    int n = attention_gemms(a, T, tp, g, 0);
    if (!(kind & VP__MOE))
        return mlp_gemms(a, T, a->ffn / tp, 1, g, n);
    double local = (double)a->experts / t->ep; /* experts on this rank */
    double rows = vp__expert_rows(a, t) * t->etp / local;
    n = push(g, n, T / tp, a->experts, h, 1, false); /* the router, on its SP tokens */
    n = mlp_gemms(a, rows, (double)a->expert_ffn / t->etp, local, g, n);
    g[n - 1].expert = g[n - 2].expert = true;
    if (a->shared_experts > 0)
        n = mlp_gemms(a, T, (double)a->shared_experts * a->expert_ffn / tp, 1, g, n);
    return n;
}
