/* The block value: construction, passes, durations and the structural check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block/block_internal.h"

vp_status vp_block_new(int p, int S, vp_placement_kind placement, vp_block **out, vp_error *err) {
    *out = NULL;
    /* An empty schedule of the shape places the stages exactly as schedules do. */
    vp_schedule *shape = NULL;
    vp_shape sh = {.p = p, .S = S, .m = 1, .placement = placement};
    vp_status rc = vp_schedule_new("block", sh, &shape, err);
    if (rc != VP_OK)
        return rc;
    vp_block *b = vp__calloc(1, sizeof *b);
    if (b)
        b->stage_device = vp__calloc((size_t)S, sizeof *b->stage_device);
    if (!b || !b->stage_device) {
        vp_schedule_free(shape);
        vp_block_free(b);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    b->p = p;
    b->S = S;
    b->placement = placement;
    b->mb_per_copy = 1;
    for (int s = 0; s < S; s++)
        b->stage_device[s] = shape->stage_device[s];
    vp_schedule_free(shape);
    *out = b;
    return VP_OK;
}

void vp_block_free(vp_block *b) {
    if (!b)
        return;
    free(b->stage_device);
    free(b->pass);
    free(b);
}

vp_status vp_block_clone(const vp_block *b, vp_block **out, vp_error *err) {
    vp_block *c = NULL;
    vp_status rc = vp_block_new(b->p, b->S, VP_PLACE_CUSTOM, &c, err);
    if (rc != VP_OK)
        return rc;
    c->placement = b->placement;
    c->mb_per_copy = b->mb_per_copy;
    c->T = b->T;
    memcpy(c->stage_device, b->stage_device, (size_t)b->S * sizeof *b->stage_device);
    if (b->n && vp__grow((void **)&c->pass, &c->cap, b->n, sizeof *c->pass) != 0) {
        vp_block_free(c);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    if (b->n)
        memcpy(c->pass, b->pass, (size_t)b->n * sizeof *c->pass);
    c->n = b->n;
    *out = c;
    return VP_OK;
}

vp_status vp_block_add(vp_block *b, vp_op_kind kind, int stage, int mb, double start, double dur) {
    if (kind != VP_OP_F && kind != VP_OP_B && kind != VP_OP_W && kind != VP_OP_BW)
        return VP_EINVAL;
    if (stage < 0 || stage >= b->S || !isfinite(start) || !isfinite(dur) || dur < 0)
        return VP_EINVAL;
    if (vp__grow((void **)&b->pass, &b->cap, b->n + 1, sizeof *b->pass) != 0)
        return VP_ENOMEM;
    vp_block_pass ps = {.kind = (int)kind, .stage = stage, .mb = mb, .start = start, .dur = dur};
    b->pass[b->n++] = ps;
    return VP_OK;
}

int vp_block_find(const vp_block *b, vp_op_kind kind, int stage, int mb) {
    for (int i = 0; i < b->n; i++)
        if (b->pass[i].kind == (int)kind && b->pass[i].stage == stage && b->pass[i].mb == mb)
            return i;
    return -1;
}

vp_status vp_block_cost_model(const vp_block *b, const vp_costs *costs, const vp_memcfg *mem,
                              vp_cost_model **out, vp_error *err) {
    *out = NULL;
    vp_schedule *shape = NULL;
    vp_status rc = vp__block_shape(b, 1, NULL, &shape, err);
    if (rc == VP_OK)
        rc = vp_cost_model_new(shape, costs, mem, out, err);
    vp_schedule_free(shape);
    return rc;
}

int vp__block_class(const vp_block *b, int mb) {
    int k = b->mb_per_copy;
    return ((mb % k) + k) % k;
}

vp_status vp__block_shape(const vp_block *b, int m, const char *family, vp_schedule **out,
                          vp_error *err) {
    vp_schedule *s = NULL;
    vp_shape shape = {.p = b->p, .S = b->S, .m = m, .placement = b->placement};
    vp_status rc = vp_schedule_new(family ? family : "block", shape, &s, err);
    if (rc != VP_OK)
        return rc;
    memcpy(s->stage_device, b->stage_device, (size_t)b->S * sizeof *s->stage_device);
    rc = vp_schedule_set_chunks(s, err);
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return rc;
    }
    int lo[VP__BLOCK_MAX_CLASSES], len = 0;
    if (vp__block_routes(b, lo, &len)) {
        s->route_len = len;
        for (int j = 0; j < m; j++)
            s->mb_first[j] = lo[vp__block_class(b, j)];
    }
    *out = s;
    return VP_OK;
}

int vp__block_routes(const vp_block *b, int *lo, int *len) {
    int k = b->mb_per_copy;
    if (k < 1 || k > VP__BLOCK_MAX_CLASSES)
        return 0;
    int hi[VP__BLOCK_MAX_CLASSES];
    for (int r = 0; r < k; r++) {
        lo[r] = b->S;
        hi[r] = -1;
    }
    for (int i = 0; i < b->n; i++) {
        int r = vp__block_class(b, b->pass[i].mb), s = b->pass[i].stage;
        if (s < lo[r])
            lo[r] = s;
        if (s > hi[r])
            hi[r] = s;
    }
    for (int r = 0; r < k; r++) {
        if (hi[r] < 0 || hi[r] - lo[r] != hi[0] - lo[0])
            return 0;
    }
    *len = hi[0] - lo[0] + 1;
    return 1;
}

/* Describes pass i for messages: kind, stage and microbatch offset. */
static void pass_label(const vp_block *b, int i, char *buf, size_t size) {
    const vp_block_pass *ps = &b->pass[i];
    snprintf(buf, size, "%s(stage %d, mb %+d)", vp_op_kind_name((vp_op_kind)ps->kind), ps->stage,
             ps->mb);
}

/* Counts of each kind per (class, stage), saturating at 2 (enough to tell 0, 1, many). */
typedef struct kind_count {
    unsigned char n[4];
} kind_count;

vp_status vp_block_check(const vp_block *b, vp_error *err) {
    if (b->p < 1 || b->S < 1)
        return vp__fail(err, VP_EINVAL, "block needs p, S >= 1 (p=%d, S=%d)", b->p, b->S);
    if (b->mb_per_copy < 1 || b->mb_per_copy > VP__BLOCK_MAX_CLASSES)
        return vp__fail(err, VP_EINVAL, "mb_per_copy must be in [1, %d] (got %d)",
                        VP__BLOCK_MAX_CLASSES, b->mb_per_copy);
    for (int s = 0; s < b->S; s++)
        if (b->stage_device[s] < 0 || b->stage_device[s] >= b->p)
            return vp__fail(err, VP_EINVAL, "stage %d is on device %d, outside [0, %d)", s,
                            b->stage_device[s], b->p);
    if (b->n == 0)
        return vp__fail(err, VP_EINVAL, "block has no passes");
    char label[64];
    for (int i = 0; i < b->n; i++) {
        const vp_block_pass *ps = &b->pass[i];
        int k = ps->kind;
        if ((k != VP_OP_F && k != VP_OP_B && k != VP_OP_W && k != VP_OP_BW) || ps->stage < 0 ||
            ps->stage >= b->S)
            return vp__fail(err, VP_EINVAL, "pass %d has kind %d or stage %d out of range", i, k,
                            ps->stage);
        if (!(fabs(ps->start) <= 1e15) || !(ps->dur >= 0 && ps->dur <= 1e15)) {
            pass_label(b, i, label, sizeof label);
            return vp__fail(err, VP_EINVAL, "%s needs |start| <= 1e15 and a duration in [0, 1e15]",
                            label);
        }
        if (abs(ps->mb) > VP__BLOCK_MAX_MB_OFFSET) {
            pass_label(b, i, label, sizeof label);
            return vp__fail(err, VP_EINVAL, "%s: microbatch offset beyond +-%d", label,
                            VP__BLOCK_MAX_MB_OFFSET);
        }
    }
    int lo[VP__BLOCK_MAX_CLASSES], len;
    if (!vp__block_routes(b, lo, &len))
        return vp__fail(err, VP_EINVAL,
                        "every microbatch class (offset mod %d) needs passes on an equally long "
                        "contiguous stage range",
                        b->mb_per_copy);
    size_t cells = (size_t)b->mb_per_copy * (size_t)b->S;
    kind_count *cnt = vp__calloc(cells, sizeof *cnt);
    if (!cnt)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < b->n; i++) {
        int r = vp__block_class(b, b->pass[i].mb);
        unsigned char *c = &cnt[(size_t)r * b->S + b->pass[i].stage].n[b->pass[i].kind];
        if (*c < 2)
            (*c)++;
    }
    vp_status rc = VP_OK;
    for (int r = 0; r < b->mb_per_copy && rc == VP_OK; r++) {
        for (int s = lo[r]; s < lo[r] + len && rc == VP_OK; s++) {
            const unsigned char *n = cnt[(size_t)r * b->S + s].n;
            int split = n[VP_OP_B] == 1 && n[VP_OP_W] == 1 && n[VP_OP_BW] == 0;
            int full = n[VP_OP_BW] == 1 && n[VP_OP_B] == 0 && n[VP_OP_W] == 0;
            if (n[VP_OP_F] != 1 || !(split || full))
                rc = vp__fail(err, VP_EINVAL,
                              "stage %d of microbatch class %d needs exactly one F and either one "
                              "BW or one B and one W (has F=%d B=%d W=%d BW=%d; 2 = two or more)",
                              s, r, n[VP_OP_F], n[VP_OP_B], n[VP_OP_W], n[VP_OP_BW]);
        }
    }
    free(cnt);
    return rc;
}
