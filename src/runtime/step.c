/* The step policy the reference loop (train.c) and the pipeline (exec.c) share: which
 * options are valid, what a finished step's sums decide (fail, skip, or clip and step),
 * when to evaluate and to checkpoint, and how a step adds to the result. The numerics
 * stay in each loop: the single-rank loop is the reference the pipeline reproduces. */
#include <math.h>
#include <stdio.h>

#include "runtime/runtime_internal.h"

vp_checkpoint_run vp__checkpoint_run(const vp_train_options *o, const vp_data *data) {
    return (vp_checkpoint_run){.model = o->model,
                               .m = o->m,
                               .decay_steps = vp__decay_steps(o),
                               .steps = o->steps,
                               .warmup = o->warmup,
                               .schedule = o->schedule,
                               .lr = o->lr,
                               .min_lr = o->min_lr,
                               .clip = o->clip,
                               .adamw = o->adamw,
                               .seed = o->seed,
                               .data_bytes =
                                   data ? vp_data_train_bytes(data) + vp_data_val_bytes(data) : 0,
                               .data_digest = data ? vp_data_digest(data) : 0};
}

vp_status vp__checkpoint_acquire(const vp_train_options *o, vp_checkpoint_lock **lock,
                                 vp_error *err) {
    *lock = NULL;
    if (!o->checkpoint_dir)
        return VP_OK;
    return vp_checkpoint_acquire(o->checkpoint_dir, o->resume_dir, o->overwrite_checkpoint, lock,
                                 err);
}

vp_status vp_train_resume_point(const char *dir, vp_checkpoint_info *info, vp_error *err) {
    return vp_checkpoint_inspect(dir, info, NULL, err);
}

double vp__peak_total(const vp_mem *mem) {
    double sum = 0.0;
    for (int c = 0; c < VP_MEM_CATEGORIES; c++)
        if (c != VP_MEM_HOST) /* another pool */
            sum += (double)vp_mem_peak_of(mem, (vp_mem_category)c);
    return sum;
}

int vp__decay_steps(const vp_train_options *o) {
    return o->decay_steps > 0 ? o->decay_steps : o->steps;
}

void vp__checkpoint_prune(const vp_train_options *o, int step, vp_train_progress *p) {
    vp_error why = {0};
    if (vp_checkpoint_prune(o->checkpoint_dir, step, &why) != VP_OK)
        snprintf(p->note, sizeof p->note, "checkpoint of step %d saved, but %s", step, why.message);
}

vp_status vp__train_check(const vp_train_options *o, const vp_data *data, vp_error *err) {
    vp_status st = vp_model_config_check(&o->model, err);
    if (st)
        return st;
    if (o->model.vocab != 256)
        return vp__fail(err, VP_EINVAL, "byte-level training needs vocab 256");
    if (o->vocab_shards < 0 || o->vocab_shards > o->model.vocab)
        return vp__fail(err, VP_EINVAL,
                        "vocabulary parallelism over %d shards needs a vocabulary of at least as "
                        "many entries (one per shard); the model has %d",
                        o->vocab_shards, o->model.vocab);
    if (o->vocab_shards && (o->checkpoint_dir || o->resume_dir))
        return vp__fail(err, VP_EUNSUPPORTED,
                        "checkpoints of a vocabulary-parallel run are not supported yet (the "
                        "shards' rows are two slices of the model's arrays each)");
    if (o->vocab_shards && o->dp > 1)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "vocabulary parallelism with data-parallel replicas (dp %d) is not "
                        "supported yet",
                        o->dp);
    if (o->m < 1 || o->steps < 1 || o->decay_steps < 0 || o->eval_batches < 1 ||
        o->eval_every < 0 || o->warmup < 0)
        return vp__fail(err, VP_EINVAL,
                        "microbatches, steps and evaluation batches must be positive");
    if (o->dp < 1 || o->m % o->dp != 0)
        return vp__fail(err, VP_EINVAL,
                        "%d data-parallel replicas do not divide the %d microbatches of a step "
                        "(the global batch) evenly",
                        o->dp, o->m);
    if (o->checkpoint_every < 0 || (o->checkpoint_every > 0 && !o->checkpoint_dir))
        return vp__fail(err, VP_EINVAL,
                        "a checkpoint interval needs a checkpoint directory and must not be "
                        "negative");
    if (o->faults.nonfinite_step < 0 || o->faults.nonfinite_step > o->steps)
        return vp__fail(err, VP_EINVAL, "cannot poison step %d of a %d-step run",
                        o->faults.nonfinite_step, o->steps);
    if (!(o->lr > 0.0) || !(o->min_lr >= 0.0) || !(o->clip >= 0.0) ||
        !(o->adamw.weight_decay >= 0.0f))
        return vp__fail(err, VP_EINVAL,
                        "learning rate must be positive, clip and weight decay not negative");
    if (o->schedule == VP_LR_COSINE && o->min_lr > o->lr)
        return vp__fail(err, VP_EINVAL,
                        "the cosine's floor (--min-lr %g) is above its peak (--lr %g): it would "
                        "climb instead of decaying",
                        o->min_lr, o->lr);
    size_t need = (size_t)o->model.seq_len + 1;
    if (data && (vp_data_train_bytes(data) < need || vp_data_val_bytes(data) < need))
        return vp__fail(err, VP_EIO,
                        "sequence length %d is longer than the data (%zu training and %zu "
                        "validation bytes)",
                        o->model.seq_len, vp_data_train_bytes(data), vp_data_val_bytes(data));
    return VP_OK;
}

bool vp__step_poisoned(const vp_train_options *o, int step) {
    return step + 1 == o->faults.nonfinite_step;
}

vp_status vp__step_decide(const vp_train_options *o, int step, vp_train_progress *p, float *scale,
                          vp_error *err) {
    p->lr = vp_lr_at(o->schedule, step, vp__decay_steps(o), o->warmup, o->lr, o->min_lr);
    *scale = 1.0f;
    if (!isfinite(p->loss) || !isfinite(p->grad_norm)) {
        if (!o->skip_nonfinite)
            return vp__fail(err, VP_ERUNTIME, "step %d: loss %g, gradient norm %g is not finite",
                            step + 1, p->loss, p->grad_norm);
        p->skipped = true;
        return VP_OK;
    }
    if (o->clip > 0.0 && p->grad_norm > o->clip)
        *scale = (float)(o->clip / p->grad_norm);
    return VP_OK;
}

bool vp__step_evaluates(const vp_train_options *o, int done) {
    return done == o->steps || (o->eval_every && done % o->eval_every == 0);
}

bool vp__step_checkpoints(const vp_train_options *o, int done) {
    return o->checkpoint_dir &&
           (done == o->steps || (o->checkpoint_every && done % o->checkpoint_every == 0));
}

vp_train_result vp__result_start(int resumed_step) {
    return (vp_train_result){
        .steps = resumed_step, .resumed_step = resumed_step, .train_loss = NAN, .val_loss = NAN};
}

void vp__result_add(vp_train_result *r, const vp_train_progress *p, double tokens_per_step) {
    int made = p->step - r->resumed_step; /* steps this run made, this one included */
    r->steps = p->step;
    r->skipped_steps += p->skipped;
    if (!p->skipped)
        r->train_loss = p->loss;
    r->val_loss = p->val_loss;
    r->step_ms += (p->step_ms - r->step_ms) / made; /* the running mean */
    r->tokens_per_s = tokens_per_step / (r->step_ms / 1e3);
}

uint64_t vp__digest_half(const float *params, size_t n, int half, uint64_t hash) {
    return vp_digest(params + (size_t)half * (n / 2), n / 2 * sizeof *params, hash);
}
