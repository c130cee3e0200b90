/* Shared by the files of src/hybrid (not part of the public API). */
#ifndef VPIPE_HYBRID_INTERNAL_H
#define VPIPE_HYBRID_INTERNAL_H

#include "vpipe/hybrid.h"

/* The family index of "v-block": one past the registered families. */
#define VP__HY_VBLOCK vp_family_count()

/* The V building-block levels of one pipeline degree: the blocks on the memory-budget
 * planner's frontier, by decreasing peak (fastest first). */
typedef struct vp__hy_levels {
    int pp;
    vp_vblock *blocks;
    int n;
} vp__hy_levels;

/* Finds them for pp (vp_plan_run at unit costs, m = pp, with threads). VP_ENOMEM, or the
 * planner's errors. */
vp_status vp__hy_levels_find(int pp, int threads, vp__hy_levels *out, vp_error *err);
void vp__hy_levels_release(vp__hy_levels *levels);

/* The workload and pricing setup of config under req (config's degrees applied). */
typedef struct vp__hy_setup {
    vp_workload work;
    vp_price_setup setup;
} vp__hy_setup;

void vp__hy_setup_make(const vp_hybrid_request *req, const vp_hybrid_config *config,
                       vp__hy_setup *out);

/* What evaluating one configuration found. */
typedef enum {
    VP__HY_PRICED = 0,  /* simulated: config's figures set (fits or not) */
    VP__HY_OVER = 1,    /* built, over the capacity by its op order: memory_max_bytes set */
    VP__HY_REFUSED = 2, /* the family refused the shape */
    VP__HY_FAILED = 3   /* an error (out of memory): err set */
} vp__hy_verdict;

/* A search's memo of the schedules of families whose order ignores the costs
 * (vp_family.costs_free), built once per family, PP, m and chunk count and handed out as
 * copies (memo.c). Thread-safe; bounded (past its size it builds afresh). */
typedef struct vp__hy_memo vp__hy_memo;

vp__hy_memo *vp__hy_memo_new(void); /* NULL: out of memory */
void vp__hy_memo_free(vp__hy_memo *memo);

/* vp_price_build(lay, family, spec, out, mean, err), its schedule taken from memo (NULL:
 * none) when the family ignores the costs and spec asks for no vocabulary parallelism,
 * recomputation or offload, else built (and kept there). */
vp_status vp__hy_memo_build(vp__hy_memo *memo, const vp_price_layout *lay, const char *family,
                            const vp_spec *spec, vp_schedule **out, bool *mean, vp_error *err);

/* Evaluates config under req (family, degrees and m set) on shape (a schedule of the
 * family's shape at config->pp; its ops are not read): "v-block" runs config's block when
 * its params are set, else the fastest of levels (pp's) that fits; other families build
 * through memo (NULL: none). With priced non-NULL, keeps the result and schedule there,
 * and prices even over the capacity. Thread-safe. */
vp__hy_verdict vp__hy_evaluate(const vp_hybrid_request *req, const vp_schedule *shape,
                               const vp__hy_levels *levels, vp__hy_memo *memo,
                               vp_hybrid_config *config, vp_hybrid_priced *priced, vp_error *err);

/* The margin req keeps, bytes: its own, or (negative) vp_price_margin_default. */
double vp__hy_margin(const vp_hybrid_request *req);

/* Fills config's group from its family and recomputation. */
void vp__hy_group(vp_hybrid_config *config);

/* The levers beside DP x TP x PP of c, ", CP 2, EP 8, ETP 1, FP8 tensorwise, ZeRO-3" (""
 * with none; ZeRO only from stage 2), into buf of size >= 1 (result.c); returns buf. */
const char *vp__hy_levers(const vp_hybrid_config *c, char *buf, size_t size);

/* Context parallelism (cp.c): whether CP degree cp may split the sequence at TP tp under
 * req (fixed, or dividing the GPUs per TP group with 2 chunks of the sequence per rank). */
bool vp__hy_cp_legal(const vp_hybrid_request *req, int tp, int cp);
/* Whether the search tries CP degree cp at TP tp and PP pp (searched CP only): always CP 1;
 * CP > 1 only while the next smaller CP degree the point could take leaves the sequence's
 * activations or the pipeline short (its DP does not divide the batch, gives fewer
 * sequences per DP rank than stages, or even with full recomputation one sequence's
 * activations do not fit beside model states that would: CP=1 cannot fit there, or its
 * bubble makes it slower). Past that, CP only adds its exchange and shrinks the matrix
 * multiplies of its twin at CP 1 (the same GPUs, more DP) without buying memory or
 * microbatches. */
bool vp__hy_cp_wanted(const vp_hybrid_request *req, int tp, int pp, int cp);

/* An export's context-parallel settings of config (nothing at CP 1) into b: Megatron-LM's
 * flags (megatron) or torchtitan's [parallelism] keys. */
struct vp__buf;
void vp__hy_cp_export(struct vp__buf *b, const vp_hybrid_request *req,
                      const vp_hybrid_config *config, bool megatron);

/* The one-sentence reason of h (its top, best and versus set). */
void vp__hy_reason(vp_hybrid *h);

#endif
