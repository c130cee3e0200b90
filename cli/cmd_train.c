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
#include <unistd.h>

#include "cli.h"
#include "vpipe/render.h"
#include "vpipe/runtime.h"

#define BIG (1 << 30)
#define TRAIN(field) offsetof(vp_train_request, field)
#define MIB (1024.0 * 1024.0)

/* The split group's two options sit alike here and in vp_request. */
_Static_assert(TRAIN(layers_per_stage) - TRAIN(split) ==
                   offsetof(vp_request, layers_per_stage) - offsetof(vp_request, split),
               "train's split options sit as vp_request's");

static int parse_seed(const char *flag, const char *value, void *dest) {
    long seed;
    int rc = cli_parse_int(flag, value, 0, LONG_MAX, &seed);
    if (!rc)
        *(uint64_t *)dest = (uint64_t)seed;
    return rc;
}

/* In vp_train_request's index orders. */
static const char *const lr_schedules[] = {"cosine", "constant", NULL};
static const char *const transports[] = {"threads", "mpi", NULL};

static const cli_opt training_opts[] = {
    {.short_name = 'p',
     .kind = CLI_INT,
     .offset = TRAIN(p),
     .arg = "N",
     .lo = 1,
     .hi = 1 << 20,
     .help = "pipeline ranks (default 1; a --schedule-file brings its\n"
             "own: -p, when given, must match it)"},
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
     .help = "microbatches per step: the global batch, over every\n"
             "replica (default 1; a --schedule-file brings its own:\n"
             "-m, when given, must be its m times --dp)"},
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
    {.name = "vocab-shards",
     .kind = CLI_INT,
     .offset = TRAIN(po.train.vocab_shards),
     .arg = "K",
     .lo = 1,
     .hi = 256,
     .help = "the single-rank reference's vocabulary in K shards whose\n"
             "softmax statistics and gradients add up in shard order, as\n"
             "a pipeline of K ranks with --vocab-parallel adds them (the\n"
             "same bits)"},
    {.name = "zero",
     .kind = CLI_INT,
     .offset = TRAIN(po.zero),
     .arg = "N",
     .lo = 0,
     .hi = 3,
     .help = "1: ZeRO-1, the AdamW moments and update sharded across\n"
             "the --dp replicas (same results, 1/D of the moments);\n"
             "0: none; 2 and 3 (gradients, weights) are priced, not run"},
    {.name = "steps",
     .kind = CLI_INT,
     .offset = TRAIN(po.train.steps),
     .arg = "K",
     .lo = 1,
     .hi = BIG,
     .help = "optimiser steps (default 200; with --resume: the\n"
             "checkpoint's run's, and more extends that run)"},
    {.name = "lr-decay-steps",
     .kind = CLI_INT,
     .offset = TRAIN(po.train.decay_steps),
     .arg = "K",
     .lo = 1,
     .hi = BIG,
     .help = "the learning-rate schedule's length: the cosine reaches\n"
             "--min-lr at step K and stays there (default --steps;\n"
             "with --resume: the checkpoint's, which may not change)"},
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
     .help = "cosine floor, at most --lr (default a tenth of --lr)"},
    {.name = "warmup",
     .kind = CLI_INT,
     .offset = TRAIN(warmup),
     .arg = "K",
     .lo = 0,
     .hi = BIG,
     .help = "warm-up steps (default 10% of --lr-decay-steps)"},
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
     .offset = TRAIN(data),
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
             "flags; a checkpoint of another run is refused); a larger\n"
             "--steps extends a finished run, its learning-rate\n"
             "schedule kept"},
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
    {.name = "log",
     .kind = CLI_STRING,
     .offset = TRAIN(log),
     .arg = "FILE",
     .help = "one JSON line per step: step, loss, val_loss, lr,\n"
             "grad_norm, tokens_per_s, step_ms, peak_bytes per rank;\n"
             "with --resume, an existing log continues (its lines past\n"
             "the checkpoint's step dropped). The run holds FILE: a\n"
             "second run on it is refused"},
    {.name = "plot",
     .kind = CLI_STRING,
     .offset = TRAIN(plot),
     .arg = "FILE",
     .help = "loss and validation loss against steps as an SVG\n"
             "(vpipe plot draws one from a --log)"},
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
     .kind = CLI_STRING,
     .offset = TRAIN(cost_file),
     .arg = "FILE",
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
     .kind = CLI_STRING,
     .offset = TRAIN(fail_at),
     .arg = "R:S:K",
     .help = "rank R fails before op K of step S (0-based)"},
    {.name = "stall-at",
     .kind = CLI_STRING,
     .offset = TRAIN(stall_at),
     .arg = "R:S:K",
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
    vp_train_request_init(args);
}

/* The request and what was prepared for it. */
typedef struct train_run {
    const vp_train_request *q;
    vp_train_ready r;
} train_run;

/* ---- progress lines ------------------------------------------------------------------ */

typedef struct progress_ctx {
    FILE *out;
    bool emulated;
    int write_errno;      /* a progress line could not be written to stdout: the run stopped */
    char note[400];       /* printed before the first step line (what a resume changed) */
    const char *log_path; /* --log, held from the start, written from the first step (under
                           * MPI: rank 0's process) */
    int log_fd;           /* --log held (hold_log) until it is opened at the first step; -1 */
    bool log_created;     /* hold_log created it: removed again when no step is logged */
    FILE *log;
    bool log_continues; /* --log continues the resumed run's log: written at its end */
    char *log_head;     /* its lines to keep, written over it at the first step (NULL: all) */
    int log_errno;      /* the log could not be opened or written: the run stopped */
    bool keep;          /* the lines are kept for --plot */
    char *lines;        /* the log's lines so far (keep) */
    size_t len;
    bool lines_failed; /* out of memory keeping them */
} progress_ctx;

/* Appends line to the kept lines. */
static void keep_line(progress_ctx *ctx, const char *line) {
    size_t n = strlen(line);
    char *grown = ctx->lines_failed ? NULL : realloc(ctx->lines, ctx->len + n + 1);
    if (!grown) {
        ctx->lines_failed = true;
        return;
    }
    memcpy(grown + ctx->len, line, n + 1);
    ctx->lines = grown;
    ctx->len += n;
}

/* Opens --log at the first step, through the file hold_log holds (a device or a FIFO
 * as it is): emptied, or continued (cut to the lines it keeps, when it drops some: written
 * over its start, the same bytes where they are its prefix, as in a log vpipe wrote). */
static void open_log(progress_ctx *ctx) {
    errno = 0;
    int fd = ctx->log_fd;
    ctx->log = fd < 0 ? fopen(ctx->log_path, "w") : fdopen(fd, "w");
    if (ctx->log && fd >= 0) {
        ctx->log_fd = -1; /* the stream owns it now, and the lock with it */
        const char *head = ctx->log_head ? ctx->log_head : "";
        bool ok = ctx->log_continues && !ctx->log_head
                      ? fseek(ctx->log, 0, SEEK_END) == 0
                      : fputs(head, ctx->log) != EOF && fflush(ctx->log) == 0 &&
                            ftruncate(fd, (off_t)strlen(head)) == 0;
        if (!ok)
            ctx->log_errno = errno ? errno : EIO;
    } else if (!ctx->log)
        ctx->log_errno = errno ? errno : EIO;
    free(ctx->log_head);
    ctx->log_head = NULL;
}

/* The step's line of the log (written to --log and kept for --plot); false when the log
 * cannot be written. */
static bool log_step(const vp_train_progress *p, progress_ctx *ctx) {
    if (!ctx->log_path && !ctx->keep)
        return true;
    char *line = NULL;
    if (vp_train_log_line(p, &line, NULL) != VP_OK) {
        ctx->log_errno = ENOMEM;
        return false;
    }
    if (ctx->keep)
        keep_line(ctx, line);
    if (ctx->log_path && !ctx->log)
        open_log(ctx);
    errno = 0;
    if (ctx->log && (fputs(line, ctx->log) == EOF || fflush(ctx->log) != 0))
        ctx->log_errno = errno ? errno : EIO;
    free(line);
    return !ctx->log_errno;
}

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
    if (!log_step(p, ctx))
        return false;
    if (p->step < p->steps)
        cli_progress("train: step %d/%d running...", p->step + 1, p->steps);
    return true;
}

/* The exit code of a run whose progress or log could not be written, else rc. */
static int progress_failed(const progress_ctx *ctx, int rc) {
    if (ctx->log_errno)
        return cli_error(VP_EXIT_INPUT, "cannot write %s: %s",
                         ctx->log_path ? ctx->log_path : "the loss plot's log",
                         strerror(ctx->log_errno));
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
static void note_resume(const train_run *t, const vp_checkpoint_shape *here, progress_ctx *ctx) {
    vp_checkpoint_meta meta;
    const char *dir = t->r.po.train.resume_dir;
    if (!dir || vp_checkpoint_latest(dir, &meta, NULL))
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
static int print_json(const train_run *t, const vp_schedule *s, const vp_train_result *r,
                      const vp_pipeline_result *pr) {
    const char *schedule = s ? s->family : "single";
    const vp_train_options *o = &t->r.po.train;
    bool real = !t->q->emulate;
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
        (json_int_t)o->seed, "data", t->r.data_path, "emulated", t->q->emulate);
    if (!root)
        return cli_error(VP_EXIT_FAILURE, "cannot build the JSON summary");
    json_object_set_new(root, "resumed_step", json_integer(r->resumed_step));
    json_object_set_new(root, "dp", json_integer(o->dp));
    json_object_set_new(root, "zero", json_integer(t->r.po.zero));
    json_object_set_new(root, "vocab_shards", json_integer(o->vocab_shards));
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

static void print_summary(FILE *out, const train_run *t, const vp_pipeline_result *pr) {
    const vp_schedule *s = t->r.schedule;
    const vp_train_result *r = &pr->train;
    bool real = !t->q->emulate;
    char tl[32], vl[32], dg[32], pk[32], replicas[48] = "";
    if (pr->dp > 1)
        snprintf(replicas, sizeof replicas, " (%d replicas%s)", pr->dp,
                 t->r.po.zero ? ", ZeRO-1" : "");
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
    fprintf(out, "rank  peak activation MiB  predicted  measured bubble\n");
    for (int d = 0; d < pr->p; d++)
        fprintf(out, "%4d %20s %10.3f %15.1f%%\n", d,
                number_or_na(real, "%.3f", (double)pr->peak_act_bytes[d] / MIB, pk, sizeof pk),
                pr->predicted_peak_bytes[d] / MIB, 100.0 * pr->bubble_measured[d]);
    fprintf(out, "peak MiB per rank, measured / predicted (--json: bytes):\nrank");
    for (int c = 0; c < VP_MEM_CATEGORIES; c++)
        fprintf(out, " %19s", vp_mem_category_name((vp_mem_category)c));
    for (int d = 0; d < pr->p; d++) {
        fprintf(out, "\n%4d", d);
        for (int c = 0; c < VP_MEM_CATEGORIES; c++) {
            int i = d * VP_MEM_CATEGORIES + c;
            fprintf(out, " %9s/%9.3f",
                    number_or_na(real, "%.3f", pr->memory[i] / MIB, pk, sizeof pk),
                    pr->predicted_memory[i] / MIB);
        }
    }
    fputc('\n', out);
    cli_blas_describe(out);
}

/* The summary of a pipelined run: JSON, or text on stdout. */
/* The summary of a resumed run that had no step left to run (its checkpoint holds the
 * last), or -1 when steps ran. */
static int finished_summary(const train_run *t, const vp_train_result *r) {
    const char *dir = t->r.po.train.resume_dir;
    if (!dir || r->resumed_step != r->steps)
        return -1;
    return cli_print("nothing left to run: the checkpoint in %s holds all %d steps | param "
                     "digest %016" PRIx64 "\n",
                     dir, r->steps, r->param_digest);
}

static int report_pipelined(const train_run *t, const vp_pipeline_result *pr) {
    if (t->q->json)
        return print_json(t, t->r.schedule, &pr->train, pr);
    int done = finished_summary(t, &pr->train);
    if (done >= 0)
        return done;
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    print_summary(out.f, t, pr);
    return cli_out_end(&out, "-");
}

/* ---- timelines ------------------------------------------------------------------------- */

/* Writes a renderer's text (or reports its error). */
static int write_rendered(vp_status st, const vp_error *err, char *text, const char *path) {
    int rc = st != VP_OK ? cli_lib_error(err) : cli_write(path, text, strlen(text));
    free(text);
    return rc;
}

/* The measured step as a Chrome trace, and as an SVG beside its simulation. */
static int write_timelines(const train_run *t, vp_pipeline_result *pr) {
    vp_error err = {0};
    char *text = NULL;
    int rc = 0;
    if (t->q->trace) {
        vp_status st = vp_render_trace(pr->measured, &text, &err);
        rc = write_rendered(st, &err, text, t->q->trace);
    }
    if (!rc && t->q->svg) {
        vp_status st = vp_pipeline_svg(t->r.schedule, pr, &t->r.po.train.model, &text, &err);
        rc = write_rendered(st, &err, text, t->q->svg);
    }
    return rc;
}

/* Closes the log and, when draw, draws --plot from its lines. Returns rc, or the exit code
 * of what failed here. */
static int finish_log(const train_run *t, progress_ctx *ctx, bool draw, int rc) {
    if (ctx->log && fclose(ctx->log) != 0 && !rc)
        rc = cli_error(VP_EXIT_INPUT, "cannot write %s: %s", ctx->log_path, strerror(errno));
    ctx->log = NULL;
    if (ctx->log_fd >= 0) { /* no step was logged: a log it created goes (a link stays) */
        struct stat at;
        if (ctx->log_created && lstat(ctx->log_path, &at) == 0 && S_ISREG(at.st_mode))
            unlink(ctx->log_path); /* while still held, as the checkpoint's lock does */
        close(ctx->log_fd);
        ctx->log_fd = -1;
    }
    if (!rc && draw && t->q->plot && ctx->lines_failed)
        rc = cli_error(VP_EXIT_FAILURE, "out of memory");
    if (!rc && draw && t->q->plot) {
        vp_error err = {0};
        char *svg = NULL;
        vp_status st = vp_render_loss_svg(ctx->lines, ctx->len,
                                          t->q->log ? t->q->log : "vpipe train", &svg, &err);
        rc = write_rendered(st, &err, svg, t->q->plot);
    }
    free(ctx->lines);
    ctx->lines = NULL;
    free(ctx->log_head); /* a run that stopped before its first step leaves the log as it was */
    ctx->log_head = NULL;
    return rc;
}

/* ---- running ------------------------------------------------------------------------------ */

/* Under mpirun, this process's rank as its launcher exports it (Open MPI, PMIx, MPICH's
 * Hydra), known before MPI starts; 0 when none does. */
static int launcher_rank(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

/* The preparation's lines: the report's on stdout (checked), statuses on stderr; under
 * MPI every process prepares the same run, and rank 0's process says it. */
static vp_status say(void *user, const char *line, bool out, vp_error *err) {
    const vp_train_request *q = user;
    if (!strcmp(transports[q->transport], "mpi") && launcher_rank() > 0)
        return VP_OK;
    if (!out) {
        fputs(line, stderr);
        return VP_OK;
    }
    if (vp_write_file("-", line, strlen(line), err) == VP_OK)
        return VP_OK;
    char why[sizeof err->message];
    memcpy(why, err->message, sizeof why);
    snprintf(err->message, sizeof err->message, "cannot write %.490s", why);
    return err->status;
}

/* Reports a failed run once (under MPI only the process the library names prints), then
 * under MPI ends the whole job. */
static int run_failed(const train_run *t, const vp_pipeline_result *pr, const vp_error *err) {
    int rc = vp_status_exit_code(err->status);
    if (pr->report)
        rc = err->status == VP_ERUNTIME ? cli_error(VP_EXIT_FAILURE, "%s", err->message)
                                        : cli_lib_error(err);
    if (t->r.po.transport == VP_TRANSPORT_MPI) {
        fflush(stderr);
        vp_runtime_mpi_abort(rc);
    }
    return rc;
}

static int run_reference(const train_run *t, progress_ctx *ctx) {
    const vp_train_options *o = &t->r.po.train;
    vp_error err = {0};
    vp_train_result r;
    note_resume(t, &(vp_checkpoint_shape){1, o->dp, 0, "single", "threads"}, ctx);
    cli_progress("train: step 1/%d running...", o->steps);
    vp_status st = vp_train_run(o, t->r.data, on_step, ctx, &r, &err);
    cli_progress_clear();
    if (st != VP_OK)
        return progress_failed(ctx, cli_lib_error(&err));
    if (ctx->write_errno || ctx->log_errno)
        return progress_failed(ctx, 0);
    int rc = finish_log(t, ctx, true, 0);
    if (rc)
        return rc;
    if (r.resumed_step)
        fprintf(ctx->out, "resumed from step %d of %s\n", r.resumed_step, o->resume_dir);
    if (r.skipped_steps)
        fprintf(ctx->out, "skipped %d non-finite steps\n", r.skipped_steps);
    if (t->q->json)
        return print_json(t, NULL, &r, NULL);
    int done = finished_summary(t, &r);
    if (done >= 0)
        return done;
    cli_blas_describe(ctx->out);
    return cli_print(
        "done: %d steps | train loss %.4f | val loss %.4f | %.1f ms/step | %.0f tok/s\n"
        "peak activation MiB: %.3f | param digest %016" PRIx64 "\n",
        r.steps, r.train_loss, r.val_loss, r.step_ms, r.tokens_per_s,
        (double)r.peak_act_bytes / MIB, r.param_digest);
}

static int run_pipelined(train_run *t, progress_ctx *ctx) {
    const vp_schedule *s = t->r.schedule;
    vp_checkpoint_shape here = {s->p, t->r.po.train.dp, t->r.po.zero, "", ""};
    snprintf(here.schedule, sizeof here.schedule, "%s", s->family);
    snprintf(here.transport, sizeof here.transport, "%s", t->r.transport);
    note_resume(t, &here, ctx);
    vp_error err = {0};
    vp_pipeline_result pr;
    cli_progress("train: step 1/%d running...", t->r.po.train.steps);
    vp_status st = vp_pipeline_train(&t->r.po, t->r.data, on_step, ctx, &pr, &err);
    cli_progress_clear();
    if (st != VP_OK)
        return progress_failed(ctx, run_failed(t, &pr, &err));
    int rc = progress_failed(ctx, 0);
    if (!rc && pr.rank == 0) /* under MPI, rank 0 reports */
        rc = write_timelines(t, &pr);
    if (!rc)
        rc = finish_log(t, ctx, pr.rank == 0, 0);
    if (!rc && pr.rank == 0)
        rc = report_pipelined(t, &pr);
    vp_pipeline_result_release(&pr);
    return rc;
}

/* Holds --log for the run (vp_file_hold), so that a second run on it is refused instead
 * of mixing its lines in; created when missing, and removed again when no step is logged.
 * A device or a FIFO is written as it is, unheld. Under MPI rank 0's process does it.
 * Returns an exit code. */
static int hold_log(const train_run *t, progress_ctx *ctx) {
    struct stat st;
    if (!ctx->log_path || (t->r.po.transport == VP_TRANSPORT_MPI && launcher_rank() > 0) ||
        (stat(ctx->log_path, &st) == 0 && !S_ISREG(st.st_mode)))
        return 0;
    bool busy;
    vp_error err = {0};
    vp_status rc = vp_file_hold(ctx->log_path, &ctx->log_fd, &ctx->log_created, &busy, &err);
    if (rc == VP_OK)
        return 0;
    if (busy)
        return cli_error(VP_EXIT_INPUT,
                         "--log %s is being written by another run (two runs in one log would "
                         "mix their lines): name another file",
                         ctx->log_path);
    return cli_error(VP_EXIT_INPUT, "cannot write --log %s", err.message);
}

/* With --resume and a --log that exists: the log continues, keeping its lines up to the
 * checkpoint's step (those past it, from a run beyond the checkpoint, are replaced once
 * the first step is logged), and --plot draws them too. Under MPI rank 0's process does
 * it. Returns an exit code. */
static int continue_log(const train_run *t, progress_ctx *ctx) {
    const char *dir = t->r.po.train.resume_dir, *path = t->q->log;
    bool mpi = t->r.po.transport == VP_TRANSPORT_MPI;
    vp_checkpoint_meta meta;
    char *text = NULL, *kept = NULL;
    size_t len = 0;
    vp_error err = {0};
    struct stat st_log;
    if (!dir || !path || ctx->log_created || (mpi && launcher_rank() > 0) ||
        vp_checkpoint_latest(dir, &meta, NULL) || (stat(path, &st_log) != 0 && errno == ENOENT))
        return 0; /* no log to continue (hold_log created it) */
    int dropped = 0;
    vp_status st = vp_read_file(path, VP_READ_MAX, &text, &len, &err);
    if (st == VP_OK)
        st = vp_render_loss_cut(text, len, path, meta.step + 1, &kept, &dropped, &err);
    free(text);
    if (st != VP_OK)
        return cli_error(vp_status_exit_code(st),
                         "cannot continue --log: %s (name another file, or remove this one)",
                         err.message);
    ctx->log_continues = true;
    fprintf(ctx->out, "log: %s continues after step %d", path, meta.step);
    if (dropped)
        fprintf(ctx->out,
                " (its %d line%s of later steps, from a run past the checkpoint, %s "
                "replaced at the first step)",
                dropped, dropped == 1 ? "" : "s", dropped == 1 ? "is" : "are");
    fputc('\n', ctx->out);
    if (ctx->keep)
        keep_line(ctx, kept);
    if (dropped)
        ctx->log_head = kept;
    else
        free(kept);
    return 0;
}

static int run(void *args) {
    vp_train_request *q = args;
    q->say = say;
    q->user = q;
    q->probe = cli_probe;
    train_run t = {.q = q};
    vp_error err = {0};
    if (vp_train_prepare(q, &t.r, &err) != VP_OK)
        return cli_lib_error(&err);
    progress_ctx ctx = {.out = q->json ? stderr : stdout,
                        .emulated = q->emulate,
                        .log_path = q->log,
                        .log_fd = -1,
                        .keep = q->plot != NULL};
    int rc = hold_log(&t, &ctx);
    if (!rc)
        rc = continue_log(&t, &ctx);
    if (!rc)
        rc = t.r.reference ? run_reference(&t, &ctx) : run_pipelined(&t, &ctx);
    rc = finish_log(&t, &ctx, false, rc); /* what a failed run left open */
    vp_train_ready_release(&t.r);
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
    {&cli_offload_group, TRAIN(offload)},
    {&cli_vocab_group, TRAIN(vocab_parallel)},
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
    .args_size = sizeof(vp_train_request),
    .init = init,
    .run = run,
};
