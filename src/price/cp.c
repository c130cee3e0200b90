/* Context parallelism: the exchange of keys and values among the cp ranks that share a
 * sequence, what of it shows in a layer's passes, the buffers it holds, and the ranks that
 * hold the same weights.
 *
 * Each CP rank holds seq / cp tokens in 2 chunks (chunk i and 2 cp - 1 - i: causal load
 * balancing), so its linears, activations and saved bytes are 1/cp of the sequence's and
 * its attention core 1/cp of the layer's (shape.c, parts.c, speed.c read vp__tokens). Its
 * queries still attend to the whole sequence's keys, which it does not hold:
 *
 * - p2p (ring attention, Megatron-LM / Transformer Engine's default): cp steps; at each the
 *   rank computes the attention of its queries with the key-value block at hand while it
 *   sends that block (its own first: KV heads x head dim x seq/cp x 2 bytes, keys and
 *   values) to the next rank of the ring. With the balancing every step is the same work,
 *   1/cp of the rank's attention, so each of the cp - 1 sends shows only by what it
 *   exceeds that step's attention. B runs the ring again: per step the keys and values
 *   travel on and the accumulated dK, dV with them (two blocks over the same link), and
 *   after the last step the dK, dV go home (one send, exposed).
 * - allgather (Transformer Engine's all_gather): F all-gathers the whole sequence's keys
 *   and values before the attention (not overlapped: the kernels wait for it); B
 *   all-gathers them again (only the rank's own are saved) and reduce-scatters the whole
 *   sequence's dK, dV after the attention's backward, both exposed. The gathered keys and
 *   values, and in B the whole sequence's dK, dV beside them, are extra memory while one
 *   layer's attention runs.
 * - allgather under torchtitan (PyTorch's ring attention, torch.distributed.tensor.
 *   experimental's all-gather rotater): F's all-gather runs beside the first step, the
 *   rank's own block (1/cp of its attention), and shows by what it exceeds it; B gathers
 *   again the same way and passes the fp32 dK, dV around the ring, a block beside each
 *   step, the last exposed. It holds the gathered keys and values and, in B, the fp32 dK,
 *   dV it accumulates, sends and receives (three blocks at 4 bytes).
 * torchtitan's attention repeats the keys and values to the query heads before calling
 * scaled_dot_product_attention (its Llama's repeat_kv), so they travel at the query heads'
 * width, not the KV heads'.
 *
 * Where the CP ranks sit: Megatron-LM's order tp-cp-ep-dp-pp (TP innermost, then CP, then
 * DP), so a CP group is cp ranks tp apart (comm.c's placement); a ring step crosses the
 * network when the group spans nodes (its slowest hop decides), NVLink otherwise. The
 * weights are the same on the cp ranks of a DP rank: gradients are reduced, and the
 * distributed optimizer shards, over the dp x cp ranks (Megatron's data-parallel group
 * with CP). */
#include <math.h>

#include "price/price_internal.h"

int vp__weight_dp(const vp_workload *t) {
    return t->dp * t->cp;
}

double vp__cp_kv_bytes(const vp_arch *a, const vp_workload *t) {
    vp__attn at = vp__attention(a);
    double width = t->framework == VP_FRAMEWORK_TORCHTITAN && a->kv_lora == 0
                       ? at.q + (double)a->heads * at.d_v
                       : at.k + at.v;
    return vp__tokens(t) * width / t->tp * a->dtype_bytes;
}

/* Seconds of one ring step's send of bytes to the next CP rank. */
static double ring_send_seconds(const vp_gpu *g, const vp_workload *t, double bytes) {
    bool inter = vp__crosses_nodes(g, 0, (long)(t->cp - 1) * t->tp);
    double bw = inter ? fmin(g->p2p_bw, g->inter_bw * g->comm_efficiency) : g->p2p_bw;
    return bytes / bw + (inter ? g->inter_latency : g->intra_latency);
}

void vp__cp_exposed(const vp_price_setup *su, unsigned kind, double *f, double *b) {
    const vp_workload *t = su->work;
    *f = *b = 0;
    if (t->cp <= 1)
        return;
    double attn_f, attn_b;
    vp__attention_seconds(su, kind, &attn_f, &attn_b);
    double kv = vp__cp_kv_bytes(su->arch, t), steps = t->cp - 1;
    if (t->cp_comm == VP_CP_ALLGATHER) {
        vp__group cp = {0, t->tp, t->cp};
        double gather = vp__collective_seconds(su->gpu, VP__GATHER, &cp, kv * t->cp);
        if (t->framework == VP_FRAMEWORK_TORCHTITAN) {
            double dkv = ring_send_seconds(su->gpu, t, kv * 4 / su->arch->dtype_bytes);
            *f = fmax(0, gather - attn_f / t->cp);
            *b = fmax(0, gather - attn_b / t->cp) + steps * fmax(0, dkv - attn_b / t->cp) + dkv;
            return;
        }
        *f = gather;
        *b = 2 * gather; /* the keys and values gathered again, dK and dV reduce-scattered */
        return;
    }
    double send = ring_send_seconds(su->gpu, t, kv);
    *f = steps * fmax(0, send - attn_f / t->cp);
    *b = steps * fmax(0, 2 * send - attn_b / t->cp) + send;
}

double vp__cp_buffer_bytes(const vp_arch *a, const vp_workload *t) {
    if (t->cp <= 1 || a->impl == VP_IMPL_VPIPE)
        return 0;
    double kv = vp__cp_kv_bytes(a, t);
    /* allgather: the whole sequence's K, V and in B its dK, dV (torchtitan: the ring's fp32
       dK, dV instead); p2p: B's ring buffers (the block received next and the dK, dV in
       flight beside the block at hand's) */
    if (t->cp_comm == VP_CP_ALLGATHER && t->framework == VP_FRAMEWORK_TORCHTITAN)
        return t->cp * kv + 3 * kv * 4 / a->dtype_bytes;
    return t->cp_comm == VP_CP_ALLGATHER ? 2 * t->cp * kv : 3 * kv;
}
