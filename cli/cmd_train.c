/* vpipe train: trains the transformer on byte-level text, on one rank (the reference) or
 * pipelined over p ranks with any schedule. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "vpipe/render.h"
#include "vpipe/runtime.h"

/* Everything the command line asks of a run. */
typedef struct train_args {
    vp_pipeline_options po; /* po.train: model, optimiser, data, durability, faults */
    cli_cost_file profile;  /* --cost-file, or measured when a run needs one */
    const char *schedule, *schedule_file, *data_path, *memory, *trace, *svg;
    int p, chunks, warmup, transport, lr_schedule;
    long max_ops;     /* --max-ops (0: the default limit) */
    int recompute;    /* --recompute: a vp_recompute, -1 until given */
    cli_split split;  /* --split (default even), --layers-per-stage */
    int *layer_start; /* the split of the run, po.layer_start (owned) */
    double weight_decay;
    bool json, emulate;
} train_args;

#define BIG (1 << 30)
#define TRAIN(field) offsetof(train_args, field)

static int parse_seed(const char *flag, const char *value, void *dest) {
    long seed;
    int rc = cli_parse_int(flag, value, 0, LONG_MAX, &seed);
    if (!rc)
        *(uint64_t *)dest = (uint64_t)seed;
    return rc;
}

/* "R:S:K" of --fail-at / --stall-at into the faults to inject (one of the two). */
static int parse_fault(const char *flag, const char *value, void *dest) {
    vp_faults *faults = dest;
    int r, step, op, used = 0;
    if (faults->rank >= 0)
        return cli_error(VP_EXIT_USAGE, "give --fail-at or --stall-at, not both");
    if (sscanf(value, "%d:%d:%d%n", &r, &step, &op, &used) != 3 || value[used] || r < 0 ||
        step < 0 || op < 0)
        return cli_error(VP_EXIT_USAGE, "%s expects RANK:STEP:OP (non-negative), got '%s'", flag,
                         value);
    *faults = (vp_faults){.nonfinite_step = faults->nonfinite_step,
                          .rank = r,
                          .step = step,
                          .op = op,
                          .stall = !strcmp(flag, "--stall-at")};
    return 0;
}

static const char *const lr_schedules[] = {"cosine", "constant", NULL};
static const vp_lr_schedule lr_schedule_of[] = {VP_LR_COSINE, VP_LR_CONSTANT};
static const char *const transports[] = {"threads", "mpi", NULL};
static const vp_transport_kind transport_of[] = {VP_TRANSPORT_THREADS, VP_TRANSPORT_MPI};

static const cli_opt training_opts[] = {
    {.short_name = 'p',
     .kind = CLI_INT,
     .offset = TRAIN(p),
     .arg = "N",
     .lo = 1,
     .hi = 1 << 20,
     .help = "pipeline ranks"},
    {.name = "schedule",
     .kind = CLI_STRING,
     .offset = TRAIN(schedule),
     .arg = "NAME",
     .help = "a family (vpipe list; default 1f1b when -p > 1),\n"
             "'single', the single-rank reference (-p 1), or 'auto'\n"
             "(the planner's choice under --memory)"},
    {.name = "schedule-file",
     .kind = CLI_STRING,
     .offset = TRAIN(schedule_file),
     .arg = "F",
     .help = "a schedule file (vpipe JSON or PyTorch CSV)"},
    {.short_name = 'v',
     .kind = CLI_INT,
     .offset = TRAIN(chunks),
     .arg = "V",
     .lo = 1,
     .hi = 64,
     .help = "chunks per device for --schedule interleaved (default 2)"},
    {.short_name = 'm',
     .kind = CLI_INT,
     .offset = TRAIN(po.train.m),
     .arg = "M",
     .lo = 1,
     .hi = 1 << 20,
     .help = "microbatches per step: the global batch, over every\nreplica"},
    {.name = "dp",
     .kind = CLI_INT,
     .offset = TRAIN(po.train.dp),
     .arg = "D",
     .lo = 1,
     .hi = 1 << 12,
     .help = "data-parallel replicas of the pipeline (p * D ranks);\n"
             "replica r takes microbatches r*M/D .. (r+1)*M/D - 1 of each\n"
             "step and the replicas' gradients are added in replica\n"
             "order. With -p 1 and no schedule: the reference summing\n"
             "D groups of M/D microbatches in the same order"},
    {.name = "zero",
     .kind = CLI_INT,
     .offset = TRAIN(po.zero),
     .arg = "1",
     .lo = 0,
     .hi = 1,
     .help = "1: ZeRO-1, the AdamW moments and update sharded across\n"
             "the --dp replicas (same results, 1/D of the moments)"},
    {.name = "steps",
     .kind = CLI_INT,
     .offset = TRAIN(po.train.steps),
     .arg = "K",
     .lo = 1,
     .hi = BIG,
     .help = "optimiser steps"},
    {.name = "lr",
     .kind = CLI_DOUBLE,
     .offset = TRAIN(po.train.lr),
     .arg = "X",
     .lo = 1e-12,
     .hi = 10,
     .help = "peak learning rate"},
    {.name = "min-lr",
     .kind = CLI_DOUBLE,
     .offset = TRAIN(po.train.min_lr),
     .arg = "X",
     .lo = 0,
     .hi = 10,
     .help = "cosine floor"},
    {.name = "warmup",
     .kind = CLI_INT,
     .offset = TRAIN(warmup),
     .arg = "K",
     .lo = 0,
     .hi = BIG,
     .help = "warm-up steps (default 10% of --steps)"},
    {.name = "lr-schedule",
     .kind = CLI_ENUM,
     .offset = TRAIN(lr_schedule),
     .choices = lr_schedules,
     .help = "learning-rate schedule"},
    {.name = "weight-decay",
     .kind = CLI_DOUBLE,
     .offset = TRAIN(weight_decay),
     .arg = "X",
     .lo = 0,
     .hi = 10,
     .help = "AdamW weight decay on matrices"},
    {.name = "clip",
     .kind = CLI_DOUBLE,
     .offset = TRAIN(po.train.clip),
     .arg = "X",
     .lo = 0,
     .hi = 1e30,
     .help = "global gradient-norm clip, 0 for none"},
    {.name = "seed",
     .kind = CLI_CUSTOM,
     .offset = TRAIN(po.train.seed),
     .arg = "S",
     .parse = parse_seed,
     .help = "weights and data order (default 1)"},
    {.name = "watchdog",
     .kind = CLI_DOUBLE,
     .offset = TRAIN(po.watchdog_s),
     .arg = "SEC",
     .lo = 0.001,
     .hi = 1e6,
     .help = "a rank waiting longer for a tensor stops the run"},
    {.name = "transport",
     .kind = CLI_ENUM,
     .offset = TRAIN(transport),
     .choices = transports,
     .help = "one thread per rank, or one process per rank under mpirun:\n"
             "mpirun -np P vpipe train --transport mpi ... (as root, set\n"
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;\n"
             "mpirun --oversubscribe runs more ranks than cores)"},
};

static const cli_opt data_opts[] = {
    {.name = "data",
     .kind = CLI_STRING,
     .offset = TRAIN(data_path),
     .arg = "FILE",
     .help = "text file (default: the KJV Bible of bible-kjv-text)"},
    {.name = "eval-every",
     .kind = CLI_INT,
     .offset = TRAIN(po.train.eval_every),
     .arg = "K",
     .lo = 0,
     .hi = BIG,
     .help = "validation loss every K steps (0: only at the end)"},
    {.name = "eval-batches",
     .kind = CLI_INT,
     .offset = TRAIN(po.train.eval_batches),
     .arg = "K",
     .lo = 1,
     .hi = 1 << 20,
     .help = "validation microbatches per evaluation"},
};

static const cli_opt durability_opts[] = {
    {.name = "checkpoint",
     .kind = CLI_STRING,
     .offset = TRAIN(po.train.checkpoint_dir),
     .arg = "DIR",
     .help = "save checkpoints in DIR after the last step (and see\n"
             "--checkpoint-every); written atomically, a new one\n"
             "replaces the previous only once complete. The run holds\n"
             "DIR: a second run on it is refused"},
    {.name = "overwrite",
     .kind = CLI_FLAG,
     .offset = TRAIN(po.train.overwrite_checkpoint),
     .help = "with --checkpoint DIR: replace the checkpoint DIR holds\n"
             "(refused otherwise, unless --resume DIR continues it); it\n"
             "stays until the run's first checkpoint is complete"},
    {.name = "checkpoint-every",
     .kind = CLI_INT,
     .offset = TRAIN(po.train.checkpoint_every),
     .arg = "K",
     .lo = 1,
     .hi = BIG,
     .help = "also after every K-th step"},
    {.name = "resume",
     .kind = CLI_STRING,
     .offset = TRAIN(po.train.resume_dir),
     .arg = "DIR",
     .help = "continue from the checkpoint in DIR, bit-identical to a\n"
             "run never interrupted (give the same model and training\n"
             "flags; a checkpoint of another run is refused)"},
    {.name = "skip-nonfinite",
     .kind = CLI_FLAG,
     .offset = TRAIN(po.train.skip_nonfinite),
     .help = "skip a step whose loss or gradient norm is NaN or Inf\n"
             "(default: stop with an error); no checkpoint ever holds\n"
             "non-finite state"},
};

static const cli_opt output_opts[] = {
    {.name = "json",
     .kind = CLI_FLAG,
     .offset = TRAIN(json),
     .help = "summary as one JSON object on stdout (progress to stderr)"},
    {.name = "trace",
     .kind = CLI_STRING,
     .offset = TRAIN(trace),
     .arg = "FILE",
     .help = "measured timeline of the last step as a Chrome trace"},
    {.name = "svg",
     .kind = CLI_STRING,
     .offset = TRAIN(svg),
     .arg = "FILE",
     .help = "measured timeline of the last step beside the simulated\n"
             "one (simulated with the measured per-stage op times and\n"
             "the model's activation bytes; memory in MiB in both)"},
    {.name = "cost-file",
     .kind = CLI_CUSTOM,
     .offset = TRAIN(profile),
     .arg = "FILE",
     .parse = cli_parse_cost_file,
     .help = "profiled pass costs (vpipe profile) for the predicted\nstep time"},
    {.name = "memory",
     .kind = CLI_STRING,
     .offset = TRAIN(memory),
     .arg = "X",
     .help = "with --schedule auto: the activation-memory budget, as a\n"
             "fraction of 1F1B's peak (0.5), in units (4u) or bytes;\n"
             "the planner picks the fastest schedule whose predicted\n"
             "peak bytes fit, from profiled costs"},
    {.name = "emulate",
     .kind = CLI_FLAG,
     .offset = TRAIN(emulate),
     .help = "every op waits its profiled time instead of computing,\n"
             "with the real transport and schedule (for machines with\n"
             "fewer cores than ranks; pipelined runs only); profiles\n"
             "first without --cost-file. Losses, learning rate, peak\n"
             "bytes and digest are not applicable (n/a, JSON null)"},
};

static const cli_opt testing_opts[] = {
    {.name = "fail-at",
     .kind = CLI_CUSTOM,
     .offset = TRAIN(po.train.faults),
     .arg = "R:S:K",
     .parse = parse_fault,
     .help = "rank R fails before op K of step S (0-based)"},
    {.name = "stall-at",
     .kind = CLI_CUSTOM,
     .offset = TRAIN(po.train.faults),
     .arg = "R:S:K",
     .parse = parse_fault,
     .help = "rank R stalls there until the watchdog stops the run"},
    {.name = "inject-nan",
     .kind = CLI_INT,
     .offset = TRAIN(po.train.faults.nonfinite_step),
     .arg = "K",
     .lo = 1,
     .hi = BIG,
     .help = "poison step K's gradients with a NaN (1-based)"},
};

static const cli_group training_group = CLI_GROUP("training", training_opts);
static const cli_group data_group = CLI_GROUP("data", data_opts);
static const cli_group durability_group = CLI_GROUP("durability", durability_opts);
static const cli_group output_group = CLI_GROUP("output", output_opts);
static const cli_group testing_group = CLI_GROUP("testing", testing_opts);

static void init(void *args) {
    train_args *a = args;
    vp_pipeline_options_default(&a->po);
    vp_train_options_default(&a->po.train);
    a->p = 1;
    a->warmup = -1;
    a->weight_decay = a->po.train.adamw.weight_decay;
    a->lr_schedule = a->po.train.schedule == VP_LR_CONSTANT;
    a->transport = a->po.transport == VP_TRANSPORT_MPI;
    a->recompute = a->split.goal = -1;
}

/* ---- progress lines ------------------------------------------------------------------ */

typedef struct progress_ctx {
    FILE *out;
    bool emulated;
    int write_errno; /* a progress line could not be written to stdout: the run stopped */
    char note[400];  /* printed before the first step line (what a resume changed) */
} progress_ctx;

static bool on_step(const vp_train_progress *p, void *user) {
    progress_ctx *ctx = user;
    cli_progress_clear();
    if (p->note[0])
        fprintf(stderr, "vpipe: warning: %s\n", p->note);
    if (ctx->note[0])
        fprintf(ctx->out, "%s\n", ctx->note);
    ctx->note[0] = '\0';
    if (ctx->emulated)
        fprintf(ctx->out, "step %d/%d | loss n/a | lr n/a | norm n/a | %.0f tok/s | %.1f ms",
                p->step, p->steps, p->tokens_per_s, p->step_ms);
    else
        fprintf(ctx->out, "step %d/%d | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | %.1f ms",
                p->step, p->steps, p->loss, p->lr, p->grad_norm, p->tokens_per_s, p->step_ms);
    if (!isnan(p->val_loss) && !ctx->emulated)
        fprintf(ctx->out, " | val %.4f", p->val_loss);
    if (p->skipped)
        fprintf(ctx->out, " | skipped (not finite)");
    if (p->checkpointed)
        fprintf(ctx->out, " | checkpoint saved");
    fputc('\n', ctx->out);
    errno = 0;
    if (ctx->out == stdout && (fflush(stdout) != 0 || ferror(stdout))) { /* data, not logs */
        ctx->write_errno = errno ? errno : EIO;
        return false;
    }
    if (p->step < p->steps)
        cli_progress("train: step %d/%d running...", p->step + 1, p->steps);
    return true;
}

/* The exit code of a run whose progress could not be written, else rc. */
static int progress_failed(const progress_ctx *ctx, int rc) {
    if (!ctx->write_errno)
        return rc;
    return cli_error(VP_EXIT_INPUT, "cannot write standard output: %s", strerror(ctx->write_errno));
}

/* ---- resuming another shape ------------------------------------------------------------ */

/* A run's shape in one phrase: "p=4 v-half threads", "p=2 dp=2 zero-1 1f1b mpi". */
static void describe_shape(const vp_checkpoint_shape *sh, char *buf, size_t size) {
    char dp[32] = "";
    if (sh->dp > 1)
        snprintf(dp, sizeof dp, " dp=%d%s", sh->dp, sh->zero ? " zero-1" : "");
    snprintf(buf, size, "p=%d%s %s %s", sh->p, dp, sh->schedule, sh->transport);
}

/* When resuming a checkpoint written by a run of another shape than here, the line that
 * says what changed, into ctx->note (nothing when the checkpoint cannot be read: the run
 * itself reports that). */
static void note_resume(const train_args *a, const vp_checkpoint_shape *here, progress_ctx *ctx) {
    vp_checkpoint_meta meta;
    if (!a->po.train.resume_dir || vp_checkpoint_latest(a->po.train.resume_dir, &meta, NULL))
        return;
    char there[96], now[96];
    describe_shape(&meta.shape, there, sizeof there);
    describe_shape(here, now, sizeof now);
    if (strcmp(there, now) != 0)
        snprintf(ctx->note, sizeof ctx->note, "resuming a checkpoint of %s at %s (step %d)%s",
                 there, now, meta.step,
                 meta.shape.dp != here->dp ? "; the replicas' reduction grouping changed, so the "
                                             "sums are not those of the uninterrupted run"
                                           : "");
}

/* ---- the summary ----------------------------------------------------------------------- */

static json_t *size_array(const size_t *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

static json_t *real_array(const double *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

/* A JSON number, or null when not applicable or not finite. */
static json_t *real_or_null(bool applicable, double v) {
    return applicable && isfinite(v) ? json_real(v) : json_null();
}

/* Per rank, one object of bytes per category of mem ([p * VP_MEM_CATEGORIES]). */
static json_t *memory_json(const double *mem, int p) {
    json_t *a = json_array();
    for (int d = 0; d < p; d++) {
        json_t *o = json_pack("{s:i}", "rank", d);
        for (int c = 0; c < VP_MEM_CATEGORIES; c++)
            json_object_set_new(o, vp_mem_category_name((vp_mem_category)c),
                                json_real(mem[d * VP_MEM_CATEGORIES + c]));
        json_array_append_new(a, o);
    }
    return a;
}

/* What only a pipelined run reports. */
static void pipeline_json(json_t *root, const vp_schedule *s, const vp_pipeline_result *pr) {
    json_object_set_new(root, "predicted_peak_activation_bytes",
                        real_array(pr->predicted_peak_bytes, pr->p));
    json_object_set_new(root, "bubble_measured", real_array(pr->bubble_measured, pr->p));
    json_object_set_new(root, "memory_per_rank",
                        pr->emulated ? json_null() : memory_json(pr->memory, pr->p));
    json_object_set_new(root, "predicted_memory_per_rank",
                        memory_json(pr->predicted_memory, pr->p));
    json_t *split = json_array();
    for (int k = 0; k <= pr->route_len; k++)
        json_array_append_new(split, json_integer(pr->layer_start[k]));
    json_object_set_new(root, "layer_start", split);
    json_object_set_new(root, "bit_exact_expected", json_boolean(pr->bit_exact));
    json_object_set_new(root, "recompute", json_string(vp_recompute_name(s->recompute)));
    if (pr->predicted_step_ms > 0)
        json_object_set_new(root, "predicted_step_ms", json_real(pr->predicted_step_ms));
}

/* The summary of a run as JSON on stdout; s and pr are NULL for the single-rank reference. An
 * emulated run has no model: losses, peak bytes and digest are null. */
static int print_json(const train_args *a, const vp_schedule *s, const vp_train_result *r,
                      const vp_pipeline_result *pr) {
    const char *schedule = s ? s->family : "single";
    const vp_train_options *o = &a->po.train;
    bool real = !a->emulate;
    char digest[17];
    snprintf(digest, sizeof digest, "%016" PRIx64, r->param_digest);
    size_t one = r->peak_act_bytes;
    json_t *peaks = !real ? json_null()
                    : pr  ? size_array(pr->peak_act_bytes, pr->p)
                          : size_array(&one, 1);
    json_t *root = json_pack(
        "{s:s, s:i, s:i, s:i, s:o, s:o, s:o, s:f, s:f, s:o, s:{s:i, s:i, s:i, s:i, s:i, s:i}, "
        "s:I, s:s, s:b}",
        "schedule", schedule, "p", pr ? pr->p : 1, "m", o->m, "steps", r->steps, "train_loss",
        real_or_null(real, r->train_loss), "val_loss", real_or_null(real, r->val_loss),
        "peak_activation_bytes", peaks, "step_ms", r->step_ms, "tokens_per_s", r->tokens_per_s,
        "param_digest", real ? json_string(digest) : json_null(), "model", "layers",
        o->model.n_layer, "width", o->model.width, "heads", o->model.n_head, "seq",
        o->model.seq_len, "microbatch", o->model.microbatch, "vocab", o->model.vocab, "seed",
        (json_int_t)o->seed, "data", a->data_path, "emulated", a->emulate);
    if (!root)
        return cli_error(VP_EXIT_FAILURE, "cannot build the JSON summary");
    json_object_set_new(root, "resumed_step", json_integer(r->resumed_step));
    json_object_set_new(root, "dp", json_integer(o->dp));
    json_object_set_new(root, "zero", json_integer(a->po.zero));
    json_object_set_new(root, "skipped_steps", json_integer(r->skipped_steps));
    json_object_set_new(root, "blas", cli_blas_json());
    if (pr)
        pipeline_json(root, s, pr);
    int rc = cli_write_json("-", root);
    json_decref(root);
    return rc;
}

/* "%.4f" of v, or "n/a" when not applicable. */
static const char *number_or_na(bool applicable, const char *fmt, double v, char *buf,
                                size_t size) {
    if (!applicable)
        return "n/a";
    snprintf(buf, size, fmt, v);
    return buf;
}

static void print_summary(FILE *out, const train_args *a, const vp_schedule *s,
                          const vp_pipeline_result *pr) {
    const vp_train_result *r = &pr->train;
    bool real = !a->emulate;
    char tl[32], vl[32], dg[32], pk[32], replicas[48] = "";
    if (pr->dp > 1)
        snprintf(replicas, sizeof replicas, " (%d replicas%s)", pr->dp,
                 a->po.zero ? ", ZeRO-1" : "");
    fprintf(out, "layers per stage:");
    for (int k = 0; k < pr->route_len; k++)
        fprintf(out, " %d", pr->layer_start[k + 1] - pr->layer_start[k]);
    fprintf(
        out,
        "\ndone: %s%s%s on %d ranks%s%s, %d steps | train loss %s | val loss %s | %.1f ms/step | "
        "%.0f tok/s | param digest %s\n",
        s->family, s->recompute ? " recomputing " : "",
        s->recompute ? vp_recompute_name(s->recompute) : "", pr->p, replicas,
        real ? "" : " (emulated)", r->steps,
        number_or_na(real, "%.4f", r->train_loss, tl, sizeof tl),
        number_or_na(real, "%.4f", r->val_loss, vl, sizeof vl), r->step_ms, r->tokens_per_s,
        real ? (snprintf(dg, sizeof dg, "%016" PRIx64, r->param_digest), dg) : "n/a");
    if (pr->predicted_step_ms > 0)
        fprintf(out,
                "%sstep time: measured %.1f ms, simulated with the profiled costs %.1f ms "
                "(%+.1f%%)\n",
                real ? "" : "emulated (every op waited its profiled time) | ", r->step_ms,
                pr->predicted_step_ms, 100.0 * (r->step_ms / pr->predicted_step_ms - 1.0));
    fprintf(out, "rank  peak activation bytes  predicted  measured bubble\n");
    for (int d = 0; d < pr->p; d++)
        fprintf(out, "%4d %22s %10.0f %15.1f%%\n", d,
                number_or_na(real, "%.0f", (double)pr->peak_act_bytes[d], pk, sizeof pk),
                pr->predicted_peak_bytes[d], 100.0 * pr->bubble_measured[d]);
    fprintf(out, "peak bytes per rank, measured / predicted:\nrank");
    for (int c = 0; c < VP_MEM_CATEGORIES; c++)
        fprintf(out, " %23s", vp_mem_category_name((vp_mem_category)c));
    for (int d = 0; d < pr->p; d++) {
        fprintf(out, "\n%4d", d);
        for (int c = 0; c < VP_MEM_CATEGORIES; c++) {
            int i = d * VP_MEM_CATEGORIES + c;
            fprintf(out, " %11s/%11.0f", number_or_na(real, "%.0f", pr->memory[i], pk, sizeof pk),
                    pr->predicted_memory[i]);
        }
    }
    fputc('\n', out);
    cli_blas_describe(out);
}

/* The summary of a pipelined run: JSON, or text on stdout. */
/* The summary of a resumed run that had no step left to run (its checkpoint holds the
 * last), or -1 when steps ran. */
static int finished_summary(const train_args *a, const vp_train_result *r) {
    if (!a->po.train.resume_dir || r->resumed_step != r->steps)
        return -1;
    return cli_print("nothing left to run: the checkpoint in %s holds all %d steps | param "
                     "digest %016" PRIx64 "\n",
                     a->po.train.resume_dir, r->steps, r->param_digest);
}

static int report_pipelined(const train_args *a, const vp_schedule *s,
                            const vp_pipeline_result *pr) {
    if (a->json)
        return print_json(a, s, &pr->train, pr);
    int done = finished_summary(a, &pr->train);
    if (done >= 0)
        return done;
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    print_summary(out.f, a, s, pr);
    return cli_out_end(&out, "-");
}

/* ---- timelines ------------------------------------------------------------------------- */

#define MIB (1024.0 * 1024.0)

/* The simulation of s drawn beside the measured step: every stage's measured mean op
 * times and the model's activation bytes per stage, in MiB like the measured memory. */
static int simulated_timeline(const vp_schedule *s, const vp_pipeline_result *pr,
                              const vp_model_config *model, vp_timeline **out) {
    vp_error err = {0};
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    vp_sim *sim = NULL;
    vp_status rc = vp_cost_model_new(s, &costs, &mem, &cm, &err);
    if (rc == VP_OK)
        rc = vp_runtime_model_bytes(cm, s, model, pr->layer_start, &err);
    if (rc == VP_OK)
        rc = vp_runtime_measured_costs(s, pr->measured, cm, &err);
    if (rc == VP_OK) {
        for (int st = 0; st < cm->S; st++) {
            cm->act[st] = cm->act_bytes[st] / MIB;
            cm->keep[st] = cm->keep_bytes[st] / MIB;
            cm->hold[st] = cm->hold_bytes[st] / MIB;
        }
        rc = vp_simulate(s, cm, &sim, &err);
    }
    if (rc == VP_OK)
        rc = vp_timeline_from_sim(s, sim, out, &err);
    if (rc == VP_OK) {
        snprintf((*out)->family, sizeof(*out)->family, "simulated");
        snprintf((*out)->mem_unit, sizeof(*out)->mem_unit, "MiB");
    }
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    return rc == VP_OK ? 0 : cli_lib_error(&err);
}

/* Writes a renderer's text (or reports its error). */
static int write_rendered(vp_status st, const vp_error *err, char *text, const char *path) {
    int rc = st != VP_OK ? cli_lib_error(err) : cli_write(path, text, strlen(text));
    free(text);
    return rc;
}

/* The measured step as a Chrome trace, and as an SVG beside its simulation. */
static int write_timelines(const train_args *a, const vp_schedule *s, vp_pipeline_result *pr) {
    vp_error err = {0};
    char *text = NULL;
    int rc = 0;
    if (a->trace) {
        vp_status st = vp_render_trace(pr->measured, &text, &err);
        rc = write_rendered(st, &err, text, a->trace);
    }
    if (rc || !a->svg)
        return rc;
    vp_timeline *sim_tl = NULL;
    rc = simulated_timeline(s, pr, &a->po.train.model, &sim_tl);
    if (!rc) {
        snprintf(pr->measured->family, sizeof pr->measured->family, "measured");
        const vp_timeline *tls[2] = {pr->measured, sim_tl};
        vp_render_opts ro = {.title = "vpipe train: measured step (ms) and its simulation"};
        vp_status st = vp_render_svg_gallery(tls, 2, &ro, &text, &err);
        rc = write_rendered(st, &err, text, a->svg);
    }
    vp_timeline_free(sim_tl);
    return rc;
}

/* ---- checks before anything runs --------------------------------------------------------- */

/* Whether the flags ask for the single-rank reference. */
static bool is_reference(const train_args *a) {
    return !a->schedule_file && (a->schedule ? !strcmp(a->schedule, "single") : a->p == 1);
}

/* Faults must land inside the run, on a pipelined run. */
static int check_faults(const train_args *a) {
    const vp_train_options *o = &a->po.train;
    const vp_faults *f = &o->faults;
    if (f->nonfinite_step > o->steps)
        return cli_error(VP_EXIT_USAGE, "--inject-nan %d is past the last step (%d)",
                         f->nonfinite_step, o->steps);
    if (f->rank < 0)
        return 0;
    const char *flag = f->stall ? "--stall-at" : "--fail-at";
    if (is_reference(a))
        return cli_error(VP_EXIT_USAGE, "%s injects into a pipelined run (-p 2 or more)", flag);
    if (!a->schedule_file && f->rank >= a->p * o->dp)
        return cli_error(VP_EXIT_USAGE, "%s %d:%d:%d: rank %d is not one of the %d ranks", flag,
                         f->rank, f->step, f->op, f->rank, a->p * o->dp);
    if (f->step >= o->steps)
        return cli_error(VP_EXIT_USAGE, "%s %d:%d:%d: step %d is past the run's %d steps (0-based)",
                         flag, f->rank, f->step, f->op, f->step, o->steps);
    return 0;
}

/* The same once the schedule (of dp replicas) is known: the rank and the op exist. */
static int check_faults_on(const vp_faults *f, const vp_schedule *s, int dp) {
    if (f->rank < 0)
        return 0;
    const char *flag = f->stall ? "--stall-at" : "--fail-at";
    if (f->rank >= s->p * dp)
        return cli_error(VP_EXIT_USAGE, "%s: rank %d is not one of the run's %d ranks", flag,
                         f->rank, s->p * dp);
    int n = s->dev[f->rank % s->p].n;
    if (f->op >= n)
        return cli_error(VP_EXIT_USAGE, "%s: op %d is past rank %d's %d ops per step (0-based)",
                         flag, f->op, f->rank, n);
    return 0;
}

/* The recomputation --recompute asks (none when not given). */
static vp_recompute recompute_of(const train_args *a) {
    return a->recompute >= 0 ? (vp_recompute)a->recompute : VP_RECOMPUTE_NONE;
}

/* The shape of a pipelined run given by flags, checked before any schedule is built: p
 * ranks need at least p stages, which the layers must fill (vp_split_layers), and the
 * schedule must stay under the op limit. */
static int check_shape(const train_args *a) {
    int *l0 = calloc((size_t)a->p + 1, sizeof *l0);
    if (!l0)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    vp_error err = {0};
    vp_spec spec = vp_spec_make(a->p, a->po.train.m / a->po.train.dp);
    spec.v = a->chunks;
    spec.max_ops = a->max_ops;
    spec.recompute = recompute_of(a);
    int rc = vp_split_layers(a->po.train.model.n_layer, a->p, l0, &err) == VP_OK &&
                     vp_spec_check_size(&spec, &err) == VP_OK
                 ? 0
                 : cli_lib_error(&err);
    free(l0);
    return rc;
}

/* --dp and --zero: the replicas split the global batch evenly (a schedule file brings
 * its own m per replica), ZeRO-1 needs replicas of a pipelined run. */
static int check_replicas(const train_args *a, bool reference) {
    int dp = a->po.train.dp, m = a->po.train.m;
    if (a->po.zero && dp < 2)
        return cli_error(VP_EXIT_USAGE, "--zero 1 shards the optimiser across data-parallel "
                                        "replicas: give --dp 2 or more");
    if (a->po.zero && reference)
        return cli_error(VP_EXIT_USAGE, "--zero 1 shards a pipelined run's replicas: give a "
                                        "schedule (the reference with --dp D computes the same)");
    if (a->emulate && dp > 1)
        return cli_error(VP_EXIT_USAGE, "--emulate runs one replica (no gradients to reduce): "
                                        "drop --dp");
    if (!a->schedule_file && m % dp != 0)
        return cli_error(VP_EXIT_USAGE,
                         "--dp %d does not divide -m %d: each replica takes m/D microbatches of "
                         "the global batch",
                         dp, m);
    return 0;
}

/* Checks that need nothing but the flags, cheapest first, and settles the options. */
static int check_flags(train_args *a) {
    vp_train_options *o = &a->po.train;
    bool reference = is_reference(a);
    if (a->schedule && a->schedule_file)
        return cli_error(VP_EXIT_USAGE, "give --schedule or --schedule-file, not both");
    if (reference && a->p != 1)
        return cli_error(VP_EXIT_USAGE, "the single-rank reference runs on -p 1 (got -p %d)", a->p);
    if (reference && (a->trace || a->svg))
        return cli_error(VP_EXIT_USAGE, "--trace and --svg draw pipelined runs (give --schedule)");
    if (a->emulate && (reference || a->p == 1))
        return cli_error(VP_EXIT_USAGE, "--emulate emulates the ranks of a pipelined run: give "
                                        "-p 2 or more and a schedule");
    if (a->emulate && (o->checkpoint_dir || o->resume_dir))
        return cli_error(VP_EXIT_USAGE, "--emulate runs no model: there is no model state to "
                                        "checkpoint or resume");
    if (o->checkpoint_every && !o->checkpoint_dir)
        return cli_error(VP_EXIT_USAGE, "--checkpoint-every needs --checkpoint DIR");
    if (o->overwrite_checkpoint && !o->checkpoint_dir)
        return cli_error(VP_EXIT_USAGE, "--overwrite needs --checkpoint DIR");
    if (recompute_of(a) && reference)
        return cli_error(VP_EXIT_USAGE, "--recompute recomputes in a schedule: give --schedule "
                                        "(the single-rank reference keeps every activation)");
    if ((a->split.goal >= 0 || a->split.layers.n) && reference)
        return cli_error(VP_EXIT_USAGE, "--split and --layers-per-stage split a pipelined run "
                                        "(give --schedule)");
    if (a->split.goal >= 0 && a->split.layers.n)
        return cli_error(VP_EXIT_USAGE, "give --split or --layers-per-stage, not both");
    if (recompute_of(a) && a->schedule && !strcmp(a->schedule, "auto"))
        return cli_error(VP_EXIT_USAGE, "--recompute with --schedule auto: the planner already "
                                        "weighs 1F1B with full recomputation (1f1b-r)");
    int rc = check_replicas(a, reference);
    if (!rc)
        rc = check_faults(a);
    if (rc)
        return rc;
    o->warmup = a->warmup >= 0 ? a->warmup : o->steps / 10;
    o->schedule = lr_schedule_of[a->lr_schedule];
    o->adamw.weight_decay = (float)a->weight_decay;
    a->po.transport = transport_of[a->transport];
    vp_error err = {0};
    if (vp_model_config_check(&o->model, &err) != VP_OK)
        return cli_lib_error(&err);
    return reference || a->schedule_file ? 0 : check_shape(a);
}

/* Every file the run will write can be written: checked before step 1. */
static int check_outputs(const train_args *a) {
    int rc = a->trace ? cli_probe_output(a->trace) : 0;
    if (!rc && a->svg)
        rc = cli_probe_output(a->svg);
    if (!rc && a->po.train.checkpoint_dir)
        rc = cli_prepare_dir(a->po.train.checkpoint_dir);
    return rc;
}

/* The data, after the checks; the default corpus when no --data. */
static int load_data(train_args *a, vp_data **data) {
    vp_error err = {0};
    if (!a->data_path)
        a->data_path = vp_data_default_path();
    if (!a->data_path)
        return cli_error(VP_EXIT_USAGE, "no --data FILE given and the default corpus "
                                        "(/usr/lib/bible.data from bible-kjv-text) is not "
                                        "installed");
    if (vp_data_load(a->data_path, 0.1, data, &err) != VP_OK)
        return cli_error(err.status == VP_ENOMEM ? VP_EXIT_FAILURE : VP_EXIT_INPUT, "%s",
                         err.message);
    return 0;
}

/* A --cost-file must be of the model trained. */
static int check_profile_model(const train_args *a) {
    const vp_model_config *pm = &a->profile.profile.model;
    if (!a->profile.given || !memcmp(pm, &a->po.train.model, sizeof *pm))
        return 0;
    return cli_error(VP_EXIT_USAGE,
                     "--cost-file was measured for another model (layers %d, width %d, heads %d, "
                     "seq %d, microbatch %d): profile this one with vpipe profile",
                     pm->n_layer, pm->width, pm->n_head, pm->seq_len, pm->microbatch);
}

/* ---- running ------------------------------------------------------------------------------ */

/* Makes a->profile available: the --cost-file one, or measured now. */
static int ensure_profile(train_args *a, const char *why) {
    if (a->profile.given)
        return 0;
    vp_error err = {0};
    fprintf(stderr, "profiling the model's passes for %s...\n", why);
    if (vp_profile_measure(&a->po.train.model, 3, &a->profile.profile, &err) != VP_OK)
        return cli_lib_error(&err);
    a->profile.given = true;
    return 0;
}

/* The profile's per-stage pass times of schedule s (ms), for the predicted step time and
 * the emulation. */
static int profile_op_ms(const train_args *a, const vp_schedule *s, vp_cost_model **out) {
    vp_error err = {0};
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    if (vp_cost_model_new(s, &costs, &mem, out, &err) == VP_OK &&
        vp_profile_cost_model(&a->profile.profile, s, a->po.layer_start, *out, &err) == VP_OK)
        return 0;
    vp_cost_model_free(*out);
    *out = NULL;
    return cli_lib_error(&err);
}

/* --schedule auto: the planner's fastest schedule whose exact predicted activation bytes
 * fit --memory, from profiled costs. */
static int auto_schedule(train_args *a, vp_schedule **out) {
    if (!a->memory)
        return cli_error(VP_EXIT_USAGE, "--schedule auto needs --memory X (0.5, 4u or bytes)");
    vp_error err = {0};
    vp_budget budget;
    if (vp_budget_parse(a->memory, &budget, &err) != VP_OK)
        return cli_error(VP_EXIT_USAGE, "--memory '%s': %s", a->memory, err.message);
    int rc = ensure_profile(a, "the planner");
    vp_autoplan_result ap = {0};
    if (!rc && vp_autoplan(&a->profile.profile, a->p, a->po.train.m / a->po.train.dp, &budget, &ap,
                           &err) != VP_OK)
        rc = cli_lib_error(&err);
    if (rc)
        return rc;
    vp_plan *plan = ap.plan;
    const vp_plan_candidate *c = &plan->candidates[plan->chosen];
    const char *fmt = "auto: chose %s%s%s: predicted peak %.0f activation bytes of the %.0f-byte "
                      "budget; %s\n";
    if (a->json)
        fprintf(stderr, fmt, c->family, c->params[0] ? " " : "", c->params, ap.peak_bytes,
                ap.budget_bytes, plan->reason);
    else
        rc = cli_print(fmt, c->family, c->params[0] ? " " : "", c->params, ap.peak_bytes,
                       ap.budget_bytes, plan->reason);
    *out = plan->schedule;
    plan->schedule = NULL;
    vp_plan_free(plan);
    return rc;
}

/* The schedule of a pipelined run: auto, a file, or a family (1f1b by default). */
static int pipelined_schedule(train_args *a, vp_schedule **out) {
    if (a->schedule && !strcmp(a->schedule, "auto"))
        return auto_schedule(a, out);
    cli_spec spec;
    cli_spec_init(&spec);
    if (!a->schedule_file) { /* a file brings its own p and m (per replica) */
        spec.spec.p = a->p;
        spec.spec.m = a->po.train.m / a->po.train.dp;
    }
    spec.spec.v = a->chunks;
    spec.spec.max_ops = a->max_ops;
    spec.recompute = a->recompute;
    int rc = cli_spec_ready(&spec);
    if (!rc)
        rc = cli_obtain_schedule(a->schedule_file ? a->schedule_file
                                 : a->schedule    ? a->schedule
                                                  : "1f1b",
                                 &spec, out);
    cli_spec_release(&spec);
    return rc;
}

/* Reports a failed run once (under MPI only the process the library names prints), then
 * under MPI ends the whole job. */
static int run_failed(const train_args *a, const vp_pipeline_result *pr, const vp_error *err) {
    int rc = vp_status_exit_code(err->status);
    if (pr->report)
        rc = err->status == VP_ERUNTIME ? cli_error(VP_EXIT_FAILURE, "%s", err->message)
                                        : cli_lib_error(err);
    if (a->po.transport == VP_TRANSPORT_MPI) {
        fflush(stderr);
        vp_runtime_mpi_abort(rc);
    }
    return rc;
}

static int run_reference(train_args *a, const vp_data *data, progress_ctx *ctx) {
    const vp_train_options *o = &a->po.train;
    vp_error err = {0};
    vp_train_result r;
    note_resume(a, &(vp_checkpoint_shape){1, o->dp, 0, "single", "threads"}, ctx);
    cli_progress("train: step 1/%d running...", o->steps);
    vp_status st = vp_train_run(o, data, on_step, ctx, &r, &err);
    cli_progress_clear();
    if (st != VP_OK)
        return progress_failed(ctx, cli_lib_error(&err));
    if (ctx->write_errno)
        return progress_failed(ctx, 0);
    if (r.resumed_step)
        fprintf(ctx->out, "resumed from step %d of %s\n", r.resumed_step, o->resume_dir);
    if (r.skipped_steps)
        fprintf(ctx->out, "skipped %d non-finite steps\n", r.skipped_steps);
    if (a->json)
        return print_json(a, NULL, &r, NULL);
    int done = finished_summary(a, &r);
    if (done >= 0)
        return done;
    cli_blas_describe(ctx->out);
    return cli_print(
        "done: %d steps | train loss %.4f | val loss %.4f | %.1f ms/step | %.0f tok/s\n"
        "peak activation bytes: %zu | param digest %016" PRIx64 "\n",
        r.steps, r.train_loss, r.val_loss, r.step_ms, r.tokens_per_s, r.peak_act_bytes,
        r.param_digest);
}

/* The schedule and what the run needs of the profile, before training. */
/* The layer split of schedule s: --layers-per-stage, or --split's; printed. */
static int choose_split(train_args *a, const vp_schedule *s) {
    vp_error err = {0};
    const vp_model_config *cfg = &a->po.train.model;
    int R = s->route_len;
    const cli_int_list *counts = &a->split.layers;
    vp_split_goal goal = a->split.goal >= 0 ? (vp_split_goal)a->split.goal : VP_SPLIT_EVEN;
    if (counts->n && counts->n != R)
        return cli_error(VP_EXIT_USAGE,
                         "--layers-per-stage gives %d stages, the schedule's "
                         "routes have %d",
                         counts->n, R);
    vp_status rc = VP_OK;
    if (!(a->layer_start = calloc((size_t)R + 1, sizeof *a->layer_start)))
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    if (counts->n) {
        a->layer_start[0] = 0;
        for (int k = 0; k < R; k++)
            a->layer_start[k + 1] = a->layer_start[k] + counts->v[k];
        rc = vp_split_check(cfg->n_layer, R, a->layer_start, &err);
    } else {
        rc = vp_runtime_split(s, cfg, goal, a->layer_start, &err);
    }
    if (rc != VP_OK)
        return cli_lib_error(&err);
    a->po.layer_start = a->layer_start;
    FILE *out = a->json ? stderr : stdout;
    fprintf(out, "split (%s): layers per stage",
            counts->n ? "--layers-per-stage" : cli_split_name(goal));
    for (int k = 0; k < R; k++)
        fprintf(out, " %d", a->layer_start[k + 1] - a->layer_start[k]);
    fputc('\n', out);
    return 0;
}

static int prepare_pipelined(train_args *a, vp_schedule **s, vp_cost_model **op_ms) {
    int rc = pipelined_schedule(a, s);
    if (!rc)
        rc = check_faults_on(&a->po.train.faults, *s, a->po.train.dp);
    if (!rc)
        rc = choose_split(a, *s);
    if (!rc && (*s)->p == 1 && a->emulate)
        rc = cli_error(VP_EXIT_USAGE, "--emulate needs a schedule of 2 or more ranks");
    if (!rc && a->emulate)
        rc = ensure_profile(a, "the emulation");
    if (!rc && a->profile.given)
        rc = profile_op_ms(a, *s, op_ms);
    return rc;
}

static int run_pipelined(train_args *a, const vp_data *data, progress_ctx *ctx) {
    vp_schedule *s = NULL;
    vp_cost_model *op_ms = NULL;
    int rc = prepare_pipelined(a, &s, &op_ms);
    if (rc) {
        vp_schedule_free(s);
        return rc;
    }
    a->po.train.m = s->m * a->po.train.dp; /* the global batch */
    a->po.schedule = s;
    a->po.op_ms = op_ms;
    a->po.emulate = a->emulate;
    vp_checkpoint_shape here = {s->p, a->po.train.dp, a->po.zero, "", ""};
    snprintf(here.schedule, sizeof here.schedule, "%s", s->family);
    snprintf(here.transport, sizeof here.transport, "%s", transports[a->transport]);
    note_resume(a, &here, ctx);
    vp_error err = {0};
    vp_pipeline_result pr;
    cli_progress("train: step 1/%d running...", a->po.train.steps);
    vp_status st = vp_pipeline_train(&a->po, data, on_step, ctx, &pr, &err);
    cli_progress_clear();
    vp_cost_model_free(op_ms);
    if (st != VP_OK) {
        vp_schedule_free(s);
        return progress_failed(ctx, run_failed(a, &pr, &err));
    }
    rc = progress_failed(ctx, 0);
    if (!rc && pr.rank == 0) /* under MPI, rank 0 reports */
        rc = write_timelines(a, s, &pr);
    if (!rc && pr.rank == 0)
        rc = report_pipelined(a, s, &pr);
    vp_pipeline_result_release(&pr);
    vp_schedule_free(s);
    return rc;
}

static int run(void *args) {
    train_args *a = args;
    vp_data *data = NULL;
    int rc = check_flags(a);
    if (!rc)
        rc = check_outputs(a);
    if (!rc)
        rc = check_profile_model(a);
    if (!rc)
        rc = load_data(a, &data);
    progress_ctx ctx = {.out = a->json ? stderr : stdout, .emulated = a->emulate};
    if (!rc)
        rc = is_reference(a) ? run_reference(a, data, &ctx) : run_pipelined(a, data, &ctx);
    vp_data_free(data);
    free(a->layer_start);
    cli_split_release(&a->split);
    return rc;
}

static const cli_use uses[] = {
    {&cli_model_group, TRAIN(po.train.model)},
    {&training_group, 0},
    {&data_group, 0},
    {&durability_group, 0},
    {&output_group, 0},
    {&cli_limit_group, TRAIN(max_ops)},
    {&cli_recompute_group, TRAIN(recompute)},
    {&cli_split_group, TRAIN(split)},
    {&testing_group, 0},
};

const cli_command cli_cmd_train = {
    .name = "train",
    .summary = "train the transformer with a schedule",
    .usage = "[-p P --schedule FAMILY | --schedule-file FILE] [options]",
    .about = "Trains a GPT-style byte-level transformer with gradient accumulation over m\n"
             "microbatches and prints one line per step and a summary. With -p 1 and no\n"
             "schedule it runs the single-rank reference; otherwise one thread per rank\n"
             "executes the schedule's op lists, with results bit-identical to the reference\n"
             "(except DualPipe, whose two replicas sum their gradients in another order).\n"
             "Output paths and the checkpoint directory are checked before step 1.\n",
    .epilog = "exit codes: 0 ok, 1 training failed, 2 usage error (or a checkpoint of another\n"
              "run), 3 bad data (or a missing, corrupt or unwritable checkpoint or output)\n",
    CLI_USES(uses),
    .args_size = sizeof(train_args),
    .init = init,
    .run = run,
};
