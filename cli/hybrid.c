/* vpipe plan --model: the DP x TP x PP x microbatch x schedule x recompute search, its
 * report, and its exports (see cli.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define GIB 1073741824.0

static const char *const emit_names[] = {"torchtitan", "megatron", NULL};

static const cli_opt hybrid_opts[] = {
    {.name = "gpus",
     .kind = CLI_INT,
     .offset = offsetof(cli_hybrid, gpus),
     .arg = "N",
     .lo = 1,
     .hi = 1 << 20,
     .help = "GPUs to use, N = DP x TP x PP (with --model)"},
    {.name = "global-batch",
     .kind = CLI_INT,
     .offset = offsetof(cli_hybrid, global_batch),
     .arg = "B",
     .lo = 1,
     .hi = 1 << 24,
     .help = "sequences per step (with --model); DP x mbs divides it"},
    {.name = "pp",
     .kind = CLI_INT,
     .offset = offsetof(cli_hybrid, pp),
     .arg = "N",
     .lo = 1,
     .hi = 1 << 20,
     .help = "fix the pipeline degree (--tp, --dp, --mbs and --recompute\n"
             "fix theirs; what is not fixed is searched)"},
    {.name = "top",
     .kind = CLI_INT,
     .offset = offsetof(cli_hybrid, top),
     .arg = "K",
     .lo = 1,
     .hi = 1000,
     .help = "configurations to rank (default 10)"},
    {.name = "max-chunks",
     .kind = CLI_INT,
     .offset = offsetof(cli_hybrid, max_chunks),
     .arg = "V",
     .lo = 1,
     .hi = 64,
     .help = "interleaved with 2..V chunks per device (default 4)"},
    {.name = "threads",
     .kind = CLI_INT,
     .offset = offsetof(cli_hybrid, threads),
     .arg = "N",
     .lo = 1,
     .hi = 256,
     .help = "worker threads (default 1); the answer never depends on it"},
    {.name = "time-limit",
     .kind = CLI_DOUBLE,
     .offset = offsetof(cli_hybrid, time_limit),
     .arg = "S",
     .lo = 0.001,
     .hi = 1e6,
     .help = "stop after S seconds with the best found so far (and say\n"
             "so); without --model the default is 60"},
    {.name = "emit",
     .kind = CLI_ENUM,
     .offset = offsetof(cli_hybrid, emit),
     .choices = emit_names,
     .help = "torchtitan DIR: write DIR/job.toml (the parallelism part of\n"
             "a torchtitan job) and DIR/schedule.csv for the winner;\n"
             "megatron: print Megatron-LM's flags for the best 1F1B or\n"
             "interleaved configuration"},
};

const cli_group cli_hybrid_group = CLI_GROUP("hybrid search (with --model)", hybrid_opts);

void cli_hybrid_init(cli_hybrid *h) {
    memset(h, 0, sizeof *h);
    h->emit = -1;
}

static void progress(void *arg, long done, long total) {
    (void)arg;
    cli_progress("plan: %ld/%ld configurations visited", done, total);
}

/* The request from the flags (the model group's fixed degrees, the search's own). */
static vp_hybrid_request request(const cli_real *r, const cli_hybrid *h) {
    vp_hybrid_request q = vp_hybrid_request_make(&r->arch, &r->accel, h->gpus, h->global_batch);
    q.work = r->work;
    q.split = r->split.goal >= 0 ? (vp_split_goal)r->split.goal : VP_SPLIT_TIME;
    q.tp = r->tp;
    q.dp = r->dp;
    q.mbs = r->mbs;
    q.pp = h->pp;
    q.recompute = r->recompute;
    q.max_chunks = h->max_chunks;
    q.top = h->top;
    q.threads = h->threads;
    q.time_limit_s = h->time_limit;
    q.progress = progress;
    return q;
}

/* "v-zb" or "interleaved v=2" or "v-block f1=1 ..." of c into buf. */
static const char *family_text(const vp_hybrid_config *c, char *buf, size_t size) {
    if (c->v)
        snprintf(buf, size, "%s v=%d", c->family, c->v);
    else
        snprintf(buf, size, "%s%s%s", c->family, c->params[0] ? " " : "", c->params);
    return buf;
}

static void config_row(FILE *out, const char *label, const vp_hybrid_config *c) {
    char fam[160];
    fprintf(out, "%-4s %-14s %3d %3d %3d %4d %5d %-9s %9.4g %6.2f%% %7.2f%% %8.2f  %s\n", label,
            c->group, c->dp, c->tp, c->pp, c->mbs, c->m, vp_recompute_name(c->recompute),
            c->step_time_s, 100 * c->mfu, 100 * c->bubble, c->memory_max_bytes / GIB,
            family_text(c, fam, sizeof fam));
}

static void table_head(FILE *out) {
    fprintf(out, "%-4s %-14s %3s %3s %3s %4s %5s %-9s %9s %7s %8s %8s  %s\n", "", "family", "DP",
            "TP", "PP", "mbs", "m", "recompute", "step s", "MFU", "bubble", "max GiB", "schedule");
}

static void print_text(FILE *out, const vp_hybrid *h, const vp_hybrid_request *q) {
    const vp_price_result *w = h->winner.result;
    fprintf(out,
            "plan: %s on %d %s (%.1f GiB each, %.1f GiB reserved), sequence %d, global batch "
            "%d%s%s%s\n",
            q->arch->name, q->gpus, q->gpu->name, q->gpu->memory_bytes / GIB,
            q->work.reserve_bytes / GIB, q->work.seq, q->global_batch,
            q->work.flash ? ", FlashAttention" : "", q->work.sp ? ", sequence parallelism" : "",
            q->work.zero1 ? ", distributed optimizer" : "");
    fprintf(out,
            "%ld configurations: %ld evaluated, %ld pruned (%ld by the step-time bound, %ld by "
            "the memory bound, %ld over memory when built), %ld refused; %.2f s\n",
            h->candidates, h->evaluated, h->pruned_bound + h->pruned_memory + h->over_memory,
            h->pruned_bound, h->pruned_memory, h->over_memory, h->refused, h->elapsed_s);
    if (h->timed_out)
        fprintf(out, "TIME LIMIT reached: the best found so far, not every configuration\n");
    fprintf(out, "\nwhy: %s\n\ntop %d:\n", h->reason, h->n_top);
    table_head(out);
    for (int i = 0; i < h->n_top; i++) {
        char label[16];
        snprintf(label, sizeof label, "%d", i + 1);
        config_row(out, label, &h->top[i]);
    }
    fprintf(out, "\nbest of every family (1f1b-r: 1F1B with full recomputation):\n");
    table_head(out);
    for (int i = 0; i < h->n_best; i++)
        config_row(out, "", &h->best[i]);
    fprintf(out, "\nthe winner in detail:\n");
    cli_price_text(out, w, &h->winner.work, false);
}

/* DIR/job.toml and DIR/schedule.csv for the winner. */
static int emit_torchtitan(const vp_hybrid *h, const vp_hybrid_request *q, const char *dir) {
    char csv_path[4096], toml_path[4096];
    snprintf(csv_path, sizeof csv_path, "%s/schedule.csv", dir);
    snprintf(toml_path, sizeof toml_path, "%s/job.toml", dir);
    vp_error err = {0};
    char *toml = NULL, *csv = NULL;
    int rc = vp_hybrid_torchtitan(q, &h->winner, csv_path, &toml, &err) ? cli_lib_error(&err) : 0;
    if (!rc && vp_torch_csv_write(h->winner.schedule, VP_TORCH_CSV_COMPUTE_ONLY, &csv, &err))
        rc = cli_lib_error(&err);
    if (!rc)
        rc = cli_write(csv_path, csv, strlen(csv));
    if (!rc)
        rc = cli_write(toml_path, toml, strlen(toml));
    if (!rc)
        fprintf(stderr, "vpipe: wrote %s and %s\n", toml_path, csv_path);
    free(toml);
    free(csv);
    return rc;
}

/* Megatron's flags for the best configuration of a family it runs. */
static int emit_megatron(const vp_hybrid *h, const vp_hybrid_request *q) {
    const vp_hybrid_config *pick = NULL;
    for (int i = 0; i < h->n_best && !pick; i++)
        if (!strcmp(h->best[i].family, "1f1b") || !strcmp(h->best[i].family, "interleaved"))
            pick = &h->best[i];
    if (!pick)
        return cli_error(VP_EXIT_USAGE, "no 1F1B or interleaved configuration fits: Megatron-LM "
                                        "runs no other schedule");
    vp_hybrid_priced priced;
    vp_error err = {0};
    char *flags = NULL;
    int rc = vp_hybrid_price(q, pick, &priced, &err) ? cli_lib_error(&err) : 0;
    if (!rc && vp_hybrid_megatron(q, &priced, &flags, &err))
        rc = cli_lib_error(&err);
    if (!rc)
        rc = cli_print("# Megatron-LM: %s, predicted step %.4g s, MFU %.1f%%%s\n%s", pick->group,
                       pick->step_time_s, 100 * pick->mfu,
                       pick == &h->best[0] ? "" : " (vpipe's winner is a schedule Megatron lacks)",
                       flags);
    free(flags);
    vp_hybrid_priced_release(&priced);
    return rc;
}

/* The report (text or JSON) on stdout, the winner's schedule to out_path. */
static int report(const vp_hybrid *h, const vp_hybrid_request *q, bool json, const char *out_path) {
    if (out_path) {
        char *text = NULL;
        vp_error err = {0};
        int rc = vp_json_write(h->winner.schedule, &text, &err) == VP_OK
                     ? cli_write(out_path, text, strlen(text))
                     : cli_lib_error(&err);
        free(text);
        if (rc || !strcmp(out_path, "-"))
            return rc;
    }
    if (json) {
        json_t *j = cli_json_take(vp_hybrid_json(h, q));
        int rc = cli_write_json("-", j);
        json_decref(j);
        return rc;
    }
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    print_text(out.f, h, q);
    return cli_out_end(&out, "-");
}

int cli_plan_hybrid(cli_spec *o, cli_real *r, const cli_hybrid *h, const cli_plan_out *po) {
    if (o->spec.p || o->spec.m || po->budget || o->have_cost || o->profile.given)
        return cli_error(VP_EXIT_USAGE, "with --model the search chooses the pipeline: -p, -m, "
                                        "--memory and --cost do not apply (--pp fixes the "
                                        "pipeline degree)");
    if (!h->gpus || !h->global_batch)
        return cli_error(VP_EXIT_USAGE, "plan --model needs --gpus N and --global-batch B");
    if (r->split.layers.v)
        return cli_error(VP_EXIT_USAGE, "--layers-per-stage does not apply to the search: every "
                                        "configuration gets its own split (--split)");
    if ((h->emit == 0) != (po->dir != NULL))
        return cli_error(VP_EXIT_USAGE, "--emit torchtitan takes a directory: --emit torchtitan "
                                        "DIR (and a directory needs --emit torchtitan)");
    int rc = cli_real_ready(r, o);
    if (!rc && po->dir)
        rc = cli_prepare_dir(po->dir);
    if (!rc && po->out)
        rc = cli_probe_output(po->out);
    if (rc)
        return rc;
    vp_hybrid_request q = request(r, h);
    vp_hybrid *result = NULL;
    vp_error err = {0};
    rc = vp_hybrid_run(&q, &result, &err) != VP_OK ? cli_lib_error(&err) : 0;
    cli_progress_clear();
    if (!rc && h->emit == 0)
        rc = emit_torchtitan(result, &q, po->dir);
    if (!rc && h->emit == 1)
        rc = emit_megatron(result, &q);
    if (!rc && h->emit != 1) /* megatron's flags take stdout */
        rc = report(result, &q, po->json, po->out);
    vp_hybrid_free(result);
    return rc;
}
