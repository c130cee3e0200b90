/* Readers: a Hugging Face config.json into a vp_arch (every rejection is VP_EPARSE naming
 * the key), and the JSON helpers the accelerator reader (gpus.c) shares. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "price/price_internal.h"

/* ---- JSON helpers ------------------------------------------------------------------ */

vp_status vp__json_object(const char *text, size_t len, const char *what, json_t **out,
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
vp_status vp__json_number(json_t *obj, const char *const *names, double lo, double hi,
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
vp_status vp__json_count(json_t *obj, const char *const *names, int hi, bool required, int *out,
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
vp_status vp__json_string(json_t *obj, const char *const *names, const char **out, vp_error *err) {
    const char *key = names[0];
    json_t *v = first_of(obj, names, &key);
    *out = NULL;
    if (v && !json_is_string(v))
        return vp__fail(err, VP_EPARSE, "key \"%s\" must be a string", key);
    *out = v ? json_string_value(v) : NULL;
    return VP_OK;
}

/* Turns the error a check filled into a parse error (same message). */
vp_status vp__as_parse_error(vp_error *err) {
    if (err)
        err->status = VP_EPARSE;
    return VP_EPARSE;
}

/* Whether text names a file rather than a preset: it has a '/' or ends in ".json". */
bool vp__is_path(const char *text) {
    size_t n = strlen(text);
    return strchr(text, '/') || (n >= 5 && !strcmp(text + n - 5, ".json"));
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- Hugging Face config.json --------------------------------------------------------- */

/* hidden_act: silu/swish is Llama's gated MLP (three matrices); gelu variants and relu are
 * a plain two-matrix MLP. */
static vp_status read_activation(json_t *root, vp_arch *a, vp_error *err) {
    const char *act;
    vp_status rc = vp__json_string(root, KEYS("hidden_act", "activation_function"), &act, err);
    if (rc != VP_OK)
        return rc;
    if (!act)
        return vp__fail(err, VP_EPARSE, "missing key \"hidden_act\"");
    if (!strcmp(act, "silu") || !strcmp(act, "swish"))
        a->ffn_kind = VP_FFN_SWIGLU;
    else if (!strncmp(act, "gelu", 4) || !strcmp(act, "relu"))
        a->ffn_kind = VP_FFN_GELU;
    else if (!strcmp(act, "relu2"))
        a->ffn_kind = VP_FFN_RELU2;
    else
        return vp__fail(err, VP_EPARSE,
                        "key \"hidden_act\": unsupported activation \"%s\" "
                        "(silu, swish, gelu*, relu, relu2)",
                        act);
    return VP_OK;
}

static vp_status read_dtype(json_t *root, vp_arch *a, vp_error *err) {
    const char *dtype;
    vp_status rc = vp__json_string(root, KEYS("torch_dtype", "dtype"), &dtype, err);
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
            vp__json_number(root, (const char *const[]){keys[i], NULL}, 0, 1, false, &prob, err);
        if (rc != VP_OK)
            return rc;
        a->dropout = a->dropout || prob > 0;
    }
    return VP_OK;
}

static vp_status read_dims(json_t *root, vp_arch *a, vp_error *err) {
    vp_status rc =
        vp__json_count(root, KEYS("hidden_size", "n_embd"), 1000000, true, &a->hidden, err);
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("num_hidden_layers", "n_layer"), 100000, true, &a->layers,
                            err);
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("num_attention_heads", "n_head"), 1000000, true, &a->heads,
                            err);
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("vocab_size"), 100000000, true, &a->vocab, err);
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("max_position_embeddings", "n_positions"), 1 << 30, true,
                            &a->max_positions, err);
    a->kv_heads = a->heads;
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("num_key_value_heads"), 1000000, false, &a->kv_heads, err);
    /* GPT-2's files name the keys n_* and mean 4h by a null or absent "n_inner" */
    json_t *inner = json_object_get(root, "n_inner");
    bool gpt2 = json_object_get(root, "n_embd") && !json_object_get(root, "intermediate_size");
    a->ffn = (inner && json_is_null(inner)) || (gpt2 && !inner) ? 4 * a->hidden : 0;
    if (rc == VP_OK && !a->ffn)
        rc =
            vp__json_count(root, KEYS("intermediate_size", "n_inner"), 8000000, true, &a->ffn, err);
    if (rc == VP_OK && a->hidden % a->heads && !json_object_get(root, "head_dim") &&
        !json_object_get(root, "kv_lora_rank"))
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

/* Whether the file's "model_type" is one of types (NULL-ended). */
static bool type_in(json_t *root, const char *const *types) {
    json_t *v = json_object_get(root, "model_type");
    for (; v && json_is_string(v) && *types; types++)
        if (!strcmp(json_string_value(v), *types))
            return true;
    return false;
}

/* Settings that follow from the keys present: norm type, biases, positions, tying. */
static vp_status read_style(json_t *root, vp_arch *a, vp_error *err) {
    bool gelu = a->ffn_kind == VP_FFN_GELU;
    a->norm = gelu || a->ffn_kind == VP_FFN_RELU2 ? VP_NORM_LAYER : VP_NORM_RMS;
    if (json_object_get(root, "rms_norm_eps"))
        a->norm = VP_NORM_RMS;
    else if (json_object_get(root, "layer_norm_eps") || json_object_get(root, "layer_norm_epsilon"))
        a->norm = VP_NORM_LAYER;
    a->bias = gelu;
    a->learned_positions =
        gelu && !json_object_get(root, "rope_theta") && !json_object_get(root, "rope_scaling");
    /* without the key, the model type's default in transformers: these untie, the base
       configuration (GPT-2's, Gemma's) ties */
    static const char *const untied[] = {
        "llama",       "mistral",     "mixtral", "qwen2",    "qwen2_moe", "qwen3", "qwen3_moe",
        "deepseek_v2", "deepseek_v3", "gpt_oss", "nemotron", "olmoe",     "phi3",  NULL};
    a->tied = !type_in(root, untied);
    vp_status rc = get_bool(root, "attention_bias", &a->bias, err);
    if (rc == VP_OK)
        rc = get_bool(root, "tie_word_embeddings", &a->tied, err);
    return rc;
}

/* An optional whole number in [0, hi] under one of names (absent or null: *out unchanged). */
static vp_status get_count0(json_t *root, const char *const *names, int hi, int *out,
                            vp_error *err) {
    const char *key = names[0];
    json_t *v = first_of(root, names, &key);
    if (!v || json_is_null(v))
        return VP_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > hi)
        return vp__fail(err, VP_EPARSE, "key \"%s\" must be an integer in [0, %d]", key, hi);
    *out = (int)json_integer_value(v);
    return VP_OK;
}

/* The model types whose files describe a mixture of experts. */
static bool moe_type(json_t *root) {
    static const char *const types[] = {"mixtral",     "qwen3_moe", "qwen2_moe", "deepseek_v3",
                                        "deepseek_v2", "gpt_oss",   "olmoe",     NULL};
    return type_in(root, types);
}

/* Which first layers are dense: DeepSeek's first_k_dense_replace, or Qwen's mlp_only_layers
 * when they are the first ones (other patterns are refused). */
static vp_status read_dense_layers(json_t *root, vp_arch *a, vp_error *err) {
    vp_status rc =
        get_count0(root, KEYS("first_k_dense_replace"), a->layers, &a->dense_layers, err);
    json_t *list = json_object_get(root, "mlp_only_layers");
    size_t n = json_is_array(list) ? json_array_size(list) : 0;
    if (rc == VP_OK && list && !json_is_array(list))
        rc = vp__fail(err, VP_EPARSE, "key \"mlp_only_layers\" must be an array of layers");
    for (size_t i = 0; i < n && rc == VP_OK; i++) {
        json_t *l = json_array_get(list, i);
        if (!json_is_integer(l) || json_integer_value(l) != (json_int_t)i)
            rc = vp__fail(err, VP_EPARSE,
                          "key \"mlp_only_layers\": vpipe prices dense layers before the "
                          "experts' only (0, 1, ...)");
    }
    if (rc == VP_OK && n)
        a->dense_layers = (int)n;
    int step = 1, freq = 1;
    if (rc == VP_OK)
        rc = get_count0(root, KEYS("decoder_sparse_step"), 1 << 20, &step, err);
    if (rc == VP_OK)
        rc = get_count0(root, KEYS("moe_layer_freq"), 1 << 20, &freq, err);
    if (rc == VP_OK && (step > 1 || freq > 1))
        rc = vp__fail(err, VP_EPARSE,
                      "keys \"decoder_sparse_step\"/\"moe_layer_freq\": vpipe prices experts on "
                      "every layer after the dense ones");
    return rc;
}

/* Group-limited routing (DeepSeek-V3's n_group and topk_group): one group is no limit. */
static vp_status read_groups(json_t *root, vp_arch *a, vp_error *err) {
    int groups = 0;
    vp_status rc = get_count0(root, KEYS("n_group"), 1 << 16, &groups, err);
    if (rc != VP_OK || groups <= 1)
        return rc;
    a->expert_groups = groups;
    return vp__json_count(root, KEYS("topk_group"), groups, true, &a->group_top_k, err);
}

/* The experts: how many, how many per token, their width (moe_intermediate_size, or the
 * MLP's own for Mixtral and GPT-OSS), shared ones, dense first layers, capacity factor. A
 * mixture-of-experts model type needs its keys. */
static vp_status read_experts(json_t *root, vp_arch *a, vp_error *err) {
    vp_status rc = get_count0(root, KEYS("num_local_experts", "num_experts", "n_routed_experts"),
                              1 << 16, &a->experts, err);
    if (rc != VP_OK || a->experts == 0)
        return rc != VP_OK || !moe_type(root)
                   ? rc
                   : vp__fail(err, VP_EPARSE,
                              "missing key \"num_local_experts\" (or num_experts, "
                              "n_routed_experts): the model type is a mixture of experts");
    a->expert_ffn = a->ffn;
    rc = vp__json_count(root,
                        KEYS("num_experts_per_tok", "experts_per_token", "num_experts_per_token"),
                        a->experts, true, &a->top_k, err);
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("moe_intermediate_size"), 8000000, false, &a->expert_ffn,
                            err);
    if (rc == VP_OK)
        rc = get_count0(root, KEYS("n_shared_experts"), 1 << 10, &a->shared_experts, err);
    int shared_width = 0;
    if (rc == VP_OK)
        rc = get_count0(root, KEYS("shared_expert_intermediate_size"), 8000000, &shared_width, err);
    if (rc == VP_OK && shared_width && shared_width % a->expert_ffn)
        rc = vp__fail(err, VP_EPARSE,
                      "key \"shared_expert_intermediate_size\": %d is not a multiple of the "
                      "experts' %d",
                      shared_width, a->expert_ffn);
    if (rc == VP_OK && shared_width)
        a->shared_experts = shared_width / a->expert_ffn;
    if (rc == VP_OK)
        rc = vp__json_number(root, KEYS("capacity_factor"), 0, 1000, false, &a->capacity, err);
    if (rc == VP_OK)
        rc = read_groups(root, a, err);
    return rc == VP_OK ? read_dense_layers(root, a, err) : rc;
}

/* DeepSeek's latent attention (kv_lora_rank present): its ranks and head dimensions. */
static vp_status read_mla(json_t *root, vp_arch *a, vp_error *err) {
    vp_status rc = get_count0(root, KEYS("kv_lora_rank"), 1000000, &a->kv_lora, err);
    if (rc != VP_OK || a->kv_lora == 0)
        return rc;
    rc = get_count0(root, KEYS("q_lora_rank"), 1000000, &a->q_lora, err);
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("qk_nope_head_dim"), 1000000, true, &a->qk_nope, err);
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("qk_rope_head_dim"), 1000000, true, &a->qk_rope, err);
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("v_head_dim"), 1000000, true, &a->v_head, err);
    return rc;
}

/* Which layers of layer_types ("sliding_attention" / "full_attention") are windowed, as a
 * period whose first layers are: the shortest period the list repeats. */
static vp_status read_layer_types(json_t *list, vp_arch *a, vp_error *err) {
    size_t n = json_array_size(list);
    if (n != (size_t)a->layers)
        return vp__fail(err, VP_EPARSE, "key \"layer_types\": %zu entries for %d layers", n,
                        a->layers);
    for (size_t period = 1; period <= n; period++) {
        bool repeats = true, prefix = true;
        int windowed = 0;
        for (size_t l = 0; l < n && repeats; l++) {
            const char *t = json_string_value(json_array_get(list, l)), *u = NULL;
            if (!t || (strcmp(t, "sliding_attention") && strcmp(t, "full_attention")))
                return vp__fail(err, VP_EPARSE,
                                "key \"layer_types\": entry %zu must be \"sliding_attention\" "
                                "or \"full_attention\"",
                                l);
            u = json_string_value(json_array_get(list, l % period));
            repeats = !strcmp(t, u);
            bool sliding = !strcmp(t, "sliding_attention");
            if (l < period) {
                prefix = prefix && (sliding ? windowed == (int)l : true);
                windowed += sliding;
            }
        }
        if (repeats) {
            if (!prefix)
                break;
            a->window_period = (int)period;
            a->window_layers = windowed;
            return VP_OK;
        }
    }
    return vp__fail(err, VP_EPARSE,
                    "key \"layer_types\": vpipe prices windows on the first layers of a "
                    "repeating period only");
}

/* Sliding windows: sliding_window tokens on the layer_types' sliding layers, or on every
 * layer (Mistral's files) unless use_sliding_window is false. */
static vp_status read_window(json_t *root, vp_arch *a, vp_error *err) {
    bool use = true;
    vp_status rc = get_bool(root, "use_sliding_window", &use, err);
    if (rc == VP_OK)
        rc = get_count0(root, KEYS("sliding_window"), 1 << 30, &a->window, err);
    json_t *types = json_object_get(root, "layer_types");
    if (rc != VP_OK || !use || a->window == 0) {
        a->window = rc == VP_OK && use ? a->window : 0;
        return rc;
    }
    if (types && !json_is_array(types))
        return vp__fail(err, VP_EPARSE, "key \"layer_types\" must be an array");
    a->window_period = a->window_layers = 1;
    return types ? read_layer_types(types, a, err) : VP_OK;
}

/* head_dim when it is not hidden / heads (Qwen3, GPT-OSS). */
static vp_status read_head_dim(json_t *root, vp_arch *a, vp_error *err) {
    vp_status rc = get_count0(root, KEYS("head_dim"), 1000000, &a->head_dim, err);
    if (rc == VP_OK && a->head_dim && (long)a->head_dim * a->heads == a->hidden)
        a->head_dim = 0;
    return rc;
}

static vp_status read_variants(json_t *root, vp_arch *a, vp_error *err) {
    vp_status rc = read_head_dim(root, a, err);
    if (rc == VP_OK)
        rc = read_mla(root, a, err);
    if (rc == VP_OK)
        rc = read_window(root, a, err);
    if (rc == VP_OK)
        rc = read_experts(root, a, err);
    return rc;
}

static void read_name(json_t *root, const char *fallback, vp_arch *a) {
    const char *name = NULL;
    json_t *v = first_of(root, KEYS("_name_or_path", "model_type"), &name);
    name = v && json_is_string(v) && json_string_length(v) ? json_string_value(v) : fallback;
    /* printed in every report: no terminal control gets through */
    vp__text_escape(a->name, sizeof a->name, name ? name : "config.json");
}

vp_status vp_arch_parse_hf(const char *text, size_t len, const char *name, vp_arch *out,
                           vp_error *err) {
    json_t *root;
    vp_status rc = vp__json_object(text, len, "config.json", &root, err);
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
    if (rc == VP_OK)
        rc = read_variants(root, &a, err);
    json_decref(root);
    if (rc == VP_OK && vp_arch_check(&a, err) != VP_OK)
        rc = vp__as_parse_error(err);
    if (rc == VP_OK)
        *out = a;
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
    if (vp__is_path(name_or_path))
        return vp_arch_read_hf(name_or_path, out, err);
    return vp_arch_preset(name_or_path, out, err);
}
