/* How long a pass computes on one rank: the accelerator's speed model applied to the
 * matrix multiplies and the other kernels of a layer, the embedding or the head.
 *
 * The kernel model (vp_gpu.efficiency 0). A matrix multiply of M x N x K (2MNK FLOPs)
 * runs at gemm_efficiency x M/(M+e) x N/(N+e) x K/(K+e) of peak, e = gemm_edge: a large
 * one at the kernel's best, a small one losing its partial tiles, its last wave and its
 * pipeline fill; so a larger microbatch (M = tokens) or a wider TP slice (N or K = a
 * width over TP) runs faster. Attention without FlashAttention is two batched multiplies
 * per head (QK^T and AV, the whole s x s matrix, masked afterwards); with FlashAttention
 * its own kernels run: they skip the causal mask's upper half and run the rest at
 * attn_efficiency_f of peak in F, and in B (which recomputes the scores: 2.5 times F's
 * FLOPs, as FlashAttention counts them) at attn_efficiency_b, FlashAttention-2's kernels
 * (vp_attn_kernel) at attn_fa2_f and attn_fa2_b of those. The other kernels of F and B
 * (norms, activations, dropout, softmax, residual adds) are memory-bound: they move
 * act_traffic_f (F) and act_traffic_b (B) bytes per byte of activation F saves, at the HBM
 * bandwidth. W is matrix multiplies only. Every pass of a layer costs layer_overhead more:
 * its kernels' launches and the synchronisation around them, which small layers cannot
 * hide (the layer's time, not its FLOPs). With vp_gpu.efficiency > 0 every FLOP runs at
 * that fraction of peak and nothing else is added (the older model). Calibration:
 * src/price/gpus.c. */
#include "price/price_internal.h"

/* Seconds of count multiplies of M x N x K. */
static double gemm_seconds(const vp_gpu *g, double m, double n, double k, double count) {
    double rate = g->efficiency;
    if (rate == 0) {
        double e = g->gemm_edge;
        rate = g->gemm_efficiency * (m / (m + e)) * (n / (n + e)) * (k / (k + e));
    }
    return count * 2 * m * n * k / (g->peak_flops * rate);
}

void vp__attention_seconds(const vp_price_setup *su, unsigned kind, double *f, double *b) {
    const vp_arch *a = su->arch;
    const vp_workload *t = su->work;
    const vp_gpu *g = su->gpu;
    if (t->flash && g->efficiency == 0) {
        double forward = vp__attention_flops(a, t, kind) / 2; /* the causal half */
        bool fa2 = t->attn_kernel == VP_ATTN_FA2;
        double rf = fa2 && g->attn_fa2_f > 0 ? g->attn_fa2_f : 1;
        double rb = fa2 && g->attn_fa2_b > 0 ? g->attn_fa2_b : 1;
        *f = forward / (g->peak_flops * g->attn_efficiency_f * rf);
        *b = 2.5 * forward / (g->peak_flops * g->attn_efficiency_b * rb);
        return;
    }
    vp__attn at = vp__attention(a);
    double heads = (double)a->heads / t->tp * t->mbs, q = (double)t->seq / t->cp;
    double keys = vp__keys(a, t, kind);
    *f = gemm_seconds(g, q, keys, at.d_qk, heads) + gemm_seconds(g, q, at.d_v, keys, heads);
    *b = 2 * *f;
}

/* Seconds of one pass's matrix multiplies on one rank (the FLOPs piece_flops counts): B
 * and W each repeat F's linears once (input and weight gradients, same dimensions), B
 * runs the attention core's backward. *linear gets the linears' share (one pass),
 * *attention F's attention core. */
static void matmul_seconds(const vp_price_setup *su, vp_price_part part, unsigned kind,
                           double mm[3], double *linear, double *attention) {
    vp__gemm gm[VP__MAX_GEMMS];
    int n = vp__piece_gemms(su->arch, su->work, part, kind, gm);
    *linear = *attention = 0;
    double fp8 = vp__fp8_gemm_scale(su); /* 1 without FP8 */
    for (int i = 0; i < n; i++)
        *linear +=
            gemm_seconds(su->gpu, gm[i].m, gm[i].n, gm[i].k, gm[i].count) * (gm[i].fp8 ? fp8 : 1);
    double attention_b = 0;
    if (part == VP_PRICE_LAYER)
        vp__attention_seconds(su, kind, attention, &attention_b);
    double cast_f, cast_b; /* FP8: quantising the operands */
    vp__fp8_cast_seconds(su, gm, n, &cast_f, &cast_b);
    mm[0] = *linear + *attention + cast_f;
    mm[1] = *linear + attention_b + cast_b;
    mm[2] = *linear;
}

/* torchtitan without torch.compile (vp_workload.eager): the bytes per token a Llama layer's
 * elementwise ops move beyond the fused kernels compile makes of them, in F (*f) and B (*b),
 * counted op by op from torchtitan's RMSNorm, apply_rotary_emb and FeedForward (each eager
 * op reads its inputs and writes its output; fp32 4 bytes, bf16 2; per element):
 * - RMSNorm, twice a layer over the hidden width. F: x.float() 6, pow 8, mean 4, x * rsqrt
 *   8, type_as 6, * weight 4: 36 against the fused kernel's 4 (read x, write y). B, the
 *   autograd of those ops: the weight's product 12 (the gradient and the weight's), type_as
 *   6, the rsqrt product 24, mean 4, pow 12, the two paths summed 12, float 6: 76 against
 *   the fused 6 (read x and the gradient, write the input's).
 * - The rotary embedding over the queries and keys: F x.float() 6, the complex product 8,
 *   type_as 6: 20 against 4; B the same three backwards: 20 against 4.
 * - SwiGLU's gate: F silu 4 and the product 6: 10 against 6; B the product's two gradients
 *   12 and silu's 6: 18 against 10.
 * The norms run on the rank's sequence shard (sequence parallelism), the rest on its heads
 * and MLP slice. The final norm and the loss are left out (one norm of many). */
static void eager_bytes(const vp_arch *a, const vp_workload *t, double *f, double *b) {
    vp__attn at = vp__attention(a);
    double tp = t->tp, T = vp__tokens(t), norm_rows = T / (t->sp && tp > 1 ? tp : 1);
    double rope = (at.q + at.k) / tp, gate = a->ffn / tp;
    *f = norm_rows * 2 * a->hidden * (36 - 4) + T * (rope * (20 - 4) + gate * (10 - 6));
    *b = norm_rows * 2 * a->hidden * (76 - 6) + T * (rope * (20 - 4) + gate * (18 - 10));
}

void vp__piece_seconds(const vp_price_setup *su, vp_price_part part, unsigned kind, double sec[4],
                       double linear[3]) {
    const vp_gpu *g = su->gpu;
    double attention, lin;
    matmul_seconds(su, part, kind, sec, &lin, &attention);
    linear[0] = linear[1] = linear[2] = lin;
    vp_recompute rc = part == VP_PRICE_LAYER ? su->work->recompute : VP_RECOMPUTE_NONE;
    vp_workload sixteen = *su->work, plain; /* the other kernels move 16-bit tensors */
    sixteen.fp8 = VP_FP8_OFF;
    plain = sixteen;
    plain.recompute = VP_RECOMPUTE_NONE;
    /* the tensors the kernels write: a linear input torchtitan saves whole is written once by
       its all-gather, as in Megatron-LM, which saves only the shard */
    plain.framework = VP_FRAMEWORK_MEGATRON;
    vp_price_facts all, kept; /* what F saves without recomputation, and with it */
    vp__piece_facts(su->arch, &plain, part, kind, &all);
    vp__piece_facts(su->arch, &sixteen, part, kind, &kept);
    bool kernel = g->efficiency == 0;
    double moved_f = kernel ? g->act_traffic_f * all.act_bytes / g->hbm_bandwidth : 0;
    double overhead = kernel && part == VP_PRICE_LAYER ? g->layer_overhead : 0;
    double eager_f = 0, eager_b = 0; /* torchtitan's eager kernels, at the HBM's rate */
    if (kernel && part == VP_PRICE_LAYER && su->work->eager) {
        eager_bytes(su->arch, su->work, &eager_f, &eager_b);
        eager_f /= g->hbm_bandwidth * g->hbm_efficiency;
        eager_b /= g->hbm_bandwidth * g->hbm_efficiency;
    }
    sec[0] += moved_f + overhead + eager_f;
    sec[1] +=
        (kernel ? g->act_traffic_b * all.act_bytes / g->hbm_bandwidth : 0) + overhead + eager_b;
    sec[2] += overhead;
    sec[3] = 0;
    /* what the other kernels rebuild: their share of F's traffic, as F saved less */
    double rebuilt =
        all.act_bytes > 0 ? moved_f * (all.act_bytes - kept.act_bytes) / all.act_bytes : 0;
    if (rc == VP_RECOMPUTE_FULL) {
        sec[3] = sec[0];
    } else if (rc == VP_RECOMPUTE_SELECTIVE) { /* its linears, and the core unless flash */
        vp__gemm gm[VP__MAX_GEMMS];
        bool again;
        int n = vp__recomputed_gemms(su->arch, su->work, kind, gm, &again);
        double fp8 = vp__fp8_gemm_scale(su);
        for (int i = 0; i < n; i++)
            sec[3] += gemm_seconds(g, gm[i].m, gm[i].n, gm[i].k, gm[i].count) * fp8;
        sec[3] += rebuilt + (again && !su->work->flash ? attention : 0) + eager_f;
    }
}
