/* The schedule value: construction, placement, comparison, the recomputing version,
 * names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "schedule/replay.h"
#include "schedule/placement.h"
#include "schedule/replay.h"
#include "vpipe/schedule.h"

/* Fills stage_device for the placements that have a rule (placement.h). */
static vp_status place_stages(vp_schedule *s, vp_error *err) {
    int p = s->p, S = s->S;
    if ((unsigned)s->placement > VP_PLACE_CUSTOM)
        return vp__fail(err, VP_EINVAL, "unknown placement %d", (int)s->placement);
    if (vp__placement_stages(s->placement, p, S) != S)
        return vp__fail(err, VP_EINVAL, "%s placement needs S %s (S=%d, p=%d)",
                        vp_placement_name(s->placement), vp__placement_rule(s->placement), S, p);
    for (int i = 0; s->placement != VP_PLACE_CUSTOM && i < S; i++)
        s->stage_device[i] = vp__placement_device(s->placement, p, i);
    return VP_OK;
}

vp_status vp_schedule_new(const char *family, vp_shape shape, vp_schedule **out, vp_error *err) {
    *out = NULL;
    int p = shape.p, S = shape.S, m = shape.m;
    if (p < 1 || S < 1 || m < 1)
        return vp__fail(err, VP_EINVAL, "schedule needs p, S, m >= 1 (p=%d, S=%d, m=%d)", p, S, m);
    vp_schedule *s = vp__calloc(1, sizeof *s);
    if (!s)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    snprintf(s->family, sizeof s->family, "%s", family ? family : "custom");
    s->p = p;
    s->S = S;
    s->m = m;
    s->placement = shape.placement;
    s->route_len = shape.placement == VP_PLACE_BIDIR ? p : S;
    s->stage_device = vp__calloc((size_t)S, sizeof *s->stage_device);
    s->stage_chunk = vp__calloc((size_t)S, sizeof *s->stage_chunk);
    s->offload = vp__calloc((size_t)S, sizeof *s->offload);
    s->mb_first = vp__calloc((size_t)m, sizeof *s->mb_first);
    s->dev = vp__calloc((size_t)p, sizeof *s->dev);
    vp_status rc = VP_OK;
    if (!s->stage_device || !s->stage_chunk || !s->offload || !s->mb_first || !s->dev)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        rc = place_stages(s, err);
    if (rc == VP_OK && shape.placement == VP_PLACE_BIDIR)
        for (int j = 0; j < m; j++)
            s->mb_first[j] = (j % 2) * p;
    if (rc == VP_OK)
        rc = vp_schedule_set_chunks(s, err);
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return rc;
    }
    *out = s;
    return VP_OK;
}

void vp_schedule_free(vp_schedule *s) {
    if (!s)
        return;
    if (s->dev)
        for (int d = 0; d < s->p; d++)
            free(s->dev[d].ops);
    free(s->dev);
    free(s->stage_device);
    free(s->stage_chunk);
    free(s->offload);
    free(s->mb_first);
    free(s);
}

vp_status vp_schedule_push(vp_schedule *s, int d, vp_op op) {
    VP_ASSERT(d >= 0 && d < s->p);
    vp_oplist *l = &s->dev[d];
    if (vp__grow((void **)&l->ops, &l->cap, l->n + 1, sizeof(vp_op)) != 0)
        return VP_ENOMEM;
    l->ops[l->n++] = op;
    return VP_OK;
}

vp_status vp_schedule_push_pass(vp_schedule *s, int d, vp_op_kind kind, int stage, int mb) {
    VP_ASSERT((unsigned)kind < VP_OP_KIND_COUNT && kind != VP_OP_FB);
    vp_op op = {.kind = (uint8_t)kind, .stage = stage, .mb = mb};
    return vp_schedule_push(s, d, op);
}

vp_status vp_schedule_set_chunks(vp_schedule *s, vp_error *err) {
    for (int i = 0; i < s->S; i++)
        if (s->stage_device[i] < 0 || s->stage_device[i] >= s->p)
            return vp__fail(err, VP_EINVAL, "stage %d is placed on device %d, outside 0..%d", i,
                            s->stage_device[i], s->p - 1);
    int *count = vp__calloc((size_t)s->p, sizeof *count);
    if (!count)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < s->S; i++)
        s->stage_chunk[i] = count[s->stage_device[i]]++;
    free(count);
    return VP_OK;
}

int vp_schedule_chunks_per_device(const vp_schedule *s) {
    int best = 0;
    for (int i = 0; i < s->S; i++)
        if (s->stage_chunk[i] + 1 > best)
            best = s->stage_chunk[i] + 1;
    return best;
}

int vp_schedule_param_copies(const vp_schedule *s) {
    return s->placement == VP_PLACE_BIDIR ? 2 : 1;
}

long vp_schedule_op_count(const vp_schedule *s) {
    long n = 0;
    for (int d = 0; d < s->p; d++)
        n += s->dev[d].n;
    return n;
}

static int ops_equal(const vp_op *a, const vp_op *b) {
    if (a->kind != b->kind || a->stage != b->stage || a->mb != b->mb)
        return 0;
    if (a->kind != VP_OP_FB)
        return 1;
    return a->bkind == b->bkind && a->stage2 == b->stage2 && a->mb2 == b->mb2;
}

int vp_schedule_equal(const vp_schedule *a, const vp_schedule *b) {
    if (a->p != b->p || a->S != b->S || a->m != b->m || a->route_len != b->route_len ||
        a->placement != b->placement || a->recompute != b->recompute ||
        a->host_limit != b->host_limit || a->vocab_parallel != b->vocab_parallel)
        return 0;
    for (int i = 0; i < a->S; i++)
        if (a->offload[i] != b->offload[i])
            return 0;
    if (memcmp(a->stage_device, b->stage_device, (size_t)a->S * sizeof *a->stage_device) ||
        memcmp(a->mb_first, b->mb_first, (size_t)a->m * sizeof *a->mb_first))
        return 0;
    for (int d = 0; d < a->p; d++) {
        if (a->dev[d].n != b->dev[d].n)
            return 0;
        for (int k = 0; k < a->dev[d].n; k++)
            if (!ops_equal(&a->dev[d].ops[k], &b->dev[d].ops[k]))
                return 0;
    }
    return 1;
}

int vp_schedule_offloads(const vp_schedule *s) {
    for (int i = 0; i < s->S; i++)
        if (s->offload[i] > 0)
            return 1;
    return 0;
}

vp_status vp__offloaded(const vp_schedule *s, uint8_t **out, vp_error *err) {
    *out = NULL;
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            if (op->kind != VP_OP_O)
                continue;
            if (!*out && !(*out = vp__calloc((size_t)s->S * (size_t)s->m, 1)))
                return vp__fail(err, VP_ENOMEM, "out of memory");
            (*out)[(size_t)op->stage * (size_t)s->m + (size_t)op->mb] = 1;
        }
    return VP_OK;
}

double vp__host_peak(const vp_schedule *s, const uint8_t *offloaded, int d, const double *off) {
    double cur = 0.0, peak = 0.0;
    for (int k = 0; offloaded && k < s->dev[d].n; k++) {
        const vp_op *op = &s->dev[d].ops[k];
        int f = op->kind == VP_OP_F || op->kind == VP_OP_FB;
        if (f && offloaded[(size_t)op->stage * (size_t)s->m + (size_t)op->mb])
            cur += off[op->stage];
        else if (op->kind == VP_OP_L)
            cur -= off[op->stage];
        if (cur > peak)
            peak = cur;
    }
    return isfinite(cur) ? peak : NAN;
}

vp_status vp_schedule_host_peak(const vp_schedule *s, double *peak, vp_error *err) {
    double v = s->placement == VP_PLACE_BIDIR ? 1.0 : (double)s->S / (double)s->p;
    uint8_t *offloaded = NULL;
    double *off = vp__calloc((size_t)s->S, sizeof *off);
    vp_status rc =
        off ? vp__offloaded(s, &offloaded, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; off && i < s->S; i++)
        off[i] = s->offload[i] / v;
    for (int d = 0; d < s->p; d++)
        peak[d] = rc == VP_OK ? vp__host_peak(s, offloaded, d, off) : 0.0;
    free(offloaded);
    free(off);
    return rc;
}

/* ---- recomputation ---- */

vp_status vp_schedule_copy_shape(const vp_schedule *s, vp_schedule **out, vp_error *err) {
    vp_shape shape = {.p = s->p, .S = s->S, .m = s->m, .placement = VP_PLACE_CUSTOM};
    vp_status rc = vp_schedule_new(s->family, shape, out, err);
    if (rc != VP_OK)
        return rc;
    vp_schedule *c = *out;
    c->placement = s->placement;
    c->route_len = s->route_len;
    c->recompute = s->recompute;
    c->host_limit = s->host_limit;
    c->vocab_parallel = s->vocab_parallel;
    memcpy(c->offload, s->offload, (size_t)s->S * sizeof *s->offload);
    memcpy(c->stage_device, s->stage_device, (size_t)s->S * sizeof *s->stage_device);
    memcpy(c->stage_chunk, s->stage_chunk, (size_t)s->S * sizeof *s->stage_chunk);
    memcpy(c->mb_first, s->mb_first, (size_t)s->m * sizeof *s->mb_first);
    return VP_OK;
}

/* The (stage, mb) whose backward op runs, or stage -1 when op runs none. */
static vp_op backward_of(const vp_op *op) {
    vp_op r = {.kind = VP_OP_R, .stage = -1};
    if (op->kind == VP_OP_B || op->kind == VP_OP_BW)
        r.stage = op->stage, r.mb = op->mb;
    else if (op->kind == VP_OP_FB)
        r.stage = op->stage2, r.mb = op->mb2;
    return r;
}

vp_status vp_schedule_recompute(const vp_schedule *s, vp_recompute mode, vp_schedule **out,
                                vp_error *err) {
    *out = NULL;
    if ((unsigned)mode > VP_RECOMPUTE_FULL)
        return vp__fail(err, VP_EINVAL, "unknown recomputation %d", (int)mode);
    vp_schedule *c = NULL;
    vp_status rc = vp_schedule_copy_shape(s, &c, err);
    if (rc != VP_OK)
        return rc;
    c->recompute = mode;
    for (int d = 0; rc == VP_OK && d < s->p; d++)
        for (int k = 0; rc == VP_OK && k < s->dev[d].n; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            vp_op r = backward_of(op);
            if (mode != VP_RECOMPUTE_NONE && r.stage >= 0)
                rc = vp_schedule_push(c, d, r);
            if (rc == VP_OK && op->kind != VP_OP_R)
                rc = vp_schedule_push(c, d, *op);
        }
    if (rc != VP_OK) {
        vp_schedule_free(c);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    *out = c;
    return VP_OK;
}

/* ---- names ---- */

static const char *const recompute_names[] = {"none", "selective", "full"};

vp_status vp_recompute_parse(const char *text, vp_recompute *out, vp_error *err) {
    for (int i = 0; i <= VP_RECOMPUTE_FULL; i++)
        if (!strcmp(text, recompute_names[i])) {
            *out = (vp_recompute)i;
            return VP_OK;
        }
    return vp__fail(err, VP_EINVAL, "unknown recomputation '%s' (none, selective or full)", text);
}

const char *vp_recompute_name(vp_recompute r) {
    return (unsigned)r <= VP_RECOMPUTE_FULL ? recompute_names[r] : "?";
}

static const char *const op_kind_names[VP_OP_KIND_COUNT] = {"F",  "B",  "W", "BW", "F&B", "R",
                                                            "EF", "EB", "S", "T",  "O",   "L"};
static const char *const placement_names[VP_PLACE_CUSTOM + 1] = {"single", "loop", "v", "bidir",
                                                                 "custom"};

const char *vp_op_kind_name(vp_op_kind kind) {
    return (unsigned)kind < VP_OP_KIND_COUNT ? op_kind_names[kind] : "?";
}

/* Index of name among names[0..n), or -1. */
static int name_index(const char *name, const char *const *names, int n) {
    for (int k = 0; k < n; k++)
        if (!strcmp(name, names[k]))
            return k;
    return -1;
}

vp_status vp_op_kind_parse(const char *name, vp_op_kind *kind) {
    int k = name_index(name, op_kind_names, VP_OP_KIND_COUNT);
    if (k < 0)
        return VP_EINVAL;
    *kind = (vp_op_kind)k;
    return VP_OK;
}

vp_status vp_placement_parse(const char *name, vp_placement_kind *placement) {
    int k = name_index(name, placement_names, VP_PLACE_CUSTOM + 1);
    if (k < 0)
        return VP_EINVAL;
    *placement = (vp_placement_kind)k;
    return VP_OK;
}

const char *vp_placement_name(vp_placement_kind placement) {
    return (unsigned)placement <= VP_PLACE_CUSTOM ? placement_names[placement] : "?";
}

char *vp_op_format(const vp_op *op, char *buf, int size) {
    if (op->kind == VP_OP_FB)
        snprintf(buf, (size_t)size, "F%d.%d&%s%d.%d", op->stage, op->mb,
                 vp_op_kind_name((vp_op_kind)op->bkind), op->stage2, op->mb2);
    else
        snprintf(buf, (size_t)size, "%s%d.%d", vp_op_kind_name((vp_op_kind)op->kind), op->stage,
                 op->mb);
    return buf;
}
