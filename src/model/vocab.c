/* Vocabulary stages: EF, EB, S and T of one shard of the token table and the head, and
 * the combination of the shards' softmax statistics (vpipe/model.h). Each computes what
 * the whole model's embedding and output layer compute, restricted to the shard's rows:
 * the shards' parts, added up in shard order, give the whole within float rounding (the
 * embedding exactly: every part but one is zero). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/stage_internal.h"

/* Checks that s is a vocabulary stage and mb one of its slots. */
static vp_status vocab_slot(const vp_stage *s, int mb, const char *pass, vp_error *err) {
    if (!s->vocab_shard)
        return vp__fail(err, VP_EINVAL, "%s: not a vocabulary stage", pass);
    if (mb < 0 || mb >= s->n_slots)
        return vp__fail(err, VP_EINVAL, "%s: microbatch slot %d is not in [0, %d)", pass, mb,
                        s->n_slots);
    return VP_OK;
}

/* The first token of tokens[0..n) outside the vocabulary V, or -1. */
static int outside(const uint8_t *tokens, size_t n, int V) {
    for (size_t i = 0; i < n; i++)
        if (tokens[i] >= V)
            return tokens[i];
    return -1;
}

vp_status vp_vocab_embed(vp_stage *s, int mb, const uint8_t *tokens, float **out, vp_error *err) {
    *out = NULL;
    vp_status st = vocab_slot(s, mb, "EF", err);
    if (st)
        return st;
    vp__slot *sl = &s->slots[mb];
    size_t f = sizeof(float), N = (size_t)s->d.B * s->d.T, C = (size_t)s->d.C;
    if (sl->tokens)
        return vp__fail(err, VP_EINVAL, "EF: slot %d of vocabulary shard %d holds tokens already",
                        mb, s->vocab_shard - 1);
    int bad = outside(tokens, N, s->cfg.vocab);
    if (bad >= 0)
        return vp__fail(err, VP_EINVAL, "EF: token %d is outside the vocabulary (%d)", bad,
                        s->cfg.vocab);
    uint8_t *kept = vp_mem_alloc(s->mem, N);
    float *part = vp_mem_alloc_uncharged(s->mem, f * N * C);
    if (!kept || !part) {
        vp_mem_release(s->mem, kept, N);
        free(part);
        return vp__fail(err, VP_ENOMEM, "EF: out of memory");
    }
    memcpy(kept, tokens, N);
    for (size_t n = 0; n < N; n++) { /* the shard's rows; zero for the other shards' tokens */
        int row = tokens[n] - s->v0;
        if (row >= 0 && tokens[n] < s->v1)
            memcpy(part + n * C, s->wte + (size_t)row * C, f * C);
        else
            memset(part + n * C, 0, f * C);
    }
    sl->tokens = kept;
    *out = part;
    return VP_OK;
}

/* d/d(wte rows) of the shard's part of out[n] = wte[tok[n]], in token order */
vp_status vp_vocab_embed_backward(vp_stage *s, int mb, const float *dout, vp_error *err) {
    vp_status st = vocab_slot(s, mb, "EB", err);
    if (st)
        return st;
    vp__slot *sl = &s->slots[mb];
    size_t N = (size_t)s->d.B * s->d.T, C = (size_t)s->d.C;
    if (!sl->tokens)
        return vp__fail(err, VP_EINVAL, "EB: slot %d of vocabulary shard %d has not run EF", mb,
                        s->vocab_shard - 1);
    for (size_t n = 0; n < N; n++) {
        int row = sl->tokens[n] - s->v0;
        if (row < 0 || sl->tokens[n] >= s->v1)
            continue;
        float *e = s->dwte + (size_t)row * C;
        const float *d = dout + n * C;
        for (size_t i = 0; i < C; i++)
            e[i] += d[i];
    }
    vp_mem_release(s->mem, sl->tokens, N);
    sl->tokens = NULL;
    return VP_OK;
}

/* Per token: the maximum of the shard's logits, the sum of exp(logit - maximum) and the
 * target's logit (0 when another shard holds it), into stats[VP_VOCAB_STATS * N]. */
static void shard_stats(const vp_stage *s, const float *logits, const uint8_t *targets,
                        float *stats) {
    int N = s->d.B * s->d.T, Vk = s->v1 - s->v0;
    for (int n = 0; n < N; n++) {
        const float *l = logits + (long)n * Vk;
        float mx = l[0], sum = 0.0f;
        for (int i = 1; i < Vk; i++)
            mx = l[i] > mx ? l[i] : mx;
        for (int i = 0; i < Vk; i++)
            sum += expf(l[i] - mx);
        int t = targets[n] - s->v0;
        stats[VP_VOCAB_STATS * n] = mx;
        stats[VP_VOCAB_STATS * n + 1] = sum;
        stats[VP_VOCAB_STATS * n + 2] = t >= 0 && targets[n] < s->v1 ? l[t] : 0.0f;
    }
}

vp_status vp_vocab_output(vp_stage *s, int mb, float *h, const uint8_t *targets, float *stats,
                          vp_error *err) {
    vp_status st = vocab_slot(s, mb, "S", err);
    if (st)
        return st;
    vp__slot *sl = &s->slots[mb];
    size_t f = sizeof(float), N = (size_t)s->d.B * s->d.T, C = (size_t)s->d.C;
    size_t Vk = (size_t)(s->v1 - s->v0);
    if (sl->vh)
        return vp__fail(err, VP_EINVAL, "S: slot %d of vocabulary shard %d holds an output already",
                        mb, s->vocab_shard - 1);
    int bad = outside(targets, N, s->cfg.vocab);
    if (bad >= 0)
        return vp__fail(err, VP_EINVAL, "S: target %d is outside the vocabulary (%d)", bad,
                        s->cfg.vocab);
    float *logits = vp_mem_alloc(s->mem, f * N * Vk);
    float *kept = vp_mem_alloc(s->mem, f * VP_VOCAB_STATS * N);
    uint8_t *tg = vp_mem_alloc(s->mem, N);
    if (!logits || !kept || !tg) {
        vp_mem_release(s->mem, logits, f * N * Vk);
        vp_mem_release(s->mem, kept, f * VP_VOCAB_STATS * N);
        vp_mem_release(s->mem, tg, N);
        free(h);
        return vp__fail(err, VP_ENOMEM, "S: out of memory");
    }
    vp_mem_charge(s->mem, f * N * C); /* h, taken over */
    memcpy(tg, targets, N);
    vp__linear_forward(logits, h, s->headw, NULL, (int)N, (int)C, (int)Vk, s->d.naive);
    shard_stats(s, logits, tg, kept);
    memcpy(stats, kept, f * VP_VOCAB_STATS * N);
    *sl = (vp__slot){.state = sl->state,
                     .blocks = sl->blocks,
                     .tokens = sl->tokens,
                     .vh = h,
                     .vlogits = logits,
                     .vstats = kept,
                     .vtargets = tg};
    return VP_OK;
}

double vp_vocab_combine(const float *const *stats, int shards, int n, float *combined) {
    double loss = 0.0;
    for (int t = 0; t < n; t++) {
        const int at = VP_VOCAB_STATS * t;
        float mx = stats[0][at];
        for (int k = 1; k < shards; k++)
            mx = stats[k][at] > mx ? stats[k][at] : mx;
        float sum = stats[0][at + 1] * expf(stats[0][at] - mx), target = stats[0][at + 2];
        for (int k = 1; k < shards; k++) {
            sum += stats[k][at + 1] * expf(stats[k][at] - mx);
            target += stats[k][at + 2]; /* only the target's shard gives more than 0 */
        }
        combined[at] = mx;
        combined[at + 1] = sum;
        combined[at + 2] = target;
        float lt = target - mx;
        loss += (double)logf(sum) - lt;
    }
    return loss / n;
}

/* d/d(logits) of scale * sum_n -log softmax(logits[n])[target[n]] on the shard's rows,
 * the softmax from the combined statistics, in place */
static void shard_dlogits(const vp_stage *s, float *l, const uint8_t *targets,
                          const float *combined, float scale) {
    int N = s->d.B * s->d.T, Vk = s->v1 - s->v0;
    for (int n = 0; n < N; n++) {
        float *p = l + (long)n * Vk, mx = combined[VP_VOCAB_STATS * n];
        float inv = 1.0f / combined[VP_VOCAB_STATS * n + 1];
        for (int i = 0; i < Vk; i++) {
            p[i] = expf(p[i] - mx);
            p[i] *= inv;
        }
        int t = targets[n] - s->v0;
        if (t >= 0 && targets[n] < s->v1)
            p[t] -= 1.0f;
        for (int i = 0; i < Vk; i++)
            p[i] *= scale;
    }
}

vp_status vp_vocab_output_backward(vp_stage *s, int mb, const float *combined, float loss_scale,
                                   float **dx, vp_error *err) {
    *dx = NULL;
    vp_status st = vocab_slot(s, mb, "T", err);
    if (st)
        return st;
    vp__slot *sl = &s->slots[mb];
    size_t f = sizeof(float), N = (size_t)s->d.B * s->d.T, C = (size_t)s->d.C;
    int Vk = s->v1 - s->v0;
    if (!sl->vh)
        return vp__fail(err, VP_EINVAL, "T: slot %d of vocabulary shard %d has not run S", mb,
                        s->vocab_shard - 1);
    float *part = vp_mem_alloc_uncharged(s->mem, f * N * C);
    if (!part)
        return vp__fail(err, VP_ENOMEM, "T: out of memory");
    shard_dlogits(s, sl->vlogits, sl->vtargets, combined, loss_scale / (float)N);
    /* dh = dlogits @ head rows; dW += dlogits^T h */
    vp__linear_backward_input(part, sl->vlogits, s->headw, (int)N, (int)C, Vk, s->d.naive);
    vp__linear_backward_weight(s->dheadw, NULL, sl->vlogits, sl->vh, (int)N, (int)C, Vk,
                               s->d.naive);
    vp_mem_release(s->mem, sl->vh, f * N * C);
    vp_mem_release(s->mem, sl->vlogits, f * N * (size_t)Vk);
    vp_mem_release(s->mem, sl->vstats, f * VP_VOCAB_STATS * N);
    vp_mem_release(s->mem, sl->vtargets, N);
    sl->vh = sl->vlogits = sl->vstats = NULL;
    sl->vtargets = NULL;
    *dx = part;
    return VP_OK;
}

void vp_vocab_add(float *acc, const float *part, size_t n, bool first) {
    if (first) {
        memcpy(acc, part, n * sizeof *acc);
        return;
    }
    for (size_t i = 0; i < n; i++)
        acc[i] = acc[i] + part[i];
}
