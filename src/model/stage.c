/* The stage: a contiguous layer range with its parameters, gradients, AdamW moments and
 * per-microbatch activation slots, and its three passes F, B, W (see vpipe/model.h for
 * the accounting rules these functions follow). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/stage_internal.h"

/* ---- configuration and sizes ---- */

/* Whether the product of n positive factors is at most limit (checked before each
 * multiplication, so nothing overflows); *product receives it when it is. */
static bool product_fits(int64_t limit, const int64_t *factors, int n, int64_t *product) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (factors[i] > limit / p)
            return false;
        p *= factors[i];
    }
    *product = p;
    return true;
}

vp_status vp_model_config_check(const vp_model_config *cfg, vp_error *err) {
    if (!cfg)
        return vp__fail(err, VP_EINVAL, "no model configuration");
    const struct {
        const char *name;
        int value;
    } fields[] = {{"layers", cfg->n_layer}, {"width", cfg->width},           {"heads", cfg->n_head},
                  {"seq", cfg->seq_len},    {"microbatch", cfg->microbatch}, {"vocab", cfg->vocab}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].value <= 0)
            return vp__fail(err, VP_EINVAL, "%s must be positive, got %d", fields[i].name,
                            fields[i].value);
    if (cfg->width % cfg->n_head)
        return vp__fail(err, VP_EINVAL, "width %d is not divisible by heads %d", cfg->width,
                        cfg->n_head);
    if (cfg->vocab < 2 || cfg->vocab > 256)
        return vp__fail(err, VP_EINVAL, "vocab must be in [2, 256], got %d", cfg->vocab);
    int64_t B = cfg->microbatch, T = cfg->seq_len, C = cfg->width, NH = cfg->n_head;
    int64_t V = cfg->vocab, N = 0, probs = 0, nc4 = 0, cc12 = 0, vn = 0;
    /* every tensor's element count fits in an int (the kernels index with int) */
    if (!product_fits(INT_MAX, (int64_t[]){B, T}, 2, &N) ||
        !product_fits(INT_MAX, (int64_t[]){B, NH, T, T}, 4, &probs) ||
        !product_fits(INT_MAX, (int64_t[]){N, 4, C}, 3, &nc4) ||
        !product_fits(INT_MAX, (int64_t[]){12, C, C}, 3, &cc12) || cc12 + 13 * C > INT_MAX ||
        !product_fits(INT_MAX, (int64_t[]){V, N}, 2, &vn))
        return vp__fail(err, VP_EINVAL, "model too large (a tensor exceeds 2^31 elements)");
    /* and a stage holding every layer has byte sizes below 2^61 (each layer's parameters
     * and activations are below 2^36 bytes after the checks above) */
    int64_t layer_bytes = 4 * (4 * nc4 + probs + 4 * C + 4 * N) + 4 * (cc12 + 13 * C), total;
    if (!product_fits(INT64_MAX / 4, (int64_t[]){cfg->n_layer, layer_bytes}, 2, &total))
        return vp__fail(err, VP_EINVAL, "model too large (%d layers exceed 2^61 bytes)",
                        cfg->n_layer);
    return VP_OK;
}

/* The vocabulary parallelism of range r: shards fitting the vocabulary, a vocabulary stage
 * without layers, first and last stages with layers. */
static vp_status check_vocab_range(const vp_model_config *cfg, vp_stage_range r, vp_error *err) {
    if (r.vocab_shards < 0 || r.vocab_shard < 0 || (r.vocab_shard && !r.vocab_shards) ||
        r.vocab_shard > r.vocab_shards)
        return vp__fail(err, VP_EINVAL, "vocabulary shard %d of %d does not exist",
                        r.vocab_shard - 1, r.vocab_shards);
    if (r.vocab_shards > cfg->vocab)
        return vp__fail(err, VP_EINVAL,
                        "vocabulary parallelism over %d shards needs a vocabulary of at least %d "
                        "entries (one per shard); the model has %d",
                        r.vocab_shards, r.vocab_shards, cfg->vocab);
    if (r.vocab_shard && (r.l0 || r.l1 || r.first || r.last))
        return vp__fail(err, VP_EINVAL, "a vocabulary stage holds no layers");
    if (r.vocab_shards && !r.vocab_shard && (r.first || r.last) && r.l0 == r.l1)
        return vp__fail(err, VP_EINVAL,
                        "with vocabulary parallelism the first and the last stage hold at least "
                        "one layer (the %s stage has none)",
                        r.first ? "first" : "last");
    return VP_OK;
}

static vp_status check_range(const vp_model_config *cfg, vp_stage_range r, vp_error *err) {
    vp_status st = vp_model_config_check(cfg, err);
    if (st == VP_OK)
        st = check_vocab_range(cfg, r, err);
    if (st)
        return st;
    if (r.l0 < 0 || r.l1 < r.l0 || r.l1 > cfg->n_layer)
        return vp__fail(err, VP_EINVAL, "layer range [%d, %d) is not within [0, %d)", r.l0, r.l1,
                        cfg->n_layer);
    if (r.l0 == r.l1 && !r.first && !r.last && !r.vocab_shard)
        return vp__fail(err, VP_EINVAL, "a middle stage needs at least one layer");
    if (r.first && r.l0 != 0)
        return vp__fail(err, VP_EINVAL, "the first stage must start at layer 0");
    if (r.last && r.l1 != cfg->n_layer)
        return vp__fail(err, VP_EINVAL, "the last stage must end at layer %d", cfg->n_layer);
    return VP_OK;
}

vp_status vp_stage_sizes_of(const vp_model_config *cfg, vp_stage_range range, vp_stage_sizes *out,
                            vp_error *err) {
    vp_status st = check_range(cfg, range, err);
    if (st)
        return st;
    size_t f = sizeof(float), B = (size_t)cfg->microbatch, T = (size_t)cfg->seq_len;
    size_t C = (size_t)cfg->width, V = (size_t)cfg->vocab, NH = (size_t)cfg->n_head;
    size_t N = B * T, nl = (size_t)(range.l1 - range.l0);
    /* per block: x ln1 qkv att x2 ln2 h hg (16C per token), 4 norm stats per token,
     * probabilities, 4C norm sums; after B: ln1 att ln2 hg dqkv dh dx2 dout, sums */
    size_t block_act = f * (N * (16 * C + 4) + B * NH * T * T + 4 * C);
    size_t block_stash = f * (N * 16 * C + 4 * C);
    vp_stage_sizes s = {0};
    s.io_bytes = f * N * C;
    if (range.vocab_shard) { /* rows of the token table and the head; h, logits, stats, targets */
        int v0, v1;
        vp_vocab_rows(cfg->vocab, range.vocab_shard - 1, range.vocab_shards, &v0, &v1);
        size_t Vk = (size_t)(v1 - v0);
        s.param_bytes = f * 2 * Vk * C;
        s.embed_bytes = N;
        s.output_bytes = f * (N * C + N * Vk + VP_VOCAB_STATS * N) + N;
        *out = s;
        return VP_OK;
    }
    bool vocab = range.vocab_shards > 0;
    s.param_bytes = f * nl * (size_t)vp__block_param_count(cfg->width);
    s.act_bytes = nl * block_act;
    s.stash_bytes = nl * block_stash;
    s.input_bytes = range.first && !vocab ? N : s.io_bytes; /* tokens, or the activation */
    s.core_bytes = nl * f * B * NH * T * T;
    vp__dims d = {cfg->microbatch, cfg->seq_len, cfg->width, cfg->n_head, false};
    size_t work = nl ? (size_t)vp__block_work_floats(d) : 0;
    if (range.first && vocab) { /* position table; dout for W */
        s.param_bytes += f * T * C;
        s.stash_bytes += f * N * C;
    }
    if (range.last && vocab) { /* final norm; xf stats sums; sums */
        s.param_bytes += f * 2 * C;
        s.act_bytes += f * (N * (C + 2) + 2 * C);
        s.stash_bytes += f * 2 * C;
    }
    if (range.first && !vocab) { /* token and position tables; tokens, and dout for W */
        s.param_bytes += f * (V * C + T * C);
        s.act_bytes += N;
        s.stash_bytes += N + f * N * C;
    }
    if (range.last && !vocab) { /* final norm and head; xf lnf stats probs sums targets; lnf
                                   dlogits sums */
        s.param_bytes += f * (2 * C + V * C);
        s.act_bytes += f * (N * (2 * C + 2 + V) + 2 * C) + N;
        s.stash_bytes += f * (N * (C + V) + 2 * C);
        s.input_bytes += N; /* the targets */
        work = work > N * C ? work : N * C;
    }
    s.work_bytes = f * work;
    *out = s;
    return VP_OK;
}

/* ---- construction ---- */

static void add_tensor(vp_stage *s, long count, bool decay) {
    long off =
        s->n_tensors ? s->tensors[s->n_tensors - 1].offset + s->tensors[s->n_tensors - 1].count : 0;
    s->tensors[s->n_tensors++] = (vp__tensor){off, count, decay};
}

/* Adds tensor i of the stage (count elements) and fills it from the stream keyed by
 * (a, b); std is that of a normal start. */
static void init_tensor(vp_stage *s, long count, bool decay, vp__init init, float std,
                        uint64_t seed, uint64_t a, uint64_t b) {
    add_tensor(s, count, decay);
    float *p = s->params + s->tensors[s->n_tensors - 1].offset;
    if (init == VP__INIT_ZEROS) {
        memset(p, 0, (size_t)count * sizeof(float));
    } else if (init == VP__INIT_ONES) {
        for (long j = 0; j < count; j++)
            p[j] = 1.0f;
    } else {
        uint64_t state = vp__rng_key(seed, a, b);
        vp__rng_normal(&state, p, count, std);
    }
}

/* Allocates the stage's arrays (zeroed); false when out of memory. */
static bool alloc_arrays(vp_stage *s) {
    size_t n = (size_t)s->n_params;
    s->params = vp__calloc(n, sizeof(float));
    s->grads = vp__calloc(n, sizeof(float));
    s->adam_m = vp__calloc(s->held.hi - s->held.lo, sizeof(float));
    s->adam_v = vp__calloc(s->held.hi - s->held.lo, sizeof(float));
    s->tensors = vp__calloc((size_t)(2 + VP__LAYER_TENSORS * s->n_local + 3), sizeof(vp__tensor));
    s->bp = vp__calloc((size_t)s->n_local, sizeof(vp__block_params));
    s->bg = vp__calloc((size_t)s->n_local, sizeof(vp__block_params));
    s->work = vp__calloc(s->sizes.work_bytes / sizeof(float), sizeof(float));
    s->slots = vp__calloc((size_t)s->n_slots, sizeof(vp__slot));
    bool ok = s->params && s->grads && s->adam_m && s->adam_v && s->tensors && s->bp && s->bg &&
              s->work && s->slots;
    for (int i = 0; ok && i < s->n_slots; i++) {
        s->slots[i].blocks = vp__calloc((size_t)s->n_local, sizeof(vp__block_act));
        ok = s->slots[i].blocks != NULL;
    }
    return ok;
}

/* Adds a tensor of rows [v0, v1) of a V x C table and fills it with those rows of the
 * stream keyed by (a, b), as the whole table's tensor has them; false when out of memory. */
static bool init_rows(vp_stage *s, float std, uint64_t seed, uint64_t a, uint64_t b) {
    long C = s->cfg.width, V = s->cfg.vocab;
    float *whole = vp__malloc((size_t)(V * C), sizeof *whole);
    if (!whole)
        return false;
    uint64_t state = vp__rng_key(seed, a, b);
    vp__rng_normal(&state, whole, V * C, std);
    add_tensor(s, (s->v1 - s->v0) * C, true);
    memcpy(s->params + s->tensors[s->n_tensors - 1].offset, whole + s->v0 * C,
           (size_t)((s->v1 - s->v0) * C) * sizeof *whole);
    free(whole);
    return true;
}

/* Lays out and initialises the parameters: tensor streams keyed by (layer + 1, index);
 * 0 and L + 1 are the embeddings and the head, whose rows a vocabulary stage holds.
 * false when out of memory. */
static bool init_params(vp_stage *s, uint64_t seed) {
    int C = s->cfg.width, V = s->cfg.vocab, T = s->cfg.seq_len, L = s->cfg.n_layer;
    float std = 0.02f, residual_std = 0.02f / sqrtf(2.0f * (float)L);
    if (s->vocab_shard) { /* the token table's rows, then the head's */
        bool ok = init_rows(s, std, seed, 0, 0) && init_rows(s, std, seed, (uint64_t)(L + 1), 2);
        s->wte = s->params;
        s->dwte = s->grads;
        s->headw = s->params + (long)(s->v1 - s->v0) * C;
        s->dheadw = s->grads + (long)(s->v1 - s->v0) * C;
        return ok;
    }
    if (s->first && s->vocab_shards) {
        init_tensor(s, (long)T * C, true, VP__INIT_NORMAL, std, seed, 0, 1);
        s->wpe = s->params;
        s->dwpe = s->grads;
    }
    if (s->first && !s->vocab_shards) {
        init_tensor(s, (long)V * C, true, VP__INIT_NORMAL, std, seed, 0, 0);
        init_tensor(s, (long)T * C, true, VP__INIT_NORMAL, std, seed, 0, 1);
        s->wte = s->params;
        s->wpe = s->params + (long)V * C;
        s->dwte = s->grads;
        s->dwpe = s->grads + (long)V * C;
    }
    for (int l = 0; l < s->n_local; l++) {
        long at = s->n_tensors
                      ? s->tensors[s->n_tensors - 1].offset + s->tensors[s->n_tensors - 1].count
                      : 0;
        for (int j = 0; j < VP__LAYER_TENSORS; j++) {
            const vp__layer_tensor *t = &vp__layer_tensors[j];
            init_tensor(s, vp__layer_tensor_count(j, C), t->decay, t->init,
                        t->init == VP__INIT_RESIDUAL ? residual_std : std, seed,
                        (uint64_t)(s->l0 + l + 1), (uint64_t)j);
        }
        vp__block_params_at(&s->bp[l], s->params + at, C);
        vp__block_params_at(&s->bg[l], s->grads + at, C);
    }
    if (s->last) {
        int t0 = s->n_tensors;
        init_tensor(s, C, false, VP__INIT_ONES, 0.0f, seed, (uint64_t)(L + 1), 0);
        init_tensor(s, C, false, VP__INIT_ZEROS, 0.0f, seed, (uint64_t)(L + 1), 1);
        if (!s->vocab_shards)
            init_tensor(s, (long)V * C, true, VP__INIT_NORMAL, std, seed, (uint64_t)(L + 1), 2);
        s->lnfw = s->params + s->tensors[t0].offset;
        s->lnfb = s->params + s->tensors[t0 + 1].offset;
        s->dlnfw = s->grads + s->tensors[t0].offset;
        s->dlnfb = s->grads + s->tensors[t0 + 1].offset;
        if (!s->vocab_shards) {
            s->headw = s->params + s->tensors[t0 + 2].offset;
            s->dheadw = s->grads + s->tensors[t0 + 2].offset;
        }
    }
    return true;
}

/* Charges (or uncharges) the stage's parameters, gradients, AdamW moments (of the
 * elements it holds them for: all, or its ZeRO-1 shard) and scratch to their categories
 * of its allocator, once. */
static void charge_states(vp_stage *s, bool charge) {
    if (s->charged == charge)
        return;
    size_t n = s->sizes.param_bytes;
    const struct {
        vp_mem_category cat;
        size_t bytes;
    } states[] = {{VP_MEM_PARAMS, n},
                  {VP_MEM_GRADS, n},
                  {VP_MEM_OPTIMIZER, vp_shard_moment_bytes(s->held)},
                  {VP_MEM_WORKSPACE, s->sizes.work_bytes}};
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
        (charge ? vp_mem_charge_to : vp_mem_uncharge_from)(s->mem, states[i].cat, states[i].bytes);
    s->charged = charge;
}

vp_status vp_stage_new(const vp_model_config *cfg, vp_stage_range range,
                       const vp_stage_options *opt, vp_mem *mem, vp_stage **out, vp_error *err) {
    *out = NULL;
    vp_stage_sizes sizes;
    vp_status st = vp_stage_sizes_of(cfg, range, &sizes, err);
    if (st)
        return st;
    if (!opt || opt->n_slots < 1 || !mem)
        return vp__fail(err, VP_EINVAL, "a stage needs at least one slot and an allocator");
    vp_shard held;
    int shards = opt->shards > 1 ? opt->shards : 1;
    st = vp_shard_of(cfg, range, shards > 1 ? opt->shard : 0, shards, &held, err);
    if (st)
        return st;
    vp_stage *s = vp__calloc(1, sizeof *s);
    if (!s)
        return vp__fail(err, VP_ENOMEM, "out of memory for a stage");
    s->cfg = *cfg;
    s->l0 = range.l0;
    s->l1 = range.l1;
    s->n_local = range.l1 - range.l0;
    s->first = range.first;
    s->last = range.last;
    s->vocab_shards = range.vocab_shards;
    s->vocab_shard = range.vocab_shard;
    if (range.vocab_shard)
        vp_vocab_rows(cfg->vocab, range.vocab_shard - 1, range.vocab_shards, &s->v0, &s->v1);
    s->d = (vp__dims){cfg->microbatch, cfg->seq_len, cfg->width, cfg->n_head, opt->naive_matmul};
    s->sizes = sizes;
    s->mem = mem;
    s->n_slots = opt->n_slots;
    s->n_params = (long)(sizes.param_bytes / sizeof(float));
    s->held = held;
    if (!alloc_arrays(s) || !init_params(s, opt->seed)) {
        vp_stage_free(s);
        return vp__fail(err, VP_ENOMEM, "out of memory for a stage's parameters");
    }
    charge_states(s, true);
    *out = s;
    return VP_OK;
}

void vp_stage_free(vp_stage *s) {
    if (!s)
        return;
    charge_states(s, false);
    for (int i = 0; s->slots && i < s->n_slots; i++) {
        if (s->slots[i].blocks)
            vp_stage_discard(s, i);
        free(s->slots[i].blocks);
    }
    free(s->slots);
    free(s->work);
    free(s->bp);
    free(s->bg);
    free(s->tensors);
    free(s->params);
    free(s->grads);
    free(s->adam_m);
    free(s->adam_v);
    free(s);
}

/* ---- buffers ---- */

/* Charged allocation, or NULL and *ok cleared when out of memory (or *ok already is). */
static void *take(vp_stage *s, size_t bytes, bool *ok) {
    void *p = *ok ? vp_mem_alloc(s->mem, bytes) : NULL;
    *ok = p != NULL;
    return p;
}

/* Releases a held buffer (NULL is fine) and clears the field. */
#define DROP(s, field, bytes) (vp_mem_release((s)->mem, (field), (bytes)), (field) = NULL)

void vp_stage_buffer_free(float *buf) {
    free(buf);
}

typedef vp__block_bytes block_bytes;

static block_bytes bytes_of(const vp_stage *s) {
    return vp__block_bytes_of(s->d);
}

/* Frees the buffers of a block that B no longer needs (statistics and probabilities). */
static void drop_block_b(vp_stage *s, vp__block_act *a) {
    block_bytes z = bytes_of(s);
    DROP(s, a->mean1, z.n);
    DROP(s, a->rstd1, z.n);
    DROP(s, a->probs, z.probs);
    DROP(s, a->mean2, z.n);
    DROP(s, a->rstd2, z.n);
}

static void drop_block(vp_stage *s, vp__block_act *a) {
    block_bytes z = bytes_of(s);
    drop_block_b(s, a);
    DROP(s, a->x, z.nc);
    DROP(s, a->ln1, z.nc);
    DROP(s, a->qkv, z.qkv);
    DROP(s, a->att, z.nc);
    DROP(s, a->x2, z.nc);
    DROP(s, a->ln2, z.nc);
    DROP(s, a->h, z.h);
    DROP(s, a->hg, z.h);
    DROP(s, a->part, z.part);
    DROP(s, a->dout, z.nc);
}

void vp_stage_discard(vp_stage *s, int mb) {
    if (!s || mb < 0 || mb >= s->n_slots)
        return;
    vp__slot *sl = &s->slots[mb];
    size_t f = sizeof(float), N = (size_t)s->d.B * s->d.T, C = (size_t)s->d.C;
    for (int l = 0; l < s->n_local; l++)
        drop_block(s, &sl->blocks[l]);
    DROP(s, sl->input, f * N * C);
    DROP(s, sl->tokens, N);
    DROP(s, sl->emb_dout, f * N * C);
    DROP(s, sl->targets, N);
    DROP(s, sl->xf, f * N * C);
    DROP(s, sl->lnf, f * N * C);
    DROP(s, sl->meanf, f * N);
    DROP(s, sl->rstdf, f * N);
    DROP(s, sl->probs, f * N * (size_t)s->cfg.vocab);
    DROP(s, sl->partf, f * 2 * C);
    DROP(s, sl->vh, f * N * C);
    DROP(s, sl->vlogits, f * N * (size_t)(s->v1 - s->v0));
    DROP(s, sl->vstats, f * VP_VOCAB_STATS * N);
    DROP(s, sl->vtargets, N);
    vp__slot_offload_discard(sl);
    sl->state = VP__SLOT_EMPTY;
}

static vp_status slot_check(vp_stage *s, int mb, int want, const char *pass, vp_error *err) {
    if (mb < 0 || mb >= s->n_slots)
        return vp__fail(err, VP_EINVAL, "%s: microbatch slot %d is not in [0, %d)", pass, mb,
                        s->n_slots);
    static const char *const what[] = {"empty", "waiting for B", "waiting for W", "waiting for R",
                                       "waiting for R"};
    if (s->slots[mb].state != want)
        return vp__fail(err, VP_EINVAL, "%s: microbatch slot %d of stage [%d, %d) is %s", pass, mb,
                        s->l0, s->l1, what[s->slots[mb].state]);
    if (s->slots[mb].off_state != VP__OFF_NONE)
        return vp__fail(err, VP_EINVAL,
                        "%s: microbatch slot %d of stage [%d, %d) is offloaded: reload it first",
                        pass, mb, s->l0, s->l1);
    return VP_OK;
}

/* ---- F ---- */

/* A layer's or the embeddings' output: charged when it stays on this stage, else an
 * uncharged buffer in flight to the next stage. NULL and *ok cleared on failure. */
static float *take_output(vp_stage *s, bool keep, bool *ok) {
    size_t bytes = s->sizes.io_bytes;
    float *p = !*ok   ? NULL
               : keep ? vp_mem_alloc(s->mem, bytes)
                      : vp_mem_alloc_uncharged(s->mem, bytes);
    *ok = p != NULL;
    return p;
}

/* Allocates a block's F buffers except x (charged). */
static bool take_block(vp_stage *s, vp__block_act *a) {
    block_bytes z = bytes_of(s);
    bool ok = true;
    a->ln1 = take(s, z.nc, &ok);
    a->mean1 = take(s, z.n, &ok);
    a->rstd1 = take(s, z.n, &ok);
    a->qkv = take(s, z.qkv, &ok);
    a->probs = take(s, z.probs, &ok);
    a->att = take(s, z.nc, &ok);
    a->x2 = take(s, z.nc, &ok);
    a->ln2 = take(s, z.nc, &ok);
    a->mean2 = take(s, z.n, &ok);
    a->rstd2 = take(s, z.n, &ok);
    a->h = take(s, z.h, &ok);
    a->hg = take(s, z.h, &ok);
    a->part = take(s, z.part, &ok);
    return ok;
}

/* The embedding of the slot's tokens into a new buffer (charged when it stays on the
 * stage); NULL and *ok cleared on failure. */
static float *embed(vp_stage *s, vp__slot *sl, bool *ok) {
    float *cur = take_output(s, s->n_local > 0 || s->last, ok);
    if (*ok)
        vp__embedding_forward(cur, sl->tokens, s->wte, s->wpe, s->d.B, s->d.T, s->d.C);
    return cur;
}

/* The final norm of a last stage under vocabulary parallelism: *out receives its output
 * (in flight, for every shard's S); false when out of memory. */
static bool final_norm_out(vp_stage *s, vp__slot *sl, float **out) {
    size_t f = sizeof(float), N = (size_t)s->d.B * s->d.T, C = (size_t)s->d.C;
    bool ok = true;
    sl->meanf = take(s, f * N, &ok);
    sl->rstdf = take(s, f * N, &ok);
    sl->partf = take(s, f * 2 * C, &ok);
    *out = ok ? vp_mem_alloc_uncharged(s->mem, f * N * C) : NULL;
    if (*out)
        vp__layernorm_forward(*out, sl->meanf, sl->rstdf, sl->xf, s->lnfw, s->lnfb, (int)N, (int)C);
    return *out != NULL;
}

/* The layers from cur (their input), then on a last stage the final norm, head and loss
 * into *loss (the targets already in the slot), or with vocabulary parallelism the final
 * norm into *out; else *out receives the output, in flight. Every buffer taken belongs to
 * a field of the slot (or is *out); false when out of memory. */
static bool forward_body(vp_stage *s, vp__slot *sl, float *cur, float **out, double *loss) {
    size_t f = sizeof(float), N = (size_t)s->d.B * s->d.T, C = (size_t)s->d.C;
    size_t V = (size_t)s->cfg.vocab;
    bool ok = true;
    for (int l = 0; ok && l < s->n_local; l++) {
        vp__block_act *a = &sl->blocks[l];
        a->x = cur;
        ok = take_block(s, a);
        cur = take_output(s, l + 1 < s->n_local || s->last, &ok);
        if (ok)
            vp__block_forward(cur, a, &s->bp[l], s->d);
    }
    if (!s->last) {
        *out = cur;
        return ok;
    }
    sl->xf = cur;
    if (s->vocab_shards)
        return ok && final_norm_out(s, sl, out);
    sl->lnf = take(s, f * N * C, &ok);
    sl->meanf = take(s, f * N, &ok);
    sl->rstdf = take(s, f * N, &ok);
    sl->probs = take(s, f * N * V, &ok);
    sl->partf = take(s, f * 2 * C, &ok);
    if (ok) {
        int n = (int)N, c = (int)C, v = (int)V;
        vp__layernorm_forward(sl->lnf, sl->meanf, sl->rstdf, sl->xf, s->lnfw, s->lnfb, n, c);
        vp__linear_forward(sl->probs, sl->lnf, s->headw, NULL, n, c, v, s->d.naive);
        *loss = vp__crossentropy_forward(sl->probs, sl->targets, n, v) / (double)N;
    }
    return ok;
}

vp_status vp_stage_forward(vp_stage *s, int mb, const vp_stage_io *io, vp_error *err) {
    vp_status st = slot_check(s, mb, VP__SLOT_EMPTY, "forward", err);
    if (st)
        return st;
    float *in = io->in, **out = io->out;
    const uint8_t *tokens = io->tokens, *targets = io->targets;
    double *loss = io->loss;
    bool embeds = s->first && !s->vocab_shards, heads = s->last && !s->vocab_shards;
    if (s->vocab_shard)
        return vp__fail(err, VP_EINVAL, "forward: a vocabulary stage runs EF and S");
    if (embeds ? (!tokens || in) : !in)
        return vp__fail(err, VP_EINVAL, "forward: %s",
                        embeds ? "the first stage takes tokens" : "no input activation");
    if (heads ? (!targets || !loss || out) : !out)
        return vp__fail(err, VP_EINVAL, "forward: %s",
                        heads ? "the last stage takes targets and returns the loss"
                              : "no output pointer");
    vp__slot *sl = &s->slots[mb];
    size_t f = sizeof(float), N = (size_t)s->d.B * s->d.T, C = (size_t)s->d.C;
    size_t V = (size_t)s->cfg.vocab;
    for (size_t i = 0; i < N; i++)
        if ((tokens && tokens[i] >= V) || (targets && targets[i] >= V))
            return vp__fail(err, VP_EINVAL, "forward: token %d is outside the vocabulary (%zu)",
                            tokens && tokens[i] >= V ? tokens[i] : targets[i], V);
    bool ok = true;
    float *cur = in;
    sl->state = VP__SLOT_ACT;
    if (embeds) {
        sl->tokens = take(s, N, &ok);
        if (ok)
            memcpy(sl->tokens, tokens, N);
    } else {
        vp_mem_charge(s->mem, f * N * C);
    }
    if (heads) {
        sl->targets = take(s, N, &ok);
        if (ok)
            memcpy(sl->targets, targets, N);
    }
    if (embeds)
        cur = embed(s, sl, &ok);
    else if (s->first) /* the shards' token embeddings, plus the positions */
        vp__embedding_add_positions(cur, s->wpe, s->d.B, s->d.T, s->d.C);
    float *final = NULL; /* made only once nothing else can fail */
    if (!ok || !forward_body(s, sl, cur, &final, loss)) {
        vp_stage_discard(s, mb);
        return vp__fail(err, VP_ENOMEM, "forward: out of memory for activations");
    }
    if (!heads)
        *out = final;
    return VP_OK;
}

/* ---- recomputation ---- */

vp_status vp_stage_drop(vp_stage *s, int mb, bool full, vp_error *err) {
    vp_status st = slot_check(s, mb, VP__SLOT_ACT, "drop", err);
    if (st)
        return st;
    vp__slot *sl = &s->slots[mb];
    if (!full) {
        block_bytes z = bytes_of(s);
        for (int l = 0; l < s->n_local; l++)
            DROP(s, sl->blocks[l].probs, z.probs);
        sl->state = VP__SLOT_NO_CORE;
        return VP_OK;
    }
    bool embeds = s->first && !s->vocab_shards;
    float **input = embeds ? NULL : s->n_local ? &sl->blocks[0].x : &sl->xf;
    uint8_t *tokens = sl->tokens, *targets = sl->targets;
    float *kept = input ? *input : NULL;
    if (input)
        *input = NULL;
    sl->tokens = sl->targets = NULL;
    vp_stage_discard(s, mb);
    sl->input = kept;
    sl->tokens = tokens;
    sl->targets = targets;
    sl->state = VP__SLOT_INPUT_ONLY;
    return VP_OK;
}

vp_status vp_stage_recompute(vp_stage *s, int mb, vp_error *err) {
    if (mb < 0 || mb >= s->n_slots ||
        (s->slots[mb].state != VP__SLOT_INPUT_ONLY && s->slots[mb].state != VP__SLOT_NO_CORE) ||
        s->slots[mb].off_state != VP__OFF_NONE)
        return vp__fail(err, VP_EINVAL,
                        "recompute: microbatch slot %d of stage [%d, %d) was not "
                        "dropped after its forward (or is offloaded)",
                        mb, s->l0, s->l1);
    vp__slot *sl = &s->slots[mb];
    bool ok = true;
    if (sl->state == VP__SLOT_NO_CORE) { /* qkv is as F left it: B has not run */
        block_bytes z = bytes_of(s);
        for (int l = 0; ok && l < s->n_local; l++) {
            vp__block_act *a = &sl->blocks[l];
            a->probs = take(s, z.probs, &ok);
            if (ok)
                vp__attention_probs(a->probs, a->qkv, s->d);
        }
    } else {
        float *cur = sl->input, *out = NULL;
        double loss; /* the forward's again; not used */
        sl->input = NULL;
        if (s->first && !s->vocab_shards)
            cur = embed(s, sl, &ok);
        ok = ok && forward_body(s, sl, cur, &out, &loss);
        vp_stage_buffer_free(out); /* the next stage (or the shards) had it from F */
    }
    sl->state = VP__SLOT_ACT;
    if (!ok) {
        vp_stage_discard(s, mb);
        return vp__fail(err, VP_ENOMEM, "recompute: out of memory for activations");
    }
    return VP_OK;
}

/* ---- B ---- */

vp_status vp_stage_backward_input(vp_stage *s, int mb, float *dout, float loss_scale, float **din,
                                  vp_error *err) {
    vp_status st = slot_check(s, mb, VP__SLOT_ACT, "backward_input", err);
    if (st)
        return st;
    bool embeds = s->first && !s->vocab_shards, heads = s->last && !s->vocab_shards;
    if (heads ? dout != NULL : !dout)
        return vp__fail(err, VP_EINVAL, "backward_input: %s",
                        heads ? "the last stage starts from the loss (dout must be NULL)"
                              : "no output gradient");
    if (embeds ? din != NULL : !din)
        return vp__fail(err, VP_EINVAL, "backward_input: %s",
                        embeds ? "the first stage has no input gradient" : "no din pointer");
    vp__slot *sl = &s->slots[mb];
    size_t f = sizeof(float), N = (size_t)s->d.B * s->d.T, C = (size_t)s->d.C;
    int n = (int)N, c = (int)C, v = s->cfg.vocab;
    float *grad = dout, *copy = NULL; /* a first stage's input gradient for the shards' EB */
    if (s->first && !embeds && !(copy = vp_mem_alloc_uncharged(s->mem, f * N * C)))
        return vp__fail(err, VP_ENOMEM, "backward_input: out of memory");
    if (s->last && !heads) { /* the shards' T parts added up: the final norm's output gradient */
        vp__layernorm_backward_input(sl->xf, sl->partf, NULL, dout, sl->xf, sl->meanf, sl->rstdf,
                                     s->lnfw, n, c);
        vp_stage_buffer_free(dout);
        grad = sl->xf;
        sl->xf = NULL;
    } else if (s->last) {
        /* loss = mean_n -log softmax(lnf @ headw^T)[target]; dlogits into probs */
        vp__crossentropy_backward(sl->probs, sl->targets, loss_scale / (float)N, n, v);
        vp__linear_backward_input(s->work, sl->probs, s->headw, n, c, v, s->d.naive);
        vp__layernorm_backward_input(sl->xf, sl->partf, NULL, s->work, sl->xf, sl->meanf, sl->rstdf,
                                     s->lnfw, n, c);
        grad = sl->xf;
        sl->xf = NULL;
    }
    for (int l = s->n_local - 1; l >= 0; l--) {
        vp__block_act *a = &sl->blocks[l];
        vp__block_backward_input(a, grad, &s->bp[l], s->work, s->d);
        grad = a->x;
        a->x = NULL;
    }
    /* accounting at the end of the pass, releases before charges */
    for (int l = 0; l < s->n_local; l++)
        drop_block_b(s, &sl->blocks[l]);
    if (s->last) {
        DROP(s, sl->meanf, f * N);
        DROP(s, sl->rstdf, f * N);
        DROP(s, sl->targets, N);
    }
    if (s->first)
        sl->emb_dout = grad;
    else {
        vp_mem_uncharge(s->mem, f * N * C);
        *din = grad;
    }
    if (copy) {
        memcpy(copy, grad, f * N * C);
        *din = copy;
    }
    if (!s->last)
        vp_mem_charge(s->mem, f * N * C);
    sl->state = VP__SLOT_STASH;
    return VP_OK;
}

/* ---- W ---- */

vp_status vp_stage_backward_weight(vp_stage *s, int mb, vp_error *err) {
    vp_status st = slot_check(s, mb, VP__SLOT_STASH, "backward_weight", err);
    if (st)
        return st;
    vp__slot *sl = &s->slots[mb];
    for (int l = 0; l < s->n_local; l++)
        vp__block_backward_weight(&s->bg[l], &sl->blocks[l], s->d);
    if (s->last && !s->vocab_shards) {
        int n = s->d.B * s->d.T;
        vp__linear_backward_weight(s->dheadw, NULL, sl->probs, sl->lnf, n, s->d.C, s->cfg.vocab,
                                   s->d.naive);
    }
    if (s->last)
        vp__layernorm_backward_weight(s->dlnfw, s->dlnfb, sl->partf, s->d.C);
    if (s->first) /* with vocabulary parallelism the positions only (dwte NULL) */
        vp__embedding_backward_weight(s->dwte, s->dwpe, sl->emb_dout, sl->tokens, s->d.B, s->d.T,
                                      s->d.C);
    vp_stage_discard(s, mb);
    return VP_OK;
}

/* ---- parameters ---- */

void vp_stage_zero_grad(vp_stage *s) {
    memset(s->grads, 0, (size_t)s->n_params * sizeof(float));
}

float *vp_stage_params(vp_stage *s, size_t *count) {
    *count = (size_t)s->n_params;
    return s->params;
}

float *vp_stage_grads(vp_stage *s, size_t *count) {
    *count = (size_t)s->n_params;
    return s->grads;
}

vp_stage_state vp_stage_state_of(vp_stage *s) {
    return (vp_stage_state){
        .range = {s->l0, s->l1, s->first, s->last, s->vocab_shards, s->vocab_shard},
        .n = (size_t)s->n_params,
        .params = s->params,
        .held = s->held,
        .adam_m = s->adam_m,
        .adam_v = s->adam_v};
}

uint64_t vp_digest(const void *bytes, size_t n, uint64_t hash) {
    return vp__fnv1a(bytes, n, hash);
}

uint64_t vp_stage_digest(const vp_stage *s, uint64_t hash) {
    return vp_digest(s->params, (size_t)s->n_params * sizeof(float), hash);
}
