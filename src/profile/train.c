/* Preparing a training run (profile.h: vp_train_prepare): `vpipe train`'s options checked,
 * cheapest first, then the data, the schedule (a family, a file or the planner's choice),
 * the layer split, and the profile a prediction or an emulation needs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "vpipe/profile.h"

/* In vp_train_request's index orders. */
static const vp_lr_schedule lr_schedule_of[] = {VP_LR_COSINE, VP_LR_CONSTANT};
static const vp_transport_kind transport_of[] = {VP_TRANSPORT_THREADS, VP_TRANSPORT_MPI};
static const char *const transport_names[] = {"threads", "mpi"};
static const char *const split_names[] = {"time", "memory", "even"};

void vp_train_request_init(vp_train_request *q) {
    memset(q, 0, sizeof *q);
    vp_pipeline_options_default(&q->po);
    vp_train_options_default(&q->po.train);
    q->p = 0;                /* not given: 1, or a schedule file's */
    q->po.train.m = 0;       /* not given: 1, or a schedule file's */
    q->po.train.steps = 0;   /* not given: 200, or a resumed checkpoint's run's */
    q->po.train.min_lr = -1; /* not given: a tenth of --lr */
    q->warmup = -1;
    q->weight_decay = q->po.train.adamw.weight_decay;
    q->lr_schedule = q->po.train.schedule == VP_LR_CONSTANT;
    q->transport = q->po.transport == VP_TRANSPORT_MPI;
    q->recompute = q->split = q->offload_policy = -1;
}

void vp_train_ready_release(vp_train_ready *r) {
    vp_data_free(r->data);
    vp_schedule_free(r->schedule);
    free(r->layer_start);
    vp_cost_model_free(r->op_ms);
    memset(r, 0, sizeof *r);
}

/* A line for the caller (report: part of the run's report, else a status). */
static vp_status say(const vp_train_request *q, bool report, vp_error *err, const char *fmt, ...)
    VP_PRINTF(4, 5);
static vp_status say(const vp_train_request *q, bool report, vp_error *err, const char *fmt, ...) {
    if (!q->say)
        return VP_OK;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return q->say(q->user, line, report && !q->json, err);
}

/* -p and -m of a run given by flags (1 when not given). */
static int ranks_of(const vp_train_request *q) {
    return q->p > 0 ? q->p : 1;
}

static int batch_of(const vp_train_request *q) {
    return q->po.train.m > 0 ? q->po.train.m : 1;
}

static bool is_reference(const vp_train_request *q) {
    return !q->schedule_file && (q->schedule ? !strcmp(q->schedule, "single") : q->p <= 1);
}

static vp_recompute recompute_of(const vp_train_request *q) {
    return q->recompute >= 0 ? (vp_recompute)q->recompute : VP_RECOMPUTE_NONE;
}

/* --cost-file: the profile a prediction, the planner or the emulation reads. */
static vp_status read_profile(const vp_train_request *q, vp_train_ready *r, vp_error *err) {
    char *text = NULL;
    size_t len = 0;
    /* vp_read_file says "<path>: <reason>" */
    if (vp_read_file(q->cost_file, VP_PROFILE_MAX, &text, &len, err) != VP_OK) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        return vp__fail(err, err->status, "--cost-file %s", why);
    }
    vp_status rc = vp_profile_read_json(text, len, &r->profile, err);
    free(text);
    if (rc == VP_OK) {
        r->have_profile = true;
        return VP_OK;
    }
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    if (err->line > 0)
        return vp__fail(err, VP_EPARSE, "--cost-file %s:%d:%d: %s", q->cost_file, err->line,
                        err->column, why);
    return vp__fail(err, VP_EPARSE, "--cost-file %s: %s", q->cost_file, why);
}

/* --fail-at / --stall-at "R:S:K" into the run's faults (one of the two). */
static vp_status read_faults(const vp_train_request *q, vp_train_ready *r, vp_error *err) {
    if (q->fail_at && q->stall_at)
        return vp__fail(err, VP_EINVAL, "give --fail-at or --stall-at, not both");
    const char *value = q->fail_at ? q->fail_at : q->stall_at;
    if (!value)
        return VP_OK;
    const char *flag = q->fail_at ? "--fail-at" : "--stall-at";
    int rank, step, op, used = 0;
    if (sscanf(value, "%d:%d:%d%n", &rank, &step, &op, &used) != 3 || value[used] || rank < 0 ||
        step < 0 || op < 0)
        return vp__fail(err, VP_EINVAL, "%s expects RANK:STEP:OP (non-negative), got '%s'", flag,
                        value);
    vp_faults *f = &r->po.train.faults;
    *f = (vp_faults){.nonfinite_step = f->nonfinite_step,
                     .rank = rank,
                     .step = step,
                     .op = op,
                     .stall = q->stall_at != NULL};
    return VP_OK;
}

/* Faults must land inside the run, on a pipelined run. */
static vp_status check_faults(const vp_train_request *q, const vp_train_ready *r, vp_error *err) {
    const vp_train_options *o = &r->po.train;
    const vp_faults *f = &o->faults;
    if (f->nonfinite_step > o->steps)
        return vp__fail(err, VP_EINVAL, "--inject-nan %d is past the last step (%d)",
                        f->nonfinite_step, o->steps);
    if (f->rank < 0)
        return VP_OK;
    const char *flag = f->stall ? "--stall-at" : "--fail-at";
    if (is_reference(q))
        return vp__fail(err, VP_EINVAL, "%s injects into a pipelined run (-p 2 or more)", flag);
    if (!q->schedule_file && f->rank >= ranks_of(q) * o->dp)
        return vp__fail(err, VP_EINVAL, "%s %d:%d:%d: rank %d is not one of the %d ranks", flag,
                        f->rank, f->step, f->op, f->rank, ranks_of(q) * o->dp);
    if (f->step >= o->steps)
        return vp__fail(err, VP_EINVAL, "%s %d:%d:%d: step %d is past the run's %d steps (0-based)",
                        flag, f->rank, f->step, f->op, f->step, o->steps);
    return VP_OK;
}

/* The same once the schedule (of dp replicas) is known: the rank and the op exist. */
static vp_status check_faults_on(const vp_faults *f, const vp_schedule *s, int dp, vp_error *err) {
    if (f->rank < 0)
        return VP_OK;
    const char *flag = f->stall ? "--stall-at" : "--fail-at";
    if (f->rank >= s->p * dp)
        return vp__fail(err, VP_EINVAL, "%s: rank %d is not one of the run's %d ranks", flag,
                        f->rank, s->p * dp);
    int n = s->dev[f->rank % s->p].n;
    if (f->op >= n)
        return vp__fail(err, VP_EINVAL, "%s: op %d is past rank %d's %d ops per step (0-based)",
                        flag, f->op, f->rank, n);
    return VP_OK;
}

/* --offload and --offload-policy into *o, the shares in a new *shares (caller frees).
 * VP_EINVAL naming the flag. */
static vp_status offload_of(const vp_train_request *q, vp_offload *o, double **shares,
                            vp_error *err) {
    *o = (vp_offload){.policy = VP_OFFLOAD_NONE};
    *shares = NULL;
    if (q->offload_policy >= 0 && !q->offload)
        return vp__fail(err, VP_EINVAL, "--offload-policy needs --offload");
    if (!q->offload)
        return VP_OK;
    if (vp_offload_parse(q->offload, o, shares, err) != VP_OK) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        return vp__fail(err, VP_EINVAL, "--offload '%s': column %d: %s", q->offload, err->column,
                        why);
    }
    if (q->offload_policy >= 0 && o->policy != VP_OFFLOAD_NONE)
        o->policy = (vp_offload_policy)q->offload_policy;
    return VP_OK;
}

/* The spec of a pipelined run given by flags (a schedule file brings its own p and m),
 * offloading as o says. */
static vp_spec spec_of(const vp_train_request *q, const vp_offload *o) {
    vp_spec spec = vp_spec_make(0, 0);
    if (!q->schedule_file) {
        spec.p = ranks_of(q);
        spec.m = batch_of(q) / q->po.train.dp;
    }
    spec.v = q->chunks;
    spec.max_ops = q->max_ops;
    spec.recompute = recompute_of(q);
    spec.offload = *o;
    spec.vocab_parallel = q->vocab_parallel;
    return spec;
}

/* The shape of a pipelined run given by flags, checked before any schedule is built: p
 * ranks need at least p stages, which the layers must fill, and the schedule must stay
 * under the op limit. */
static vp_status check_shape(const vp_train_request *q, vp_error *err) {
    int *l0 = vp__calloc((size_t)ranks_of(q) + 1, sizeof *l0);
    if (!l0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_offload o = {.policy = q->offload ? VP_OFFLOAD_UNIFORM : VP_OFFLOAD_NONE};
    vp_spec spec = spec_of(q, &o); /* the op count of any offload */
    vp_status rc = vp_split_layers(q->po.train.model.n_layer, ranks_of(q), l0, err);
    if (rc == VP_OK)
        rc = vp_spec_check_size(&spec, err);
    free(l0);
    return rc;
}

/* --dp and --zero: the replicas split the global batch evenly (a schedule file brings
 * its own m per replica), ZeRO-1 needs replicas of a pipelined run. */
static vp_status check_replicas(const vp_train_request *q, bool reference, vp_error *err) {
    int dp = q->po.train.dp, m = batch_of(q);
    if (q->po.zero >= 2)
        return vp__fail(err, VP_EINVAL,
                        "--zero %d: vpipe's runtime shards the optimiser only (ZeRO-1); ZeRO-2 "
                        "and 3 (gradients, weights) are priced, not run: give --zero 1 or 0",
                        q->po.zero);
    if (q->po.zero && dp < 2)
        return vp__fail(err, VP_EINVAL,
                        "--zero 1 shards the optimiser across data-parallel "
                        "replicas: give --dp 2 or more");
    if (q->po.zero && reference)
        return vp__fail(err, VP_EINVAL,
                        "--zero 1 shards a pipelined run's replicas: give a "
                        "schedule (the reference with --dp D computes the same)");
    if (q->emulate && dp > 1)
        return vp__fail(err, VP_EINVAL,
                        "--emulate runs one replica (no gradients to reduce): "
                        "drop --dp");
    if (!q->schedule_file && m % dp != 0)
        return vp__fail(err, VP_EINVAL,
                        "--dp %d does not divide -m %d: each replica takes m/D microbatches of "
                        "the global batch",
                        dp, m);
    return VP_OK;
}

/* --vocab-parallel and --vocab-shards: the pipeline's shards are its ranks, the
 * reference's as many as asked; the planner does not place vocabulary passes yet. */
static vp_status check_vocab_flags(const vp_train_request *q, bool reference, vp_error *err) {
    int shards = q->po.train.vocab_shards;
    if (q->vocab_parallel && q->schedule && !strcmp(q->schedule, "auto"))
        return vp__fail(err, VP_EINVAL,
                        "--vocab-parallel with --schedule auto: the planner does not weigh "
                        "vocabulary parallelism yet (name a schedule)");
    if (shards && !reference && !q->vocab_parallel)
        return vp__fail(err, VP_EINVAL,
                        "--vocab-shards %d splits the single-rank reference's vocabulary; a "
                        "pipeline splits it over its ranks with --vocab-parallel",
                        shards);
    if (shards && q->vocab_parallel && !q->schedule_file && shards != q->p)
        return vp__fail(err, VP_EINVAL,
                        "--vocab-parallel puts one vocabulary shard on each of the -p %d ranks, "
                        "not --vocab-shards %d",
                        q->p, shards);
    return VP_OK;
}

/* The checks of the options alone that concern the schedule and the layer split. */
static vp_status check_pipeline_flags(const vp_train_request *q, bool reference, vp_error *err) {
    if (q->schedule && q->schedule_file)
        return vp__fail(err, VP_EINVAL, "give --schedule or --schedule-file, not both");
    if (reference && q->p > 1)
        return vp__fail(err, VP_EINVAL, "the single-rank reference runs on -p 1 (got -p %d)", q->p);
    if (reference && (q->trace || q->svg))
        return vp__fail(err, VP_EINVAL, "--trace and --svg draw pipelined runs (give --schedule)");
    if (q->emulate && (reference || (!q->schedule_file && q->p <= 1)))
        return vp__fail(err, VP_EINVAL,
                        "--emulate emulates the ranks of a pipelined run: give "
                        "-p 2 or more and a schedule");
    if (q->emulate && (q->po.train.checkpoint_dir || q->po.train.resume_dir))
        return vp__fail(err, VP_EINVAL,
                        "--emulate runs no model: there is no model state to "
                        "checkpoint or resume");
    if (q->po.train.checkpoint_every && !q->po.train.checkpoint_dir)
        return vp__fail(err, VP_EINVAL, "--checkpoint-every needs --checkpoint DIR");
    if (q->po.train.overwrite_checkpoint && !q->po.train.checkpoint_dir)
        return vp__fail(err, VP_EINVAL, "--overwrite needs --checkpoint DIR");
    if (recompute_of(q) && reference)
        return vp__fail(err, VP_EINVAL,
                        "--recompute recomputes in a schedule: give --schedule "
                        "(the single-rank reference keeps every activation)");
    if ((q->split >= 0 || q->layers_per_stage) && reference)
        return vp__fail(err, VP_EINVAL,
                        "--split and --layers-per-stage split a pipelined run "
                        "(give --schedule)");
    if (q->split >= 0 && q->layers_per_stage)
        return vp__fail(err, VP_EINVAL, "give --split or --layers-per-stage, not both");
    if (recompute_of(q) && q->schedule && !strcmp(q->schedule, "auto"))
        return vp__fail(err, VP_EINVAL,
                        "--recompute with --schedule auto: the planner already "
                        "weighs 1F1B with full recomputation (1f1b-r)");
    if (q->offload && (reference || (q->schedule && !strcmp(q->schedule, "auto"))))
        return vp__fail(err, VP_EINVAL,
                        "--offload offloads in a schedule: give --schedule FAMILY or "
                        "--schedule-file (the single-rank reference keeps every activation; "
                        "--schedule auto plans without offload)");
    vp_offload o;
    double *shares = NULL;
    vp_status rc = offload_of(q, &o, &shares, err);
    free(shares);
    return rc == VP_OK ? check_vocab_flags(q, reference, err) : rc;
}

/* --steps, --lr-decay-steps and --warmup. A fresh run's defaults: 200 steps, a schedule of
 * as many, and a tenth of it warming up. A resumed run continues the checkpoint's
 * trajectory: its schedule, and the steps its run was given (--steps extends or shortens
 * the run, the schedule kept; past it the rate stays at --min-lr). */
static vp_status settle_steps(const vp_train_request *q, vp_train_ready *r, vp_error *err) {
    vp_train_options *o = &r->po.train;
    int steps = q->po.train.steps, decay = q->po.train.decay_steps;
    vp_checkpoint_info there = {0};
    if (o->resume_dir && (!steps || !decay)) {
        vp_status rc = vp_train_resume_point(o->resume_dir, &there, err);
        if (rc != VP_OK)
            return rc;
        steps = steps ? steps : there.run.steps;
        decay = decay ? decay : there.run.decay_steps;
    }
    o->steps = steps ? steps : 200;
    o->decay_steps = decay ? decay : o->steps;
    o->warmup = q->warmup >= 0 ? q->warmup : o->decay_steps / 10;
    if (!there.run.steps || o->steps == there.run.steps || o->steps < there.step)
        return VP_OK; /* nothing changed, or a run the runtime refuses */
    return say(q, false, err,
               "resuming the checkpoint of step %d of a %d-step run in %s to %d steps; the "
               "learning rate keeps its %d-step schedule%s\n",
               there.step, there.run.steps, o->resume_dir, o->steps, o->decay_steps,
               o->steps > o->decay_steps && lr_schedule_of[q->lr_schedule] == VP_LR_COSINE
                   ? " and stays at --min-lr past it"
                   : "");
}

/* Checks that need nothing but the options, cheapest first, and settles the run's. */
static vp_status check_flags(const vp_train_request *q, vp_train_ready *r, vp_error *err) {
    bool reference = is_reference(q);
    vp_status rc = check_pipeline_flags(q, reference, err);
    if (rc == VP_OK)
        rc = check_replicas(q, reference, err);
    if (rc == VP_OK)
        rc = settle_steps(q, r, err);
    if (rc == VP_OK)
        rc = check_faults(q, r, err);
    if (rc != VP_OK)
        return rc;
    vp_train_options *o = &r->po.train;
    o->m = batch_of(q); /* a pipelined run's is its schedule's (prepare_pipelined) */
    o->schedule = lr_schedule_of[q->lr_schedule];
    if (o->min_lr < 0)
        o->min_lr = o->lr / 10;
    o->adamw.weight_decay = (float)q->weight_decay;
    r->po.transport = transport_of[q->transport];
    r->transport = transport_names[q->transport];
    r->reference = reference;
    if (reference && q->vocab_parallel && !o->vocab_shards)
        o->vocab_shards = 1; /* one rank, one shard */
    if ((rc = vp_model_config_check(&o->model, err)) != VP_OK)
        return rc;
    return reference || q->schedule_file ? VP_OK : check_shape(q, err);
}

/* Every file the run will write can be written: checked before step 1. */
static vp_status check_outputs(const vp_train_request *q, vp_error *err) {
    if ((q->log && !strcmp(q->log, "-")) || (q->plot && !strcmp(q->plot, "-")))
        return vp__fail(err, VP_EINVAL,
                        "--log and --plot need a file: standard output carries the progress");
    const char *files[] = {q->trace, q->svg, q->log, q->plot};
    static const char *const names[] = {"--trace", "--svg", "--log", "--plot"};
    const char *inputs[] = {q->data, q->schedule_file, q->cost_file};
    static const char *const input_names[] = {"--data", "--schedule-file", "--cost-file"};
    for (int k = 0; k < 4; k++) {
        for (int j = k + 1; j < 4; j++)
            if (vp_file_same(files[k], files[j]))
                return vp__fail(err, VP_EINVAL,
                                "%s and %s name the same file %s: each writes its own", names[k],
                                names[j], files[k]);
        for (int i = 0; i < 3; i++)
            if (vp_file_same(files[k], inputs[i]))
                return vp__fail(err, VP_EINVAL, "%s %s would write over %s: name another file",
                                names[k], files[k], input_names[i]);
    }
    vp_status rc = VP_OK;
    for (int k = 0; k < 4; k++)
        if (rc == VP_OK && q->probe && files[k])
            rc = q->probe(q->user, files[k], false, err);
    if (rc == VP_OK && q->probe && q->po.train.checkpoint_dir)
        rc = q->probe(q->user, q->po.train.checkpoint_dir, true, err);
    return rc;
}

/* A --cost-file must be of the model trained. */
static vp_status check_profile_model(const vp_train_ready *r, vp_error *err) {
    const vp_model_config *pm = &r->profile.model;
    if (!r->have_profile || !memcmp(pm, &r->po.train.model, sizeof *pm))
        return VP_OK;
    return vp__fail(err, VP_EINVAL,
                    "--cost-file was measured for another model (layers %d, width %d, heads %d, "
                    "seq %d, microbatch %d): profile this one with vpipe profile",
                    pm->n_layer, pm->width, pm->n_head, pm->seq_len, pm->microbatch);
}

/* The data; the default corpus when no --data. */
static vp_status load_data(const vp_train_request *q, vp_train_ready *r, vp_error *err) {
    r->data_path = q->data ? q->data : vp_data_default_path();
    if (!r->data_path)
        return vp__fail(err, VP_EINVAL,
                        "no --data FILE given and the default corpus "
                        "(/usr/lib/bible.data from bible-kjv-text) is not "
                        "installed");
    vp_status rc = vp_data_load(r->data_path, 0.1, &r->data, err);
    if (rc != VP_OK && rc != VP_ENOMEM && vp_status_exit_code(rc) != 3)
        err->status = rc = VP_EIO;
    return rc;
}

/* Makes r->profile available: the --cost-file one, or measured now. */
static vp_status ensure_profile(const vp_train_request *q, vp_train_ready *r, const char *why,
                                vp_error *err) {
    if (r->have_profile)
        return VP_OK;
    vp_status rc = say(q, false, err, "profiling the model's passes for %s...\n", why);
    if (rc == VP_OK)
        rc = vp_profile_measure(&r->po.train.model, 3, &r->profile, err);
    r->have_profile = rc == VP_OK;
    return rc;
}

/* --schedule auto: the planner's fastest schedule whose exact predicted activation bytes
 * fit --memory, from profiled costs. */
static vp_status auto_schedule(const vp_train_request *q, vp_train_ready *r, vp_error *err) {
    if (!q->memory)
        return vp__fail(err, VP_EINVAL, "--schedule auto needs --memory X (0.5, 4u or bytes)");
    vp_budget budget;
    if (vp_budget_parse(q->memory, &budget, err) != VP_OK) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        return vp__fail(err, VP_EINVAL, "--memory '%s': %s", q->memory, why);
    }
    vp_autoplan_result ap = {0};
    vp_status rc = ensure_profile(q, r, "the planner", err);
    if (rc == VP_OK)
        rc = vp_autoplan(&r->profile, ranks_of(q), r->po.train.m / r->po.train.dp, &budget, &ap,
                         err);
    if (rc != VP_OK)
        return rc;
    vp_plan *plan = ap.plan;
    const vp_plan_candidate *c = &plan->candidates[plan->chosen];
    rc = say(q, true, err,
             "auto: chose %s%s%s: predicted peak %.0f activation bytes of the %.0f-byte budget; "
             "%s\n",
             c->family, c->params[0] ? " " : "", c->params, ap.peak_bytes, ap.budget_bytes,
             plan->reason);
    r->schedule = plan->schedule;
    plan->schedule = NULL;
    vp_plan_free(plan);
    return rc;
}

/* A schedule file brings its ranks and microbatches: -p and -m, when given, must be its
 * (-m, the global batch, over the --dp replicas), as simulate refuses a file of another
 * shape. */
static vp_status check_file_shape(const vp_train_request *q, const vp_schedule *s, vp_error *err) {
    int dp = q->po.train.dp;
    if ((q->p > 0 && q->p != s->p) || (q->po.train.m > 0 && q->po.train.m != s->m * dp))
        return vp__fail(err, VP_EVALIDATION,
                        "%s has p=%d, m=%d (a global batch of %d over --dp %d), not the -p/-m "
                        "given: leave them out to train the file's",
                        q->schedule_file, s->p, s->m, s->m * dp, dp);
    return VP_OK;
}

/* The schedule of a pipelined run: auto, a file, or a family (1f1b by default). */
static vp_status pipelined_schedule(const vp_train_request *q, vp_train_ready *r, vp_error *err) {
    if (q->schedule && !strcmp(q->schedule, "auto"))
        return auto_schedule(q, r, err);
    vp_offload o;
    double *shares = NULL;
    vp_status rc = offload_of(q, &o, &shares, err);
    vp_spec spec = spec_of(q, &o);
    if (rc == VP_OK && spec.p > 0 && spec.m > 0)
        rc = vp_spec_check_size(&spec, err);
    const char *what = q->schedule_file ? q->schedule_file : q->schedule ? q->schedule : "1f1b";
    if (rc == VP_OK)
        rc = vp_request_obtain(what, &spec, &r->schedule, err);
    free(shares);
    return rc == VP_OK && q->schedule_file ? check_file_shape(q, r->schedule, err) : rc;
}

/* The layer split of the schedule: --layers-per-stage, or --split's (default even). */
static vp_status choose_split(const vp_train_request *q, vp_train_ready *r, vp_error *err) {
    const vp_model_config *cfg = &r->po.train.model;
    int R = r->schedule->route_len, *counts = NULL, n = 0;
    vp_split_goal goal = q->split >= 0 ? (vp_split_goal)q->split : VP_SPLIT_EVEN;
    vp_status rc = VP_OK;
    if (q->layers_per_stage && (rc = vp_request_counts(q->layers_per_stage, &counts, &n, err))) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        rc = vp__fail(err, rc, "--layers-per-stage %s", why);
    } else if (n && n != R) {
        rc = vp__fail(err, VP_EINVAL,
                      "--layers-per-stage gives %d stages, the schedule's routes "
                      "have %d",
                      n, R);
    } else if (!(r->layer_start = vp__calloc((size_t)R + 1, sizeof *r->layer_start))) {
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    } else if (n) {
        for (int k = 0; k < R; k++)
            r->layer_start[k + 1] = r->layer_start[k] + counts[k];
        rc = vp_split_check(cfg->n_layer, R, r->layer_start, err);
    } else {
        rc = vp_runtime_split(r->schedule, cfg, goal, r->layer_start, err);
    }
    free(counts);
    if (rc != VP_OK)
        return rc;
    r->po.layer_start = r->layer_start;
    vp__buf line = {0};
    vp__buf_printf(&line, "split (%s): layers per stage",
                   n ? "--layers-per-stage" : split_names[goal]);
    for (int k = 0; k < R; k++)
        vp__buf_printf(&line, " %d", r->layer_start[k + 1] - r->layer_start[k]);
    char *text = vp__buf_take(&line);
    rc = text ? say(q, true, err, "%s\n", text) : vp__fail(err, VP_ENOMEM, "out of memory");
    free(text);
    return rc;
}

/* The profile's per-stage pass times of the schedule (ms), for the predicted step time
 * and the emulation. */
static vp_status profile_op_ms(vp_train_ready *r, vp_error *err) {
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_status rc = vp_cost_model_new(r->schedule, &costs, &mem, &r->op_ms, err);
    if (rc == VP_OK)
        rc = vp_profile_cost_model(&r->profile, r->schedule, r->layer_start, r->op_ms, err);
    return rc;
}

/* The schedule and what the run needs of the profile. */
static vp_status prepare_pipelined(const vp_train_request *q, vp_train_ready *r, vp_error *err) {
    vp_status rc = pipelined_schedule(q, r, err);
    if (rc == VP_OK)
        rc = check_faults_on(&r->po.train.faults, r->schedule, r->po.train.dp, err);
    if (rc == VP_OK)
        rc = choose_split(q, r, err);
    if (rc == VP_OK && r->schedule->p == 1 && q->emulate)
        rc = vp__fail(err, VP_EINVAL, "--emulate needs a schedule of 2 or more ranks");
    if (rc == VP_OK && q->emulate)
        rc = ensure_profile(q, r, "the emulation", err);
    if (rc == VP_OK && r->have_profile)
        rc = profile_op_ms(r, err);
    if (rc != VP_OK)
        return rc;
    r->po.train.m = r->schedule->m * r->po.train.dp; /* the global batch */
    r->po.train.vocab_shards = r->schedule->vocab_parallel ? r->schedule->p : 0;
    r->po.schedule = r->schedule;
    r->po.op_ms = r->op_ms;
    r->po.emulate = q->emulate;
    return VP_OK;
}

#define MIB (1024.0 * 1024.0)

/* The banner's first line: the model's parameters, the tokens of a step and the data. */
static vp_status say_model(const vp_train_request *q, const vp_train_ready *r, vp_error *err) {
    const vp_train_options *o = &r->po.train;
    const vp_model_config *cfg = &o->model;
    vp_stage_sizes whole;
    vp_status rc = vp_stage_sizes_of(
        cfg, (vp_stage_range){.l1 = cfg->n_layer, .first = true, .last = true}, &whole, err);
    if (rc != VP_OK)
        return rc;
    size_t train = vp_data_train_bytes(r->data), val = vp_data_val_bytes(r->data);
    return say(q, true, err,
               "model: %d layers, width %d, %d heads, seq %d: %zu parameters | %lld tokens per "
               "step (%d microbatches of %d x %d) | data %s: %.2f MiB (training %.2f, "
               "validation %.2f)\n",
               cfg->n_layer, cfg->width, cfg->n_head, cfg->seq_len,
               whole.param_bytes / sizeof(float), (long long)o->m * cfg->microbatch * cfg->seq_len,
               o->m, cfg->microbatch, cfg->seq_len, r->data_path, (double)(train + val) / MIB,
               (double)train / MIB, (double)val / MIB);
}

/* The banner's second line, for a pipelined run: the simulated bubble (with the profiled
 * pass times when there are some, else F = B = W = 1) and each rank's predicted peak device
 * bytes, every category but host (vp_runtime_predict_memory). */
static vp_status say_forecast(const vp_train_request *q, const vp_train_ready *r, vp_error *err) {
    const vp_schedule *s = r->schedule;
    int P = s->p * r->po.train.dp;
    double *mem = vp__calloc((size_t)P * VP_MEM_CATEGORIES, sizeof *mem);
    vp_cost_model *unit = NULL;
    vp_sim *sim = NULL;
    vp_costs costs = vp_costs_default();
    vp_memcfg memcfg = vp_memcfg_default();
    vp_status rc = mem ? vp_runtime_predict_memory(&r->po, mem, err)
                       : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK && !r->op_ms)
        rc = vp_cost_model_new(s, &costs, &memcfg, &unit, err);
    if (rc == VP_OK)
        rc = vp_simulate(s, r->op_ms ? r->op_ms : unit, &sim, err);
    vp__buf line = {0};
    if (rc == VP_OK) {
        vp__buf_printf(&line,
                       "predicted: bubble %.1f%% (%s) | peak MiB per rank:", 100.0 * sim->bubble,
                       r->op_ms ? "the profiled pass times" : "passes of equal time");
        for (int d = 0; d < P; d++) {
            double sum = 0.0;
            for (int c = 0; c < VP_MEM_CATEGORIES; c++)
                sum += c == VP_MEM_HOST ? 0.0 : mem[(size_t)d * VP_MEM_CATEGORIES + c];
            vp__buf_printf(&line, " %.2f", sum / MIB);
        }
    }
    char *text = rc == VP_OK ? vp__buf_take(&line) : NULL;
    if (rc == VP_OK)
        rc = text ? say(q, true, err, "%s\n", text) : vp__fail(err, VP_ENOMEM, "out of memory");
    free(text);
    vp__buf_free(&line);
    vp_sim_free(sim);
    vp_cost_model_free(unit);
    free(mem);
    return rc;
}

vp_status vp_train_prepare(const vp_train_request *q, vp_train_ready *out, vp_error *err) {
    memset(out, 0, sizeof *out);
    out->po = q->po;
    vp_status rc = read_faults(q, out, err);
    if (rc == VP_OK && q->cost_file)
        rc = read_profile(q, out, err);
    if (rc == VP_OK)
        rc = check_flags(q, out, err);
    if (rc == VP_OK)
        rc = check_outputs(q, err);
    if (rc == VP_OK)
        rc = check_profile_model(out, err);
    if (rc == VP_OK)
        rc = load_data(q, out, err);
    if (rc == VP_OK && !out->reference)
        rc = prepare_pipelined(q, out, err);
    if (rc == VP_OK)
        rc = say_model(q, out, err);
    if (rc == VP_OK && !out->reference)
        rc = say_forecast(q, out, err);
    if (rc != VP_OK)
        vp_train_ready_release(out);
    return rc;
}
