/* compare: every family built and simulated (or priced) for the same request, on worker
 * threads, answered in registry order whatever their number (door.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "request/door.h"
#include "vpipe/render.h"

#define GIB 1073741824.0

/* One family's outcome, made by a worker and written out in registry order. */
typedef struct outcome {
    vp_status status; /* VP_OK, or the family failed: err says why */
    vp_error err;
    bool skipped;    /* the shape does not fit the family (err says why) */
    char *row;       /* the table row (text output) */
    json_t *json;    /* --json */
    vp_timeline *tl; /* --svg */
} outcome;

static void table_row(vp__buf *out, const char *family, const vp_sim *sim) {
    double lo = sim->peak[0];
    for (int d = 1; d < sim->p; d++)
        lo = sim->peak[d] < lo ? sim->peak[d] : lo;
    vp__buf_printf(out, "%-12s %10g %8.2f%% %9.2f%% %8g %8g\n", family, sim->makespan,
                   100.0 * sim->bubble, 100.0 * sim->bubble_makespan, sim->peak_max, lo);
}

/* Ranks a row lists one by one; past them, the first ROW_HEAD and the last. */
#define ROW_RANKS 16
#define ROW_HEAD 8

/* A priced family's row: step time, MFU, bubble, the largest rank's GiB, whether it fits
 * (tight: with less room than the margin plan keeps), and each rank's GiB (past ROW_RANKS
 * ranks the first ROW_HEAD and the last: a terminal line, not 64 numbers). */
static void priced_row(vp__buf *out, const vp_price_result *r) {
    vp__buf_printf(out, "%-12s %9.4g %6.2f%% %7.2f%% %8.2f  %-5s", r->family, r->step_time_s,
                   100 * r->mfu, 100 * r->bubble, r->memory_max_bytes / GIB,
                   !r->fits   ? "no"
                   : r->tight ? "tight"
                              : "yes");
    bool all = r->p <= ROW_RANKS;
    for (int d = 0; d < r->p; d++)
        if (all || d < ROW_HEAD || d == r->p - 1)
            vp__buf_printf(out, "%s %.1f", !all && d == r->p - 1 ? " ..." : "",
                           r->memory[d].total / GIB);
    vp__buf_printf(out, "\n");
}

/* Builds and simulates (or prices) one family into o: its row, its JSON or its timeline.
 * A family the shape does not fit is marked skipped. Reads run only, so families run in
 * parallel. */
static void run_family(const vp__run *run, const vp_family *f, outcome *o) {
    vp_schedule *s = NULL;
    vp_sim *sim = NULL;
    vp_price_result *priced = NULL;
    vp_error *err = &o->err;
    vp_status status = run->real
                           ? vp_price_family(&run->setup, f->name, &run->spec, &priced, &s, err)
                           : vp_family_build(f->name, &run->spec, &s, err);
    if (status != VP_OK) {
        o->status = status;
        o->skipped = status != VP_ENOMEM && status != VP_ELIMIT;
        return;
    }
    if (!priced)
        status = vp__simulate(run, s, &sim, err);
    sim = priced ? priced->sim : sim;
    if (status == VP_OK && run->req->svg)
        status = vp_timeline_from_sim(s, sim, &o->tl, err);
    if (status == VP_OK && run->req->json) {
        o->json = priced ? vp__price_json(s, priced) : vp__sim_json(s, sim, &run->spec.costs);
    } else if (status == VP_OK) {
        vp__buf row = {0};
        if (priced)
            priced_row(&row, priced);
        else
            table_row(&row, f->name, sim);
        o->row = vp__buf_take(&row);
    }
    if (status == VP_OK && !o->json && !o->row)
        status = vp__fail(err, VP_ENOMEM, "out of memory");
    o->status = status;
    if (priced)
        vp_price_result_free(priced);
    else
        vp_sim_free(sim);
    vp_schedule_free(s);
}

/* What the outcomes are gathered into, in registry order. */
typedef struct gathered {
    vp__buf table;     /* the text table (without --json) */
    json_t *array;     /* --json */
    vp_timeline **tls; /* --svg: one timeline per family built */
    int ntl;
} gathered;

/* Takes family f's outcome into g. A family that failed (not skipped) fails the command. */
static vp_status gather(const vp_family *f, outcome *o, gathered *g, vp_error *err) {
    if (o->skipped) {
        if (!g->array)
            vp__buf_printf(&g->table, "%-12s (skipped: %s)\n", f->name, o->err.message);
        return VP_OK;
    }
    if (o->status != VP_OK) {
        *err = o->err;
        return o->status;
    }
    if (o->tl)
        g->tls[g->ntl++] = o->tl, o->tl = NULL;
    if (o->row)
        vp__buf_printf(&g->table, "%s", o->row);
    if (o->json && json_array_append_new(g->array, o->json) != 0)
        return o->json = NULL, vp__fail(err, VP_ENOMEM, "out of memory");
    o->json = NULL;
    return VP_OK;
}

static void outcome_release(outcome *o) {
    free(o->row);
    json_decref(o->json);
    vp_timeline_free(o->tl);
}

/* The families shared out among the workers: each takes the next one not taken. */
typedef struct share {
    const vp__run *run;
    outcome *out;
    atomic_int next;
} share;

/* A worker's loop; the calling thread's (progress) also reports progress. Families are
 * taken last first: the registry lists the searching families (the V shapes) late, and
 * the short builds then fill in at the end. */
static void take_families(share *sh, bool progress) {
    int n = vp_family_count();
    for (int k; (k = atomic_fetch_add(&sh->next, 1)) < n;) {
        int i = n - 1 - k;
        if (progress)
            vp__progress(sh->run, "compare: %d/%d families (%s)", k + 1, n, vp_family_at(i)->name);
        run_family(sh->run, vp_family_at(i), &sh->out[i]);
    }
}

static void *helper_main(void *sh) {
    take_families(sh, false);
    return NULL;
}

/* Every family, on up to --threads workers (default: the machine's processors), gathered
 * into g in registry order until one fails. */
static vp_status compare_all(const vp__run *run, gathered *g, vp_error *err) {
    int n = vp_family_count();
    long want = run->req->threads > 0 ? run->req->threads : sysconf(_SC_NPROCESSORS_ONLN);
    int threads = want < 1 ? 1 : want > n ? n : (int)want;
    outcome *out = vp__calloc((size_t)n, sizeof *out);
    pthread_t *tid = vp__calloc((size_t)threads, sizeof *tid);
    if (!out || !tid) {
        free(out);
        free(tid);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    share sh = {.run = run, .out = out};
    vp__progress(run, "compare: %d families on %d worker%s", n, threads, threads > 1 ? "s" : "");
    int helpers = 0;
    while (helpers + 1 < threads && pthread_create(&tid[helpers], NULL, helper_main, &sh) == 0)
        helpers++;
    take_families(&sh, true);
    for (int i = 0; i < helpers; i++)
        pthread_join(tid[i], NULL);
    vp__progress_clear(run);
    vp_status rc = VP_OK;
    for (int i = 0; i < n; i++) {
        if (rc == VP_OK)
            rc = gather(vp_family_at(i), &out[i], g, err);
        outcome_release(&out[i]);
    }
    free(out);
    free(tid);
    return rc;
}

static void table_head(vp__buf *out, const vp__run *run) {
    const vp_spec *spec = &run->spec;
    char text[512];
    if (!run->real) {
        vp__buf_printf(out, "p=%d m=%d  costs %s\n\n%-12s %10s %9s %10s %8s %8s\n", spec->p,
                       spec->m, vp__costs_text(&spec->costs, text, sizeof text), "family",
                       "makespan", "bubble", "bubble/ms", "peak", "min-peak");
        return;
    }
    vp__buf_printf(out, "%s on %s  p=%d m=%d  %s  (%d GPUs, %.1f GiB each)%s\n\n", run->arch.name,
                   run->gpu.name, spec->p, spec->m,
                   vp__workload_text(&run->work, text, sizeof text),
                   spec->p * run->work.tp * run->work.dp, run->gpu.memory_bytes / GIB,
                   run->setup.measured ? "  measured costs" : "");
    vp__buf_printf(out, "%s\n",
                   vp_price_expected_text(run->gpu.name, &run->gpu.expected, text, sizeof text));
    vp_expected_error kind;
    vp_price_expected_kind(&run->work, &kind);
    if (kind.runs > 0)
        vp__buf_printf(out, "%s\n", vp_price_expected_kind_text(&kind, text, sizeof text));
    vp__buf_printf(out, "\n");
    vp__buf_printf(out, "%-12s %9s %7s %8s %8s  %-5s %s\n", "family", "step s", "MFU", "bubble",
                   "max GiB", "fits", "GiB per rank");
}

static const char table_legend[] =
    "\nbubble: 1 - busy / longest device span; bubble/ms: 1 - busy / makespan; peak and\n"
    "min-peak: the largest and the smallest device peak of activation memory, in units\n";

static const char priced_legend[] =
    "\nstep: the simulated makespan + optimizer step + exposed DP reduction; MFU: model\n"
    "FLOPs / (GPUs x peak x step); bubble: 1 - busy / longest device span; GiB per rank:\n"
    "parameters, gradients, optimizer states, activations, buffers, workspace, reserve\n"
    "(past 16 ranks the first 8 and the last; --json lists every rank); fits tight: less\n"
    "room below the capacity than the margin plan keeps\n";

/* Every family on one time scale; none built is an answer that still fails (exit 2). */
static vp_status gallery(vp__run *run, gathered *g, vp_error *err) {
    if (!g->ntl) {
        run->reply->exit_code = 2;
        return vp__note(
            run, vp__printf("vpipe: error: no family fits p=%d, m=%d\n", run->spec.p, run->spec.m),
            err);
    }
    vp_render_opts ro = {.costs = &run->spec.costs};
    char *svg = NULL;
    vp_status rc =
        vp_render_svg_gallery((const vp_timeline *const *)g->tls, g->ntl, &ro, &svg, err);
    return rc == VP_OK ? vp__write(run, run->req->svg, svg, err) : rc;
}

vp_status vp__compare(vp__run *run, vp_error *err) {
    if (!run->req->p || !run->req->m)
        return vp__fail(err, VP_EINVAL, "compare needs %s and %s", VP__NAME(run, "p"),
                        VP__NAME(run, "m"));
    gathered g;
    memset(&g, 0, sizeof g);
    vp_status rc = vp__spec_ready(run, err);
    if (rc == VP_OK)
        rc = vp__real_ready(run, err);
    if (rc == VP_OK && run->req->svg)
        rc = vp__probe(run, run->req->svg, false, err);
    if (rc == VP_OK && !(g.tls = vp__calloc((size_t)vp_family_count() + 1, sizeof *g.tls)))
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK && run->req->json && !(g.array = json_array()))
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK && !g.array)
        table_head(&g.table, run);
    if (rc == VP_OK)
        rc = compare_all(run, &g, err);
    if (rc == VP_OK && !g.array) {
        vp__buf_printf(&g.table, "%s", run->real ? priced_legend : table_legend);
        rc = vp__say_buf(run, &g.table, err);
    }
    if (rc == VP_OK && g.array)
        rc = vp__say_json(run, json_incref(g.array), err);
    if (rc == VP_OK && run->req->svg)
        rc = gallery(run, &g, err);
    for (int i = 0; i < g.ntl; i++)
        vp_timeline_free(g.tls[i]);
    free(g.tls);
    json_decref(g.array);
    vp__buf_free(&g.table);
    return rc;
}
