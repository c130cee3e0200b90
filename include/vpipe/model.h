/* vpipe model: a GPT-style transformer with split backward (F, B, W), its pure size
 * functions, the accounting allocator its activations live in, the layer split, and
 * AdamW.
 *
 * Module `model` (src/model/): kernels, layers, stages, allocator, optimiser, matmul.
 * Depends on base only; the runtime drives it.
 *
 * Passes. For one microbatch a stage runs
 *   F  vp_stage_forward          keeps the activations backward needs,
 *   B  vp_stage_backward_input   computes the input gradient, keeps only what W needs
 *                                (each linear's input X and output gradient dY, and the
 *                                LayerNorm weight-gradient sums) and frees the rest,
 *   W  vp_stage_backward_weight  accumulates the weight gradients (+=) and frees the rest.
 * Weight gradients of a stage accumulate in the order its W passes run; run them in
 * microbatch order and every schedule gives bit-identical gradients (one BLAS thread).
 *
 * Recomputation. After F, vp_stage_drop releases what a recomputation rebuilds, and R
 * (vp_stage_recompute) rebuilds it before B with the forward's own kernels in the
 * forward's order, so the slot holds the same bits F left and every result is
 * bit-identical to a run that kept everything:
 *   full       keeps the stage's input (the activation from the previous stage, or the
 *              tokens on a first stage) and, on a last stage, the targets; R runs the
 *              whole forward again (the loss it computes is not used);
 *   selective  keeps everything but the attention core's saved tensors: every layer's
 *              attention probabilities [B, heads, T, T] (the softmax of q k^T, the only
 *              tensor quadratic in T); R recomputes them from the kept qkv. Its input,
 *              norms, qkv, attention output, MLP and head stay.
 *
 * Memory. Activation buffers are charged to a vp_mem when a stage takes them and
 * released when it drops them. F and R only charge, W only releases, vp_stage_drop only
 * releases, and B releases what it drops before it charges the output gradient it took
 * over, so the count never passes the larger of its values before and after a pass: the
 * peak is the largest total held between passes. Per microbatch F adds act_bytes, B turns
 * them into stash_bytes, W removes those (vp_stage_sizes); a drop leaves input_bytes
 * (full) or act_bytes - core_bytes (selective), which R restores to act_bytes. A tensor
 * handed from one stage to the next (F output, B input gradient) is no stage's
 * activation while in flight. The stage also charges, once, its parameters, gradients,
 * AdamW moments and B's scratch (work_bytes) to their own categories of the allocator.
 *
 * Offload. Between F (and a drop) and the backward, a share of what a slot holds can go
 * to a host pool (another vp_mem) and come back bit for bit, in four steps that split
 * between a copy engine (another thread) and the passes: vp_stage_offload_copy copies it
 * to host buffers (the device still holds it), vp_stage_offload_release lets the device
 * buffers go, vp_stage_reload_reserve takes device buffers again and
 * vp_stage_reload_copy fills them and lets the host buffers go. Whole tensors move: what
 * the slot holds is listed layer by layer (then the stage's own tensors), and a share x
 * takes the longest prefix of the list whose every tensor's middle lies within x of its
 * bytes (vp_stage_offload_bytes says how many bytes). A pass refuses a slot whose tensors
 * are not all back.
 * Vocabulary parallelism (vp_stage_range.vocab_shards = K > 0). The token table and the
 * head are split by vocabulary into K shards (rows vp_vocab_rows), each held by a
 * vocabulary stage (vp_vocab_range) with four passes of its own: EF (vp_vocab_embed: the
 * shard's rows of the tokens), EB (vp_vocab_embed_backward: the shard's token-table
 * gradient), S (vp_vocab_output: the shard's logits of the last stage's output and their
 * softmax statistics) and T (vp_vocab_output_backward: with every shard's statistics
 * combined by vp_vocab_combine, the softmax, the shard's part of the output gradient and
 * its head gradient). The first stage then adds the position embedding to the shards'
 * parts added up in shard order (vp_vocab_add), and returns its input gradient for the
 * EBs; the last stage ends at the final norm, whose output h goes to every S, and starts
 * its backward from the T parts added up in shard order. Every sum of the shards runs in
 * shard order, so a single rank holding the K shards gives the same bits as K ranks. A
 * vocabulary stage holds per microbatch its tokens from EF until EB (embed_bytes) and h,
 * its logits, statistics and targets from S until T (output_bytes).
 */
#ifndef VPIPE_MODEL_H
#define VPIPE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vpipe/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration ---------------------------------------------------------------- */

typedef struct vp_model_config {
    int n_layer;    /* transformer blocks */
    int width;      /* C, the residual width; divisible by n_head */
    int n_head;     /* attention heads */
    int seq_len;    /* T, tokens per sequence */
    int microbatch; /* B, sequences per microbatch */
    int vocab;      /* V, 2..256; byte-level text needs 256 */
} vp_model_config;

/* Checks every field is positive and consistent (width % n_head == 0, vocab in
 * [2, 256], sizes small enough that every tensor's element count fits in an int and the
 * byte sizes of a stage holding every layer stay below 2^61, so that the size functions
 * cannot overflow). VP_EINVAL with a message naming the field otherwise. */
VP_API vp_status vp_model_config_check(const vp_model_config *cfg, vp_error *err);

/* ---- stage ranges and pure size functions ------------------------------------------- */

/* A stage's share of the model: layers [l0, l1), plus the token and position embeddings
 * when first, plus the final norm, head and loss when last. Valid when 0 <= l0 <= l1 <=
 * n_layer, the first stage starts at 0, the last ends at n_layer, and only a first or
 * last stage is empty. With vocab_shards = K > 0 (vocabulary parallelism) a first stage
 * holds only the position embedding and a last only the final norm, both at least one
 * layer; a vocabulary stage (vocab_shard = k + 1, l0 = l1 = 0, neither first nor last)
 * holds shard k's rows of the token table and of the head. */
typedef struct vp_stage_range {
    int l0, l1;
    bool first, last;
    int vocab_shards; /* 0: no vocabulary parallelism; K: the vocabulary split in K shards */
    int vocab_shard;  /* 0: a stage of layers; k + 1: the vocabulary stage of shard k */
} vp_stage_range;

/* The range of the vocabulary stage of shard k of shards (0 <= k < shards). */
static inline vp_stage_range vp_vocab_range(int k, int shards) {
    vp_stage_range r = {0, 0, false, false, shards, k + 1};
    return r;
}

/* Rows [*v0, *v1) of a vocabulary of vocab entries that shard k of shards holds: equal
 * shares, vocab * k / shards to vocab * (k + 1) / shards. */
static inline void vp_vocab_rows(int vocab, int k, int shards, int *v0, int *v1) {
    *v0 = (int)((long long)vocab * k / shards);
    *v1 = (int)((long long)vocab * (k + 1) / shards);
}

typedef struct vp_stage_sizes {
    size_t param_bytes;  /* parameters; gradients and each AdamW moment take as much again */
    size_t act_bytes;    /* charged per microbatch from F until B */
    size_t stash_bytes;  /* charged per microbatch from B until W */
    size_t io_bytes;     /* one activation or gradient tensor between stages (B*T*C floats) */
    size_t work_bytes;   /* per-stage scratch for B, allocated once */
    size_t input_bytes;  /* of act_bytes, what a full recomputation keeps from F until R: the
                            input (tokens on a first stage) and a last stage's targets */
    size_t core_bytes;   /* of act_bytes, what a selective recomputation drops from F until R:
                            the attention probabilities of every layer */
    size_t embed_bytes;  /* a vocabulary stage: per microbatch from EF until EB (the tokens) */
    size_t output_bytes; /* a vocabulary stage: per microbatch from S until T (the last
                            stage's output, the shard's logits, statistics and targets) */
} vp_stage_sizes;

/* Sizes of the stage holding range of model cfg. Pure: allocates nothing. VP_EINVAL for
 * a bad config or range (with vocab_shards: more shards than the vocabulary has entries,
 * a first or last stage without layers, a vocabulary stage with layers). */
VP_API vp_status vp_stage_sizes_of(const vp_model_config *cfg, vp_stage_range range,
                                   vp_stage_sizes *out, vp_error *err);

/* Splits n_layer layers over the route_len stages of a route into [l0[k], l0[k+1]),
 * k = 0..route_len-1 (l0 has route_len + 1 entries): equal shares, with the remainder
 * going to the middle stages first, so the first stage (embeddings) and the last (head
 * and loss) take fewer. VP_EINVAL when a middle stage would be empty (fewer than
 * route_len - 2 layers). */
VP_API vp_status vp_split_layers(int n_layer, int route_len, int *l0, vp_error *err);

/* Checks a layer split l0[route_len + 1] of n_layer layers (any, e.g. balanced by memory
 * or time): starts at 0, ends at n_layer, never decreases, and only the first and the
 * last stage may be empty. VP_EINVAL naming the stage otherwise. */
VP_API vp_status vp_split_check(int n_layer, int route_len, const int *l0, vp_error *err);

/* The range of stage k of a route of route_len stages split into l0 (vp_split_layers, or
 * any split vp_split_check accepts). */
VP_API vp_stage_range vp_split_range(const int *l0, int k, int route_len);

/* ---- accounting allocator ------------------------------------------------------------ */

/* What the bytes of a rank are for. */
typedef enum {
    VP_MEM_ACTIVATIONS = 0, /* what the passes keep for later passes (the default) */
    VP_MEM_PARAMS = 1,      /* parameters */
    VP_MEM_GRADS = 2,       /* weight gradients */
    VP_MEM_OPTIMIZER = 3,   /* AdamW moments */
    VP_MEM_WORKSPACE = 4,   /* per-stage scratch of B */
    VP_MEM_IN_FLIGHT = 5,   /* tensors between stages the runtime holds: made by a pass
                               and not yet taken by the next stage or sent to its rank
                               (not the price module's "buffers": its receive buffers) */
    VP_MEM_HOST = 6         /* offloaded activations in the rank's host pool: another pool
                               than the device's (the runtime reports it beside the device's
                               categories; nothing charges it to a device's allocator) */
} vp_mem_category;

#define VP_MEM_CATEGORIES 7

/* "activations", "params", "grads", "optimizer", "workspace", "in_flight", "host" ("?"
 * otherwise). Static string. */
VP_API const char *vp_mem_category_name(vp_mem_category cat);

/* Counts the bytes one rank holds, per category: current and peak. Freed buffers are kept
 * for reuse (uncounted) until vp_mem_free. Not thread-safe: one rank (thread) uses one
 * vp_mem; stages on that rank share it. The calls without a category count activations. */
typedef struct vp_mem vp_mem;

/* New allocator with zero counts, or NULL when out of memory. */
VP_API vp_mem *vp_mem_new(void);
VP_API void vp_mem_free(vp_mem *mem);

/* Allocates bytes (uninitialised) and charges them; NULL on failure. */
VP_API void *vp_mem_alloc(vp_mem *mem, size_t bytes);
/* The same without charging: a buffer in flight to another stage. Any of these buffers
 * may be released with free() instead. */
VP_API void *vp_mem_alloc_uncharged(vp_mem *mem, size_t bytes);
/* Takes back p (from either alloc, possibly another vp_mem's) and uncharges bytes. */
VP_API void vp_mem_release(vp_mem *mem, void *p, size_t bytes);
/* Charges or releases bytes without allocating (a buffer changing hands). */
VP_API void vp_mem_charge(vp_mem *mem, size_t bytes);
VP_API void vp_mem_uncharge(vp_mem *mem, size_t bytes);

VP_API size_t vp_mem_current(const vp_mem *mem);
VP_API size_t vp_mem_peak(const vp_mem *mem);

/* The same for a category (cat outside the enum: the library aborts). */
VP_API void vp_mem_charge_to(vp_mem *mem, vp_mem_category cat, size_t bytes);
VP_API void vp_mem_uncharge_from(vp_mem *mem, vp_mem_category cat, size_t bytes);
VP_API size_t vp_mem_current_of(const vp_mem *mem, vp_mem_category cat);
VP_API size_t vp_mem_peak_of(const vp_mem *mem, vp_mem_category cat);

/* ---- stage ------------------------------------------------------------------------- */

/* A contiguous layer range with its parameters, gradients, AdamW moments, scratch and
 * one activation slot per microbatch index. Its passes are not thread-safe; different
 * stages may run on different threads. */
typedef struct vp_stage vp_stage;

/* How a stage is made. */
typedef struct vp_stage_options {
    int n_slots;       /* microbatch indices [0, n_slots) that may be in flight at once */
    uint64_t seed;     /* initial parameters */
    bool naive_matmul; /* multiply with the plain-loop reference instead of OpenBLAS (slow;
                          for tests and as a fallback) */
    int shard, shards; /* ZeRO-1: the stage holds the AdamW moments of shard `shard` of
                          `shards` (vp_shard_of) only, and its AdamW step updates only
                          that shard's parameters; shards 0 or 1: all of them */
} vp_stage_options;

/* Makes the stage holding range of model cfg. Parameters are initialised from opt->seed:
 * each tensor from its own stream keyed by (seed, layer, tensor), so any split of the
 * same model starts from the same weights. mem is borrowed and must outlive the stage.
 * Gradients start at zero. VP_EINVAL for a bad config, range or n_slots < 1, VP_ENOMEM. */
VP_API vp_status vp_stage_new(const vp_model_config *cfg, vp_stage_range range,
                              const vp_stage_options *opt, vp_mem *mem, vp_stage **out,
                              vp_error *err);
/* Frees the stage and every buffer its slots still hold (released from mem). */
VP_API void vp_stage_free(vp_stage *stage);

/* What a forward reads and where it puts what it makes (vp_stage_forward).
 * - First stage: tokens [B*T] (borrowed, copied, each < vocab); in must be NULL.
 *   Other stages: in [B*T*C] from the previous stage's forward (or any malloc'd buffer
 *   of io_bytes); the stage takes it over (charges it, releases it after B).
 * - Last stage: targets [B*T] (borrowed, copied); *loss receives the mean cross-entropy
 *   of the microbatch; out must be NULL.
 *   Other stages: *out receives the output [B*T*C], in flight: hand it to the next
 *   stage's forward or free it with vp_stage_buffer_free. */
typedef struct vp_stage_io {
    float *in;
    const uint8_t *tokens, *targets;
    float **out;
    double *loss;
} vp_stage_io;

/* F for microbatch slot mb with io. VP_EINVAL (io->in still the caller's) if the slot is
 * busy, an argument is missing or a token is out of range; VP_ENOMEM (io->in freed, slot
 * left empty). */
VP_API vp_status vp_stage_forward(vp_stage *stage, int mb, const vp_stage_io *io, vp_error *err);

/* B for slot mb (after F). Last stage: starts from the loss with dloss = loss_scale
 * (1/m to average m microbatches; the mean over B*T tokens is built in) and dout must
 * be NULL. Other stages: dout [B*T*C] from the next stage's backward_input (or any
 * malloc'd buffer of io_bytes), taken over. First stage: din must be NULL. Others: *din
 * receives the input gradient, in flight. VP_EINVAL (dout still the caller's) if the
 * slot has not run F. */
VP_API vp_status vp_stage_backward_input(vp_stage *stage, int mb, float *dout, float loss_scale,
                                         float **din, vp_error *err);

/* W for slot mb (after B): weight gradients += this microbatch's; the slot is empty
 * afterwards. VP_EINVAL if the slot has not run B. */
VP_API vp_status vp_stage_backward_weight(vp_stage *stage, int mb, vp_error *err);

/* After F of slot mb: releases what a recomputation rebuilds (full: all but the input and
 * targets; else the attention probabilities). VP_EINVAL if the slot has not just run F. */
VP_API vp_status vp_stage_drop(vp_stage *stage, int mb, bool full, vp_error *err);

/* R for slot mb (after vp_stage_drop): rebuilds what the drop released, bit for bit as F
 * made it; the slot is then ready for B. VP_EINVAL if the slot has not been dropped,
 * VP_ENOMEM (the slot is then emptied). */
VP_API vp_status vp_stage_recompute(vp_stage *stage, int mb, vp_error *err);

/* ---- offload (see the header comment) ---------------------------------------------- */

/* Bytes an offload of share (in [0, 1]) moves from a slot of the stage holding range of
 * cfg, as the slot is after F (drop 0), after a selective drop (1) or after a full drop
 * (2). Pure. VP_EINVAL for a bad config, range, share or drop, VP_ENOMEM. */
VP_API vp_status vp_stage_offload_bytes(const vp_model_config *cfg, vp_stage_range range, int drop,
                                        double share, size_t *bytes, vp_error *err);

/* The copy engine's half of an offload: copies share of what slot mb holds (after F or a
 * drop, all on the device) into buffers of host (charged there). Touches only slot mb and
 * host, so it may run on another thread than the passes of the stage's other slots (one
 * thread per pool). VP_EINVAL (the slot holds no forward, is offloaded already, share
 * outside [0, 1], host NULL), VP_ENOMEM (nothing stays on host). */
VP_API vp_status vp_stage_offload_copy(vp_stage *stage, int mb, double share, vp_mem *host,
                                       vp_error *err);

/* After vp_stage_offload_copy ended: releases the device buffers it copied (the stage's
 * allocator goes down by their bytes). VP_EINVAL when slot mb was not copied. */
VP_API vp_status vp_stage_offload_release(vp_stage *stage, int mb, vp_error *err);

/* Takes device buffers (charged) for what slot mb has on host, for vp_stage_reload_copy.
 * VP_EINVAL when it is not offloaded, VP_ENOMEM (then still offloaded). */
VP_API vp_status vp_stage_reload_reserve(vp_stage *stage, int mb, vp_error *err);

/* The copy engine's half of a reload: copies the host buffers of slot mb into the device
 * buffers reserved for them and releases the host's (to the host pool, from the thread
 * that copied them there); the slot is whole again. VP_EINVAL when not reserved. */
VP_API vp_status vp_stage_reload_copy(vp_stage *stage, int mb, vp_error *err);

/* Drops whatever slot mb holds (after a forward-only evaluation, or on abort). */
VP_API void vp_stage_discard(vp_stage *stage, int mb);

/* Frees an in-flight buffer from forward or backward_input (NULL is fine). */
VP_API void vp_stage_buffer_free(float *buf);

/* ---- vocabulary stages (vocabulary parallelism) -------------------------------------- */

/* EF of a vocabulary stage for slot mb: *out receives [B*T*C] (in flight) with each token's
 * row of the token table when the token is one of the shard's, 0 otherwise; the tokens
 * (borrowed, each < vocab) are kept until EB. VP_EINVAL (not a vocabulary stage, slot busy,
 * a token outside the vocabulary), VP_ENOMEM. */
VP_API vp_status vp_vocab_embed(vp_stage *stage, int mb, const uint8_t *tokens, float **out,
                                vp_error *err);

/* EB for slot mb (after its EF): the shard's rows of the token-table gradient += the rows
 * of dout [B*T*C] (the first stage's input gradient, borrowed) of its tokens, in token
 * order; the tokens are released. VP_EINVAL when the slot has not run EF. */
VP_API vp_status vp_vocab_embed_backward(vp_stage *stage, int mb, const float *dout, vp_error *err);

/* Floats of one shard's softmax statistics of a microbatch: per token its logits' maximum,
 * the sum of exp(logit - maximum), and the target's logit (0 when the target is another
 * shard's). */
#define VP_VOCAB_STATS 3

/* S for slot mb: h [B*T*C] (the last stage's output, taken over) times the shard's head
 * rows gives its logits, kept with h and a copy of targets [B*T] until T; their statistics
 * go to stats[VP_VOCAB_STATS * B*T] (caller storage). VP_EINVAL (h still the caller's),
 * VP_ENOMEM (h freed, slot left as it was). */
VP_API vp_status vp_vocab_output(vp_stage *stage, int mb, float *h, const uint8_t *targets,
                                 float *stats, vp_error *err);

/* Combines the statistics of the shards stats[0..shards) (each of n tokens, in shard
 * order) into the softmax's maximum, sum of exponentials and target logit per token
 * (combined[VP_VOCAB_STATS * n]), and returns the mean cross-entropy of the n tokens. Pure:
 * the same bits wherever it runs. */
VP_API double vp_vocab_combine(const float *const *stats, int shards, int n, float *combined);

/* T for slot mb (after its S), with the combined statistics: the shard's softmax minus the
 * one-hot target, times loss_scale / (B*T), is its logits' gradient; *dx receives its
 * part of the last stage's output gradient [B*T*C] (in flight) and the shard's head
 * gradient += its share; the slot's S part is released. VP_EINVAL when the slot has not
 * run S, VP_ENOMEM (slot unchanged). */
VP_API vp_status vp_vocab_output_backward(vp_stage *stage, int mb, const float *combined,
                                          float loss_scale, float **dx, vp_error *err);

/* acc[0..n) := part (first) or acc + part: the shards' parts added in shard order. */
VP_API void vp_vocab_add(float *acc, const float *part, size_t n, bool first);

/* Sets every gradient to zero. */
VP_API void vp_stage_zero_grad(vp_stage *stage);

/* ---- shards and the gradient norm's blocks ------------------------------------------- */

/* The gradient norm adds squares by block, so that every split of the model and every
 * shard of a stage give the same bits: each unit of the model (the embeddings, each
 * layer, the final norm with the head) is cut from its start into blocks of
 * VP_NORM_BLOCK floats, the last one shorter; a block's squares add in double in
 * parameter order, and the blocks' sums in the model's block order. */
#define VP_NORM_BLOCK 1024

/* A part of a stage's flat arrays: elements [lo, hi), which are its whole blocks
 * [b0, b1) numbered in the whole model's block order. */
typedef struct vp_shard {
    size_t lo, hi;
    int b0, b1;
} vp_shard;

/* Where the stage holding range of model cfg starts in the whole model's flat arrays
 * (those of a stage holding every layer): the stages of any split tile them in route
 * order. VP_EINVAL for a bad config or range, VP_EUNSUPPORTED for a vocabulary stage
 * (its rows of the token table and of the head are two slices). */
VP_API vp_status vp_stage_offset_of(const vp_model_config *cfg, vp_stage_range range,
                                    size_t *offset, vp_error *err);

/* Blocks of the whole model cfg (0 for a config vp_model_config_check refuses). */
VP_API int vp_norm_block_count(const vp_model_config *cfg);

/* The same with the vocabulary split into vocab_shards shards (0: none, as
 * vp_norm_block_count), whose blocks come first in the model's block order: each shard's
 * token-table rows, then its head rows, shard after shard; then the position embedding,
 * the layers and the final norm. */
VP_API int vp_norm_blocks(const vp_model_config *cfg, int vocab_shards);

/* Shard k of n (0 <= k < n) of the stage holding range of model cfg: the stage's blocks
 * cut into n contiguous runs, each cut at the block boundary nearest to an even share of
 * the elements (a stage of fewer blocks than n leaves some shards empty); n = 1 gives the
 * whole stage. VP_EINVAL for a bad config, range, k or n. */
VP_API vp_status vp_shard_of(const vp_model_config *cfg, vp_stage_range range, int k, int n,
                             vp_shard *out, vp_error *err);

/* Bytes of the AdamW moments (two floats per element) of the elements of sh: what a stage
 * holding them charges to VP_MEM_OPTIMIZER, and what a rank is predicted to hold. */
VP_API size_t vp_shard_moment_bytes(vp_shard sh);

/* The sum of squared gradients of each block of sh (a shard of this stage, from
 * vp_shard_of) into out[b - sh.b0], each in double in parameter order. */
VP_API void vp_stage_grad_sumsq_blocks(const vp_stage *stage, vp_shard sh, double *out);

/* The stage's block sums added in order: the whole model's squared gradient norm when
 * the stage holds every layer. */
VP_API double vp_stage_grad_sumsq(const vp_stage *stage);

/* Parameters and gradients as flat arrays in the stage's layout: embeddings (token,
 * position), then per layer ln1 w b, qkv w b, proj w b, ln2 w b, fc w b, fcproj w b,
 * then final norm w b and head. Borrowed; valid while the stage lives. */
VP_API float *vp_stage_params(vp_stage *stage, size_t *count);
VP_API float *vp_stage_grads(vp_stage *stage, size_t *count);

/* What a checkpoint saves of a stage: its layer range, its n parameters in the layout of
 * vp_stage_params, and the AdamW moments of the elements it holds them for (all of them,
 * or its ZeRO-1 shard): adam_m[i - held.lo] and adam_v[i - held.lo] belong to element i
 * of [held.lo, held.hi). Borrowed pointers, valid while the stage lives; writing through
 * them changes the stage. */
typedef struct vp_stage_state {
    vp_stage_range range;
    size_t n;
    float *params;
    vp_shard held;
    float *adam_m, *adam_v;
} vp_stage_state;

VP_API vp_stage_state vp_stage_state_of(vp_stage *stage);

/* FNV-1a 64 over the parameter bytes, continuing from hash (start with
 * VP_DIGEST_INIT); digesting stages in order hashes the whole model. */
#define VP_DIGEST_INIT 0xcbf29ce484222325ULL
VP_API uint64_t vp_stage_digest(const vp_stage *stage, uint64_t hash);

/* FNV-1a 64 over n bytes, continuing from hash. */
VP_API uint64_t vp_digest(const void *bytes, size_t n, uint64_t hash);

/* ---- optimiser ----------------------------------------------------------------------- */

typedef struct vp_adamw {
    float beta1, beta2, eps; /* 0.9, 0.95, 1e-8 */
    float weight_decay;      /* applied to matrices and embeddings, not biases or norms */
} vp_adamw;

/* One AdamW step (step counts from 1) with learning rate lr on gradients multiplied
 * by grad_scale (the clip factor; 1 for none), on the elements whose moments the stage
 * holds (all of them, or its ZeRO-1 shard: the other parameters stay as they are). */
VP_API void vp_stage_adamw(vp_stage *stage, const vp_adamw *opt, int step, float lr,
                           float grad_scale);

typedef enum { VP_LR_COSINE, VP_LR_CONSTANT } vp_lr_schedule;

/* Learning rate at step (0-based) of steps: constant, or linear warm-up over warmup
 * steps then cosine decay to min_lr. */
VP_API double vp_lr_at(vp_lr_schedule schedule, int step, int steps, int warmup, double lr,
                       double min_lr);

/* ---- matmul ------------------------------------------------------------------------ */

/* Threads OpenBLAS may use: a process-wide setting. vp_train_run, vp_pipeline_train and
 * vp_profile_measure set it to 1 (and leave it so), as their contracts say: stage threads
 * then scale (~1.9x for two) and the reference's sums are those of one BLAS thread. */
VP_API void vp_blas_set_threads(int n);
/* OpenBLAS's kernel name ("Haswell", "SkylakeX", ...); static. */
VP_API const char *vp_blas_corename(void);

/* OpenBLAS's build configuration ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake
 * MAX_THREADS=64"); static. */
VP_API const char *vp_blas_config(void);

/* The OpenBLAS core type this CPU should run instead of kernel (the library's own
 * choice, vp_blas_corename), or NULL when that choice stands. Only a generic fallback
 * is replaced: a kernel older than AVX2 (Prescott, Core2, Nehalem, Sandybridge, ...,
 * what OpenBLAS 0.3.21 picks on a CPU it does not know, e.g. Sapphire Rapids) on a CPU
 * that has, with the operating system's support, AVX-512 F, CD, BW, DQ and VL
 * ("Cooperlake" with AVX512-BF16, else "SkylakeX") or AVX2 and FMA ("Haswell"): never a
 * kernel the CPU lacks. OpenBLAS fixes its kernel when it loads, so a program applies the
 * answer by setting OPENBLAS_CORETYPE before OpenBLAS is loaded (the vpipe command
 * re-executes itself; the library never does). Static string. */
VP_API const char *vp_blas_better_kernel(const char *kernel);

#ifdef __cplusplus
}
#endif

#endif
