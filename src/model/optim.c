/* AdamW and the learning-rate schedules. */
#include <math.h>

#include "model/stage_internal.h"

void vp_stage_adamw(vp_stage *s, const vp_adamw *opt, int step, float lr, float grad_scale) {
    float b1 = opt->beta1, b2 = opt->beta2;
    float c1 = 1.0f - powf(b1, (float)step), c2 = 1.0f - powf(b2, (float)step);
    long lo = (long)s->held.lo, hi = (long)s->held.hi; /* the elements it holds moments of */
    for (int t = 0; t < s->n_tensors; t++) {
        float wd = s->tensors[t].decay ? opt->weight_decay : 0.0f;
        long a = s->tensors[t].offset, b = a + s->tensors[t].count;
        long o = a > lo ? a : lo, n = (b < hi ? b : hi) - o;
        if (n <= 0)
            continue; /* a tensor outside the shard */
        float *p = s->params + o, *g = s->grads + o;
        float *m = s->adam_m + (o - lo), *v = s->adam_v + (o - lo);
        for (long i = 0; i < n; i++) {
            float gi = g[i] * grad_scale;
            m[i] = b1 * m[i] + (1.0f - b1) * gi;
            v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
            float mhat = m[i] / c1, vhat = v[i] / c2;
            p[i] -= lr * (mhat / (sqrtf(vhat) + opt->eps) + wd * p[i]);
        }
    }
}

double vp_lr_at(vp_lr_schedule schedule, int step, int steps, int warmup, double lr,
                double min_lr) {
    if (schedule == VP_LR_CONSTANT)
        return lr;
    if (step < warmup)
        return lr * (step + 1) / warmup;
    if (step >= steps)
        return min_lr; /* past the decay: its floor */
    if (steps <= warmup + 1)
        return lr;
    double progress = (double)(step - warmup) / (steps - warmup - 1);
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + cos(3.141592653589793 * progress));
}
