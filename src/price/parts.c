/* What a layer, the embedding and the head hold: the tensors each saves for backward (a
 * table per implementation, shape x dtype), their parameters and their FLOPs per pass. */
#include "base/internal.h"
#include "price/price_internal.h"

/* Width of a saved tensor per token (or per microbatch for W_H_PER_MB). */
typedef enum {
    W_H,        /* hidden */
    W_KV,       /* key/value width: kv_heads x head size */
    W_FFN,      /* MLP inner width */
    W_SCORES,   /* heads x seq: one row of every attention matrix */
    W_HEADS,    /* one value per head */
    W_VOCAB,    /* vocabulary */
    W_ONE,      /* one value */
    W_H_PER_MB, /* hidden, once per microbatch rather than per token */
} width_kind;

/* How tensor parallelism splits a tensor: never, with sequence parallelism, always. */
typedef enum { SPLIT_NONE, SPLIT_SP, SPLIT_TP } split_kind;

/* Rows that exist only under some settings, and the layer input full recompute keeps. */
enum {
    ONLY_DROPOUT = 1, /* dropout on */
    SCORES = 2,       /* an s x s attention matrix: gone with FlashAttention or recompute */
    ONLY_FLASH = 4,   /* FlashAttention on */
    ONLY_GELU = 8,
    ONLY_SWIGLU = 16,
    LAYER_INPUT = 32, /* what full recomputation keeps */
    /* With vocabulary parallelism (vp__vocab_split): */
    SHARD = 64,      /* held by every vocabulary shard (a W_VOCAB row: its share) */
    NO_SHARD = 128,  /* not held (T and EB take their gradients at once) */
    POSITIONS = 256, /* kept by the first stage only for learned positions' gradient */
    ONLY_SHARD = 512 /* exists only with vocabulary parallelism */
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

/* Most rows of a table (vp__part_facts lists a part's tensors into an array this long). */
#define MAX_ROWS 32

/* A Megatron GPT/Llama layer: the tensors of Korthikanti et al. Table 2 (34·sbh + 5·as²b
 * for a GPT layer with dropout), generalised to GQA and SwiGLU, with what W needs (each
 * linear's input and output gradient: 32·sbh for GPT, Zero Bubble's M_W). */
static const tensor_row megatron_layer[] = {
    {"norm 1 input", W_H, 1, 0, SPLIT_SP, VP_KEEP_F_B, LAYER_INPUT},
    {"QKV input (norm 1 output)", W_H, 1, 0, SPLIT_SP, VP_KEEP_F_W, 0},
    {"query", W_H, 1, 0, SPLIT_TP, VP_KEEP_F_B, 0},
    {"key and value", W_KV, 2, 0, SPLIT_TP, VP_KEEP_F_B, 0},
    {"softmax output", W_SCORES, 1, 0, SPLIT_TP, VP_KEEP_F_B, SCORES},
    {"softmax dropout mask", W_SCORES, 1, 1, SPLIT_TP, VP_KEEP_F_B, SCORES | ONLY_DROPOUT},
    {"softmax dropout output", W_SCORES, 1, 0, SPLIT_TP, VP_KEEP_F_B, SCORES | ONLY_DROPOUT},
    {"softmax log-sum-exp", W_HEADS, 1, 4, SPLIT_TP, VP_KEEP_F_B, ONLY_FLASH},
    {"projection input (attention output)", W_H, 1, 0, SPLIT_TP, VP_KEEP_F_W, 0},
    {"attention dropout mask", W_H, 1, 1, SPLIT_SP, VP_KEEP_F_B, ONLY_DROPOUT},
    {"norm 2 input", W_H, 1, 0, SPLIT_SP, VP_KEEP_F_B, 0},
    {"FC1 input (norm 2 output)", W_H, 1, 0, SPLIT_SP, VP_KEEP_F_W, 0},
    {"GELU input", W_FFN, 1, 0, SPLIT_TP, VP_KEEP_F_B, ONLY_GELU},
    {"SwiGLU input (gate and up)", W_FFN, 2, 0, SPLIT_TP, VP_KEEP_F_B, ONLY_SWIGLU},
    {"FC2 input", W_FFN, 1, 0, SPLIT_TP, VP_KEEP_F_W, 0},
    {"MLP dropout mask", W_H, 1, 1, SPLIT_SP, VP_KEEP_F_B, ONLY_DROPOUT},
    {"QKV output gradient (query)", W_H, 1, 0, SPLIT_TP, VP_KEEP_B_W, 0},
    {"QKV output gradient (key, value)", W_KV, 2, 0, SPLIT_TP, VP_KEEP_B_W, 0},
    {"projection output gradient", W_H, 1, 0, SPLIT_SP, VP_KEEP_B_W, 0},
    {"FC1 output gradient", W_FFN, 1, 0, SPLIT_TP, VP_KEEP_B_W, ONLY_GELU},
    {"FC1 output gradient (gate and up)", W_FFN, 2, 0, SPLIT_TP, VP_KEEP_B_W, ONLY_SWIGLU},
    {"FC2 output gradient", W_H, 1, 0, SPLIT_SP, VP_KEEP_B_W, 0},
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
    {"head input (final norm output)", W_H, 1, 0, SPLIT_SP, VP_KEEP_F_W, SHARD},
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

/* Whether a row exists under the setting (recomputation aside) without vocabulary
 * parallelism. */
static bool row_present(const tensor_row *r, const vp_arch *a, const vp_workload *t) {
    if (r->flags & ONLY_SHARD)
        return false;
    if ((r->flags & ONLY_DROPOUT) && !a->dropout)
        return false;
    if ((r->flags & SCORES) && t->flash)
        return false;
    if ((r->flags & ONLY_FLASH) && !t->flash)
        return false;
    if ((r->flags & ONLY_GELU) && a->ffn_kind != VP_FFN_GELU)
        return false;
    return !((r->flags & ONLY_SWIGLU) && a->ffn_kind != VP_FFN_SWIGLU);
}

/* The row under recomputation (layers only): selective drops the attention matrices;
 * full keeps the layer input alone from F, and what W needs is rebuilt by B and kept
 * from B until W. Returns false when the row is not kept. */
static bool row_recomputed(const tensor_row *r, vp_recompute rc, vp_keep *keep) {
    *keep = r->keep;
    if (rc == VP_RECOMPUTE_SELECTIVE)
        return !(r->flags & SCORES);
    if (rc != VP_RECOMPUTE_FULL || (r->flags & LAYER_INPUT))
        return true;
    if (r->keep == VP_KEEP_F_B)
        return false;
    *keep = VP_KEEP_B_W;
    return true;
}

static double row_bytes(const tensor_row *r, const vp_arch *a, const vp_workload *t) {
    double tokens = (double)t->mbs * t->seq, head = (double)a->hidden / a->heads;
    double width[] = {[W_H] = a->hidden,    [W_KV] = a->kv_heads * head,
                      [W_FFN] = a->ffn,     [W_SCORES] = (double)a->heads * t->seq,
                      [W_HEADS] = a->heads, [W_VOCAB] = a->vocab,
                      [W_ONE] = 1,          [W_H_PER_MB] = a->hidden};
    double elements = r->mult * width[r->width] * (r->width == W_H_PER_MB ? 1 : tokens);
    bool split = r->split == SPLIT_TP || (r->split == SPLIT_SP && t->sp);
    return elements * (r->bytes ? r->bytes : a->dtype_bytes) / (split ? t->tp : 1);
}

int vp_price_tensors(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                     vp_saved_tensor *out, int cap) {
    const tensor_row *rows = tables[arch->impl][part].rows;
    int n = tables[arch->impl][part].n, count = 0;
    vp_recompute rc = part == VP_PRICE_LAYER ? work->recompute : VP_RECOMPUTE_NONE;
    for (int i = 0; i < n; i++) {
        vp_keep keep;
        if (!row_present(&rows[i], arch, work) || !row_recomputed(&rows[i], rc, &keep))
            continue;
        if (count < cap)
            out[count] = (vp_saved_tensor){rows[i].name, row_bytes(&rows[i], arch, work), keep};
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
            if (!(r->flags & ONLY_SHARD) && !row_present(r, a, t))
                continue;
            double bytes = row_bytes(r, a, t) / (r->width == W_VOCAB ? shards : 1);
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

double vp__part_params(const vp_arch *a, int tp, vp_price_part part) {
    double h = a->hidden, t = tp, kv = (double)a->kv_heads * (h / a->heads), f = a->ffn;
    double norm = a->norm == VP_NORM_LAYER ? 2 * h : h;
    if (part == VP_PRICE_EMBEDDING)
        return (double)a->vocab * h / t + (a->learned_positions ? (double)a->max_positions * h : 0);
    if (part == VP_PRICE_HEAD)
        return norm + (double)a->vocab * h / t;
    double mlp_in = a->ffn_kind == VP_FFN_GELU ? f : 2 * f; /* column-parallel outputs */
    double weights = (h * (h + 2 * kv) + h * h + mlp_in * h + f * h) / t;
    /* column-parallel biases are split, row-parallel ones (projection, FC2) are not */
    double biases = a->bias ? (h + 2 * kv + mlp_in) / t + 2 * h : 0;
    return weights + biases + 2 * norm;
}

/* FLOPs of one part per microbatch on one rank (2 per multiply-add; Zero Bubble Table 1
 * for a GPT layer: F = sbh(24h + 4s), B = sbh(24h + 8s), W = sbh·24h). */
static void part_flops(const vp_arch *a, const vp_workload *t, vp_price_part part,
                       vp_price_facts *out) {
    double tokens = (double)t->mbs * t->seq, h = a->hidden, tp = t->tp;
    double kv = (double)a->kv_heads * (h / a->heads), f = a->ffn;
    out->flops_f = out->flops_b = out->flops_w = out->flops_r = 0;
    if (part == VP_PRICE_EMBEDDING)
        return;
    if (part == VP_PRICE_HEAD) {
        out->flops_f = out->flops_b = out->flops_w = 2 * tokens * h * a->vocab / tp;
        return;
    }
    double mlp = (a->ffn_kind == VP_FFN_GELU ? 2 : 3) * h * f;
    double linear = 2 * tokens * (h * (h + 2 * kv) + h * h + mlp) / tp;
    double scores = 2 * tokens * t->seq * h / tp; /* one of QK^T and AV */
    out->flops_f = linear + 2 * scores;
    out->flops_b = linear + 4 * scores;
    out->flops_w = linear;
    if (t->recompute == VP_RECOMPUTE_FULL)
        out->flops_r = out->flops_f;
    else if (t->recompute == VP_RECOMPUTE_SELECTIVE && !t->flash)
        out->flops_r = 2 * scores;
}

vp_status vp_price_part_facts(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                              vp_price_facts *out, vp_error *err) {
    vp_price_setup setup = {.arch = arch, .work = work};
    vp_status rc = vp_price_check(&setup, err);
    if (rc == VP_OK)
        vp__part_facts(arch, work, part, out);
    return rc;
}

void vp__part_facts(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                    vp_price_facts *out) {
    vp_saved_tensor saved[MAX_ROWS];
    int n = vp_price_tensors(arch, work, part, saved, MAX_ROWS);
    *out = (vp_price_facts){.params = vp__part_params(arch, work->tp, part)};
    for (int i = 0; i < n; i++) {
        if (saved[i].keep != VP_KEEP_B_W)
            out->act_bytes += saved[i].bytes;
        if (saved[i].keep != VP_KEEP_F_B)
            out->keep_bytes += saved[i].bytes;
    }
    part_flops(arch, work, part, out);
}
