/* Cost model: user costs per device slice laid out per stage, and memory deltas. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/internal.h"
#include "vpipe/sim.h"

vp_costs vp_costs_default(void) {
    vp_costs c = {
        .f = 1.0, .b = 1.0, .w = 1.0, .c = 0.0, .fb = -1.0, .r = -1.0, .o = -1.0, .l = -1.0};
    c.s = c.t = c.e = 0.0;
    return c;
}

vp_memcfg vp_memcfg_default(void) {
    vp_memcfg m = {.kind = VP_MEM_AT_W,
                   .zb_ratio = 1.0,
                   .unit_bytes = 0.0,
                   .input_share = VP_MEM_INPUT_SHARE,
                   .core_share = VP_MEM_CORE_SHARE};
    return m;
}

/* The slot of cost key [key, key + len) in c, and its index in seen[]; NULL if unknown. */
static double *cost_slot(vp_costs *c, const char *key, size_t len, int *which) {
    static const char *const names[] = {"F", "B", "W", "c", "FB", "R", "S", "T", "E", "O", "L"};
    double *slots[] = {&c->f, &c->b, &c->w, &c->c, &c->fb, &c->r,
                       &c->s, &c->t, &c->e, &c->o, &c->l};
    for (int i = 0; i < 11; i++)
        if (len == strlen(names[i]) && !strncasecmp(key, names[i], len)) {
            *which = i;
            return slots[i];
        }
    return NULL;
}

vp_status vp_costs_parse(const char *text, vp_costs *costs, vp_error *err) {
    vp_costs c = *costs;
    int seen[11] = {0}; /* column of each key, 0 while not given */
    const char *p = text;
    if (!*p)
        return vp__fail_at(err, VP_EPARSE, 1, 1, "empty cost list (expected e.g. F=2,B=2,W=2,c=0)");
    while (*p) {
        const char *key = p;
        while (*p && *p != '=' && *p != ',')
            p++;
        int klen = (int)(p - key), col = (int)(key - text) + 1, which = 0;
        if (*p != '=')
            return vp__fail_at(err, VP_EPARSE, 1, col, "expected KEY=VALUE at '%.*s'", klen, key);
        double *slot = cost_slot(&c, key, (size_t)klen, &which);
        if (!slot)
            return vp__fail_at(err, VP_EPARSE, 1, col,
                               "unknown cost key '%.*s' (known: F, B, W, c, FB, R, S, T, E, O, L)",
                               klen, key);
        if (seen[which])
            return vp__fail_at(err, VP_EPARSE, 1, col,
                               "cost %.*s is given twice (first at column %d)", klen, key,
                               seen[which]);
        seen[which] = col;
        p++;
        double v = 0;
        const char *end = vp__read_number(p, &v);
        if (!end || (*end && *end != ','))
            return vp__fail_at(err, VP_EPARSE, 1, (int)(p - text) + 1,
                               "cost %.*s needs a number >= 0, got '%.*s'", klen, key,
                               (int)strcspn(p, ","), p);
        if (!(v <= VP_COST_MAX))
            return vp__fail_at(err, VP_EVALIDATION, 1, (int)(p - text) + 1,
                               "cost %.*s is %g, over %g: larger costs overflow the simulated "
                               "times",
                               klen, key, v, VP_COST_MAX);
        *slot = v;
        p = end;
        if (*p == ',' && !*++p)
            return vp__fail_at(err, VP_EPARSE, 1, (int)(p - text) + 1,
                               "trailing comma in cost list");
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
        double r = 0;
        const char *end = vp__read_number(text + 3, &r);
        if (end && !*end && r <= 1.0) {
            cfg->kind = VP_MEM_ZB;
            cfg->zb_ratio = r;
            return VP_OK;
        }
        return vp__fail_at(err, VP_EPARSE, 1, 4,
                           "zb:R needs R in [0, 1] (a plain decimal number), got '%s'", text + 3);
    }
    return vp__fail_at(err, VP_EPARSE, 1, 1, "unknown memory model '%s' (at-w or zb:R)", text);
}

void vp_cost_model_free(vp_cost_model *cm) {
    if (!cm)
        return;
    free(cm->f);
    free(cm->b);
    free(cm->w);
    free(cm->r);
    free(cm->fb);
    free(cm->o);
    free(cm->l);
    free(cm->off);
    free(cm->off_bytes);
    free(cm->act);
    free(cm->keep);
    free(cm->hold);
    free(cm->act_bytes);
    free(cm->keep_bytes);
    free(cm->hold_bytes);
    free(cm->tail_bytes);
    free(cm->vocab);
    free(cm->vocab_act);
    free(cm->vocab_act_bytes);
    free(cm->xf);
    free(cm->xb);
    free(cm);
}

/* Whether x is a cost the library takes: in [0, VP_COST_MAX] (NaN is not). */
static int cost_ok(double x) {
    return x >= 0 && x <= VP_COST_MAX;
}

/* VP_EINVAL naming the first cost of costs outside [0, VP_COST_MAX] (fb < 0 means "sum of
 * the halves", r and o < 0 "the forward's time", l < 0 "o's"; per-device arrays have p
 * entries). */
static vp_status check_costs(const vp_costs *costs, int p, vp_error *err) {
    const double *dev[3] = {costs->dev_f, costs->dev_b, costs->dev_w};
    int ok = cost_ok(costs->f) && cost_ok(costs->b) && cost_ok(costs->w) && cost_ok(costs->c) &&
             (costs->fb < 0 || cost_ok(costs->fb)) && (costs->r < 0 || cost_ok(costs->r)) &&
             cost_ok(costs->s) && cost_ok(costs->t) && cost_ok(costs->e) &&
             (costs->o < 0 || cost_ok(costs->o)) && (costs->l < 0 || cost_ok(costs->l));
    for (int k = 0; ok && k < 3; k++)
        for (int d = 0; dev[k] && ok && d < p; d++)
            ok = cost_ok(dev[k][d]);
    if (!ok)
        return vp__fail(err, VP_EINVAL,
                        "costs must be finite numbers >= 0 and <= %g (larger costs overflow the "
                        "simulated times)",
                        VP_COST_MAX);
    return VP_OK;
}

/* Checks the memory model: a ZB ratio and recomputation shares in [0, 1], unit bytes
 * finite and >= 0. */
static vp_status check_memcfg(const vp_memcfg *mem, vp_error *err) {
    if (mem->kind == VP_MEM_ZB && !(mem->zb_ratio >= 0 && mem->zb_ratio <= 1))
        return vp__fail(err, VP_EINVAL, "zb memory ratio must be in [0, 1]");
    if (!(mem->unit_bytes >= 0 && isfinite(mem->unit_bytes)))
        return vp__fail(err, VP_EINVAL, "unit_bytes must be a finite number >= 0");
    if (!(mem->input_share >= 0 && mem->input_share <= 1 && mem->core_share >= 0 &&
          mem->core_share <= 1))
        return vp__fail(err, VP_EINVAL, "recomputation shares must be in [0, 1]");
    return VP_OK;
}

/* A cost model of S stages on p devices with every array allocated (zeroed), or NULL. */
static vp_cost_model *cost_model_alloc(int S, int p) {
    vp_cost_model *cm = vp__calloc(1, sizeof *cm);
    if (!cm)
        return NULL;
    size_t n = (size_t)S;
    cm->S = S;
    cm->p = p;
    double **arrays[] = {&cm->f,   &cm->b,         &cm->w,          &cm->r,          &cm->fb,
                         &cm->o,   &cm->l,         &cm->act,        &cm->keep,       &cm->hold,
                         &cm->off, &cm->act_bytes, &cm->keep_bytes, &cm->hold_bytes, &cm->off_bytes,
                         &cm->xf,  &cm->xb,        &cm->tail_bytes};
    int ok = 1;
    for (size_t i = 0; ok && i < sizeof arrays / sizeof arrays[0]; i++)
        ok = (*arrays[i] = vp__calloc(n, sizeof(double))) != NULL;
    ok = ok && (cm->vocab = vp__calloc(4 * (size_t)p, sizeof(double))) &&
         (cm->vocab_act = vp__calloc(2 * (size_t)p, sizeof(double))) &&
         (cm->vocab_act_bytes = vp__calloc(2 * (size_t)p, sizeof(double)));
    if (!ok) {
        vp_cost_model_free(cm);
        return NULL;
    }
    return cm;
}

vp_status vp_cost_model_new(const vp_schedule *s, const vp_costs *costs, const vp_memcfg *mem,
                            vp_cost_model **out, vp_error *err) {
    *out = NULL;
    vp_status rc = check_costs(costs, s->p, err);
    if (rc == VP_OK)
        rc = check_memcfg(mem, err);
    if (rc != VP_OK)
        return rc;
    vp_cost_model *cm = cost_model_alloc(s->S, s->p);
    if (!cm)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    cm->c = costs->c;
    cm->comm_rate = 1.0;
    cm->has_bytes = mem->unit_bytes > 0;
    cm->recompute = s->recompute;
    /* A stage is 1/v of its device's slice; the two copies of the bidirectional placement
     * each hold a whole slice. */
    double v = s->placement == VP_PLACE_BIDIR ? 1.0 : (double)s->S / (double)s->p;
    double keep_share = mem->kind == VP_MEM_ZB ? mem->zb_ratio : 1.0;
    double hold_share =
        s->recompute == VP_RECOMPUTE_FULL ? mem->input_share : 1.0 - mem->core_share;
    for (int i = 0; i < s->S; i++) {
        int d = s->stage_device[i];
        cm->f[i] = (costs->dev_f ? costs->dev_f[d] : costs->f) / v;
        cm->b[i] = (costs->dev_b ? costs->dev_b[d] : costs->b) / v;
        cm->w[i] = (costs->dev_w ? costs->dev_w[d] : costs->w) / v;
        cm->r[i] = costs->r >= 0 ? costs->r / v : cm->f[i];
        cm->fb[i] = costs->fb >= 0 ? costs->fb / v : -1.0;
        cm->act[i] = 1.0 / v;
        cm->keep[i] = keep_share / v;
        cm->hold[i] = s->recompute != VP_RECOMPUTE_NONE ? hold_share / v : cm->act[i];
        cm->off[i] = s->offload[i] * cm->hold[i];
        double o_unit = costs->o >= 0 ? costs->o : cm->f[i] * v; /* the slice's forward */
        cm->o[i] = o_unit * cm->off[i];
        cm->l[i] = (costs->l >= 0 ? costs->l : o_unit) * cm->off[i];
        if (cm->has_bytes) {
            cm->act_bytes[i] = mem->unit_bytes * cm->act[i];
            cm->keep_bytes[i] = mem->unit_bytes * cm->keep[i];
            cm->hold_bytes[i] = mem->unit_bytes * cm->hold[i];
            cm->off_bytes[i] = mem->unit_bytes * cm->off[i];
        }
    }
    for (int d = 0; d < s->p; d++) { /* EF, EB, S, T */
        cm->vocab[d] = cm->vocab[s->p + d] = costs->e;
        cm->vocab[2 * s->p + d] = costs->s;
        cm->vocab[3 * s->p + d] = costs->t;
    }
    *out = cm;
    return VP_OK;
}

double vp_cost_model_pass_time(const vp_cost_model *cm, int kind, int stage) {
    if (vp_op_kind_is_vocab(kind))
        return cm->vocab[(kind - VP_OP_EF) * cm->p + stage];
    switch (kind) {
    case VP_OP_F:
        return cm->f[stage];
    case VP_OP_B:
        return cm->b[stage];
    case VP_OP_W:
        return cm->w[stage];
    case VP_OP_R:
        return cm->r[stage];
    case VP_OP_O:
        return cm->o[stage];
    case VP_OP_L:
        return cm->l[stage];
    default:
        return cm->b[stage] + cm->w[stage];
    }
}

double vp_cost_model_op_time(const vp_cost_model *cm, const vp_op *op) {
    if (op->kind != VP_OP_FB)
        return vp_cost_model_pass_time(cm, op->kind, op->stage);
    if (cm->fb[op->stage] >= 0)
        return cm->fb[op->stage];
    double sum = cm->f[op->stage] + vp_cost_model_pass_time(cm, op->bkind, op->stage2);
    double x = cm->xf[op->stage] + cm->xb[op->stage2]; /* the pair's communication */
    if (!(x > 0))
        return sum;
    double c = sum - x, slowed = c + x * (1 - cm->comm_rate); /* compute beside it */
    return slowed > x ? slowed : x;
}

void vp_cost_model_pass_memory(const vp_cost_model *cm, int kind, int stage, int bytes, double *up,
                               double *down) {
    VP_ASSERT(!bytes || cm->has_bytes);
    if (vp_op_kind_is_vocab(kind)) { /* EF and S take what EB and T release */
        int held = kind == VP_OP_S || kind == VP_OP_T;
        double v = (bytes ? cm->vocab_act_bytes : cm->vocab_act)[held * cm->p + stage];
        *up = kind == VP_OP_EF || kind == VP_OP_S ? v : 0.0;
        *down = v - *up;
        return;
    }
    const double *act = bytes ? cm->act_bytes : cm->act;
    const double *keep = bytes ? cm->keep_bytes : cm->keep;
    double dropped = cm->recompute != VP_RECOMPUTE_NONE
                         ? act[stage] - (bytes ? cm->hold_bytes : cm->hold)[stage]
                         : 0.0; /* by F, until R */
    double grown = cm->bw_holds_keep && keep[stage] > act[stage] ? keep[stage] - act[stage]
                                                                 : 0.0; /* by a BW's B */
    double off = (bytes ? cm->off_bytes : cm->off)[stage];              /* by O, until L */
    double tail = bytes ? cm->tail_bytes[stage] : 0.0; /* by B or BW, until the end */
    *up = kind == VP_OP_F    ? act[stage]
          : kind == VP_OP_R  ? dropped
          : kind == VP_OP_BW ? grown
          : kind == VP_OP_L  ? off
                             : 0.0;
    *down = kind == VP_OP_F    ? dropped
            : kind == VP_OP_B  ? act[stage] - keep[stage] - tail
            : kind == VP_OP_W  ? keep[stage]
            : kind == VP_OP_BW ? act[stage] + grown - tail
            : kind == VP_OP_O  ? off
                               : 0.0;
}

void vp_cost_model_op_memory(const vp_cost_model *cm, const vp_op *op, int bytes, double *up,
                             double *down) {
    if (op->kind != VP_OP_FB) {
        vp_cost_model_pass_memory(cm, op->kind, op->stage, bytes, up, down);
        return;
    }
    double f_up, f_down, b_up, b_down; /* the halves run in turn: F, then the backward */
    vp_cost_model_pass_memory(cm, VP_OP_F, op->stage, bytes, &f_up, &f_down);
    vp_cost_model_pass_memory(cm, op->bkind, op->stage2, bytes, &b_up, &b_down);
    if (cm->fb_layered) { /* from its start straight to its end */
        double net = f_up - f_down + b_up - b_down;
        *up = net > 0 ? net : 0.0;
        *down = *up - net;
        return;
    }
    *up = f_up - f_down + b_up > f_up ? f_up - f_down + b_up : f_up;
    *down = *up - (f_up - f_down + b_up - b_down);
}
