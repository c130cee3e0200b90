/* Real-model pricing: bytes per rank and seconds per step of any schedule, for a real
 * transformer (vp_arch) on a real accelerator (vp_gpu) under a training setup (vp_workload).
 *
 * Module `price` (src/price/): model and accelerator descriptions with their presets and
 * file readers (Hugging Face config.json, a small accelerator JSON), the tensors each
 * layer saves, FLOPs per pass, the layer split, and the pricing of a schedule through the
 * simulator. Depends on families (to build a family with the real costs), sim, schedule
 * and base. Facts and formulas: design/models.md.
 *
 * How it prices. A layer's activation bytes are the sum of the tensors it saves (shape x
 * dtype, vp_price_tensors): what F keeps until B (M_B) and what B leaves for W (M_W:
 * each linear's input and output gradient), under the setting (tensor parallelism with or
 * without sequence parallelism, FlashAttention, recomputation). A stage is its layers
 * plus the embedding (first stage of a route) or the final norm, head and loss (last).
 * Per-pass times come from FLOPs at the accelerator's efficiency plus the tensor-parallel
 * collectives, or from measured costs, which always win. The simulator replays the
 * schedule with these per-stage times and bytes: its per-device peak is the activation
 * memory of each rank. Model states, pipeline receive buffers, workspace and a named
 * reserve complete the itemised memory of every rank; the makespan plus the optimizer step
 * and the exposed data-parallel reduction is the step time.
 *
 * Ranks follow Megatron's order (tensor-parallel rank innermost, then context, then data,
 * then pipeline: its tp-cp-ep-dp-pp), so a link is inside a node when both ends share
 * gpus_per_node consecutive ranks.
 */
#ifndef VPIPE_PRICE_H
#define VPIPE_PRICE_H

#include <stdbool.h>

#include "vpipe/families.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the model --------------------------------------------------------------------- */

/* The MLP's activation: GELU (or ReLU; two matrices), SwiGLU (a gated MLP: three) or
 * squared ReLU (Nemotron's; two). */
typedef enum { VP_FFN_GELU = 0, VP_FFN_SWIGLU = 1, VP_FFN_RELU2 = 2 } vp_ffn_kind;

/* "gelu", "swiglu", "relu2"; NULL outside the enum. */
VP_API const char *vp_ffn_kind_name(vp_ffn_kind k);
typedef enum { VP_NORM_LAYER = 0, VP_NORM_RMS = 1 } vp_norm_kind;

/* Whose saved tensors a layer has: Megatron-style 16-bit training (the tensors of
 * Korthikanti et al.; norm statistics are not counted), or vpipe's own fp32 runtime
 * (src/model, byte for byte; no tensor parallelism, FlashAttention or recomputation). */
typedef enum { VP_IMPL_MEGATRON = 0, VP_IMPL_VPIPE = 1 } vp_impl;

typedef struct vp_arch {
    char name[64];
    int layers;             /* transformer blocks */
    int hidden;             /* h, the residual width */
    int heads;              /* attention (query) heads; head size hidden / heads */
    int kv_heads;           /* key/value heads (= heads without grouped-query attention) */
    int ffn;                /* MLP inner width (4h for GPT) */
    int vocab;              /* vocabulary */
    int max_positions;      /* longest sequence; the learned position table's rows */
    vp_ffn_kind ffn_kind;   /* GELU (two matrices) or SwiGLU (three) */
    vp_norm_kind norm;      /* LayerNorm (weight and bias) or RMSNorm (weight) */
    bool tied;              /* head shares the token embedding */
    bool bias;              /* linears have biases */
    bool dropout;           /* dropout after attention probabilities, attention, MLP, embedding */
    bool learned_positions; /* a position table (GPT) rather than rotary positions (Llama) */
    int dtype_bytes;        /* activations and compute: 2 (bf16/fp16) or 4 (fp32) */
    vp_impl impl;
    int head_dim; /* attention head size (0: hidden / heads) */
    /* Multi-head latent attention (DeepSeek's MLA) when kv_lora > 0: queries pass a
     * q_lora-wide latent (0: one projection), keys and values a kv_lora-wide one plus a
     * shared qk_rope-wide rotary key; per head, queries and keys have qk_nope + qk_rope
     * dimensions and values v_head. */
    int q_lora, kv_lora, qk_nope, qk_rope, v_head;
    /* Sliding-window attention (window 0: none): of every window_period layers the first
     * window_layers attend to the `window` tokens before each token only. */
    int window, window_period, window_layers;
    /* Mixture of experts (experts 0: a dense model). Every layer from dense_layers on
     * replaces the MLP by a router (a linear from hidden to the experts' scores) that sends
     * each token to top_k of `experts` MLPs of width expert_ffn, plus shared_experts MLPs
     * of that width every token passes (dense_layers keep the MLP of width ffn). capacity:
     * the experts' capacity factor, each expert's input padded to capacity x its balanced
     * share (0: dropless, the balanced share). Group-limited routing (expert_groups 0:
     * none; DeepSeek-V3's node-limited routing): the experts form expert_groups equal groups
     * and a token's top_k experts come from group_top_k of them. */
    int experts, top_k, expert_ffn, shared_experts, dense_layers;
    int expert_groups, group_top_k;
    double capacity;
} vp_arch;

/* Built-in models: gpt2-124m, llama2-7b/13b/70b, llama3-8b/70b/405b (llama3.1-405b the
 * same shape), gpt3-5b/20b/175b, nemotron-22b, the Zero Bubble paper's
 * zb-1.5b/6.2b/14.6b/28.3b, the Controllable Memory paper's cm-9.6b/21b/38.5b/98.5b, and the
 * mixtures of experts deepseek-v3, qwen3-30b-a3b, qwen3-235b-a22b, gpt-oss-120b,
 * gpt-oss-20b, mixtral-8x7b and mixtral-8x22b (design/models.md §2, design/anchors.md §1).
 * vp_arch_preset_name returns NULL past the end. */
VP_API int vp_arch_preset_count(void);
VP_API const char *vp_arch_preset_name(int i);

/* Fills *out with the preset called name. VP_EINVAL naming the known presets otherwise. */
VP_API vp_status vp_arch_preset(const char *name, vp_arch *out, vp_error *err);

/* vpipe's own byte-level GPT at a train size (vocab 256, fp32, learned positions with
 * seq rows, LayerNorm, GELU 4h, biases, no dropout, tied = false), named "vpipe". */
VP_API vp_arch vp_arch_vpipe(int layers, int width, int heads, int seq);

/* Reads a Hugging Face config.json (text of len bytes; name fills arch->name when the
 * file has no "_name_or_path" or "model_type"). Keys: hidden_size, num_hidden_layers,
 * num_attention_heads, intermediate_size, vocab_size, max_position_embeddings
 * (required; GPT-2's n_embd, n_layer, n_head, n_inner, n_positions also work),
 * num_key_value_heads, tie_word_embeddings, hidden_act (or activation_function),
 * torch_dtype, rms_norm_eps / layer_norm_eps, rope_theta, attention_bias, dropout keys.
 * VP_EPARSE with line and column for malformed JSON, naming the key that is missing, of
 * the wrong type, out of range or inconsistent (e.g. heads not dividing hidden). */
VP_API vp_status vp_arch_parse_hf(const char *text, size_t len, const char *name, vp_arch *out,
                                  vp_error *err);

/* The same from a file (vp_read_file's errors, then vp_arch_parse_hf's). */
VP_API vp_status vp_arch_read_hf(const char *path, vp_arch *out, vp_error *err);

/* vpipe's own model from "vpipe:LAYERS,WIDTH,HEADS,SEQ" (vp_arch_vpipe at that size).
 * VP_EINVAL for another form, a dimension outside [1, 2^20] or heads not dividing width. */
VP_API vp_status vp_arch_parse_vpipe(const char *text, vp_arch *out, vp_error *err);

/* What a user names a model by: "vpipe:L,W,H,S" (vp_arch_parse_vpipe), a path of a
 * config.json (a name with '/' or ending in ".json": vp_arch_read_hf's errors, VP_EPARSE
 * for bad content), or a preset (VP_EINVAL naming the known ones). */
VP_API vp_status vp_arch_resolve(const char *name_or_path, vp_arch *out, vp_error *err);

/* Checks the fields are positive and consistent. VP_EINVAL naming the field. */
VP_API vp_status vp_arch_check(const vp_arch *arch, vp_error *err);

/* Parameters of the whole model (a tied head counted once; every routed expert), and of
 * them those one token passes through (the top_k routed experts of each MoE layer). */
VP_API double vp_arch_params(const vp_arch *arch);
VP_API double vp_arch_active_params(const vp_arch *arch);

/* ---- the accelerator --------------------------------------------------------------- */

/* How far to trust a figure priced on an accelerator: the errors measured against
 * published runs (the accuracy report, docs/results.md) or, for a calibrated file, the
 * leave-one-out errors of the fit. runs 0: none measured. */
typedef struct vp_expected_error {
    double step_mean, step_worst;     /* throughput: mean absolute and largest error */
    double memory_mean, memory_worst; /* largest rank's memory */
    int runs, memory_runs;            /* how many runs each figure stands on */
    char basis[96];                   /* where the figures come from */
} vp_expected_error;

typedef struct vp_gpu {
    char name[64];
    double peak_flops;    /* dense 16-bit FLOP/s */
    double memory_bytes;  /* capacity */
    double hbm_bandwidth; /* bytes/s (the optimizer step is memory-bound) */
    double intra_bw;      /* bytes/s per GPU each way inside a node */
    double inter_bw;      /* bytes/s per GPU each way between nodes */
    double intra_latency; /* seconds per message inside a node */
    double inter_latency; /* seconds per message between nodes */
    int gpus_per_node;
    double p2p_bw; /* bytes/s a pipeline send/receive reaches inside a node */
    /* How fast a pass runs. The kernel model (efficiency 0): every matrix multiply of
     * M x N x K runs at gemm_efficiency x M/(M+e) x N/(N+e) x K/(K+e) of peak, e =
     * gemm_edge (a small dimension wastes part of its tiles, waves and pipeline fill);
     * FlashAttention's kernels run the causal half of the attention FLOPs at
     * attn_efficiency_f (F) and attn_efficiency_b (B) of peak; F's and B's other kernels
     * (norms, activations, dropout, softmax, residuals) move act_traffic_f and act_traffic_b
     * bytes of memory per byte of activation F saves, at the HBM bandwidth; and every pass
     * of a layer costs layer_overhead seconds more, every pass of a pipeline chunk
     * chunk_overhead (kernel launches, synchronisation, the schedule's own step). With
     * efficiency > 0 every pass runs at that one fraction of peak instead and nothing else
     * is added (the older model; a measured cost file beats both). */
    double efficiency;
    double gemm_efficiency;              /* fraction of peak of a large matrix multiply, (0, 1] */
    double gemm_edge;                    /* elements, >= 0 */
    double act_traffic_f, act_traffic_b; /* bytes per saved byte, >= 0 */
    double attn_efficiency_f, attn_efficiency_b; /* (0, 1] */
    /* FlashAttention-2's rates relative to attn_efficiency_f and _b, [0, 1]: 1 (or 0) where
     * those are FlashAttention-2's own (Ampere) (vp_attn_kernel) */
    double attn_fa2_f, attn_fa2_b;
    double layer_overhead, chunk_overhead; /* seconds, >= 0 */
    /* Communication and the optimizer: the share of a link's bandwidth collectives and
     * sends reach, and of HBM's the optimizer's fused kernels reach, (0, 1]. */
    double comm_efficiency, hbm_efficiency;
    /* What a process holds beyond its tensors: the CUDA context and library workspaces per
     * GPU, buffers per communicator it joins, and the caching allocator's cached-but-free
     * blocks per allocated byte at the peak. */
    double context_bytes, comm_buffer_bytes, frag_fraction;
    /* The host link (offload, sim.h): what one GPU's copies to and from host memory reach
     * each way (0: unknown; a schedule that offloads cannot be priced), and the host memory
     * it may fill (0: unknown, not checked). */
    double host_bw;           /* bytes/s */
    double host_memory_bytes; /* per GPU */
    vp_expected_error expected;
    /* FP8 matrix multiplies (vp_workload.fp8): dense FP8 FLOP/s of the tensor cores with
     * per-tensor or per-block scales (0: no FP8, as on the A100), and with MXFP8's hardware
     * block scales (0: none, as on Hopper). */
    double fp8_peak_flops, mxfp8_peak_flops;
} vp_gpu;

/* Built-in accelerators (datasheets; design/models.md §3): a100-80gb, h100-80gb,
 * h200-141gb, h800-80gb, gh200-96gb (Grace Hopper: the H100's compute behind NVLink-C2C to
 * the Grace CPU's memory), b200, gb200, mi300x, mi325x, mi355x, each with the kernel model
 * of its class and the host link of its host (PCIe Gen4 or Gen5 x16, NVLink-C2C;
 * src/price/gpus.c says from which evidence) and the accuracy measured for it
 * (vp_gpu.expected). */
VP_API int vp_gpu_preset_count(void);
VP_API const char *vp_gpu_preset_name(int i);
VP_API vp_status vp_gpu_preset(const char *name, vp_gpu *out, vp_error *err);

/* Reads an accelerator JSON object: {"name": "...", "base": "a100-80gb", "peak_tflops":
 * 312, "memory_gib": 80, "hbm_tb_s": 2.039, "intra_node_gb_s": 300, "inter_node_gb_s":
 * 25, "intra_node_latency_us": 3, "inter_node_latency_us": 10, "gpus_per_node": 8,
 * "p2p_gb_s": 47.5, "gemm_efficiency": 0.87, "gemm_edge": 128, "act_traffic_f": 4.1,
 * "act_traffic_b": 2.8, "attn_efficiency_f": 0.6, "attn_efficiency_b": 0.5, "attn_fa2_f":
 * 0.54, "attn_fa2_b": 0.57, "layer_overhead_us": 40, "chunk_overhead_us": 300, "comm_efficiency":
 * 0.8, "hbm_efficiency": 0.8, "context_gib": 0.6, "comm_buffer_gib": 0.15, "frag_fraction": 0.05,
 * "host_gb_s": 25, "host_memory_gib": 128, "expected_step_error": 0.05, "expected_step_worst": 0.1,
 * "expected_memory_error": 0.05, "expected_memory_worst": 0.1, "expected_runs": 10,
 * "expected_memory_runs": 3, "expected_basis": "...", "fp8_peak_tflops": 1979, "mxfp8_peak_tflops":
 * 0} or, for one fraction of peak for every pass, "efficiency": 0.5 in place of the four kernel
 * keys. With "base" every other key is optional and overrides the preset ("efficiency" switches to
 * the one fraction); without it the first nine are required ("name" is optional; "p2p_gb_s"
 * defaults to intra_node_gb_s, the attention efficiencies to gemm_efficiency, the
 * FlashAttention-2 ratios, communication and HBM efficiencies to 1 and the rest to 0, as
 * files written before they existed mean: "host_gb_s" and "host_memory_gib" 0 is unknown).
 * VP_EPARSE naming the key. */
VP_API vp_status vp_gpu_parse_json(const char *text, size_t len, vp_gpu *out, vp_error *err);

/* Preset name, or path of such a JSON file (same rule as vp_arch_resolve). */
VP_API vp_status vp_gpu_resolve(const char *name_or_path, vp_gpu *out, vp_error *err);

/* How far to trust what is priced on accelerator `gpu` with expected error e, in one
 * sentence (the mean and worst throughput and memory errors measured, how many runs they
 * stand on and where they come from; or that none was measured) into buf; returns buf. */
VP_API const char *vp_price_expected_text(const char *gpu, const vp_expected_error *e, char *buf,
                                          size_t size);

/* The accelerator as one JSON object in the form vp_gpu_parse_json reads (every key, and
 * "name"); new string (caller frees with free()), NULL when memory runs out. */
VP_API char *vp_gpu_json(const vp_gpu *gpu);

/* ---- the training setup ------------------------------------------------------------ */

/* Recomputation (vp_recompute, schedule.h) is priced once, in one of two places:
 * - a schedule without R passes is priced with the workload's recompute inside B
 *   (Megatron's activation checkpointing): selective recomputes the attention core in B;
 *   full keeps each layer's input and B recomputes the layer's F, one layer at a time
 *   (that layer in the workspace);
 * - a schedule with R passes (vp_schedule.recompute, e.g. --recompute, 1f1b-r) recomputes
 *   in them: F makes the stage's whole activations and keeps until R only what the mode
 *   keeps (vp_price_stage.hold_bytes), R takes r_ms and rebuilds the rest, B's time
 *   excludes it, and no recomputed layer sits in the workspace. The workload's recompute
 *   must then be none or the schedule's mode (VP_EINVAL otherwise), so nothing is counted
 *   twice. vpipe's own model recomputes only this way, as its runtime does (its workload
 *   recompute must be none). */

/* How context parallelism exchanges keys and values (the Ultra-Scale Playbook's two):
 * a ring of point-to-point sends, each overlapped with the attention of the block at hand
 * (ring attention), or one all-gather of the whole sequence's keys and values before the
 * attention (and a reduce-scatter of their gradients after its backward). */
typedef enum { VP_CP_P2P = 0, VP_CP_ALLGATHER = 1 } vp_cp_comm;

/* FP8 matrix multiplies, by recipe: off (16-bit), per-tensor current scaling
 * ("tensorwise": Transformer Engine's FP8-CS, torchao's float8), 128-element blocks
 * ("blockwise": 1 x 128 activations and 128 x 128 weights, DeepSeek-V3's), MXFP8
 * (32-element blocks with power-of-two scales, Blackwell's) and per-tensor delayed scaling
 * ("delayed": scales from an amax history, Transformer Engine's and Megatron-LM's default
 * recipe). What each costs and keeps: src/price/fp8.c. */
typedef enum {
    VP_FP8_OFF = 0,
    VP_FP8_TENSORWISE = 1,
    VP_FP8_BLOCKWISE = 2,
    VP_FP8_MXFP8 = 3,
    VP_FP8_DELAYED = 4
} vp_fp8;

/* How the expert-parallel all-to-alls move tokens: NCCL's all-to-all of every token-expert
 * row (Megatron-LM's alltoall dispatcher), or as DeepEP and NVIDIA's HybridEP do, each token
 * sent once over the network to every other node holding one of its experts, then forwarded
 * over NVLink to the GPUs holding them (DeepSeek-V3's report, arXiv 2412.19437, §3.2.2). */
typedef enum { VP_EP_ALLTOALL = 0, VP_EP_DEEPEP = 1 } vp_ep_dispatch;

/* "alltoall", "deepep"; NULL outside the enum. */
VP_API const char *vp_ep_dispatch_name(vp_ep_dispatch d);

/* Which experts a token's router picks, both balanced: k drawn at random (what a balanced
 * trained router approaches, and Megatron-LM's --moe-router-force-load-balancing, random
 * logits), or round-robin, token t taking experts tk .. tk + k - 1 modulo E (the fake
 * balanced gate NeMo AutoModel's benchmarks run): k consecutive experts, so a token reaches
 * one rank or a few and DeepEP's dispatch (vp_ep_dispatch) sends it there once. */
typedef enum { VP_ROUTING_RANDOM = 0, VP_ROUTING_ROUND_ROBIN = 1 } vp_ep_routing;

/* "random", "round-robin"; NULL outside the enum. */
VP_API const char *vp_ep_routing_name(vp_ep_routing r);

/* Which FlashAttention kernels run (with vp_workload.flash): the fused kernels of the
 * accelerator's attention rates (FlashAttention-3, cuDNN's and Transformer Engine's fused
 * attention on Hopper; FlashAttention-2 on Ampere, where it is the best there is), or
 * FlashAttention-2 itself (PyTorch's scaled_dot_product_attention on Hopper until cuDNN's
 * kernels became its default: vp_gpu.attn_fa2_f and attn_fa2_b). */
typedef enum { VP_ATTN_FUSED = 0, VP_ATTN_FA2 = 1 } vp_attn_kernel;

/* "fused", "fa2"; NULL outside the enum. */
VP_API const char *vp_attn_kernel_name(vp_attn_kernel k);

/* The framework that runs a real model, where frameworks keep and recompute differently
 * (vp_workload.framework). Megatron-LM (and NeMo, Megatron-Bridge: Transformer Engine's
 * layers) is what the tensor tables, the FP8 copies and the loss describe. torchtitan
 * differs in three places: its selective recomputation is the per-op policy
 * (selective_ac_option "op": each layer keeps its input and the outputs of the odd-numbered
 * matrix multiplies, query, value, gate and down, and of the attention kernel; B
 * recomputes the key, output and up projections and the elementwise kernels), priced for
 * dense layers of grouped-query attention and a SwiGLU MLP; its loss upcasts the logits
 * and runs log_softmax eagerly (8 bytes a logit beside the saved fp32 log-probabilities:
 * their gradient and log_softmax's backward output); and its FP8 (torchao's Float8Linear)
 * casts the weights at each use, keeping no FP8 copies, and saves the linears' inputs at
 * 16 bits. Its kernels are priced fused, as torch.compile runs them; without compile
 * (vp_workload.eager) its Llama layers' elementwise work runs one eager kernel per op. */
typedef enum { VP_FRAMEWORK_MEGATRON = 0, VP_FRAMEWORK_TORCHTITAN = 1 } vp_framework;

/* "megatron", "torchtitan"; NULL outside the enum. */
VP_API const char *vp_framework_name(vp_framework f);

/* Megatron-LM's --recompute-modules: the submodules its selective recomputation reruns in
 * B (vp_workload.recompute_modules, a set of these; none given: core_attn, its default).
 * Each drops from F what that submodule alone keeps, and B rebuilds it: core_attn the
 * attention matrices (nothing with FlashAttention); layernorm the two norms' outputs (the
 * QKV and FC1 inputs); mla_up_proj latent attention's queries, keys and values (its
 * up-projections run again); mlp a dense MLP's inner activations (its linears run again);
 * moe_act the routed experts' activation outputs (their FC2 inputs); shared_experts the
 * shared experts' inner activations (their linears again). */
typedef enum {
    VP_RECOMPUTE_CORE_ATTN = 1,
    VP_RECOMPUTE_LAYERNORM = 2,
    VP_RECOMPUTE_MLA_UP_PROJ = 4,
    VP_RECOMPUTE_MLP = 8,
    VP_RECOMPUTE_MOE_ACT = 16,
    VP_RECOMPUTE_SHARED_EXPERTS = 32
} vp_recompute_module;
#define VP_RECOMPUTE_MODULES 6 /* how many there are */

/* Reads module names separated by commas, spaces or '+' ("layernorm,moe_act") into a set
 * of vp_recompute_module; an unknown name or an empty list is refused (VP_EINVAL). */
VP_API vp_status vp_recompute_modules_parse(const char *text, unsigned *out, vp_error *err);
/* The set's names in the enum's order, comma-separated, into buf (size bytes); returns
 * buf ("" for the empty set). */
VP_API const char *vp_recompute_modules_text(unsigned set, char *buf, size_t size);

/* The names of vp_cp_comm ("p2p", "allgather") and vp_fp8 ("off", "tensorwise",
 * "blockwise", "mxfp8", "delayed"); NULL outside the enums. */
VP_API const char *vp_cp_comm_name(vp_cp_comm c);
VP_API const char *vp_fp8_name(vp_fp8 f);

/* The FP8 recipe a planner tries on gpu: MXFP8 where it has MXFP8 tensor cores, else
 * per-tensor current scaling (tensorwise) where it has FP8, else off. */
VP_API vp_fp8 vp_price_fp8_best(const vp_gpu *gpu);
/* A ZeRO stage in words ("no ZeRO", "ZeRO-1 (distributed optimizer)", "ZeRO-2 (gradients
 * sharded)", "ZeRO-3 (FSDP)"); NULL outside 0..3. */
VP_API const char *vp_zero_text(int zero);

/* vp_workload.dp_overlap: the data-parallel reduction overlapped as frameworks run it. */
#define VP_OVERLAP_MODELLED (-1.0)

/* Bytes per parameter of each model state. */
typedef struct vp_precision {
    int param;   /* the weights the passes read (2 for bf16, 4 for fp32) */
    int grad;    /* gradient accumulation and reduction (4; 2 as --grad-reduce-in-bf16) */
    int master;  /* fp32 master weights (4), 0 when the weights are fp32 already */
    int moments; /* optimizer moments (Adam: 4 + 4) */
} vp_precision;

/* How the model is trained: sequence and microbatch size, the tensor- and data-parallel
 * degrees and their options, recomputation, precisions, overlap and reserve. (The
 * pipeline's shape, p and the microbatches per step, is the schedule's.) */
typedef struct vp_workload {
    int seq;                    /* tokens per sequence */
    int mbs;                    /* sequences per microbatch */
    int tp;                     /* tensor-parallel degree t */
    bool sp;                    /* sequence parallelism (with tp > 1) */
    int dp;                     /* data-parallel degree d */
    int zero;                   /* ZeRO stage over the sharding group (vp_zero_text, design/
                                   models.md): 0 none; 1 master weights and moments split
                                   (Megatron's distributed optimizer); 2 gradients too, reduce-
                                   scattered every microbatch; 3 parameters too, each layer
                                   all-gathered in F, B and W (FSDP2, Megatron-FSDP) */
    bool flash;                 /* FlashAttention: no s x s matrix kept */
    vp_attn_kernel attn_kernel; /* its kernels (vp_attn_kernel) */
    vp_framework framework;     /* what runs the model (vp_framework; a real model only) */
    bool eager;                 /* torchtitan without torch.compile: each layer's norms,
                                   rotary embedding and SwiGLU gate, and torchao's FP8
                                   casts, run one eager kernel per op (speed.c); the
                                   memory is the compiled run's */
    vp_recompute recompute;     /* inside B; a schedule with R passes recomputes in them */
    unsigned recompute_modules; /* with selective under Megatron-LM: a set of
                                   vp_recompute_module (0: core_attn) */
    vp_precision prec;
    double dp_overlap;    /* share of the DP reduction hidden behind compute, [0, 1], or
                             VP_OVERLAP_MODELLED (the default): the frameworks' overlap */
    bool tp_overlap;      /* TP collectives pipelined with the linears they feed
                             (Megatron-LM's --tp-comm-overlap) */
    bool pp_overlap;      /* pipeline sends overlapped with compute; else (the default)
                             they block both ends, as Megatron-LM's 1F1B does */
    double reserve_bytes; /* per rank, beyond what vp_rank_memory names (default 0) */
    /* Context parallelism: cp ranks share each sequence, seq / cp tokens each in 2 cp
     * chunks (chunk i and 2 cp - 1 - i, so causal attention balances), exchanging keys and
     * values as cp_comm says. */
    int cp;
    vp_cp_comm cp_comm;
    /* Expert parallelism (MoE models): the experts of a layer split over ep ranks, each
     * expert's matrices over etp; the expert layers fold the same GPUs as ep x etp x
     * expert-data-parallel (tp x cp x dp of them per pipeline rank), tokens dispatched to
     * their experts and combined back by all-to-alls over the ep ranks. */
    int ep, etp;
    /* Megatron-LM's --overlap-moe-expert-parallel-comm (the combined 1F1B): each forward
     * runs overlapped with the backward after it on its device, one's all-to-all hidden
     * under the other's compute (DualPipe's F&B pairs overlap always). */
    bool ep_overlap;
    vp_ep_dispatch ep_dispatch; /* how the all-to-alls move tokens (vp_ep_dispatch) */
    vp_ep_routing ep_routing;   /* which experts a token picks (vp_ep_routing) */
    vp_fp8 fp8;                 /* the linears' matrix multiplies in FP8 (vp_fp8) */
    bool fp8_params; /* with fp8: the FP8 copy is the weight (Megatron-LM's --fp8-param-gather,
                        torchtitan's float8 all-gather): no 16-bit copy of the FP8 linears'
                        weights, gathered in FP8 */
} vp_workload;

/* Whether selective recomputation is worth a planner's try under work: it keeps less than
 * none (Megatron-LM's core_attn keeps all with FlashAttention; its other recompute modules
 * do not) and is priced for arch (torchtitan's per-op policy: dense layers of grouped-query
 * attention and a SwiGLU MLP). */
VP_API bool vp_price_selective_differs(const vp_arch *arch, const vp_workload *work);

/* seq (the model's positions, at most 2048), mbs 1, tp 1, dp 1, nothing on, precision
 * from the model (16-bit: 2/4/4/8 = 18 bytes per parameter; fp32: 4/4/0/8), the DP
 * reduction overlapped as frameworks do (VP_OVERLAP_MODELLED), no reserve. */
VP_API vp_workload vp_workload_default(const vp_arch *arch);

/* The accuracy report's figures for runs of one kind (docs/results.md §7: the published
 * mixture-of-experts, FP8, context-parallel and FSDP runs, priced on the accelerators they
 * ran on): of the kinds work has (EP > 1: MoE; FP8 on: FP8; CP > 1: CP; ZeRO 3: FSDP), the
 * one whose runs vpipe misses most on average into *e (its basis names it and the other
 * kinds); e->runs 0 when work has none of them. */
VP_API void vp_price_expected_kind(const vp_workload *work, vp_expected_error *e);

/* vp_price_expected_kind's e in one sentence, as vp_price_expected_text says an
 * accelerator's; "" when e->runs is 0. Returns buf. */
VP_API const char *vp_price_expected_kind_text(const vp_expected_error *e, char *buf, size_t size);

/* The optimizer's states (--optimizer-dtype). */
typedef enum {
    VP_OPTIMIZER_FP32,        /* fp32 master weights beside the 16-bit ones, fp32 moments */
    VP_OPTIMIZER_BF16,        /* the 16-bit weights are the master, bf16 moments: a model cast
                                 to bf16 and trained with torch.optim.Adam */
    VP_OPTIMIZER_BF16_MOMENTS /* fp32 master weights, bf16 moments: Megatron-LM's precision-
                                 aware optimizer with --exp-avg-dtype and --exp-avg-sq-dtype
                                 bf16 */
} vp_optimizer_dtype;

/* "fp32", "bf16", "bf16-moments"; NULL when out of range. */
VP_API const char *vp_optimizer_dtype_name(vp_optimizer_dtype dtype);

/* Sets work->prec's master and moments as dtype keeps them (a 16-bit model's; the default
 * workload is VP_OPTIMIZER_FP32's). */
VP_API void vp_workload_set_optimizer(vp_workload *work, vp_optimizer_dtype dtype);

/* What work->prec's optimizer states are (vp_workload_set_optimizer's inverse): fp32
 * moments are VP_OPTIMIZER_FP32 whatever the master (an fp32 model has none). */
VP_API vp_optimizer_dtype vp_workload_optimizer(const vp_workload *work);

/* vp_recompute_parse and vp_recompute_name (schedule.h) name the recomputation. */

/* The model as one JSON object in *out (new string, caller frees with free()): name,
 * layers, hidden, heads, kv_heads, ffn, max_positions, dtype_bytes, vocab, ffn_kind
 * ("gelu"/"swiglu"/"relu2"), norm ("layernorm"/"rmsnorm"), tied, bias, dropout,
 * learned_positions, impl ("megatron"/"vpipe"), params, and those of head_dim, "mla",
 * "window" and "moe" (with active_params) the model has. With work (NULL: none), also
 * "workload" {seq, mbs, tp, cp, ep, etp, sp, flash, recompute, fp8} and "parts" {layer,
 * embedding, head}, each {params, act_bytes, keep_bytes, flops_f, flops_b, flops_w,
 * flops_r, saved: [{name, bytes, keep: "F-B"|"F-W"|"B-W"}]}: one microbatch on one rank
 * (vp_price_part_facts; "layer" is the model's last layer), and with more than one kind of
 * layer "layer_kinds" (each such a part with mlp "dense"|"moe", attention "full"|"window"
 * and its number of layers). VP_EINVAL as vp_arch_check (and vp_price_check with work),
 * VP_ENOMEM. */
VP_API vp_status vp_arch_json(const vp_arch *arch, const vp_workload *work, char **out,
                              vp_error *err);

/* ---- what a layer, the embedding and the head cost --------------------------------- */

typedef enum { VP_PRICE_LAYER = 0, VP_PRICE_EMBEDDING = 1, VP_PRICE_HEAD = 2 } vp_price_part;

/* When a saved tensor lives: from F until B, from F until W, or from B until W. */
typedef enum { VP_KEEP_F_B = 0, VP_KEEP_F_W = 1, VP_KEEP_B_W = 2 } vp_keep;

typedef struct vp_saved_tensor {
    const char *name; /* static, e.g. "softmax output" */
    double bytes;     /* per microbatch on one rank */
    vp_keep keep;
} vp_saved_tensor;

/* Lists the tensors one part saves for one microbatch under work (recomputation,
 * FlashAttention and TP/SP applied; arch and work must pass vp_price_check) into
 * out[0..cap); returns how many there are (call with cap 0 to count). */
VP_API int vp_price_tensors(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                            vp_saved_tensor *out, int cap);

typedef struct vp_price_facts {
    double params;                    /* parameters on one rank (TP-sharded) */
    double act_bytes;                 /* M_B: added by F, per microbatch */
    double keep_bytes;                /* M_W: left by B for W, per microbatch */
    double flops_f, flops_b, flops_w; /* per microbatch on one rank; b excludes recompute */
    double flops_r;                   /* recomputation B adds (0 without) */
} vp_price_facts;

/* Facts of one part under work: parameters, M_B and M_W (sums of vp_price_tensors), and
 * FLOPs per pass. Pure. VP_EINVAL as vp_price_check (without an accelerator). */
VP_API vp_status vp_price_part_facts(const vp_arch *arch, const vp_workload *work,
                                     vp_price_part part, vp_price_facts *out, vp_error *err);

/* ---- pricing ------------------------------------------------------------------------ */

typedef enum {
    VP_SPLIT_TIME = 0,   /* balance per-device pass time (embedding and head weighed) */
    VP_SPLIT_MEMORY = 1, /* balance per-device bytes: model states plus activations times
                            the microbatches the schedule keeps alive on each stage */
    VP_SPLIT_EVEN = 2    /* equal shares, remainder to the middle stages (vp_split_layers;
                            k·p − 2 layers give the papers' rule: ends one fewer); how
                            vpipe's own runtime splits its model */
} vp_split_goal;

/* What is priced. Everything is borrowed. */
typedef struct vp_price_setup {
    const vp_arch *arch;
    const vp_gpu *gpu;
    const vp_workload *work;
    vp_split_goal split;         /* used when layers_per_stage is NULL */
    const int *layers_per_stage; /* [route_len] explicit split, or NULL */
    int n_layers_per_stage;
    const vp_costs *measured; /* measured ms per pass of one device's slice (and hop c), or
                                 NULL for FLOPs at the accelerator's efficiency */
} vp_price_setup;

/* Checks the setup before anything is priced: the model's and (when given) the
 * accelerator's fields, degrees >= 1, heads and KV heads divisible by tp, the sequence
 * within the model's positions and (CP > 1) divisible by 2 x CP (2 chunks a rank),
 * precision and reserve sane, vpipe's own model only without TP, CP, FlashAttention or
 * recomputation. VP_EINVAL with a message naming the problem. */
VP_API vp_status vp_price_check(const vp_price_setup *setup, vp_error *err);

/* One stage of a schedule, priced. Times in milliseconds, bytes per microbatch. */
typedef struct vp_price_stage {
    int l0, l1;       /* layers [l0, l1) */
    bool first, last; /* holds the embedding / the final norm, head and loss */
    int device;
    double params;                /* parameters held */
    double expert_params;         /* of them, the routed experts' */
    double act_bytes, keep_bytes; /* M_B and M_W of the stage */
    double f_ms, b_ms, w_ms;      /* pass times (BW = B + W; an F&B pair: vp_price_layout) */
    double a2a_f_ms, a2a_b_ms;    /* of f_ms and b_ms, the expert-parallel all-to-alls (and
                                     the expert-tensor-parallel gathers) */
    double a2a_hidden_ms;         /* of a2a_f_ms + a2a_b_ms, what overlapped F&B pairs hide
                                     (mean per microbatch through the stage; net of the
                                     compute the communication slows): DualPipe's pairs, or
                                     the combined 1F1B's (vp_workload.ep_overlap); 0 before
                                     a schedule is priced */
    double r_ms;                  /* recomputation: included in b_ms, or the R pass's time
                                     when the schedule recomputes in R passes */
    double hold_bytes;            /* of act_bytes, what F keeps until R when the schedule
                                     has R passes (full: each layer's input, on vpipe's own
                                     model the stage's input and targets; selective: all
                                     but the attention scores); act_bytes otherwise */
    double off_bytes, copy_ms;    /* offload: what an O moves to host (the schedule's share
                                     of hold_bytes) and each way's copy over the host link;
                                     0 when the stage offloads nothing */
    double tail_bytes;            /* what its B leaves until the step ends (vp_cost_model:
                                     torchtitan's pipeline keeps each input gradient) */
} vp_price_stage;

/* Per-rank memory, bytes, as a process holds it: its tensors (what the allocator hands
 * out at the peak), the allocator's cached blocks on top of them, and what the process
 * holds beside the allocator. */
typedef struct vp_rank_memory {
    double params, grads, optimizer; /* model states of the rank's stages */
    double activations;              /* the schedule's peak of live activations */
    double buffers;       /* pipeline receive buffers: one activation or gradient per remote
                             neighbour of each stage (torchtitan: one per microbatch each
                             way, as torch.distributed.pipelining allocates them) */
    double workspace;     /* one layer recomputed at a time (full recompute inside B);
                             vpipe's scratch */
    double logits;        /* on the rank with the head: its 16-bit logits while the loss runs
                             (beside the fp32 softmax F saves); with vocabulary parallelism
                             every rank, its shard's */
    double gathers;       /* all-gather buffers: with sequence parallelism Megatron-LM gathers
                             each linear's input into one reused buffer of the whole
                             sequence; --tp-overlap's communication buffers hold another */
    double fp8_weights;   /* FP8 training: the FP8 copies of the linears' weights each recipe
                             keeps beside the 16-bit ones (vp_fp8) */
    double allocated;     /* the sum of the items above */
    double fragmentation; /* cached-but-free blocks: frag_fraction x allocated */
    double reserved;      /* allocated + fragmentation */
    double context;       /* the CUDA context and library workspaces */
    double comm;          /* communication buffers: comm_buffer_bytes per communicator the
                             rank joins (TP, DP, each pipeline neighbour, the tied
                             embedding's pair) */
    double reserve;       /* vp_workload.reserve_bytes */
    double total;         /* reserved + context + comm + reserve */
    double host;          /* host memory its offloads hold at most (not in total: another
                             pool) */
} vp_rank_memory;

/* The stages of one schedule shape priced under a setup, before simulation: what a
 * planner checks first (model states per rank) and what a cost-aware family is built
 * with (costs, mem). */
typedef struct vp_price_layout {
    int p, S, route_len;
    int *layers_per_stage; /* [route_len] */
    vp_price_stage *stage; /* [S] */
    double hop_ms;         /* mean pipeline hop between devices */
    vp_rank_memory *fixed; /* [p] every item but activations (totals without them), before
                              the per-microbatch items: */
    /* [p] what each microbatch of a step adds to fixed's items (torchtitan's pipeline: its
     * receive buffers, its last stage's logits); m microbatches hold fixed + m times these */
    vp_rank_memory *per_microbatch;
    vp_costs costs;       /* ms per device slice for building a cost-aware family: the
                             measured costs as given, or the stages' times (dev_* owned here) */
    vp_memcfg mem;        /* the ZB split with R = sum M_W / sum M_B, for building */
    vp_cost_model *cm;    /* per-stage times (ms), hop and bytes: what the simulator replays
                             (units: one microbatch of the mean device slice) */
    double *slice_ms;     /* [3p] storage behind costs.dev_* (NULL with measured costs) */
    double unit_bytes;    /* bytes of one unit of cm (the mean device's M_B) */
    int vocab_parallel;   /* 1: priced with vocabulary parallelism (the shape's): the first
                             and last stage keep only the positions and the final norm,
                             every rank holds a p-th of the token table and the head and
                             runs a p-th of their passes (EF, EB, S, T; costs.e, s, t) */
    double frag_fraction; /* the allocator's cached share of allocated bytes (the
                             accelerator's; 0 for vpipe's own model) */
    bool ep_pairs;        /* vp_workload.ep_overlap with all-to-alls to hide: vp_price_build
                             fuses each forward a device runs right before a backward (of
                             another microbatch) into one F&B pair (the combined 1F1B) */
} vp_price_layout;

/* Prices the stages of shape (a schedule; its op lists are read only for VP_SPLIT_MEMORY,
 * its recompute says where recomputation is priced: see vp_workload). Caller frees with
 * vp_price_layout_free. VP_EINVAL (vp_price_check, a split that does not fit: wrong length
 * or sum, an empty middle stage, fewer layers than middle stages; a workload recompute
 * other than none beside a schedule's R passes of another mode), VP_ENOMEM. */
VP_API vp_status vp_price_layout_new(const vp_price_setup *setup, const vp_schedule *shape,
                                     vp_price_layout **out, vp_error *err);
VP_API void vp_price_layout_free(vp_price_layout *layout);

/* Lower bounds of what any schedule of the layout's shape with m microbatches prices at,
 * known before building or simulating one (what a search prunes with). */
typedef struct vp_price_bound {
    double makespan_s;       /* per device, the larger of: the forward chain before its
                                first stage, then all its passes back to back; the whole
                                forward chain and the backward chain down to its last
                                stage, then all its B and W (DualPipe's two routes: the
                                passes alone) */
    double step_time_s;      /* makespan_s + optimizer step + exposed DP reduction */
    double memory_max_bytes; /* every item but activations, plus what one microbatch holds
                                on the device when it reaches the device's last stage */
} vp_price_bound;

/* Fills *out for layout (made by vp_price_layout_new under setup) and m microbatches.
 * VP_EINVAL for m < 1, VP_ENOMEM. */
VP_API vp_status vp_price_layout_bound(const vp_price_setup *setup, const vp_price_layout *layout,
                                       int m, vp_price_bound *out, vp_error *err);

/* The same for schedules like `like` (of the layout's shape, e.g. its family built small):
 * what overlapped pairs may hide is taken off only when like has F&B pairs or the layout
 * fuses them (ep_pairs), so the bound is tighter for the other families of a shape. */
VP_API vp_status vp_price_layout_bound_of(const vp_price_setup *setup,
                                          const vp_price_layout *layout, const vp_schedule *like,
                                          int m, vp_price_bound *out, vp_error *err);

/* Builds family for spec with the layout's per-device costs and memory model (layout made
 * for the family's shape at spec->p, offloading as spec does); when the generator refuses
 * unequal devices, with their means (*mean_costs set); with spec->offload, its O and L
 * placed with the layout's copy times (vp_schedule_offload_place); with layout->ep_pairs,
 * its forward-then-backward pairs fused (src/price/overlap.c). Caller frees *out.
 * Errors of vp_family_build and of the placement. */
VP_API vp_status vp_price_build(const vp_price_layout *layout, const char *family,
                                const vp_spec *spec, vp_schedule **out, bool *mean_costs,
                                vp_error *err);

/* Refills layout's offload figures (each stage's off_bytes and copy_ms, its cost model's
 * off, o and l) for the shares of s (of the layout's shape; its ops are not read), as
 * vp_price_layout_new does for its shape: then schedules offloading like s price on it.
 * VP_EINVAL for another shape, or when s offloads on an accelerator without a host link
 * (and no measured copy times). */
VP_API vp_status vp_price_layout_offload(vp_price_layout *layout, const vp_price_setup *setup,
                                         const vp_schedule *s, vp_error *err);

/* Every rank's memory for schedule s (the layout's shape) from its op order alone,
 * without timing it (peaks depend only on the orders): the layout's fixed items, s->m
 * times its per-microbatch ones and each device's activation peak, and its host bytes
 * when s offloads, into memory[p] (caller storage); the same figures vp_price_on_layout
 * reports, up to rounding. VP_EINVAL for another shape, VP_ENOMEM. */
VP_API vp_status vp_price_layout_memory(const vp_price_layout *layout, const vp_schedule *s,
                                        vp_rank_memory *memory, vp_error *err);

typedef struct vp_price_result {
    char family[32];
    char model[64], gpu[64];
    int p, S, m, route_len, tp, dp, gpus;
    int ep, etp; /* expert parallelism (1, 1 for a dense model) */
    int cp;      /* context parallelism (1: none), exchanging as cp_comm says */
    vp_cp_comm cp_comm;
    int seq, mbs;
    int *layers_per_stage; /* [route_len] */
    vp_price_stage *stage; /* [S], times as simulated */
    double hop_ms;
    double makespan_s;  /* the simulator's makespan */
    double optimizer_s; /* optimizer step (memory-bound) */
    double dp_reduce_s; /* DP gradient reduction; dp_exposed_s of it is not overlapped */
    double dp_exposed_s;
    double step_time_s; /* makespan + optimizer + exposed DP reduction */
    double bubble;      /* the simulator's bubble */
    double model_flops; /* per step over all GPUs: F + B + W, no recompute */
    double mfu;         /* model_flops / (gpus x peak x step time) */
    double samples_per_s_per_gpu, tokens_per_s, tokens_per_s_per_gpu;
    vp_rank_memory *memory; /* [p] pipeline rank (device) d */
    double memory_max_bytes;
    int memory_max_rank;
    double capacity_bytes;
    bool fits;           /* memory_max_bytes <= capacity_bytes, and with offload every rank's
                            host bytes <= the accelerator's host memory (when known) */
    double margin_bytes; /* the room below the capacity a plan keeps on this accelerator by
                            default (vp_price_margin_default) */
    bool tight;          /* fits with less room than margin_bytes: within the memory error
                            measured on the accelerator, the run may not fit */
    /* offload (0 without): the most host memory a rank holds, the host memory per GPU, the
     * busiest copy engine's share of the makespan, and the time compute waited for copies
     * (the device that waited most) */
    double host_max_bytes, host_capacity_bytes, copy_occupancy, offload_stall_s;
    vp_expected_error expected;      /* the accelerator's: how far to trust these figures */
    vp_expected_error expected_kind; /* vp_price_expected_kind's: runs 0 for a dense run */
    bool mean_costs;                 /* vp_price_family: the generator could not build with unequal
                                        per-device costs and was given their means (priced exactly all
                                        the same) */
    vp_costs costs;  /* the mean device slice's F, B, W and hop in ms (what a title or the
                        simulate report shows; no per-device arrays) */
    vp_sim *sim;     /* the simulation (owned): times in ms, peak_bytes the activations */
    long pairs;      /* the schedule's overlapped F&B ops (DualPipe's, or the combined 1F1B's) */
    bool ep_overlap; /* priced with vp_workload.ep_overlap */
} vp_price_result;

/* Prices schedule s (validated) on layout (made by vp_price_layout_new under setup for
 * s's shape): simulation with each stage's time and bytes, itemised memory per rank, step
 * time and rates. Caller frees *out. VP_EINVAL when s has another shape, errors of
 * vp_simulate. */
VP_API vp_status vp_price_on_layout(const vp_price_setup *setup, const vp_price_layout *layout,
                                    const vp_schedule *s, vp_price_result **out, vp_error *err);

/* Prices schedule s (validated) under setup: layout, simulation with each stage's time
 * and bytes, itemised memory per rank, step time and rates. Caller frees *out with
 * vp_price_result_free. Errors of vp_price_layout_new and vp_simulate; VP_EINVAL when
 * measured costs are negative. */
VP_API vp_status vp_price_schedule(const vp_price_setup *setup, const vp_schedule *s,
                                   vp_price_result **out, vp_error *err);

/* Builds family for spec with this setup's costs (a probe build finds the shape, the
 * layout gives the per-device costs and memory model, the family is built again with
 * them, or with their means when the generator refuses unequal devices: mean_costs) and
 * prices it. *sched (optional) receives the schedule (caller frees). Errors of
 * vp_family_build and vp_price_schedule. */
VP_API vp_status vp_price_family(const vp_price_setup *setup, const char *family,
                                 const vp_spec *spec, vp_price_result **out, vp_schedule **sched,
                                 vp_error *err);

VP_API void vp_price_result_free(vp_price_result *r);

/* The room below gpu's capacity a configuration should leave, bytes: the capacity times
 * the mean memory error measured on it (vp_gpu.expected; the accuracy report's), or 10%
 * when no peak was measured on it. What `plan` keeps by default and what makes a priced
 * run that fits tight (vp_price_result.tight). */
VP_API double vp_price_margin_default(const vp_gpu *gpu);

/* What the all-to-all overlap did, in a few lines (new string, caller frees with free()):
 * the all-to-all per microbatch summed over the stages, what the overlapped pairs hid and
 * what stays exposed, per stage; or that the overlap buys nothing (a model without
 * all-to-all: EP 1 or dense) or that nothing pairs. NULL when there is nothing to say (no
 * all-to-all, no pairs, no ep_overlap) or memory runs out. */
VP_API char *vp_price_overlap_text(const vp_price_result *r);

/* The result as one JSON object (new string, caller frees with free()): family, model,
 * gpu, p, m, tp, dp, ep, etp, cp, gpus, seq, mbs, cp_comm, step_time_s, makespan_s, optimizer_s,
 * dp_reduce_s, dp_exposed_s, bubble, mfu, samples_per_s_per_gpu, tokens_per_s,
 * tokens_per_s_per_gpu, memory_per_rank (array of {rank, params, grads, optimizer, activations,
 * buffers, workspace, logits, gathers, allocated, fragmentation, reserved, context, comm, reserve,
 * total},
 * bytes), memory_max_bytes, memory_max_rank, capacity_bytes,
 * fits, margin_bytes, tight, mean_costs, layers_per_stage, hop_ms, per_stage (array of {layers,
 * device, params, expert_params, act_bytes, keep_bytes, f_ms, b_ms, w_ms, r_ms, a2a_f_ms, a2a_b_ms,
 * a2a_hidden_ms, a2a_exposed_ms: the all-to-all per microbatch an overlapped pair hides and
 * what stays exposed}), "a2a_overlap" {pairs: the schedule's F&B ops, hidden_ms and
 * exposed_ms: per microbatch summed over the stages, note: one sentence},
 * expected_error ({step_time, step_time_worst, memory, memory_worst: fractions, null when not
 * measured; runs, memory_runs, basis; kind: the same of expected_kind, null for a dense
 * run}); when s offloads, also each rank's "host" in
 * memory_per_rank, host_max_bytes, host_capacity_bytes, copy_occupancy_max, offload_stall_s
 * and per stage "offload" (its share), "off_bytes" and "copy_ms". NULL when memory runs out. */
VP_API char *vp_price_result_json(const vp_price_result *r);

#ifdef __cplusplus
}
#endif

#endif
