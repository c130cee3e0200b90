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
    int vocab_parallel;     /* 1: build every family's vocabulary-parallel version
                               (vp_vocab_place with the spec's costs) */
    vp_offload offload;     /* and its offloading one (vp_schedule_offload under costs and mem;
                               policy none: no offload) */
    double time_limit_s;    /* the budget planner (vp_plan_run) stops after this many seconds
                               with the best found so far and says so (0: no limit) */
    vp_vgrid_memo *grids;   /* NULL, or a memo the V families' block builds share (a search
                               that builds them under many costs: vp_vgrid_use_memo) */
} vp_spec;

/* The budget planner's default time limit (vp_spec_make), in seconds. */
#define VP_PLAN_TIME_LIMIT_S 60.0

/* p, m with default costs and memory model, v = 0, mem_limit = 0, the default op limit,
 * one thread, no recomputation, no vocabulary parallelism, no offload, the planner's
 * default time limit. */
VP_API vp_spec vp_spec_make(int p, int m);

/* The most ops any family builds for spec: 3 passes per (stage, microbatch), 4 with
 * recomputation, 2 more with offload, on at most max(2, v) stages per device, and 4 per
 * (device, microbatch) with vocabulary parallelism. */
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
    int costs_free; /* 1: its order ignores the spec's costs, memory model and memory limit
                       (two specs differing only in those build the same schedule, unless
                       vocabulary parallelism or offload, which place by the costs, is asked) */
} vp_family;

/* The registry, in presentation order. vp_family_at returns NULL past the end. */
VP_API int vp_family_count(void);
VP_API const vp_family *vp_family_at(int i);

/* Family by name (exact match); NULL when unknown. */
VP_API const vp_family *vp_family_find(const char *name);

/* The family whose name word most likely misspells (one the word begins, else the fewest
 * vp_typo_edits; the first in presentation order on a tie); NULL when none is near. */
VP_API const vp_family *vp_family_nearest(const char *word);

/* Replaces *s, a schedule built for spec's shape, by the version spec asks for: its
 * recomputing version (spec->recompute), then its vocabulary-parallel version
 * (spec->vocab_parallel: vp_vocab_place under the spec's costs), then its offloading
 * version (spec->offload: vp_schedule_offload under the spec's costs and memory model);
 * nothing when it asks for none. On failure (the errors of those) *s is freed and NULL. */
VP_API vp_status vp_spec_finish(const vp_spec *spec, vp_schedule **s, vp_error *err);

/* Builds family `name` for spec into a new schedule (caller frees); with spec->recompute,
 * its recomputing version (vp_schedule_recompute); with spec->vocab_parallel, then its
 * vocabulary-parallel version (vp_vocab_place under the spec's costs); with spec->offload,
 * then its offloading one (vp_schedule_offload under spec's costs and memory model).
 * VP_EINVAL with a message naming the constraint when the spec does not fit the family (or
 * the name is unknown), VP_ELIMIT
 * (vp_spec_check_size) before allocating anything when it would be too large; the result
 * always passes vp_schedule_validate. */
VP_API vp_status vp_family_build(const char *name, const vp_spec *spec, vp_schedule **out,
                                 vp_error *err);

/* The microbatches interleaved runs in a round on p devices, m of them a step:
 * m / max(1, m div p) (interleaved.c; Megatron-LM's microbatch_group_size_per_vp_stage). */
VP_API int vp_interleaved_group(int p, int m);

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
    double deadline_ms;           /* stop between batches once the monotonic clock (ms) passes this,
                                     with what was found so far (0: never) */
} vp_vsearch_opts;

/* Result of vp_vsearch_run (caller frees with vp_vsearch_free). */
typedef struct vp_vsearch {
    vp_vsearch_level *levels; /* [n_levels] the best block per peak level, by increasing
                                 peak; best_only: at most one */
    int n_levels;
    long tried;    /* blocks in the space (vp_vsearch_size) */
    long built;    /* blocks built and measured (the others were ruled out before building) */
    long seen;     /* blocks it went through before it ended (fewer than tried when it settled
                      or timed out) */
    int timed_out; /* 1 when opts.deadline_ms stopped it before the end of the space */
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

/* ---- the greedy V search (vgreedy.c) ------------------------------------------------
 *
 * Schedules no building block expresses: passes placed one at a time in time order on the
 * V placement, each device admitting a forward only while its activation stays under a
 * memory limit (and an F⁰ only while room for one F¹ remains, so it never deadlocks),
 * backwards or forwards first when both could start, the gaps before a pass filled with
 * pending W. Eight variants (the warm-up's depth, the preference, one more W into a gap it
 * does not fit) are timed and the best kept: the kind of schedule the Zero Bubble authors'
 * automatic schedulers (ZB-1P/2P, ZB-V) produce. Their V-Min and V-Half generators keep a
 * pattern instead: the compacted V pattern below. */

/* What a greedy search builds. */
typedef struct vp_vgreedy_opts {
    double limit;                 /* memory limit, units per device, as vp_simulate counts the
                                     peak (what a pass takes at its start); <= 0: the least
                                     the search runs under (one microbatch's two chunks) */
    vp_vrank rank;                /* how variants rank (as vp_vsearch_ranks_before) */
    const vp_vgrid_metrics *beat; /* return a schedule only when one ranks before these (a
                                     schedule in hand wins ties), or NULL */
} vp_vgreedy_opts;

/* Runs the greedy V search for spec (p >= 2, m >= 1; its costs and memory model, no
 * recomputation) under opts: *out receives the best variant's schedule (named "v-greedy";
 * caller frees), validated, with its peak at most opts->limit, and *metrics the figures
 * vp_simulate gives it under the spec's costs; *out is NULL (and *metrics untouched) when
 * no variant ranks before opts->beat. Deterministic; uses one thread. VP_EINVAL for p < 2,
 * m < 1, or a limit (> 0) below one microbatch's two chunks on some device (the message
 * names the least limit); VP_ENOMEM. Cost: none when the V search's lower bound shows no
 * schedule within the limit can rank before opts->beat; else eight O(p·m·log p) runs, each
 * stopped once it cannot rank first (above 8192 device-microbatches: eight runs of 2p + 8
 * microbatches choose one, timed in full), and one more that records the winner. */
VP_API vp_status vp_vgreedy_run(const vp_spec *spec, const vp_vgreedy_opts *opts, vp_schedule **out,
                                vp_vgrid_metrics *metrics, vp_error *err);

/* ---- the compacted V pattern (vcompact.c) ------------------------------------------
 *
 * The construction of the Controllable Memory authors' V-Min and V-Half generators: a V
 * block's pattern repeated every 6 unit slots keeps its stable phase, while the warm-up
 * and the cool-down are compacted greedily, pass by pass in time order, into the earliest
 * free slot their dependencies allow that raises no device's memory above the most the
 * pattern holds; each W goes into the first free slot after its B. Under equal costs per
 * chunk pass that is the block's own rhythm; under uneven costs the compacted orders often
 * replay faster than the V slot grid's build of the same block (vp_vblock_build), at no
 * more memory in the cases measured (the families keep it only when it holds no more). */

/* What a compacted pattern is kept for. */
typedef struct vp_vcompact_opts {
    double limit;                 /* return no schedule whose peak (units) exceeds it (0: any) */
    vp_vrank rank;                /* how it ranks against beat (as vp_vsearch_ranks_before) */
    const vp_vgrid_metrics *beat; /* return a schedule only when it ranks before these (a
                                     schedule in hand wins ties), or NULL */
} vp_vcompact_opts;

/* Builds block vb's compacted pattern for spec (p >= 2, m >= 1; its costs and memory
 * model, no recomputation) and times it. When its figures are what opts asks for, *out
 * receives the schedule (named "v-compact", validated; caller frees) and *metrics the
 * figures vp_simulate gives it under the spec's costs; else *out is NULL (and *metrics
 * untouched). Deterministic. VP_EINVAL for p < 2, m < 1 or a block that is malformed or
 * collides (vp_vblock_slots), VP_ENOMEM. Cost: O(p·m) for the pattern, its stable phase
 * never visited by the compaction, plus per warm-up or cool-down pass a scan of the free
 * slots before it (in the last compaction each with a replay of the device's memory from
 * there); the timing stops once it cannot rank before opts->beat, and only a schedule that
 * does is built and simulated. */
VP_API vp_status vp_vcompact_run(const vp_spec *spec, const vp_vblock *vb,
                                 const vp_vcompact_opts *opts, vp_schedule **out,
                                 vp_vgrid_metrics *metrics, vp_error *err);

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
