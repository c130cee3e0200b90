/* Speed of the eager replay (vp__replay, which vp_simulate and vp_schedule_validate run):
 * the event-driven replay against the sweep it replaced, side by side, on the same
 * schedules and costs (F=1,B=2,W=1,c=0.1). Both must give bit-equal times; the bench
 * checks it and stops if not. Prints the machine, then one row per case:
 *
 *   FAMILY  P  M  OPS  SWEEP_MS  EVENT_MS  SWEEP/EVENT
 *
 *   bench_replay [--sweep-max-p N] [FAMILY:PxM ...]
 *
 * Default cases: 1f1b at m = 1 for p = 1000 .. 100000 (the sweep is O(p^2) there: a
 * backward wave advances one device per sweep) and a few families at ordinary shapes. The
 * sweep runs only where p <= N (default 16000: it takes about 40 s at p = 40000 and 3
 * minutes at p = 100000); above it the row shows "-". Figures are medians of 3 runs
 * (1 when a run takes over a second). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/internal.h"
#include "bench_machine.h"
#include "schedule/pass.h"
#include "schedule/replay.h"
#include "vpipe/families.h"

/* ---- Baseline: the sweep replay as it was before the event-driven one (commit 48e66f9),
 * kept here only to measure against. Sweeps devices 0..p-1, running each as far as it
 * can, until a sweep runs nothing. ---- */

typedef struct {
    const vp_schedule *s;
    double *done;
    double c;
} sweep_state;

static double sweep_op_ready(const sweep_state *st, int d, const vp_op *op) {
    vp__pass passes[VP__OP_MAX_PASSES], deps[VP__PASS_MAX_DEPS];
    int n = vp__op_passes(op, passes);
    double t = 0.0;
    for (int i = 0; i < n; i++) {
        if (passes[i].chained)
            continue;
        int nd = vp__pass_deps(st->s, NULL, passes[i], deps);
        for (int k = 0; k < nd; k++) {
            double r = st->done[vp__pass_index(st->s, deps[k])];
            if (r < 0)
                return -1.0;
            if (st->s->stage_device[deps[k].stage] != d)
                r += st->c;
            if (r > t)
                t = r;
        }
    }
    return t;
}

static vp_status sweep_replay(const vp_schedule *s, vp__op_time_fn time_fn, const void *ctx,
                              double c, double **start, double **end) {
    sweep_state st = {.s = s, .c = c};
    size_t npass = (size_t)s->S * (size_t)s->m * VP__PASS_KINDS;
    st.done = malloc(npass * sizeof *st.done);
    int *pos = calloc((size_t)s->p, sizeof *pos);
    double *free_at = calloc((size_t)s->p, sizeof *free_at);
    vp_status rc = VP_OK;
    if (!st.done || !pos || !free_at) {
        rc = VP_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < npass; i++)
        st.done[i] = -1.0;
    long remaining = vp_schedule_op_count(s);
    while (remaining > 0) {
        long before = remaining;
        for (int d = 0; d < s->p; d++) {
            const vp_oplist *l = &s->dev[d];
            while (pos[d] < l->n) {
                const vp_op *op = &l->ops[pos[d]];
                double t = sweep_op_ready(&st, d, op);
                if (t < 0)
                    break;
                if (t < free_at[d])
                    t = free_at[d];
                double e = t + time_fn(ctx, op);
                vp__pass passes[VP__OP_MAX_PASSES];
                int n = vp__op_passes(op, passes);
                for (int i = 0; i < n; i++)
                    st.done[vp__pass_index(s, passes[i])] = e;
                start[d][pos[d]] = t;
                end[d][pos[d]] = e;
                free_at[d] = e;
                pos[d]++;
                remaining--;
            }
        }
        if (remaining == before) {
            rc = VP_EDEADLOCK;
            break;
        }
    }
out:
    free(st.done);
    free(pos);
    free(free_at);
    return rc;
}

/* ---- End of the baseline. ---- */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static double op_time(const void *cm, const vp_op *op) {
    return vp_cost_model_op_time(cm, op);
}

typedef struct times {
    int p;
    double **start, **end;
} times;

static int times_new(const vp_schedule *s, times *t) {
    t->p = s->p;
    t->start = vp__calloc((size_t)s->p, sizeof *t->start);
    t->end = vp__calloc((size_t)s->p, sizeof *t->end);
    for (int d = 0; t->start && t->end && d < s->p; d++) {
        t->start[d] = malloc(((size_t)s->dev[d].n + 1) * sizeof **t->start);
        t->end[d] = malloc(((size_t)s->dev[d].n + 1) * sizeof **t->end);
        if (!t->start[d] || !t->end[d])
            return -1;
    }
    return t->start && t->end ? 0 : -1;
}

static void times_free(times *t) {
    for (int d = 0; d < t->p; d++) {
        free(t->start ? t->start[d] : NULL);
        free(t->end ? t->end[d] : NULL);
    }
    free(t->start);
    free(t->end);
}

static int times_equal(const vp_schedule *s, const times *a, const times *b) {
    for (int d = 0; d < s->p; d++) {
        size_t n = (size_t)s->dev[d].n * sizeof(double);
        if (memcmp(a->start[d], b->start[d], n) || memcmp(a->end[d], b->end[d], n))
            return 0;
    }
    return 1;
}

/* Median time of `reps` runs of one method (event = 1: vp__replay; 0: the sweep). */
static double time_method(int event, const vp_schedule *s, const vp_cost_model *cm, times *t) {
    double ms[3];
    int reps = 3;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        vp_status rc = event ? vp__replay(s, op_time, cm, cm->c, t->start, t->end, NULL)
                             : sweep_replay(s, op_time, cm, cm->c, t->start, t->end);
        ms[r] = now_ms() - t0;
        if (rc != VP_OK) {
            fprintf(stderr, "bench_replay: %s replay failed (%d)\n", event ? "event" : "sweep", rc);
            exit(1);
        }
        if (ms[r] > 1000.0)
            reps = r + 1;
    }
    return vp__median(ms, reps);
}

/* Runs one case; returns 0, or 1 when the two methods disagree. */
static int run_case(const char *family, int p, int m, int sweep_max_p) {
    vp_spec spec = vp_spec_make(p, m);
    spec.max_ops = 1L << 40;
    vp_costs_parse("F=1,B=2,W=1,c=0.1", &spec.costs, NULL);
    vp_schedule *s = NULL;
    vp_cost_model *cm = NULL;
    vp_error err = {0};
    times ev = {0}, sw = {0};
    int bad = 0;
    if (vp_family_build(family, &spec, &s, &err) != VP_OK ||
        vp_cost_model_new(s, &spec.costs, &spec.mem, &cm, &err) != VP_OK || times_new(s, &ev) ||
        times_new(s, &sw)) {
        printf("%-12s %7d %5d  skipped: %s\n", family, p, m, err.message);
    } else {
        double event_ms = time_method(1, s, cm, &ev);
        printf("%-12s %7d %5d %10ld", family, p, m, vp_schedule_op_count(s));
        if (p <= sweep_max_p) {
            double sweep_ms = time_method(0, s, cm, &sw);
            bad = !times_equal(s, &ev, &sw);
            printf(" %11.2f %11.2f %10.1fx%s\n", sweep_ms, event_ms, sweep_ms / event_ms,
                   bad ? "  TIMES DIFFER" : "");
        } else {
            printf(" %11s %11.2f %11s\n", "-", event_ms, "-");
        }
    }
    fflush(stdout);
    times_free(&ev);
    times_free(&sw);
    vp_cost_model_free(cm);
    vp_schedule_free(s);
    return bad;
}

int main(int argc, char **argv) {
    static const char *defaults[] = {
        "1f1b:1000x1",        "1f1b:4000x1", "1f1b:16000x1",  "1f1b:100000x1",    "1f1b:64x512",
        "interleaved:32x128", "zb-v:32x128", "v-half:64x512", "dualpipev:32x128", "zb-2p:64x512"};
    int sweep_max_p = 16000, first = 1;
    if (argc > 2 && !strcmp(argv[1], "--sweep-max-p")) {
        sweep_max_p = atoi(argv[2]);
        first = 3;
    }
    const char *const *cases = argc > first ? (const char *const *)argv + first : defaults;
    int ncases = argc > first ? argc - first : (int)(sizeof defaults / sizeof *defaults);
    bench_print_machine();
    printf("one thread; costs F=1,B=2,W=1,c=0.1; sweep = the replay before the event-driven "
           "one; times in ms, medians of up to 3 runs\n\n");
    printf("%-12s %7s %5s %10s %11s %11s %11s\n", "family", "p", "m", "ops", "sweep_ms", "event_ms",
           "sweep/event");
    int bad = 0;
    for (int i = 0; i < ncases; i++) {
        char family[64];
        int p, m;
        if (sscanf(cases[i], "%63[^:]:%dx%d", family, &p, &m) != 3 || p < 1 || m < 1) {
            fprintf(stderr, "bench_replay: '%s' is not FAMILY:PxM\n", cases[i]);
            return 2;
        }
        bad |= run_case(family, p, m, sweep_max_p);
    }
    return bad;
}
