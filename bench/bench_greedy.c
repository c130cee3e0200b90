/* The greedy V search and the compacted V pattern against the V block search on the uneven
 * cost grid of issue 28 (tests/uneven_grid.h: 50 cost sets, F, B, W in [1, 4], hop c in
 * [0, F/2], at p in {4, 8, 16} and m in {2p, 4p}). For every case and for v-min and v-half,
 * the memory limit is the peak of the family's §4 block; the benchmark prints the family's
 * bubble and makespan now, the planner's at that memory (a budget in units), those of the
 * greedy V schedule under the limit alone (vp_vgreedy_run, ranked by span) and those of the
 * family's compacted pattern alone (vp_vcompact_run of the §4 block: the authors' V-Min and
 * V-Half construction). With --baseline FILE (the same rows of an earlier release,
 * bench/greedy_baseline.txt: the families and the planner before the greedy search, i.e.
 * the V block search alone) each row also gives those.
 *
 *   bench_greedy [--quick] [--baseline FILE]      the rows (tab-separated):
 *     row  P  M  F  B  W  C  WHAT  LIMIT  BUBBLE  MAKESPAN  PEAK  GREEDY_BUBBLE
 *          GREEDY_MAKESPAN  COMPACT_BUBBLE  COMPACT_MAKESPAN  COMPACT_PEAK
 *          BASE_BUBBLE|-  BASE_MAKESPAN|-
 *   bench_greedy [--quick] --grid                 the cases and limits only:
 *     case  P  M  F  B  W  C  VMIN_LIMIT  VHALF_LIMIT
 *
 * WHAT is v-min, v-half, plan@v-min or plan@v-half; bubbles are fractions (vp_sim.bubble),
 * LIMIT and PEAK units. --quick takes every fifth cost set. bench/greedy_baseline.py turns
 * the --grid rows into a baseline with any release's `vpipe` binary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_machine.h"
#include "uneven_grid.h"
#include "vpipe/plan.h"

#define MAX_BASE (UG_CASES * 4)

/* A baseline row: the case's key (P M F B W C WHAT as printed), its bubble and makespan. */
typedef struct base_row {
    char key[128];
    double bubble, makespan;
} base_row;

static base_row base[MAX_BASE];
static int n_base;

/* The key of a row: shape, costs and what, as both files print them. */
static void row_key(const ug_case *x, const char *what, char *key, size_t size) {
    snprintf(key, size, "%d\t%d\t%g\t%g\t%g\t%g\t%s", x->p, x->m, x->costs.f, x->costs.b,
             x->costs.w, x->costs.c, what);
}

/* Reads "base P M F B W C WHAT BUBBLE MAKESPAN" rows. 0 ok, -1 unreadable. */
static int read_baseline(const char *path) {
    FILE *f = fopen(path, "r");
    char line[512];
    if (!f)
        return -1;
    while (n_base < MAX_BASE && fgets(line, sizeof line, f)) {
        char *last = strrchr(line, '\t');
        if (strncmp(line, "base\t", 5) || !last)
            continue;
        base[n_base].makespan = atof(last + 1);
        *last = '\0';
        char *bubble = strrchr(line, '\t');
        size_t len = (size_t)(bubble - line) - 5;
        if (bubble - line < 5 || len >= sizeof base[n_base].key)
            continue;
        memcpy(base[n_base].key, line + 5, len);
        base[n_base].key[len] = '\0';
        base[n_base++].bubble = atof(bubble + 1);
    }
    fclose(f);
    return 0;
}

static const base_row *find_base(const char *key) {
    for (int i = 0; i < n_base; i++)
        if (!strcmp(base[i].key, key))
            return &base[i];
    return NULL;
}

/* Bubble, makespan and peak of s under spec (all -1 on failure). */
static vp_vgrid_metrics figures_of(const vp_schedule *s, const vp_spec *spec) {
    vp_cost_model *cm = NULL;
    vp_sim *sim = NULL;
    vp_vgrid_metrics x = {.bubble = -1, .makespan = -1, .peak = -1};
    if (vp_cost_model_new(s, &spec->costs, &spec->mem, &cm, NULL) == VP_OK &&
        vp_simulate(s, cm, &sim, NULL) == VP_OK)
        x = (vp_vgrid_metrics){
            .bubble = sim->bubble, .makespan = sim->makespan, .peak = sim->peak_max};
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    return x;
}

/* Peak of family's §4 block for spec (the memory the family holds); -1 on failure. */
static double block_peak(const char *family, const vp_spec *spec) {
    vp_vblock vb;
    vp_schedule *s = NULL;
    double peak = -1;
    if (vp_vblock_preset(family, spec->p, &vb, NULL) == VP_OK &&
        vp_vblock_build(&vb, spec->p, spec->m, NULL, &s, NULL) == VP_OK)
        peak = figures_of(s, spec).peak;
    vp_schedule_free(s);
    return peak;
}

/* Prints one row: what's figures (now) against the greedy's, the compacted pattern's and
 * the baseline's. */
static void print_row(const ug_case *x, const char *what, double limit, const vp_vgrid_metrics *now,
                      const vp_vgrid_metrics *greedy, const vp_vgrid_metrics *compact) {
    char key[128], b[64] = "-\t-";
    row_key(x, what, key, sizeof key);
    const base_row *br = find_base(key);
    if (br)
        snprintf(b, sizeof b, "%.9f\t%.9g", br->bubble, br->makespan);
    printf("row\t%s\t%g\t%.9f\t%.9g\t%g\t%.9f\t%.9g\t%.9f\t%.9g\t%g\t%s\n", key, limit, now->bubble,
           now->makespan, now->peak, greedy->bubble, greedy->makespan, compact->bubble,
           compact->makespan, compact->peak, b);
}

/* The rows of family f (v-min or v-half) for case x: the family, then the planner at its
 * memory. 0 ok, -1 when something failed (named on stderr). */
static int run_family(const ug_case *x, int f) {
    static const char *fam[] = {"v-min", "v-half"}, *plan_at[] = {"plan@v-min", "plan@v-half"};
    vp_spec spec = vp_spec_make(x->p, x->m);
    spec.costs = x->costs;
    double limit = block_peak(fam[f], &spec);
    vp_vgreedy_opts opts = {.limit = limit, .rank = VP_VRANK_SPAN};
    vp_vcompact_opts any = {0};
    vp_vgrid_metrics g, c, now;
    vp_vblock vb;
    vp_schedule *s = NULL;
    vp_plan *plan = NULL;
    vp_budget budget = {.kind = VP_BUDGET_UNITS, .value = limit};
    vp_error err = {0};
    vp_status rc = limit < 0 ? VP_EINVAL : vp_vgreedy_run(&spec, &opts, &s, &g, &err);
    vp_schedule_free(s);
    s = NULL;
    if (rc == VP_OK)
        rc = vp_vblock_preset(fam[f], x->p, &vb, &err);
    if (rc == VP_OK)
        rc = vp_vcompact_run(&spec, &vb, &any, &s, &c, &err);
    vp_schedule_free(s);
    s = NULL;
    if (rc == VP_OK)
        rc = vp_family_build(fam[f], &spec, &s, &err);
    if (rc == VP_OK) {
        now = figures_of(s, &spec);
        print_row(x, fam[f], limit, &now, &g, &c);
        rc = vp_plan_run(&spec, &budget, &plan, &err);
    }
    if (rc == VP_OK) {
        now = figures_of(plan->schedule, &spec);
        print_row(x, plan_at[f], limit, &now, &g, &c);
    } else {
        fprintf(stderr, "bench_greedy: %s p=%d m=%d: %s\n", fam[f], x->p, x->m, err.message);
    }
    vp_schedule_free(s);
    vp_plan_free(plan);
    return rc == VP_OK ? 0 : -1;
}

int main(int argc, char **argv) {
    int quick = 0, grid = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--grid")) {
            grid = 1;
        } else if (!strcmp(argv[i], "--baseline") && i + 1 < argc) {
            if (read_baseline(argv[++i]) != 0) {
                fprintf(stderr, "bench_greedy: cannot read %s\n", argv[i]);
                return 1;
            }
        } else {
            fprintf(stderr, "usage: bench_greedy [--quick] [--grid] [--baseline FILE]\n");
            return 2;
        }
    }
    bench_print_machine();
    for (int k = 0; k < UG_CASES; k++) {
        ug_case x = ug_case_at(k);
        if (quick && x.set % 5)
            continue;
        vp_spec spec = vp_spec_make(x.p, x.m);
        spec.costs = x.costs;
        if (grid) {
            char key[128];
            row_key(&x, "", key, sizeof key);
            key[strlen(key) - 1] = '\0'; /* no WHAT */
            printf("case\t%s\t%g\t%g\n", key, block_peak("v-min", &spec),
                   block_peak("v-half", &spec));
        } else if (run_family(&x, 0) != 0 || run_family(&x, 1) != 0) {
            return 1;
        }
    }
    return 0;
}
