/* Readers: a Hugging Face config.json into a vp_arch, and the accelerator presets and
 * their JSON form into a vp_gpu. Every rejection is VP_EPARSE naming the key. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "price/price_internal.h"

/* ---- JSON helpers ------------------------------------------------------------------ */

static vp_status load_object(const char *text, size_t len, const char *what, json_t **out,
                             vp_error *err) {
    json_error_t jerr;
    *out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!*out)
        return vp__fail_at(err, VP_EPARSE, jerr.line > 0 ? jerr.line : 1,
                           jerr.column > 0 ? jerr.column : 1, "%s: %s", what, jerr.text);
    if (json_is_object(*out))
        return VP_OK;
    json_decref(*out);
    *out = NULL;
    return vp__fail_at(err, VP_EPARSE, 1, 1, "%s must be a JSON object", what);
}

/* The first of names (NULL-terminated) present in obj, or NULL; *key gets its name. */
static json_t *first_of(json_t *obj, const char *const *names, const char **key) {
    for (; *names; names++) {
        json_t *v = json_object_get(obj, *names);
        if (v) {
            *key = *names;
            return v;
        }
    }
    return NULL;
}

/* A number in [lo, hi] under one of names. Absent: VP_EPARSE when required, else *out
 * unchanged. */
static vp_status get_number(json_t *obj, const char *const *names, double lo, double hi,
                            bool required, double *out, vp_error *err) {
    const char *key = names[0];
    json_t *v = first_of(obj, names, &key);
    if (!v)
        return required ? vp__fail(err, VP_EPARSE, "missing key \"%s\"", names[0]) : VP_OK;
    double x = json_number_value(v);
    if (!json_is_number(v) || !(x >= lo && x <= hi))
        return vp__fail(err, VP_EPARSE, "key \"%s\" must be a number in [%g, %g]", key, lo, hi);
    *out = x;
    return VP_OK;
}

/* A whole number in [1, hi]. */
static vp_status get_count(json_t *obj, const char *const *names, int hi, bool required, int *out,
                           vp_error *err) {
    const char *key = names[0];
    json_t *v = first_of(obj, names, &key);
    if (!v)
        return required ? vp__fail(err, VP_EPARSE, "missing key \"%s\"", names[0]) : VP_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > hi)
        return vp__fail(err, VP_EPARSE, "key \"%s\" must be an integer in [1, %d]", key, hi);
    *out = (int)json_integer_value(v);
    return VP_OK;
}

static vp_status get_bool(json_t *obj, const char *key, bool *out, vp_error *err) {
    json_t *v = json_object_get(obj, key);
    if (!v)
        return VP_OK;
    if (!json_is_boolean(v))
        return vp__fail(err, VP_EPARSE, "key \"%s\" must be true or false", key);
    *out = json_is_true(v);
    return VP_OK;
}

/* A string under one of names, or NULL when absent; VP_EPARSE when not a string. */
static vp_status get_string(json_t *obj, const char *const *names, const char **out,
                            vp_error *err) {
    const char *key = names[0];
    json_t *v = first_of(obj, names, &key);
    *out = NULL;
    if (v && !json_is_string(v))
        return vp__fail(err, VP_EPARSE, "key \"%s\" must be a string", key);
    *out = v ? json_string_value(v) : NULL;
    return VP_OK;
}

/* Turns the error a check filled into a parse error (same message). */
static vp_status as_parse_error(vp_error *err) {
    if (err)
        err->status = VP_EPARSE;
    return VP_EPARSE;
}

/* Whether text names a file rather than a preset: it has a '/' or ends in ".json". */
static bool is_path(const char *text) {
    size_t n = strlen(text);
    return strchr(text, '/') || (n >= 5 && !strcmp(text + n - 5, ".json"));
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- Hugging Face config.json --------------------------------------------------------- */

/* hidden_act: silu/swish is Llama's gated MLP (three matrices); gelu variants and relu are
 * a plain two-matrix MLP. */
static vp_status read_activation(json_t *root, vp_arch *a, vp_error *err) {
    const char *act;
    vp_status rc = get_string(root, KEYS("hidden_act", "activation_function"), &act, err);
    if (rc != VP_OK)
        return rc;
    if (!act)
        return vp__fail(err, VP_EPARSE, "missing key \"hidden_act\"");
    if (!strcmp(act, "silu") || !strcmp(act, "swish"))
        a->ffn_kind = VP_FFN_SWIGLU;
    else if (!strncmp(act, "gelu", 4) || !strcmp(act, "relu"))
        a->ffn_kind = VP_FFN_GELU;
    else
        return vp__fail(err, VP_EPARSE,
                        "key \"hidden_act\": unsupported activation \"%s\" "
                        "(silu, swish, gelu*, relu)",
                        act);
    return VP_OK;
}

static vp_status read_dtype(json_t *root, vp_arch *a, vp_error *err) {
    const char *dtype;
    vp_status rc = get_string(root, KEYS("torch_dtype", "dtype"), &dtype, err);
    if (rc != VP_OK || !dtype)
        return rc;
    if (!strcmp(dtype, "bfloat16") || !strcmp(dtype, "float16"))
        a->dtype_bytes = 2;
    else if (!strcmp(dtype, "float32"))
        a->dtype_bytes = 4;
    else
        return vp__fail(err, VP_EPARSE,
                        "key \"torch_dtype\": unsupported \"%s\" (bfloat16, "
                        "float16, float32)",
                        dtype);
    return VP_OK;
}

/* Dropout is on when any dropout probability in the file is above zero. */
static vp_status read_dropout(json_t *root, vp_arch *a, vp_error *err) {
    static const char *const keys[] = {"attention_dropout", "hidden_dropout",
                                       "resid_pdrop",       "attn_pdrop",
                                       "embd_pdrop",        "hidden_dropout_prob"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        double prob = 0;
        vp_status rc =
            get_number(root, (const char *const[]){keys[i], NULL}, 0, 1, false, &prob, err);
        if (rc != VP_OK)
            return rc;
        a->dropout = a->dropout || prob > 0;
    }
    return VP_OK;
}

static vp_status read_dims(json_t *root, vp_arch *a, vp_error *err) {
    vp_status rc = get_count(root, KEYS("hidden_size", "n_embd"), 1000000, true, &a->hidden, err);
    if (rc == VP_OK)
        rc = get_count(root, KEYS("num_hidden_layers", "n_layer"), 100000, true, &a->layers, err);
    if (rc == VP_OK)
        rc = get_count(root, KEYS("num_attention_heads", "n_head"), 1000000, true, &a->heads, err);
    if (rc == VP_OK)
        rc = get_count(root, KEYS("vocab_size"), 100000000, true, &a->vocab, err);
    if (rc == VP_OK)
        rc = get_count(root, KEYS("max_position_embeddings", "n_positions"), 1 << 30, true,
                       &a->max_positions, err);
    a->kv_heads = a->heads;
    if (rc == VP_OK)
        rc = get_count(root, KEYS("num_key_value_heads"), 1000000, false, &a->kv_heads, err);
    /* GPT-2's files name the keys n_* and mean 4h by a null or absent "n_inner" */
    json_t *inner = json_object_get(root, "n_inner");
    bool gpt2 = json_object_get(root, "n_embd") && !json_object_get(root, "intermediate_size");
    a->ffn = (inner && json_is_null(inner)) || (gpt2 && !inner) ? 4 * a->hidden : 0;
    if (rc == VP_OK && !a->ffn)
        rc = get_count(root, KEYS("intermediate_size", "n_inner"), 8000000, true, &a->ffn, err);
    if (rc == VP_OK && a->hidden % a->heads)
        rc = vp__fail(err, VP_EPARSE,
                      "key \"num_attention_heads\": %d heads do not divide "
                      "hidden_size %d",
                      a->heads, a->hidden);
    if (rc == VP_OK && a->heads % a->kv_heads)
        rc = vp__fail(err, VP_EPARSE,
                      "key \"num_key_value_heads\": %d KV heads do not divide "
                      "%d heads",
                      a->kv_heads, a->heads);
    return rc;
}

/* Settings that follow from the keys present: norm type, biases, positions, tying. */
static vp_status read_style(json_t *root, vp_arch *a, vp_error *err) {
    bool gelu = a->ffn_kind == VP_FFN_GELU;
    a->norm = gelu ? VP_NORM_LAYER : VP_NORM_RMS;
    if (json_object_get(root, "rms_norm_eps"))
        a->norm = VP_NORM_RMS;
    else if (json_object_get(root, "layer_norm_eps") || json_object_get(root, "layer_norm_epsilon"))
        a->norm = VP_NORM_LAYER;
    a->bias = gelu;
    a->learned_positions =
        gelu && !json_object_get(root, "rope_theta") && !json_object_get(root, "rope_scaling");
    a->tied = true; /* the transformers default */
    vp_status rc = get_bool(root, "attention_bias", &a->bias, err);
    if (rc == VP_OK)
        rc = get_bool(root, "tie_word_embeddings", &a->tied, err);
    return rc;
}

static void read_name(json_t *root, const char *fallback, vp_arch *a) {
    const char *name = NULL;
    json_t *v = first_of(root, KEYS("_name_or_path", "model_type"), &name);
    name = v && json_is_string(v) && json_string_length(v) ? json_string_value(v) : fallback;
    snprintf(a->name, sizeof a->name, "%s", name ? name : "config.json");
}

vp_status vp_arch_parse_hf(const char *text, size_t len, const char *name, vp_arch *out,
                           vp_error *err) {
    json_t *root;
    vp_status rc = load_object(text, len, "config.json", &root, err);
    if (rc != VP_OK)
        return rc;
    vp_arch a = {.dtype_bytes = 2, .impl = VP_IMPL_MEGATRON};
    read_name(root, name, &a);
    rc = read_dims(root, &a, err);
    if (rc == VP_OK)
        rc = read_activation(root, &a, err);
    if (rc == VP_OK)
        rc = read_dtype(root, &a, err);
    if (rc == VP_OK)
        rc = read_dropout(root, &a, err);
    if (rc == VP_OK)
        rc = read_style(root, &a, err);
    json_decref(root);
    if (rc == VP_OK && vp_arch_check(&a, err) != VP_OK)
        rc = as_parse_error(err);
    if (rc == VP_OK)
        *out = a;
    return rc;
}

/* ---- accelerators ------------------------------------------------------------------- */

#define GIB 1073741824.0

/* design/models.md §3: datasheet peaks, HBM, NVLink per direction and 200/400 Gb/s
 * InfiniBand per GPU; latencies typical of NCCL.
 *
 * Calibrated to the Zero Bubble paper's Table 6 (models.md §6: A100, zb-1.5b at mbs 6 and
 * zb-6.2b at mbs 3, sequence 1024, pure PP; per middle stage F / B / W / hop
 * 18.522 / 18.086 / 9.337 / 0.601 and 29.718 / 29.444 / 19.927 / 0.527 ms), and to
 * nothing else:
 * - p2p_bw 47.5 GB/s: both hops are one microbatch's activation (28.3 and 25.2 MB) at
 *   47.1 and 47.8 GB/s (NCCL send/receive, not the link's 300 GB/s).
 * - gemm_edge 128: not fitted; the tile of A100 matrix kernels (128 x 128 threadblocks,
 *   K pipelined 32 x 4 deep): about one tile per dimension goes to the partial tile, the
 *   last wave and the pipeline fill. The anchors allow 0 to about 190 (every pass within
 *   3%), so they cannot pin it down; 128 is the hardware's figure.
 * - gemm_efficiency 0.87, act_traffic_f 4.1, act_traffic_b 2.8: least squares over the
 *   six pass times with that edge (every one within 2.5%). W is matrix multiplies only
 *   (80% of peak in both models); F and B add norms, GELU, dropout and the softmax of the
 *   s x s attention matrix, which move about 4.1 and 2.8 bytes per byte F saves.
 * There is no H100/H200 anchor in models.md: those presets carry the A100 figures over
 * (tile, efficiency, traffic; the HBM bandwidth and peak are their own), so their
 * absolute times are less certain. */
#define KERNEL_MODEL                                                                               \
    .gemm_efficiency = 0.87, .gemm_edge = 128, .act_traffic_f = 4.1, .act_traffic_b = 2.8,         \
    .p2p_bw = 47.5e9
/* The host link and host memory (offload): what pinned copies reach each way, about 80%
 * of the link's rate after encoding (PCIe Gen4 x16 31.5 GB/s: 25; Gen5 x16 63 GB/s: 50),
 * and NVLink-C2C's 900 GB/s coherent link as 450 each way (not derated: no figure of
 * ours); host memory per GPU of the usual 8-GPU node (DGX A100 1 TiB, DGX H100 and H200
 * 2 TiB) or of the superchip (GH200: 480 GB LPDDR5X). */
#define GPU(NAME, PEAK, MEMORY, HBM, INTRA, INTER, HOST_BW, HOST_MEM)                              \
    {                                                                                              \
        .name = NAME, .peak_flops = PEAK, .memory_bytes = MEMORY, .hbm_bandwidth = HBM,            \
        .intra_bw = INTRA, .inter_bw = INTER, .intra_latency = 3e-6, .inter_latency = 10e-6,       \
        .gpus_per_node = 8, KERNEL_MODEL, .host_bw = HOST_BW, .host_memory_bytes = HOST_MEM        \
    }

static const vp_gpu gpu_presets[] = {
    GPU("a100-80gb", 312e12, 80 * GIB, 2.039e12, 300e9, 25e9, 25e9, 128 * GIB),
    GPU("h100-80gb", 989e12, 80 * GIB, 3.35e12, 450e9, 50e9, 50e9, 256 * GIB),
    GPU("h200-141gb", 989e12, 141e9, 4.8e12, 450e9, 50e9, 50e9, 256 * GIB),
    /* the H100's compute and links with 96 GB of HBM3 at 4 TB/s behind NVLink-C2C */
    GPU("gh200-96gb", 989e12, 96e9, 4.0e12, 450e9, 50e9, 450e9, 480e9),
};

#define N_GPUS ((int)(sizeof gpu_presets / sizeof gpu_presets[0]))

int vp_gpu_preset_count(void) {
    return N_GPUS;
}

const char *vp_gpu_preset_name(int i) {
    return i >= 0 && i < N_GPUS ? gpu_presets[i].name : NULL;
}

vp_status vp_gpu_preset(const char *name, vp_gpu *out, vp_error *err) {
    for (int i = 0; i < N_GPUS; i++)
        if (!strcmp(gpu_presets[i].name, name)) {
            *out = gpu_presets[i];
            return VP_OK;
        }
    return vp__fail(err, VP_EINVAL,
                    "unknown accelerator '%s' (known: a100-80gb, h100-80gb, "
                    "h200-141gb, gh200-96gb, or a JSON file)",
                    name);
}

/* One numeric key of the accelerator JSON: where it goes and its unit. */
typedef struct gpu_key {
    const char *key;
    size_t offset; /* of the double in vp_gpu */
    double unit, lo, hi;
} gpu_key;

static const gpu_key gpu_keys[] = {
    {"peak_tflops", offsetof(vp_gpu, peak_flops), 1e12, 1e-6, 1e9},
    {"memory_gib", offsetof(vp_gpu, memory_bytes), GIB, 1e-6, 1e9},
    {"hbm_tb_s", offsetof(vp_gpu, hbm_bandwidth), 1e12, 1e-6, 1e9},
    {"intra_node_gb_s", offsetof(vp_gpu, intra_bw), 1e9, 1e-6, 1e9},
    {"inter_node_gb_s", offsetof(vp_gpu, inter_bw), 1e9, 1e-6, 1e9},
    {"intra_node_latency_us", offsetof(vp_gpu, intra_latency), 1e-6, 0, 1e9},
    {"inter_node_latency_us", offsetof(vp_gpu, inter_latency), 1e-6, 0, 1e9},
    {"p2p_gb_s", offsetof(vp_gpu, p2p_bw), 1e9, 1e-6, 1e9},
    {"efficiency", offsetof(vp_gpu, efficiency), 1, 1e-6, 1},
    {"gemm_efficiency", offsetof(vp_gpu, gemm_efficiency), 1, 1e-6, 1},
    {"gemm_edge", offsetof(vp_gpu, gemm_edge), 1, 0, 1e9},
    {"act_traffic_f", offsetof(vp_gpu, act_traffic_f), 1, 0, 1e9},
    {"act_traffic_b", offsetof(vp_gpu, act_traffic_b), 1, 0, 1e9},
    {"host_gb_s", offsetof(vp_gpu, host_bw), 1e9, 0, 1e9},
    {"host_memory_gib", offsetof(vp_gpu, host_memory_bytes), GIB, 0, 1e9},
};

/* Keys a file without "base" may leave out: the speed model takes either "efficiency" or
 * the four kernel keys, "p2p_gb_s" falls back to the link's bandwidth, the host link is
 * unknown without its keys. */
static bool optional_key(const char *key) {
    return !strcmp(key, "p2p_gb_s") || !strcmp(key, "efficiency") || !strncmp(key, "gemm_", 5) ||
           !strncmp(key, "act_traffic_", 12) || !strncmp(key, "host_", 5);
}

#define N_GPU_KEYS (sizeof gpu_keys / sizeof gpu_keys[0])

/* Every key is known; the numeric ones are read in. */
static vp_status read_gpu_keys(json_t *root, bool required, vp_gpu *g, vp_error *err) {
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        bool known = !strcmp(key, "name") || !strcmp(key, "base") || !strcmp(key, "gpus_per_node");
        for (size_t i = 0; i < N_GPU_KEYS && !known; i++)
            known = !strcmp(key, gpu_keys[i].key);
        if (!known)
            return vp__fail(err, VP_EPARSE, "accelerator: unknown key \"%s\"", key);
    }
    for (size_t i = 0; i < N_GPU_KEYS; i++) {
        const gpu_key *k = &gpu_keys[i];
        double *field = (double *)((char *)g + k->offset), x = *field / k->unit;
        vp_status rc = get_number(root, (const char *const[]){k->key, NULL}, k->lo, k->hi,
                                  required && !optional_key(k->key), &x, err);
        if (rc != VP_OK)
            return rc;
        *field = x * k->unit;
    }
    return get_count(root, KEYS("gpus_per_node"), 1 << 20, required, &g->gpus_per_node, err);
}

/* The speed model a file chose: "efficiency" alone means one fraction of peak; without
 * it, a file without "base" needs the four kernel keys. */
static vp_status read_speed_model(json_t *root, bool based, vp_gpu *g, vp_error *err) {
    if (json_object_get(root, "efficiency"))
        return VP_OK;
    g->efficiency = 0;
    static const char *const kernel[] = {"gemm_efficiency", "gemm_edge", "act_traffic_f",
                                         "act_traffic_b"};
    for (size_t i = 0; i < 4 && !based; i++)
        if (!json_object_get(root, kernel[i]))
            return vp__fail(err, VP_EPARSE,
                            "missing key \"%s\" (or \"efficiency\": one fraction of peak for "
                            "every pass)",
                            kernel[i]);
    return VP_OK;
}

vp_status vp_gpu_parse_json(const char *text, size_t len, vp_gpu *out, vp_error *err) {
    json_t *root;
    vp_status rc = load_object(text, len, "accelerator", &root, err);
    if (rc != VP_OK)
        return rc;
    vp_gpu g = {.name = "custom"};
    const char *base, *name;
    rc = get_string(root, KEYS("base"), &base, err);
    if (rc == VP_OK && base && vp_gpu_preset(base, &g, err) != VP_OK)
        rc = as_parse_error(err);
    if (rc == VP_OK)
        rc = get_string(root, KEYS("name"), &name, err);
    if (rc == VP_OK && name)
        snprintf(g.name, sizeof g.name, "%s", name);
    if (rc == VP_OK)
        rc = read_gpu_keys(root, !base, &g, err);
    if (rc == VP_OK && !base && !json_object_get(root, "p2p_gb_s"))
        g.p2p_bw = g.intra_bw;
    if (rc == VP_OK)
        rc = read_speed_model(root, base != NULL, &g, err);
    json_decref(root);
    if (rc == VP_OK)
        *out = g;
    return rc;
}

vp_status vp_gpu_resolve(const char *name_or_path, vp_gpu *out, vp_error *err) {
    if (!is_path(name_or_path))
        return vp_gpu_preset(name_or_path, out, err);
    char *text = NULL;
    size_t len = 0;
    vp_status rc = vp_read_file(name_or_path, 1 << 20, &text, &len, err);
    if (rc == VP_OK)
        rc = vp_gpu_parse_json(text, len, out, err);
    free(text);
    return rc;
}

vp_status vp_arch_read_hf(const char *path, vp_arch *out, vp_error *err) {
    char *text = NULL;
    size_t len = 0;
    vp_status rc = vp_read_file(path, 1 << 20, &text, &len, err);
    if (rc == VP_OK)
        rc = vp_arch_parse_hf(text, len, path, out, err);
    free(text);
    return rc;
}

vp_status vp_arch_resolve(const char *name_or_path, vp_arch *out, vp_error *err) {
    if (!strncmp(name_or_path, "vpipe:", 6))
        return vp_arch_parse_vpipe(name_or_path, out, err);
    if (is_path(name_or_path))
        return vp_arch_read_hf(name_or_path, out, err);
    return vp_arch_preset(name_or_path, out, err);
}
