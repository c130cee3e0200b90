/* Trusting the figures: measured training runs (a RUNS.csv) priced as any configuration,
 * the accuracy of those prices against what the runs measured, and an accelerator whose
 * constants are fitted to a user's own runs.
 *
 * Module `calibrate` (src/calibrate/). Depends on price (every run is priced as `simulate
 * --model` prices it), families, sim, schedule and base.
 *
 * RUNS.csv. A header line, then one run a line (RFC 4180: fields may be quoted, a quote
 * inside doubled; lines starting with '#' and blank lines are skipped). These columns are
 * required, in any order, so that scripts can rely on them:
 *   model,gpu,tp,pp,vp,dp,cp,ep,mbs,gbs,seq,schedule,recompute,flash,sp,zero,fp8,
 *   step_time_s,tokens_per_s_per_gpu,peak_mem_gib
 * model is a preset or a config.json path, gpu a preset or an accelerator JSON file
 * (relative paths from the file's folder); an empty cell takes the default (gpu: the
 * caller's; tp, pp, vp, dp, cp, ep, mbs 1; gbs dp x mbs; seq the model's; schedule 1F1B;
 * recompute none; flags 0). recompute is none, selective or full; schedule a family
 * (vpipe list); flags (flash, sp) are 0 or 1, fp8 an FP8 recipe (off, tensorwise,
 * blockwise, mxfp8; 0 is off, 1 tensorwise), zero 0 or 1 (the distributed
 * optimizer); dp is GPUs / (TP x PP x CP), and ep > 1 (a mixture-of-experts model) folds
 * the expert layers as EP x expert-DP over the same GPUs (vp_workload). Each run gives step_time_s
 * or tokens_per_s_per_gpu (both: they must agree within 2%) and may give peak_mem_gib. "*" in mbs,
 * vp, schedule or recompute means "not published": the fastest that fits of what Megatron-LM runs
 * (1F1B or interleaved with the layers dividing evenly), every microbatch size and recomputation.
 * Optional columns: id, source, cite, note (labels); dp_overlap (empty: the frameworks'
 * bucketed overlap; 0: the reduction after the backward, a share otherwise); tp_overlap
 * (0/1: tensor-parallel communication overlapped with the matrix multiplies); pp_overlap
 * (0/1: pipeline sends overlapped with compute, else they block both ends); grad_bytes
 * (bytes per gradient element the data-parallel reduction moves: 4, or 2 for a 16-bit
 * reduction); mem_kind (what peak_mem_gib counts: process, reserved or allocated);
 * tuned (0/1: the run set a preset's constants); expressible (a reason the run cannot be
 * priced yet); ep_overlap (0/1: Megatron-LM's --overlap-moe-expert-parallel-comm);
 * ep_dispatch (alltoall, the default, or deepep: vp_ep_dispatch); ep_routing (random, the
 * default, or round-robin: vp_ep_routing, which experts a token picks); fp8_params (0/1: the FP8
 * copies are the weights, vp_workload.fp8_params); attn_kernel (fused, the default, or fa2:
 * vp_attn_kernel); framework (megatron, the default, or torchtitan: vp_framework);
 * recompute_modules (Megatron-LM's, with recompute selective: vp_recompute_module names,
 * "layernorm moe_act"); optimizer_dtype (fp32, the default, bf16 or bf16-moments:
 * vp_optimizer_dtype, vpipe's --optimizer-dtype); cp_comm (p2p, the default, or allgather,
 * with cp > 1: vp_cp_comm, how CP exchanges keys and values); eager (0/1, with framework
 * torchtitan: run without torch.compile, vp_workload.eager). Other columns are ignored
 * (vp_run_set.ignored names them).
 */
#ifndef VPIPE_CALIBRATE_H
#define VPIPE_CALIBRATE_H

#include <stdbool.h>

#include "vpipe/price.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A "*" cell: not published, searched. */
#define VP_RUN_ANY (-1)

/* What a measured peak counts: the whole process (nvidia-smi), the caching allocator's
 * reserved bytes, or the bytes allocated to tensors. */
typedef enum { VP_MEM_PROCESS = 0, VP_MEM_RESERVED = 1, VP_MEM_ALLOCATED = 2 } vp_peak_kind;

/* One run: a row of RUNS.csv as written (defaults applied). */
typedef struct vp_run {
    int line;                   /* in the file, 1-based */
    char id[32], source[32];    /* labels ("" when absent) */
    char model[256], gpu[256];  /* as written; gpu "" is the caller's accelerator */
    int tp, pp, vp, dp, cp, ep; /* degrees; vp chunks per device (VP_RUN_ANY: searched) */
    int mbs, gbs, seq;          /* mbs VP_RUN_ANY: searched; seq 0: the model's default */
    char schedule[32];          /* a family, "*" (searched) */
    int recompute;              /* a vp_recompute, or VP_RUN_ANY */
    bool flash, sp, tp_overlap, pp_overlap;
    vp_fp8 fp8;                   /* the FP8 recipe (VP_FP8_OFF: 16-bit) */
    bool fp8_params;              /* FP8 weights (vp_workload.fp8_params) */
    vp_attn_kernel attn_kernel;   /* FlashAttention's kernels (with flash) */
    vp_framework framework;       /* what ran it */
    bool eager;                   /* torchtitan without torch.compile (vp_workload.eager) */
    unsigned recompute_modules;   /* with selective: a set of vp_recompute_module (0: none named) */
    vp_optimizer_dtype optimizer; /* what the optimizer's states keep */
    vp_cp_comm cp_comm;           /* how CP exchanges keys and values */
    bool ep_overlap;              /* the combined 1F1B (vp_workload.ep_overlap) */
    vp_ep_dispatch ep_dispatch;   /* how its all-to-alls move tokens */
    vp_ep_routing ep_routing;     /* which experts a token picks */
    int zero;                     /* the ZeRO stage, 0-3 */
    double dp_overlap;            /* VP_OVERLAP_MODELLED or a share in [0, 1] */
    int grad_bytes;               /* 0: the precision's gradient bytes */
    double step_time_s, tokens_per_s_per_gpu, peak_mem_gib; /* 0: not given */
    vp_peak_kind mem_kind;
    bool tuned;
    char cite[512], note[256];
    char why_not[256]; /* "" when vpipe can express the run, else the reason */
} vp_run;

typedef struct vp_run_set {
    vp_run *runs;
    int n;
    char name[256];      /* the file's name, for messages */
    char base_dir[1024]; /* where relative model and gpu paths are found ("": as given) */
    char ignored[256];   /* columns that were not read, comma-separated ("" none) */
} vp_run_set;

/* Reads a RUNS.csv (text of len bytes; name is used in messages and as the folder of
 * relative paths when it has one). Rows vpipe cannot express yet (cp > 1, zero > 1,
 * an `expressible` reason) are kept with why_not set. VP_EPARSE with the line and the
 * character column for a missing or duplicated column, a malformed or out-of-range cell,
 * a run without a measured time or with two that disagree, unbalanced quotes; VP_ELIMIT
 * over 100000 runs or a 4096-byte cell; VP_ENOMEM. Caller frees with vp_calibrate_free. */
VP_API vp_status vp_calibrate_read(const char *text, size_t len, const char *name, vp_run_set **out,
                                   vp_error *err);

/* The same from a file (at most 16 MiB; vp_read_file's errors, then vp_calibrate_read's). */
VP_API vp_status vp_calibrate_read_file(const char *path, vp_run_set **out, vp_error *err);

/* Reads n RUNS.csv files into one set, in order: each file's relative model and gpu paths
 * are rewritten from its own folder (the set's base_dir is ""). Errors of
 * vp_calibrate_read_file; VP_ELIMIT over 100000 runs in all. */
VP_API vp_status vp_calibrate_read_files(const char *const *paths, int n, vp_run_set **out,
                                         vp_error *err);

VP_API void vp_calibrate_free(vp_run_set *set);

/* What one run priced at. */
typedef struct vp_run_price {
    char gpu[64];    /* the accelerator's name */
    char family[32]; /* what was priced (the search's choice for "*" cells) */
    int v, mbs;      /* chunks per device (0 but for interleaved), microbatch size */
    vp_recompute recompute;
    double step_time_s, tokens_per_s_per_gpu, mfu;
    double memory_bytes; /* the largest rank's memory of the run's mem_kind */
    double total_bytes;  /* the largest rank's whole process (what fits is checked on) */
    double capacity_bytes;
    bool fits;
} vp_run_price;

/* Prices run i of set on gpu (NULL: the run's own accelerator, or h100-80gb when it names
 * none). The model and accelerator are resolved as --model and --gpu resolve them
 * (relative paths from set->base_dir). VP_EUNSUPPORTED with the run's why_not when vpipe
 * cannot express it; VP_EINVAL when the configuration does not hold together (gbs not a
 * multiple of dp x mbs, a family refusing the shape, ...), naming the line; errors of
 * resolving and pricing. */
VP_API vp_status vp_calibrate_price(const vp_run_set *set, int i, const vp_gpu *gpu,
                                    vp_run_price *out, vp_error *err);

/* ---- accuracy ------------------------------------------------------------------------ */

/* One run against its price: signed errors of the predicted throughput (tokens/s per GPU:
 * predicted / measured - 1) and memory (predicted / measured - 1, when measured). */
typedef struct vp_accuracy_row {
    int run;     /* index in the set */
    bool priced; /* false: why_not or err says why */
    vp_error err;
    vp_run_price price;
    double measured_tokens, error; /* tokens/s per GPU measured; error as above */
    bool has_memory;
    double measured_memory_bytes, memory_error;
} vp_accuracy_row;

/* The rows of one source or one accelerator. */
typedef struct vp_accuracy_group {
    char name[64];
    int rows, priced;             /* runs, and those vpipe priced */
    double mean, worst;           /* mean absolute and largest absolute throughput error */
    double worst_signed;          /* the largest one's sign kept */
    int tuned;                    /* priced runs that set a preset constant */
    double held_mean, held_worst; /* over the others (0 when none) */
    int memory;                   /* priced runs with a measured peak */
    double memory_mean, memory_worst;
    int not_fitting;        /* priced runs that ran but are predicted not to fit */
    long pairs, concordant; /* pairs of priced runs whose published model FLOP/s per GPU
                               differ by more than 1%, and those vpipe orders alike */
} vp_accuracy_group;

typedef struct vp_accuracy {
    vp_accuracy_row *rows; /* [n] in the set's order */
    int n;
    vp_accuracy_group *by_source, *by_gpu;
    int n_sources, n_gpus;
    double elapsed_s; /* pricing every row */
} vp_accuracy;

/* Prices every run of set with its own accelerator and the default presets, and sums the
 * errors per source and per accelerator (a run vpipe cannot express or fails to price is
 * listed, unpriced, with the reason). VP_ENOMEM only: a run that fails is a row. */
VP_API vp_status vp_calibrate_accuracy(const vp_run_set *set, vp_accuracy **out, vp_error *err);
VP_API void vp_calibrate_accuracy_free(vp_accuracy *acc);

/* The accuracy as one JSON object: rows (id, source, line, model, gpu, tp, pp, vp, dp,
 * mbs, gbs, seq, schedule, recompute, cite, note, tuned, priced, why (when not),
 * measured_tokens_per_s_per_gpu, tokens_per_s_per_gpu, error, family, v, chosen mbs and
 * recompute, fits, and measured_memory_gib, memory_gib, memory_error with a peak),
 * sources and gpus (groups: name, rows, priced, mean, worst, worst_signed, tuned,
 * held_out_mean, held_out_worst, memory, memory_mean, memory_worst, not_fitting, pairs,
 * concordant), elapsed_s. New string (caller frees with free()), NULL when memory runs
 * out. */
VP_API char *vp_calibrate_accuracy_json(const vp_accuracy *acc, const vp_run_set *set);

/* ---- calibration ----------------------------------------------------------------------- */

/* The constants a calibration can fit: the speed of the matrix multiplies
 * (gemm_efficiency), the memory-bound kernels' traffic (act_traffic_f and _b, scaled
 * together), communication efficiency, the per-layer and per-chunk overheads, the
 * attention kernels' efficiency, and memory beyond the tensors: a constant per GPU
 * (context_bytes) and a fraction of the allocated bytes (frag_fraction). */
typedef enum {
    VP_FIT_GEMM,
    VP_FIT_MEMORY_BOUND,
    VP_FIT_COMM,
    VP_FIT_LAYER,
    VP_FIT_CHUNK,
    VP_FIT_ATTENTION,
    VP_FIT_CONTEXT,
    VP_FIT_FRAGMENTATION,
    VP_FIT_COUNT
} vp_fit_constant;

/* The name a constant is asked by ("gemm", "memory", "comm", "layer", "chunk",
 * "attention", "context", "fragmentation"), NULL past the end. */
VP_API const char *vp_calibrate_constant_name(int k);

/* The bits of a comma-separated list of names into *bits. VP_EINVAL naming an unknown
 * one and the known ones. */
VP_API vp_status vp_calibrate_constants_parse(const char *list, unsigned *bits, vp_error *err);

typedef struct vp_calibrate_request {
    const vp_run_set *runs;
    const vp_gpu *base; /* the accelerator the constants start from, in place of the one
                           the runs name; NULL: that one (they must all name the same) */
    unsigned fit;       /* bit (1 << k) per constant to fit; 0: every time constant but
                           attention, with the memory ones when runs measured peaks */
    const char *name;   /* of the calibrated accelerator; NULL: base's + "-calibrated" */
} vp_calibrate_request;

/* One run against the fitted accelerator: throughput (tokens/s per GPU) measured, fitted,
 * and predicted with the constants fitted without it (leave-one-out); the same for the
 * memory peak when measured. Errors are predicted / measured - 1. */
typedef struct vp_calibration_run {
    int run;
    double measured, fitted, error, loo_error;
    bool has_memory;
    double measured_memory, fitted_memory, memory_error, loo_memory_error; /* bytes */
} vp_calibration_run;

typedef struct vp_calibration {
    vp_gpu base, gpu;       /* where the fit started, and the fitted accelerator (its
                               expected error: the leave-one-out figures below) */
    unsigned asked, pinned; /* constants fitted, and those the runs pinned down (their
                               standard error under 30% of the prior spread) */
    double base_value[VP_FIT_COUNT], value[VP_FIT_COUNT], sd[VP_FIT_COUNT]; /* in the units
                                vp_calibrate_text prints */
    vp_calibration_run *runs;                                               /* [n] */
    int n, memory_runs, iterations;
    double fit_mean, fit_worst, loo_mean, loo_median, loo_worst;
    double memory_fit_mean, memory_loo_mean, memory_loo_worst;
    double elapsed_s;
} vp_calibration;

/* Fits the constants asked to every run of req->runs by least squares on the logarithm of
 * predicted over measured throughput (and, for the memory constants, on the peaks the runs
 * measured), starting from the base and pulled weakly towards it, so that a constant the
 * runs cannot pin down is held by that pull and reported as not pinned. Each
 * run is priced as vp_calibrate_price prices it; its configuration ("*" cells chosen) and
 * schedule are fixed with the base accelerator, then re-timed. Then, for every run, the
 * constants are fitted again without it (one Gauss-Newton step from the full fit) and the
 * run predicted. VP_EUNSUPPORTED naming the first run vpipe cannot express; VP_EINVAL when
 * runs name different accelerators, a run's measured throughput would run its model's
 * FLOPs beyond the base's peak (its FP8 recipe's peak with FP8; the line named), the base
 * is not a kernel-model accelerator, or fewer runs measure a time (or a peak) than the
 * constants explicitly asked of them, naming them; errors of pricing a run (its line
 * named); VP_ENOMEM. */
VP_API vp_status vp_calibrate_fit(const vp_calibrate_request *req, vp_calibration **out,
                                  vp_error *err);
VP_API void vp_calibrate_fit_free(vp_calibration *c);

/* The fit in words: the constants (base, fitted, standard error, pinned or why not), every
 * run's measured, fitted and leave-one-out figures, the summary, and which constants the
 * runs could not pin down. New string (caller frees), NULL when memory runs out. */
VP_API char *vp_calibrate_text(const vp_calibration *c, const vp_run_set *runs);

/* The same as one JSON object: gpu (the fitted accelerator as vp_gpu_json writes it),
 * constants ({name, what, base, fitted, sd, asked, pinned}), runs ({id, line, measured,
 * fitted, error, loo_error[, measured_memory_gib, memory_gib, memory_error,
 * loo_memory_error]}), fit_mean, fit_worst, loo_mean, loo_median, loo_worst, memory_runs,
 * memory_fit_mean, memory_loo_mean, memory_loo_worst, not_pinned (names), iterations,
 * elapsed_s. New string, NULL when memory runs out. */
VP_API char *vp_calibrate_json(const vp_calibration *c, const vp_run_set *runs);

#ifdef __cplusplus
}
#endif

#endif
