/* The training setup: defaults, and the check of a whole setup. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "price/price_internal.h"

vp_workload vp_workload_default(const vp_arch *arch) {
    bool fp32 = arch->dtype_bytes == 4;
    vp_workload t = {
        .seq = arch->max_positions < 2048 ? arch->max_positions : 2048,
        .mbs = 1,
        .tp = 1,
        .dp = 1,
        .prec = {.param = fp32 ? 4 : 2, .grad = 4, .master = fp32 ? 0 : 4, .moments = 8},
        .dp_overlap = VP_OVERLAP_MODELLED,
        .cp = 1,
        .ep = 1,
        .etp = 1,
    };
    return t;
}

const char *vp_optimizer_dtype_name(vp_optimizer_dtype d) {
    static const char *const names[] = {"fp32", "bf16", "bf16-moments"};
    return (unsigned)d < 3 ? names[d] : NULL;
}

void vp_workload_set_optimizer(vp_workload *t, vp_optimizer_dtype d) {
    t->prec.master = d == VP_OPTIMIZER_BF16 ? 0 : t->prec.param < 4 ? 4 : 0;
    t->prec.moments = d == VP_OPTIMIZER_FP32 ? 8 : 4; /* two moments of 4 or 2 bytes */
}

vp_optimizer_dtype vp_workload_optimizer(const vp_workload *t) {
    return t->prec.moments >= 8 ? VP_OPTIMIZER_FP32
           : t->prec.master     ? VP_OPTIMIZER_BF16_MOMENTS
                                : VP_OPTIMIZER_BF16;
}

const char *vp_cp_comm_name(vp_cp_comm c) {
    static const char *const names[] = {"p2p", "allgather"};
    return (unsigned)c < 2 ? names[c] : NULL;
}

const char *vp_attn_kernel_name(vp_attn_kernel k) {
    return k == VP_ATTN_FUSED ? "fused" : k == VP_ATTN_FA2 ? "fa2" : NULL;
}

const char *vp_framework_name(vp_framework f) {
    return f == VP_FRAMEWORK_MEGATRON     ? "megatron"
           : f == VP_FRAMEWORK_TORCHTITAN ? "torchtitan"
                                          : NULL;
}

static const char *const module_names[VP_RECOMPUTE_MODULES] = {
    "core_attn", "layernorm", "mla_up_proj", "mlp", "moe_act", "shared_experts"};

vp_status vp_recompute_modules_parse(const char *text, unsigned *out, vp_error *err) {
    *out = 0;
    for (const char *c = text; *c;) {
        size_t n = strcspn(c, ", +");
        int k = 0;
        while (k < VP_RECOMPUTE_MODULES &&
               (strlen(module_names[k]) != n || strncmp(c, module_names[k], n)))
            k++;
        if (n && k == VP_RECOMPUTE_MODULES)
            return vp__fail(err, VP_EINVAL,
                            "unknown recompute module '%.*s' (core_attn, layernorm, "
                            "mla_up_proj, mlp, moe_act, shared_experts)",
                            (int)(n < 40 ? n : 40), c);
        *out |= n ? 1u << k : 0;
        c += n + (c[n] != 0);
    }
    return *out ? VP_OK : vp__fail(err, VP_EINVAL, "no recompute module named in '%s'", text);
}

const char *vp_recompute_modules_text(unsigned set, char *buf, size_t size) {
    size_t at = 0;
    if (size)
        buf[0] = 0;
    for (int k = 0; k < VP_RECOMPUTE_MODULES && size; k++)
        if (set & (1u << k)) {
            int w = snprintf(buf + at, size - at, "%s%s", at ? "," : "", module_names[k]);
            at = w < 0 || (size_t)w >= size - at ? size - 1 : at + (size_t)w;
        }
    return buf;
}

/* What a set of recompute modules needs of the model: NULL when a has what each reruns,
 * else the first one it lacks. */
static const char *module_missing(const vp_arch *a, unsigned set) {
    bool dense = a->experts == 0 || a->dense_layers > 0;
    const struct {
        unsigned module;
        bool has;
    } needs[] = {{VP_RECOMPUTE_MLA_UP_PROJ, a->kv_lora > 0},
                 {VP_RECOMPUTE_MLP, dense},
                 {VP_RECOMPUTE_MOE_ACT, a->experts > 0},
                 {VP_RECOMPUTE_SHARED_EXPERTS, a->experts > 0 && a->shared_experts > 0}};
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
        if ((set & needs[i].module) && !needs[i].has)
            return module_names[__builtin_ctz(needs[i].module)];
    return NULL;
}

bool vp_price_selective_differs(const vp_arch *a, const vp_workload *t) {
    return t->framework == VP_FRAMEWORK_TORCHTITAN
               ? vp__op_priced(a)
               : !t->flash || (t->recompute_modules & ~(unsigned)VP_RECOMPUTE_CORE_ATTN);
}

const char *vp_fp8_name(vp_fp8 f) {
    static const char *const names[] = {"off", "tensorwise", "blockwise", "mxfp8", "delayed"};
    return (unsigned)f < 5 ? names[f] : NULL;
}

/* What model a has where torchtitan's Llama layers have grouped-query attention, dense
 * layers, RMSNorm (when norm asks) and a SwiGLU MLP; NULL when it has them all. */
static const char *unlike_llama(const vp_arch *a, bool norm) {
    return a->kv_lora > 0                   ? "latent attention"
           : a->experts > 0                 ? "mixture-of-experts layers"
           : norm && a->norm != VP_NORM_RMS ? "LayerNorm"
           : a->ffn_kind != VP_FFN_SWIGLU   ? "another MLP"
                                            : NULL;
}

/* Expert parallelism: a mixture-of-experts model, EP dividing its experts, ETP the expert
 * width, and EP x ETP the GPUs of a pipeline rank (TP x CP x DP), which the expert layers
 * fold as EP x ETP x expert-DP. */
static vp_status check_experts(const vp_arch *a, const vp_workload *t, vp_error *err) {
    if (a->experts == 0)
        return t->ep == 1 && t->etp == 1
                   ? VP_OK
                   : vp__fail(err, VP_EINVAL,
                              "model %s has no experts: EP %d and ETP %d need a "
                              "mixture-of-experts model",
                              a->name, t->ep, t->etp);
    if (a->experts % t->ep || a->expert_ffn % t->etp)
        return vp__fail(err, VP_EINVAL,
                        "model %s's %d experts must be divisible by EP %d and their width %d "
                        "by ETP %d",
                        a->name, a->experts, t->ep, a->expert_ffn, t->etp);
    long ranks = (long)t->tp * t->cp * t->dp, fold = (long)t->ep * t->etp;
    if (ranks % fold)
        return vp__fail(err, VP_EINVAL,
                        "EP x ETP (%ld) must divide TP x CP x DP (%ld): the expert layers fold "
                        "the same GPUs as EP x ETP x expert-DP",
                        fold, ranks);
    return VP_OK;
}

int vp__expert_dp(const vp_workload *t) {
    return (int)((long)t->tp * t->cp * t->dp / ((long)t->ep * t->etp));
}

static vp_status check_workload(const vp_arch *a, const vp_workload *t, vp_error *err) {
    const int big = 1 << 20;
    if (t->seq < 1 || t->mbs < 1 || t->tp < 1 || t->dp < 1 || t->cp < 1 || t->ep < 1 ||
        t->etp < 1 || t->mbs > big || t->tp > big || t->dp > big || t->cp > big || t->ep > big ||
        t->etp > big)
        return vp__fail(err, VP_EINVAL,
                        "sequence, microbatch size and the TP, DP, CP, EP and ETP degrees must "
                        "be positive (got seq %d, mbs %d, tp %d, dp %d, cp %d, ep %d, etp %d)",
                        t->seq, t->mbs, t->tp, t->dp, t->cp, t->ep, t->etp);
    if ((unsigned)t->cp_comm > VP_CP_ALLGATHER || (unsigned)t->fp8 > VP_FP8_DELAYED)
        return vp__fail(err, VP_EINVAL, "unknown CP exchange %d or FP8 recipe %d", (int)t->cp_comm,
                        (int)t->fp8);
    if ((unsigned)t->zero > 3)
        return vp__fail(err, VP_EINVAL, "ZeRO stage %d is not 0, 1, 2 or 3", t->zero);
    if ((unsigned)t->recompute > VP_RECOMPUTE_FULL)
        return vp__fail(err, VP_EINVAL, "unknown recomputation %d", (int)t->recompute);
    if ((unsigned)t->framework > VP_FRAMEWORK_TORCHTITAN)
        return vp__fail(err, VP_EINVAL, "unknown framework %d", (int)t->framework);
    if (t->recompute_modules >> VP_RECOMPUTE_MODULES)
        return vp__fail(err, VP_EINVAL, "unknown recompute modules 0x%x", t->recompute_modules);
    if (t->recompute_modules &&
        (t->recompute != VP_RECOMPUTE_SELECTIVE || t->framework != VP_FRAMEWORK_MEGATRON))
        return vp__fail(err, VP_EINVAL,
                        "recompute modules choose what Megatron-LM's selective recomputation "
                        "reruns: they need recompute selective under Megatron-LM (got %s%s)",
                        vp_recompute_name(t->recompute),
                        t->framework != VP_FRAMEWORK_MEGATRON ? " under torchtitan" : "");
    const char *lacks = module_missing(a, t->recompute_modules);
    if (lacks)
        return vp__fail(err, VP_EINVAL, "recompute module %s: model %s has no %s", lacks, a->name,
                        !strcmp(lacks, "mla_up_proj") ? "latent attention"
                        : !strcmp(lacks, "mlp")       ? "dense MLP layer"
                        : !strcmp(lacks, "moe_act")   ? "routed experts"
                                                      : "shared experts");
    if (t->seq > a->max_positions)
        return vp__fail(err, VP_EINVAL, "sequence %d is longer than model %s's %d positions",
                        t->seq, a->name, a->max_positions);
    if (a->heads % t->tp || a->kv_heads % t->tp)
        return vp__fail(err, VP_EINVAL,
                        "model %s's %d heads and %d KV heads must be divisible by TP %d", a->name,
                        a->heads, a->kv_heads, t->tp);
    const vp_precision *p = &t->prec;
    if (p->param < 1 || p->param > 8 || p->grad < 0 || p->grad > 8 || p->master < 0 ||
        p->master > 8 || p->moments < 0 || p->moments > 32)
        return vp__fail(err, VP_EINVAL,
                        "bytes per parameter out of range (param %d, grad %d, "
                        "master %d, moments %d)",
                        p->param, p->grad, p->master, p->moments);
    if (!((t->dp_overlap >= 0 && t->dp_overlap <= 1) || t->dp_overlap == VP_OVERLAP_MODELLED) ||
        !(t->reserve_bytes >= 0) || !isfinite(t->reserve_bytes))
        return vp__fail(err, VP_EINVAL,
                        "dp_overlap must be in [0, 1] (or modelled) and the reserve >= 0");
    vp_status rc = check_experts(a, t, err);
    if (rc != VP_OK)
        return rc;
    if (t->cp > 1 && t->seq % (2 * t->cp))
        return vp__fail(err, VP_EINVAL,
                        "CP %d must divide sequence %d into an even share per rank (seq / cp = "
                        "%g): causal load balancing gives each rank 2 chunks, so 2 x CP must "
                        "divide the sequence",
                        t->cp, t->seq, (double)t->seq / t->cp);
    if (a->impl == VP_IMPL_VPIPE && (t->tp > 1 || t->flash || t->recompute))
        return vp__fail(err, VP_EINVAL,
                        "vpipe's own model has no tensor parallelism, "
                        "FlashAttention or recomputation");
    if (a->impl == VP_IMPL_VPIPE && t->framework != VP_FRAMEWORK_MEGATRON)
        return vp__fail(err, VP_EINVAL, "vpipe's own model runs on vpipe's runtime, not on %s",
                        vp_framework_name(t->framework));
    if (t->eager && t->framework != VP_FRAMEWORK_TORCHTITAN)
        return vp__fail(err, VP_EINVAL,
                        "eager kernels are torchtitan's without torch.compile (framework "
                        "torchtitan); %s runs Transformer Engine's fused ones",
                        vp_framework_name(t->framework));
    const char *other = t->eager ? unlike_llama(a, true) : NULL;
    if (other)
        return vp__fail(err, VP_EINVAL,
                        "torchtitan's eager kernels are priced for its Llama layers (grouped-query "
                        "attention, RMSNorm, a SwiGLU MLP); model %s has %s",
                        a->name, other);
    if (vp__op_recompute(t) && !vp__op_priced(a))
        return vp__fail(err, VP_EINVAL,
                        "torchtitan's selective recomputation (its per-op policy) is priced for "
                        "dense layers of grouped-query attention and a SwiGLU MLP; model %s has "
                        "%s: use --recompute full or none",
                        a->name, unlike_llama(a, false));
    if (a->impl == VP_IMPL_VPIPE && t->cp > 1)
        return vp__fail(err, VP_EINVAL,
                        "vpipe's own model cannot split its attention over CP %d: its runtime "
                        "has no context parallelism",
                        t->cp);
    return VP_OK;
}

/* The speed model: one fraction of peak in (0, 1], or (efficiency 0) the kernel model's
 * parameters in range. */
static vp_status check_speed(const vp_gpu *g, vp_error *err) {
    if (g->efficiency > 0 && g->efficiency <= 1)
        return VP_OK;
    bool kernel = g->efficiency == 0 && g->gemm_efficiency > 0 && g->gemm_efficiency <= 1 &&
                  g->attn_efficiency_f > 0 && g->attn_efficiency_f <= 1 &&
                  g->attn_efficiency_b > 0 && g->attn_efficiency_b <= 1 && g->attn_fa2_f >= 0 &&
                  g->attn_fa2_f <= 1 && g->attn_fa2_b >= 0 && g->attn_fa2_b <= 1 &&
                  g->gemm_edge >= 0 && g->act_traffic_f >= 0 && g->act_traffic_b >= 0 &&
                  g->layer_overhead >= 0 && g->chunk_overhead >= 0 &&
                  isfinite(g->gemm_edge + g->act_traffic_f + g->act_traffic_b + g->layer_overhead +
                           g->chunk_overhead);
    return kernel ? VP_OK
                  : vp__fail(err, VP_EINVAL,
                             "accelerator %s: efficiency in (0, 1], or 0 with gemm_efficiency "
                             "and the attention efficiencies in (0, 1] and gemm_edge, "
                             "act_traffic_f, act_traffic_b and the overheads >= 0",
                             g->name);
}

static vp_status check_gpu(const vp_gpu *g, vp_error *err) {
    double positive[] = {g->peak_flops, g->memory_bytes, g->hbm_bandwidth,
                         g->intra_bw,   g->inter_bw,     g->p2p_bw};
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
        if (!(positive[i] > 0) || !isfinite(positive[i]))
            return vp__fail(err, VP_EINVAL,
                            "accelerator %s: FLOP/s, memory and bandwidths "
                            "must be positive",
                            g->name);
    if (!(g->intra_latency >= 0) || !(g->inter_latency >= 0) || !isfinite(g->intra_latency) ||
        !isfinite(g->inter_latency) || g->gpus_per_node < 1)
        return vp__fail(err, VP_EINVAL,
                        "accelerator %s: latencies >= 0 and gpus_per_node >= 1 needed", g->name);
    if (!(g->comm_efficiency > 0 && g->comm_efficiency <= 1) ||
        !(g->hbm_efficiency > 0 && g->hbm_efficiency <= 1) || !(g->context_bytes >= 0) ||
        !(g->comm_buffer_bytes >= 0) || !(g->frag_fraction >= 0) ||
        !isfinite(g->context_bytes + g->comm_buffer_bytes + g->frag_fraction))
        return vp__fail(err, VP_EINVAL,
                        "accelerator %s: communication and HBM efficiencies in (0, 1], context, "
                        "communication buffers and fragmentation >= 0",
                        g->name);
    return check_speed(g, err);
}

vp_status vp_price_check(const vp_price_setup *setup, vp_error *err) {
    if (!setup || !setup->arch || !setup->work)
        return vp__fail(err, VP_EINVAL, "pricing needs a model and a training setup");
    vp_status rc = vp_arch_check(setup->arch, err);
    if (rc == VP_OK)
        rc = check_workload(setup->arch, setup->work, err);
    if (rc == VP_OK && setup->gpu)
        rc = check_gpu(setup->gpu, err);
    if (rc == VP_OK)
        rc = vp__fp8_check(setup->arch, setup->work, setup->gpu, err);
    if (rc == VP_OK && (setup->split < VP_SPLIT_TIME || setup->split > VP_SPLIT_EVEN))
        rc = vp__fail(err, VP_EINVAL, "unknown split goal %d", (int)setup->split);
    return rc;
}
