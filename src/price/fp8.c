/* FP8 training (vp_workload.fp8): what each recipe changes in a pass's time, in the tensors
 * a layer saves and in each rank's memory.
 *
 * The multiplies. The linears' matrix multiplies (the ones vp__piece_gemms marks fp8: not
 * the router, not the head, not the attention core) run in F, B and W at the accelerator's
 * FP8 rate: a 16-bit multiply's seconds times peak_flops / (fp8 peak x the recipe's
 * efficiency); the edge losses of the kernel model stay as they are. The efficiencies are
 * kernel measurements relative to twice the 16-bit kernel on the same shapes:
 * bench/measured/h100-sxm-kernels.json (bench/gpu_kernels.py on an H100 SXM 80GB, 700 W,
 * torch 2.11, CUDA 13.0; the mean over the nine layer shapes of the anchor runs, m 4096 or
 * 8192): per-tensor scaling (delayed or current; cuBLAS's kernel either way) 0.906 of the
 * 2x, 128-element blocks (1 x 128 activations, 128 x 128 weights) 0.799, about 12% below
 * (their scales applied per 128 of K outside the tensor cores); per-row scaling, no recipe
 * here, measured 0.864. MXFP8 applies its scales inside Blackwell's tensor cores: taken at
 * the per-tensor figure (not measured: Hopper has no MXFP8).
 *
 * The casts. Each FP8 multiply's operands are quantised by memory-bound kernels at
 * hbm_efficiency of the HBM bandwidth, per element: per-tensor current scaling first reads
 * the tensor for its amax (2 bytes), then reads it again (2) and writes the FP8 copy and
 * its transpose (1 + 1; Hopper's FP8 kernels take one layout, W reads the transpose):
 * 6 bytes; delayed scaling takes its scale from the amax history (the cast records the
 * amax as it goes): 4 bytes; blockwise (1 x 128 activations, 128 x 128 weights) and MXFP8
 * (32 elements, a one-byte power-of-two scale each) find each block's scale inside the
 * cast: 2 + 1 + 1 bytes plus a 4-byte scale per 128 elements or a 1-byte scale per 32,
 * both ways. F casts
 * each FP8 multiply's input, B its output gradient (W uses the transposes both made); with
 * sequence parallelism a residual-width tensor is cast on the rank's sequence shard before
 * it is gathered (Transformer Engine gathers FP8). The weights are cast once per step (the
 * first microbatch's F; Transformer Engine keeps the copies for the others), counted with
 * the optimizer step. These are fused kernels' bytes (Transformer Engine's cast-transpose):
 * the same per-tensor cast as eager PyTorch kernels (abs, amax, scale, convert) measured
 * about 19 bytes per element of the input at the copy bandwidth on the H100 above
 * (cast_us), what a framework without such fusion pays.
 *
 * Memory, as Megatron-LM with Transformer Engine keeps it: the FP8 copy of every FP8
 * linear's weight and its transpose (2 bytes per element, plus the block scales)
 * beside the 16-bit weights, master weights, gradients and moments (unchanged); each
 * linear's input that F keeps for W is saved in FP8 (1 byte per element: the transpose W
 * reads), every other saved tensor stays 16-bit.
 *
 * FP8 weights (vp_workload.fp8_params: Megatron-LM's --fp8-param-gather, which NVIDIA's
 * FP8 recipes set; torchtitan's enable_fsdp_float8_all_gather): the FP8 copy is the weight,
 * no 16-bit copy of an FP8 linear's weight is kept. The weights column then holds the FP8
 * weight and its transpose in the 2 bytes per element it counts, and the copies only their
 * scales; under ZeRO-3 the shard is the FP8 weight and the transposes stay whole, 1 byte
 * per element (Megatron-FSDP's keep_fp8_transpose_cache). Not modelled: the weight gathers
 * move 1 byte per FP8 element, not 2 (they are priced at 16 bits, conservatively); the
 * optimizer casts its master shard and the gathered weights are transposed, priced as the
 * cast once per step.
 *
 * torchtitan (vp_workload.framework; torchao's Float8Linear) keeps no FP8 copies: F casts
 * each FP8 linear's weight as it uses it and B casts it again (it saved the 16-bit weight),
 * every microbatch, and the linears' inputs are saved at 16 bits. With its float8 all-gather
 * (fp8_params) the gathered weight is the FP8 one; the casts are priced the same. Without
 * torch.compile (vp_workload.eager) torchao's casts are those eager kernels: EAGER_CAST
 * bytes per element, the measurement above. */
#include "base/internal.h"
#include "price/price_internal.h"

/* Bytes per element of the eager per-tensor cast (abs, amax, scale, convert): its time on the
 * H100 above at the copy bandwidth, per element of the input, about 19 over the layer
 * shapes of bench/measured/h100-sxm-kernels.json (cast_us, hbm_copy_gb_s). */
#define EAGER_CAST 19.0

/* Bytes per element of one cast (read, amax pass, FP8 copy and transpose, scales). */
static double cast_bytes(vp_fp8 f) {
    switch (f) {
    case VP_FP8_TENSORWISE:
        return 2 + 2 + 1 + 1;
    case VP_FP8_DELAYED:
        return 2 + 1 + 1;
    case VP_FP8_BLOCKWISE:
        return 2 + 1 + 1 + 2 * 4.0 / 128;
    case VP_FP8_MXFP8:
        return 2 + 1 + 1 + 2 * 1.0 / 32;
    default:
        return 0;
    }
}

/* Bytes per weight element of the FP8 copies kept beside the weights column: copy and
 * transpose, or with FP8 weights (what is not in the weights column) the transposes under
 * ZeRO-3 only; and their scales. */
static double copy_bytes(const vp_workload *t) {
    if (t->framework == VP_FRAMEWORK_TORCHTITAN)
        return 0;
    double copies = !t->fp8_params ? 2 : t->zero >= 3 ? 1 : 0;
    switch (t->fp8) {
    case VP_FP8_TENSORWISE:
    case VP_FP8_DELAYED:
        return copies;
    case VP_FP8_BLOCKWISE:
        return copies + 2 * 4.0 / (128 * 128);
    case VP_FP8_MXFP8:
        return copies + 2 * 1.0 / 32;
    default:
        return 0;
    }
}

double vp__fp8_efficiency(vp_fp8 f) {
    return f == VP_FP8_BLOCKWISE ? 0.799 : f == VP_FP8_OFF ? 0 : 0.906;
}

vp_status vp__fp8_check(const vp_arch *a, const vp_workload *t, const vp_gpu *g, vp_error *err) {
    if (t->fp8 == VP_FP8_OFF)
        return VP_OK;
    if (a->impl == VP_IMPL_VPIPE)
        return vp__fail(err, VP_EINVAL,
                        "FP8 %s: vpipe's own model trains in fp32 and has no FP8 multiplies",
                        vp_fp8_name(t->fp8));
    if (!g)
        return VP_OK;
    if (t->fp8 == VP_FP8_MXFP8 && !(g->mxfp8_peak_flops > 0))
        return vp__fail(err, VP_EINVAL,
                        "accelerator %s has no MXFP8 tensor cores (mxfp8_peak_tflops 0): use "
                        "the tensorwise or blockwise recipe%s",
                        g->name, g->fp8_peak_flops > 0 ? "" : " on an accelerator with FP8");
    if (!(g->fp8_peak_flops > 0))
        return vp__fail(err, VP_EINVAL,
                        "accelerator %s has no FP8 tensor cores (fp8_peak_tflops 0): FP8 %s "
                        "needs one (an H100 or later)",
                        g->name, vp_fp8_name(t->fp8));
    return VP_OK;
}

double vp__fp8_gemm_scale(const vp_price_setup *su) {
    vp_fp8 f = su->work->fp8;
    if (f == VP_FP8_OFF)
        return 1;
    const vp_gpu *g = su->gpu;
    double peak = f == VP_FP8_MXFP8 ? g->mxfp8_peak_flops : g->fp8_peak_flops;
    return g->peak_flops / (peak * vp__fp8_efficiency(f));
}

/* Elements of a tensor of width cols over rows tokens a rank casts: a residual-width
 * tensor on the rank's sequence shard with sequence parallelism. */
static double cast_elements(const vp_workload *t, const vp_arch *a, const vp__gemm *g,
                            double cols) {
    bool shard = t->sp && t->tp > 1 && !g->expert && cols == a->hidden;
    return g->m * cols * g->count / (shard ? t->tp : 1);
}

void vp__fp8_cast_seconds(const vp_price_setup *su, const vp__gemm *gm, int n, double *f,
                          double *b) {
    *f = *b = 0;
    const vp_workload *t = su->work;
    if (t->fp8 == VP_FP8_OFF)
        return;
    double in = 0, grad = 0;
    for (int i = 0; i < n; i++)
        if (gm[i].fp8) {
            in += cast_elements(t, su->arch, &gm[i], gm[i].k);
            grad += cast_elements(t, su->arch, &gm[i], gm[i].n);
            if (t->framework == VP_FRAMEWORK_TORCHTITAN) /* the weight, at each use */
                in += gm[i].n * gm[i].k * gm[i].count, grad += gm[i].n * gm[i].k * gm[i].count;
        }
    double rate = su->gpu->hbm_bandwidth * su->gpu->hbm_efficiency /
                  (t->eager ? EAGER_CAST : cast_bytes(t->fp8));
    *f = in / rate;
    *b = grad / rate;
}

/* FP8 weight elements of one piece on one rank. */
static double fp8_weights(const vp_arch *a, const vp_workload *t, vp_price_part part,
                          unsigned kind) {
    vp__gemm gm[VP__MAX_GEMMS];
    int n = vp__piece_gemms(a, t, part, kind, gm);
    double w = 0;
    for (int i = 0; i < n; i++)
        w += gm[i].fp8 ? gm[i].n * gm[i].k * gm[i].count : 0;
    return w;
}

double vp__fp8_weight_elements(const vp_price_setup *su, int l0, int l1) {
    if (su->work->fp8 == VP_FP8_OFF)
        return 0;
    int counts[VP__KINDS];
    vp__kind_counts(su->arch, l0, l1, counts);
    double w = 0;
    for (unsigned k = 0; k < VP__KINDS; k++)
        w += counts[k] ? counts[k] * fp8_weights(su->arch, su->work, VP_PRICE_LAYER, k) : 0;
    return w;
}

double vp__fp8_copy_bytes(const vp_price_setup *su, int l0, int l1) {
    return vp__fp8_weight_elements(su, l0, l1) * copy_bytes(su->work);
}

double vp__fp8_step_seconds(const vp_price_setup *su, double elements) {
    const vp_gpu *g = su->gpu;
    vp_fp8 f = su->work->fp8;
    if (su->work->framework == VP_FRAMEWORK_TORCHTITAN)
        return 0; /* torchao casts the weights in the passes (vp__fp8_cast_seconds) */
    return elements * cast_bytes(f) / (g->hbm_bandwidth * g->hbm_efficiency);
}

double vp__fp8_saved_scale(const vp_arch *a, const vp_workload *t, vp_keep keep) {
    bool fp8 = t->fp8 != VP_FP8_OFF && a->impl == VP_IMPL_MEGATRON &&
               t->framework == VP_FRAMEWORK_MEGATRON && keep == VP_KEEP_F_W;
    return fp8 ? 1.0 / a->dtype_bytes : 1;
}

vp_fp8 vp_price_fp8_best(const vp_gpu *g) {
    return g->mxfp8_peak_flops > 0 ? VP_FP8_MXFP8
           : g->fp8_peak_flops > 0 ? VP_FP8_TENSORWISE
                                   : VP_FP8_OFF;
}
