/* V-shape families (schedules.md §4): V-Min, V-Half, V-ZB and 1F1B-V, built on the V slot
 * grid of the block module (vp_vgrid, block.h).
 *
 * The named families are cost-aware: V-Min (offsets 1,1), V-Half (2,1) and V-ZB (4,2)
 * try every phase pattern with their offsets and keep the fastest under the spec's costs
 * that needs no more memory than the §4 block (which wins ties).
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

/* Makespan of s under the spec's costs, or -1 on failure. */
static double spec_makespan(const vp_schedule *s, const vp_spec *spec, double *peak) {
    vp_cost_model *cm = NULL;
    vp_sim *sim = NULL;
    double ms = -1;
    if (vp_cost_model_new(s, &spec->costs, &spec->mem, &cm, NULL) == VP_OK &&
        vp_simulate(s, cm, &sim, NULL) == VP_OK) {
        ms = sim->makespan;
        *peak = sim->peak_max;
    }
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    return ms;
}

/* A lower bound on any V schedule's makespan under cm: device d cannot start before the
 * first microbatch's chunk-0 forward reaches it, then has m microbatches of work. */
static double v_makespan_bound(const vp_cost_model *cm, int p, int m) {
    double reach = 0, best = 0;
    for (int d = 0; d < p; d++) {
        int s0 = d, s1 = 2 * p - 1 - d;
        double work = m * (cm->f[s0] + cm->b[s0] + cm->w[s0] + cm->f[s1] + cm->b[s1] + cm->w[s1]);
        if (reach + work > best)
            best = reach + work;
        reach += cm->f[s0] + cm->c;
    }
    return best;
}

/* A named V family: among the blocks with the family's offsets and every phase pattern,
 * the fastest under the spec's costs whose peak stays within the §4 block's (which wins
 * ties, so at equal costs it is kept unless another pattern is strictly faster). Unequal
 * costs can favour another pattern: for even p the §4 V-Half block stalls when B > F,
 * where its neighbours do not. Patterns whose repeated block needs more memory are not
 * built, and the search stops once a schedule reaches the makespan bound. */
static vp_status build_preset(const char *family, const vp_spec *spec, vp_schedule **out,
                              vp_error *err) {
    *out = NULL;
    vp_vblock base;
    vp_status rc = vp__check_pm(family, spec, err);
    if (rc == VP_OK)
        rc = vp_vblock_preset(family, spec->p, &base, err);
    if (rc != VP_OK)
        return rc;
    int p = spec->p;
    int(*t)[6] = vp__calloc((size_t)p, sizeof *t);
    vp_vgrid *w = NULL;
    rc = t ? vp_vgrid_new(p, spec->m, &w, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc != VP_OK) {
        free(t);
        return rc;
    }
    vp_cost_model *cm = NULL;
    double best_ms = 0, best_peak = 0, bound = 0;
    int base_cap = 0;
    for (int pat = -1; pat < 125 && rc == VP_OK; pat++) {
        vp_vblock vb = base;
        if (pat >= 0) {
            vb.f1 = 1 + pat / 25;
            vb.b1 = 1 + pat / 5 % 5;
            vb.b0 = 1 + pat % 5;
            if (vb.f1 == base.f1 && vb.b1 == base.b1 && vb.b0 == base.b0)
                continue;
        }
        if (vp_vblock_slots(&vb, p, t) != 0)
            continue; /* the §4 block never collides; other patterns may */
        int cap = vp_vgrid_peak(w, (const int(*)[6])t);
        if (pat < 0)
            base_cap = cap;
        else if (cap > base_cap)
            continue;
        vp_schedule *s = NULL;
        rc = vp_vgrid_build(w, (const int(*)[6])t, family, &s, err);
        if (rc == VP_OK && !cm) {
            rc = vp_cost_model_new(s, &spec->costs, &spec->mem, &cm, err);
            bound = cm ? v_makespan_bound(cm, p, spec->m) : 0;
        }
        vp_sim *sim = NULL;
        if (rc == VP_OK)
            rc = vp_simulate(s, cm, &sim, err);
        if (rc == VP_OK && pat < 0)
            best_peak = sim->peak_max;
        if (rc == VP_OK && sim->peak_max <= best_peak + 1e-9 &&
            (!*out || sim->makespan < best_ms - 1e-9)) {
            vp_schedule_free(*out);
            *out = s;
            best_ms = sim->makespan;
            s = NULL;
        }
        vp_sim_free(sim);
        vp_schedule_free(s);
        if (*out && best_ms <= bound * (1 + 1e-12))
            break;
    }
    vp_cost_model_free(cm);
    vp_vgrid_free(w);
    free(t);
    if (rc != VP_OK) {
        vp_schedule_free(*out);
        *out = NULL;
    }
    return rc;
}

vp_status vp__build_vmin(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return build_preset("v-min", spec, out, err);
}

vp_status vp__build_vhalf(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return build_preset("v-half", spec, out, err);
}

vp_status vp__build_vzb(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return build_preset("v-zb", spec, out, err);
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

vp_status vp__build_1f1bv(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    *out = NULL;
    vp_status rc = vp__check_pm("1f1b-v", spec, err);
    if (rc != VP_OK)
        return rc;
    int p = spec->p;
    rc = need_two("1f1b-v", p, err);
    if (rc != VP_OK)
        return rc;
    int(*t)[6] = vp__calloc((size_t)p, sizeof *t);
    vp_vgrid *w = NULL;
    rc = t ? vp_vgrid_new(p, spec->m, &w, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc != VP_OK) {
        free(t);
        return rc;
    }
    /* The standard rhythm (three extra slots before the first backward when 3 divides p)
     * sets the memory; among the variants of lead, phase and warm-up that stay within it,
     * keep the smallest makespan under the spec's costs. */
    double best_ms = 0, cap = 0;
    int base_lead = p % 3 == 0 ? 3 : 0, base_phase = (3 - (p + 2) % 3) % 3;
    for (int v = -1; v < PERIOD * 3 * 2 && rc == VP_OK; v++) {
        int lead = v < 0 ? base_lead : v / 6, phase0 = v < 0 ? base_phase : v % 3;
        vp_schedule *s = NULL;
        double peak = 0;
        v1f1b_slots(p, lead, phase0, t);
        rc = vp_vgrid_build_bw(w, (const int(*)[6])t, v >= 0 && v / 3 % 2, "1f1b-v", &s, err);
        if (rc == VP_EVALIDATION)
            rc = VP_OK; /* collides at period 6, or its canonical warm-up does not replay */
        double ms = s ? spec_makespan(s, spec, &peak) : -1;
        if (v < 0)
            cap = peak;
        if (ms >= 0 && peak <= cap + 1e-9 && (!*out || ms < best_ms - 1e-9)) {
            vp_schedule_free(*out);
            *out = s;
            best_ms = ms;
        } else {
            vp_schedule_free(s);
        }
    }
    vp_vgrid_free(w);
    free(t);
    if (rc == VP_OK && !*out)
        rc = vp__fail(err, VP_EINVAL, "1f1b-v found no collision-free block at p=%d", p);
    if (rc != VP_OK) {
        vp_schedule_free(*out);
        *out = NULL;
    }
    return rc;
}
