/* Accelerators: the presets (datasheet figures and the kernel model of their class, each
 * with the evidence it comes from) and their JSON form, read and written through one table
 * of keys. */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "price/price_internal.h"

#define GIB 1073741824.0

/* ---- the presets ------------------------------------------------------------------------

 Datasheet figures (peak dense 16-bit FLOP/s, HBM, NVLink or Infinity Fabric per GPU and
 direction, the network per GPU): design/models.md §3; B200 and GB200: NVIDIA's DGX B200 and
 GB200 NVL72 datasheets (2.25 and 2.5 PFLOP/s dense BF16, 180 and 186 GB HBM3e at 8 TB/s,
 NVLink 5 at 900 GB/s each way, 400 Gb/s per GPU; an NVL72 rack is one NVLink domain of 72);
 H800: the H100's compute and HBM with NVLink cut to 400 GB/s both ways (DeepSeek-V3's report
 measures 160 GB/s of it and 50 GB/s of InfiniBand per GPU); MI300X and MI325X: AMD's
 datasheets (1307.4 TFLOP/s dense BF16, 192 GB HBM3 at 5.3 TB/s and 256 GB HBM3E at 6 TB/s,
 seven Infinity Fabric links of 64 GB/s each way to the other GPUs of a node); MI355X: 2.5
 PFLOP/s dense BF16, 288 GB HBM3E at 8 TB/s, seven links of 76.8 GB/s each way. Latencies are
 NCCL's typical 3 us inside a node and 10 us across.

 Dense FP8 tensor-core FLOP/s (the datasheets' figures without sparsity): H100, H800, H200
 and GH200 1979 TFLOP/s (twice BF16), no MXFP8 (Hopper has no block-scaled tensor cores);
 B200 4.5 and GB200 5 PFLOP/s for FP8 and for MXFP8 alike (twice BF16); MI300X and MI325X
 2614.9 TFLOP/s, no MX formats (CDNA 3); MI355X 5 PFLOP/s for FP8 and MXFP8 (CDNA 4); the
 A100 has no FP8 (0: --fp8 is refused there).

 The kernel model of each class, and the evidence each constant comes from (rows named
 "tuned" are marked so in data/anchors/; the accuracy report shows the error on the others):
 - Ampere (A100). gemm_edge 128: the tile of A100 matrix kernels (128 x 128 threadblocks);
   gemm_efficiency 0.87, act_traffic_f 4.03 and act_traffic_b 2.77: least squares over the
   Zero Bubble paper's Table 6 pass times (models.md §6: zb-1.5b at mbs 6 and zb-6.2b at mbs
   3, sequence 1024, per middle stage F / B / W 18.522 / 18.086 / 9.337 and 29.718 / 29.444 /
   19.927 ms; every one within 2.5%), those runs overlapping their sends. p2p_bw 47.5 GB/s:
   both Table 6 hops are one microbatch's activation at 47.1 and 47.8 GB/s.
   attn_efficiency 0.63 / 0.52: FlashAttention-2 on A100 (Dao 2023, arXiv 2307.08691,
   figures 4-5: causal, head dim 128, sequence 2k, about 196 TFLOP/s forward and 163
   backward). comm_efficiency 0.52, layer_overhead 3 us, chunk_overhead 230 us: fitted by
   `vpipe calibrate --constants comm,layer,chunk` to the SC21 runs marked tuned (1.7B, 18B, 145B,
   1T) with the kernel constants above; the efficiency is below NCCL's all-reduce bus
   bandwidth on a DGX A100 (about 235 of NVLink's 300 GB/s) because Megatron-LM's blocking
   collectives also wait for the group's slowest rank, which the fit folds in.
 - Hopper (H100, H200, H800). gemm_edge 256: Hopper's 128 x 256 warp-group tiles on 132 SMs
   waste about twice Ampere's edge; attn_efficiency 0.55 / 0.45: FlashAttention-3 and
   cuDNN's fused attention on H100 (Shah et al. 2024, arXiv 2407.08608: causal, head dim
   128, sequence 4k, about 550 TFLOP/s forward and 450 backward), what Transformer Engine
   runs; attn_fa2 0.544 / 0.574: FlashAttention-2 against FlashAttention-3 in the same paper
   (head dim 128, sequence 16k: forward causal 335 against 616 TFLOP/s, backward 322 against
   561), what PyTorch's scaled_dot_product_attention ran on Hopper until cuDNN's kernels
   became its default (pytorch/pytorch#138522 made them opt-in after 2.5; #142132, a
   2024-12-04 nightly on H100: 329 TFLOP/s against cuDNN's 631); comm_efficiency 0.8: NCCL's
 all-reduce bus bandwidth on a DGX H100 (about 360 of 450 GB/s); gemm_efficiency 0.63,
 act_traffic 6.9 / 4.7 and layer_overhead 1.8 us: fitted by `vpipe calibrate --constants
 gemm,memory,layer` to the Megatron-LM 2024 runs marked tuned (1.7B, 16B, 70B, 314B). Their pipeline
 sends overlap compute, which hides the per-chunk overhead, so none of them can show it:
 chunk_overhead is the A100's (the same framework's host-side step).
 - Blackwell (B200, GB200) and CDNA (MI300X, MI325X, MI355X): no published training run of
   data/anchors/ is priced on them (their expected error says so). Blackwell carries the
   Hopper kernel model over. CDNA takes the Hopper model with the matrix multiplies and
   attention at 0.6 of Hopper's rates: AMD's own "max-achievable FLOPs" measurements put
   MI300X's large BF16 GEMMs near half its datasheet peak, where H100's reach about 0.8.
 Memory beyond the tensors (every class): a CUDA/ROCm context with the BLAS, attention and
 collective libraries' workspaces of 0.6 GiB, 0.15 GiB of NCCL buffers per communicator
 (channels x the simple, LL and LL128 protocols' buffers), and the caching allocator's
 cached-but-free blocks at 5% of the allocated peak; not fitted (data/anchors/ publishes
 allocated peaks only for runs vpipe prices), `vpipe calibrate` fits them to a user's runs.
*/

#define AMPERE                                                                                     \
    .gemm_efficiency = 0.87, .gemm_edge = 128, .act_traffic_f = 4.03, .act_traffic_b = 2.77,       \
    .attn_efficiency_f = 0.63, .attn_efficiency_b = 0.52, .attn_fa2_f = 1, .attn_fa2_b = 1,        \
    .layer_overhead = 3e-6, .chunk_overhead = 230e-6, .comm_efficiency = 0.52,                     \
    .hbm_efficiency = 0.8
#define HOPPER_KERNELS(SHARE)                                                                      \
    .gemm_efficiency = 0.63 * (SHARE), .gemm_edge = 256, .act_traffic_f = 6.9,                     \
    .act_traffic_b = 4.7, .attn_efficiency_f = 0.55 * (SHARE),                                     \
    .attn_efficiency_b = 0.45 * (SHARE), .attn_fa2_f = 335.0 / 616, .attn_fa2_b = 322.0 / 561,     \
    .layer_overhead = 1.8e-6, .chunk_overhead = 230e-6, .comm_efficiency = 0.8,                    \
    .hbm_efficiency = 0.8
#define HOPPER HOPPER_KERNELS(1)
#define CDNA HOPPER_KERNELS(0.6)
#define PROCESS .context_bytes = 0.6 * GIB, .comm_buffer_bytes = 0.15 * GIB, .frag_fraction = 0.05
/* A pipeline send inside a node reaches 47.5 / 300 of an A100's NVLink (one NCCL
 * send/receive, Table 6's hops); other accelerators are taken at that share of theirs. */
/* The host link and host memory (offload): what pinned copies reach each way, about 80%
 * of the link's rate after encoding (PCIe Gen4 x16 31.5 GB/s: 25; Gen5 x16 63 GB/s: 50),
 * and NVLink-C2C's 900 GB/s coherent link as 450 each way (not derated: no figure of ours);
 * host memory per GPU of the usual 8-GPU node (DGX A100 1 TiB, DGX H100 and H200 2 TiB,
 * DGX B200 4 TiB; the MI300-class platforms' 2 TiB) or of the superchip (GH200: 480 GB of
 * LPDDR5X; GB200: one Grace's 480 GB for two GPUs). */
#define HOST(BW, MEMORY) .host_bw = BW, .host_memory_bytes = MEMORY
#define PCIE4 HOST(25e9, 128 * GIB)
#define PCIE5 HOST(50e9, 256 * GIB)
#define GPU(NAME, PEAK, MEMORY, HBM, INTRA, INTER, NODE, CLASS, LINK, EXPECTED, FP8)               \
    {                                                                                              \
        .name = NAME, .peak_flops = PEAK, .memory_bytes = MEMORY, .hbm_bandwidth = HBM,            \
        .intra_bw = INTRA, .p2p_bw = (INTRA) * (47.5 / 300), .inter_bw = INTER,                    \
        .intra_latency = 3e-6, .inter_latency = 10e-6, .gpus_per_node = NODE, CLASS, PROCESS,      \
        LINK, EXPECTED, FP8                                                                        \
    }
/* FP8 and MXFP8 dense FLOP/s (0: none). */
#define FP8(F, MX) .fp8_peak_flops = F, .mxfp8_peak_flops = MX
#define HOPPER_FP8 FP8(1979e12, 0)
#define UNMEASURED .expected = {.basis = "its kernel constants are carried over, see gpus.c"}

/* The accuracy report's measurements (docs/results.md §7, bench_accuracy; test_accuracy
 * checks these are the figures it measures): throughput errors on every published run
 * priced on the accelerator, memory errors on those that publish a peak. */
#define A100_MEASURED                                                                              \
    .expected = {0.0784,                                                                           \
                 0.26,                                                                             \
                 0.0558,                                                                           \
                 0.1476,                                                                           \
                 34,                                                                               \
                 18,                                                                               \
                 "accuracy report: SC21, Zero Bubble, Controllable Memory runs"}
#define H100_MEASURED                                                                              \
    .expected = {0.0313, 0.0818, 0, 0, 9, 0, "accuracy report: Megatron-LM 2024 runs"}
/* The Hopper class's constants measured on h100-80gb only. */
#define HOPPER_UNMEASURED                                                                          \
    .expected = {0, 0, 0, 0, 0, 0, "its class measured on h100-80gb: 3.1% mean, 8.2% worst"}

static const vp_gpu gpu_presets[] = {
    GPU("a100-80gb", 312e12, 80 * GIB, 2.039e12, 300e9, 25e9, 8, AMPERE, PCIE4, A100_MEASURED,
        FP8(0, 0)),
    GPU("h100-80gb", 989e12, 80 * GIB, 3.35e12, 450e9, 50e9, 8, HOPPER, PCIE5, H100_MEASURED,
        HOPPER_FP8),
    GPU("h200-141gb", 989e12, 141e9, 4.8e12, 450e9, 50e9, 8, HOPPER, PCIE5, HOPPER_UNMEASURED,
        HOPPER_FP8),
    GPU("h800-80gb", 989e12, 80 * GIB, 3.35e12, 200e9, 50e9, 8, HOPPER, PCIE5, HOPPER_UNMEASURED,
        HOPPER_FP8),
    /* the H100's compute and links with 96 GB of HBM3 at 4 TB/s behind NVLink-C2C */
    GPU("gh200-96gb", 989e12, 96e9, 4.0e12, 450e9, 50e9, 8, HOPPER, HOST(450e9, 480e9),
        HOPPER_UNMEASURED, HOPPER_FP8),
    GPU("b200", 2250e12, 180e9, 8e12, 900e9, 50e9, 8, HOPPER, HOST(50e9, 512 * GIB), UNMEASURED,
        FP8(4500e12, 4500e12)),
    GPU("gb200", 2500e12, 186e9, 8e12, 900e9, 50e9, 72, HOPPER, HOST(450e9, 240e9), UNMEASURED,
        FP8(5000e12, 5000e12)),
    GPU("mi300x", 1307.4e12, 192e9, 5.3e12, 448e9, 50e9, 8, CDNA, PCIE5, UNMEASURED,
        FP8(2614.9e12, 0)),
    GPU("mi325x", 1307.4e12, 256e9, 6e12, 448e9, 50e9, 8, CDNA, PCIE5, UNMEASURED,
        FP8(2614.9e12, 0)),
    GPU("mi355x", 2500e12, 288e9, 8e12, 537.6e9, 50e9, 8, CDNA, PCIE5, UNMEASURED,
        FP8(5000e12, 5000e12)),
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
    char names[256], known[300];
    vp__join_names(vp_gpu_preset_name, N_GPUS, names, sizeof names);
    snprintf(known, sizeof known, "known: %s, or a JSON file", names);
    vp__nearest near = {.word = name};
    for (int i = 0; i < N_GPUS; i++)
        vp__nearest_offer(&near, gpu_presets[i].name);
    return vp__fail(err, VP_EINVAL, "unknown accelerator '%s'%s", name,
                    vp__did_you_mean(near.best, known).text);
}

/* ---- the JSON form ---------------------------------------------------------------------- */

/* Which keys a file without "base" must give: always, the kernel model's four unless it
 * gives "efficiency", or none (a default applies). */
typedef enum { KEY_REQUIRED, KEY_KERNEL, KEY_OPTIONAL } key_need;

/* One numeric key of the accelerator JSON: where it goes and its unit. */
typedef struct gpu_key {
    const char *key;
    size_t offset; /* of the double in vp_gpu */
    double unit, lo, hi;
    key_need need;
} gpu_key;

#define KEY(name, field, unit, lo, hi, need)                                                       \
    { name, offsetof(vp_gpu, field), unit, lo, hi, need }

static const gpu_key gpu_keys[] = {
    KEY("peak_tflops", peak_flops, 1e12, 1e-6, 1e9, KEY_REQUIRED),
    KEY("memory_gib", memory_bytes, GIB, 1e-6, 1e9, KEY_REQUIRED),
    KEY("hbm_tb_s", hbm_bandwidth, 1e12, 1e-6, 1e9, KEY_REQUIRED),
    KEY("intra_node_gb_s", intra_bw, 1e9, 1e-6, 1e9, KEY_REQUIRED),
    KEY("inter_node_gb_s", inter_bw, 1e9, 1e-6, 1e9, KEY_REQUIRED),
    KEY("intra_node_latency_us", intra_latency, 1e-6, 0, 1e9, KEY_REQUIRED),
    KEY("inter_node_latency_us", inter_latency, 1e-6, 0, 1e9, KEY_REQUIRED),
    KEY("p2p_gb_s", p2p_bw, 1e9, 1e-6, 1e9, KEY_OPTIONAL),
    KEY("gemm_efficiency", gemm_efficiency, 1, 1e-6, 1, KEY_KERNEL),
    KEY("gemm_edge", gemm_edge, 1, 0, 1e9, KEY_KERNEL),
    KEY("act_traffic_f", act_traffic_f, 1, 0, 1e9, KEY_KERNEL),
    KEY("act_traffic_b", act_traffic_b, 1, 0, 1e9, KEY_KERNEL),
    KEY("attn_efficiency_f", attn_efficiency_f, 1, 1e-6, 1, KEY_OPTIONAL),
    KEY("attn_efficiency_b", attn_efficiency_b, 1, 1e-6, 1, KEY_OPTIONAL),
    KEY("attn_fa2_f", attn_fa2_f, 1, 1e-6, 1, KEY_OPTIONAL),
    KEY("attn_fa2_b", attn_fa2_b, 1, 1e-6, 1, KEY_OPTIONAL),
    KEY("layer_overhead_us", layer_overhead, 1e-6, 0, 1e9, KEY_OPTIONAL),
    KEY("chunk_overhead_us", chunk_overhead, 1e-6, 0, 1e9, KEY_OPTIONAL),
    KEY("comm_efficiency", comm_efficiency, 1, 1e-6, 1, KEY_OPTIONAL),
    KEY("hbm_efficiency", hbm_efficiency, 1, 1e-6, 1, KEY_OPTIONAL),
    KEY("context_gib", context_bytes, GIB, 0, 1e6, KEY_OPTIONAL),
    KEY("comm_buffer_gib", comm_buffer_bytes, GIB, 0, 1e6, KEY_OPTIONAL),
    KEY("frag_fraction", frag_fraction, 1, 0, 10, KEY_OPTIONAL),
    KEY("host_gb_s", host_bw, 1e9, 0, 1e9, KEY_OPTIONAL),
    KEY("host_memory_gib", host_memory_bytes, GIB, 0, 1e9, KEY_OPTIONAL),
    KEY("fp8_peak_tflops", fp8_peak_flops, 1e12, 0, 1e9, KEY_OPTIONAL),
    KEY("mxfp8_peak_tflops", mxfp8_peak_flops, 1e12, 0, 1e9, KEY_OPTIONAL),
    KEY("expected_step_error", expected.step_mean, 1, 0, 1e3, KEY_OPTIONAL),
    KEY("expected_step_worst", expected.step_worst, 1, 0, 1e3, KEY_OPTIONAL),
    KEY("expected_memory_error", expected.memory_mean, 1, 0, 1e3, KEY_OPTIONAL),
    KEY("expected_memory_worst", expected.memory_worst, 1, 0, 1e3, KEY_OPTIONAL),
};

#define N_GPU_KEYS (sizeof gpu_keys / sizeof gpu_keys[0])
#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The whole numbers and strings besides the table. */
static bool other_key(const char *key) {
    static const char *const names[] = {"name",          "base",          "gpus_per_node",
                                        "efficiency",    "expected_runs", "expected_memory_runs",
                                        "expected_basis"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(key, names[i]))
            return true;
    return false;
}

/* Every key is known; the numeric ones are read in (required ones only without base). */
static vp_status read_gpu_keys(json_t *root, bool required, vp_gpu *g, vp_error *err) {
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        bool known = other_key(key);
        for (size_t i = 0; i < N_GPU_KEYS && !known; i++)
            known = !strcmp(key, gpu_keys[i].key);
        if (!known)
            return vp__fail(err, VP_EPARSE, "accelerator: unknown key \"%s\"", key);
    }
    vp_status rc = VP_OK;
    for (size_t i = 0; i < N_GPU_KEYS && rc == VP_OK; i++) {
        const gpu_key *k = &gpu_keys[i];
        double *field = (double *)((char *)g + k->offset), x = *field / k->unit;
        rc = vp__json_number(root, (const char *const[]){k->key, NULL}, k->lo, k->hi,
                             required && k->need == KEY_REQUIRED, &x, err);
        *field = x * k->unit;
    }
    double e = g->efficiency, runs = g->expected.runs, mem_runs = g->expected.memory_runs;
    if (rc == VP_OK)
        rc = vp__json_count(root, KEYS("gpus_per_node"), 1 << 20, required, &g->gpus_per_node, err);
    if (rc == VP_OK)
        rc = vp__json_number(root, KEYS("efficiency"), 1e-6, 1, false, &e, err);
    if (rc == VP_OK)
        rc = vp__json_number(root, KEYS("expected_runs"), 0, 1e9, false, &runs, err);
    if (rc == VP_OK)
        rc = vp__json_number(root, KEYS("expected_memory_runs"), 0, 1e9, false, &mem_runs, err);
    g->efficiency = e;
    g->expected.runs = (int)runs;
    g->expected.memory_runs = (int)mem_runs;
    const char *basis = NULL;
    if (rc == VP_OK)
        rc = vp__json_string(root, KEYS("expected_basis"), &basis, err);
    if (basis)
        snprintf(g->expected.basis, sizeof g->expected.basis, "%s", basis);
    return rc;
}

/* The speed model a file chose: "efficiency" alone means one fraction of peak; without
 * it, a file without "base" needs the four kernel keys. */
static vp_status read_speed_model(json_t *root, bool based, vp_gpu *g, vp_error *err) {
    if (json_object_get(root, "efficiency"))
        return VP_OK;
    g->efficiency = 0;
    for (size_t i = 0; i < N_GPU_KEYS && !based; i++)
        if (gpu_keys[i].need == KEY_KERNEL && !json_object_get(root, gpu_keys[i].key))
            return vp__fail(err, VP_EPARSE,
                            "missing key \"%s\" (or \"efficiency\": one fraction of peak for "
                            "every pass)",
                            gpu_keys[i].key);
    return VP_OK;
}

/* What a file without "base" means by the keys it leaves out: files written before they
 * existed (the send/receive bandwidth of the link, attention at the matrix multiplies'
 * efficiency, FlashAttention-2 as fast as it, full communication and HBM efficiency,
 * nothing else added). */
static vp_gpu file_defaults(void) {
    return (vp_gpu){.name = "custom",
                    .comm_efficiency = 1,
                    .hbm_efficiency = 1,
                    .attn_fa2_f = 1,
                    .attn_fa2_b = 1};
}

static void fill_defaults(json_t *root, vp_gpu *g) {
    if (!json_object_get(root, "p2p_gb_s"))
        g->p2p_bw = g->intra_bw;
    if (!json_object_get(root, "attn_efficiency_f"))
        g->attn_efficiency_f = g->gemm_efficiency ? g->gemm_efficiency : 1;
    if (!json_object_get(root, "attn_efficiency_b"))
        g->attn_efficiency_b = g->gemm_efficiency ? g->gemm_efficiency : 1;
}

vp_status vp_gpu_parse_json(const char *text, size_t len, vp_gpu *out, vp_error *err) {
    json_t *root;
    vp_status rc = vp__json_object(text, len, "accelerator", &root, err);
    if (rc != VP_OK)
        return rc;
    vp_gpu g = file_defaults();
    const char *base, *name;
    rc = vp__json_string(root, KEYS("base"), &base, err);
    if (rc == VP_OK && base && vp_gpu_preset(base, &g, err) != VP_OK)
        rc = vp__as_parse_error(err);
    if (rc == VP_OK)
        rc = vp__json_string(root, KEYS("name"), &name, err);
    if (rc == VP_OK && name)
        vp__text_escape(g.name, sizeof g.name, name); /* printed: no terminal control */
    if (rc == VP_OK)
        rc = read_gpu_keys(root, !base, &g, err);
    if (rc == VP_OK && !base)
        fill_defaults(root, &g);
    if (rc == VP_OK)
        rc = read_speed_model(root, base != NULL, &g, err);
    json_decref(root);
    if (rc == VP_OK)
        *out = g;
    return rc;
}

vp_status vp_gpu_resolve(const char *name_or_path, vp_gpu *out, vp_error *err) {
    if (!vp__is_path(name_or_path))
        return vp_gpu_preset(name_or_path, out, err);
    char *text = NULL;
    size_t len = 0;
    vp_status rc = vp_read_file(name_or_path, 1 << 20, &text, &len, err);
    if (rc == VP_OK)
        rc = vp_gpu_parse_json(text, len, out, err);
    free(text);
    return rc;
}

char *vp_gpu_json(const vp_gpu *g) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(g->name));
    for (size_t i = 0; i < N_GPU_KEYS; i++) {
        const gpu_key *k = &gpu_keys[i];
        if (k->need == KEY_KERNEL && g->efficiency > 0)
            continue; /* one fraction of peak replaces the kernel model's keys */
        double v = *(const double *)((const char *)g + k->offset) / k->unit;
        json_object_set_new(o, k->key, json_real(v));
    }
    if (g->efficiency > 0)
        json_object_set_new(o, "efficiency", json_real(g->efficiency));
    json_object_set_new(o, "gpus_per_node", json_integer(g->gpus_per_node));
    json_object_set_new(o, "expected_runs", json_integer(g->expected.runs));
    json_object_set_new(o, "expected_memory_runs", json_integer(g->expected.memory_runs));
    json_object_set_new(o, "expected_basis", json_string(g->expected.basis));
    char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(o);
    return text;
}

/* The accuracy report's figures per kind of run (docs/results.md §7: bench_accuracy on
 * data/anchors/{moe,fp8,cp,fsdp}.csv, a run counted in each kind it has; test_accuracy checks
 * these are the figures it measures). */
static const struct {
    const char *name;
    vp_expected_error e;
} kinds[] = {
    {"MoE", {0.1077, 0.2687, 0.0065, 0.0065, 12, 1, ""}},
    {"FP8", {0.1120, 0.3489, 0.0766, 0.1554, 28, 6, ""}},
    {"CP", {0.1392, 0.3489, 0.0917, 0.1554, 8, 3, ""}},
    {"FSDP", {0.1244, 0.3489, 0.0658, 0.1554, 16, 8, ""}},
};

void vp_price_expected_kind(const vp_workload *w, vp_expected_error *e) {
    const bool has[] = {w->ep > 1, w->fp8 != VP_FP8_OFF, w->cp > 1, w->zero == 3};
    char names[48] = "";
    int pick = -1, n = 0;
    for (int k = 0; k < 4; k++)
        if (has[k]) {
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", n++ ? ", " : "",
                     kinds[k].name);
            pick = pick < 0 || kinds[k].e.step_mean > kinds[pick].e.step_mean ? k : pick;
        }
    *e = pick < 0 ? (vp_expected_error){0} : kinds[pick].e;
    if (pick >= 0)
        snprintf(e->basis, sizeof e->basis, "accuracy report: published %s runs%s%s",
                 kinds[pick].name, n > 1 ? ", the worst of this run's kinds: " : "",
                 n > 1 ? names : "");
}

/* "throughput M% on average, W% at worst over N runs[; memory ...] (basis)" into buf at
 * n; returns buf. */
static char *figures(const vp_expected_error *e, char *buf, size_t size, int n) {
    if (n > 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n,
                      "throughput %.1f%% on average, %.1f%% at worst over %d runs",
                      100 * e->step_mean, 100 * e->step_worst, e->runs);
    if (n > 0 && (size_t)n < size && e->memory_runs > 0)
        n += snprintf(buf + n, size - (size_t)n, "; memory %.1f%%, %.1f%% at worst over %d runs",
                      100 * e->memory_mean, 100 * e->memory_worst, e->memory_runs);
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " (%s)", e->basis);
    return buf;
}

const char *vp_price_expected_text(const char *gpu, const vp_expected_error *e, char *buf,
                                   size_t size) {
    if (e->runs == 0) {
        snprintf(buf, size,
                 "expected error on %s: not measured (no published run on it priced yet%s%s): "
                 "check a figure you depend on, or calibrate (vpipe calibrate)",
                 gpu, e->basis[0] ? "; " : "", e->basis);
        return buf;
    }
    return figures(e, buf, size, snprintf(buf, size, "expected error on %s: ", gpu));
}

const char *vp_price_expected_kind_text(const vp_expected_error *e, char *buf, size_t size) {
    if (e->runs > 0)
        return figures(e, buf, size, snprintf(buf, size, "expected error of runs of its kind: "));
    if (size)
        buf[0] = '\0';
    return buf;
}
