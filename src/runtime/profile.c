/* Costs from measurement: per-stage mean op times of a measured timeline. */
#include <stdlib.h>

#include "core/internal.h"
#include "vpipe/runtime.h"

void vp_runtime_measured_costs(const vp_schedule *s, const vp_timeline *tl, vp_cost_model *cm) {
    double *sum = vp__calloc((size_t)s->S * VP_OP_KIND_COUNT, sizeof *sum);
    int *count = vp__calloc((size_t)s->S * VP_OP_KIND_COUNT, sizeof *count);
    if (!sum || !count) {
        free(sum);
        free(count);
        return;
    }
    for (int d = 0; d < tl->p; d++)
        for (int k = 0; k < tl->dev[d].n; k++) {
            const vp_slice *sl = &tl->dev[d].slices[k];
            int i = sl->op.stage * VP_OP_KIND_COUNT + sl->op.kind;
            sum[i] += sl->end - sl->start;
            count[i]++;
        }
    for (int st = 0; st < s->S; st++) {
        const double *su = &sum[st * VP_OP_KIND_COUNT];
        const int *n = &count[st * VP_OP_KIND_COUNT];
        if (n[VP_OP_F])
            cm->f[st] = su[VP_OP_F] / n[VP_OP_F];
        if (n[VP_OP_B])
            cm->b[st] = su[VP_OP_B] / n[VP_OP_B];
        if (n[VP_OP_W])
            cm->w[st] = su[VP_OP_W] / n[VP_OP_W];
        if (n[VP_OP_BW] && !n[VP_OP_B])
            cm->b[st] = cm->w[st] = su[VP_OP_BW] / n[VP_OP_BW] / 2;
        if (n[VP_OP_FB])
            cm->fb[st] = su[VP_OP_FB] / n[VP_OP_FB];
    }
    cm->c = 0.0;
    free(sum);
    free(count);
}
