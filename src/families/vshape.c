/* V-shape families (schedules.md §4): V-Min, V-Half, V-ZB and 1F1B-V, built on the V slot
 * grid of the block module (vp_vgrid, block.h).
 *
 * The named families are cost-aware: V-Min (offsets 1,1), V-Half (2,1) and V-ZB (4,2)
 * hold their §4 block's memory and take, among the blocks of the V search (vsearch.c:
 * every phase pattern, offset and change point) at that memory, the §4 block's compacted
 * pattern (vcompact.c) and the greedy V search's schedule under the §4 block's peak
 * (vgreedy.c), the one with the smallest bubble (for runs shorter than 2p: makespan) under
 * the spec's costs (the §4 block wins ties); V-ZB also weighs zb-v's schedule.
 *
 * 1F1B-V keeps B and W together (BW, two slots): forwards advance one slot per device
 * and the full backwards two, with three extra slots every third device so that the
 * phases stay collision-free; the warm-up then moves every pass to the earliest slot its
 * dependencies allow, forwards only while memory stays under the peak. The rhythm's lead
 * and phase and an optional canonical warm-up are chosen by the spec's costs within the
 * standard rhythm's memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "families/families_internal.h"

#define PERIOD 6

static int mod6(int x) {
    return ((x % PERIOD) + PERIOD) % PERIOD;
}

/* VP_EINVAL unless p >= 2: a V needs two devices. */
static vp_status need_two(const char *name, int p, vp_error *err) {
    if (p >= 2)
        return VP_OK;
    return vp__fail(err, VP_EINVAL,
                    "%s needs p >= 2 (a V folds the model over at least two devices; got p=%d)",
                    name, p);
}

vp_status vp_vblock_preset(const char *family, int p, vp_vblock *out, vp_error *err) {
    vp_status rc = need_two(family, p, err);
    if (rc != VP_OK)
        return rc;
    vp_vblock vb = {.k = p};
    if (!strcmp(family, "v-min")) {
        int x = p % 3 == 0 ? 2 : 0;
        vb.d0 = vb.d1 = 1;
        vb.f1 = mod6(2 * p - 1);
        vb.b1 = mod6(2 * p + x);
        vb.b0 = mod6(4 * p + x - 1);
    } else if (!strcmp(family, "v-half")) {
        int x = p % 2 == 0 ? 3 : 0;
        vb.d0 = 2;
        vb.d1 = 1;
        vb.f1 = mod6(3 * p - 2);
        vb.b1 = mod6(3 * p + x - 1);
        vb.b0 = mod6(6 * p + x - 2);
    } else if (!strcmp(family, "v-zb")) {
        vb.d0 = 4;
        vb.d1 = 2;
        vb.f1 = 1;
        vb.b1 = 2;
        vb.b0 = 3;
    } else {
        return vp__fail(err, VP_EINVAL, "no V block preset named '%s' (v-min, v-half, v-zb)",
                        family);
    }
    vb.d0b = vb.d0;
    vb.d1b = vb.d1;
    *out = vb;
    return VP_OK;
}

/* ---- the registered V families ----------------------------------------------------- */

/* A schedule in hand and its figures under the spec's costs. */
typedef struct in_hand {
    vp_schedule *s;
    vp_vgrid_metrics m;
} in_hand;

/* A named family's search: the shape, the ranking, the §4 block and its memory, and the
 * best so far (a schedule in hand, and the V block it comes from unless it is zb-v's). */
typedef struct named {
    const vp_spec *spec;
    vp_cost_model *cm;
    vp_vgrid *grid;
    int (*slots)[6];
    vp_vrank rank;
    vp_vblock base, block;
    int cap, built; /* the §4 block's repeated peak; block still to be built (not in hand) */
    double peak, peak_bytes; /* the §4 block's schedule's peak: the family's memory */
    in_hand best;
} named;

/* The §4 block of family measured and built into the best so far, its memory into cap. */
static vp_status measure_preset(named *ns, const char *family, vp_error *err) {
    int p = ns->spec->p;
    vp_status rc = vp_vblock_preset(family, p, &ns->base, err);
    if (rc == VP_OK && vp_vblock_slots(&ns->base, p, ns->slots) != 0)
        rc = vp__fail(err, VP_EINVAL, "the %s block collides at p=%d", family, p);
    if (rc != VP_OK)
        return rc;
    ns->cap = vp_vgrid_peak(ns->grid, (const int(*)[6])ns->slots);
    rc = vp_vgrid_measure(ns->grid, (const int(*)[6])ns->slots, ns->cm, 0, &ns->best.m, err);
    ns->peak = ns->best.m.peak;
    ns->peak_bytes = ns->best.m.peak_bytes;
    return rc == VP_OK ? vp_vgrid_schedule(ns->grid, family, &ns->best.s, err) : rc;
}

/* The §4 block's offsets with every other phase pattern (vp_vsearch_pattern): a pattern
 * whose repeated block holds no more memory and whose peak is no higher becomes the best
 * when it ranks first. A pattern the search's lower bound rules out is not built. */
static vp_status search_patterns(named *ns, vp_error *err) {
    int p = ns->spec->p;
    for (int i = 0; i < VP_VSEARCH_PATTERNS; i++) {
        vp_vblock vb = ns->base;
        vp_vsearch_pattern(i, &vb);
        if ((vb.f1 == ns->base.f1 && vb.b1 == ns->base.b1 && vb.b0 == ns->base.b0) ||
            vp_vblock_slots(&vb, p, ns->slots) != 0)
            continue;
        int cap = vp_vgrid_peak(ns->grid, (const int(*)[6])ns->slots);
        if (cap > ns->cap ||
            vp__vblock_cannot_beat(ns->cm, p, ns->spec->m, cap, &ns->best.m, ns->rank))
            continue;
        /* the replay stops once the block's span is sure to pass the best's first figure:
         * then it cannot rank first */
        vp_vgrid_metrics x;
        double limit = ns->rank == VP_VRANK_SPAN ? ns->best.m.span : ns->best.m.makespan;
        vp_status rc =
            vp_vgrid_measure(ns->grid, (const int(*)[6])ns->slots, ns->cm, limit, &x, err);
        if (rc != VP_OK)
            return rc;
        if (x.complete && x.peak <= ns->best.m.peak + 1e-9 &&
            vp_vsearch_ranks_before(&x, &ns->best.m, ns->rank)) {
            ns->best.m = x;
            ns->block = vb;
            ns->built = 1;
        }
    }
    return VP_OK;
}

/* Makes x the best so far (x is left without its schedule). */
static void take(named *ns, in_hand *x) {
    vp_schedule_free(ns->best.s);
    ns->best = *x;
    ns->built = 0;
    x->s = NULL;
}

/* zb-v's schedule (v-zb only) when it ranks before the best so far without more memory. */
static vp_status weigh_zbv(const vp_spec *spec, const vp_cost_model *cm, vp_vrank rank, named *ns,
                           vp_error *err) {
    in_hand z = {0};
    vp_status rc = vp__build_zbv(spec, &z.s, err);
    if (rc == VP_OK)
        rc = vp__sim_metrics(z.s, cm, &z.m, err);
    if (rc == VP_OK && z.m.peak <= ns->best.m.peak + 1e-9 &&
        z.m.peak_bytes <= ns->best.m.peak_bytes * (1 + 1e-9) &&
        vp_vsearch_ranks_before(&z.m, &ns->best.m, rank))
        take(ns, &z);
    vp_schedule_free(z.s);
    return rc;
}

/* Shapes up to this many device-microbatches (p times the microbatches a build holds,
 * max(m, 2p)) search; larger ones keep the §4 block (or zb-v), since each block costs
 * O(p·m) to build and a level holds dozens (a search at p = m = 1000 would take minutes). */
#define SEARCH_CELLS (1L << 20)

/* The V search at the §4 block's memory level: a block that ranks before the best so far
 * becomes it. */
static vp_status search_level(named *ns, vp_error *err) {
    vp_vsearch_opts opts = {.max_cap = ns->cap,
                            .min_cap = ns->cap,
                            .max_peak = ns->best.m.peak + 1e-9,
                            .best_only = 1,
                            .rank = ns->rank,
                            .beat = &ns->best.m};
    vp_vsearch *found = NULL;
    vp_status rc = vp_vsearch_run(ns->spec, &opts, &found, err);
    if (rc == VP_OK && found->n_levels > 0) {
        ns->best.m = found->levels[0].metrics;
        ns->block = found->levels[0].vblock;
        ns->built = 1;
    }
    vp_vsearch_free(found);
    return rc;
}

/* The §4 block's compacted pattern (vp_vcompact_run): it becomes the best when it ranks
 * first without more memory than the block's build; not run when the V search's lower
 * bound shows no schedule within that memory can. */
static vp_status weigh_compact(named *ns, vp_error *err) {
    const vp_spec *spec = ns->spec;
    if (vp__vlimit_cannot_beat(ns->cm, spec->p, spec->m, ns->peak, &ns->best.m, ns->rank))
        return VP_OK;
    vp_vcompact_opts opts = {.limit = ns->peak, .rank = ns->rank, .beat = &ns->best.m};
    in_hand x = {0};
    vp_status rc = vp_vcompact_run(spec, &ns->base, &opts, &x.s, &x.m, err);
    if (rc == VP_OK && x.s && x.m.peak <= ns->peak + 1e-9 &&
        x.m.peak_bytes <= ns->peak_bytes * (1 + 1e-9) &&
        vp_vsearch_ranks_before(&x.m, &ns->best.m, ns->rank))
        take(ns, &x);
    vp_schedule_free(x.s);
    return rc;
}

/* The greedy V search (vp_vgreedy_run) under the §4 block's peak: its schedule becomes the
 * best when it ranks first (the bytes it holds no more than the block's either). */
static vp_status weigh_greedy(named *ns, vp_error *err) {
    vp_vgreedy_opts opts = {.limit = ns->peak, .rank = ns->rank, .beat = &ns->best.m};
    in_hand g = {0};
    vp_status rc = vp_vgreedy_run(ns->spec, &opts, &g.s, &g.m, err);
    if (rc == VP_OK && g.s && g.m.peak_bytes <= ns->peak_bytes * (1 + 1e-9))
        take(ns, &g);
    vp_schedule_free(g.s);
    return rc;
}

/* The search's answer as the schedule in hand, named family. */
static vp_status take_best(named *ns, const char *family, vp_error *err) {
    if (ns->built) {
        vp_schedule_free(ns->best.s);
        ns->best.s = NULL;
        vp_vblock_slots(&ns->block, ns->spec->p, ns->slots);
        vp_status rc =
            vp_vgrid_build(ns->grid, (const int(*)[6])ns->slots, family, &ns->best.s, err);
        if (rc != VP_OK)
            return rc;
    }
    snprintf(ns->best.s->family, sizeof ns->best.s->family, "%s", family);
    return VP_OK;
}

/* A named V family: among its §4 block (vp_vblock_preset), the §4 offsets with the other
 * phase patterns, (for m >= 2p) the V search's blocks at its memory level, the §4 block's
 * compacted pattern and the greedy V search's schedule under the §4 block's peak, the one
 * with the smallest longest span (for runs shorter than 2p microbatches, all fill and
 * drain: makespan) under the spec's costs, with no more memory; earlier candidates win
 * ties. v-zb also weighs zb-v's schedule at its peak when its block has a bubble. So the
 * result is never behind the §4 block (nor, for v-zb, zb-v, nor the compacted pattern or
 * the greedy when they fit the block's peak) and never needs more memory; when the best
 * so far meets the search's lower bound the level is not searched (nor the compacted
 * pattern or the greedy run), and shapes beyond SEARCH_CELLS are not searched at all. */
static vp_status build_named(const char *family, const vp_spec *spec, vp_schedule **out,
                             vp_error *err) {
    *out = NULL;
    vp_status rc = vp__check_pm(family, spec, err);
    if (rc == VP_OK)
        rc = need_two(family, spec->p, err);
    if (rc != VP_OK)
        return rc;
    int long_run = spec->m >= 2 * spec->p;
    named ns = {.spec = spec,
                .rank = long_run ? VP_VRANK_SPAN : VP_VRANK_STEP,
                .slots = vp__calloc((size_t)spec->p, sizeof *ns.slots)};
    rc = vp__vshape_costs(spec, &ns.cm, err);
    if (rc == VP_OK)
        rc = ns.slots ? vp_vgrid_new(spec->p, spec->m, &ns.grid, err)
                      : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK) {
        vp_vgrid_use_memo(ns.grid, spec->grids);
        rc = measure_preset(&ns, family, err);
    }
    int search = (long)spec->p * (long_run ? spec->m : 2 * spec->p) <= SEARCH_CELLS;
    if (rc == VP_OK && search)
        rc = search_patterns(&ns, err);
    if (rc == VP_OK && !strcmp(family, "v-zb") && ns.best.m.bubble > 1e-12)
        rc = weigh_zbv(spec, ns.cm, ns.rank, &ns, err);
    if (rc == VP_OK && search && long_run)
        rc = search_level(&ns, err);
    if (rc == VP_OK && search)
        rc = weigh_compact(&ns, err);
    if (rc == VP_OK && search)
        rc = weigh_greedy(&ns, err);
    if (rc == VP_OK)
        rc = take_best(&ns, family, err);
    vp_vgrid_free(ns.grid);
    vp_cost_model_free(ns.cm);
    free(ns.slots);
    if (rc != VP_OK) {
        vp_schedule_free(ns.best.s);
        return rc;
    }
    *out = ns.best.s;
    return VP_OK;
}

vp_status vp__build_vmin(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return build_named("v-min", spec, out, err);
}

vp_status vp__build_vhalf(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return build_named("v-half", spec, out, err);
}

vp_status vp__build_vzb(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return build_named("v-zb", spec, out, err);
}

/* ---- 1F1B-V ------------------------------------------------------------------------ */

/* Slots of the 1F1B-V block ([p][6], W columns unused): forwards one slot apart, full
 * backwards two, plus `lead` slots before the first backward and three more whenever the
 * rhythm counter (starting at phase0) reaches 3. The block starts one period in: the
 * warm-up moves forwards before microbatch 0's block slots, and slot 0 must not stop it
 * (at p = 16 that room is worth one slot of makespan). */
static void v1f1b_slots(int p, int lead, int phase0, int (*t)[6]) {
    int now = PERIOD, rhythm = phase0;
    for (int i = 0; i < p; i++)
        t[i][0] = ++now;
    for (int i = p - 1; i >= 0; i--)
        t[i][1] = ++now;
    now += 1 + lead;
    for (int x = 0; x < 2 * p; x++) {
        int i = x < p ? x : 2 * p - 1 - x;
        t[i][x < p ? 2 : 3] = now;
        now += 2;
        if (++rhythm == 3) {
            rhythm = 0;
            now += 3;
        }
    }
}

/* The search of vp__build_1f1bv: the schedule of the variant (lead, phase, canonical
 * warm-up) with the smallest makespan so far, and the memory cap (the first variant's
 * peak: the standard rhythm's). Variants are measured on the grid; only one that wins is
 * made into a schedule. */
typedef struct v1f1b_search {
    const vp_spec *spec;
    const vp_cost_model *cm;
    vp_vgrid *grid;
    int (*slots)[6];
    vp_schedule *best;
    double best_ms, cap;
    int tried;
} v1f1b_search;

/* Measures the variant (lead, phase, canonical warm-up) and keeps its schedule when its
 * peak stays within the cap and its makespan under the spec's costs is the smallest so
 * far. A variant that collides at period 6 or whose canonical warm-up does not replay is
 * skipped. */
static vp_status try_variant(v1f1b_search *vs, int lead, int phase, int canonical, vp_error *err) {
    vp_vgrid_metrics x;
    v1f1b_slots(vs->spec->p, lead, phase, vs->slots);
    vp_status rc =
        vp_vgrid_measure_bw(vs->grid, (const int(*)[6])vs->slots, canonical, vs->cm, &x, err);
    if (rc != VP_OK && rc != VP_EVALIDATION)
        return rc;
    double ms = rc == VP_OK ? x.makespan : -1, peak = rc == VP_OK ? x.peak : 0;
    if (vs->tried++ == 0)
        vs->cap = peak;
    if (ms < 0 || peak > vs->cap + 1e-9 || (vs->best && ms >= vs->best_ms - 1e-9))
        return VP_OK;
    vp_schedule_free(vs->best);
    vs->best = NULL;
    vs->best_ms = ms;
    return vp_vgrid_schedule(vs->grid, "1f1b-v", &vs->best, err);
}

vp_status vp__build_1f1bv(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    *out = NULL;
    vp_status rc = vp__check_pm("1f1b-v", spec, err);
    if (rc == VP_OK)
        rc = need_two("1f1b-v", spec->p, err);
    if (rc != VP_OK)
        return rc;
    int p = spec->p;
    vp_cost_model *cm = NULL;
    v1f1b_search vs = {.spec = spec, .slots = vp__calloc((size_t)p, sizeof *vs.slots)};
    rc = vs.slots ? vp__vshape_costs(spec, &cm, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    vs.cm = cm;
    if (rc == VP_OK)
        rc = vp_vgrid_new(p, spec->m, &vs.grid, err);
    /* The standard rhythm (three extra slots before the first backward when 3 divides p)
     * sets the memory; then every other lead, warm-up and phase of the rhythm counter. */
    int lead0 = p % 3 == 0 ? 3 : 0, phase0 = (3 - (p + 2) % 3) % 3;
    if (rc == VP_OK)
        rc = try_variant(&vs, lead0, phase0, 0, err);
    for (int lead = 0; lead < PERIOD && rc == VP_OK; lead++)
        for (int canonical = 0; canonical < 2 && rc == VP_OK; canonical++)
            for (int phase = 0; phase < 3 && rc == VP_OK; phase++)
                if (lead != lead0 || phase != phase0 || canonical)
                    rc = try_variant(&vs, lead, phase, canonical, err);
    if (rc == VP_OK && !vs.best)
        rc = vp__fail(err, VP_EINVAL, "1f1b-v found no collision-free block at p=%d", p);
    if (rc == VP_OK)
        *out = vs.best;
    else
        vp_schedule_free(vs.best);
    vp_vgrid_free(vs.grid);
    vp_cost_model_free(cm);
    free(vs.slots);
    return rc;
}
