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

/* design/models.md §2. The papers' models are Megatron GPTs: GPT-2 vocabulary, 4h MLP and
 * tied embeddings (their published sizes count the table once); their
 * position tables are taken as long as the sequences the papers ran (1024 for Zero
 * Bubble, 4096 for Controllable Memory). */
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
};

#define N_PRESETS ((int)(sizeof presets / sizeof presets[0]))

int vp_arch_preset_count(void) {
    return N_PRESETS;
}

const char *vp_arch_preset_name(int i) {
    return i >= 0 && i < N_PRESETS ? presets[i].name : NULL;
}

/* "a, b, c" of a name list into buf. */
static const char *join_names(const char *(*name_at)(int), int n, char *buf, size_t size) {
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
    char known[512];
    return vp__fail(err, VP_EINVAL, "unknown model '%s' (known: %s, or a config.json path)", name,
                    join_names(vp_arch_preset_name, N_PRESETS, known, sizeof known));
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
    if (a->hidden % a->heads)
        return vp__fail(err, VP_EINVAL, "model %s: hidden %d is not divisible by heads %d", a->name,
                        a->hidden, a->heads);
    if (a->heads % a->kv_heads)
        return vp__fail(err, VP_EINVAL, "model %s: heads %d are not divisible by kv_heads %d",
                        a->name, a->heads, a->kv_heads);
    if ((unsigned)a->ffn_kind > VP_FFN_SWIGLU || (unsigned)a->norm > VP_NORM_RMS ||
        (unsigned)a->impl > VP_IMPL_VPIPE)
        return vp__fail(err, VP_EINVAL, "model %s: unknown FFN, norm or implementation kind",
                        a->name);
    if (a->dtype_bytes != 2 && a->dtype_bytes != 4)
        return vp__fail(err, VP_EINVAL, "model %s: dtype_bytes must be 2 or 4, got %d", a->name,
                        a->dtype_bytes);
    if (a->impl == VP_IMPL_VPIPE &&
        (a->ffn != 4 * a->hidden || a->vocab > 256 || a->kv_heads != a->heads ||
         a->ffn_kind != VP_FFN_GELU || a->norm != VP_NORM_LAYER || !a->bias || a->tied ||
         a->dropout || !a->learned_positions || a->dtype_bytes != 4))
        return vp__fail(err, VP_EINVAL,
                        "model %s: vpipe's own GPT is fp32, GELU 4h, LayerNorm, biases, "
                        "learned positions, untied, no dropout, vocab <= 256",
                        a->name);
    return VP_OK;
}

double vp_arch_params(const vp_arch *a) {
    double total = a->layers * vp__part_params(a, 1, VP_PRICE_LAYER) +
                   vp__part_params(a, 1, VP_PRICE_EMBEDDING) + vp__part_params(a, 1, VP_PRICE_HEAD);
    return a->tied ? total - (double)a->vocab * a->hidden : total;
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
