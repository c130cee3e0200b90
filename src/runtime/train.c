/* The single-rank training loop: the reference every pipelined run reproduces. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime_internal.h"

void vp_train_options_default(vp_train_options *o) {
    *o = (vp_train_options){
        .model =
            {.n_layer = 4, .width = 128, .n_head = 4, .seq_len = 64, .microbatch = 8, .vocab = 256},
        .m = 1,
        .dp = 1,
        .steps = 200,
        .lr = 1e-3,
        .min_lr = 1e-4,
        .warmup = 20,
        .schedule = VP_LR_COSINE,
        .adamw = {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f},
        .clip = 1.0,
        .seed = 1,
        .eval_every = 0,
        .eval_batches = 16,
        .faults = {.rank = -1},
    };
}

/* The single-rank run: its options, data, one stage holding the model (and with
 * vocabulary parallelism its K vocabulary stages), the batch, and with two or more
 * reduction groups the sum of the groups' gradients. */
typedef struct reference {
    const vp_train_options *o;
    const vp_data *data;
    vp_mem *mem;
    vp_stage *stage;
    vp_stage **shard; /* [K] vocabulary stages, K = o->vocab_shards */
    int K;
    vp_batch batch; /* one microbatch */
    float *group_sum;
    float *stats, *combined;  /* [K][VP_VOCAB_STATS * N], [VP_VOCAB_STATS * N] */
    const float **parts;      /* [K] each shard's statistics in stats */
    double *blocks;           /* [vp_norm_blocks] the gradient norm's block sums */
    vp_checkpoint_lock *lock; /* of o->checkpoint_dir, held for the run */
} reference;

/* EF of every shard, their parts added up in shard order into a new *in [N*C]. */
static vp_status vocab_embed(reference *ref, float **in, vp_error *err) {
    const vp_model_config *m = &ref->o->model;
    size_t io = (size_t)m->microbatch * (size_t)m->seq_len * (size_t)m->width;
    *in = malloc(io * sizeof **in);
    vp_status st = *in ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
    for (int k = 0; st == VP_OK && k < ref->K; k++) {
        float *part = NULL;
        st = vp_vocab_embed(ref->shard[k], 0, ref->batch.tokens, &part, err);
        if (st == VP_OK)
            vp_vocab_add(*in, part, io, k == 0);
        free(part);
    }
    return st;
}

/* S of every shard on h (taken over; each shard its own copy) and the loss of their
 * combined statistics into *loss (ref->combined). */
static vp_status vocab_output(reference *ref, float *h, double *loss, vp_error *err) {
    const vp_model_config *m = &ref->o->model;
    size_t N = (size_t)m->microbatch * (size_t)m->seq_len, io = N * (size_t)m->width;
    vp_status st = VP_OK;
    for (int k = 0; k < ref->K; k++) {
        float *mine = k == ref->K - 1 ? h : malloc(io * sizeof *mine);
        if (st == VP_OK && mine != h)
            memcpy(mine, h, io * sizeof *mine);
        if (st == VP_OK)
            st = mine ? vp_vocab_output(ref->shard[k], 0, mine, ref->batch.targets,
                                        ref->stats + (size_t)k * VP_VOCAB_STATS * N, err)
                      : vp__fail(err, VP_ENOMEM, "out of memory");
        else
            free(mine);
    }
    if (st == VP_OK)
        *loss = vp_vocab_combine(ref->parts, ref->K, (int)N, ref->combined);
    return st;
}

/* The forward of one microbatch (slot 0) into *loss: the stage alone, or with the
 * vocabulary stages EF, F, S and their statistics combined. */
static vp_status forward(reference *ref, double *loss, vp_error *err) {
    if (!ref->K)
        return vp_stage_forward(ref->stage, 0,
                                &(vp_stage_io){.tokens = ref->batch.tokens,
                                               .targets = ref->batch.targets,
                                               .loss = loss},
                                err);
    float *in = NULL, *h = NULL;
    vp_status st = vocab_embed(ref, &in, err);
    if (st == VP_OK)
        st = vp_stage_forward(ref->stage, 0, &(vp_stage_io){.in = in, .out = &h}, err);
    if (st != VP_OK && st != VP_ENOMEM) /* the stage did not take it over */
        free(in);
    return st == VP_OK ? vocab_output(ref, h, loss, err) : st;
}

/* The backward of one microbatch after forward: B and W (and with vocabulary stages T of
 * every shard, its parts added up in shard order into B's output gradient, and EB). */
static vp_status backward(reference *ref, vp_error *err) {
    float scale = 1.0f / (float)ref->o->m, *dout = NULL, *din = NULL;
    size_t io = (size_t)ref->o->model.microbatch * (size_t)ref->o->model.seq_len *
                (size_t)ref->o->model.width;
    vp_status st = VP_OK;
    if (ref->K && !(dout = malloc(io * sizeof *dout)))
        st = vp__fail(err, VP_ENOMEM, "out of memory");
    for (int k = 0; st == VP_OK && k < ref->K; k++) {
        float *part = NULL;
        st = vp_vocab_output_backward(ref->shard[k], 0, ref->combined, scale, &part, err);
        if (st == VP_OK)
            vp_vocab_add(dout, part, io, k == 0);
        free(part);
    }
    if (st == VP_OK)
        st = vp_stage_backward_input(ref->stage, 0, dout, scale, ref->K ? &din : NULL, err);
    else
        free(dout);
    for (int k = 0; st == VP_OK && k < ref->K; k++)
        st = vp_vocab_embed_backward(ref->shard[k], 0, din, err);
    free(din);
    return st == VP_OK ? vp_stage_backward_weight(ref->stage, 0, err) : st;
}

/* Drops what slot 0 of every stage holds. */
static void discard(reference *ref) {
    vp_stage_discard(ref->stage, 0);
    for (int k = 0; k < ref->K; k++)
        vp_stage_discard(ref->shard[k], 0);
}

/* Mean validation loss over eval_batches fixed windows (forward only, slot 0). */
static vp_status evaluate(reference *ref, double *out, vp_error *err) {
    const vp_train_options *o = ref->o;
    double sum = 0.0;
    for (int e = 0; e < o->eval_batches; e++) {
        double loss;
        vp_status st = vp_data_batch(ref->data, true, 0, (uint64_t)e, &ref->batch, err);
        if (!st)
            st = forward(ref, &loss, err);
        discard(ref);
        if (st)
            return st;
        sum += loss;
    }
    *out = sum / o->eval_batches;
    return VP_OK;
}

/* Adds the gradients of reduction group k (the stage's) to the groups' sum: a copy for
 * the first group, then ((g0 + g1) + g2) + ..., the replicas' order; after the last group
 * the sum replaces the stage's gradients. */
static void add_group(reference *ref, int k) {
    size_t n;
    float *g = vp_stage_grads(ref->stage, &n), *sum = ref->group_sum;
    for (size_t i = 0; i < n; i++)
        sum[i] = k == 0 ? g[i] : sum[i] + g[i];
    if (k == ref->o->dp - 1)
        memcpy(g, sum, n * sizeof *g);
    else
        vp_stage_zero_grad(ref->stage);
}

/* One optimiser step (0-based step) on batches [step * m, step * m + m): for each
 * microbatch F, B, W, each reduction group's into its own sum; then the step policy
 * (vp__step_decide) and AdamW. */
/* The squared gradient norm: the stage's blocks added in order, or with vocabulary stages
 * every stage's block sums in the model's block order (the shards' first, vpipe/model.h)
 * added in that order, as a pipeline adds them. */
static double grad_sumsq(reference *ref) {
    if (!ref->K)
        return vp_stage_grad_sumsq(ref->stage);
    for (int k = 0; k <= ref->K; k++) {
        vp_stage *st = k < ref->K ? ref->shard[k] : ref->stage;
        vp_shard whole;
        vp_shard_of(&ref->o->model, vp_stage_state_of(st).range, 0, 1, &whole, NULL);
        vp_stage_grad_sumsq_blocks(st, whole, ref->blocks + whole.b0);
    }
    double sum = 0.0;
    for (int b = 0; b < vp_norm_blocks(&ref->o->model, ref->K); b++)
        sum += ref->blocks[b];
    return sum;
}

/* Zeroes every stage's gradients, or steps AdamW on them. */
static void update(reference *ref, bool zero, int step, float lr, float scale) {
    for (int k = 0; k <= ref->K; k++) {
        vp_stage *st = k < ref->K ? ref->shard[k] : ref->stage;
        if (zero)
            vp_stage_zero_grad(st);
        else
            vp_stage_adamw(st, &ref->o->adamw, step + 1, lr, scale);
    }
}

static vp_status train_step(reference *ref, int step, vp_train_progress *p, vp_error *err) {
    const vp_train_options *o = ref->o;
    vp_stage *s = ref->stage;
    uint64_t batch = (uint64_t)step * (uint64_t)o->m;
    int group = o->m / o->dp; /* microbatches per group */
    update(ref, true, 0, 0, 0);
    double loss_sum = 0.0;
    for (int j = 0; j < o->m; j++) {
        double loss;
        vp_status st =
            vp_data_batch(ref->data, false, o->seed, batch + (uint64_t)j, &ref->batch, err);
        if (!st)
            st = forward(ref, &loss, err);
        if (!st)
            st = backward(ref, err);
        if (st)
            return st;
        loss_sum += loss;
        if (o->dp > 1 && (j + 1) % group == 0)
            add_group(ref, j / group);
    }
    if (vp__step_poisoned(o, step)) {
        size_t n;
        vp_stage_grads(s, &n)[0] = NAN; /* the injected fault */
    }
    p->loss = loss_sum / o->m;
    p->grad_norm = sqrt(grad_sumsq(ref));
    float scale;
    vp_status st = vp__step_decide(o, step, p, &scale, err);
    if (st == VP_OK)
        update(ref, p->skipped, step, (float)p->lr, scale);
    return st;
}

/* A step and what follows it: evaluation and checkpoint when due, the callback (*stop
 * when it asks to stop; the model is then evaluated if it was not). */
static vp_status run_step(reference *ref, int step, vp_train_callback callback, void *user,
                          vp_train_progress *p, bool *stop, vp_error *err) {
    const vp_train_options *o = ref->o;
    double t0 = vp__now_ms();
    vp_status st = train_step(ref, step, p, err);
    p->step_ms = vp__now_ms() - t0;
    p->tokens_per_s = (double)o->model.microbatch * o->model.seq_len * o->m / (p->step_ms / 1e3);
    bool eval = vp__step_evaluates(o, step + 1);
    if (!st && eval)
        st = evaluate(ref, &p->val_loss, err);
    p->checkpointed = !st && vp__step_checkpoints(o, step + 1);
    if (p->checkpointed) {
        vp_checkpoint_run run = vp__checkpoint_run(o, ref->data);
        vp_checkpoint_part whole = {0, 1, &ref->stage, 1};
        vp_checkpoint_meta meta = {
            .step = step + 1,
            .data_pos = (uint64_t)(step + 1) * (uint64_t)o->m,
            .n_parts = 1,
            .shape = {.p = 1, .dp = o->dp, .schedule = "single", .transport = "threads"}};
        st = vp_checkpoint_write_part(o->checkpoint_dir, &run, &whole, meta.step, meta.data_pos,
                                      err);
        if (!st)
            st = vp_checkpoint_commit(o->checkpoint_dir, &meta, err);
        if (!st)
            vp__checkpoint_prune(o, meta.step, p);
    }
    *stop = !st && callback && !callback(p, user);
    if (!st && *stop && !eval)
        st = evaluate(ref, &p->val_loss, err);
    return st;
}

/* The vocabulary stages of K shards and the buffers of their statistics. */
static vp_status vocab_set_up(reference *ref, const vp_stage_options *opt, size_t N,
                              vp_error *err) {
    const vp_model_config *m = &ref->o->model;
    size_t stats = VP_VOCAB_STATS * N;
    ref->shard = vp__calloc((size_t)ref->K, sizeof *ref->shard);
    ref->parts = vp__calloc((size_t)ref->K, sizeof *ref->parts);
    ref->stats = vp__calloc((size_t)ref->K * stats, sizeof *ref->stats);
    ref->combined = vp__calloc(stats, sizeof *ref->combined);
    ref->blocks = vp__calloc((size_t)vp_norm_blocks(m, ref->K), sizeof *ref->blocks);
    if (!ref->shard || !ref->parts || !ref->stats || !ref->combined || !ref->blocks)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status st = VP_OK;
    for (int k = 0; st == VP_OK && k < ref->K; k++) {
        ref->parts[k] = ref->stats + (size_t)k * stats;
        st = vp_stage_new(m, vp_vocab_range(k, ref->K), opt, ref->mem, &ref->shard[k], err);
    }
    return st;
}

/* The parameters' digest: the stage's, or with vocabulary stages the whole model's arrays
 * in order (the shards' token-table rows, the stage, the shards' head rows). */
static uint64_t digest(reference *ref) {
    uint64_t h = VP_DIGEST_INIT;
    for (int half = 0; half < 2; half++) {
        for (int k = 0; k < ref->K; k++) {
            size_t n;
            const float *params = vp_stage_params(ref->shard[k], &n);
            h = vp__digest_half(params, n, half, h);
        }
        if (half == 0)
            h = vp_stage_digest(ref->stage, h);
    }
    return h;
}

/* Checks the options, allocates the run and restores a checkpoint; *from receives the
 * steps already done. */
static vp_status set_up(reference *ref, int *from, vp_error *err) {
    const vp_train_options *o = ref->o;
    vp_status st = VP_OK;
    if (!ref->data)
        st = vp__fail(err, VP_EINVAL, "no data");
    else if (o->faults.rank >= 0)
        st = vp__fail(err, VP_EINVAL, "a single-rank run has no rank %d to fail or stall",
                      o->faults.rank);
    if (!st)
        st = vp__train_check(o, ref->data, err);
    if (!st)
        st = vp__checkpoint_acquire(o, &ref->lock, err);
    if (st)
        return st;
    size_t N = (size_t)o->model.microbatch * (size_t)o->model.seq_len;
    ref->mem = vp_mem_new();
    ref->batch = (vp_batch){o->model.microbatch, o->model.seq_len, malloc(N), malloc(N)};
    if (!ref->mem || !ref->batch.tokens || !ref->batch.targets)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    const vp_stage_options opt = {.n_slots = 1, .seed = o->seed};
    ref->K = o->vocab_shards;
    st = vp_stage_new(&o->model, (vp_stage_range){0, o->model.n_layer, true, true, ref->K, 0}, &opt,
                      ref->mem, &ref->stage, err);
    if (!st && ref->K)
        st = vocab_set_up(ref, &opt, N, err);
    if (!st && o->dp > 1 &&
        !(ref->group_sum = vp__malloc(vp_stage_state_of(ref->stage).n, sizeof *ref->group_sum)))
        st = vp__fail(err, VP_ENOMEM, "out of memory");
    vp_checkpoint_meta meta = {0};
    vp_checkpoint_run run = vp__checkpoint_run(o, ref->data);
    if (!st && o->resume_dir)
        st = vp_checkpoint_load(o->resume_dir, &run, &(vp_checkpoint_part){0, 1, &ref->stage, 1},
                                &meta, err);
    *from = meta.step;
    return st;
}

vp_status vp_train_run(const vp_train_options *o, const vp_data *data, vp_train_callback callback,
                       void *user, vp_train_result *result, vp_error *err) {
    reference ref = {.o = o, .data = data};
    int from = 0;
    vp_status st = set_up(&ref, &from, err);
    if (!st)
        vp_blas_set_threads(1);
    vp_train_result r = vp__result_start(from);
    double tokens_per_step = (double)o->model.microbatch * o->model.seq_len * o->m;
    bool stop = false;
    for (int step = from; !st && !stop && step < o->steps; step++) {
        vp_train_progress p = {.step = step + 1, .steps = o->steps, .val_loss = NAN};
        st = run_step(&ref, step, callback, user, &p, &stop, err);
        if (!st)
            vp__result_add(&r, &p, tokens_per_step);
    }
    if (!st) {
        r.peak_act_bytes = vp_mem_peak(ref.mem);
        r.param_digest = digest(&ref);
        *result = r;
    }
    vp_stage_free(ref.stage);
    for (int k = 0; ref.shard && k < ref.K; k++)
        vp_stage_free(ref.shard[k]);
    free(ref.shard);
    free(ref.parts);
    free(ref.stats);
    free(ref.combined);
    free(ref.blocks);
    vp_mem_free(ref.mem);
    vp_checkpoint_release(ref.lock);
    free(ref.group_sum);
    free(ref.batch.tokens);
    free(ref.batch.targets);
    return st;
}
