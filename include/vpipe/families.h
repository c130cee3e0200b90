/* Schedule families: named generators that turn a spec into a schedule value.
 *
 * Module `families` (src/families/): one file per family and the registry. Depends on
 * block (building blocks, the V slot grid), sim and schedule.
 */
#ifndef VPIPE_FAMILIES_H
#define VPIPE_FAMILIES_H

#include "vpipe/block.h"

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
} vp_spec;

/* p, m with default costs and memory model, v = 0, mem_limit = 0, the default op limit,
 * one thread, no recomputation. */
vp_spec vp_spec_make(int p, int m);

/* The most ops any family builds for spec: 3 passes per (stage, microbatch), 4 with
 * recomputation, on at most max(2, v) stages per device. */
double vp_spec_max_ops(const vp_spec *spec);

/* VP_ELIMIT when vp_spec_max_ops(spec) exceeds the spec's op limit, with the estimate,
 * the limit and what would lift it (a larger max_ops, `--max-ops` on the command line);
 * VP_OK otherwise. Costs nothing: check before allocating. */
vp_status vp_spec_check_size(const vp_spec *spec, vp_error *err);

typedef struct vp_family {
    const char *name;    /* CLI name, e.g. "1f1b" */
    const char *summary; /* one line: what it is */
    const char *needs;   /* one line: constraints on p, m, v */
    vp_status (*build)(const vp_spec *spec, vp_schedule **out, vp_error *err);
} vp_family;

/* The registry, in presentation order. vp_family_at returns NULL past the end. */
int vp_family_count(void);
const vp_family *vp_family_at(int i);

/* Family by name (exact match); NULL when unknown. */
const vp_family *vp_family_find(const char *name);

/* Builds family `name` for spec into a new schedule (caller frees); with spec->recompute,
 * its recomputing version (vp_schedule_recompute). VP_EINVAL with a message naming the
 * constraint when the spec does not fit the family (or the name is unknown), VP_ELIMIT
 * (vp_spec_check_size) before allocating anything when it would be too large; the result
 * always passes vp_schedule_validate. */
vp_status vp_family_build(const char *name, const vp_spec *spec, vp_schedule **out, vp_error *err);

/* The block of a named V family at p devices, no change point (phases mod 6):
 *   "v-min":  offsets (1,1), F¹ at 2p-1, B¹ at 2p+x, B⁰ at 4p+x-1 (x = 2 when 3 divides p,
 *             else 0): about 1/3 of 1F1B's memory;
 *   "v-half": offsets (2,1), F¹ at 3p-2, B¹ at 3p+x-1, B⁰ at 6p+x-2 (x = 3 for even p,
 *             else 0): half of 1F1B's memory;
 *   "v-zb":   offsets (4,2), F¹ 1, B¹ 2, B⁰ 3: 1F1B's memory, no bubble in steady state.
 * VP_EINVAL for other names or p < 2. */
vp_status vp_vblock_preset(const char *family, int p, vp_vblock *out, vp_error *err);

#endif
