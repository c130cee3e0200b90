/* Sampling text from a checkpoint (vpipe sample): the training forward pass, stage after
 * stage, and one draw per byte. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "runtime/runtime_internal.h"

/* The model of a checkpoint, split into p stages as a p-rank pipeline's route. */
typedef struct sampler {
    vp_model_config cfg; /* the checkpoint's, one window of seq_len bytes at a time */
    int p;
    vp_mem *mem;
    vp_stage **stage;
    uint8_t *tokens, *targets; /* [seq_len] */
    float *probs;              /* [seq_len * vocab] */
} sampler;

static void sampler_free(sampler *s) {
    for (int k = 0; s->stage && k < s->p; k++)
        vp_stage_free(s->stage[k]);
    free(s->stage);
    vp_mem_free(s->mem);
    free(s->tokens);
    free(s->targets);
    free(s->probs);
}

/* The stages of the checkpoint in dir (its model, with one row a window), restored. */
static vp_status sampler_open(sampler *s, const char *dir, int p, vp_sample_result *r,
                              vp_error *err) {
    vp_checkpoint_info info;
    vp_checkpoint_meta meta;
    vp_status rc = vp_checkpoint_inspect(dir, &info, &meta, err);
    if (rc != VP_OK)
        return rc;
    s->cfg = info.run.model;
    s->cfg.microbatch = 1;
    s->p = p;
    r->step = meta.step;
    r->model = info.run.model;
    int *l0 = vp__calloc((size_t)p + 1, sizeof *l0);
    size_t T = (size_t)s->cfg.seq_len, V = (size_t)s->cfg.vocab;
    s->mem = vp_mem_new();
    s->stage = vp__calloc((size_t)p, sizeof *s->stage);
    s->tokens = vp__calloc(T, 1);
    s->targets = vp__calloc(T, 1);
    s->probs = vp__calloc(T * V, sizeof *s->probs);
    if (!l0 || !s->mem || !s->stage || !s->tokens || !s->targets || !s->probs)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        rc = vp_split_layers(s->cfg.n_layer, p, l0, err);
    const vp_stage_options opt = {.n_slots = 1, .seed = info.run.seed};
    for (int k = 0; rc == VP_OK && k < p; k++)
        rc = vp_stage_new(&s->cfg, vp_split_range(l0, k, p), &opt, s->mem, &s->stage[k], err);
    free(l0);
    const vp_checkpoint_part whole = {0, 1, s->stage, p};
    if (rc == VP_OK)
        rc = vp_checkpoint_load(dir, &info.run, &whole, NULL, err);
    return rc;
}

/* The next-byte probabilities after the window of n bytes (n <= seq_len) at text: the
 * forward pass through every stage, row n - 1 of the last stage's softmax. */
static vp_status next_probs(sampler *s, const uint8_t *text, size_t n, const float **row,
                            vp_error *err) {
    memset(s->tokens, 0, (size_t)s->cfg.seq_len); /* after the window: causal, never read */
    memcpy(s->tokens, text, n);
    float *act = NULL; /* the previous stage's output, which the next takes over */
    double loss;
    vp_status rc = VP_OK;
    for (int k = 0; rc == VP_OK && k < s->p; k++) {
        bool last = k == s->p - 1;
        float *next = NULL;
        vp_stage_io io = {.in = act,
                          .tokens = k == 0 ? s->tokens : NULL,
                          .targets = last ? s->targets : NULL,
                          .out = last ? NULL : &next,
                          .loss = last ? &loss : NULL,
                          .probs = last ? s->probs : NULL};
        rc = vp_stage_forward(s->stage[k], 0, &io, err);
        if (rc == VP_EINVAL) /* refused before taking its input */
            vp_stage_buffer_free(act);
        vp_stage_discard(s->stage[k], 0);
        act = next;
    }
    *row = s->probs + (n - 1) * (size_t)s->cfg.vocab;
    return rc;
}

/* A uniform draw in [0, 1) for the k-th byte: splitmix64 of (seed, k). */
static double uniform(uint64_t seed, uint64_t k) {
    uint64_t z = seed + (k + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}

/* The byte drawn from probs [vocab]: the most probable (the first of equals) at temperature
 * 0, else by probs^(1/temperature), renormalised, against u. */
static int draw(const float *probs, int vocab, double temperature, double u) {
    int best = 0;
    for (int i = 1; i < vocab; i++)
        best = probs[i] > probs[best] ? i : best;
    if (temperature <= 0.0)
        return best;
    double total = 0.0;
    for (int i = 0; i < vocab; i++)
        total += pow((double)probs[i], 1.0 / temperature);
    double at = u * total, sum = 0.0;
    for (int i = 0; i < vocab; i++) {
        sum += pow((double)probs[i], 1.0 / temperature);
        if (at < sum)
            return i;
    }
    return best; /* u * total rounded up to the total */
}

static vp_status check_options(const vp_sample_options *o, vp_error *err) {
    if (!o->resume_dir)
        return vp__fail(err, VP_EINVAL, "sample needs a checkpoint (--resume DIR)");
    if (!o->prompt || !o->prompt_len)
        return vp__fail(err, VP_EINVAL, "sample needs a prompt of one byte or more (--prompt)");
    if (o->tokens < 1 || o->tokens > VP_SAMPLE_MAX)
        return vp__fail(err, VP_EINVAL, "--tokens %d is outside [1, %d]", o->tokens, VP_SAMPLE_MAX);
    if (o->p < 1 || !(o->temperature >= 0.0 && o->temperature <= 100.0))
        return vp__fail(err, VP_EINVAL, "-p must be 1 or more and --temperature in [0, 100]");
    return VP_OK;
}

vp_status vp_sample_run(const vp_sample_options *o, vp_sample_result *r, vp_error *err) {
    memset(r, 0, sizeof *r);
    vp_status rc = check_options(o, err);
    if (rc != VP_OK)
        return rc;
    sampler s = {0};
    size_t n = o->prompt_len, total = n + (size_t)o->tokens;
    uint8_t *text = malloc(total + 1);
    rc = text ? sampler_open(&s, o->resume_dir, o->p, r, err)
              : vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        memcpy(text, o->prompt, n);
    uint64_t digest = VP_DIGEST_INIT;
    size_t T = rc == VP_OK ? (size_t)s.cfg.seq_len : 0;
    for (; rc == VP_OK && n < total; n++) {
        size_t w = n < T ? n : T; /* the last seq_len bytes */
        const float *row = NULL;
        rc = next_probs(&s, text + n - w, w, &row, err);
        if (rc == VP_OK) {
            digest = vp_digest(row, (size_t)s.cfg.vocab * sizeof *row, digest);
            text[n] = (uint8_t)draw(row, s.cfg.vocab, o->temperature,
                                    uniform(o->seed, n - o->prompt_len));
        }
    }
    sampler_free(&s);
    if (rc != VP_OK) {
        free(text);
        return rc;
    }
    text[total] = '\0';
    memmove(text, text + o->prompt_len, (size_t)o->tokens + 1);
    r->text = (char *)text;
    r->len = (size_t)o->tokens;
    r->digest = digest;
    return VP_OK;
}
