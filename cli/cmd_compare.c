/* vpipe compare: every family simulated for the same p, m and costs. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "vpipe/render.h"

typedef struct compare_args {
    cli_spec spec;
    cli_real real;
    const char *svg;
    bool json;
    int threads;
} compare_args;

static const cli_opt compare_opts[] = {
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = offsetof(compare_args, json),
     .help = "an array of the objects `simulate --json` prints"},
    {.name = "svg",
     .kind = CLI_STRING,
     .offset = offsetof(compare_args, svg),
     .arg = "FILE",
     .help = "draw every family on one time scale (- is stdout)"},
    {.name = "threads",
     .kind = CLI_INT,
     .offset = offsetof(compare_args, threads),
     .arg = "N",
     .lo = 1,
     .hi = 256,
     .help = "families built at once (default: the machine's processors); the output\n"
             "never depends on it"},
};
static const cli_group compare_group = CLI_GROUP("output", compare_opts);

static void init(void *args) {
    cli_spec_init(&((compare_args *)args)->spec);
    cli_real_init(&((compare_args *)args)->real);
}

/* What the families' outcomes are written into, in registry order. */
typedef struct compare_state {
    FILE *table;       /* the text table (NULL with --json) */
    json_t *array;     /* --json */
    vp_timeline **tls; /* --svg: one timeline per family built */
    int ntl;
} compare_state;

/* One family's outcome, made by a worker and written out in registry order. */
typedef struct outcome {
    vp_status status; /* VP_OK, or the family failed: err says why */
    vp_error err;
    bool skipped;    /* the shape does not fit the family (err says why) */
    char *row;       /* the table row (text output) */
    json_t *json;    /* --json */
    vp_timeline *tl; /* --svg */
} outcome;

static void table_row(FILE *out, const char *family, const vp_sim *sim) {
    double lo = sim->peak[0];
    for (int d = 1; d < sim->p; d++)
        lo = sim->peak[d] < lo ? sim->peak[d] : lo;
    fprintf(out, "%-12s %10g %8.2f%% %9.2f%% %8g %8g\n", family, sim->makespan, 100.0 * sim->bubble,
            100.0 * sim->bubble_makespan, sim->peak_max, lo);
}

#define GIB 1073741824.0

/* A priced family's row: step time, MFU, bubble, the largest rank's GiB, whether it fits,
 * and every rank's GiB. */
static void priced_row(FILE *out, const vp_price_result *r) {
    fprintf(out, "%-12s %9.4g %6.2f%% %7.2f%% %8.2f  %-4s", r->family, r->step_time_s, 100 * r->mfu,
            100 * r->bubble, r->memory_max_bytes / GIB, r->fits ? "yes" : "no");
    for (int d = 0; d < r->p; d++)
        fprintf(out, " %.1f", r->memory[d].total / GIB);
    fputc('\n', out);
}

/* The family's table row (table_row or priced_row) as text; NULL when memory runs out. */
static char *row_text(const char *family, const vp_sim *sim, const vp_price_result *priced) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    if (priced)
        priced_row(f, priced);
    else
        table_row(f, family, sim);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* Builds and simulates (or prices) one family into o: its row, its JSON or its timeline.
 * A family the shape does not fit is marked skipped. Touches nothing but o, so families
 * run in parallel. */
static void run_family(const compare_args *a, const vp_family *f, outcome *o) {
    vp_schedule *s = NULL;
    vp_sim *sim = NULL;
    vp_price_result *priced = NULL;
    vp_error *err = &o->err;
    vp_status status =
        a->real.on ? vp_price_family(&a->real.setup, f->name, &a->spec.spec, &priced, &s, err)
                   : vp_family_build(f->name, &a->spec.spec, &s, err);
    if (status != VP_OK) {
        o->status = status;
        o->skipped = status != VP_ENOMEM && status != VP_ELIMIT;
        return;
    }
    if (!priced)
        status = cli_sim_run(s, &a->spec, &sim, err);
    sim = priced ? priced->sim : sim;
    if (status == VP_OK && a->svg)
        status = vp_timeline_from_sim(s, sim, &o->tl, err);
    if (status == VP_OK && a->json)
        o->json = priced ? cli_price_json(s, priced) : cli_sim_json(s, sim, &a->spec.spec.costs);
    else if (status == VP_OK)
        o->row = row_text(f->name, sim, priced);
    if (status == VP_OK && !o->json && !o->row)
        *err = (vp_error){.status = status = VP_ENOMEM, .message = "out of memory"};
    o->status = status;
    if (priced)
        vp_price_result_free(priced);
    else
        vp_sim_free(sim);
    vp_schedule_free(s);
}

/* Writes family f's outcome into st (in registry order), taking its JSON and timeline.
 * Returns 0 or the exit code after printing the error. */
static int write_family(const vp_family *f, outcome *o, compare_state *st) {
    if (o->skipped) {
        if (st->table)
            fprintf(st->table, "%-12s (skipped: %s)\n", f->name, o->err.message);
        return 0;
    }
    if (o->status != VP_OK)
        return cli_lib_error(&o->err);
    if (o->tl)
        st->tls[st->ntl++] = o->tl, o->tl = NULL;
    if (o->row)
        fputs(o->row, st->table);
    if (o->json && json_array_append_new(st->array, o->json) != 0)
        return o->json = NULL, cli_error(VP_EXIT_FAILURE, "out of memory");
    o->json = NULL;
    return 0;
}

static void outcome_release(outcome *o) {
    free(o->row);
    json_decref(o->json);
    vp_timeline_free(o->tl);
}

static int write_gallery(const compare_args *a, const compare_state *st) {
    if (!st->ntl)
        return cli_error(VP_EXIT_USAGE, "no family fits p=%d, m=%d", a->spec.spec.p,
                         a->spec.spec.m);
    vp_error err = {0};
    vp_render_opts ro = {.costs = &a->spec.spec.costs};
    char *svg = NULL;
    int rc = vp_render_svg_gallery((const vp_timeline *const *)st->tls, st->ntl, &ro, &svg, &err)
                 ? cli_lib_error(&err)
                 : cli_write(a->svg, svg, strlen(svg));
    free(svg);
    return rc;
}

static void table_head(FILE *out, const compare_args *a) {
    const vp_spec *spec = &a->spec.spec;
    char text[512];
    if (!a->real.on) {
        fprintf(out, "p=%d m=%d  costs %s\n\n%-12s %10s %9s %10s %8s %8s\n", spec->p, spec->m,
                cli_costs_text(&spec->costs, text, sizeof text), "family", "makespan", "bubble",
                "bubble/ms", "peak", "min-peak");
        return;
    }
    const cli_real *r = &a->real;
    fprintf(out, "%s on %s  p=%d m=%d  %s  (%d GPUs, %.1f GiB each)%s\n\n", r->arch.name,
            r->accel.name, spec->p, spec->m, cli_workload_text(&r->work, text, sizeof text),
            spec->p * r->work.tp * r->work.dp, r->accel.memory_bytes / GIB,
            r->setup.measured ? "  measured costs" : "");
    fprintf(out, "%s\n\n",
            vp_price_expected_text(r->accel.name, &r->accel.expected, text, sizeof text));
    fprintf(out, "%-12s %9s %7s %8s %8s  %-4s %s\n", "family", "step s", "MFU", "bubble", "max GiB",
            "fits", "GiB per rank");
}

static const char table_legend[] =
    "\nbubble: 1 - busy / longest device span; bubble/ms: 1 - busy / makespan; peak and\n"
    "min-peak: the largest and the smallest device peak of activation memory, in units\n";

static const char priced_legend[] =
    "\nstep: the simulated makespan + optimizer step + exposed DP reduction; MFU: model\n"
    "FLOPs / (GPUs x peak x step); bubble: 1 - busy / longest device span; GiB per rank:\n"
    "parameters, gradients, optimizer states, activations, buffers, workspace, reserve\n";

/* The families shared out among the workers: each takes the next one not taken. */
typedef struct share {
    const compare_args *a;
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
            cli_progress("compare: %d/%d families (%s)", k + 1, n, vp_family_at(i)->name);
        run_family(sh->a, vp_family_at(i), &sh->out[i]);
    }
}

static void *helper_main(void *sh) {
    take_families(sh, false);
    return NULL;
}

/* Every family, on up to a->threads workers (default: the machine's processors), written
 * into st in registry order until one fails. */
static int compare_all(const compare_args *a, compare_state *st) {
    int n = vp_family_count();
    long want = a->threads > 0 ? a->threads : sysconf(_SC_NPROCESSORS_ONLN);
    int threads = want < 1 ? 1 : want > n ? n : (int)want;
    outcome *out = calloc((size_t)n, sizeof *out);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!out || !tid) {
        free(out);
        free(tid);
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    }
    share sh = {.a = a, .out = out};
    cli_progress("compare: %d families on %d worker%s", n, threads, threads > 1 ? "s" : "");
    int helpers = 0;
    while (helpers + 1 < threads && pthread_create(&tid[helpers], NULL, helper_main, &sh) == 0)
        helpers++;
    take_families(&sh, true);
    for (int i = 0; i < helpers; i++)
        pthread_join(tid[i], NULL);
    cli_progress_clear();
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (!rc)
            rc = write_family(vp_family_at(i), &out[i], st);
        outcome_release(&out[i]);
    }
    free(out);
    free(tid);
    return rc;
}

/* Writes what the loop collected (the table only when rc is 0) and the gallery. */
static int write_outputs(const compare_args *a, compare_state *st, cli_out *table, int rc) {
    if (st->table) {
        fputs(a->real.on ? priced_legend : table_legend, st->table);
        int out_rc = cli_out_end(table, rc ? NULL : "-");
        rc = rc ? rc : out_rc;
    }
    if (!rc && st->array)
        rc = cli_write_json("-", st->array);
    if (!rc && a->svg)
        rc = write_gallery(a, st);
    return rc;
}

static int run(void *args) {
    compare_args *a = args;
    if (!a->spec.spec.p || !a->spec.spec.m)
        return cli_error(VP_EXIT_USAGE, "compare needs -p and -m");
    int rc = cli_spec_ready(&a->spec);
    if (!rc)
        rc = cli_real_ready(&a->real, &a->spec);
    if (!rc && a->svg)
        rc = cli_probe_output(a->svg);
    compare_state st = {0};
    cli_out table = {0};
    if (!rc && !(st.tls = calloc((size_t)vp_family_count() + 1, sizeof *st.tls)))
        rc = cli_error(VP_EXIT_FAILURE, "out of memory");
    else if (!rc && a->json)
        st.array = json_array();
    else if (!rc && !(rc = cli_out_begin(&table)))
        table_head(st.table = table.f, a);
    if (!rc)
        rc = compare_all(a, &st);
    rc = write_outputs(a, &st, &table, rc);
    for (int i = 0; i < st.ntl; i++)
        vp_timeline_free(st.tls[i]);
    free(st.tls);
    json_decref(st.array);
    cli_real_release(&a->real);
    cli_spec_release(&a->spec);
    return rc;
}

static const cli_use uses[] = {
    {&cli_spec_group, offsetof(compare_args, spec)},
    {&cli_limit_group, offsetof(compare_args, spec.spec.max_ops)},
    {&cli_recompute_group, offsetof(compare_args, spec.recompute)},
    {&cli_real_group, offsetof(compare_args, real)},
    {&cli_split_group, offsetof(compare_args, real.split)},
    {&compare_group, 0},
};

const cli_command cli_cmd_compare = {
    .name = "compare",
    .summary = "simulate every family side by side",
    .usage = "-p P -m M [--cost ...] [--memory-model ...] [--json] [--svg FILE]\n"
             "                     [--model NAME|FILE --gpu NAME|FILE --seq S --mbs B ...]",
    .about = "Builds and simulates every family (vpipe list) for the same p, m and costs\n"
             "and prints them side by side: makespan, bubble (1 - busy / longest device\n"
             "span), bubble/ms (1 - busy / makespan), peak (the largest device peak of\n"
             "activation memory, in units) and min-peak (the smallest). Families whose\n"
             "constraints the shape does not meet are listed with the reason.\n\n"
             "With --model, prices every family for a real model on a real accelerator:\n"
             "step time in seconds, MFU, bubble, the largest rank's memory in GiB, whether\n"
             "it fits, and every rank's GiB (simulate FAMILY --model ... itemises them).\n",
    CLI_USES(uses),
    .args_size = sizeof(compare_args),
    .init = init,
    .run = run,
};
