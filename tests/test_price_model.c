/* Real-model pricing, the descriptions: presets and their parameter counts, the Hugging
 * Face config.json reader, the accelerator presets and JSON, and every bad input the
 * setup check and the readers refuse (with the status and a message naming the cause). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "price_util.h"

/* Parameter counts of the presets against their published sizes (and, for GPT-3 and
 * Llama-3-8B, against the count written out by hand). */
static void test_preset_params(void **state) {
    (void)state;
    const struct {
        const char *name;
        double billions, tolerance;
    } sizes[] = {{"gpt2-124m", 0.124, 0.01},
                 {"llama2-7b", 6.74, 0.01},
                 {"llama2-13b", 13.0, 0.01},
                 {"llama2-70b", 69.0, 0.01},
                 {"llama3-8b", 8.03, 0.01},
                 {"llama3-70b", 70.6, 0.01},
                 {"llama3-405b", 405.8, 0.01},
                 {"gpt3-175b", 175.0, 0.01},
                 {"zb-1.5b", 1.5, 0.02},
                 {"zb-6.2b", 6.2, 0.02},
                 {"zb-14.6b", 14.6, 0.02},
                 {"zb-28.3b", 28.3, 0.02},
                 {"cm-9.6b", 9.6, 0.02},
                 {"cm-21b", 21, 0.02},
                 {"cm-38.5b", 38.5, 0.02},
                 {"cm-98.5b", 98.5, 0.02},
                 {"llama3.1-405b", 405.8, 0.01},
                 {"gpt3-5b", 5.0, 0.02},
                 {"gpt3-20b", 20.0, 0.02},
                 {"nemotron-22b", 22, 0.05},
                 /* the mixtures of experts' published totals (DeepSeek-V3 without its MTP module,
                    GPT-OSS's model card, Qwen3's and Mixtral's names) */
                 {"deepseek-v3", 671, 0.01},
                 {"qwen3-30b-a3b", 30.5, 0.01},
                 {"qwen3-235b-a22b", 235, 0.01},
                 {"gpt-oss-120b", 116.8, 0.01},
                 {"gpt-oss-20b", 20.9, 0.01},
                 {"mixtral-8x7b", 46.7, 0.01},
                 {"mixtral-8x22b", 141, 0.01}};
    int n = (int)(sizeof sizes / sizeof sizes[0]);
    assert_int_equal(vp_arch_preset_count(), n);
    for (int i = 0; i < n; i++) {
        vp_arch a = tp_preset(sizes[i].name);
        assert_string_equal(vp_arch_preset_name(i), sizes[i].name);
        assert_int_equal(vp_arch_check(&a, NULL), VP_OK);
        double b = vp_arch_params(&a) / 1e9;
        if (fabs(b / sizes[i].billions - 1) > sizes[i].tolerance)
            fail_msg("%s: %.3f B parameters, published %.3f B", sizes[i].name, b,
                     sizes[i].billions);
    }
    double h = 12288;
    vp_arch g = tp_preset("gpt3-175b");
    TU_NEAR(vp_arch_params(&g), 96 * (12 * h * h + 13 * h) + 50257 * h + 2048 * h + 2 * h);
    /* active parameters: DeepSeek-V3's 37B, Qwen3's A3B and A22B, Mixtral's 12.9B and
       39B (GPT-OSS's 5.1B and 3.6B count one of its embedding and head, vpipe both) */
    const struct {
        const char *name;
        double billions;
    } active[] = {{"deepseek-v3", 37.5},        {"qwen3-30b-a3b", 3.35},
                  {"qwen3-235b-a22b", 22.2},    {"mixtral-8x7b", 12.9},
                  {"mixtral-8x22b", 39.2},      {"gpt-oss-120b", 5.13 + 0.58},
                  {"gpt-oss-20b", 3.61 + 0.58}, {"llama3-8b", 8.03}};
    for (size_t i = 0; i < sizeof active / sizeof active[0]; i++) {
        vp_arch a = tp_preset(active[i].name);
        double b = vp_arch_active_params(&a) / 1e9;
        if (fabs(b / active[i].billions - 1) > 0.01)
            fail_msg("%s: %.3f B active, published %.3f B", active[i].name, b, active[i].billions);
    }
    vp_arch l = tp_preset("llama3-8b");
    double H = 4096, kv = 1024, f = 14336;
    TU_NEAR(vp_arch_params(&l),
            32 * (H * (H + 2 * kv) + H * H + 3 * H * f + 2 * H) + 2 * 128256 * H + H);
}

static const char llama3_8b_json[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false,\n"
    " \"attention_dropout\": 0.0, \"bos_token_id\": 128000, \"hidden_act\": \"silu\",\n"
    " \"hidden_size\": 4096, \"intermediate_size\": 14336, \"max_position_embeddings\": 8192,\n"
    " \"model_type\": \"llama\", \"num_attention_heads\": 32, \"num_hidden_layers\": 32,\n"
    " \"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-05, \"rope_scaling\": null,\n"
    " \"rope_theta\": 500000.0, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\",\n"
    " \"vocab_size\": 128256}";

static const char gpt2_json[] =
    "{\"activation_function\": \"gelu_new\", \"attn_pdrop\": 0.1, \"embd_pdrop\": 0.1,\n"
    " \"layer_norm_epsilon\": 1e-05, \"model_type\": \"gpt2\", \"n_ctx\": 1024, \"n_embd\": 768,\n"
    " \"n_head\": 12, \"n_layer\": 12, \"n_positions\": 1024, \"resid_pdrop\": 0.1,\n"
    " \"vocab_size\": 50257}";

static void assert_same_arch(const vp_arch *a, const vp_arch *b) {
    assert_int_equal(a->layers, b->layers);
    assert_int_equal(a->hidden, b->hidden);
    assert_int_equal(a->heads, b->heads);
    assert_int_equal(a->kv_heads, b->kv_heads);
    assert_int_equal(a->ffn, b->ffn);
    assert_int_equal(a->vocab, b->vocab);
    assert_int_equal(a->max_positions, b->max_positions);
    assert_int_equal(a->ffn_kind, b->ffn_kind);
    assert_int_equal(a->norm, b->norm);
    assert_int_equal(a->tied, b->tied);
    assert_int_equal(a->bias, b->bias);
    assert_int_equal(a->dropout, b->dropout);
    assert_int_equal(a->learned_positions, b->learned_positions);
    assert_int_equal(a->dtype_bytes, b->dtype_bytes);
    const int fields[][2] = {{a->head_dim, b->head_dim},
                             {a->q_lora, b->q_lora},
                             {a->kv_lora, b->kv_lora},
                             {a->qk_nope, b->qk_nope},
                             {a->qk_rope, b->qk_rope},
                             {a->v_head, b->v_head},
                             {a->window, b->window},
                             {a->window_period, b->window_period},
                             {a->window_layers, b->window_layers},
                             {a->experts, b->experts},
                             {a->top_k, b->top_k},
                             {a->expert_ffn, b->expert_ffn},
                             {a->shared_experts, b->shared_experts},
                             {a->dense_layers, b->dense_layers},
                             {a->expert_groups, b->expert_groups},
                             {a->group_top_k, b->group_top_k}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i][0] != fields[i][1])
            fail_msg("%s field %zu: %d, want %d", a->name, i, fields[i][0], fields[i][1]);
    TU_NEAR(vp_arch_params(a), vp_arch_params(b));
    TU_NEAR(vp_arch_active_params(a), vp_arch_active_params(b));
}

/* The real config.json files of Llama-3-8B and GPT-2 read into their presets; without
 * "tie_word_embeddings" each takes its type's default in transformers (Llama unties, GPT-2
 * ties). */
static void test_hf_reads_presets(void **state) {
    (void)state;
    vp_arch a, want = tp_preset("llama3-8b");
    vp_error err = {0};
    assert_int_equal(vp_arch_parse_hf(llama3_8b_json, sizeof llama3_8b_json - 1, "x", &a, &err),
                     VP_OK);
    assert_same_arch(&a, &want);
    assert_string_equal(a.name, "llama");
    char untold[sizeof llama3_8b_json];
    const char *tie = strstr(llama3_8b_json, "\"tie_word_embeddings\": false, ");
    assert_non_null(tie);
    snprintf(untold, sizeof untold, "%.*s%s", (int)(tie - llama3_8b_json), llama3_8b_json,
             tie + strlen("\"tie_word_embeddings\": false, "));
    assert_int_equal(vp_arch_parse_hf(untold, strlen(untold), "x", &a, &err), VP_OK);
    assert_false(a.tied);
    assert_same_arch(&a, &want);
    want = tp_preset("gpt2-124m");
    assert_int_equal(vp_arch_parse_hf(gpt2_json, sizeof gpt2_json - 1, NULL, &a, &err), VP_OK);
    assert_same_arch(&a, &want);
}

/* The mixtures of experts' and Nemotron's config.json files (fuzz/corpus/hf_config/, the
 * keys of their Hugging Face files) read into their presets (DeepSeek-V3's n_group and
 * topk_group its group-limited routing); a mixture of experts missing its keys (topk_group
 * beside n_group too), latent attention missing a head size and a window pattern vpipe
 * does not price are refused naming the key. */
static void test_hf_moe(void **state) {
    (void)state;
    const char *files[][2] = {{"deepseek_v3", "deepseek-v3"},
                              {"qwen3_30b_a3b", "qwen3-30b-a3b"},
                              {"mixtral_8x7b", "mixtral-8x7b"},
                              {"gpt_oss_120b", "gpt-oss-120b"},
                              {"nemotron_22b", "nemotron-22b"}};
    char path[1024];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        vp_arch a, want = tp_preset(files[i][1]);
        vp_error err = {0};
        snprintf(path, sizeof path, "%s/fuzz/corpus/hf_config/%s.json", VP_SOURCE_DIR, files[i][0]);
        if (vp_arch_read_hf(path, &a, &err) != VP_OK)
            fail_msg("%s: %s", path, err.message);
        assert_same_arch(&a, &want);
    }
    const char *bad[][2] = {{"moe_missing_experts", "num_local_experts"},
                            {"moe_missing_topk", "num_experts_per_tok"},
                            {"moe_groups_missing_topk", "topk_group"},
                            {"mla_missing_rope", "qk_rope_head_dim"},
                            {"window_pattern", "layer_types"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vp_arch a;
        vp_error err = {0};
        snprintf(path, sizeof path, "%s/fuzz/corpus/hf_config/%s.json", VP_SOURCE_DIR, bad[i][0]);
        vp_status rc = vp_arch_read_hf(path, &a, &err);
        if (rc != VP_EPARSE || !strstr(err.message, bad[i][1]))
            fail_msg("%s: status %d, message '%s' (wanted '%s')", bad[i][0], rc, err.message,
                     bad[i][1]);
    }
}

/* Malformed or incomplete files: VP_EPARSE naming the key (or the position). */
static void test_hf_errors(void **state) {
    (void)state;
    const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"hidden_size\": 64,", "config.json"},
        {"[1, 2]", "JSON object"},
        {"{\"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"vocab_size\": 10, "
         "\"max_position_embeddings\": 8, \"intermediate_size\": 8, \"hidden_act\": \"silu\"}",
         "hidden_size"},
        {"{\"hidden_size\": \"64\", \"num_hidden_layers\": 2}", "hidden_size"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 0}", "num_hidden_layers"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 3, "
         "\"vocab_size\": 10, \"max_position_embeddings\": 8, \"intermediate_size\": 8}",
         "num_attention_heads"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"num_key_value_heads\": 3, \"vocab_size\": 10, \"max_position_embeddings\": 8, "
         "\"intermediate_size\": 8}",
         "num_key_value_heads"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"vocab_size\": 10, \"max_position_embeddings\": 8, \"intermediate_size\": 8}",
         "hidden_act"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"vocab_size\": 10, \"max_position_embeddings\": 8, \"intermediate_size\": 8, "
         "\"hidden_act\": \"tanh\"}",
         "tanh"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"vocab_size\": 10, \"max_position_embeddings\": 8, \"intermediate_size\": 8, "
         "\"hidden_act\": \"silu\", \"torch_dtype\": \"int8\"}",
         "torch_dtype"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"vocab_size\": 10, \"max_position_embeddings\": 8, \"intermediate_size\": 8, "
         "\"hidden_act\": \"silu\", \"tie_word_embeddings\": 1}",
         "tie_word_embeddings"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"vocab_size\": 10, \"max_position_embeddings\": 8, \"intermediate_size\": 8, "
         "\"hidden_act\": \"silu\", \"attention_dropout\": 2}",
         "attention_dropout"},
        {"{\"hidden_size\": 64, \"hidden_size\": 64}", "duplicate"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vp_arch a;
        vp_error err = {0};
        vp_status rc = vp_arch_parse_hf(bad[i].text, strlen(bad[i].text), "f", &a, &err);
        if (rc != VP_EPARSE || !strstr(err.message, bad[i].needle))
            fail_msg("case %zu: status %d, message '%s' (wanted '%s')", i, rc, err.message,
                     bad[i].needle);
    }
    vp_arch a;
    vp_error err = {0};
    assert_int_equal(vp_arch_parse_hf("{\"hidden_size\": 64,\n  x", 23, "f", &a, &err), VP_EPARSE);
    assert_int_equal(err.line, 2);
    assert_int_equal(vp_arch_read_hf("/nonexistent/config.json", &a, &err), VP_EIO);
    assert_int_equal(vp_arch_resolve("no-such-model", &a, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "llama3-70b"));
}

/* Accelerator presets, a JSON file based on one, a complete one, and refusals. */
static void test_gpu(void **state) {
    (void)state;
    vp_gpu g, h;
    vp_error err = {0};
    assert_int_equal(vp_gpu_preset_count(), 10);
    /* datasheet figures of the presets issue 25's runs need, and every preset read back
       from the JSON it writes to the same figures */
    const struct {
        const char *name;
        double tflops, memory, hbm;
        int node;
    } sheet[] = {{"b200", 2250, 180e9, 8e12, 8},
                 {"gb200", 2500, 186e9, 8e12, 72},
                 {"h800-80gb", 989, 80 * 1073741824.0, 3.35e12, 8},
                 {"mi300x", 1307.4, 192e9, 5.3e12, 8},
                 {"mi325x", 1307.4, 256e9, 6e12, 8},
                 {"mi355x", 2500, 288e9, 8e12, 8}};
    for (size_t i = 0; i < sizeof sheet / sizeof sheet[0]; i++) {
        assert_int_equal(vp_gpu_preset(sheet[i].name, &g, &err), VP_OK);
        TU_NEAR(g.peak_flops, sheet[i].tflops * 1e12);
        TU_NEAR(g.memory_bytes, sheet[i].memory);
        TU_NEAR(g.hbm_bandwidth, sheet[i].hbm);
        assert_int_equal(g.gpus_per_node, sheet[i].node);
    }
    for (int i = 0; i < vp_gpu_preset_count(); i++) {
        assert_int_equal(vp_gpu_preset(vp_gpu_preset_name(i), &g, &err), VP_OK);
        char *text = vp_gpu_json(&g), *again = NULL;
        assert_int_equal(vp_gpu_parse_json(text, strlen(text), &h, &err), VP_OK);
        again = vp_gpu_json(&h);
        assert_string_equal(text, again);
        free(text);
        free(again);
    }
    assert_int_equal(vp_gpu_preset("h100-80gb", &g, &err), VP_OK);
    TU_NEAR(g.peak_flops, 989e12);
    TU_NEAR(g.memory_bytes, 80.0 * (1 << 30));
    TU_NEAR(g.host_bw, 50e9); /* PCIe Gen5 x16 */
    assert_int_equal(vp_gpu_preset("gh200-96gb", &h, &err), VP_OK);
    TU_NEAR(h.host_bw, 450e9); /* NVLink-C2C, each way */
    const char *based = "{\"base\": \"h100-80gb\", \"name\": \"slow\", \"efficiency\": 0.25}";
    assert_int_equal(vp_gpu_parse_json(based, strlen(based), &h, &err), VP_OK);
    assert_string_equal(h.name, "slow");
    TU_NEAR(h.efficiency, 0.25);
    TU_NEAR(h.inter_bw, g.inter_bw);
    const char *full = "{\"peak_tflops\": 100, \"memory_gib\": 16, \"hbm_tb_s\": 1, "
                       "\"intra_node_gb_s\": 50, \"inter_node_gb_s\": 10, "
                       "\"intra_node_latency_us\": 2, \"inter_node_latency_us\": 8, "
                       "\"gpus_per_node\": 4, \"efficiency\": 0.4}";
    assert_int_equal(vp_gpu_parse_json(full, strlen(full), &h, &err), VP_OK);
    TU_NEAR(h.peak_flops, 100e12);
    TU_NEAR(h.memory_bytes, 16.0 * (1 << 30));
    TU_NEAR(h.inter_latency, 8e-6);
    assert_int_equal(h.gpus_per_node, 4);
    TU_NEAR(h.efficiency, 0.4); /* a file of the older form: one fraction of peak */
    TU_NEAR(h.host_bw, 0);      /* no host link given: unknown */
    TU_NEAR(h.p2p_bw, 50e9);    /* sends at the link's bandwidth, as it always meant */
    assert_true(g.efficiency == 0 && g.gemm_efficiency > 0); /* presets: the kernel model */
    const char *kernel = "{\"base\": \"a100-80gb\", \"gemm_edge\": 64, \"p2p_gb_s\": 80}";
    assert_int_equal(vp_gpu_parse_json(kernel, strlen(kernel), &h, &err), VP_OK);
    TU_NEAR(h.gemm_edge, 64);
    TU_NEAR(h.p2p_bw, 80e9);
    assert_true(h.efficiency == 0);
    const struct {
        const char *text, *needle;
    } bad[] = {{"{\"peak_tflops\": 100}", "memory_gib"},
               {"{\"base\": \"h100-80gb\", \"efficency\": 0.5}", "efficency"},
               {"{\"base\": \"tpu\"}", "tpu"},
               {"{\"base\": \"h100-80gb\", \"efficiency\": 1.5}", "efficiency"},
               {"{\"base\": \"h100-80gb\", \"gpus_per_node\": 0}", "gpus_per_node"},
               {"{\"base\": 3}", "base"},
               {"{\"base\": \"h100-80gb\", \"gemm_edge\": -1}", "gemm_edge"},
               {"{\"peak_tflops\": 100, \"memory_gib\": 16, \"hbm_tb_s\": 1, "
                "\"intra_node_gb_s\": 50, \"inter_node_gb_s\": 10, \"intra_node_latency_us\": 2, "
                "\"inter_node_latency_us\": 8, \"gpus_per_node\": 4, \"gemm_efficiency\": 0.8}",
                "gemm_edge"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vp_status rc = vp_gpu_parse_json(bad[i].text, strlen(bad[i].text), &h, &err);
        if (rc != VP_EPARSE || !strstr(err.message, bad[i].needle))
            fail_msg("case %zu: status %d, message '%s'", i, rc, err.message);
    }
    assert_int_equal(vp_gpu_resolve("tpu-v5", &h, &err), VP_EINVAL);
}

/* vpipe's own model by name: "vpipe:L,W,H,S" equals vp_arch_vpipe; malformed forms and
 * sizes are refused naming the form. */
static void test_vpipe_names(void **state) {
    (void)state;
    vp_arch a, want = vp_arch_vpipe(8, 128, 4, 64);
    vp_error err = {0};
    assert_int_equal(vp_arch_resolve("vpipe:8,128,4,64", &a, &err), VP_OK);
    assert_string_equal(a.name, "vpipe:8,128,4,64");
    snprintf(want.name, sizeof want.name, "%s", a.name);
    assert_memory_equal(&a, &want, sizeof a);
    const char *bad[] = {"vpipe:8,128,4",        "vpipe:8,128,4,64,1",
                         "vpipe:8,128,4,x",      "vpipe:8,128,,64",
                         "vpipe:-8,128,4,64",    "vpipe:0,128,4,64",
                         "vpipe:8,128,4,64 ",    "vpipe:",
                         "vpipe:8,1234567,4,64", "vpipe:8,99999999999999999999,4,64"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = (vp_error){0};
        if (vp_arch_resolve(bad[i], &a, &err) != VP_EINVAL ||
            !strstr(err.message, "vpipe:LAYERS,WIDTH,HEADS,SEQ"))
            fail_msg("'%s': '%s'", bad[i], err.message);
    }
    assert_int_equal(vp_arch_parse_vpipe("vpipe:8,130,4,64", &a, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "not divisible by heads 4"));
    assert_int_equal(vp_arch_parse_vpipe("llama3-8b", &a, &err), VP_EINVAL);
}

/* The JSON descriptions: a model's dimensions and parts (the sums of its saved tensors
 * are its M_B and M_W), and an accelerator that reads back as the same accelerator. */
static void test_descriptions(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-70b");
    vp_workload w = vp_workload_default(&a);
    w.tp = 8;
    w.sp = w.flash = true;
    char *text = NULL;
    vp_error err = {0};
    assert_int_equal(vp_arch_json(&a, NULL, &text, &err), VP_OK);
    json_t *o = json_loads(text, 0, NULL);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "kv_heads")), 8);
    TU_NEAR(json_real_value(json_object_get(o, "params")), vp_arch_params(&a));
    assert_null(json_object_get(o, "parts"));
    json_decref(o);
    free(text);
    assert_int_equal(vp_arch_json(&a, &w, &text, &err), VP_OK);
    o = json_loads(text, 0, NULL);
    free(text);
    const char *parts[] = {"layer", "embedding", "head"};
    for (int k = 0; k < 3; k++) {
        vp_price_facts f;
        assert_int_equal(vp_price_part_facts(&a, &w, (vp_price_part)k, &f, &err), VP_OK);
        json_t *part = json_object_get(json_object_get(o, "parts"), parts[k]);
        double mb = 0, mw = 0;
        json_t *saved = json_object_get(part, "saved"), *t;
        size_t i;
        json_array_foreach(saved, i, t) {
            const char *keep = json_string_value(json_object_get(t, "keep"));
            double bytes = json_real_value(json_object_get(t, "bytes"));
            mb += strcmp(keep, "B-W") ? bytes : 0;
            mw += strcmp(keep, "F-B") ? bytes : 0;
        }
        TU_NEAR(mb, f.act_bytes);
        TU_NEAR(mw, f.keep_bytes);
        TU_NEAR(json_real_value(json_object_get(part, "flops_b")), f.flops_b);
    }
    json_decref(o);
    w.tp = 3;
    assert_int_equal(vp_arch_json(&a, &w, &text, &err), VP_EINVAL);
    assert_null(text);
    for (int i = 0; i < vp_gpu_preset_count(); i++) {
        vp_gpu g = tp_gpu(vp_gpu_preset_name(i)), back;
        text = vp_gpu_json(&g);
        assert_non_null(text);
        assert_int_equal(vp_gpu_parse_json(text, strlen(text), &back, &err), VP_OK);
        free(text);
        assert_string_equal(back.name, g.name);
        TU_NEAR(back.peak_flops, g.peak_flops);
        TU_NEAR(back.memory_bytes, g.memory_bytes);
        TU_NEAR(back.inter_latency, g.inter_latency);
        assert_int_equal(back.gpus_per_node, g.gpus_per_node);
    }
}

static vp_status price_1f1b(const vp_arch *a, const vp_workload *t, int p, vp_error *err) {
    vp_gpu g;
    vp_gpu_preset("h100-80gb", &g, NULL);
    vp_price_setup su = {.arch = a, .gpu = &g, .work = t};
    vp_spec spec = vp_spec_make(p, 2 * p);
    vp_price_result *r = NULL;
    vp_status rc = vp_price_family(&su, "1f1b", &spec, &r, NULL, err);
    vp_price_result_free(r);
    return rc;
}

/* The setup check: heads not divisible by TP, a sequence longer than the positions,
 * layers that cannot fill the stages, a bad explicit split, vpipe's model with TP. */
static void test_bad_setups(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_workload t = vp_workload_default(&a);
    vp_error err = {0};
    assert_int_equal(price_1f1b(&a, &t, 4, &err), VP_OK);
    t.tp = 3;
    assert_int_equal(price_1f1b(&a, &t, 4, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "divisible by TP 3"));
    t = vp_workload_default(&a);
    t.seq = 8193;
    assert_int_equal(price_1f1b(&a, &t, 4, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "8192 positions"));
    vp_arch small = tp_preset("gpt2-124m");
    t = vp_workload_default(&small);
    assert_int_equal(price_1f1b(&small, &t, 16, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "12 layers cannot fill 16 stages"));
    assert_int_equal(price_1f1b(&small, &t, 14, &err), VP_OK); /* 12 middle stages, empty ends */
    vp_gpu g;
    vp_gpu_preset("a100-80gb", &g, NULL);
    vp_schedule *s = tu_build("1f1b", 4, 8, 0, vp_costs_default());
    const int splits[][4] = {{3, 3, 3, 2}, {6, 0, 3, 3}, {3, 3, 3, 3}};
    const char *needles[] = {"add up to 11", "at least one", "4 values"};
    for (int i = 0; i < 3; i++) {
        vp_price_setup su = {.arch = &small,
                             .gpu = &g,
                             .work = &t,
                             .layers_per_stage = splits[i],
                             .n_layers_per_stage = i == 2 ? 3 : 4};
        vp_price_result *r = NULL;
        assert_int_equal(vp_price_schedule(&su, s, &r, &err), VP_EINVAL);
        assert_null(r);
        if (!strstr(err.message, needles[i]) && !(i == 2 && strstr(err.message, "3 values")))
            fail_msg("split %d: '%s'", i, err.message);
    }
    vp_schedule_free(s);
    vp_arch own = vp_arch_vpipe(4, 64, 4, 32);
    t = vp_workload_default(&own);
    t.tp = 2;
    assert_int_equal(price_1f1b(&own, &t, 2, &err), VP_EINVAL);
    t = vp_workload_default(&own);
    t.flash = true;
    assert_int_equal(price_1f1b(&own, &t, 2, &err), VP_EINVAL);
    vp_recompute rc;
    assert_int_equal(vp_recompute_parse("selective", &rc, NULL), VP_OK);
    assert_int_equal(rc, VP_RECOMPUTE_SELECTIVE);
    assert_int_equal(vp_recompute_parse("some", &rc, &err), VP_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preset_params), cmocka_unit_test(test_hf_reads_presets),
        cmocka_unit_test(test_hf_moe),        cmocka_unit_test(test_hf_errors),
        cmocka_unit_test(test_gpu),           cmocka_unit_test(test_bad_setups),
        cmocka_unit_test(test_vpipe_names),   cmocka_unit_test(test_descriptions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
