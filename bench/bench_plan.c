/* Generation and simulation time of every family, and the memory-budget planner's search,
 * at (p, m) = (16, 64), (32, 128), (64, 512) (or the shapes given as PxM arguments).
 * Prints machine information, then medians of repeated runs; the planner's figures stand
 * beside the planner of commit 48e66f9 (before the V search was shared, bounded and
 * fast-forwarded), timed on this machine with `vpipe plan -p P -m M --memory 0.5` (one run
 * each, the old planner using its two threads), as a ratio, and the planner with the
 * offload lever (`--offload auto`) beside the planner without. The planner runs with as
 * many threads as there are online processors (its answer does not depend on them).
 *
 *   bench_plan [PxM ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "vpipe/plan.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void machine_info(void) {
    struct utsname u;
    char model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    if (f)
        fclose(f);
    if (uname(&u) == 0)
        printf("machine: %s %s %s\n", u.sysname, u.release, u.machine);
    printf("cpu: %s, %ld online processors (the planner's threads), openblas core %s\n", model,
           sysconf(_SC_NPROCESSORS_ONLN), openblas_get_corename());
    printf("vpipe %s; times are medians of the repeats shown\n\n", VP_VERSION_STRING);
}

/* Build and simulation medians of one family; prints one table row. */
static void bench_family(const char *name, const vp_spec *spec, int reps) {
    double tb[16], ts[16];
    vp_sim *last = NULL;
    for (int r = 0; r < reps; r++) {
        vp_schedule *s = NULL;
        vp_error err = {0};
        double t0 = now();
        if (vp_family_build(name, spec, &s, &err) != VP_OK) {
            printf("  %-12s (not built: %s)\n", name, err.message);
            return;
        }
        double t1 = now();
        vp_cost_model *cm = NULL;
        vp_sim *sim = NULL;
        double t2 = now();
        vp_status rc = vp_cost_model_new(s, &spec->costs, &spec->mem, &cm, &err);
        if (rc == VP_OK)
            rc = vp_simulate(s, cm, &sim, &err);
        double t3 = now();
        tb[r] = t1 - t0;
        ts[r] = t3 - t2;
        vp_cost_model_free(cm);
        vp_schedule_free(s);
        if (rc != VP_OK) {
            printf("  %-12s (simulation failed: %s)\n", name, err.message);
            return;
        }
        vp_sim_free(last);
        last = sim;
    }
    printf("  %-12s %10.3f %10.3f %10g %8.2f%% %8g\n", name, 1e3 * median(tb, reps),
           1e3 * median(ts, reps), last->makespan, 100 * last->bubble, last->peak_max);
    vp_sim_free(last);
}

/* Seconds the planner of commit 48e66f9 took at (p, m), budget 0.5, unit costs (b = 1) or
 * F=1,B=2,W=1 (b = 2), on this machine; 0 when not recorded. */
static double old_plan_seconds(int p, int m, double b) {
    static const struct {
        int p, m;
        double b, s;
    } old[] = {{32, 128, 1, 1.64}, {64, 512, 1, 34.77}, {32, 128, 2, 3.64}, {64, 512, 2, 91.67}};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
        if (old[i].p == p && old[i].m == m && old[i].b == b)
            return old[i].s;
    return 0;
}

/* The planner's median seconds over reps runs (with levers; NULL: none) into *secs and
 * its last plan into *out (caller frees); 0 after printing why it failed. */
static int time_plan(const vp_spec *spec, const vp_plan_levers *levers, const char *costs, int reps,
                     double *secs, vp_plan **out) {
    double t[16];
    vp_plan *plan = NULL;
    for (int r = 0; r < reps; r++) {
        vp_budget b = {.kind = VP_BUDGET_FRACTION, .value = 0.5};
        vp_error err = {0};
        vp_plan_free(plan);
        plan = NULL;
        double t0 = now();
        if (vp_plan_run_levers(spec, &b, levers, &plan, &err) != VP_OK) {
            printf("  planner (%s): %s\n", costs, err.message);
            return 0;
        }
        t[r] = now() - t0;
    }
    *secs = median(t, reps);
    *out = plan;
    return 1;
}

/* The planner with the offload lever beside the planner without (base seconds). */
static void bench_offload(const vp_spec *spec, const char *costs, int reps, double base) {
    vp_plan_levers levers = {.offload = 1};
    vp_plan *plan = NULL;
    double secs;
    if (!time_plan(spec, &levers, costs, reps, &secs, &plan))
        return;
    const vp_plan_candidate *c = &plan->candidates[plan->chosen];
    printf("  planner with the offload lever: %8.3f s (%.2fx without); chose %s %s, peak %g, "
           "makespan %g\n",
           secs, secs / base, c->family, c->params, c->peak, c->makespan);
    vp_plan_free(plan);
}

static void bench_plan(const vp_spec *spec, const char *costs, int reps) {
    vp_plan *plan = NULL;
    double now_s;
    if (!time_plan(spec, NULL, costs, reps, &now_s, &plan))
        return;
    const vp_plan_candidate *c = &plan->candidates[plan->chosen];
    double old = old_plan_seconds(spec->p, spec->m, spec->costs.b);
    char ratio[64] = "";
    if (old > 0)
        snprintf(ratio, sizeof ratio, " (48e66f9: %.2f s, %.0fx)", old, old / now_s);
    printf("  planner, costs %-12s budget 0.5: %8.3f s%s\n    %ld blocks, %ld built, %d "
           "frontier points; chose %s %s, peak %g, makespan %g\n",
           costs, now_s, ratio, plan->blocks_tried, plan->blocks_built, plan->n_frontier, c->family,
           c->params, c->peak, c->makespan);
    vp_plan_free(plan);
    bench_offload(spec, costs, reps, now_s);
}

int main(int argc, char **argv) {
    int shapes[8][2] = {{16, 64}, {32, 128}, {64, 512}}, n = 3;
    if (argc > 1) {
        n = 0;
        for (int i = 1; i < argc && n < 8; i++)
            if (sscanf(argv[i], "%dx%d", &shapes[n][0], &shapes[n][1]) == 2 && shapes[n][0] > 0 &&
                shapes[n][1] > 0)
                n++;
    }
    machine_info();
    for (int k = 0; k < n; k++) {
        int p = shapes[k][0], m = shapes[k][1];
        int reps = p * m <= 1024 ? 11 : p * m <= 4096 ? 5 : 3;
        vp_spec spec = vp_spec_make(p, m);
        spec.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
        printf("p=%d m=%d (F=B=W=1, %d repeats)\n  %-12s %10s %10s %10s %9s %8s\n", p, m, reps,
               "family", "build ms", "sim ms", "makespan", "bubble", "peak");
        for (int i = 0; i < vp_family_count(); i++)
            bench_family(vp_family_at(i)->name, &spec, reps);
        int plan_reps = p <= 16 ? 5 : 3;
        bench_plan(&spec, "F=B=W=1", plan_reps);
        spec.costs.b = 2;
        bench_plan(&spec, "F=1,B=2,W=1", plan_reps);
        printf("\n");
    }
    return 0;
}
