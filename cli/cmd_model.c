/* vpipe model list | show NAME|FILE: the models and accelerators pricing knows, and one
 * model's dimensions, parameters, saved bytes and FLOPs per pass. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define GIB 1073741824.0

typedef struct model_args {
    cli_spec spec; /* for cli_real_ready: its --recompute, no schedule options */
    cli_real real;
    const char *verb, *name; /* the two operands */
    bool json;
} model_args;

static const cli_opt model_opts[] = {
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(model_args, json),
     .help = "list: {\"models\": [...], \"gpus\": [...]}; show: the model with its\n"
             "parts' parameters, saved tensors and FLOPs per pass"},
};
static const cli_group model_group = CLI_GROUP("output", model_opts);

static void init(void *args) {
    model_args *a = args;
    cli_spec_init(&a->spec);
    cli_real_init(&a->real);
}

/* A library JSON string (taken) appended to array; -1 when memory runs out. */
static int append_json(json_t *array, char *text) {
    json_t *o = cli_json_take(text);
    return o ? json_array_append_new(array, o) : -1;
}

static int list_json(void) {
    json_t *root = json_object(), *models = json_array(), *gpus = json_array();
    json_object_set_new(root, "models", models);
    json_object_set_new(root, "gpus", gpus);
    int bad = 0;
    for (int i = 0; i < vp_arch_preset_count(); i++) {
        vp_arch arch;
        char *text = NULL;
        bad |= vp_arch_preset(vp_arch_preset_name(i), &arch, NULL) ||
               vp_arch_json(&arch, NULL, &text, NULL) || append_json(models, text);
    }
    for (int i = 0; i < vp_gpu_preset_count(); i++) {
        vp_gpu gpu;
        bad |= vp_gpu_preset(vp_gpu_preset_name(i), &gpu, NULL) ||
               append_json(gpus, vp_gpu_json(&gpu));
    }
    int rc = bad ? cli_error(VP_EXIT_FAILURE, "out of memory") : cli_write_json("-", root);
    json_decref(root);
    return rc;
}

static void list_text(FILE *out) {
    fprintf(out, "%-12s %6s %6s %5s %4s %6s %-6s %7s %6s %9s\n", "model", "layers", "hidden",
            "heads", "kv", "ffn", "mlp", "vocab", "tied", "params");
    for (int i = 0; i < vp_arch_preset_count(); i++) {
        vp_arch a;
        if (vp_arch_preset(vp_arch_preset_name(i), &a, NULL) != VP_OK)
            continue;
        fprintf(out, "%-12s %6d %6d %5d %4d %6d %-6s %7d %6s %8.2fB\n", a.name, a.layers, a.hidden,
                a.heads, a.kv_heads, a.ffn, a.ffn_kind == VP_FFN_GELU ? "gelu" : "swiglu", a.vocab,
                a.tied ? "yes" : "no", vp_arch_params(&a) / 1e9);
    }
    fprintf(out, "%-12s any size: vpipe's own byte-level GPT (fp32)\n", "vpipe:L,W,H,S");
    fprintf(out, "\n%-12s %11s %8s %10s %14s %14s %9s %5s\n", "accelerator", "bf16 TFLOP/s", "GiB",
            "HBM TB/s", "intra GB/s", "inter GB/s", "per node", "GEMM");
    for (int i = 0; i < vp_gpu_preset_count(); i++) {
        vp_gpu g;
        if (vp_gpu_preset(vp_gpu_preset_name(i), &g, NULL) != VP_OK)
            continue;
        fprintf(out, "%-12s %11.0f %8.1f %10.3g %14.0f %14.0f %9d %5.2f\n", g.name,
                g.peak_flops / 1e12, g.memory_bytes / GIB, g.hbm_bandwidth / 1e12, g.intra_bw / 1e9,
                g.inter_bw / 1e9, g.gpus_per_node,
                g.efficiency > 0 ? g.efficiency : g.gemm_efficiency);
    }
    fprintf(out, "\n--model also takes a Hugging Face config.json, --gpu a JSON file (vpipe "
                 "model show --help)\n");
}

static const char *const part_names[] = {"layer", "embedding", "head"};

/* One part's row: parameters, saved bytes (M_B, M_W) and FLOPs per pass. */
static void part_row(FILE *out, const vp_arch *a, const vp_workload *w, int k) {
    vp_price_facts f;
    vp_price_part_facts(a, w, (vp_price_part)k, &f, NULL);
    fprintf(out, "%-10s %10.4g %10.4g %10.4g %9.4g %9.4g %9.4g %9.4g\n", part_names[k],
            f.params / 1e6, f.act_bytes / (1 << 20), f.keep_bytes / (1 << 20), f.flops_f / 1e9,
            f.flops_b / 1e9, f.flops_w / 1e9, f.flops_r / 1e9);
}

static void show_text(FILE *out, const cli_real *r) {
    const vp_arch *a = &r->arch;
    const vp_workload *w = &r->work;
    char setting[256];
    fprintf(out,
            "%s: %d layers, hidden %d, %d heads (%d KV heads, head size %d), FFN %d (%s), "
            "vocab %d\n  %s, %s, %s, %s positions (%d), %d-byte activations, %s tensors\n",
            a->name, a->layers, a->hidden, a->heads, a->kv_heads, a->hidden / a->heads, a->ffn,
            a->ffn_kind == VP_FFN_GELU ? "GELU" : "SwiGLU", a->vocab,
            a->norm == VP_NORM_LAYER ? "LayerNorm" : "RMSNorm", a->tied ? "tied head" : "untied",
            a->bias ? "biases" : "no biases", a->learned_positions ? "learned" : "rotary",
            a->max_positions, a->dtype_bytes, a->impl == VP_IMPL_VPIPE ? "vpipe's" : "Megatron's");
    fprintf(out, "parameters: %.6g (%.4g B)\n\nper microbatch on one rank, %s:\n",
            vp_arch_params(a), vp_arch_params(a) / 1e9,
            cli_workload_text(&r->work, setting, sizeof setting));
    fprintf(out, "%-10s %10s %10s %10s %9s %9s %9s %9s\n", "part", "params M", "M_B MiB", "M_W MiB",
            "F GFLOP", "B GFLOP", "W GFLOP", "R GFLOP");
    for (int k = VP_PRICE_LAYER; k <= VP_PRICE_HEAD; k++)
        part_row(out, a, w, k);
    int n = vp_price_tensors(a, w, VP_PRICE_LAYER, NULL, 0);
    vp_saved_tensor t[64];
    n = vp_price_tensors(a, w, VP_PRICE_LAYER, t, n < 64 ? n : 64);
    static const char *const keep[] = {"F until B", "F until W", "B until W"};
    fprintf(out, "\ntensors one layer saves (M_B: kept from F; M_W: left by B for W):\n");
    for (int i = 0; i < n; i++)
        fprintf(out, "  %-40s %12.4g MiB  %s\n", t[i].name, t[i].bytes / (1 << 20),
                keep[t[i].keep]);
    fprintf(out,
            "\nM_B, M_W: bytes F saves and B leaves for W; R: FLOPs recomputation adds to B\n");
}

static int show(model_args *a) {
    if (a->name && a->real.model)
        return cli_error(VP_EXIT_USAGE, "give the model once: vpipe model show NAME|FILE");
    a->real.model = a->name ? a->name : a->real.model;
    if (!a->real.model)
        return cli_error(VP_EXIT_USAGE, "model show needs a model: a preset, a config.json or "
                                        "vpipe:L,W,H,S (vpipe model list)");
    int rc = cli_real_ready(&a->real, &a->spec);
    if (!rc && a->real.arch.impl == VP_IMPL_VPIPE && a->spec.recompute > VP_RECOMPUTE_NONE)
        rc = cli_error(VP_EXIT_USAGE,
                       "vpipe's own model recomputes only in a schedule's R "
                       "passes: price one (vpipe simulate FAMILY --model %s "
                       "--recompute %s)",
                       a->real.model, vp_recompute_name((vp_recompute)a->spec.recompute));
    if (rc)
        return rc;
    if (a->json) {
        char *text = NULL;
        vp_error err = {0};
        if (vp_arch_json(&a->real.arch, &a->real.work, &text, &err) != VP_OK)
            return cli_lib_error(&err);
        json_t *j = cli_json_take(text);
        rc = cli_write_json("-", j);
        json_decref(j);
        return rc;
    }
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    show_text(out.f, &a->real);
    return cli_out_end(&out, "-");
}

static int run(void *args) {
    model_args *a = args;
    int rc;
    if (a->verb && !strcmp(a->verb, "list") && !a->name) {
        cli_out out;
        rc = a->json ? list_json() : cli_out_begin(&out);
        if (!a->json && !rc) {
            list_text(out.f);
            rc = cli_out_end(&out, "-");
        }
    } else if (a->verb && !strcmp(a->verb, "show")) {
        rc = show(a);
    } else {
        rc = cli_error(VP_EXIT_USAGE, "usage: vpipe model list | vpipe model show NAME|FILE "
                                      "(vpipe model --help)");
    }
    cli_real_release(&a->real);
    return rc;
}

static const cli_use uses[] = {
    {&cli_real_group, offsetof(model_args, real)},
    {&cli_recompute_group, offsetof(model_args, spec.recompute)},
    {&model_group, 0},
};

const cli_command cli_cmd_model = {
    .name = "model",
    .summary = "the real models and accelerators pricing knows; one model in detail",
    .usage = "list [--json]\n"
             "       vpipe model show NAME|FILE [--seq S --mbs B --tp T --sp --flash\n"
             "                                   --recompute R] [--json]",
    .about = "list: the model presets (--model NAME on simulate, compare, render, schedule\n"
             "and plan) with their parameter counts, and the accelerator presets (--gpu).\n"
             "show: a model's dimensions and parameter count, and per part (a transformer\n"
             "layer, the embedding, the final norm + head + loss) its parameters, the bytes\n"
             "one microbatch saves for B (M_B) and for W (M_W), the FLOPs of F, B and W and\n"
             "what recomputation adds, at the given sequence, microbatch and TP setting; then\n"
             "the tensors a layer saves. NAME is a preset, a Hugging Face config.json or\n"
             "vpipe:L,W,H,S (vpipe's own GPT). --gpu accepts a JSON file:\n"
             "  {\"base\": \"a100-80gb\", \"gemm_edge\": 64}  (a preset, keys overridden)\n"
             "  or every key: name, peak_tflops, memory_gib, hbm_tb_s, intra_node_gb_s,\n"
             "  inter_node_gb_s, intra_node_latency_us, inter_node_latency_us,\n"
             "  gpus_per_node, p2p_gb_s (optional) and the speed of a pass: gemm_efficiency,\n"
             "  gemm_edge, act_traffic_f, act_traffic_b (matrix multiplies at a fraction of\n"
             "  peak that grows with their sizes, other kernels at the HBM bandwidth), or\n"
             "  efficiency (one fraction of peak for every pass; overrides a base's model).\n"
             "  `vpipe model list --json` prints the presets so.\n",
    .epilog = "Options of the pipeline (--dp, --zero, --split, --layers-per-stage, --reserve,\n"
              "--dp-overlap) are accepted and do not change what show prints.\n",
    CLI_USES(uses),
    .operand = "list|show NAME",
    .operand_offset = offsetof(model_args, verb),
    .operands = 2,
    .args_size = sizeof(model_args),
    .init = init,
    .run = run,
};
