/* Speed of vpipe itself over a grid of (p, m): the time to build every family
 * (vp_family_build), to simulate the result (vp_simulate) and to run the memory-budget
 * planner (vp_plan_run, budget half of 1F1B's peak, as many threads as there are online
 * processors), at costs F=B=W=2, c=0. Prints the machine, then one tab-separated row per
 * measurement for bench/run's report:
 *
 *   time  build|simulate|plan  FAMILY|-  P  M  REPEATS  MEDIAN_MS  [BASE_MS  RATIO]
 *   total  build|simulate  P  M  SUM_MS  [BASE_MS  RATIO]   (every family that took the shape)
 *   refused  FAMILY  P  M  MESSAGE       (the family does not take this shape)
 *   skipped  plan  -  P  M  REASON       (planner shapes above the cap)
 *
 *   bench_speed [--plan-max N] [--cost F,B,W] [--cpu] [--baseline FILE] [PxM ...]
 *
 * --baseline FILE: an earlier run's output (its time and total rows; bench/speed_baseline.txt
 * is the code before issue 18's speed work, on the machine its first line names): each row
 * then also gives the baseline's figure and the ratio BASE_MS / MEDIAN_MS (how many times
 * faster now), "-" where the baseline has no such row (rows match on shape, costs and
 * clock). --cost sets F, B and W (default 2,2,2; c = 0). --cpu times the process's CPU
 * time (every thread) instead of wall time: figures that other programs on a shared
 * machine disturb far less, for comparing with a baseline recorded at another time.
 *
 * Default grid: p in {4, 8, 16, 32, 64}, m in {p, 2p, 4p, 8p}; the planner only where
 * p*m <= N (default 32768, all of them). Every figure is the median of 3 to 15 repeats (as
 * many as fit in about a quarter second, after one warm-up run; a run slower than that is
 * its own warm-up). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_machine.h"
#include "vpipe/model.h"
#include "vpipe/plan.h"

#define MAX_REPS 15
#define MAX_BASE 1024

/* The clock: wall time, or with --cpu the process's CPU time (all its threads), which
 * other programs sharing the machine disturb much less. */
static clockid_t clock_id = CLOCK_MONOTONIC;

/* The baseline's rows: kind (time or total), what, family ("-" for totals), p, m, the costs
 * F, B, W and the clock (1: CPU time) of its run, ms. */
typedef struct base_row {
    char kind[8], what[16], family[32];
    int p, m, cpu;
    double fbw[3], ms;
} base_row;

static base_row base[MAX_BASE];
static int n_base;

/* Reads the time and total rows of earlier runs, each with the costs and clock its header
 * line names (F=B=W=2 and wall time when it names none). 0 ok, -1 unreadable. */
static int read_baseline(const char *path) {
    FILE *f = fopen(path, "r");
    char line[512];
    double fbw[3] = {2, 2, 2};
    int cpu = 0;
    if (!f)
        return -1;
    while (n_base < MAX_BASE && fgets(line, sizeof line, f)) {
        base_row *b = &base[n_base];
        int reps;
        if (!strncmp(line, "# build/simulate", 16)) {
            if (sscanf(line, "# build/simulate: every family at costs F=%lf B=%lf W=%lf", &fbw[0],
                       &fbw[1], &fbw[2]) != 3)
                fbw[0] = fbw[1] = fbw[2] = 2;
            cpu = strstr(line, "CPU time") != NULL;
        }
        memcpy(b->fbw, fbw, sizeof fbw);
        b->cpu = cpu;
        if (sscanf(line, "time\t%15s\t%31s\t%d\t%d\t%d\t%lf", b->what, b->family, &b->p, &b->m,
                   &reps, &b->ms) == 6)
            snprintf(b->kind, sizeof b->kind, "time"), n_base++;
        else if (sscanf(line, "total\t%15s\t%d\t%d\t%lf", b->what, &b->p, &b->m, &b->ms) == 4)
            snprintf(b->kind, sizeof b->kind, "total"), snprintf(b->family, 2, "-"), n_base++;
    }
    fclose(f);
    return 0;
}

static double run_fbw[3] = {2, 2, 2}; /* this run's costs */

/* Ends a row with the baseline's figure and the ratio, when there is a baseline. */
static void end_row(const char *kind, const char *what, const char *family, int p, int m,
                    double ms) {
    for (int i = 0; i < n_base; i++) {
        const base_row *b = &base[i];
        if (!strcmp(b->kind, kind) && !strcmp(b->what, what) && !strcmp(b->family, family) &&
            b->p == p && b->m == m && !memcmp(b->fbw, run_fbw, sizeof run_fbw) &&
            b->cpu == (clock_id != CLOCK_MONOTONIC)) {
            printf("\t%.6g\t%.3g\n", b->ms, ms > 0 ? b->ms / ms : 0.0);
            return;
        }
    }
    printf(n_base ? "\t-\t-\n" : "\n");
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Repeats a timed action: as many runs as fit in ~0.25 s (3..MAX_REPS) after one warm-up
 * run, which counts as the first of 3 when it alone takes longer than that. The action
 * returns its own elapsed seconds, or a negative value on failure. */
typedef double (*timed_fn)(void *ctx);

static int repeat(timed_fn fn, void *ctx, double *med_ms, int *reps) {
    double t[MAX_REPS];
    if ((t[0] = fn(ctx)) < 0)
        return -1;
    int slow = t[0] > 0.25;
    int n = slow ? 3 : t[0] > 0.25 / MAX_REPS ? (int)ceil(0.25 / t[0]) : MAX_REPS;
    if (n < 3)
        n = 3;
    for (int r = slow; r < n; r++) /* a fast first run was the warm-up: overwrite it */
        if ((t[r] = fn(ctx)) < 0)
            return -1;
    *med_ms = 1e3 * median(t, n);
    *reps = n;
    return 0;
}

typedef struct family_ctx {
    const char *family;
    const vp_spec *spec;
    int simulate; /* 0: time the build, 1: time the simulation of the built schedule */
    vp_schedule *built;
    vp_cost_model *cm;
    vp_error err;
} family_ctx;

static double time_build(void *arg) {
    family_ctx *c = arg;
    vp_schedule *s = NULL;
    double t0 = now_s();
    vp_status rc = vp_family_build(c->family, c->spec, &s, &c->err);
    double t = now_s() - t0;
    vp_schedule_free(s);
    return rc == VP_OK ? t : -1;
}

static double time_simulate(void *arg) {
    family_ctx *c = arg;
    vp_sim *sim = NULL;
    double t0 = now_s();
    vp_status rc = vp_simulate(c->built, c->cm, &sim, &c->err);
    double t = now_s() - t0;
    vp_sim_free(sim);
    return rc == VP_OK ? t : -1;
}

typedef struct plan_ctx {
    const vp_spec *spec;
    vp_error err;
} plan_ctx;

static double time_plan(void *arg) {
    plan_ctx *c = arg;
    vp_budget budget = {.kind = VP_BUDGET_FRACTION, .value = 0.5};
    vp_plan *plan = NULL;
    double t0 = now_s();
    vp_status rc = vp_plan_run(c->spec, &budget, &plan, &c->err);
    double t = now_s() - t0;
    vp_plan_free(plan);
    return rc == VP_OK ? t : -1;
}

static void row(const char *what, const char *family, int p, int m, int reps, double ms) {
    printf("time\t%s\t%s\t%d\t%d\t%d\t%.6g", what, family, p, m, reps, ms);
    end_row("time", what, family, p, m, ms);
}

static void total_row(const char *what, int p, int m, double ms) {
    printf("total\t%s\t%d\t%d\t%.6g", what, p, m, ms);
    end_row("total", what, "-", p, m, ms);
}

/* Build and simulation times of one family at spec, added to sums[0] and sums[1]; a
 * refusal becomes a "refused" row. */
static int bench_family(const char *family, const vp_spec *spec, double *sums) {
    family_ctx c = {.family = family, .spec = spec};
    double ms;
    int reps;
    if (repeat(time_build, &c, &ms, &reps)) {
        if (c.err.status != VP_EINVAL)
            return fprintf(stderr, "bench_speed: %s: %s\n", family, c.err.message), 1;
        printf("refused\t%s\t%d\t%d\t%s\n", family, spec->p, spec->m, c.err.message);
        return 0;
    }
    row("build", family, spec->p, spec->m, reps, ms);
    sums[0] += ms;
    if (vp_family_build(family, spec, &c.built, &c.err) != VP_OK ||
        vp_cost_model_new(c.built, &spec->costs, &spec->mem, &c.cm, &c.err) != VP_OK ||
        repeat(time_simulate, &c, &ms, &reps)) {
        fprintf(stderr, "bench_speed: simulate %s: %s\n", family, c.err.message);
        vp_cost_model_free(c.cm);
        vp_schedule_free(c.built);
        return 1;
    }
    row("simulate", family, spec->p, spec->m, reps, ms);
    sums[1] += ms;
    vp_cost_model_free(c.cm);
    vp_schedule_free(c.built);
    return 0;
}

static int bench_shape(int p, int m, long plan_max, const double *fbw) {
    vp_spec spec = vp_spec_make(p, m);
    spec.costs.f = fbw[0];
    spec.costs.b = fbw[1];
    spec.costs.w = fbw[2];
    spec.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    double sums[2] = {0, 0};
    for (int i = 0; i < vp_family_count(); i++)
        if (bench_family(vp_family_at(i)->name, &spec, sums))
            return 1;
    total_row("build", p, m, sums[0]);
    total_row("simulate", p, m, sums[1]);
    if ((long)p * m > plan_max) {
        printf("skipped\tplan\t-\t%d\t%d\tp*m = %ld is above the planner cap %ld\n", p, m,
               (long)p * m, plan_max);
        return 0;
    }
    plan_ctx c = {.spec = &spec};
    double ms;
    int reps;
    if (repeat(time_plan, &c, &ms, &reps))
        return fprintf(stderr, "bench_speed: plan p=%d m=%d: %s\n", p, m, c.err.message), 1;
    row("plan", "-", p, m, reps, ms);
    return 0;
}

int main(int argc, char **argv) {
    long plan_max = 32768;
    int shapes[64][2], n = 0;
    double *fbw = run_fbw;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plan-max") && i + 1 < argc)
            plan_max = atol(argv[++i]);
        else if (!strcmp(argv[i], "--cost") && i + 1 < argc &&
                 sscanf(argv[i + 1], "%lf,%lf,%lf", &fbw[0], &fbw[1], &fbw[2]) == 3 && fbw[0] > 0 &&
                 fbw[1] > 0 && fbw[2] > 0)
            i++;
        else if (!strcmp(argv[i], "--cpu"))
            clock_id = CLOCK_PROCESS_CPUTIME_ID;
        else if (!strcmp(argv[i], "--baseline") && i + 1 < argc) {
            if (read_baseline(argv[++i]) != 0)
                return fprintf(stderr, "bench_speed: cannot read %s\n", argv[i]), 2;
        } else if (n < 64 && sscanf(argv[i], "%dx%d", &shapes[n][0], &shapes[n][1]) == 2 &&
                   shapes[n][0] > 0 && shapes[n][1] > 0)
            n++;
        else
            return fprintf(stderr, "usage: bench_speed [--plan-max N] [--cost F,B,W] [--cpu] "
                                   "[--baseline FILE] [PxM ...]\n"),
                   2;
    }
    if (n == 0)
        for (int p = 4; p <= 64; p *= 2)
            for (int k = 1; k <= 8; k *= 2) {
                shapes[n][0] = p;
                shapes[n][1] = k * p;
                n++;
            }
    bench_print_machine();
    printf("# build/simulate: every family at costs F=%g B=%g W=%g, c=0; plan: vp_plan_run, "
           "budget 0.5 of 1F1B, %ld threads; medians in ms of %s\n",
           fbw[0], fbw[1], fbw[2], sysconf(_SC_NPROCESSORS_ONLN),
           clock_id == CLOCK_MONOTONIC ? "wall time" : "CPU time (all threads)");
    fflush(stdout);
    for (int k = 0; k < n; k++) {
        if (bench_shape(shapes[k][0], shapes[k][1], plan_max, fbw))
            return 1;
        fflush(stdout);
    }
    return 0;
}
