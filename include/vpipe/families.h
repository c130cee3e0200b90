/* Schedule families: named generators that turn a spec into a schedule value.
 *
 * Module `families` (src/families/): one file per family and the registry. Depends on
 * block (building blocks, the V slot grid), sim and schedule.
 */
#ifndef VPIPE_FAMILIES_H
#define VPIPE_FAMILIES_H

#include "vpipe/block.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest schedule, in ops, a generator builds unless the spec allows more: about 2-5 GB
 * of schedule and simulation at 20-50 bytes per op. */
#define VP_MAX_OPS_DEFAULT 100000000L

/* What a generator is asked for. Families ignore the fields they do not use. */
typedef struct vp_spec {
    int p;                  /* devices, >= 1 */
    int m;                  /* microbatches, >= 1 */
    int v;                  /* chunks per device for `interleaved` (0: family default, 2) */
    vp_costs costs;         /* per-slice costs, read by cost-aware families */
    vp_memcfg mem;          /* memory model, read by memory-limited families */
    double mem_limit;       /* memory limit in units for `zb-auto`-style families (0: preset) */
    long max_ops;           /* refuse a schedule that may hold more ops (0: VP_MAX_OPS_DEFAULT) */
    int threads;            /* worker threads a search may use (0 or 1: the calling thread only);
                               results never depend on it */
    vp_recompute recompute; /* build every family's recomputing version (vp_schedule_recompute) */
    vp_offload offload;     /* and its offloading one (vp_schedule_offload under costs and mem;
                               policy none: no offload) */
} vp_spec;

/* p, m with default costs and memory model, v = 0, mem_limit = 0, the default op limit,
 * one thread, no recomputation, no offload. */
VP_API vp_spec vp_spec_make(int p, int m);

/* The most ops any family builds for spec: 3 passes per (stage, microbatch), 4 with
 * recomputation, 2 more with offload, on at most max(2, v) stages per device. */
VP_API double vp_spec_max_ops(const vp_spec *spec);

/* VP_ELIMIT when vp_spec_max_ops(spec) exceeds the spec's op limit, with the estimate,
 * the limit and what would lift it (a larger max_ops, `--max-ops` on the command line);
 * VP_OK otherwise. Costs nothing: check before allocating. */
VP_API vp_status vp_spec_check_size(const vp_spec *spec, vp_error *err);

typedef struct vp_family {
    const char *name;    /* CLI name, e.g. "1f1b" */
    const char *summary; /* one line: what it is */
    const char *needs;   /* one line: constraints on p, m, v */
    vp_status (*build)(const vp_spec *spec, vp_schedule **out, vp_error *err);
} vp_family;

/* The registry, in presentation order. vp_family_at returns NULL past the end. */
VP_API int vp_family_count(void);
VP_API const vp_family *vp_family_at(int i);

/* Family by name (exact match); NULL when unknown. */
VP_API const vp_family *vp_family_find(const char *name);

/* Builds family `name` for spec into a new schedule (caller frees); with spec->recompute,
 * its recomputing version (vp_schedule_recompute); with spec->offload, its offloading one
 * (vp_schedule_offload under spec's costs and memory model). VP_EINVAL with a message naming the
 * constraint when the spec does not fit the family (or the name is unknown), VP_ELIMIT
 * (vp_spec_check_size) before allocating anything when it would be too large; the result
 * always passes vp_schedule_validate. */
VP_API vp_status vp_family_build(const char *name, const vp_spec *spec, vp_schedule **out,
                                 vp_error *err);

/* ---- the V block search (vsearch.c) ------------------------------------------------
 *
 * The space of V blocks (block.h) that the V families and the planner search: 60 phase
 * patterns (F¹, B¹, B⁰ phases on device 0) x δ⁰ in 1..5 x optionally a smaller δ⁰ after a
 * change point K in 1..p-2, with δ¹ = 1, the structured offsets with one change point of
 * [CM]'s adaptive scheduler. Each block is built on the V slot grid and measured with the
 * spec's costs and memory model (vp_vgrid_measure), and ranked (vp_vrank), ties going to
 * the block first in the enumeration. */

/* How blocks rank. */
typedef enum {
    VP_VRANK_MAKESPAN = 0, /* smaller makespan, then smaller longest span, then less memory */
    VP_VRANK_SPAN = 1,     /* smaller longest device span (the bubble) alone */
    VP_VRANK_STEP = 2      /* smaller makespan alone */
} vp_vrank;

/* A block the search kept, with its figures under the spec's costs. */
typedef struct vp_vsearch_level {
    vp_vblock vblock;
    long index;               /* its place in the enumeration (vp_vsearch_block) */
    vp_vgrid_metrics metrics; /* makespan, span, bubble, peak (units), peak_bytes */
} vp_vsearch_level;

/* What a search builds and keeps. */
typedef struct vp_vsearch_opts {
    int max_cap;     /* build only blocks whose repeated block (vp_vgrid_peak) holds at most
                        this many chunk activations (2p: every block) */
    int min_cap;     /* ... and at least this many (0: no lower limit) */
    double max_peak; /* keep only schedules whose peak is at most this many units (0: any) */
    int best_only;   /* keep only the best block overall, not one per peak level */
    vp_vrank rank;   /* how blocks rank (figures compared to 1e-9 relative) */
    const vp_vgrid_metrics *beat; /* best_only: keep a block only when it ranks before these
                                     figures (a schedule in hand wins ties), or NULL */
} vp_vsearch_opts;

/* Result of vp_vsearch_run (caller frees with vp_vsearch_free). */
typedef struct vp_vsearch {
    vp_vsearch_level *levels; /* [n_levels] the best block per peak level, by increasing
                                 peak; best_only: at most one */
    int n_levels;
    long tried; /* blocks in the space (vp_vsearch_size) */
    long built; /* blocks built and measured (the others were ruled out before building) */
} vp_vsearch;

/* 1 when figures a rank strictly before b under rank, each figure compared to 1e-9
 * relative. */
VP_API int vp_vsearch_ranks_before(const vp_vgrid_metrics *a, const vp_vgrid_metrics *b,
                                   vp_vrank rank);

/* The phase patterns of the space: F¹, B¹, B⁰ on device 0 at distinct phases in 1..5. */
#define VP_VSEARCH_PATTERNS 60

/* Sets vb's phases (f1, b1, b0) to pattern i (0 <= i < VP_VSEARCH_PATTERNS, in
 * lexicographic order), leaving its offsets. */
VP_API void vp_vsearch_pattern(int i, vp_vblock *vb);

/* Number of blocks in the space at p devices (0 for p < 2). */
VP_API long vp_vsearch_size(int p);

/* Block number index (0 <= index < vp_vsearch_size(p)) of the enumeration. */
VP_API void vp_vsearch_block(int p, long index, vp_vblock *out);

/* Searches the space for spec (p >= 2): per peak level (or, best_only, overall) the block
 * that ranks first among those within opts' memory limits. The answer is the exhaustive
 * one: a block is skipped only when its memory is over max_cap or a lower bound on its
 * makespan proves it cannot rank first. Uses up to spec->threads threads; the result and
 * the counters do not depend on their number. VP_EINVAL for p < 2 or m < 1, VP_ENOMEM.
 * Cost: one vp_vgrid_measure per block built, each O(p·m). */
VP_API vp_status vp_vsearch_run(const vp_spec *spec, const vp_vsearch_opts *opts, vp_vsearch **out,
                                vp_error *err);

/* Releases a search result; NULL is a no-op. */
VP_API void vp_vsearch_free(vp_vsearch *s);

/* The fixed block of a named V family at p devices (its memory level; the family itself
 * searches that level under the spec's costs): "v-min", offsets (1,1), phases of F¹, B¹,
 * B⁰ on device 0 = (2p-1, 2p+x, 4p+x-1) mod 6 with x = 2 when 3 divides p, else 0;
 * "v-half", offsets (2,1), phases (3p-2, 3p+x-1, 6p+x-2) mod 6 with x = 3 for even p,
 * else 0; "v-zb", offsets (4,2), phases (1, 2, 3). VP_EINVAL for other names or p < 2. */
VP_API vp_status vp_vblock_preset(const char *family, int p, vp_vblock *out, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
