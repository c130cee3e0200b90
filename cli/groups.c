/* The flag groups several subcommands share: the schedule, the op limit, recomputation,
 * the real model and the layer split (into vp_request), and the model of train and
 * profile (into a vp_model_config). Parsing only: the library decides what they mean. */
#include <math.h>
#include <stddef.h>

#include "cli.h"

#define AT(field) offsetof(vp_request, field)

#define SPEC_INT(short_, field, arg_, help_)                                                       \
    {                                                                                              \
        .short_name = short_, .kind = CLI_INT, .offset = AT(field), .arg = arg_, .lo = 1,          \
        .hi = 1000000, .help = help_                                                               \
    }

static const cli_opt spec_opts[] = {
    SPEC_INT('p', p, "P", "devices (pipeline ranks)"),
    SPEC_INT('m', m, "M", "microbatches per step"),
    SPEC_INT('v', v, "V", "chunks per device for `interleaved` (default 2)"),
    {.name = "cost",
     .kind = CLI_STRING,
     .offset = AT(cost),
     .arg = "F=..,B=..,W=..,c=..,FB=..",
     .help = "costs per microbatch of one device's whole slice (default\n"
             "F=1,B=1,W=1,c=0; FB = overlapped F&B, default F+B);\n"
             "a family with v chunks per device charges 1/v per chunk pass"},
    {.name = "cost-file",
     .kind = CLI_STRING,
     .offset = AT(cost_file),
     .arg = "FILE",
     .help = "costs measured by `vpipe profile` (per stage, with the\n"
             "model's activation bytes) instead of --cost"},
    {.name = "memory-limit",
     .kind = CLI_DOUBLE,
     .offset = AT(memory_limit),
     .arg = "U",
     .lo = 1,
     .hi = 1e9,
     .help = "activation memory limit in units for zb-1p/zb-2p's greedy\n"
             "(default: p for zb-1p, 2p for zb-2p)"},
    {.name = "memory-model",
     .kind = CLI_STRING,
     .offset = AT(memory_model),
     .arg = "at-w|zb:R",
     .help = "release-at-W (default) or the ZB split, R = share of an F's\n"
             "activation that B keeps for W"},
};

const cli_group cli_spec_group = CLI_GROUP("schedule", spec_opts);

/* A count of ops, also in scientific notation (1e9), into a long. */
static int parse_max_ops(const char *flag, const char *value, void *dest) {
    double x;
    int rc = cli_parse_double(flag, value, 1, 1e18, &x);
    if (!rc && x != floor(x))
        rc = cli_error(VP_EXIT_USAGE, "%s expects a whole number of ops, got '%s'", flag, value);
    if (!rc)
        *(long *)dest = (long)x;
    return rc;
}

static const cli_opt limit_opts[] = {
    {.name = "max-ops",
     .kind = CLI_CUSTOM,
     .arg = "N",
     .parse = parse_max_ops,
     .help = "refuse schedules that may hold more ops (default 1e8: about\n"
             "2-5 GB of schedule and simulation)"},
};

const cli_group cli_limit_group = CLI_GROUP("limits", limit_opts);

/* In vp_recompute's order. */
static const char *const recompute_names[] = {"none", "selective", "full", NULL};

static const cli_opt recompute_opts[] = {
    {.name = "recompute",
     .kind = CLI_ENUM,
     .choices = recompute_names,
     .help = "recompute before each backward (an R pass): full keeps only\n"
             "each stage's input from F until R, selective drops the\n"
             "attention core (default none; 1f1b-r is 1F1B with full).\n"
             "With --model other than vpipe:...: Megatron's way instead,\n"
             "inside B (no R passes); priced once either way; plan\n"
             "--model: fixes the search's recomputation"},
};

const cli_group cli_recompute_group = CLI_GROUP("recomputation", recompute_opts);

/* In vp_offload_policy's order. */
static const char *const offload_policy_names[] = {"none", "uniform", "selective", NULL};

static const cli_opt offload_opts[] = {
    {.name = "offload",
     .kind = CLI_STRING,
     .arg = "SHARES",
     .help = "offload activations to host memory (O and L passes on each\n"
             "device's copy engine): the share of what F keeps, one for\n"
             "every stage (0.5) or one per stage (0,0.5,1), or none. A pair\n"
             "is offloaded where the copies hide between its F and its\n"
             "backward. Copy time per unit: --cost O=,L= (default the\n"
             "forward's); with --model, the accelerator's host link.\n"
             "plan: auto tries shares as one more memory lever"},
    {.name = "offload-policy",
     .kind = CLI_ENUM,
     .offset = AT(offload_policy) - AT(offload),
     .choices = offload_policy_names,
     .help = "uniform (default): every pair sends its stage's share;\n"
             "selective (PipeOffload's): the longest-lived pairs send their\n"
             "whole activation, up to the share of each device's"},
};

const cli_group cli_offload_group = CLI_GROUP("offload", offload_opts);
static const cli_opt vocab_opts[] = {
    {.name = "vocab-parallel",
     .kind = CLI_FLAG,
     .help = "vocabulary parallelism: the input embedding and the output\n"
             "layer split by vocabulary over every device, with their\n"
             "passes (EF, EB, S, T) placed into the schedule; with\n"
             "--model each rank holds 1/p of the vocabulary's bytes\n"
             "and time; a schedule file must already have the passes"},
};

const cli_group cli_vocab_group = CLI_GROUP("vocabulary", vocab_opts);

#define REAL_INT(name_, field, hi_, help_)                                                         \
    {                                                                                              \
        .name = name_, .kind = CLI_INT, .offset = AT(field), .arg = "N", .lo = 1, .hi = hi_,       \
        .help = help_                                                                              \
    }
#define REAL_FLAG(name_, field, help_)                                                             \
    { .name = name_, .kind = CLI_FLAG, .offset = AT(field), .help = help_ }
#define REAL_ENUM(name_, field, names, help_)                                                      \
    { .name = name_, .kind = CLI_ENUM, .offset = AT(field), .choices = names, .help = help_ }

/* In vp_fp8's order, then auto (VP_REQUEST_FP8_AUTO). */
static const char *const fp8_names[] = {"off",     "tensorwise", "blockwise", "mxfp8",
                                        "delayed", "auto",       NULL};
/* In vp_cp_comm's order. */
static const char *const cp_comm_names[] = {"p2p", "allgather", NULL};
/* In vp_ep_dispatch's order. */
static const char *const dispatch_names[] = {"alltoall", "deepep", NULL};
/* In vp_ep_routing's order. */
static const char *const routing_names[] = {"random", "round-robin", NULL};
/* In vp_attn_kernel's order. */
static const char *const attn_kernel_names[] = {"fused", "fa2", NULL};
/* In vp_framework's order. */
static const char *const framework_names[] = {"megatron", "torchtitan", NULL};
/* vp_optimizer_dtype's names (vp_request.optimizer_dtype). */
static const char *const optimizer_dtype_names[] = {"fp32", "bf16", "bf16-moments", NULL};

static const cli_opt real_opts[] = {
    {.name = "model",
     .kind = CLI_STRING,
     .offset = AT(model),
     .arg = "NAME|FILE",
     .help = "price the schedule for a real model, in GiB and seconds: a\n"
             "preset (vpipe model list), a Hugging Face config.json, or\n"
             "vpipe:L,W,H,S (vpipe's own GPT: layers, width, heads, seq);\n"
             "--cost then gives measured ms per pass of a device's slice"},
    {.name = "gpu",
     .kind = CLI_STRING,
     .offset = AT(gpu),
     .arg = "NAME|FILE",
     .help = "accelerator: a preset (vpipe model list) or a JSON file\n"
             "(default h100-80gb)"},
    REAL_INT("seq", seq, 1 << 30,
             "tokens per sequence (default: the model's positions, at\n"
             "most 2048)"),
    REAL_INT("mbs", mbs, 1 << 20, "sequences per microbatch (default 1)"),
    REAL_INT("tp", tp, 1 << 20, "tensor-parallel degree (default 1)"),
    REAL_FLAG("sp", sp, "sequence parallelism (with --tp > 1)"),
    REAL_INT("dp", dp, 1 << 20, "data-parallel degree (default 1)"),
    REAL_INT("ep", ep, 1 << 20,
             "expert-parallel degree of a mixture-of-experts model: its\n"
             "experts split over N ranks (default 1; EP x ETP divides\n"
             "TP x DP, the rest is expert-DP)"),
    REAL_INT("etp", etp, 1 << 20, "expert-tensor-parallel degree (default 1)"),
    {.name = "zero",
     .kind = CLI_INT,
     .offset = AT(zero),
     .arg = "[N]",
     .lo = 0,
     .hi = 3,
     .bare = "1",
     .help = "ZeRO stage over --dp (alone: 1): 0 none; 1 master weights and\n"
             "moments split (Megatron's distributed optimizer); 2 gradients\n"
             "too, reduce-scattered every microbatch; 3 weights too (FSDP),\n"
             "each layer gathered in F, B and W (plan searches 0-3 unless\n"
             "given)"},
    {.name = "flash",
     .kind = CLI_INT,
     .offset = AT(flash),
     .arg = "[0|1]",
     .lo = 0,
     .hi = 1,
     .bare = "1",
     .help = "FlashAttention (alone: 1): no s x s attention matrix kept. On\n"
             "unless given, as Megatron-LM and torchtitan run it; 0 keeps\n"
             "the matrices (as the SC21 and Zero Bubble runs did; vpipe's\n"
             "own GPT, vpipe:L,W,H,S, has no FlashAttention)"},
    REAL_ENUM("attn-kernel", attn_kernel, attn_kernel_names,
              "with FlashAttention, its kernels: fused (the default: FlashAttention-3,\n"
              "cuDNN's, Transformer Engine's on Hopper) or fa2 (FlashAttention-2:\n"
              "PyTorch's scaled_dot_product_attention on Hopper before cuDNN's\n"
              "kernels became its default)"),
    REAL_ENUM("framework", framework, framework_names,
              "what runs the model: megatron (the default: Megatron-LM, NeMo,\n"
              "Transformer Engine) or torchtitan (its per-op selective\n"
              "recompute, eager fp32 loss, torchao's FP8 casts, and the\n"
              "buffers and logits its pipeline keeps per microbatch)"),
    REAL_FLAG("eager", eager,
              "with --framework torchtitan: without torch.compile, each\n"
              "layer's norms, rotary embedding and SwiGLU gate (and torchao's\n"
              "FP8 casts) run one eager kernel per op (default: fused, as\n"
              "compile runs them)"),
    {.name = "recompute-modules",
     .kind = CLI_STRING,
     .offset = AT(recompute_modules),
     .arg = "A,B,...",
     .help = "with --recompute selective, what Megatron-LM reruns in B:\n"
             "core_attn (its default), layernorm, mla_up_proj, mlp, moe_act,\n"
             "shared_experts (its --recompute-modules)"},
    REAL_ENUM("optimizer-dtype", optimizer_dtype, optimizer_dtype_names,
              "the optimizer's states: fp32 (the default: fp32 master weights\n"
              "beside the 16-bit ones, fp32 moments); bf16-moments (fp32\n"
              "master weights, bf16 moments: Megatron-LM's precision-aware\n"
              "optimizer, as DeepSeek-V3's recipes run it); bf16 (the 16-bit\n"
              "weights are the master, bf16 moments: a model cast to bf16\n"
              "and trained with torch.optim.Adam, as NeMo AutoModel does)"),
    REAL_FLAG("tp-overlap", tp_overlap,
              "TP collectives pipelined with the linears they feed\n"
              "(Megatron-LM's --tp-comm-overlap)"),
    REAL_FLAG("pp-overlap", pp_overlap,
              "pipeline sends overlapped with compute (default: they block\n"
              "both ends, as Megatron-LM's 1F1B)"),
    REAL_FLAG("ep-overlap", ep_overlap,
              "each forward overlapped with the backward after it, one's\n"
              "all-to-all under the other's compute (Megatron-LM's\n"
              "--overlap-moe-expert-parallel-comm; DualPipe's pairs always)"),
    REAL_ENUM("ep-dispatch", ep_dispatch, dispatch_names,
              "how the all-to-alls move tokens: every token-expert row\n"
              "(NCCL's all-to-all, the default), or deepep: each token once\n"
              "over the network to every node holding its experts, then\n"
              "over NVLink once to each rank holding one (DeepEP, HybridEP)"),
    REAL_ENUM("ep-routing", ep_routing, routing_names,
              "which experts a token picks, both balanced: k at random (the\n"
              "default), or round-robin: token t the k from t*k on (NeMo\n"
              "AutoModel's fake balanced gate), one rank or a few"),
    {.name = "reserve",
     .kind = CLI_DOUBLE,
     .offset = AT(reserve),
     .arg = "GIB",
     .lo = 0,
     .hi = 1e6,
     .help = "per-rank memory to keep free beyond every item priced\n"
             "(default 0)"},
    {.name = "dp-overlap",
     .kind = CLI_DOUBLE,
     .offset = AT(dp_overlap),
     .arg = "F",
     .lo = 0,
     .hi = 1,
     .help = "share of the DP reduction hidden behind compute (default:\n"
             "overlapped bucket by bucket with the backward, as frameworks do)"},
    REAL_ENUM("fp8", fp8, fp8_names,
              "the linears' matrix multiplies in FP8 (default off): per-tensor\n"
              "current (tensorwise) or delayed scaling, 128-element blocks\n"
              "(blockwise), MXFP8 (Blackwell, MI355X), priced at the\n"
              "accelerator's FP8 rate with each recipe's casts and FP8\n"
              "weight copies; plan: auto tries off and the accelerator's best"),
    REAL_FLAG("fp8-params", fp8_params,
              "with --fp8: the FP8 copies are the weights, no 16-bit copy kept\n"
              "(Megatron-LM's --fp8-param-gather, set by NVIDIA's FP8 recipes)"),
    {.name = "grad-bytes",
     .kind = CLI_INT,
     .offset = AT(grad_bytes),
     .arg = "N",
     .lo = 2,
     .hi = 4,
     .help = "gradient bytes: 4 accumulates and reduces in fp32 (the\n"
             "default), 2 in 16 bits (Megatron-LM's --grad-reduce-in-bf16,\n"
             "NVIDIA's performance recipes)"},
    REAL_INT("cp", cp, 1 << 20,
             "context-parallel degree: each sequence split over N ranks,\n"
             "seq/N tokens each in 2 chunks (causal balancing; default 1;\n"
             "plan --model: fixes the search's CP)"),
    REAL_ENUM("cp-comm", cp_comm, cp_comm_names,
              "how CP exchanges keys and values: p2p (ring attention, each\n"
              "send hidden under a block's attention) or allgather (the\n"
              "whole sequence's before attention; default p2p)"),
};

const cli_group cli_real_group = CLI_GROUP("real model", real_opts);

/* In vp_split_goal's order. */
static const char *const split_names[] = {"time", "memory", "even", NULL};

static const cli_opt split_opts[] = {
    {.name = "split",
     .kind = CLI_ENUM,
     .choices = split_names,
     .help = "layers over stages: balance each rank's pass time (FLOPs)\n"
             "or bytes (model states plus activations under the\n"
             "schedule), the embedding, head and loss weighed where they\n"
             "sit, or even (equal counts, the ends one fewer); default even\n"
             "for vpipe's own model (train, vpipe:...), time otherwise"},
    {.name = "layers-per-stage",
     .kind = CLI_STRING,
     .offset = AT(layers_per_stage) - AT(split),
     .arg = "A,B,...",
     .help = "explicit split: layers of each stage of a microbatch's\n"
             "route (instead of --split)"},
};

const cli_group cli_split_group = CLI_GROUP("layer split", split_opts);

#define MODEL_INT(name_, field, hi_, help_)                                                        \
    {                                                                                              \
        .name = name_, .kind = CLI_INT, .offset = offsetof(vp_model_config, field), .arg = "N",    \
        .lo = 1, .hi = hi_, .help = help_                                                          \
    }

static const cli_opt model_opts[] = {
    MODEL_INT("layers", n_layer, 1 << 16, "transformer blocks"),
    MODEL_INT("width", width, 1 << 16, "residual width, divisible by --heads"),
    MODEL_INT("heads", n_head, 1 << 16, "attention heads"),
    MODEL_INT("seq", seq_len, 1 << 20, "tokens per sequence"),
    MODEL_INT("microbatch", microbatch, 1 << 20, "sequences per microbatch"),
};

const cli_group cli_model_group = CLI_GROUP("model", model_opts);
