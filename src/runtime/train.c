/* The single-rank training loop: the reference every pipelined run reproduces. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/runtime_internal.h"

void vp_train_options_default(vp_train_options *o) {
    *o = (vp_train_options){
        .model =
            {.n_layer = 4, .width = 128, .n_head = 4, .seq_len = 64, .microbatch = 8, .vocab = 256},
        .m = 1,
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

vp_checkpoint_run vp__checkpoint_run(const vp_train_options *o) {
    return (vp_checkpoint_run){.model = o->model,
                               .m = o->m,
                               .steps = o->steps,
                               .warmup = o->warmup,
                               .schedule = o->schedule,
                               .lr = o->lr,
                               .min_lr = o->min_lr,
                               .clip = o->clip,
                               .adamw = o->adamw,
                               .seed = o->seed};
}

static vp_status check_options(const vp_train_options *o, const vp_data *data, vp_error *err) {
    vp_status st = vp_model_config_check(&o->model, err);
    if (st)
        return st;
    if (o->model.vocab != 256)
        return vp__fail(err, VP_EINVAL, "byte-level training needs vocab 256");
    if (o->m < 1 || o->steps < 1 || o->eval_batches < 1 || o->eval_every < 0 || o->warmup < 0)
        return vp__fail(err, VP_EINVAL,
                        "microbatches, steps and evaluation batches must be "
                        "positive");
    if (o->checkpoint_every < 0 || o->faults.nonfinite_step < 0 ||
        (o->checkpoint_every > 0 && !o->checkpoint_dir))
        return vp__fail(err, VP_EINVAL,
                        "a checkpoint interval needs a checkpoint directory and must not be "
                        "negative");
    if (!(o->lr > 0.0) || !(o->min_lr >= 0.0) || !(o->clip >= 0.0) ||
        !(o->adamw.weight_decay >= 0.0f))
        return vp__fail(err, VP_EINVAL,
                        "learning rate must be positive, clip and weight "
                        "decay not negative");
    size_t need = (size_t)o->model.seq_len + 1;
    if (vp_data_train_bytes(data) < need || vp_data_val_bytes(data) < need)
        return vp__fail(err, VP_EIO,
                        "sequence length %d is longer than the data (%zu training and %zu "
                        "validation bytes)",
                        o->model.seq_len, vp_data_train_bytes(data), vp_data_val_bytes(data));
    return VP_OK;
}

/* Mean validation loss over eval_batches fixed windows (forward only, slot 0). */
static vp_status evaluate(vp_stage *s, const vp_train_options *o, const vp_data *data,
                          uint8_t *tokens, uint8_t *targets, double *out, vp_error *err) {
    double sum = 0.0;
    for (int e = 0; e < o->eval_batches; e++) {
        double loss;
        vp_status st = vp_data_batch(data, true, 0, (uint64_t)e, o->model.microbatch,
                                     o->model.seq_len, tokens, targets, err);
        if (!st)
            st = vp_stage_forward(s, 0, NULL, tokens, targets, NULL, &loss, err);
        if (st)
            return st;
        vp_stage_discard(s, 0);
        sum += loss;
    }
    *out = sum / o->eval_batches;
    return VP_OK;
}

/* One optimiser step on batches [batch, batch + m): for each microbatch F, B, W; then
 * clip and AdamW. A non-finite loss or gradient norm fails the step, or with
 * skip_nonfinite zeroes the gradients and skips the optimiser step. */
static vp_status train_step(vp_stage *s, const vp_train_options *o, const vp_data *data, int step,
                            uint64_t batch, uint8_t *tokens, uint8_t *targets, vp_train_progress *p,
                            vp_error *err) {
    vp_stage_zero_grad(s);
    double loss_sum = 0.0;
    for (int j = 0; j < o->m; j++) {
        double loss;
        vp_status st = vp_data_batch(data, false, o->seed, batch + (uint64_t)j, o->model.microbatch,
                                     o->model.seq_len, tokens, targets, err);
        if (!st)
            st = vp_stage_forward(s, 0, NULL, tokens, targets, NULL, &loss, err);
        if (!st)
            st = vp_stage_backward_input(s, 0, NULL, 1.0f / (float)o->m, NULL, err);
        if (!st)
            st = vp_stage_backward_weight(s, 0, err);
        if (st)
            return st;
        loss_sum += loss;
    }
    if (step + 1 == o->faults.nonfinite_step) {
        size_t n;
        vp_stage_grads(s, &n)[0] = NAN; /* the injected fault */
    }
    p->loss = loss_sum / o->m;
    p->grad_norm = sqrt(vp_stage_grad_sumsq(s));
    p->lr = vp_lr_at(o->schedule, step, o->steps, o->warmup, o->lr, o->min_lr);
    if (!isfinite(p->loss) || !isfinite(p->grad_norm)) {
        if (!o->skip_nonfinite)
            return vp__fail(err, VP_ERUNTIME, "step %d: loss %g, gradient norm %g is not finite",
                            step + 1, p->loss, p->grad_norm);
        vp_stage_zero_grad(s);
        p->skipped = true;
        return VP_OK;
    }
    float scale = o->clip > 0.0 && p->grad_norm > o->clip ? (float)(o->clip / p->grad_norm) : 1.0f;
    vp_stage_adamw(s, &o->adamw, step + 1, (float)p->lr, scale);
    return VP_OK;
}

vp_status vp_train_run(const vp_train_options *o, const vp_data *data, vp_train_callback callback,
                       void *user, vp_train_result *result, vp_error *err) {
    vp_status st = check_options(o, data, err);
    if (st)
        return st;
    vp_blas_set_threads(1);
    size_t N = (size_t)o->model.microbatch * o->model.seq_len;
    vp_mem *mem = vp_mem_new();
    uint8_t *tokens = malloc(N), *targets = malloc(N);
    vp_stage *s = NULL;
    if (!mem || !tokens || !targets)
        st = vp__fail(err, VP_ENOMEM, "out of memory");
    if (!st)
        st = vp_stage_new(&o->model, (vp_stage_range){0, o->model.n_layer, true, true},
                          &(vp_stage_options){.n_slots = 1, .seed = o->seed}, mem, &s, err);
    vp_checkpoint_meta from = {0};
    vp_checkpoint_run run = vp__checkpoint_run(o);
    if (!st && o->resume_dir)
        st = vp_checkpoint_load(o->resume_dir, 0, 1, &run, &s, 1, &from, err);
    if (!st && from.step >= o->steps)
        st = vp__fail(err, VP_EINVAL,
                      "the checkpoint in %s is at step %d: none of the %d steps is left to run",
                      o->resume_dir, from.step, o->steps);
    vp_train_result r = {.steps = from.step, .resumed_step = from.step, .val_loss = NAN};
    uint64_t batch = from.data_pos;
    double total_ms = 0.0;
    for (int step = from.step; !st && step < o->steps; step++) {
        vp_train_progress p = {.step = step + 1, .steps = o->steps, .val_loss = NAN};
        double t0 = vp__now_ms();
        st = train_step(s, o, data, step, batch, tokens, targets, &p, err);
        if (st)
            break;
        batch += (uint64_t)o->m;
        p.step_ms = vp__now_ms() - t0;
        p.tokens_per_s = (double)N * o->m / (p.step_ms / 1e3);
        total_ms += p.step_ms;
        r.steps = step + 1;
        r.skipped_steps += p.skipped;
        if (!p.skipped)
            r.train_loss = p.loss;
        bool stop = false;
        bool eval = step + 1 == o->steps || (o->eval_every && (step + 1) % o->eval_every == 0);
        if (eval)
            st = evaluate(s, o, data, tokens, targets, &p.val_loss, err);
        p.checkpointed = !st && o->checkpoint_dir &&
                         (step + 1 == o->steps ||
                          (o->checkpoint_every && (step + 1) % o->checkpoint_every == 0));
        if (p.checkpointed)
            st = vp_checkpoint_save(o->checkpoint_dir, &run, step + 1, batch, &s, 1, err);
        if (!st && callback)
            stop = !callback(&p, user);
        if (!st && stop && !eval)
            st = evaluate(s, o, data, tokens, targets, &p.val_loss, err);
        r.val_loss = p.val_loss;
        if (stop)
            break;
    }
    if (!st) {
        r.step_ms = total_ms / (r.steps - r.resumed_step);
        r.tokens_per_s = (double)N * o->m / (r.step_ms / 1e3);
        r.peak_act_bytes = vp_mem_peak(mem);
        r.param_digest = vp_stage_digest(s, VP_DIGEST_INIT);
        *result = r;
    }
    vp_stage_free(s);
    vp_mem_free(mem);
    free(tokens);
    free(targets);
    return st;
}
