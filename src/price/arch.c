/* The model description: presets, vpipe's own GPT, checks and the parameter count. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "price/price_internal.h"

/* GPT-style: LayerNorm, GELU, biases, dropout, learned positions, 16-bit. */
#define GPT(n, l, h, a, f, v, tie, pos)                                                            \
    {                                                                                              \
        .name = n, .layers = l, .hidden = h, .heads = a, .kv_heads = a, .ffn = f, .vocab = v,      \
        .max_positions = pos, .ffn_kind = VP_FFN_GELU, .norm = VP_NORM_LAYER, .tied = tie,         \
        .bias = true, .dropout = true, .learned_positions = true, .dtype_bytes = 2,                \
        .impl = VP_IMPL_MEGATRON                                                                   \
    }
/* Llama-style: RMSNorm, SwiGLU, no biases, no dropout, rotary positions, untied, 16-bit. */
#define LLAMA(n, l, h, a, kv, f, v, pos)                                                           \
    {                                                                                              \
        .name = n, .layers = l, .hidden = h, .heads = a, .kv_heads = kv, .ffn = f, .vocab = v,     \
        .max_positions = pos, .ffn_kind = VP_FFN_SWIGLU, .norm = VP_NORM_RMS, .tied = false,       \
        .bias = false, .dropout = false, .learned_positions = false, .dtype_bytes = 2,             \
        .impl = VP_IMPL_MEGATRON                                                                   \
    }

/* A Llama-style mixture of experts: n layers, dense_ the first dense ones, heads a (kv KV
 * heads) of size d, e routed experts of which k per token, each of width ef, shared s,
 * the dense MLP's width f. */
#define MOE(n, l, h, a, kv, d, f, v, pos, e, k, ef, s, dense_)                                     \
    {                                                                                              \
        .name = n, .layers = l, .hidden = h, .heads = a, .kv_heads = kv, .head_dim = d, .ffn = f,  \
        .vocab = v, .max_positions = pos, .ffn_kind = VP_FFN_SWIGLU, .norm = VP_NORM_RMS,          \
        .dtype_bytes = 2, .impl = VP_IMPL_MEGATRON, .experts = e, .top_k = k, .expert_ffn = ef,    \
        .shared_experts = s, .dense_layers = dense_                                                \
    }

/* GPT-OSS: n layers with e experts (4 per token, 2880 wide like the residual), biases, a
 * 128-token window on every other layer. */
#define GPT_OSS(n, l, e)                                                                           \
    {                                                                                              \
        .name = n, .layers = l, .hidden = 2880, .heads = 64, .kv_heads = 8, .head_dim = 64,        \
        .ffn = 2880, .vocab = 201088, .max_positions = 131072, .ffn_kind = VP_FFN_SWIGLU,          \
        .norm = VP_NORM_RMS, .bias = true, .dtype_bytes = 2, .impl = VP_IMPL_MEGATRON,             \
        .window = 128, .window_period = 2, .window_layers = 1, .experts = e, .top_k = 4,           \
        .expert_ffn = 2880                                                                         \
    }

/* design/models.md §2 and design/anchors.md §1 (each from the config files cited there).
 * The papers' models are Megatron GPTs: GPT-2 vocabulary, 4h MLP and tied embeddings
 * (their published sizes count the table once); their position tables are taken as long
 * as the sequences the papers ran (1024 for Zero Bubble, 4096 for Controllable Memory).
 * NeMo's GPT3-5B/20B keep the 175B row's vocabulary and tying [i]; Nemotron-22B is
 * Nemotron-3's shape (squared ReLU, LayerNorm, no biases, untied) with its 256k vocabulary
 * [i: not printed in anchors.md]. DeepSeek-V3: MLA and 256 experts (8 per token, one
 * shared) after three dense layers; Qwen3 and GPT-OSS: head size 128 and 64 beside a
 * narrower residual; GPT-OSS: biases, and a 128-token window on every other layer (the
 * even ones); Mixtral: eight experts, two per token. */
static const vp_arch presets[] = {
    GPT("gpt2-124m", 12, 768, 12, 3072, 50257, true, 1024),
    LLAMA("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096),
    LLAMA("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096),
    LLAMA("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096),
    LLAMA("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192),
    LLAMA("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192),
    LLAMA("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 131072),
    GPT("gpt3-175b", 96, 12288, 96, 49152, 50257, true, 2048),
    GPT("zb-1.5b", 22, 2304, 24, 4 * 2304, 50257, true, 1024),
    GPT("zb-6.2b", 30, 4096, 32, 4 * 4096, 50257, true, 1024),
    GPT("zb-14.6b", 46, 5120, 40, 4 * 5120, 50257, true, 1024),
    GPT("zb-28.3b", 62, 6144, 48, 4 * 6144, 50257, true, 1024),
    GPT("cm-9.6b", 30, 5120, 40, 4 * 5120, 50257, true, 4096),
    GPT("cm-21b", 46, 6144, 48, 4 * 6144, 50257, true, 4096),
    GPT("cm-38.5b", 62, 7168, 64, 4 * 7168, 50257, true, 4096),
    GPT("cm-98.5b", 78, 10240, 80, 4 * 10240, 50257, true, 4096),
    LLAMA("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 131072),
    GPT("gpt3-5b", 24, 4096, 32, 16384, 50257, true, 2048),
    GPT("gpt3-20b", 44, 6144, 48, 24576, 50257, true, 2048),
    {.name = "nemotron-22b",
     .layers = 40,
     .hidden = 6144,
     .heads = 48,
     .kv_heads = 48,
     .ffn = 24576,
     .vocab = 256000,
     .max_positions = 4096,
     .ffn_kind = VP_FFN_RELU2,
     .norm = VP_NORM_LAYER,
     .dtype_bytes = 2,
     .impl = VP_IMPL_MEGATRON},
    {.name = "deepseek-v3",
     .layers = 61,
     .hidden = 7168,
     .heads = 128,
     .kv_heads = 128,
     .ffn = 18432,
     .vocab = 129280,
     .max_positions = 163840,
     .ffn_kind = VP_FFN_SWIGLU,
     .norm = VP_NORM_RMS,
     .dtype_bytes = 2,
     .impl = VP_IMPL_MEGATRON,
     .q_lora = 1536,
     .kv_lora = 512,
     .qk_nope = 128,
     .qk_rope = 64,
     .v_head = 128,
     .experts = 256,
     .top_k = 8,
     .expert_ffn = 2048,
     .shared_experts = 1,
     .dense_layers = 3,
     .expert_groups = 8,
     .group_top_k = 4},
    MOE("qwen3-30b-a3b", 48, 2048, 32, 4, 128, 6144, 151936, 40960, 128, 8, 768, 0, 0),
    MOE("qwen3-235b-a22b", 94, 4096, 64, 4, 128, 12288, 151936, 40960, 128, 8, 1536, 0, 0),
    GPT_OSS("gpt-oss-120b", 36, 128),
    GPT_OSS("gpt-oss-20b", 24, 32),
    MOE("mixtral-8x7b", 32, 4096, 32, 8, 0, 14336, 32000, 32768, 8, 2, 14336, 0, 0),
    MOE("mixtral-8x22b", 56, 6144, 48, 8, 0, 16384, 32768, 65536, 8, 2, 16384, 0, 0),
};

#define N_PRESETS ((int)(sizeof presets / sizeof presets[0]))

const char *vp_ffn_kind_name(vp_ffn_kind k) {
    static const char *const names[] = {"gelu", "swiglu", "relu2"};
    return (unsigned)k <= VP_FFN_RELU2 ? names[k] : NULL;
}

int vp_arch_preset_count(void) {
    return N_PRESETS;
}

const char *vp_arch_preset_name(int i) {
    return i >= 0 && i < N_PRESETS ? presets[i].name : NULL;
}

const char *vp__join_names(const char *(*name_at)(int), int n, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name_at(i));
    return buf;
}

vp_status vp_arch_preset(const char *name, vp_arch *out, vp_error *err) {
    for (int i = 0; i < N_PRESETS; i++)
        if (!strcmp(presets[i].name, name)) {
            *out = presets[i];
            return VP_OK;
        }
    char names[480], known[512];
    vp__join_names(vp_arch_preset_name, N_PRESETS, names, sizeof names);
    snprintf(known, sizeof known, "known: %s, or a config.json path", names);
    vp__nearest near = {.word = name};
    for (int i = 0; i < N_PRESETS; i++)
        vp__nearest_offer(&near, presets[i].name);
    return vp__fail(err, VP_EINVAL, "unknown model '%s'%s", name,
                    vp__did_you_mean(near.best, known).text);
}

vp_arch vp_arch_vpipe(int layers, int width, int heads, int seq) {
    vp_arch a = GPT("vpipe", layers, width, heads, 4 * width, 256, false, seq);
    a.dropout = false;
    a.dtype_bytes = 4;
    a.impl = VP_IMPL_VPIPE;
    return a;
}

/* Limits that keep every byte and FLOP count exact in a double and far from overflow. */
#define ARCH_MAX_DIM 1000000
#define ARCH_MAX_LAYERS 100000
#define ARCH_MAX_VOCAB 100000000

/* The head size, latent attention, windows and experts: in range and consistent. */
static vp_status check_variants(const vp_arch *a, vp_error *err) {
    const struct {
        const char *name;
        int value, max;
    } f[] = {{"head_dim", a->head_dim, ARCH_MAX_DIM},
             {"q_lora", a->q_lora, ARCH_MAX_DIM},
             {"kv_lora", a->kv_lora, ARCH_MAX_DIM},
             {"qk_nope", a->qk_nope, ARCH_MAX_DIM},
             {"qk_rope", a->qk_rope, ARCH_MAX_DIM},
             {"v_head", a->v_head, ARCH_MAX_DIM},
             {"window", a->window, 1 << 30},
             {"window_period", a->window_period, ARCH_MAX_LAYERS},
             {"window_layers", a->window_layers, ARCH_MAX_LAYERS},
             {"experts", a->experts, 1 << 16},
             {"top_k", a->top_k, 1 << 16},
             {"expert_ffn", a->expert_ffn, 8 * ARCH_MAX_DIM},
             {"shared_experts", a->shared_experts, 1 << 10},
             {"dense_layers", a->dense_layers, ARCH_MAX_LAYERS},
             {"expert_groups", a->expert_groups, 1 << 16},
             {"group_top_k", a->group_top_k, 1 << 16}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].value < 0 || f[i].value > f[i].max)
            return vp__fail(err, VP_EINVAL, "model %s: %s must be in [0, %d], got %d", a->name,
                            f[i].name, f[i].max, f[i].value);
    if (a->kv_lora > 0 && (a->qk_nope + a->qk_rope < 1 || a->v_head < 1))
        return vp__fail(err, VP_EINVAL,
                        "model %s: latent attention needs qk_nope + qk_rope >= 1 and v_head >= 1",
                        a->name);
    if (a->window > 0 && (a->window_period < 1 || a->window_layers > a->window_period))
        return vp__fail(err, VP_EINVAL,
                        "model %s: a window needs window_period >= 1 and window_layers <= it",
                        a->name);
    if (a->experts > 0 &&
        (a->top_k < 1 || a->top_k > a->experts || a->expert_ffn < 1 || a->dense_layers > a->layers))
        return vp__fail(err, VP_EINVAL,
                        "model %s: %d experts need top_k in [1, %d], expert_ffn >= 1 and "
                        "dense_layers <= layers (got %d, %d, %d)",
                        a->name, a->experts, a->experts, a->top_k, a->expert_ffn, a->dense_layers);
    if (a->experts > 0 && a->expert_groups > 0 &&
        (a->experts % a->expert_groups || a->group_top_k < 1 || a->group_top_k > a->expert_groups ||
         a->top_k > (double)a->group_top_k * a->experts / a->expert_groups))
        return vp__fail(err, VP_EINVAL,
                        "model %s: %d expert groups need to divide the %d experts and "
                        "group_top_k in [1, %d] with room for top_k %d (got %d)",
                        a->name, a->expert_groups, a->experts, a->expert_groups, a->top_k,
                        a->group_top_k);
    if (!(a->capacity >= 0 && a->capacity <= 1000))
        return vp__fail(err, VP_EINVAL, "model %s: capacity factor must be in [0, 1000]", a->name);
    return VP_OK;
}

vp_status vp_arch_check(const vp_arch *a, vp_error *err) {
    const struct {
        const char *name;
        int value, max;
    } f[] = {{"layers", a->layers, ARCH_MAX_LAYERS},      {"hidden", a->hidden, ARCH_MAX_DIM},
             {"heads", a->heads, ARCH_MAX_DIM},           {"kv_heads", a->kv_heads, ARCH_MAX_DIM},
             {"ffn", a->ffn, 8 * ARCH_MAX_DIM},           {"vocab", a->vocab, ARCH_MAX_VOCAB},
             {"max_positions", a->max_positions, 1 << 30}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].value < 1 || f[i].value > f[i].max)
            return vp__fail(err, VP_EINVAL, "model %s: %s must be in [1, %d], got %d", a->name,
                            f[i].name, f[i].max, f[i].value);
    if (a->head_dim == 0 && a->hidden % a->heads)
        return vp__fail(err, VP_EINVAL,
                        "model %s: hidden %d is not divisible by heads %d (give the head size)",
                        a->name, a->hidden, a->heads);
    if (a->heads % a->kv_heads)
        return vp__fail(err, VP_EINVAL, "model %s: heads %d are not divisible by kv_heads %d",
                        a->name, a->heads, a->kv_heads);
    vp_status rc = check_variants(a, err);
    if (rc != VP_OK)
        return rc;
    if ((unsigned)a->ffn_kind > VP_FFN_RELU2 || (unsigned)a->norm > VP_NORM_RMS ||
        (unsigned)a->impl > VP_IMPL_VPIPE)
        return vp__fail(err, VP_EINVAL, "model %s: unknown FFN, norm or implementation kind",
                        a->name);
    if (a->dtype_bytes != 2 && a->dtype_bytes != 4)
        return vp__fail(err, VP_EINVAL, "model %s: dtype_bytes must be 2 or 4, got %d", a->name,
                        a->dtype_bytes);
    bool variant = a->head_dim || a->kv_lora || a->window || a->experts;
    if (a->impl == VP_IMPL_VPIPE &&
        (variant || a->ffn != 4 * a->hidden || a->vocab > 256 || a->kv_heads != a->heads ||
         a->ffn_kind != VP_FFN_GELU || a->norm != VP_NORM_LAYER || !a->bias || a->tied ||
         a->dropout || !a->learned_positions || a->dtype_bytes != 4))
        return vp__fail(err, VP_EINVAL,
                        "model %s: vpipe's own GPT is fp32, GELU 4h, LayerNorm, biases, "
                        "learned positions, untied, no dropout, vocab <= 256",
                        a->name);
    return VP_OK;
}

/* Parameters of the whole model, with its routed experts counted in full (all) or as the
 * top_k a token passes (active). */
static double model_params(const vp_arch *a, bool all) {
    vp_workload t = vp_workload_default(a);
    int counts[VP__KINDS];
    vp__kind_counts(a, 0, a->layers, counts);
    double total = vp__piece_params(a, &t, VP_PRICE_EMBEDDING, 0, NULL) +
                   vp__piece_params(a, &t, VP_PRICE_HEAD, 0, NULL);
    for (unsigned k = 0; k < VP__KINDS; k++) {
        double experts, p = vp__piece_params(a, &t, VP_PRICE_LAYER, k, &experts);
        if (!all && experts > 0)
            p -= experts * (1 - (double)a->top_k / a->experts);
        total += counts[k] * p;
    }
    return a->tied ? total - (double)a->vocab * a->hidden : total;
}

double vp_arch_params(const vp_arch *a) {
    return model_params(a, true);
}

double vp_arch_active_params(const vp_arch *a) {
    return model_params(a, false);
}

vp_status vp_arch_parse_vpipe(const char *text, vp_arch *out, vp_error *err) {
    static const char usage[] = "expected vpipe:LAYERS,WIDTH,HEADS,SEQ (e.g. vpipe:8,128,4,64)";
    if (strncmp(text, "vpipe:", 6))
        return vp__fail(err, VP_EINVAL, "'%s': %s", text, usage);
    long dims[4];
    const char *at = text + 6;
    for (int i = 0; i < 4; i++) {
        char *end = NULL;
        errno = 0;
        dims[i] = isdigit((unsigned char)*at) ? strtol(at, &end, 10) : -1;
        if (dims[i] < 1 || dims[i] > (1L << 20) || errno || *end != (i < 3 ? ',' : '\0'))
            return vp__fail(err, VP_EINVAL, "'%s': %s, each in [1, %d]", text, usage, 1 << 20);
        at = end + 1;
    }
    vp_arch a = vp_arch_vpipe((int)dims[0], (int)dims[1], (int)dims[2], (int)dims[3]);
    snprintf(a.name, sizeof a.name, "vpipe:%ld,%ld,%ld,%ld", dims[0], dims[1], dims[2], dims[3]);
    vp_status rc = vp_arch_check(&a, err);
    if (rc == VP_OK)
        *out = a;
    return rc;
}
