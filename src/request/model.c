/* model list | show NAME: the models and accelerators pricing knows, and one model's
 * dimensions, parameters, saved bytes and FLOPs per pass (door.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/door.h"

#define GIB 1073741824.0

static vp_status list_json(vp__run *run, vp_error *err) {
    json_t *root = json_object(), *models = json_array(), *gpus = json_array();
    json_object_set_new(root, "models", models);
    json_object_set_new(root, "gpus", gpus);
    bool bad = false;
    for (int i = 0; i < vp_arch_preset_count(); i++) {
        vp_arch arch;
        char *text = NULL;
        json_t *one = NULL;
        bad |= vp_arch_preset(vp_arch_preset_name(i), &arch, NULL) ||
               vp_arch_json(&arch, NULL, &text, NULL) || !(one = vp__json_take(text)) ||
               json_array_append_new(models, one);
    }
    for (int i = 0; i < vp_gpu_preset_count(); i++) {
        vp_gpu gpu;
        json_t *one = NULL;
        bad |= vp_gpu_preset(vp_gpu_preset_name(i), &gpu, NULL) ||
               !(one = vp__json_take(vp_gpu_json(&gpu))) || json_array_append_new(gpus, one);
    }
    if (bad) {
        json_decref(root);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    return vp__say_json(run, root, err);
}

/* ", 8 of 256 experts (2048 wide, 1 shared), 37.55B active" of a mixture of experts into
 * buf ("" for a dense model). */
static const char *moe_text(const vp_arch *a, char *buf, size_t size) {
    buf[0] = '\0';
    if (a->experts > 0)
        snprintf(buf, size, "  %d of %d experts (%d wide, %d shared), %.2fB active", a->top_k,
                 a->experts, a->expert_ffn, a->shared_experts, vp_arch_active_params(a) / 1e9);
    return buf;
}

static void list_text(vp__buf *out) {
    vp__buf_printf(out, "%-15s %6s %6s %5s %4s %6s %-6s %7s %6s %9s\n", "model", "layers", "hidden",
                   "heads", "kv", "ffn", "mlp", "vocab", "tied", "params");
    for (int i = 0; i < vp_arch_preset_count(); i++) {
        vp_arch a;
        char moe[96];
        if (vp_arch_preset(vp_arch_preset_name(i), &a, NULL) != VP_OK)
            continue;
        vp__buf_printf(out, "%-15s %6d %6d %5d %4d %6d %-6s %7d %6s %8.2fB%s\n", a.name, a.layers,
                       a.hidden, a.heads, a.kv_heads, a.ffn, vp_ffn_kind_name(a.ffn_kind), a.vocab,
                       a.tied ? "yes" : "no", vp_arch_params(&a) / 1e9,
                       moe_text(&a, moe, sizeof moe));
    }
    vp__buf_printf(out, "%-15s any size: vpipe's own byte-level GPT (fp32)\n", "vpipe:L,W,H,S");
    vp__buf_printf(out, "\n%-12s %11s %8s %10s %14s %14s %9s %5s %10s %9s\n", "accelerator",
                   "bf16 TFLOP/s", "GiB", "HBM TB/s", "intra GB/s", "inter GB/s", "per node",
                   "GEMM", "host GB/s", "host GiB");
    for (int i = 0; i < vp_gpu_preset_count(); i++) {
        vp_gpu g;
        if (vp_gpu_preset(vp_gpu_preset_name(i), &g, NULL) != VP_OK)
            continue;
        vp__buf_printf(out, "%-12s %11.0f %8.1f %10.3g %14.0f %14.0f %9d %5.2f %10.0f %9.0f\n",
                       g.name, g.peak_flops / 1e12, g.memory_bytes / GIB, g.hbm_bandwidth / 1e12,
                       g.intra_bw / 1e9, g.inter_bw / 1e9, g.gpus_per_node,
                       g.efficiency > 0 ? g.efficiency : g.gemm_efficiency, g.host_bw / 1e9,
                       g.host_memory_bytes / GIB);
    }
    vp__buf_printf(out, "\n--model also takes a Hugging Face config.json, --gpu a JSON file (vpipe "
                        "model show --help)\n");
}

static const char *const part_names[] = {"layer", "embedding", "head"};

/* One part's row: parameters, saved bytes (M_B, M_W) and FLOPs per pass. */
static void part_row(vp__buf *out, const vp_arch *a, const vp_workload *w, int k) {
    vp_price_facts f;
    vp_price_part_facts(a, w, (vp_price_part)k, &f, NULL);
    vp__buf_printf(out, "%-10s %10.4g %10.4g %10.4g %9.4g %9.4g %9.4g %9.4g\n", part_names[k],
                   f.params / 1e6, f.act_bytes / (1 << 20), f.keep_bytes / (1 << 20),
                   f.flops_f / 1e9, f.flops_b / 1e9, f.flops_w / 1e9, f.flops_r / 1e9);
}

/* The attention's and MLP's variants, one line each (none for a plain model). */
static void variants_text(vp__buf *out, const vp_arch *a) {
    char moe[96];
    if (a->kv_lora > 0)
        vp__buf_printf(out,
                       "  latent attention (MLA): query latent %d, key-value latent %d, head "
                       "dims %d + %d rotary (query, key), %d (value)\n",
                       a->q_lora, a->kv_lora, a->qk_nope, a->qk_rope, a->v_head);
    if (a->window > 0)
        vp__buf_printf(out, "  sliding window of %d tokens on %d of every %d layers\n", a->window,
                       a->window_layers, a->window_period);
    if (a->experts > 0)
        vp__buf_printf(out, "%s from layer %d on%s\n", moe_text(a, moe, sizeof moe),
                       a->dense_layers, a->capacity > 0 ? ", capacity factor" : ", dropless");
    if (a->experts > 0 && a->expert_groups > 0)
        vp__buf_printf(out, "  group-limited routing: a token's experts from %d of %d groups\n",
                       a->group_top_k, a->expert_groups);
}

static void show_text(vp__buf *out, const vp_arch *a, const vp_workload *w) {
    char setting[256];
    int head = a->head_dim ? a->head_dim : a->hidden / a->heads;
    vp__buf_printf(out,
                   "%s: %d layers, hidden %d, %d heads (%d KV heads, head size %d), FFN %d (%s), "
                   "vocab %d\n  %s, %s, %s, %s positions (%d), %d-byte activations, %s tensors\n",
                   a->name, a->layers, a->hidden, a->heads, a->kv_heads, head, a->ffn,
                   a->ffn_kind == VP_FFN_GELU     ? "GELU"
                   : a->ffn_kind == VP_FFN_SWIGLU ? "SwiGLU"
                                                  : "squared ReLU",
                   a->vocab, a->norm == VP_NORM_LAYER ? "LayerNorm" : "RMSNorm",
                   a->tied ? "tied head" : "untied", a->bias ? "biases" : "no biases",
                   a->learned_positions ? "learned" : "rotary", a->max_positions, a->dtype_bytes,
                   a->impl == VP_IMPL_VPIPE ? "vpipe's" : "Megatron's");
    variants_text(out, a);
    vp__buf_printf(out, "parameters: %.6g (%.4g B)\n\nper microbatch on one rank, %s:\n",
                   vp_arch_params(a), vp_arch_params(a) / 1e9,
                   vp__workload_text(w, setting, sizeof setting));
    vp__buf_printf(out, "%-10s %10s %10s %10s %9s %9s %9s %9s\n", "part", "params M", "M_B MiB",
                   "M_W MiB", "F GFLOP", "B GFLOP", "W GFLOP", "R GFLOP");
    for (int k = VP_PRICE_LAYER; k <= VP_PRICE_HEAD; k++)
        part_row(out, a, w, k);
    int n = vp_price_tensors(a, w, VP_PRICE_LAYER, NULL, 0);
    vp_saved_tensor t[64];
    n = vp_price_tensors(a, w, VP_PRICE_LAYER, t, n < 64 ? n : 64);
    static const char *const keep[] = {"F until B", "F until W", "B until W"};
    vp__buf_printf(out, "\ntensors one layer saves (M_B: kept from F; M_W: left by B for W):\n");
    for (int i = 0; i < n; i++)
        vp__buf_printf(out, "  %-48s %12.4g MiB  %s\n", t[i].name, t[i].bytes / (1 << 20),
                       keep[t[i].keep]);
    vp__buf_printf(out, "\nM_B, M_W: bytes F saves and B leaves for W; R: FLOPs recomputation adds "
                        "to B\n");
}

/* Checks show's options: the model given once, nothing that would not change what it
 * prints. */
static vp_status show_options(const vp__run *run, const char **model, vp_error *err) {
    static const char *const pipeline[] = {
        "gpu",         "tp_overlap",  "pp_overlap",      "reserve",    "dp_overlap",
        "ep_overlap",  "ep_dispatch", "ep_routing",      "fp8_params", "grad_bytes",
        "attn_kernel", "eager",       "optimizer_dtype", NULL};
    const vp_request *q = run->req;
    if (q->operand[1] && q->model)
        return vp__fail(err, VP_EINVAL, "give the model once: vpipe model show NAME|FILE");
    *model = q->operand[1] ? q->operand[1] : q->model;
    if (!*model)
        return vp__fail(err, VP_EINVAL,
                        "model show needs a model: a preset, a config.json or "
                        "vpipe:L,W,H,S (vpipe model list)");
    const char *given = vp__first_given(run, pipeline);
    if (given)
        return vp__fail(err, VP_EINVAL,
                        "%s does not change what model show prints (it prices a pipeline: "
                        "vpipe simulate FAMILY --model %s ...)",
                        VP__NAME(run, given), *model);
    return VP_OK;
}

static vp_status show(vp__run *run, vp_error *err) {
    const char *model = NULL;
    vp_status rc = show_options(run, &model, err);
    if (rc != VP_OK)
        return rc;
    vp_request q = *run->req; /* the model named by the operand, as if given by --model */
    q.model = model;
    q.operand[0] = q.operand[1] = NULL;
    const vp_request *given = run->req;
    run->req = &q;
    rc = vp__real_ready(run, err);
    run->req = given;
    if (rc == VP_OK && run->arch.impl == VP_IMPL_VPIPE && q.recompute > VP_RECOMPUTE_NONE)
        rc = vp__fail(err, VP_EINVAL,
                      "vpipe's own model recomputes only in a schedule's R passes: price one "
                      "(vpipe simulate FAMILY --model %s --recompute %s)",
                      model, vp_recompute_name((vp_recompute)q.recompute));
    if (rc != VP_OK)
        return rc;
    if (run->req->json) {
        char *text = NULL;
        rc = vp_arch_json(&run->arch, &run->work, &text, err);
        return rc == VP_OK ? vp__say_json(run, vp__json_take(text), err) : rc;
    }
    vp__buf out = {0};
    show_text(&out, &run->arch, &run->work);
    return vp__say_buf(run, &out, err);
}

vp_status vp__model(vp__run *run, vp_error *err) {
    const vp_request *q = run->req;
    const char *verb = q->operand[0];
    if (verb && !strcmp(verb, "list") && !q->operand[1]) {
        for (int i = 0; i < vp__n_options; i++) {
            const vp__option *o = &vp__options[i];
            if (strcmp(o->key, "json") && strcmp(o->key, "operand") && vp__option_given(q, o))
                return vp__fail(err, VP_EINVAL, "model list takes no %s (only %s)",
                                VP__NAME(run, o->key), VP__NAME(run, "json"));
        }
        if (q->json)
            return list_json(run, err);
        vp__buf out = {0};
        list_text(&out);
        return vp__say_buf(run, &out, err);
    }
    if (verb && !strcmp(verb, "show"))
        return show(run, err);
    return vp__fail(err, VP_EINVAL,
                    "usage: vpipe model list | vpipe model show NAME|FILE (vpipe model --help)");
}
