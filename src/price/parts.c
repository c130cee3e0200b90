/* What a layer, the embedding and the head hold: the tensors each saves for backward (a
 * table per implementation, shape x dtype), their parameters and their FLOPs per pass. */
#include "base/internal.h"
#include "price/price_internal.h"

/* Width of a saved tensor per token (or per microbatch for W_H_PER_MB). */
typedef enum {
    W_H,        /* hidden */
    W_Q,        /* queries: heads x the query/key head size */
    W_KV,       /* grouped keys (or values): KV heads x head size */
    W_K,        /* MLA's keys: heads x (qk_nope + qk_rope) */
    W_V,        /* MLA's values: heads x v_head */
    W_O,        /* the attention's output: heads x the value head size */
    W_KVUP,     /* MLA's key-value up-projection output: heads x (qk_nope + v_head) */
    W_QLORA,    /* MLA's query latent */
    W_KVLORA,   /* MLA's key-value latent with the rotary key */
    W_KVLAT,    /* MLA's key-value latent alone */
    W_FFN,      /* MLP inner width */
    W_EFFN,     /* an expert's inner width over etp */
    W_SFFN,     /* the shared experts' inner width */
    W_EXPERTS,  /* one score per routed expert */
    W_SCORES,   /* heads x seq: one row of every attention matrix */
    W_HEADS,    /* one value per head */
    W_VOCAB,    /* vocabulary */
    W_ONE,      /* one value */
    W_H_PER_MB, /* hidden, once per microbatch rather than per token */
} width_kind;

/* How a tensor's rows split over tensor parallelism: never, with sequence parallelism,
 * always (its columns), over the sequence always (a MoE layer's tokens are split as with
 * sequence parallelism), or the expert token-rows of the rank (vp__expert_rows x etp).
 * SPLIT_GATHER is a column-parallel linear's input (QKV's, FC1's, the head's): Megatron-LM
 * saves its sequence-parallel shard and gathers it again in B (SPLIT_SP); torchtitan's
 * DTensor TP saves the tensor its PrepareModuleInput gathered, whole, in a layer in FP8
 * when Float8 gathers it so (torchao's PrepareFloat8ModuleInput casts before the
 * all-gather, and Float8Linear saves its input as it came; the head stays 16-bit). */
typedef enum { SPLIT_NONE, SPLIT_SP, SPLIT_GATHER, SPLIT_TP, SPLIT_SEQ, SPLIT_EXPERT } split_kind;

/* Rows that exist only under some settings, and the layer input full recompute keeps. */
enum {
    ONLY_DROPOUT = 1, /* dropout on */
    SCORES = 2,       /* an s x s attention matrix: gone with FlashAttention or recompute */
    ONLY_FLASH = 4,   /* FlashAttention on */
    ONLY_GELU = 8,    /* a GELU MLP */
    ONLY_SWIGLU = 16, /* a gated MLP */
    LAYER_INPUT = 32, /* what full recomputation keeps */
    ONLY_RELU2 = 64,  /* a squared-ReLU MLP */
    ONLY_PLAIN = 128, /* a two-matrix MLP (GELU or squared ReLU) */
    GQA = 256,        /* plain (grouped-query) attention */
    MLA = 512,        /* latent attention */
    QLORA = 1024,     /* latent attention with a query latent */
    DENSE = 2048,     /* a dense MLP */
    MOE = 4096,       /* a mixture-of-experts MLP */
    SHARED = 8192,    /* a mixture of experts with shared experts */
    /* With vocabulary parallelism (vp__vocab_split): */
    SHARD = 16384,       /* held by every vocabulary shard (a W_VOCAB row: its share) */
    NO_SHARD = 32768,    /* not held (T and EB take their gradients at once) */
    POSITIONS = 65536,   /* kept by the first stage only for learned positions' gradient */
    ONLY_SHARD = 131072, /* exists only with vocabulary parallelism */
    /* torchtitan's per-op selective recomputation (vp__op_recompute): */
    OP_SAVED = 262144, /* an output of an op its policy saves */
    ONLY_OP = 524288,  /* kept only by that policy (no backward reads it) */
    /* What Megatron-LM's recompute modules rerun (vp_recompute_module; core_attn: SCORES): */
    M_NORM = 1u << 20,    /* layernorm: a norm's output */
    M_MLA_UP = 1u << 21,  /* mla_up_proj: an up-projection's output */
    M_MLP = 1u << 22,     /* mlp: inside a dense MLP */
    M_MOE_ACT = 1u << 23, /* moe_act: a routed expert's activation output */
    M_SHARED = 1u << 24   /* shared_experts: inside the shared experts */
};

typedef struct tensor_row {
    const char *name;
    width_kind width;
    double mult; /* tensors of that width */
    int bytes;   /* per element; 0: the model's dtype */
    split_kind split;
    vp_keep keep;
    unsigned flags;
} tensor_row;

#define ROWS(a) a, (int)(sizeof a / sizeof a[0])

/* Most rows of a table (vp__piece_facts lists a piece's tensors into an array this long). */
#define MAX_ROWS 64

#define F_B VP_KEEP_F_B
#define F_W VP_KEEP_F_W
#define B_W VP_KEEP_B_W

/* A Megatron GPT/Llama layer: the tensors of Korthikanti et al. Table 2 (34·sbh + 5·as²b
 * for a GPT layer with dropout), generalised to GQA, SwiGLU and squared ReLU, DeepSeek's
 * latent attention (its latents and per-head keys and values) and a mixture of experts (the
 * router's probabilities, the tokens dispatched to the rank's experts and what each expert
 * MLP saves, the experts' outputs the combine's backward reads, the shared experts as an
 * MLP), with what W needs (each linear's input and output gradient: 32·sbh for GPT, Zero
 * Bubble's M_W). */
static const tensor_row megatron_layer[] = {
    {"norm 1 input", W_H, 1, 0, SPLIT_SP, F_B, LAYER_INPUT},
    {"QKV input (norm 1 output)", W_H, 1, 0, SPLIT_GATHER, F_W, M_NORM},
    {"query latent (norm input)", W_QLORA, 1, 0, SPLIT_NONE, F_B, QLORA},
    {"query latent (up-projection input)", W_QLORA, 1, 0, SPLIT_NONE, F_W, QLORA},
    {"key-value latent and rotary key", W_KVLORA, 1, 0, SPLIT_NONE, F_B, MLA},
    {"key-value latent (up-projection input)", W_KVLAT, 1, 0, SPLIT_NONE, F_W, MLA},
    {"query", W_Q, 1, 0, SPLIT_TP, F_B, GQA | OP_SAVED},
    {"key", W_KV, 1, 0, SPLIT_TP, F_B, GQA},
    {"value", W_KV, 1, 0, SPLIT_TP, F_B, GQA | OP_SAVED},
    {"query (up-projection output)", W_Q, 1, 0, SPLIT_TP, F_B, MLA | M_MLA_UP},
    {"key (up-projection output)", W_K, 1, 0, SPLIT_TP, F_B, MLA | M_MLA_UP},
    {"value (up-projection output)", W_V, 1, 0, SPLIT_TP, F_B, MLA | M_MLA_UP},
    {"softmax output", W_SCORES, 1, 0, SPLIT_TP, F_B, SCORES},
    {"softmax dropout mask", W_SCORES, 1, 1, SPLIT_TP, F_B, SCORES | ONLY_DROPOUT},
    {"softmax dropout output", W_SCORES, 1, 0, SPLIT_TP, F_B, SCORES | ONLY_DROPOUT},
    {"softmax log-sum-exp", W_HEADS, 1, 4, SPLIT_TP, F_B, ONLY_FLASH | OP_SAVED},
    {"projection input (attention output)", W_O, 1, 0, SPLIT_TP, F_W, OP_SAVED},
    {"attention dropout mask", W_H, 1, 1, SPLIT_SP, F_B, ONLY_DROPOUT},
    {"norm 2 input", W_H, 1, 0, SPLIT_SP, F_B, 0},
    {"FC1 input (norm 2 output)", W_H, 1, 0, SPLIT_GATHER, F_W, M_NORM},
    {"GELU input", W_FFN, 1, 0, SPLIT_TP, F_B, DENSE | ONLY_GELU | M_MLP},
    {"squared-ReLU input", W_FFN, 1, 0, SPLIT_TP, F_B, DENSE | ONLY_RELU2 | M_MLP},
    {"SwiGLU gate input", W_FFN, 1, 0, SPLIT_TP, F_B, DENSE | ONLY_SWIGLU | OP_SAVED | M_MLP},
    {"SwiGLU up input", W_FFN, 1, 0, SPLIT_TP, F_B, DENSE | ONLY_SWIGLU | M_MLP},
    {"FC2 input", W_FFN, 1, 0, SPLIT_TP, F_W, DENSE | M_MLP},
    {"router probabilities (fp32)", W_EXPERTS, 1, 4, SPLIT_SEQ, F_B, MOE},
    {"expert input (dispatched tokens)", W_H, 1, 0, SPLIT_EXPERT, F_W, MOE},
    {"expert SwiGLU input (gate and up)", W_EFFN, 2, 0, SPLIT_EXPERT, F_B, MOE | ONLY_SWIGLU},
    {"expert activation input", W_EFFN, 1, 0, SPLIT_EXPERT, F_B, MOE | ONLY_PLAIN},
    {"expert FC2 input", W_EFFN, 1, 0, SPLIT_EXPERT, F_W, MOE | M_MOE_ACT},
    {"expert output (the combine's backward)", W_H, 1, 0, SPLIT_EXPERT, F_B, MOE},
    {"shared-expert SwiGLU input (gate and up)", W_SFFN, 2, 0, SPLIT_TP, F_B,
     SHARED | ONLY_SWIGLU | M_SHARED},
    {"shared-expert activation input", W_SFFN, 1, 0, SPLIT_TP, F_B, SHARED | ONLY_PLAIN | M_SHARED},
    {"shared-expert FC2 input", W_SFFN, 1, 0, SPLIT_TP, F_W, SHARED | M_SHARED},
    {"MLP dropout mask", W_H, 1, 1, SPLIT_SP, F_B, ONLY_DROPOUT},
    {"FC2 output (the per-op policy's)", W_H, 1, 0, SPLIT_NONE, F_B, ONLY_OP | OP_SAVED},
    {"QKV output gradient (query)", W_Q, 1, 0, SPLIT_TP, B_W, GQA},
    {"QKV output gradient (key, value)", W_KV, 2, 0, SPLIT_TP, B_W, GQA},
    {"query up-projection output gradient", W_Q, 1, 0, SPLIT_TP, B_W, MLA},
    {"key-value up-projection output gradient", W_KVUP, 1, 0, SPLIT_TP, B_W, MLA},
    {"query down-projection output gradient", W_QLORA, 1, 0, SPLIT_NONE, B_W, QLORA},
    {"key-value down-projection output gradient", W_KVLORA, 1, 0, SPLIT_NONE, B_W, MLA},
    {"projection output gradient", W_H, 1, 0, SPLIT_SP, B_W, 0},
    {"FC1 output gradient", W_FFN, 1, 0, SPLIT_TP, B_W, DENSE | ONLY_PLAIN},
    {"FC1 output gradient (gate and up)", W_FFN, 2, 0, SPLIT_TP, B_W, DENSE | ONLY_SWIGLU},
    {"FC2 output gradient", W_H, 1, 0, SPLIT_SP, B_W, DENSE},
    {"router scores gradient", W_EXPERTS, 1, 0, SPLIT_SEQ, B_W, MOE},
    {"expert FC1 output gradient (gate and up)", W_EFFN, 2, 0, SPLIT_EXPERT, B_W,
     MOE | ONLY_SWIGLU},
    {"expert FC1 output gradient", W_EFFN, 1, 0, SPLIT_EXPERT, B_W, MOE | ONLY_PLAIN},
    {"expert FC2 output gradient", W_H, 1, 0, SPLIT_EXPERT, B_W, MOE},
    {"shared-expert FC1 output gradient (gate and up)", W_SFFN, 2, 0, SPLIT_TP, B_W,
     SHARED | ONLY_SWIGLU},
    {"shared-expert FC1 output gradient", W_SFFN, 1, 0, SPLIT_TP, B_W, SHARED | ONLY_PLAIN},
    {"shared-expert FC2 output gradient", W_H, 1, 0, SPLIT_SP, B_W, SHARED},
};

/* Megatron's first stage: int64 token ids (for the embedding's W), the dropout mask, and
 * the embedding's output gradient for W. */
static const tensor_row megatron_embedding[] = {
    {"token ids", W_ONE, 1, 8, SPLIT_NONE, VP_KEEP_F_W, SHARD},
    {"embedding dropout mask", W_H, 1, 1, SPLIT_SP, VP_KEEP_F_B, ONLY_DROPOUT},
    {"embedding output gradient", W_H, 1, 0, SPLIT_NONE, VP_KEEP_B_W, POSITIONS},
};

/* Megatron's last stage: final norm and head inputs, the vocab-parallel cross-entropy's
 * fp32 softmax, the target ids, and the logits gradient for the head's W. */
static const tensor_row megatron_head[] = {
    {"final norm input", W_H, 1, 0, SPLIT_SP, VP_KEEP_F_B, 0},
    {"head input (final norm output)", W_H, 1, 0, SPLIT_GATHER, VP_KEEP_F_W, SHARD},
    {"cross-entropy softmax (fp32)", W_VOCAB, 1, 4, SPLIT_TP, VP_KEEP_F_B, SHARD},
    {"target ids", W_ONE, 1, 8, SPLIT_NONE, VP_KEEP_F_B, SHARD},
    {"logits gradient", W_VOCAB, 1, 0, SPLIT_TP, VP_KEEP_B_W, NO_SHARD},
    {"softmax statistics (fp32)", W_ONE, 3, 4, SPLIT_NONE, VP_KEEP_F_B, SHARD | ONLY_SHARD},
};

/* vpipe's fp32 block (src/model/block.c, vp__block_act): B turns x into dx, x2 into dx2,
 * qkv into dqkv, h into dh and takes dout; W reads ln1, att, ln2, hg, the dY buffers and
 * the LayerNorm weight-gradient sums. */
static const tensor_row vpipe_layer[] = {
    {"x (norm 1 input)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_F_B, 0},
    {"ln1 (QKV input)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_F_W, 0},
    {"ln1 mean and rstd", W_ONE, 2, 4, SPLIT_NONE, VP_KEEP_F_B, 0},
    {"qkv (query)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_F_B, 0},
    {"qkv (key, value)", W_KV, 2, 0, SPLIT_NONE, VP_KEEP_F_B, 0},
    {"attention probabilities", W_SCORES, 1, 0, SPLIT_NONE, VP_KEEP_F_B, SCORES},
    {"att (projection input)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_F_W, 0},
    {"x2 (norm 2 input)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_F_B, 0},
    {"ln2 (FC input)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_F_W, 0},
    {"ln2 mean and rstd", W_ONE, 2, 4, SPLIT_NONE, VP_KEEP_F_B, 0},
    {"h (GELU input)", W_FFN, 1, 0, SPLIT_NONE, VP_KEEP_F_B, 0},
    {"hg (FC projection input)", W_FFN, 1, 0, SPLIT_NONE, VP_KEEP_F_W, 0},
    {"norm weight-gradient sums", W_H_PER_MB, 4, 0, SPLIT_NONE, VP_KEEP_F_W, 0},
    {"dqkv (query)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_B_W, 0},
    {"dqkv (key, value)", W_KV, 2, 0, SPLIT_NONE, VP_KEEP_B_W, 0},
    {"dx2", W_H, 1, 0, SPLIT_NONE, VP_KEEP_B_W, 0},
    {"dh", W_FFN, 1, 0, SPLIT_NONE, VP_KEEP_B_W, 0},
    {"dout (FC projection output gradient)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_B_W, 0},
};

/* vpipe's first stage (src/model/stage.c): byte tokens and dout for the embedding's W. */
static const tensor_row vpipe_embedding[] = {
    {"tokens", W_ONE, 1, 1, SPLIT_NONE, VP_KEEP_F_W, SHARD},
    {"embedding output gradient", W_H, 1, 0, SPLIT_NONE, VP_KEEP_B_W, POSITIONS},
};

/* vpipe's last stage: final norm, its statistics and sums, probabilities (turned into
 * dlogits by B), byte targets. */
static const tensor_row vpipe_head[] = {
    {"xf (final norm input)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_F_B, 0},
    {"lnf (head input)", W_H, 1, 0, SPLIT_NONE, VP_KEEP_F_W, SHARD},
    {"lnf mean and rstd", W_ONE, 2, 4, SPLIT_NONE, VP_KEEP_F_B, 0},
    {"probabilities", W_VOCAB, 1, 0, SPLIT_NONE, VP_KEEP_F_B, SHARD},
    {"final norm weight-gradient sums", W_H_PER_MB, 2, 0, SPLIT_NONE, VP_KEEP_F_W, 0},
    {"targets", W_ONE, 1, 1, SPLIT_NONE, VP_KEEP_F_B, SHARD},
    {"dlogits", W_VOCAB, 1, 0, SPLIT_NONE, VP_KEEP_B_W, NO_SHARD},
    {"softmax statistics", W_ONE, 3, 4, SPLIT_NONE, VP_KEEP_F_B, SHARD | ONLY_SHARD},
};

/* The tables by implementation and part. */
_Static_assert(sizeof megatron_layer / sizeof megatron_layer[0] <= MAX_ROWS &&
                   sizeof vpipe_layer / sizeof vpipe_layer[0] <= MAX_ROWS,
               "a tensor table outgrew MAX_ROWS");

static const struct {
    const tensor_row *rows;
    int n;
} tables[2][3] = {
    [VP_IMPL_MEGATRON] = {{ROWS(megatron_layer)},
                          {ROWS(megatron_embedding)},
                          {ROWS(megatron_head)}},
    [VP_IMPL_VPIPE] = {{ROWS(vpipe_layer)}, {ROWS(vpipe_embedding)}, {ROWS(vpipe_head)}},
};

/* Whether a row exists for a piece of kind under the setting (recomputation aside) without
 * vocabulary parallelism. */
static bool row_present(const tensor_row *r, const vp_arch *a, const vp_workload *t,
                        unsigned kind) {
    bool moe = kind & VP__MOE, mla = a->kv_lora > 0;
    const struct {
        unsigned flag;
        bool on;
    } needs[] = {{ONLY_SHARD, false},
                 {ONLY_DROPOUT, a->dropout},
                 {SCORES, !t->flash},
                 {ONLY_FLASH, t->flash},
                 {ONLY_GELU, a->ffn_kind == VP_FFN_GELU},
                 {ONLY_SWIGLU, a->ffn_kind == VP_FFN_SWIGLU},
                 {ONLY_RELU2, a->ffn_kind == VP_FFN_RELU2},
                 {ONLY_PLAIN, a->ffn_kind != VP_FFN_SWIGLU},
                 {GQA, !mla},
                 {MLA, mla},
                 {QLORA, mla && a->q_lora > 0},
                 {DENSE, !moe},
                 {MOE, moe},
                 {SHARED, moe && a->shared_experts > 0},
                 {ONLY_OP, vp__op_recompute(t)}};
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
        if ((r->flags & needs[i].flag) && !needs[i].on)
            return false;
    return true;
}

/* The rows Megatron-LM's recompute modules (a set of vp_recompute_module) drop. */
static unsigned module_rows(unsigned modules) {
    const unsigned rows[VP_RECOMPUTE_MODULES] = {SCORES, M_NORM,    M_MLA_UP,
                                                 M_MLP,  M_MOE_ACT, M_SHARED};
    unsigned out = 0;
    for (int k = 0; k < VP_RECOMPUTE_MODULES; k++)
        out |= modules & (1u << k) ? rows[k] : 0;
    return out;
}

/* The row under recomputation (layers only): full keeps the layer input alone from F,
 * torchtitan's per-op policy (op) that and its ops' outputs, Megatron-LM's selective all
 * but the rows its modules rerun (dropped, module_rows); what W needs is rebuilt by B and
 * kept from B until W. Returns false when the row is not kept. */
static bool row_recomputed(const tensor_row *r, vp_recompute rc, bool op, unsigned dropped,
                           vp_keep *keep) {
    *keep = r->keep;
    bool kept = rc == VP_RECOMPUTE_NONE || (r->flags & LAYER_INPUT) ||
                (op && (r->flags & OP_SAVED)) ||
                (rc == VP_RECOMPUTE_SELECTIVE && !op && !(r->flags & dropped));
    if (kept)
        return true;
    if (r->keep == VP_KEEP_F_B)
        return false;
    *keep = VP_KEEP_B_W;
    return true;
}

/* Elements per token (or per microbatch) of a width. */
static double width_of(width_kind w, const vp_arch *a, const vp_workload *t) {
    vp__attn at = vp__attention(a);
    double H = a->heads;
    switch (w) {
    case W_H:
    case W_H_PER_MB:
        return a->hidden;
    case W_Q:
    case W_K:
        return at.q;
    case W_KV:
        return at.k;
    case W_V:
    case W_O:
        return H * at.d_v;
    case W_KVUP:
        return H * (a->qk_nope + a->v_head);
    case W_QLORA:
        return a->q_lora;
    case W_KVLORA:
        return a->kv_lora + a->qk_rope;
    case W_KVLAT:
        return a->kv_lora;
    case W_FFN:
        return a->ffn;
    case W_EFFN:
        return (double)a->expert_ffn / t->etp;
    case W_SFFN:
        return (double)a->shared_experts * a->expert_ffn;
    case W_EXPERTS:
        return a->experts;
    case W_SCORES:
        return H * t->seq;
    case W_HEADS:
        return H;
    case W_VOCAB:
        return a->vocab;
    case W_ONE:
        return 1;
    }
    return 0;
}

/* A row's bytes in part (FP8 runs the layers' linears, not the head). */
static double row_bytes(const tensor_row *r, const vp_arch *a, const vp_workload *t,
                        vp_price_part part) {
    double tokens = vp__tokens(t), rows = tokens, split = 1;
    double bytes = r->bytes ? r->bytes : a->dtype_bytes;
    bool sp = r->split == SPLIT_SP || r->split == SPLIT_GATHER;
    if (r->split == SPLIT_GATHER && t->framework == VP_FRAMEWORK_TORCHTITAN && t->tp > 1)
        bytes = t->fp8 != VP_FP8_OFF && part == VP_PRICE_LAYER ? 1 : bytes; /* whole, gathered */
    else if (r->width == W_H_PER_MB)
        rows = 1;
    else if (r->split == SPLIT_EXPERT)
        rows = vp__expert_rows(a, t) * t->etp;
    else if (r->split == SPLIT_TP || r->split == SPLIT_SEQ || (sp && t->sp))
        split = t->tp;
    return r->mult * width_of(r->width, a, t) * rows * bytes / split;
}

int vp__piece_tensors(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                      unsigned kind, vp_saved_tensor *out, int cap) {
    const tensor_row *rows = tables[arch->impl][part].rows;
    int n = tables[arch->impl][part].n, count = 0;
    vp_recompute rc = part == VP_PRICE_LAYER ? work->recompute : VP_RECOMPUTE_NONE;
    bool op = vp__op_recompute(work);
    unsigned dropped = module_rows(vp__selective_modules(work));
    for (int i = 0; i < n; i++) {
        vp_keep keep;
        if (!row_present(&rows[i], arch, work, kind) ||
            !row_recomputed(&rows[i], rc, op, dropped, &keep))
            continue;
        double bytes = row_bytes(&rows[i], arch, work, part) *
                       (part == VP_PRICE_LAYER ? vp__fp8_saved_scale(arch, work, rows[i].keep) : 1);
        if (count < cap)
            out[count] = (vp_saved_tensor){rows[i].name, bytes, keep};
        count++;
    }
    return count;
}

void vp__vocab_split_of(const vp_arch *a, const vp_workload *t, int shards, vp__vocab_split *out) {
    *out = (vp__vocab_split){0};
    double rows = (double)a->vocab * a->hidden / t->tp;
    out->first.params = a->learned_positions ? (double)a->max_positions * a->hidden : 0;
    out->last.params = a->norm == VP_NORM_LAYER ? 2.0 * a->hidden : a->hidden;
    out->params = (a->tied ? 1 : 2) * rows / shards;
    for (int part = VP_PRICE_EMBEDDING; part <= VP_PRICE_HEAD; part++) {
        const tensor_row *r = tables[a->impl][part].rows;
        vp_price_facts *end = part == VP_PRICE_EMBEDDING ? &out->first : &out->last;
        for (int i = 0; i < tables[a->impl][part].n; i++, r++) {
            if (!(r->flags & ONLY_SHARD) && !row_present(r, a, t, 0))
                continue;
            double bytes =
                row_bytes(r, a, t, (vp_price_part)part) / (r->width == W_VOCAB ? shards : 1);
            bool kept = !(r->flags & (SHARD | NO_SHARD)) &&
                        (!(r->flags & POSITIONS) || a->learned_positions);
            if (r->flags & SHARD)
                *(part == VP_PRICE_EMBEDDING ? &out->embed_bytes : &out->output_bytes) += bytes;
            if (kept && r->keep != VP_KEEP_B_W)
                end->act_bytes += bytes;
            if (kept && r->keep != VP_KEEP_F_B)
                end->keep_bytes += bytes;
        }
    }
}

int vp_price_tensors(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                     vp_saved_tensor *out, int cap) {
    return vp__piece_tensors(arch, work, part, vp__main_kind(arch), out, cap);
}

/* A norm's parameters over width n. */
static double norm_params(const vp_arch *a, double n) {
    return a->norm == VP_NORM_LAYER ? 2 * n : n;
}

double vp__piece_params(const vp_arch *a, const vp_workload *t, vp_price_part part, unsigned kind,
                        double *experts) {
    double h = a->hidden, tp = t->tp, total = 0, routed = 0;
    if (experts)
        *experts = 0;
    if (part == VP_PRICE_EMBEDDING)
        return (double)a->vocab * h / tp +
               (a->learned_positions ? (double)a->max_positions * h : 0);
    if (part == VP_PRICE_HEAD)
        return norm_params(a, h) + (double)a->vocab * h / tp;
    vp__gemm g[VP__MAX_GEMMS];
    int n = vp__piece_gemms(a, t, part, kind, g);
    for (int i = 0; i < n; i++) {
        /* a weight of n x k, and a bias of n: split with column-parallel outputs, whole
           after row-parallel ones (projection, FC2) */
        double p = g[i].count * (g[i].n * g[i].k + (a->bias ? g[i].n : 0));
        total += p;
        routed += g[i].expert ? p : 0;
    }
    double latents = a->kv_lora > 0 ? norm_params(a, a->kv_lora) + norm_params(a, a->q_lora) : 0;
    if (experts)
        *experts = routed;
    return total + 2 * norm_params(a, h) + latents;
}

/* FLOPs of one piece per microbatch on one rank (2 per multiply-add; Zero Bubble Table 1
 * for a GPT layer: F = sbh(24h + 4s), B = sbh(24h + 8s), W = sbh·24h): every multiply once
 * in F, B and W, the attention core in F and twice in B. */
static void piece_flops(const vp_arch *a, const vp_workload *t, vp_price_part part, unsigned kind,
                        vp_price_facts *out) {
    vp__gemm g[VP__MAX_GEMMS];
    int n = vp__piece_gemms(a, t, part, kind, g);
    double linear = 0;
    for (int i = 0; i < n; i++)
        linear += 2 * g[i].m * g[i].n * g[i].k * g[i].count;
    double core = part == VP_PRICE_LAYER ? vp__attention_flops(a, t, kind) : 0;
    out->flops_f = linear + core;
    out->flops_b = linear + 2 * core;
    out->flops_w = linear;
    out->flops_r = 0;
    if (part != VP_PRICE_LAYER)
        return;
    if (t->recompute == VP_RECOMPUTE_FULL) {
        out->flops_r = out->flops_f;
    } else if (t->recompute == VP_RECOMPUTE_SELECTIVE) { /* the core kept with flash */
        bool again;
        n = vp__recomputed_gemms(a, t, kind, g, &again);
        for (int i = 0; i < n; i++)
            out->flops_r += 2 * g[i].m * g[i].n * g[i].k * g[i].count;
        out->flops_r += again && !t->flash ? core : 0;
    }
}

vp_status vp_price_part_facts(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                              vp_price_facts *out, vp_error *err) {
    vp_price_setup setup = {.arch = arch, .work = work};
    vp_status rc = vp_price_check(&setup, err);
    if (rc == VP_OK)
        vp__piece_facts(arch, work, part, vp__main_kind(arch), out);
    return rc;
}

void vp__piece_facts(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                     unsigned kind, vp_price_facts *out) {
    vp_saved_tensor saved[MAX_ROWS];
    int n = vp__piece_tensors(arch, work, part, kind, saved, MAX_ROWS);
    *out = (vp_price_facts){.params = vp__piece_params(arch, work, part, kind, NULL)};
    for (int i = 0; i < n; i++) {
        if (saved[i].keep != VP_KEEP_B_W)
            out->act_bytes += saved[i].bytes;
        if (saved[i].keep != VP_KEEP_F_B)
            out->keep_bytes += saved[i].bytes;
    }
    piece_flops(arch, work, part, kind, out);
}
