/* Cost model: user costs per device slice laid out per stage, and memory deltas. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/internal.h"
#include "vpipe/sim.h"

vp_costs vp_costs_default(void) {
    vp_costs c = {.f = 1.0, .b = 1.0, .w = 1.0, .c = 0.0, .fb = -1.0};
    return c;
}

vp_memcfg vp_memcfg_default(void) {
    vp_memcfg m = {.kind = VP_MEM_AT_W, .zb_ratio = 1.0, .unit_bytes = 0.0};
    return m;
}

vp_status vp_costs_parse(const char *text, vp_costs *costs, vp_error *err) {
    vp_costs c = *costs;
    const char *p = text;
    if (!*p)
        return vp__fail_at(err, VP_EPARSE, 1, 1, "empty cost list (expected e.g. F=2,B=2,W=2,c=0)");
    while (*p) {
        const char *key = p;
        while (*p && *p != '=' && *p != ',')
            p++;
        size_t klen = (size_t)(p - key);
        int col = (int)(key - text) + 1;
        if (*p != '=')
            return vp__fail_at(err, VP_EPARSE, 1, col, "expected KEY=VALUE at '%.*s'", (int)klen,
                               key);
        double *slot = NULL;
        if (klen == 1 && (key[0] == 'F' || key[0] == 'f'))
            slot = &c.f;
        else if (klen == 1 && (key[0] == 'B' || key[0] == 'b'))
            slot = &c.b;
        else if (klen == 1 && (key[0] == 'W' || key[0] == 'w'))
            slot = &c.w;
        else if (klen == 1 && (key[0] == 'c' || key[0] == 'C'))
            slot = &c.c;
        else if (klen == 2 && !strncasecmp(key, "FB", 2))
            slot = &c.fb;
        else
            return vp__fail_at(err, VP_EPARSE, 1, col,
                               "unknown cost key '%.*s' (known: F, B, W, c, FB)", (int)klen, key);
        p++;
        char *end = NULL;
        errno = 0;
        double v = strtod(p, &end);
        int vcol = (int)(p - text) + 1;
        if (end == p || errno || !isfinite(v) || v < 0 || (*end && *end != ','))
            return vp__fail_at(err, VP_EPARSE, 1, vcol, "cost %.*s needs a finite number >= 0",
                               (int)klen, key);
        *slot = v;
        p = end;
        if (*p == ',') {
            p++;
            if (!*p)
                return vp__fail_at(err, VP_EPARSE, 1, (int)(p - text) + 1,
                                   "trailing comma in cost list");
        }
    }
    *costs = c;
    return VP_OK;
}

vp_status vp_memcfg_parse(const char *text, vp_memcfg *cfg, vp_error *err) {
    if (!strcmp(text, "at-w")) {
        cfg->kind = VP_MEM_AT_W;
        cfg->zb_ratio = 1.0;
        return VP_OK;
    }
    if (!strncmp(text, "zb:", 3)) {
        char *end = NULL;
        errno = 0;
        double r = strtod(text + 3, &end);
        if (end != text + 3 && !*end && !errno && r >= 0.0 && r <= 1.0) {
            cfg->kind = VP_MEM_ZB;
            cfg->zb_ratio = r;
            return VP_OK;
        }
        return vp__fail_at(err, VP_EPARSE, 1, 4, "zb:R needs R in [0, 1], got '%s'", text + 3);
    }
    return vp__fail_at(err, VP_EPARSE, 1, 1, "unknown memory model '%s' (at-w or zb:R)", text);
}

void vp_cost_model_free(vp_cost_model *cm) {
    if (!cm)
        return;
    free(cm->f);
    free(cm->b);
    free(cm->w);
    free(cm->fb);
    free(cm->act);
    free(cm->keep);
    free(cm->act_bytes);
    free(cm->keep_bytes);
    free(cm);
}

vp_status vp_cost_model_new(const vp_schedule *s, const vp_costs *costs, const vp_memcfg *mem,
                            vp_cost_model **out, vp_error *err) {
    *out = NULL;
    if (!(costs->f >= 0 && costs->b >= 0 && costs->w >= 0 && costs->c >= 0))
        return vp__fail(err, VP_EINVAL, "costs must be >= 0");
    if (mem->kind == VP_MEM_ZB && !(mem->zb_ratio >= 0 && mem->zb_ratio <= 1))
        return vp__fail(err, VP_EINVAL, "zb memory ratio must be in [0, 1]");
    size_t S = (size_t)s->S;
    vp_cost_model *cm = vp__calloc(1, sizeof *cm);
    if (cm) {
        cm->S = s->S;
        cm->c = costs->c;
        cm->f = vp__calloc(S, sizeof(double));
        cm->b = vp__calloc(S, sizeof(double));
        cm->w = vp__calloc(S, sizeof(double));
        cm->fb = vp__calloc(S, sizeof(double));
        cm->act = vp__calloc(S, sizeof(double));
        cm->keep = vp__calloc(S, sizeof(double));
        cm->act_bytes = vp__calloc(S, sizeof(double));
        cm->keep_bytes = vp__calloc(S, sizeof(double));
        cm->has_bytes = mem->unit_bytes > 0;
    }
    if (!cm || !cm->f || !cm->b || !cm->w || !cm->fb || !cm->act || !cm->keep || !cm->act_bytes ||
        !cm->keep_bytes) {
        vp_cost_model_free(cm);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    /* A stage is 1/v of its device's slice; the two copies of the bidirectional placement
     * each hold a whole slice. */
    double v = s->placement == VP_PLACE_BIDIR ? 1.0 : (double)s->S / (double)s->p;
    double keep_share = mem->kind == VP_MEM_ZB ? mem->zb_ratio : 1.0;
    for (size_t i = 0; i < S; i++) {
        int d = s->stage_device[i];
        cm->f[i] = (costs->dev_f ? costs->dev_f[d] : costs->f) / v;
        cm->b[i] = (costs->dev_b ? costs->dev_b[d] : costs->b) / v;
        cm->w[i] = (costs->dev_w ? costs->dev_w[d] : costs->w) / v;
        cm->fb[i] = costs->fb >= 0 ? costs->fb / v : -1.0;
        cm->act[i] = 1.0 / v;
        cm->keep[i] = keep_share / v;
        if (cm->has_bytes) {
            cm->act_bytes[i] = mem->unit_bytes * cm->act[i];
            cm->keep_bytes[i] = mem->unit_bytes * cm->keep[i];
        }
    }
    *out = cm;
    return VP_OK;
}

double vp_cost_model_pass_time(const vp_cost_model *cm, int kind, int stage) {
    switch (kind) {
    case VP_OP_F:
        return cm->f[stage];
    case VP_OP_B:
        return cm->b[stage];
    case VP_OP_W:
        return cm->w[stage];
    default:
        return cm->b[stage] + cm->w[stage];
    }
}

double vp_cost_model_op_time(const vp_cost_model *cm, const vp_op *op) {
    if (op->kind != VP_OP_FB)
        return vp_cost_model_pass_time(cm, op->kind, op->stage);
    if (cm->fb[op->stage] >= 0)
        return cm->fb[op->stage];
    return cm->f[op->stage] + vp_cost_model_pass_time(cm, op->bkind, op->stage2);
}

void vp_cost_model_pass_memory(const vp_cost_model *cm, int kind, int stage, int bytes, double *up,
                               double *down) {
    const double *act = bytes ? cm->act_bytes : cm->act;
    const double *keep = bytes ? cm->keep_bytes : cm->keep;
    *up = kind == VP_OP_F ? act[stage] : 0.0;
    *down = kind == VP_OP_B    ? act[stage] - keep[stage]
            : kind == VP_OP_W  ? keep[stage]
            : kind == VP_OP_BW ? act[stage]
                               : 0.0;
}

void vp_cost_model_op_memory(const vp_cost_model *cm, const vp_op *op, int bytes, double *up,
                             double *down) {
    if (op->kind != VP_OP_FB) {
        vp_cost_model_pass_memory(cm, op->kind, op->stage, bytes, up, down);
        return;
    }
    double none;
    vp_cost_model_pass_memory(cm, VP_OP_F, op->stage, bytes, up, &none);
    vp_cost_model_pass_memory(cm, op->bkind, op->stage2, bytes, &none, down);
}
