/* vpipe train: trains the transformer on byte-level text, on one rank (the reference) or
 * pipelined over p ranks with any schedule. */
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "vpipe/render.h"
#include "vpipe/runtime.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: vpipe train [-p P --schedule FAMILY | --schedule-file FILE] [options]\n"
            "\n"
            "Trains a GPT-style byte-level transformer with gradient accumulation over m\n"
            "microbatches and prints one line per step and a summary. With -p 1 and no\n"
            "schedule it runs the single-rank reference; otherwise one thread per rank\n"
            "executes the schedule's op lists, with results bit-identical to the reference\n"
            "(except DualPipe, whose two replicas sum their gradients in another order).\n"
            "\n"
            "model:\n%s"
            "training:\n"
            "  -p N                pipeline ranks (1)\n"
            "  --schedule NAME     a family (vpipe list; default 1f1b when -p > 1),\n"
            "                      'single', the single-rank reference (-p 1), or 'auto'\n"
            "                      (the planner's choice under --memory)\n"
            "  --schedule-file F   a schedule file (vpipe JSON or PyTorch CSV)\n"
            "  -v V                chunks per device for --schedule interleaved (2)\n"
            "  --watchdog SEC      a rank waiting longer for a tensor stops the run (60)\n"
            "  --transport T       threads (default: one thread per rank) or mpi (one\n"
            "                      process per rank: mpirun -np P vpipe train --transport\n"
            "                      mpi ...; as root add --allow-run-as-root or set\n"
            "                      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1,\n"
            "                      and --oversubscribe beyond the core count)\n"
            "  -m M                microbatches per step (1)\n"
            "  --steps K           optimiser steps (200)\n"
            "  --lr X              peak learning rate (1e-3)\n"
            "  --min-lr X          cosine floor (1e-4)\n"
            "  --warmup K          warm-up steps (10%% of --steps)\n"
            "  --lr-schedule S     cosine or constant (cosine)\n"
            "  --weight-decay X    AdamW weight decay on matrices (0.1)\n"
            "  --clip X            global gradient-norm clip, 0 for none (1)\n"
            "  --seed S            weights and data order (1)\n"
            "data:\n"
            "  --data FILE         text file (default: the KJV Bible of bible-kjv-text)\n"
            "  --eval-every K      validation loss every K steps (only at the end)\n"
            "  --eval-batches K    validation microbatches per evaluation (16)\n"
            "durability (single rank):\n"
            "  --checkpoint DIR    save checkpoints in DIR after the last step (and see\n"
            "                      --checkpoint-every); written atomically, a new one\n"
            "                      replaces the previous only once complete\n"
            "  --checkpoint-every K  also after every K-th step\n"
            "  --resume DIR        continue from the checkpoint in DIR, bit-identical to a\n"
            "                      run never interrupted (give the same model and training\n"
            "                      flags; a checkpoint of another run is refused)\n"
            "  --skip-nonfinite    skip a step whose loss or gradient norm is NaN or Inf\n"
            "                      (default: stop with an error); no checkpoint ever holds\n"
            "                      non-finite state\n"
            "output:\n"
            "  --json              summary as one JSON object on stdout (progress to stderr)\n"
            "  --trace FILE        measured timeline of the last step as a Chrome trace\n"
            "  --svg FILE          measured timeline of the last step beside the simulated\n"
            "                      one (simulated with the measured per-stage op times)\n"
            "  --cost-file FILE    profiled pass costs (vpipe profile) for the predicted\n"
            "                      step time\n"
            "  --memory X          with --schedule auto: the activation-memory budget, as a\n"
            "                      fraction of 1F1B's peak (0.5), in units (4u) or bytes;\n"
            "                      the planner picks the fastest schedule whose predicted\n"
            "                      peak bytes fit, from profiled costs\n"
            "  --emulate           every op waits its profiled time instead of computing,\n"
            "                      with the real transport and schedule (for machines with\n"
            "                      fewer cores than ranks); profiles first without\n"
            "                      --cost-file\n"
            "testing:\n"
            "  --fail-at R:S:K     rank R fails before op K of step S (0-based)\n"
            "  --stall-at R:S:K    rank R stalls there until the watchdog stops the run\n"
            "  --inject-nan K      poison step K's gradients with a NaN (1-based)\n"
            "\n"
            "exit codes: 0 ok, 1 training failed, 2 usage error (or a checkpoint of another\n"
            "run), 3 bad data (or a missing, corrupt or unwritable checkpoint)\n",
            cli_model_help);
}

typedef struct {
    FILE *out;
} progress_ctx;

static bool on_step(const vp_train_progress *p, void *user) {
    progress_ctx *ctx = user;
    fprintf(ctx->out, "step %d/%d | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s | %.1f ms",
            p->step, p->steps, p->loss, p->lr, p->grad_norm, p->tokens_per_s, p->step_ms);
    if (!isnan(p->val_loss))
        fprintf(ctx->out, " | val %.4f", p->val_loss);
    if (p->skipped)
        fprintf(ctx->out, " | skipped (not finite)");
    if (p->checkpointed)
        fprintf(ctx->out, " | checkpoint saved");
    fputc('\n', ctx->out);
    fflush(ctx->out);
    return true;
}

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

/* A JSON number, or null for NaN/Inf (an emulated run has no losses). */
static json_t *real_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

/* The summary of a run; pr is NULL for the single-rank reference. */
static int print_json(const vp_train_options *o, const char *data_path, const char *schedule,
                      const vp_train_result *r, const vp_pipeline_result *pr) {
    char digest[17];
    snprintf(digest, sizeof digest, "%016" PRIx64, r->param_digest);
    size_t one = r->peak_act_bytes;
    json_t *root = json_pack(
        "{s:s, s:i, s:i, s:i, s:o, s:o, s:o, s:f, s:f, s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i}, "
        "s:I, s:s}",
        "schedule", schedule, "p", pr ? pr->p : 1, "m", o->m, "steps", r->steps, "train_loss",
        real_or_null(r->train_loss), "val_loss", real_or_null(r->val_loss), "peak_activation_bytes",
        pr ? size_array(pr->peak_act_bytes, pr->p) : size_array(&one, 1), "step_ms", r->step_ms,
        "tokens_per_s", r->tokens_per_s, "param_digest", digest, "model", "layers",
        o->model.n_layer, "width", o->model.width, "heads", o->model.n_head, "seq",
        o->model.seq_len, "microbatch", o->model.microbatch, "vocab", o->model.vocab, "seed",
        (json_int_t)o->seed, "data", data_path);
    if (!root)
        return cli_error(VP_EXIT_FAILURE, "cannot build the JSON summary");
    json_object_set_new(root, "resumed_step", json_integer(r->resumed_step));
    json_object_set_new(root, "skipped_steps", json_integer(r->skipped_steps));
    if (pr) {
        json_object_set_new(root, "predicted_peak_activation_bytes",
                            real_array(pr->predicted_peak_bytes, pr->p));
        json_object_set_new(root, "bubble_measured", real_array(pr->bubble_measured, pr->p));
        json_t *split = json_array();
        for (int k = 0; k <= pr->route_len; k++)
            json_array_append_new(split, json_integer(pr->layer_start[k]));
        json_object_set_new(root, "layer_start", split);
        json_object_set_new(root, "bit_exact_expected", json_boolean(pr->bit_exact));
        if (pr->predicted_step_ms > 0)
            json_object_set_new(root, "predicted_step_ms", json_real(pr->predicted_step_ms));
    }
    cli_print_json(stdout, root);
    json_decref(root);
    return VP_EXIT_OK;
}

/* Measured timeline as a Chrome trace, and as an SVG beside the simulation of the same
 * schedule with the measured mean op time of every stage and kind. */
static int write_timelines(const vp_schedule *s, const vp_pipeline_result *pr, const char *trace,
                           const char *svg) {
    vp_error err = {0};
    if (trace) {
        FILE *f = cli_open_out(trace);
        if (!f)
            return VP_EXIT_INPUT;
        vp_status rc = vp_render_trace(f, pr->measured, &err);
        cli_close_out(f);
        if (rc != VP_OK)
            return cli_lib_error(&err);
    }
    if (!svg)
        return 0;
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = vp_cost_model_new(s, &costs, &mem, &err);
    vp_timeline *sim_tl = NULL;
    vp_sim *sim = NULL;
    int rc = cm ? 0 : cli_lib_error(&err);
    if (!rc) {
        if (vp_runtime_measured_costs(s, pr->measured, cm, &err) != VP_OK ||
            vp_simulate(s, cm, &sim, &err) != VP_OK ||
            vp_timeline_from_sim(s, sim, &sim_tl, &err) != VP_OK)
            rc = cli_lib_error(&err);
    }
    FILE *f = rc ? NULL : cli_open_out(svg);
    if (!rc && !f)
        rc = VP_EXIT_INPUT;
    if (f) {
        snprintf(sim_tl->family, sizeof sim_tl->family, "simulated");
        snprintf(pr->measured->family, sizeof pr->measured->family, "measured");
        const vp_timeline *tls[2] = {pr->measured, sim_tl};
        vp_render_opts ro = {.title = "vpipe train: measured step (ms) and its simulation"};
        if (vp_render_svg_gallery(f, tls, 2, &ro, &err) != VP_OK)
            rc = cli_lib_error(&err);
        cli_close_out(f);
    }
    vp_timeline_free(sim_tl);
    vp_sim_free(sim);
    vp_cost_model_free(cm);
    return rc;
}

/* Parses an int flag value in [lo, hi] into *out; false after printing the error. */
static bool int_flag(int argc, char **argv, int *i, long lo, long hi, int *out) {
    const char *flag = argv[*i], *v = cli_flag_value(argc, argv, i);
    long x;
    if (!v || cli_parse_int(flag, v, lo, hi, &x))
        return false;
    *out = (int)x;
    return true;
}

static bool double_flag(int argc, char **argv, int *i, double lo, double hi, double *out) {
    const char *flag = argv[*i], *v = cli_flag_value(argc, argv, i);
    return v && !cli_parse_double(flag, v, lo, hi, out);
}

static int run_reference(const vp_train_options *o, const vp_data *data, const char *data_path,
                         bool json, progress_ctx *ctx) {
    vp_error err = {0};
    vp_train_result r;
    if (vp_train_run(o, data, on_step, ctx, &r, &err))
        return cli_lib_error(&err);
    if (r.resumed_step)
        fprintf(ctx->out, "resumed from step %d of %s\n", r.resumed_step, o->resume_dir);
    if (r.skipped_steps)
        fprintf(ctx->out, "skipped %d non-finite steps\n", r.skipped_steps);
    if (json)
        return print_json(o, data_path, "single", &r, NULL);
    printf("done: %d steps | train loss %.4f | val loss %.4f | %.1f ms/step | %.0f tok/s\n"
           "peak activation bytes: %zu | param digest %016" PRIx64 "\n",
           r.steps, r.train_loss, r.val_loss, r.step_ms, r.tokens_per_s, r.peak_act_bytes,
           r.param_digest);
    return VP_EXIT_OK;
}

static void print_split(FILE *out, const vp_pipeline_result *pr) {
    fprintf(out, "layers per stage:");
    for (int k = 0; k < pr->route_len; k++)
        fprintf(out, " %d", pr->layer_start[k + 1] - pr->layer_start[k]);
    fputc('\n', out);
}

/* Everything the command line asks of a pipelined run. */
typedef struct train_args {
    vp_pipeline_options po;
    vp_profile profile; /* --cost-file, or measured when a run needs one */
    bool have_profile;
    const char *data_path, *schedule, *schedule_file, *memory, *trace, *svg;
    int p, chunks;
    bool json;
} train_args;

/* Makes a->profile available: the --cost-file one, or measured now. */
static int ensure_profile(train_args *a, const char *why) {
    if (a->have_profile)
        return 0;
    vp_error err = {0};
    fprintf(stderr, "profiling the model's passes for %s...\n", why);
    if (vp_profile_measure(&a->po.train.model, 3, &a->profile, &err) != VP_OK)
        return cli_lib_error(&err);
    a->have_profile = true;
    return 0;
}

/* The profile's per-stage pass times of schedule s (ms), for the predicted step time and
 * the emulation. */
static int profile_op_ms(const train_args *a, const vp_schedule *s, vp_cost_model **out) {
    vp_error err = {0};
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    *out = vp_cost_model_new(s, &costs, &mem, &err);
    if (*out && vp_profile_cost_model(&a->profile, s, *out, &err) == VP_OK)
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
    vp_plan *plan = NULL;
    double peak = 0, limit = 0;
    if (!rc &&
        vp_autoplan(&a->profile, a->p, a->po.train.m, &budget, &plan, &peak, &limit, &err) != VP_OK)
        rc = cli_lib_error(&err);
    if (rc)
        return rc;
    const vp_plan_candidate *c = &plan->candidates[plan->chosen];
    fprintf(a->json ? stderr : stdout,
            "auto: chose %s%s%s: predicted peak %.0f activation bytes of the %.0f-byte budget; "
            "%s\n",
            c->family, c->params[0] ? " " : "", c->params, peak, limit, plan->reason);
    *out = plan->schedule;
    plan->schedule = NULL;
    vp_plan_free(plan);
    return 0;
}

static int pipelined_schedule(train_args *a, vp_schedule **out) {
    if (a->schedule && !strcmp(a->schedule, "auto"))
        return auto_schedule(a, out);
    cli_spec spec;
    cli_spec_init(&spec);
    spec.spec.p = a->p;
    spec.spec.m = a->po.train.m;
    spec.spec.v = a->chunks;
    spec.have_p = spec.have_m = !a->schedule_file; /* a file brings its own p and m */
    return cli_obtain_schedule(a->schedule_file ? a->schedule_file
                               : a->schedule    ? a->schedule
                                                : "1f1b",
                               &spec, out);
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

static void print_summary(const train_args *a, const vp_schedule *s, const vp_pipeline_result *pr) {
    const vp_train_result *r = &pr->train;
    printf("done: %s on %d ranks, %d steps | train loss %.4f | val loss %.4f | %.1f ms/step "
           "| %.0f tok/s | param digest %016" PRIx64 "\n",
           s->family, pr->p, r->steps, r->train_loss, r->val_loss, r->step_ms, r->tokens_per_s,
           r->param_digest);
    if (pr->predicted_step_ms > 0)
        printf("%sstep time: measured %.1f ms, simulated with the profiled costs %.1f ms "
               "(%+.1f%%)\n",
               a->po.emulate ? "emulated (every op waited its profiled time) | " : "", r->step_ms,
               pr->predicted_step_ms, 100.0 * (r->step_ms / pr->predicted_step_ms - 1.0));
    printf("rank  peak activation bytes  predicted  measured bubble\n");
    for (int d = 0; d < pr->p; d++)
        printf("%4d %22zu %10.0f %15.1f%%\n", d, pr->peak_act_bytes[d], pr->predicted_peak_bytes[d],
               100.0 * pr->bubble_measured[d]);
}

static int run_pipelined(train_args *a, const vp_data *data, progress_ctx *ctx) {
    vp_schedule *s = NULL;
    int rc = pipelined_schedule(a, &s);
    if (!rc && a->po.emulate)
        rc = ensure_profile(a, "the emulation");
    if (rc) {
        vp_schedule_free(s);
        return rc;
    }
    a->po.train.m = s->m;
    a->po.schedule = s;
    vp_cost_model *op_ms = NULL;
    if (a->have_profile && (rc = profile_op_ms(a, s, &op_ms)) != 0) {
        vp_schedule_free(s);
        return rc;
    }
    a->po.op_ms = op_ms;
    vp_error err = {0};
    vp_pipeline_result pr;
    if (vp_pipeline_train(&a->po, data, on_step, ctx, &pr, &err) != VP_OK) {
        vp_cost_model_free(op_ms);
        vp_schedule_free(s);
        return run_failed(a, &pr, &err);
    }
    vp_cost_model_free(op_ms);
    if (pr.rank == 0) { /* under MPI, rank 0 reports */
        rc = write_timelines(s, &pr, a->trace, a->svg);
        print_split(a->json ? stderr : stdout, &pr);
        if (!rc && a->json)
            rc = print_json(&a->po.train, a->data_path, s->family, &pr.train, &pr);
        else if (!rc)
            print_summary(a, s, &pr);
    }
    vp_pipeline_result_release(&pr);
    vp_schedule_free(s);
    return rc;
}

/* Parses "R:S:K" of --fail-at / --stall-at into the faults to inject. */
static bool fault_flag(int argc, char **argv, int *i, vp_faults *faults) {
    const char *flag = argv[*i], *v = cli_flag_value(argc, argv, i);
    int r, step, op, used = 0;
    if (!v || sscanf(v, "%d:%d:%d%n", &r, &step, &op, &used) != 3 || v[used] || r < 0 || step < 0 ||
        op < 0) {
        cli_error(VP_EXIT_USAGE, "%s expects RANK:STEP:OP (non-negative), got '%s'", flag,
                  v ? v : "");
        return false;
    }
    faults->rank = r;
    faults->step = step;
    faults->op = op;
    faults->stall = !strcmp(flag, "--stall-at");
    return true;
}

int cmd_train(int argc, char **argv) {
    vp_train_options o;
    vp_train_options_default(&o);
    train_args t = {.p = 1};
    vp_pipeline_options_default(&t.po);
    int warmup = -1;
    const long big = 1L << 30;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool ok = true;
        int model;
        double x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return VP_EXIT_OK;
        } else if (!strcmp(a, "-p")) {
            ok = int_flag(argc, argv, &i, 1, 1 << 20, &t.p);
        } else if (!strcmp(a, "--schedule")) {
            ok = (t.schedule = cli_flag_value(argc, argv, &i)) != NULL;
        } else if (!strcmp(a, "--schedule-file")) {
            ok = (t.schedule_file = cli_flag_value(argc, argv, &i)) != NULL;
        } else if (!strcmp(a, "--trace")) {
            ok = (t.trace = cli_flag_value(argc, argv, &i)) != NULL;
        } else if (!strcmp(a, "--svg")) {
            ok = (t.svg = cli_flag_value(argc, argv, &i)) != NULL;
        } else if (!strcmp(a, "-v")) {
            ok = int_flag(argc, argv, &i, 1, 64, &t.chunks);
        } else if (!strcmp(a, "--watchdog")) {
            ok = double_flag(argc, argv, &i, 0.001, 1e6, &t.po.watchdog_s);
        } else if (!strcmp(a, "--transport")) {
            const char *v = cli_flag_value(argc, argv, &i);
            ok = v != NULL;
            if (ok && !strcmp(v, "mpi"))
                t.po.transport = VP_TRANSPORT_MPI;
            else if (ok && strcmp(v, "threads"))
                return cli_error(VP_EXIT_USAGE, "--transport is threads or mpi, got '%s'", v);
        } else if (!strcmp(a, "--cost-file")) {
            const char *v = cli_flag_value(argc, argv, &i);
            if (!v)
                return VP_EXIT_USAGE;
            int code = cli_load_profile(v, &t.profile);
            if (code)
                return code;
            t.have_profile = true;
        } else if (!strcmp(a, "--emulate")) {
            t.po.emulate = 1;
        } else if (!strcmp(a, "--fail-at") || !strcmp(a, "--stall-at")) {
            ok = fault_flag(argc, argv, &i, &o.faults);
        } else if ((model = cli_model_flag(argc, argv, &i, &o.model)) != 0) {
            ok = model > 0;
        } else if (!strcmp(a, "-m")) {
            ok = int_flag(argc, argv, &i, 1, 1 << 20, &o.m);
        } else if (!strcmp(a, "--steps")) {
            ok = int_flag(argc, argv, &i, 1, big, &o.steps);
        } else if (!strcmp(a, "--warmup")) {
            ok = int_flag(argc, argv, &i, 0, big, &warmup);
        } else if (!strcmp(a, "--eval-every")) {
            ok = int_flag(argc, argv, &i, 0, big, &o.eval_every);
        } else if (!strcmp(a, "--eval-batches")) {
            ok = int_flag(argc, argv, &i, 1, 1 << 20, &o.eval_batches);
        } else if (!strcmp(a, "--lr")) {
            ok = double_flag(argc, argv, &i, 1e-12, 10.0, &o.lr);
        } else if (!strcmp(a, "--min-lr")) {
            ok = double_flag(argc, argv, &i, 0.0, 10.0, &o.min_lr);
        } else if (!strcmp(a, "--clip")) {
            ok = double_flag(argc, argv, &i, 0.0, 1e30, &o.clip);
        } else if (!strcmp(a, "--weight-decay")) {
            ok = double_flag(argc, argv, &i, 0.0, 10.0, &x);
            o.adamw.weight_decay = (float)x;
        } else if (!strcmp(a, "--seed")) {
            const char *v = cli_flag_value(argc, argv, &i);
            long seed = 0;
            ok = v && !cli_parse_int("--seed", v, 0, LONG_MAX, &seed);
            o.seed = (uint64_t)seed;
        } else if (!strcmp(a, "--lr-schedule")) {
            const char *v = cli_flag_value(argc, argv, &i);
            ok = v != NULL;
            if (ok && !strcmp(v, "cosine"))
                o.schedule = VP_LR_COSINE;
            else if (ok && !strcmp(v, "constant"))
                o.schedule = VP_LR_CONSTANT;
            else if (ok)
                return cli_error(VP_EXIT_USAGE, "--lr-schedule is cosine or constant, got '%s'", v);
        } else if (!strcmp(a, "--checkpoint")) {
            ok = (o.checkpoint_dir = cli_flag_value(argc, argv, &i)) != NULL;
        } else if (!strcmp(a, "--checkpoint-every")) {
            ok = int_flag(argc, argv, &i, 1, big, &o.checkpoint_every);
        } else if (!strcmp(a, "--resume")) {
            ok = (o.resume_dir = cli_flag_value(argc, argv, &i)) != NULL;
        } else if (!strcmp(a, "--skip-nonfinite")) {
            o.skip_nonfinite = true;
        } else if (!strcmp(a, "--inject-nan")) {
            ok = int_flag(argc, argv, &i, 1, big, &o.faults.nonfinite_step);
        } else if (!strcmp(a, "--data")) {
            ok = (t.data_path = cli_flag_value(argc, argv, &i)) != NULL;
        } else if (!strcmp(a, "--memory")) {
            ok = (t.memory = cli_flag_value(argc, argv, &i)) != NULL;
        } else if (!strcmp(a, "--json")) {
            t.json = true;
        } else {
            return cli_error(VP_EXIT_USAGE, "unknown option '%s' (try vpipe train --help)", a);
        }
        if (!ok)
            return VP_EXIT_USAGE;
    }
    if (t.schedule && t.schedule_file)
        return cli_error(VP_EXIT_USAGE, "give --schedule or --schedule-file, not both");
    int reference = !t.schedule_file && (t.schedule ? !strcmp(t.schedule, "single") : t.p == 1);
    if (reference && t.p != 1)
        return cli_error(VP_EXIT_USAGE, "the single-rank reference runs on -p 1 (got -p %d)", t.p);
    if (reference && (t.trace || t.svg))
        return cli_error(VP_EXIT_USAGE, "--trace and --svg draw pipelined runs (give --schedule)");
    if (o.checkpoint_every && !o.checkpoint_dir)
        return cli_error(VP_EXIT_USAGE, "--checkpoint-every needs --checkpoint DIR");
    o.warmup = warmup >= 0 ? warmup : o.steps / 10;
    vp_error err = {0};
    if (vp_model_config_check(&o.model, &err))
        return cli_lib_error(&err);
    if (!t.data_path)
        t.data_path = vp_data_default_path();
    if (!t.data_path)
        return cli_error(VP_EXIT_USAGE, "no --data FILE given and the default corpus "
                                        "(/usr/lib/bible.data from bible-kjv-text) is not "
                                        "installed");
    vp_data *data = NULL;
    if (vp_data_load(t.data_path, 0.1, &data, &err))
        return cli_error(err.status == VP_ENOMEM ? VP_EXIT_FAILURE : VP_EXIT_INPUT, "%s",
                         err.message);
    progress_ctx ctx = {t.json ? stderr : stdout};
    t.po.train = o;
    if (t.have_profile && memcmp(&t.profile.model, &o.model, sizeof o.model)) {
        vp_data_free(data);
        return cli_error(VP_EXIT_USAGE,
                         "--cost-file was measured for another model (layers %d, width %d, heads "
                         "%d, seq %d, microbatch %d): profile this one with vpipe profile",
                         t.profile.model.n_layer, t.profile.model.width, t.profile.model.n_head,
                         t.profile.model.seq_len, t.profile.model.microbatch);
    }
    int rc = reference ? run_reference(&o, data, t.data_path, t.json, &ctx)
                       : run_pipelined(&t, data, &ctx);
    vp_data_free(data);
    return rc;
}
