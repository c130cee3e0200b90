/* V-shape families (schedules.md §4): V-Min, V-Half, V-ZB and 1F1B-V, built on the V slot
 * grid of the block module (vp_vgrid, block.h).
 *
 * The named families are cost-aware: V-Min (offsets 1,1), V-Half (2,1) and V-ZB (4,2)
 * hold their §4 block's memory and take the block of the V search (vsearch.c: every
 * phase pattern, offset and change point) at that memory with the smallest bubble under
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

/* The figures vp_vgrid_measure would give s, from a simulation under cm. */
static vp_status sim_metrics(const vp_schedule *s, const vp_cost_model *cm, vp_vgrid_metrics *out,
                             vp_error *err) {
    vp_sim *sim = NULL;
    vp_status rc = vp_simulate(s, cm, &sim, err);
    if (rc != VP_OK)
        return rc;
    *out = (vp_vgrid_metrics){.makespan = sim->makespan,
                              .span = vp_sim_longest_span(sim),
                              .bubble = sim->bubble,
                              .peak = sim->peak_max,
                              .complete = 1};
    for (int d = 0; sim->peak_bytes && d < sim->p; d++)
        if (sim->peak_bytes[d] > out->peak_bytes)
            out->peak_bytes = sim->peak_bytes[d];
    vp_sim_free(sim);
    return VP_OK;
}

/* zb-v's schedule when it ranks before the block in hand without more memory (v-zb only). */
static vp_status weigh_zbv(const vp_spec *spec, const vp_cost_model *cm, in_hand *best,
                           vp_error *err) {
    in_hand z = {0};
    vp_status rc = vp__build_zbv(spec, &z.s, err);
    if (rc == VP_OK)
        rc = sim_metrics(z.s, cm, &z.m, err);
    if (rc == VP_OK && z.m.peak <= best->m.peak + 1e-9 &&
        z.m.peak_bytes <= best->m.peak_bytes * (1 + 1e-9) &&
        vp_vsearch_ranks_before(&z.m, &best->m, 1)) {
        vp_schedule_free(best->s);
        *best = z;
        z.s = NULL;
    }
    vp_schedule_free(z.s);
    return rc;
}

/* The §4 block of family measured under cm on grid g into *best (schedule and figures), and
 * the chunk activations its repeated block holds into *cap. */
static vp_status measure_preset(const char *family, const vp_spec *spec, const vp_cost_model *cm,
                                vp_vgrid *g, int (*t)[6], in_hand *best, int *cap, vp_error *err) {
    vp_vblock base;
    vp_status rc = vp_vblock_preset(family, spec->p, &base, err);
    if (rc == VP_OK && vp_vblock_slots(&base, spec->p, t) != 0)
        rc = vp__fail(err, VP_EINVAL, "the %s block collides at p=%d", family, spec->p);
    if (rc != VP_OK)
        return rc;
    *cap = vp_vgrid_peak(g, (const int(*)[6])t);
    rc = vp_vgrid_measure(g, (const int(*)[6])t, cm, 0, &best->m, err);
    return rc == VP_OK ? vp_vgrid_schedule(g, family, &best->s, err) : rc;
}

/* Shapes up to this many device-microbatches (p times the microbatches a build holds,
 * max(m, 2p)) search their V family's level; larger ones keep the §4 block (or zb-v), since
 * each block costs O(p·m) to build and a level holds dozens (a search at p = m = 1000
 * would take minutes). */
#define SEARCH_CELLS (1L << 20)

/* A named V family: the §4 block (vp_vblock_preset), or the V block (vp_vsearch) whose
 * repeated block holds as many chunk activations (the family's memory) with the smallest
 * longest span under the spec's costs and a peak no higher; the §4 block wins ties. v-zb
 * also weighs zb-v's schedule at its peak when its block has a bubble. So the result is
 * never behind the §4 block (nor, for v-zb, zb-v) in bubble and never needs more memory;
 * when the §4 block meets the search's lower bound nothing else is built, and shapes
 * beyond SEARCH_CELLS are not searched. */
static vp_status build_named(const char *family, const vp_spec *spec, vp_schedule **out,
                             vp_error *err) {
    *out = NULL;
    vp_status rc = vp__check_pm(family, spec, err);
    if (rc == VP_OK)
        rc = need_two(family, spec->p, err);
    if (rc != VP_OK)
        return rc;
    in_hand best = {0};
    int cap = 0, (*t)[6] = vp__calloc((size_t)spec->p, sizeof *t);
    vp_vgrid *g = NULL;
    vp_vsearch *found = NULL;
    vp_cost_model *cm = vp__vshape_costs(spec, err);
    rc = !cm  ? (err && err->status != VP_OK ? err->status : VP_ENOMEM)
         : !t ? vp__fail(err, VP_ENOMEM, "out of memory")
              : vp_vgrid_new(spec->p, spec->m, &g, err);
    if (rc == VP_OK)
        rc = measure_preset(family, spec, cm, g, t, &best, &cap, err);
    if (rc == VP_OK && !strcmp(family, "v-zb") && best.m.bubble > 1e-12)
        rc = weigh_zbv(spec, cm, &best, err);
    vp_vsearch_opts opts = {.max_cap = cap,
                            .min_cap = cap,
                            .max_peak = best.m.peak + 1e-9,
                            .best_only = 1,
                            .by_span = 1,
                            .beat = &best.m};
    long cells = (long)spec->p * (spec->m > 2 * spec->p ? spec->m : 2 * spec->p);
    if (rc == VP_OK && cells <= SEARCH_CELLS)
        rc = vp_vsearch_run(spec, &opts, &found, err);
    if (rc == VP_OK && found && found->n_levels > 0) {
        vp_schedule_free(best.s);
        best.s = NULL;
        vp_vblock_slots(&found->levels[0].vblock, spec->p, t);
        rc = vp_vgrid_build(g, (const int(*)[6])t, family, &best.s, err);
    }
    vp_vsearch_free(found);
    vp_vgrid_free(g);
    vp_cost_model_free(cm);
    free(t);
    if (rc == VP_OK) {
        snprintf(best.s->family, sizeof best.s->family, "%s", family);
        *out = best.s;
    } else {
        vp_schedule_free(best.s);
    }
    return rc;
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

/* Makespan of s under the spec's costs (and its peak into *peak), or -1 on failure. */
static double spec_makespan(const vp_schedule *s, const vp_spec *spec, double *peak) {
    vp_cost_model *cm = vp_cost_model_new(s, &spec->costs, &spec->mem, NULL);
    vp_vgrid_metrics m;
    double ms = -1;
    if (cm && sim_metrics(s, cm, &m, NULL) == VP_OK) {
        ms = m.makespan;
        *peak = m.peak;
    }
    vp_cost_model_free(cm);
    return ms;
}

/* The search of vp__build_1f1bv: the variant with the smallest makespan so far, and the
 * memory cap (the first variant's peak: the standard rhythm's). */
typedef struct v1f1b_search {
    const vp_spec *spec;
    vp_vgrid *grid;
    int (*slots)[6];
    vp_schedule *best;
    double best_ms, cap;
    int tried;
} v1f1b_search;

/* Builds the variant (lead, phase, canonical warm-up) and keeps it when its peak stays
 * within the cap and its makespan under the spec's costs is the smallest so far. A
 * variant that collides at period 6 or whose canonical warm-up does not replay is
 * skipped. */
static vp_status try_variant(v1f1b_search *vs, int lead, int phase, int canonical, vp_error *err) {
    vp_schedule *s = NULL;
    double peak = 0;
    v1f1b_slots(vs->spec->p, lead, phase, vs->slots);
    vp_status rc =
        vp_vgrid_build_bw(vs->grid, (const int(*)[6])vs->slots, canonical, "1f1b-v", &s, err);
    if (rc == VP_EVALIDATION)
        rc = VP_OK;
    double ms = s ? spec_makespan(s, vs->spec, &peak) : -1;
    if (vs->tried++ == 0)
        vs->cap = peak;
    if (ms >= 0 && peak <= vs->cap + 1e-9 && (!vs->best || ms < vs->best_ms - 1e-9)) {
        vp_schedule_free(vs->best);
        vs->best = s;
        vs->best_ms = ms;
    } else {
        vp_schedule_free(s);
    }
    return rc;
}

vp_status vp__build_1f1bv(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    *out = NULL;
    vp_status rc = vp__check_pm("1f1b-v", spec, err);
    if (rc == VP_OK)
        rc = need_two("1f1b-v", spec->p, err);
    if (rc != VP_OK)
        return rc;
    int p = spec->p;
    v1f1b_search vs = {.spec = spec, .slots = vp__calloc((size_t)p, sizeof *vs.slots)};
    rc = vs.slots ? vp_vgrid_new(p, spec->m, &vs.grid, err)
                  : vp__fail(err, VP_ENOMEM, "out of memory");
    /* The standard rhythm (three extra slots before the first backward when 3 divides p)
     * sets the memory; then every lead, warm-up and phase of the rhythm counter. */
    if (rc == VP_OK)
        rc = try_variant(&vs, p % 3 == 0 ? 3 : 0, (3 - (p + 2) % 3) % 3, 0, err);
    for (int lead = 0; lead < PERIOD && rc == VP_OK; lead++)
        for (int canonical = 0; canonical < 2 && rc == VP_OK; canonical++)
            for (int phase = 0; phase < 3 && rc == VP_OK; phase++)
                rc = try_variant(&vs, lead, phase, canonical, err);
    vp_vgrid_free(vs.grid);
    free(vs.slots);
    if (rc == VP_OK && !vs.best)
        rc = vp__fail(err, VP_EINVAL, "1f1b-v found no collision-free block at p=%d", p);
    if (rc != VP_OK) {
        vp_schedule_free(vs.best);
        return rc;
    }
    *out = vs.best;
    return VP_OK;
}
