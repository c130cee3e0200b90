/* Exports that launch a configuration: torchtitan's job configuration (TOML) and
 * Megatron-LM's flags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "hybrid/hybrid_internal.h"
#include "vpipe/families.h"
#include "vpipe/io.h"

#define GIB 1073741824.0

/* One part of module_fqns_per_model_part: stage k's modules in Llama's names. */
static void stage_modules(vp__buf *b, const vp_price_result *r, int k, int layer0) {
    vp__buf_printf(b, "  [");
    const char *sep = "";
    if (k == 0) {
        vp__buf_printf(b, "\"tok_embeddings\"");
        sep = ", ";
    }
    for (int l = layer0; l < layer0 + r->layers_per_stage[k]; l++, sep = ", ")
        vp__buf_printf(b, "%s\"layers.%d\"", sep, l);
    if (k == r->route_len - 1)
        vp__buf_printf(b, "%s\"norm\", \"output\"", sep);
    vp__buf_printf(b, "],\n");
}

/* text as a TOML basic string: quotes, backslashes and control characters (but tab)
 * escaped, the rest (UTF-8 included) as it is. */
static void toml_string(vp__buf *b, const char *text) {
    vp__buf_add(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            vp__buf_printf(b, "\\%c", *c);
        else if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
            vp__buf_printf(b, "\\u%04x", *c);
        else
            vp__buf_add(b, (const char *)c, 1);
    }
    vp__buf_add(b, "\"", 1);
}

/* The [parallelism] keys of the pipeline: schedule class, CSV, and the modules of every
 * stage of the route. */
static void pipeline_keys(vp__buf *b, const vp_hybrid_priced *pr, const char *schedule,
                          const char *csv_path) {
    const vp_price_result *r = pr->result;
    vp__buf_printf(b, "pipeline_parallel_schedule = \"%s\"\n", schedule);
    vp__buf_printf(b, "pipeline_parallel_schedule_csv = ");
    toml_string(b, csv_path);
    vp__buf_printf(b, "\n");
    vp__buf_printf(b, "# layers per stage, as vpipe priced them:");
    for (int k = 0; k < r->route_len; k++)
        vp__buf_printf(b, "%s%d", k ? "," : " ", r->layers_per_stage[k]);
    vp__buf_printf(b, "\nmodule_fqns_per_model_part = [\n");
    for (int k = 0, l0 = 0; k < r->route_len; l0 += r->layers_per_stage[k++])
        stage_modules(b, r, k, l0);
    vp__buf_printf(b, "]\n");
}

/* torchtitan's float8 training (torchao's Float8Linear on the linears): its tensorwise
 * recipe is vpipe's, FP8 weights its float8 all-gather; delayed, blockwise and MXFP8 have
 * no float8 recipe_name (torchao's are tensorwise, rowwise and rowwise_with_gw_hp), so they
 * are said, not carried. */
static void float8_keys(vp__buf *b, vp_fp8 fp8, bool weights) {
    if (fp8 == VP_FP8_TENSORWISE)
        vp__buf_printf(b,
                       "\n[model]\nconverters = [\"float8\"]\n\n[float8]\n"
                       "recipe_name = \"tensorwise\"\n%s",
                       weights ? "enable_fsdp_float8_all_gather = true\n"
                                 "precompute_float8_dynamic_scale_for_fsdp = true\n"
                               : "");
    else if (fp8 != VP_FP8_OFF)
        vp__buf_printf(
            b,
            "\n# vpipe priced FP8 %s; torchtitan's float8 recipes (tensorwise, rowwise)\n"
            "# cannot carry it: the job as written trains in 16 bits\n",
            vp_fp8_name(fp8));
}

vp_status vp_hybrid_torchtitan(const vp_hybrid_request *req, const vp_hybrid_priced *pr,
                               const char *csv_path, char **toml, vp_error *err) {
    *toml = NULL;
    const vp_hybrid_config *c = &pr->config;
    const char *schedule = vp_torch_schedule_name(pr->schedule);
    if (pr->schedule->vocab_parallel)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "torchtitan has no vocabulary parallelism: plan without it to export");
    if (c->pp > 1 && (!schedule || pr->schedule->route_len != pr->schedule->S))
        return vp__fail(err, VP_EUNSUPPORTED,
                        "torchtitan cannot run %s's placement (%s): every microbatch must pass "
                        "every stage",
                        c->family, vp_placement_name(pr->schedule->placement));
    vp__buf b = {0};
    char cp[24] = "";
    if (c->cp > 1)
        snprintf(cp, sizeof cp, " x CP %d", c->cp);
    vp__buf_printf(&b,
                   "# vpipe plan: %s%s%s for %s on %d %s, DP %d x TP %d%s x PP %d, mbs %d, m %d,"
                   " recompute %s\n# predicted: step %.4g s, MFU %.1f%%, at most %.1f GiB per GPU\n"
                   "# The parallelism part of a torchtitan job configuration (TOML JobConfig of\n"
                   "# torchtitan/config/job_config.py with module_fqns_per_model_part):\n"
                   "# merge it into the job's file.\n\n",
                   c->family, c->params[0] ? " " : "", c->params, req->arch->name, req->gpus,
                   req->gpu->name, c->dp, c->tp, cp, c->pp, c->mbs, c->m,
                   vp_recompute_name(c->recompute), c->step_time_s, 100 * c->mfu,
                   c->memory_max_bytes / GIB);
    vp_optimizer_dtype states = vp_workload_optimizer(&req->work);
    vp__buf_printf(
        &b, "[training]\nseq_len = %d\nlocal_batch_size = %d\nglobal_batch_size = %d\n%s%s%s\n",
        req->work.seq, c->mbs * c->m, req->global_batch,
        req->work.prec.grad < 4 ? "mixed_precision_reduce = \"bfloat16\"\n" : "",
        states == VP_OPTIMIZER_FP32 ? ""
        : states == VP_OPTIMIZER_BF16_MOMENTS
            ? "# vpipe priced bf16 moments; torchtitan's FSDP2 keeps them fp32: each rank\n"
              "# needs more than predicted\n"
            : "# vpipe priced bf16 optimizer states; torchtitan's FSDP2 keeps fp32\n"
              "# sharded weights and moments: each rank needs more than predicted\n",
        req->work.eager
            ? "# vpipe priced eager kernels (torch.compile off, torchtitan's default):\n"
              "# compiling the model, [compile] enable = true, runs faster than predicted\n"
            : "# vpipe priced fused kernels, as torch.compile runs them (torchtitan's own\n"
              "# benchmark: llama3-8b on 8 H100s, 13.6% fewer tokens/s eager): compile the\n"
              "# model, [compile] enable = true ([training] compile = true before torchtitan\n"
              "# had a [compile] table), or plan with --eager\n");
    int zero = pr->work.zero;
    bool shard = zero && c->dp > 1;
    const char *why = zero == 3 ? "" /* FSDP2 is ZeRO-3 */
                      : c->pp > 1
                          ? "# FSDP2 under a pipeline keeps a stage's weights gathered: what the\n"
                            "# ZeRO-1 vpipe priced holds\n"
                          : "# torchtitan has no ZeRO-1 or 2: FSDP2 (ZeRO-3) holds at most what\n"
                            "# they do, and gathers each layer's weights too\n";
    vp__buf_printf(&b,
                   "[parallelism]\n%sdata_parallel_replicate_degree = %d\n"
                   "data_parallel_shard_degree = %d\ntensor_parallel_degree = %d\n"
                   "pipeline_parallel_degree = %d\npipeline_parallel_microbatch_size = %d\n",
                   shard ? why : "", shard ? 1 : c->dp, shard ? c->dp : 1, c->tp, c->pp, c->mbs);
    if (c->ep > 1 || c->etp > 1)
        vp__buf_printf(&b, "expert_parallel_degree = %d\nexpert_tensor_parallel_degree = %d\n%s",
                       c->ep, c->etp,
                       c->ep % c->tp || (c->etp != 1 && c->etp != c->tp)
                           ? "# torchtitan folds EP over DP x TP only when EP is a multiple of TP\n"
                             "# and ETP is 1 or TP: this configuration is Megatron-LM's fold\n"
                           : "");
    vp__hy_cp_export(&b, req, c, false);
    if (c->pp > 1)
        pipeline_keys(&b, pr, schedule, csv_path);
    float8_keys(&b, c->fp8, req->work.fp8_params);
    bool selective = c->recompute == VP_RECOMPUTE_SELECTIVE;
    vp__buf_printf(&b, "\n[activation_checkpoint]\nmode = \"%s\"\n%s",
                   vp_recompute_name(c->recompute),
                   selective ? "selective_ac_option = \"op\"\n" : "");
    if (req->work.framework != VP_FRAMEWORK_TORCHTITAN)
        vp__buf_printf(&b,
                       "# vpipe priced Megatron-LM's way (its tensors, loss and FP8 copies%s);\n"
                       "# plan with --framework torchtitan prices torchtitan's\n",
                       selective ? "; selective as its core_attn, where torchtitan's per-op\n"
                                   "# policy keeps less and recomputes more"
                                 : "");
    if (c->offload > 0)
        vp__buf_printf(&b,
                       "# vpipe priced offloading %g of each stage's saved activations to host;\n"
                       "# torchtitan's pipeline schedules have no offload action: the CSV is the\n"
                       "# compute order without O and L, and without offload the ranks need more\n"
                       "# memory than predicted\n",
                       c->offload);
    *toml = vp__buf_take(&b);
    return *toml ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}

/* Whether the n counts are all equal. */
static bool even(const int *counts, int n) {
    for (int k = 1; k < n; k++)
        if (counts[k] != counts[0])
            return false;
    return true;
}

/* The split flags, the split exactly as priced: nothing for an even one (the layers of each
 * virtual stage when interleaved), else Megatron-Core's --pipeline-model-parallel-layout:
 * vpipe's stages in their order, which is Megatron's (stage k is rank k mod PP's chunk
 * k div PP, as the loop places them), t for each layer, E (the embedding) first and L (the
 * loss) last, as its PipelineParallelLayerLayout requires. */
static void split_flags(vp__buf *b, const vp_hybrid_priced *pr) {
    const int *n = pr->result->layers_per_stage, R = pr->result->route_len;
    if (pr->config.pp < 2)
        return;
    if (even(n, R)) {
        if (pr->config.v > 0)
            vp__buf_printf(b, " --num-layers-per-virtual-pipeline-stage %d", n[0]);
        return;
    }
    vp__buf_printf(b, " --pipeline-model-parallel-layout 'E");
    for (int k = 0; k < R; k++) {
        vp__buf_printf(b, "%s", k ? "|" : "");
        if (n[k] == 1)
            vp__buf_printf(b, "t");
        else if (n[k] > 1)
            vp__buf_printf(b, "t*%d", n[k]);
    }
    vp__buf_printf(b, "L'");
}

/* Megatron-LM's fine-grained activation offload moves the inputs a module saves; the
 * modules of a dense layer and the saved tensors (vp_price_tensors' names, by prefix)
 * that are theirs. */
static const struct {
    const char *module, *tensor;
} offload_modules[] = {{"attn_norm", "norm 1 input"}, {"qkv_linear", "QKV input"},
                       {"core_attn", "query"},        {"core_attn", "key and value"},
                       {"core_attn", "softmax"},      {"attn_proj", "projection input"},
                       {"mlp_norm", "norm 2 input"}};

/* The --offload-modules that come nearest to offloading c's share of a layer's saved bytes
 * (whole modules, in the layer's order), and a comment line on what they cover. */
static void offload_flags(vp__buf *b, vp__buf *notes, const vp_hybrid_request *req,
                          const vp_hybrid_priced *pr) {
    vp_saved_tensor saved[32];
    int n = vp_price_tensors(req->arch, &pr->work, VP_PRICE_LAYER, saved, 32);
    double total = 0, covered = 0, want = pr->config.offload;
    for (int i = 0; i < n && i < 32; i++)
        total += saved[i].keep != VP_KEEP_B_W ? saved[i].bytes : 0;
    const char *last = "";
    vp__buf_printf(b, " --fine-grained-activation-offloading --offload-modules");
    for (size_t m = 0; m < sizeof offload_modules / sizeof offload_modules[0]; m++) {
        double bytes = 0;
        for (int i = 0; i < n && i < 32; i++)
            if (!strncmp(saved[i].name, offload_modules[m].tensor,
                         strlen(offload_modules[m].tensor)))
                bytes += saved[i].bytes;
        /* Megatron-Core refuses attn_proj without core_attn: its input is core_attn's output */
        bool orphan = !strcmp(offload_modules[m].module, "attn_proj") && strcmp(last, "core_attn");
        if (bytes == 0 || orphan || (covered > 0 && covered + bytes / 2 > want * total))
            continue;
        if (strcmp(last, offload_modules[m].module))
            vp__buf_printf(b, " %s", offload_modules[m].module);
        last = offload_modules[m].module;
        covered += bytes;
    }
    vp__buf_printf(notes,
                   "# offload: vpipe priced sending %.0f%% of each stage's saved activations to "
                   "host (the uniform policy); the modules above hold %.0f%% of a layer's (a "
                   "dense MLP's inputs have no Megatron module)\n",
                   100 * want, total > 0 ? 100 * covered / total : 0);
}

vp_status vp_hybrid_megatron(const vp_hybrid_request *req, const vp_hybrid_priced *pr, char **flags,
                             vp_error *err) {
    *flags = NULL;
    const vp_hybrid_config *c = &pr->config;
    if (strcmp(c->family, "1f1b") && strcmp(c->family, "interleaved"))
        return vp__fail(err, VP_EUNSUPPORTED, "Megatron-LM runs 1F1B and interleaved 1F1B, not %s",
                        c->family);
    if (pr->schedule->vocab_parallel)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "Megatron-LM has no vocabulary parallelism over the pipeline: plan "
                        "without it to export");
    if (c->v > 0 && c->pp < 2)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "Megatron-LM interleaves stages only over a pipeline (PP > 1), not %s "
                        "at PP %d",
                        c->family, c->pp);
    /* interleaved runs microbatches in groups of g = m / max(1, m div PP) (families/
       interleaved.c); Megatron-LM's group is at least PP (its schedules.py raises) */
    if (c->v > 0 && c->m < c->pp)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "Megatron-LM interleaves groups of at least PP microbatches: %d "
                        "microbatches at PP %d are fewer",
                        c->m, c->pp);
    /* its combined 1F1B: without a pipeline or interleaved, never with full recomputation */
    bool overlap = c->ep > 1 && req->work.ep_overlap;
    if (overlap && c->pp > 1 && c->v == 0)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "Megatron-LM overlaps the all-to-all (--overlap-moe-expert-parallel-comm) "
                        "only without a pipeline or interleaved: %s at PP %d is vpipe's combined "
                        "1F1B",
                        c->family, c->pp);
    if (overlap && c->recompute == VP_RECOMPUTE_FULL)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "Megatron-LM overlaps the all-to-all (--overlap-moe-expert-parallel-comm) "
                        "only without full recomputation");
    vp__buf b = {0}, notes = {0};
    vp__buf_printf(&b,
                   "--tensor-model-parallel-size %d --pipeline-model-parallel-size %d "
                   "--micro-batch-size %d --global-batch-size %d --seq-length %d",
                   c->tp, c->pp, c->mbs, req->global_batch, req->work.seq);
    split_flags(&b, pr);
    int group = c->v > 0 ? vp_interleaved_group(c->pp, c->m) : 0;
    if (c->v > 0 && group != c->pp)
        vp__buf_printf(&b, " --microbatch-group-size-per-virtual-pipeline-stage %d", group);
    /* Megatron-LM's interleaved schedule overlaps its sends unless
       --no-overlap-p2p-communication, which it refuses at PP 2: left on */
    if (c->v > 0 && !req->work.pp_overlap)
        vp__buf_printf(&notes, "# Megatron-LM's interleaved schedule overlaps its pipeline sends "
                               "(its default); vpipe\n# priced them blocking: plan with "
                               "--pp-overlap to price what this runs\n");
    if (c->ep > 1 || c->etp > 1)
        vp__buf_printf(&b, " --expert-model-parallel-size %d --expert-tensor-parallel-size %d",
                       c->ep, c->etp);
    vp__hy_cp_export(&b, req, c, true);
    int cp = c->cp > 1 ? c->cp : 1;
    if (c->ep > 1 && req->work.ep_dispatch == VP_EP_DEEPEP)
        vp__buf_printf(&b, " --moe-token-dispatcher-type flex --moe-enable-deepep");
    if (overlap)
        vp__buf_printf(&b, " --overlap-moe-expert-parallel-comm");
    /* Megatron-Core's ModelParallelConfig raises without sequence parallelism at EP, TP > 1 */
    bool moe_sp = c->tp > 1 && c->ep > 1 && !req->work.sp;
    if ((req->work.sp && c->tp > 1) || moe_sp)
        vp__buf_printf(&b, " --sequence-parallel");
    if (moe_sp)
        vp__buf_printf(&notes, "# Megatron-LM runs expert parallelism with TP > 1 only with "
                               "--sequence-parallel, set\n# here; vpipe priced it without: plan "
                               "with --sp to price what this runs\n");
    if (c->fp8 != VP_FP8_OFF) /* E4M3 forward, E5M2 gradients; the recipes share names */
        vp__buf_printf(&b, " --fp8-format hybrid --fp8-recipe %s%s", vp_fp8_name(c->fp8),
                       req->work.fp8_params ? " --fp8-param-gather" : "");
    if (req->work.prec.grad < 4)
        vp__buf_printf(&b, " --grad-reduce-in-bf16");
    if (vp_workload_optimizer(&req->work) == VP_OPTIMIZER_BF16_MOMENTS)
        vp__buf_printf(&b, " --use-precision-aware-optimizer --exp-avg-dtype bf16 "
                           "--exp-avg-sq-dtype bf16");
    static const char *const strategy[] = {"", "", "optim_grads", "optim_grads_params"};
    if (pr->work.zero == 1 && c->dp * cp > 1)
        vp__buf_printf(&b, " --use-distributed-optimizer");
    else if (pr->work.zero > 1 &&
             c->dp * cp > 1) /* Megatron-FSDP (its checkpoints: fsdp_dtensor) */
        vp__buf_printf(&b,
                       " --use-megatron-fsdp --data-parallel-sharding-strategy %s --ckpt-format "
                       "fsdp_dtensor",
                       strategy[pr->work.zero]);
    /* the kernels priced: cuDNN's fused attention (Transformer Engine's FusedAttention),
     * FlashAttention-2 (its FlashAttention backend), or the s x s matrices kept */
    vp__buf_printf(&b, " --attention-backend %s",
                   !req->work.flash                       ? "unfused"
                   : req->work.attn_kernel == VP_ATTN_FA2 ? "flash"
                                                          : "fused");
    if (c->recompute == VP_RECOMPUTE_FULL)
        vp__buf_printf(&b, " --recompute-granularity full --recompute-method uniform "
                           "--recompute-num-layers 1");
    else if (c->recompute == VP_RECOMPUTE_SELECTIVE)
        vp__buf_printf(&b, " --recompute-granularity selective");
    if (c->recompute == VP_RECOMPUTE_SELECTIVE && c->recompute_modules) {
        char names[96];
        vp_recompute_modules_text(c->recompute_modules, names, sizeof names);
        for (char *at = names; *at; at++)
            *at = *at == ',' ? ' ' : *at;
        vp__buf_printf(&b, " --recompute-modules %s", names);
    }
    if (c->offload > 0)
        offload_flags(&b, &notes, req, pr);
    if (cp > 1)
        vp__buf_printf(&b, "\n# data parallel %d = world size %d / (TP %d x CP %d x PP %d)\n",
                       c->dp, req->gpus, c->tp, cp, c->pp);
    else
        vp__buf_printf(&b, "\n# data parallel %d = world size %d / (TP %d x PP %d)\n", c->dp,
                       req->gpus, c->tp, c->pp);
    if (vp_workload_optimizer(&req->work) == VP_OPTIMIZER_BF16)
        vp__buf_printf(
            &notes, "# vpipe priced bf16 optimizer states (the 16-bit weights as the master):\n"
                    "# Megatron-LM keeps fp32 main parameters; --use-precision-aware-optimizer\n"
                    "# --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 makes its moments bf16, and\n"
                    "# each rank then needs more than predicted\n");
    char *extra = vp__buf_take(&notes);
    vp__buf_printf(&b, "%s", extra ? extra : "");
    free(extra);
    *flags = vp__buf_take(&b);
    return *flags ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}
