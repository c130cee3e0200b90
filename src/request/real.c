/* A request's real model: --model, --gpu and the workload resolved into a pricing setup,
 * pricing a schedule with it, and its reports in GiB and seconds (door.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/door.h"

#define GIB 1073741824.0

/* Every real-model option but --model, in the order a message names the first given. */
static const char *const workload_keys[] = {"gpu",
                                            "seq",
                                            "mbs",
                                            "tp",
                                            "sp",
                                            "dp",
                                            "ep",
                                            "etp",
                                            "zero",
                                            "flash",
                                            "tp_overlap",
                                            "pp_overlap",
                                            "split",
                                            "layers_per_stage",
                                            "reserve",
                                            "dp_overlap",
                                            "ep_overlap",
                                            "ep_dispatch",
                                            "ep_routing",
                                            "fp8",
                                            "cp",
                                            "cp_comm",
                                            "fp8_params",
                                            "grad_bytes",
                                            "attn_kernel",
                                            "framework",
                                            "recompute_modules",
                                            "optimizer_dtype",
                                            NULL};

vp_status vp_request_counts(const char *text, int **counts, int *n, vp_error *err) {
    *n = 1;
    for (const char *c = text; *c; c++)
        *n += *c == ',';
    if (!(*counts = vp__calloc((size_t)*n, sizeof **counts)))
        return vp__fail(err, VP_ENOMEM, "out of memory");
    const char *at = text;
    for (int k = 0; k < *n; k++, at++) {
        size_t len = strcspn(at, ",");
        char item[32], *end = NULL;
        if (len == 0 || len >= sizeof item)
            return vp__fail(err, VP_EINVAL, "expects counts like 3,4,4,3, got '%s'", text);
        memcpy(item, at, len);
        item[len] = '\0';
        long v = strtol(item, &end, 10);
        if (*end || end == item || v < 0 || v > 1 << 20)
            return vp__fail(err, VP_EINVAL, "expects an integer in [0, 1048576], got '%s'", item);
        (*counts)[k] = (int)v;
        at += len;
    }
    return VP_OK;
}

/* --layers-per-stage into run->layers. */
static vp_status read_counts(vp__run *run, const char *text, vp_error *err) {
    if (vp_request_counts(text, &run->layers, &run->n_layers, err) == VP_OK)
        return VP_OK;
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    return vp__fail(err, err->status, "%s %s", VP__NAME(run, "layers_per_stage"), why);
}

/* Fails resolving --model or --gpu: bad content of a file is bad input (its position), an
 * unknown name a usage error. */
static vp_status source_error(const vp__run *run, const char *key, const char *value,
                              vp_error *err) {
    if (run->spelling == VP__SPELL_OLD)
        return vp__value_error(run, key, value, err->status, err);
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    if (err->status == VP_EIO) /* the message names the file */
        return vp__fail(err, err->status, "%s %s", VP__NAME(run, key), why);
    if (err->line > 0)
        return vp__fail(err, err->status, "%s %s:%d:%d: %s", VP__NAME(run, key), value, err->line,
                        err->column, why);
    return vp__fail(err, err->status, "%s %s: %s", VP__NAME(run, key), value, why);
}

/* The workload: the model's defaults with every option given applied. */
static void apply_workload(vp__run *run) {
    const vp_request *q = run->req;
    vp_workload *w = &run->work;
    *w = vp_workload_default(&run->arch);
    w->seq = q->seq ? q->seq : w->seq;
    w->mbs = q->mbs ? q->mbs : w->mbs;
    w->tp = q->tp ? q->tp : w->tp;
    w->dp = q->dp ? q->dp : w->dp;
    w->cp = q->cp ? q->cp : w->cp;
    w->cp_comm = q->cp_comm >= 0 ? (vp_cp_comm)q->cp_comm : w->cp_comm;
    if (run->cmd != VP__PLAN) { /* plan searches EP with these fixed (vp_hybrid_request) */
        w->ep = q->ep ? q->ep : w->ep;
        w->etp = q->etp ? q->etp : w->etp;
    }
    w->sp = q->sp;
    w->zero = q->zero > 0 ? q->zero : 0;
    /* FlashAttention unless the request turns it off: every framework a real model names
     * runs it; vpipe's own GPT has none (vp_price_check refuses it there) */
    w->flash = q->flash >= 0 ? q->flash : run->arch.impl != VP_IMPL_VPIPE;
    w->attn_kernel = q->attn_kernel >= 0 ? (vp_attn_kernel)q->attn_kernel : w->attn_kernel;
    w->framework = q->framework >= 0 ? (vp_framework)q->framework : w->framework;
    w->eager = q->eager;
    w->tp_overlap = q->tp_overlap;
    w->pp_overlap = q->pp_overlap;
    w->ep_overlap = q->ep_overlap;
    w->ep_dispatch = q->ep_dispatch >= 0 ? (vp_ep_dispatch)q->ep_dispatch : w->ep_dispatch;
    w->ep_routing = q->ep_routing >= 0 ? (vp_ep_routing)q->ep_routing : w->ep_routing;
    /* recomputation as the model's implementation does it: Megatron's inside B (the
     * workload), vpipe's own in the schedule's R passes (the spec) */
    if (q->recompute >= 0 && run->arch.impl != VP_IMPL_VPIPE)
        w->recompute = (vp_recompute)q->recompute;
    w->reserve_bytes = q->reserve >= 0 ? q->reserve * GIB : w->reserve_bytes;
    w->dp_overlap = q->dp_overlap >= 0 ? q->dp_overlap : w->dp_overlap;
    if (q->fp8 >= 0 && q->fp8 != VP_REQUEST_FP8_AUTO) /* plan searches auto (vp_hybrid_request) */
        w->fp8 = (vp_fp8)q->fp8;
    w->fp8_params = q->fp8_params;
    w->prec.grad = q->grad_bytes ? q->grad_bytes : w->prec.grad;
    if (q->optimizer_dtype > 0)
        vp_workload_set_optimizer(w, (vp_optimizer_dtype)q->optimizer_dtype);
}

/* --fp8-params needs FP8 multiplies; --grad-bytes 2 or 4, and not below the weights' bytes
 * (vpipe's own model trains in fp32); --attn-kernel names FlashAttention's kernels. */
static vp_status precision_check(const vp__run *run, vp_error *err) {
    const vp_request *q = run->req;
    if (q->framework == VP_FRAMEWORK_TORCHTITAN && q->emit == VP_EMIT_MEGATRON)
        return vp__fail(err, VP_EINVAL,
                        "%s megatron writes Megatron-LM's options: it prices %s megatron, not "
                        "torchtitan",
                        VP__NAME(run, "emit"), VP__NAME(run, "framework"));
    if (q->attn_kernel >= 0 && !run->work.flash)
        return vp__fail(err, VP_EINVAL,
                        "%s picks FlashAttention's kernels, and FlashAttention is off here (%s "
                        "0, or vpipe's own GPT)",
                        VP__NAME(run, "attn_kernel"), VP__NAME(run, "flash"));
    if (q->fp8_params && (q->fp8 < 0 || q->fp8 == VP_FP8_OFF))
        return vp__fail(err, VP_EINVAL,
                        "%s makes the FP8 copies the weights: it needs %s with a recipe (or "
                        "plan's auto)",
                        VP__NAME(run, "fp8_params"), VP__NAME(run, "fp8"));
    if (q->grad_bytes && q->grad_bytes != 2 && q->grad_bytes != 4)
        return vp__fail(err, VP_EINVAL, "%s takes 2 (16-bit gradients) or 4 (fp32), got %d",
                        VP__NAME(run, "grad_bytes"), q->grad_bytes);
    if (q->optimizer_dtype > 0 && run->arch.dtype_bytes > 2)
        return vp__fail(err, VP_EINVAL, "%s %s keeps bf16 optimizer states: %s trains in fp32",
                        VP__NAME(run, "optimizer_dtype"),
                        vp_optimizer_dtype_name((vp_optimizer_dtype)q->optimizer_dtype),
                        run->arch.name);
    if (q->grad_bytes && q->grad_bytes < run->arch.dtype_bytes)
        return vp__fail(err, VP_EINVAL, "%s %d is below the weights' %d bytes: %s trains in fp32",
                        VP__NAME(run, "grad_bytes"), q->grad_bytes, run->arch.dtype_bytes,
                        run->arch.name);
    return VP_OK;
}

/* --model and --gpu resolved. */
/* --recompute-modules: Megatron-LM's modules, with --recompute selective (the price check
 * refuses the ones the model lacks). */
static vp_status recompute_modules(vp__run *run, vp_error *err) {
    const vp_request *q = run->req;
    vp_error why = {0};
    if (!q->recompute_modules)
        return VP_OK;
    if (vp_recompute_modules_parse(q->recompute_modules, &run->work.recompute_modules, &why) !=
        VP_OK)
        return vp__fail(err, why.status, "%s: %s", VP__NAME(run, "recompute_modules"), why.message);
    if (q->recompute != VP_RECOMPUTE_SELECTIVE)
        return vp__fail(err, VP_EINVAL,
                        "%s chooses what selective recomputation reruns: it needs %s selective",
                        VP__NAME(run, "recompute_modules"), VP__NAME(run, "recompute"));
    return VP_OK;
}

static vp_status resolve(vp__run *run, vp_error *err) {
    const vp_request *q = run->req;
    const char *gpu = q->gpu ? q->gpu : "h100-80gb";
    if (vp_arch_resolve(q->model, &run->arch, err) != VP_OK)
        return source_error(run, "model", q->model, err);
    return vp__gpu_resolve(run, gpu, &run->gpu, err);
}

vp_status vp__gpu_resolve(const vp__run *run, const char *name, vp_gpu *gpu, vp_error *err) {
    if (vp_gpu_resolve(name, gpu, err) != VP_OK)
        return source_error(run, "gpu", name, err);
    return VP_OK;
}

/* ZeRO-2 or 3 where the sharding group is one rank (DP 1, and no routed expert with
 * expert-DP above 1) shards nothing, and under a pipeline prices as ZeRO-1 (zero.c):
 * priced as given, and said. */
static vp_status zero_note(vp__run *run, vp_error *err) {
    const vp_workload *w = &run->work;
    long edp = (long)w->tp * w->cp * w->dp / ((long)w->ep * w->etp);
    bool shards = w->dp * w->cp > 1 || (run->arch.experts > 0 && edp > 1);
    if (run->cmd == VP__PLAN || w->zero < 2 || (shards && run->spec.p < 2))
        return VP_OK;
    char *text =
        !shards ? vp__printf("vpipe: note: ZeRO-%d with data parallelism 1 shards nothing: the "
                             "states are whole, as without it\n",
                             w->zero)
                : vp__printf("vpipe: note: ZeRO-%d under a pipeline of %d prices as ZeRO-1: FSDP "
                             "keeps each stage's weights gathered and its gradients whole "
                             "through the step (torchtitan, torch.distributed.pipelining)\n",
                             w->zero, run->spec.p);
    return text ? vp__note(run, text, err) : vp__fail(err, VP_ENOMEM, "out of memory");
}

vp_status vp__real_ready(vp__run *run, vp_error *err) {
    const vp_request *q = run->req;
    if (!q->model) {
        const char *given = vp__first_given(run, workload_keys);
        return given ? vp__fail(err, VP_EINVAL, "%s needs %s (the model it describes)",
                                VP__NAME(run, given), VP__NAME(run, "model"))
                     : VP_OK;
    }
    if (q->memory_model && run->spec.mem.kind != VP_MEM_AT_W)
        return vp__fail(err, VP_EINVAL,
                        "%s does not apply with %s: the model's own tensors give every stage's "
                        "bytes",
                        VP__NAME(run, "memory_model"), VP__NAME(run, "model"));
    if (q->fp8 == VP_REQUEST_FP8_AUTO && run->cmd != VP__PLAN)
        return vp__fail(err, VP_EINVAL,
                        "%s auto searches FP8 as a lever of plan %s; name a recipe (off, "
                        "tensorwise, blockwise, mxfp8, delayed) to price one",
                        VP__NAME(run, "fp8"), VP__NAME(run, "model"));
    if (resolve(run, err) != VP_OK)
        return err->status;
    if (q->layers_per_stage && read_counts(run, q->layers_per_stage, err) != VP_OK)
        return err->status;
    apply_workload(run);
    if (precision_check(run, err) != VP_OK || recompute_modules(run, err) != VP_OK)
        return err->status;
    bool own = run->arch.impl == VP_IMPL_VPIPE;
    if (!own && q->recompute >= 0) /* Megatron's way: inside B, no R passes (vp_workload) */
        run->spec.recompute = VP_RECOMPUTE_NONE;
    run->setup = (vp_price_setup){
        .arch = &run->arch,
        .gpu = &run->gpu,
        .work = &run->work,
        .split = q->split >= 0 ? (vp_split_goal)q->split
                 : own         ? VP_SPLIT_EVEN
                               : VP_SPLIT_TIME,
        .layers_per_stage = run->layers,
        .n_layers_per_stage = run->n_layers,
        .measured = run->have_cost || run->costs.ctx ? &run->spec.costs : NULL,
    };
    if (vp_price_check(&run->setup, err) != VP_OK)
        return err->status;
    run->real = true;
    return zero_note(run, err);
}

const char *vp__optimizer_text(const vp_workload *w) {
    vp_optimizer_dtype d = vp_workload_optimizer(w);
    return d == VP_OPTIMIZER_BF16           ? ", bf16 optimizer states"
           : d == VP_OPTIMIZER_BF16_MOMENTS ? ", bf16 moments"
                                            : "";
}

char *vp__workload_text(const vp_workload *w, char *buf, size_t size) {
    char ep[48] = "", fp8[48] = "";
    if (w->ep > 1 || w->etp > 1)
        snprintf(ep, sizeof ep, ", EP %d, ETP %d, expert-DP %d", w->ep, w->etp,
                 w->tp * w->cp * w->dp / (w->ep * w->etp));
    if (w->fp8 != VP_FP8_OFF)
        snprintf(fp8, sizeof fp8, ", FP8 %s%s", vp_fp8_name(w->fp8),
                 w->fp8_params ? " (FP8 weights)" : "");
    char cp[48] = "", zero[16] = "";
    if (w->cp > 1)
        snprintf(cp, sizeof cp, ", CP %d (%s)", w->cp, vp_cp_comm_name(w->cp_comm));
    if (w->zero && w->dp * w->cp > 1)
        snprintf(zero, sizeof zero, " + ZeRO-%d", w->zero);
    snprintf(buf, size, "TP %d%s%s, DP %d%s%s, seq %d, mbs %d%s%s%s, recompute %s", w->tp,
             w->sp && w->tp > 1 ? " + SP" : "", cp, w->dp, zero, ep, w->seq, w->mbs,
             !w->flash                       ? ""
             : w->attn_kernel == VP_ATTN_FA2 ? ", FlashAttention-2"
                                             : ", FlashAttention",
             fp8, w->prec.grad < 4 ? ", 16-bit gradients" : "", vp_recompute_name(w->recompute));
    snprintf(buf + strlen(buf), size - strlen(buf), "%s", vp__optimizer_text(w));
    if (w->recompute_modules) {
        char names[96];
        snprintf(buf + strlen(buf), size - strlen(buf), " (%s)",
                 vp_recompute_modules_text(w->recompute_modules, names, sizeof names));
    }
    if (w->framework != VP_FRAMEWORK_MEGATRON)
        snprintf(buf + strlen(buf), size - strlen(buf), " (%s%s)", vp_framework_name(w->framework),
                 w->eager ? ", eager" : "");
    return buf;
}

vp_status vp__price(vp__run *run, const char *what, vp_price_result **r, vp_schedule **owned,
                    const vp_schedule **s, vp_error *err) {
    *r = NULL;
    *owned = NULL;
    *s = NULL;
    vp_status rc;
    if (!run->req->schedule && vp_family_find(what)) {
        if (!run->spec.p || !run->spec.m)
            return vp__fail(err, VP_EINVAL, "building '%s' needs %s and %s", what,
                            VP__NAME(run, "p"), VP__NAME(run, "m"));
        rc = vp_price_family(&run->setup, what, &run->spec, r, owned, err);
        *s = *owned;
        return rc;
    }
    rc = vp__obtain(run, what, owned, s, err);
    if (rc == VP_OK)
        rc = vp_price_schedule(&run->setup, *s, r, err);
    return rc;
}

json_t *vp__price_json(const vp_schedule *s, const vp_price_result *r) {
    json_t *o = vp__sim_json(s, r->sim, &r->costs);
    json_t *price = vp__json_take(vp_price_result_json(r));
    if (!o || !price || json_object_update(o, price)) {
        json_decref(o);
        o = NULL;
    }
    json_decref(price);
    return o;
}

void vp__split_text(vp__buf *out, const vp_price_result *r) {
    vp__buf_printf(out, "layers per stage:");
    for (int k = 0; k < r->route_len; k++)
        vp__buf_printf(out, "%s%d", k ? "," : " ", r->layers_per_stage[k]);
    vp__buf_printf(out, "\n");
}

/* One rank's memory row, GiB (with offload, its host GiB after the device's). */
static void memory_row(vp__buf *out, const char *label, const vp_rank_memory *m, bool host) {
    vp__buf_printf(out,
                   "%-5s %8.2f %8.2f %9.2f %11.2f %8.2f %9.2f %7.2f %7.2f %6.2f %8.2f %7.2f %8.2f "
                   "%8.2f",
                   label, m->params / GIB, m->grads / GIB, m->optimizer / GIB, m->activations / GIB,
                   m->buffers / GIB, m->workspace / GIB, m->logits / GIB, m->gathers / GIB,
                   m->fragmentation / GIB, m->context / GIB, m->comm / GIB, m->reserve / GIB,
                   m->total / GIB);
    if (host)
        vp__buf_printf(out, " %8.2f", m->host / GIB);
    vp__buf_printf(out, "\n");
}

/* The offload lines: copy engine and host memory. */
static void offload_text(vp__buf *out, const vp_price_result *r) {
    vp__buf_printf(out,
                   "offload: busiest copy engine %.1f%% of the makespan, compute waited %.3g s "
                   "for copies; host %.2f GiB at most",
                   100 * r->copy_occupancy, r->offload_stall_s, r->host_max_bytes / GIB);
    if (r->host_capacity_bytes > 0)
        vp__buf_printf(out, " of %.2f GiB per GPU", r->host_capacity_bytes / GIB);
    vp__buf_printf(out, "\n");
}

void vp__price_text(vp__buf *out, const vp_price_result *r, const vp_workload *w, bool measured) {
    char setting[256];
    vp__buf_printf(out, "%s  %s on %s  p=%d m=%d  %s  (%d GPUs)\n", r->family, r->model, r->gpu,
                   r->p, r->m, vp__workload_text(w, setting, sizeof setting), r->gpus);
    vp__buf_printf(out,
                   "step %.4g s = makespan %.4g s + optimizer %.3g s + exposed DP reduction "
                   "%.3g s\nMFU %.2f%%   bubble %.2f%%   %.4g samples/s per GPU   %.6g tokens/s\n",
                   r->step_time_s, r->makespan_s, r->optimizer_s, r->dp_exposed_s, 100 * r->mfu,
                   100 * r->bubble, r->samples_per_s_per_gpu, r->tokens_per_s);
    char trust[512];
    vp__buf_printf(out, "%s\n", vp_price_expected_text(r->gpu, &r->expected, trust, sizeof trust));
    if (r->expected_kind.runs > 0)
        vp__buf_printf(out, "%s\n",
                       vp_price_expected_kind_text(&r->expected_kind, trust, sizeof trust));
    vp__buf_printf(out,
                   "mean device slice per microbatch: F %.4g ms, B %.4g ms, W %.4g ms, hop "
                   "%.3g ms%s\n",
                   r->costs.f, r->costs.b, r->costs.w, r->hop_ms, measured ? " (measured)" : "");
    vp__split_text(out, r);
    bool host = r->sim && r->sim->host_peak;
    vp__buf_printf(out,
                   "\nmemory per rank, GiB:\n%-5s %8s %8s %9s %11s %8s %9s %7s %7s %6s %8s %7s %8s "
                   "%8s%s\n",
                   "rank", "params", "grads", "optimizer", "activations", "buffers", "workspace",
                   "logits", "gathers", "frag", "context", "comm", "reserve", "total",
                   host ? "     host" : "");
    for (int d = 0; d < r->p; d++) {
        char label[16];
        snprintf(label, sizeof label, "%d", d);
        memory_row(out, label, &r->memory[d], host);
    }
    double fp8 = 0; /* FP8 weight copies: in each total, not a column */
    for (int d = 0; d < r->p; d++)
        fp8 = r->memory[d].fp8_weights > fp8 ? r->memory[d].fp8_weights : fp8;
    if (fp8 > 0)
        vp__buf_printf(out, "(totals include FP8 weight copies: %.2f GiB at most)\n", fp8 / GIB);
    vp__buf_printf(out, "\nmax %.2f GiB on rank %d of %.2f GiB: %s", r->memory_max_bytes / GIB,
                   r->memory_max_rank, r->capacity_bytes / GIB, r->fits ? "fits" : "does NOT fit");
    if (r->tight) {
        vp__buf_printf(out, ", but tight: %.2f GiB of room, under the %.2f GiB margin plan keeps (",
                       (r->capacity_bytes - r->memory_max_bytes) / GIB, r->margin_bytes / GIB);
        if (r->expected.memory_runs > 0)
            vp__buf_printf(out, "the %.1f%% mean memory error measured on %s)",
                           100 * r->expected.memory_mean, r->gpu);
        else
            vp__buf_printf(out, "10%% of the capacity: no peak measured on %s)", r->gpu);
    }
    vp__buf_printf(out, "\n");
    if (host)
        offload_text(out, r);
    char *overlap = vp_price_overlap_text(r);
    if (overlap)
        vp__buf_printf(out, "\n%s", overlap);
    free(overlap);
}
