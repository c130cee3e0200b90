/* Checkpoints: atomic, versioned, checksummed rank files and their commit record (the
 * format and the protocol are described in vpipe/checkpoint.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"
#include "vpipe/checkpoint.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint tensors are stored as little-endian floats"
#endif

static const char MAGIC[8] = {'V', 'P', 'I', 'P', 'E', 'C', 'K', 'P'};
enum { HEADER_BYTES = 144, SLICE_BYTES = 16, TRAILER_BYTES = 8, PATH_BYTES = 4096 };
#define META_NAME "meta.json"
#define META_FORMAT "vpipe-checkpoint"
/* Why version 1 is refused. */
#define OLD_FORMAT                                                                                 \
    "; version 1 stored each rank's stages, written by an older vpipe: resume it with that "       \
    "vpipe, or start again"

/* ---- little-endian fields ----------------------------------------------------------- */

static void le32(uint8_t *b, uint32_t v) {
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *b, uint64_t v) {
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t rd32(const uint8_t *b) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)b[i] << (8 * i);
    return v;
}

static uint64_t rd64(const uint8_t *b) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

static int32_t rdi32(const uint8_t *b) {
    uint32_t u = rd32(b);
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static void lef32(uint8_t *b, float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    le32(b, u);
}

static void lef64(uint8_t *b, double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    le64(b, u);
}

static float rdf32(const uint8_t *b) {
    uint32_t u = rd32(b);
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static double rdf64(const uint8_t *b) {
    uint64_t u = rd64(b);
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ---- the header --------------------------------------------------------------------- */

/* Offsets of the header fields (see vpipe/checkpoint.h). */
enum {
    AT_VERSION = 8,
    AT_TOTAL = 16,
    AT_MODEL = 24,
    AT_PART = 48,
    AT_STEP = 56,
    AT_DATA = 64,
    AT_SEED = 72,
    AT_M = 80,
    AT_LR = 96,
    AT_ADAMW = 120,
    AT_SLICES = 136
};

static void encode_header(uint8_t *h, const vp_checkpoint_info *in, uint64_t total) {
    const vp_checkpoint_run *o = &in->run;
    const vp_model_config *c = &o->model;
    memset(h, 0, HEADER_BYTES);
    memcpy(h, MAGIC, sizeof MAGIC);
    le32(h + AT_VERSION, VP_CHECKPOINT_VERSION);
    le64(h + AT_TOTAL, total);
    const int model[6] = {c->n_layer, c->width, c->n_head, c->seq_len, c->microbatch, c->vocab};
    for (int i = 0; i < 6; i++)
        le32(h + AT_MODEL + 4 * i, (uint32_t)model[i]);
    le32(h + AT_PART, (uint32_t)in->part);
    le32(h + AT_PART + 4, (uint32_t)in->n_parts);
    le64(h + AT_STEP, (uint64_t)in->step);
    le64(h + AT_DATA, in->data_pos);
    le64(h + AT_SEED, o->seed);
    const int ints[4] = {o->m, o->steps, o->warmup, (int)o->schedule};
    for (int i = 0; i < 4; i++)
        le32(h + AT_M + 4 * i, (uint32_t)ints[i]);
    lef64(h + AT_LR, o->lr);
    lef64(h + AT_LR + 8, o->min_lr);
    lef64(h + AT_LR + 16, o->clip);
    const float adamw[4] = {o->adamw.beta1, o->adamw.beta2, o->adamw.eps, o->adamw.weight_decay};
    for (int i = 0; i < 4; i++)
        lef32(h + AT_ADAMW + 4 * i, adamw[i]);
    le32(h + AT_SLICES, (uint32_t)in->n_slices);
}

static void decode_header(const uint8_t *h, vp_checkpoint_info *out) {
    memset(out, 0, sizeof *out);
    vp_checkpoint_run *o = &out->run;
    out->version = (int)rd32(h + AT_VERSION);
    vp_model_config *c = &o->model;
    int *model[6] = {&c->n_layer, &c->width, &c->n_head, &c->seq_len, &c->microbatch, &c->vocab};
    for (int i = 0; i < 6; i++)
        *model[i] = rdi32(h + AT_MODEL + 4 * i);
    out->part = rdi32(h + AT_PART);
    out->n_parts = rdi32(h + AT_PART + 4);
    uint64_t step = rd64(h + AT_STEP);
    out->step = step > INT_MAX ? -1 : (int)step;
    o->seed = rd64(h + AT_SEED);
    out->data_pos = rd64(h + AT_DATA);
    o->m = rdi32(h + AT_M);
    o->steps = rdi32(h + AT_M + 4);
    o->warmup = rdi32(h + AT_M + 8);
    o->schedule = rdi32(h + AT_M + 12) == 1 ? VP_LR_CONSTANT : VP_LR_COSINE;
    o->lr = rdf64(h + AT_LR);
    o->min_lr = rdf64(h + AT_LR + 8);
    o->clip = rdf64(h + AT_LR + 16);
    o->adamw = (vp_adamw){rdf32(h + AT_ADAMW), rdf32(h + AT_ADAMW + 4), rdf32(h + AT_ADAMW + 8),
                          rdf32(h + AT_ADAMW + 12)};
    out->n_slices = rdi32(h + AT_SLICES);
}

/* The whole model's element count (cfg checked). */
static size_t model_elements(const vp_model_config *cfg) {
    vp_stage_sizes sz;
    vp_stage_sizes_of(cfg, (vp_stage_range){0, cfg->n_layer, true, true, 0, 0}, &sz, NULL);
    return sz.param_bytes / sizeof(float);
}

/* One slice as found in a file: elements [offset, offset + count) of the whole model. */
typedef struct slice {
    size_t offset, count;
    const uint8_t *data; /* params, m, v: 3 * count little-endian floats */
} slice;

/* Reads and checks slice k at *off (slices end at end) of a model of total elements,
 * advancing *off. */
static vp_status read_slice(const uint8_t *b, size_t end, size_t *off, int k, size_t total,
                            const char *name, slice *sl, vp_error *err) {
    if (end - *off < SLICE_BYTES)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: slice %d runs past the end", name, k);
    const uint8_t *p = b + *off;
    uint64_t offset = rd64(p), count = rd64(p + 8);
    if (count < 1 || offset >= total || count > total - offset)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: slice %d holds elements [%llu, +%llu), outside the "
                        "model's %zu",
                        name, k, (unsigned long long)offset, (unsigned long long)count, total);
    *off += SLICE_BYTES;
    if ((end - *off) / (3 * sizeof(float)) < count)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: slice %d runs past the end", name, k);
    *sl = (slice){(size_t)offset, (size_t)count, p + SLICE_BYTES};
    *off += 3 * sizeof(float) * count;
    return VP_OK;
}

static const char *const ARRAY_NAMES[3] = {"parameter", "AdamW first moment",
                                           "AdamW second moment"};

/* Index of the first of n little-endian floats at bytes that is not finite; n if none. */
static size_t nonfinite_at(const uint8_t *bytes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, bytes + i * sizeof x, sizeof x);
        if (!isfinite(x))
            return i;
    }
    return n;
}

/* The fields of header h, decoded into *in, are in range (after the checksum held). */
static vp_status check_header(const uint8_t *h, const vp_checkpoint_info *in, const char *name,
                              vp_error *err) {
    const vp_checkpoint_run *o = &in->run;
    int32_t schedule = rdi32(h + AT_M + 12);
    vp_error why = {0};
    if (vp_model_config_check(&o->model, &why) != VP_OK)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: bad model: %s", name, why.message);
    if (in->n_parts < 1 || in->part < 0 || in->part >= in->n_parts)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: bad part %d of %d", name, in->part,
                        in->n_parts);
    if (in->step < 0 || in->n_slices < 0)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: bad step %d or slice count %d", name,
                        in->step, in->n_slices);
    if (o->m < 1 || o->steps < 1 || o->warmup < 0 || !isfinite(o->lr) || !isfinite(o->min_lr) ||
        !isfinite(o->clip))
        return vp__fail(err, VP_EPARSE, "checkpoint %s: bad training options", name);
    if (schedule != 0 && schedule != 1)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: unknown learning-rate schedule %d", name,
                        schedule);
    return VP_OK;
}

vp_status vp_checkpoint_parse(const void *bytes, size_t size, const char *name,
                              vp_checkpoint_info *info, vp_error *err) {
    const uint8_t *b = bytes;
    size_t min = HEADER_BYTES + TRAILER_BYTES;
    size_t head = size < sizeof MAGIC ? size : sizeof MAGIC;
    if (size == 0 || memcmp(b, MAGIC, head) != 0)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: not a vpipe checkpoint (bad magic)", name);
    if (size < min)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: truncated (%zu bytes; the header alone takes %zu)", name,
                        size, min);
    uint32_t version = rd32(b + AT_VERSION);
    if (version != VP_CHECKPOINT_VERSION)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: unsupported version %u (this vpipe reads version %d%s)",
                        name, version, VP_CHECKPOINT_VERSION, version == 1 ? OLD_FORMAT : "");
    uint64_t total = rd64(b + AT_TOTAL);
    uint64_t stored = rd64(b + size - TRAILER_BYTES);
    uint64_t computed = vp_digest(b, size - TRAILER_BYTES, VP_DIGEST_INIT);
    if (stored != computed && total > size)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: truncated (%zu of the %llu bytes its header announces)",
                        name, size, (unsigned long long)total);
    if (stored != computed)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: checksum mismatch (stored %016llx, computed %016llx): "
                        "the file is corrupt",
                        name, (unsigned long long)stored, (unsigned long long)computed);
    if (total != size)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: %zu bytes, its header announces %llu", name,
                        size, (unsigned long long)total);
    vp_checkpoint_info in;
    decode_header(b, &in);
    vp_status st = check_header(b, &in, name, err);
    size_t off = HEADER_BYTES, end = size - TRAILER_BYTES;
    size_t elements = st == VP_OK ? model_elements(&in.run.model) : 0;
    for (int k = 0; st == VP_OK && k < in.n_slices; k++) {
        slice sl;
        st = read_slice(b, end, &off, k, elements, name, &sl, err);
        for (int a = 0; st == VP_OK && a < 3; a++) {
            size_t i = nonfinite_at(sl.data + a * sl.count * sizeof(float), sl.count);
            if (i != sl.count)
                st = vp__fail(err, VP_EPARSE, "checkpoint %s: slice %d: %s %zu is not finite", name,
                              k, ARRAY_NAMES[a], sl.offset + i);
        }
    }
    if (st == VP_OK && off != end)
        st = vp__fail(err, VP_EPARSE, "checkpoint %s: %zu unexpected bytes after the slices", name,
                      end - off);
    if (st == VP_OK && info)
        *info = in;
    return st;
}

/* ---- checks against the run --------------------------------------------------------- */

/* The first trajectory option that differs between the checkpoint (a) and the run (b). */
static vp_status compare_options(const vp_checkpoint_run *a, const vp_checkpoint_run *b,
                                 const char *name, vp_error *err) {
    const vp_model_config *x = &a->model, *y = &b->model;
    const struct {
        const char *what;
        double there, here;
    } f[] = {
        {"layers", x->n_layer, y->n_layer},
        {"width", x->width, y->width},
        {"heads", x->n_head, y->n_head},
        {"seq", x->seq_len, y->seq_len},
        {"microbatch", x->microbatch, y->microbatch},
        {"vocab", x->vocab, y->vocab},
        {"microbatches per step (the global batch, m)", a->m, b->m},
        {"steps", a->steps, b->steps},
        {"warmup", a->warmup, b->warmup},
        {"lr schedule (0 cosine, 1 constant)", a->schedule, b->schedule},
        {"lr", a->lr, b->lr},
        {"min lr", a->min_lr, b->min_lr},
        {"clip", a->clip, b->clip},
        {"adamw beta1", a->adamw.beta1, b->adamw.beta1},
        {"adamw beta2", a->adamw.beta2, b->adamw.beta2},
        {"adamw eps", a->adamw.eps, b->adamw.eps},
        {"weight decay", a->adamw.weight_decay, b->adamw.weight_decay},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].there != f[i].here)
            return vp__fail(err, VP_EINVAL,
                            "checkpoint %s belongs to another run: %s is %.17g there, %.17g here",
                            name, f[i].what, f[i].there, f[i].here);
    if (a->seed != b->seed)
        return vp__fail(err, VP_EINVAL,
                        "checkpoint %s belongs to another run: seed is %llu there, %llu here", name,
                        (unsigned long long)a->seed, (unsigned long long)b->seed);
    return VP_OK;
}

/* ---- restoring: the slices of every part into a reader's stages ----------------------- */

/* A stage of the reader's part and the staging copy of what it receives. */
typedef struct target {
    vp_stage *stage;
    vp_stage_state s;
    size_t offset;         /* the stage's start in the whole model's arrays */
    float *params, *m, *v; /* staging: [s.n], [held], [held] */
} target;

/* Elements [offset, offset + count) of the whole model. */
typedef struct span {
    size_t offset, count;
} span;

/* A restore in progress: the run, the targets, and every slice seen so far (they must
 * tile the model). Stages change only in loader_commit, after every check passed. */
typedef struct loader {
    const vp_checkpoint_run *run;
    size_t elements; /* of the whole model */
    target *t;
    int n;
    span *seen;
    int n_seen, cap_seen;
} loader;

static void loader_free(loader *ld) {
    for (int k = 0; ld->t && k < ld->n; k++) {
        free(ld->t[k].params);
        free(ld->t[k].m);
        free(ld->t[k].v);
    }
    free(ld->t);
    free(ld->seen);
}

static vp_status loader_init(loader *ld, const vp_checkpoint_run *run,
                             const vp_checkpoint_part *part, vp_error *err) {
    *ld = (loader){.run = run, .n = part->n_stages};
    vp_status st = vp_model_config_check(&run->model, err);
    if (st != VP_OK)
        return st;
    ld->elements = model_elements(&run->model);
    ld->t = vp__calloc((size_t)ld->n, sizeof *ld->t);
    if (!ld->t)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int k = 0; st == VP_OK && k < ld->n; k++) {
        target *t = &ld->t[k];
        t->stage = part->stages[k];
        t->s = vp_stage_state_of(t->stage);
        st = vp_stage_offset_of(&run->model, t->s.range, &t->offset, NULL);
        if (st != VP_OK || t->offset + t->s.n > ld->elements)
            return vp__fail(err, VP_EINVAL, "stage %d is not a stage of the run's model", k);
        size_t held = t->s.held.hi - t->s.held.lo;
        t->params = vp__calloc(t->s.n, sizeof(float));
        t->m = vp__calloc(held, sizeof(float));
        t->v = vp__calloc(held, sizeof(float));
        if (!t->params || !t->m || !t->v)
            st = vp__fail(err, VP_ENOMEM, "out of memory");
    }
    return st;
}

/* Copies the part of array a (0 params, 1 m, 2 v) of sl within elements [lo, hi) of the
 * whole model into dst, whose first element is element lo. */
static void copy_overlap(float *dst, size_t lo, size_t hi, const slice *sl, int a) {
    size_t from = sl->offset > lo ? sl->offset : lo;
    size_t to = sl->offset + sl->count < hi ? sl->offset + sl->count : hi;
    if (from < to)
        memcpy(dst + (from - lo), sl->data + (a * sl->count + (from - sl->offset)) * sizeof(float),
               (to - from) * sizeof(float));
}

/* Takes one part file's slices into the targets, after parsing it and checking it
 * against the run and, when expect is given, the commit record (whose part k it is). */
static vp_status loader_add(loader *ld, const uint8_t *b, size_t size, const char *name,
                            const vp_checkpoint_meta *expect, int k, vp_error *err) {
    vp_checkpoint_info in;
    vp_status st = vp_checkpoint_parse(b, size, name, &in, err);
    if (st != VP_OK)
        return st;
    if (expect && (in.step != expect->step || in.data_pos != expect->data_pos || in.part != k ||
                   in.n_parts != expect->n_parts))
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s holds part %d of %d at step %d (data position %llu), "
                        "its " META_NAME " says part %d of %d at step %d (data position %llu)",
                        name, in.part, in.n_parts, in.step, (unsigned long long)in.data_pos, k,
                        expect->n_parts, expect->step, (unsigned long long)expect->data_pos);
    st = compare_options(&in.run, ld->run, name, err);
    if (st == VP_OK && vp__grow((void **)&ld->seen, &ld->cap_seen, ld->n_seen + in.n_slices,
                                sizeof *ld->seen) != 0)
        st = vp__fail(err, VP_ENOMEM, "out of memory");
    size_t off = HEADER_BYTES;
    for (int i = 0; st == VP_OK && i < in.n_slices; i++) {
        slice sl;
        read_slice(b, size - TRAILER_BYTES, &off, i, ld->elements, name, &sl, NULL);
        ld->seen[ld->n_seen++] = (span){sl.offset, sl.count};
        for (int j = 0; j < ld->n; j++) {
            const target *t = &ld->t[j];
            copy_overlap(t->params, t->offset, t->offset + t->s.n, &sl, 0);
            copy_overlap(t->m, t->offset + t->s.held.lo, t->offset + t->s.held.hi, &sl, 1);
            copy_overlap(t->v, t->offset + t->s.held.lo, t->offset + t->s.held.hi, &sl, 2);
        }
    }
    return st;
}

static int by_offset(const void *a, const void *b) {
    size_t x = ((const span *)a)->offset, y = ((const span *)b)->offset;
    return x < y ? -1 : x > y;
}

/* The slices seen tile the whole model: none missing, none twice. */
static vp_status loader_check(loader *ld, const char *where, vp_error *err) {
    qsort(ld->seen, (size_t)ld->n_seen, sizeof *ld->seen, by_offset);
    size_t next = 0;
    for (int i = 0; i < ld->n_seen; i++) {
        const span *sp = &ld->seen[i];
        if (sp->offset < next)
            return vp__fail(
                err, VP_EPARSE, "checkpoint %s holds elements [%zu, %zu) of the model twice", where,
                sp->offset, next < sp->offset + sp->count ? next : sp->offset + sp->count);
        if (sp->offset > next)
            break;
        next = sp->offset + sp->count;
    }
    if (next != ld->elements)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s lacks elements from %zu of the model's %zu (a part is "
                        "missing)",
                        where, next, ld->elements);
    return VP_OK;
}

/* Copies the staged state into the stages and zeroes their gradients. */
static void loader_commit(loader *ld) {
    for (int k = 0; k < ld->n; k++) {
        const target *t = &ld->t[k];
        size_t held = t->s.held.hi - t->s.held.lo;
        memcpy(t->s.params, t->params, t->s.n * sizeof(float));
        memcpy(t->s.adam_m, t->m, held * sizeof(float));
        memcpy(t->s.adam_v, t->v, held * sizeof(float));
        vp_stage_zero_grad(t->stage);
    }
}

vp_status vp_checkpoint_restore(const void *bytes, size_t size, const char *name,
                                const vp_checkpoint_run *o, const vp_checkpoint_part *part,
                                vp_error *err) {
    loader ld;
    vp_status st = loader_init(&ld, o, part, err);
    if (st == VP_OK)
        st = loader_add(&ld, bytes, size, name, NULL, 0, err);
    if (st == VP_OK)
        st = loader_check(&ld, name, err);
    if (st == VP_OK)
        loader_commit(&ld);
    loader_free(&ld);
    return st;
}

/* ---- the commit record -------------------------------------------------------------- */

/* An integer member of the commit record within [lo, hi]. */
static vp_status meta_int(json_t *root, const char *key, json_int_t lo, json_int_t hi,
                          const char *name, json_int_t *out, vp_error *err) {
    json_t *v = json_object_get(root, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint record %s: \"%s\" must be an integer in [%lld, %lld]", name,
                        key, (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return VP_OK;
}

/* A string member of the commit record's shape, shorter than size, into out. */
static vp_status meta_string(json_t *obj, const char *key, const char *name, char *out, size_t size,
                             vp_error *err) {
    const char *v = json_string_value(json_object_get(obj, key));
    if (!v || strlen(v) >= size)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint record %s: \"shape\".\"%s\" must be a string of fewer than "
                        "%zu bytes",
                        name, key, size);
    snprintf(out, size, "%s", v);
    return VP_OK;
}

/* The "shape" member of the commit record. */
static vp_status meta_shape(json_t *root, const char *name, vp_checkpoint_shape *shape,
                            vp_error *err) {
    json_t *obj = json_object_get(root, "shape");
    json_int_t p = 0, dp = 0, zero = 0;
    if (!json_is_object(obj))
        return vp__fail(err, VP_EPARSE, "checkpoint record %s: \"shape\" must be an object", name);
    vp_status st = meta_int(obj, "p", 1, 1 << 20, name, &p, err);
    if (st == VP_OK)
        st = meta_int(obj, "dp", 1, 1 << 20, name, &dp, err);
    if (st == VP_OK)
        st = meta_int(obj, "zero", 0, 1, name, &zero, err);
    if (st == VP_OK)
        st = meta_string(obj, "schedule", name, shape->schedule, sizeof shape->schedule, err);
    if (st == VP_OK)
        st = meta_string(obj, "transport", name, shape->transport, sizeof shape->transport, err);
    shape->p = (int)p;
    shape->dp = (int)dp;
    shape->zero = (int)zero;
    return st;
}

vp_status vp_checkpoint_meta_parse(const char *text, size_t len, const char *name,
                                   vp_checkpoint_meta *meta, vp_error *err) {
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return vp__fail_at(err, VP_EPARSE, jerr.line, jerr.column, "checkpoint record %s: %s", name,
                           jerr.text);
    json_int_t version = 0, step = 0, data_pos = 0, parts = 0;
    const char *format = json_string_value(json_object_get(root, "format"));
    vp_status st = VP_OK;
    if (!json_is_object(root) || !format || strcmp(format, META_FORMAT) != 0)
        st = vp__fail(err, VP_EPARSE,
                      "checkpoint record %s: not a vpipe checkpoint record "
                      "(\"format\" is not \"" META_FORMAT "\")",
                      name);
    if (st == VP_OK)
        st = meta_int(root, "version", 0, INT_MAX, name, &version, err);
    if (st == VP_OK && version != VP_CHECKPOINT_VERSION)
        st = vp__fail(err, VP_EPARSE,
                      "checkpoint record %s: unsupported version %lld (this vpipe reads "
                      "version %d%s)",
                      name, (long long)version, VP_CHECKPOINT_VERSION,
                      version == 1 ? OLD_FORMAT : "");
    if (st == VP_OK)
        st = meta_int(root, "step", 0, INT_MAX, name, &step, err);
    if (st == VP_OK)
        st = meta_int(root, "data_position", 0, LLONG_MAX, name, &data_pos, err);
    if (st == VP_OK)
        st = meta_int(root, "parts", 1, 1 << 20, name, &parts, err);
    vp_checkpoint_shape shape = {0};
    if (st == VP_OK)
        st = meta_shape(root, name, &shape, err);
    json_decref(root);
    if (st == VP_OK)
        *meta = (vp_checkpoint_meta){(int)step, (uint64_t)data_pos, (int)parts, shape};
    return st;
}

/* ---- files ---------------------------------------------------------------------------- */

/* dir/name into buf; VP_EINVAL when it does not fit. */
static vp_status join(char *buf, const char *dir, const char *name, vp_error *err) {
    int n = snprintf(buf, PATH_BYTES, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_BYTES)
        return vp__fail(err, VP_EINVAL, "checkpoint path %s/%s is too long", dir, name);
    return VP_OK;
}

static void part_file_name(char *buf, size_t size, int part, int step) {
    snprintf(buf, size, "part-%d.step-%d.ckpt", part, step);
}

/* Creates dir (one level) when missing. */
static vp_status make_dir(const char *dir, vp_error *err) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return vp__fail(err, VP_EIO, "cannot create checkpoint directory %s: %s", dir,
                        strerror(errno));
    return VP_OK;
}

vp_status vp_checkpoint_prepare(const char *dir, vp_error *err) {
    if (!dir)
        return vp__fail(err, VP_EINVAL, "no checkpoint directory");
    vp_status st = make_dir(dir, err);
    char name[64], path[PATH_BYTES];
    snprintf(name, sizeof name, ".vpipe-probe.%ld", (long)getpid());
    if (st == VP_OK)
        st = join(path, dir, name, err);
    if (st != VP_OK)
        return st;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0)
        return vp__fail(err, VP_EIO, "cannot write to checkpoint directory %s: %s", dir,
                        strerror(errno));
    close(fd);
    unlink(path);
    return VP_OK;
}

/* Streams bytes into an atomic write, hashing them. */
typedef struct writer {
    vp__atomic *file;
    uint64_t hash;
} writer;

static void put(writer *w, const void *bytes, size_t n) {
    w->hash = vp_digest(bytes, n, w->hash);
    vp__atomic_write(w->file, bytes, n);
}

typedef void (*producer)(writer *w, const void *ctx);

/* Writes dir/name atomically through dir/name.tmp (vp__atomic_*), creating dir (one
 * level) when missing: on failure no file is left and dir/name is as it was. */
static vp_status write_atomic(const char *dir, const char *name, producer produce, const void *ctx,
                              vp_error *err) {
    char path[PATH_BYTES], tmp[PATH_BYTES + 8];
    vp_status st = join(path, dir, name, err);
    if (st != VP_OK)
        return st;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    st = make_dir(dir, err);
    if (st != VP_OK)
        return st;
    writer w = {NULL, VP_DIGEST_INIT};
    vp_error why = {0};
    st = vp__atomic_open(path, tmp, &w.file, &why);
    if (st == VP_OK) {
        produce(&w, ctx);
        st = vp__atomic_commit(w.file, &why);
    }
    if (st != VP_OK)
        return vp__fail(err, st, "cannot write checkpoint %s", why.message);
    return VP_OK;
}

/* Bytes of the part file that holds the slices of stages. */
static size_t part_file_bytes(vp_stage *const *stages, int n_stages) {
    size_t total = HEADER_BYTES + TRAILER_BYTES;
    for (int k = 0; k < n_stages; k++) {
        vp_stage_state s = vp_stage_state_of(stages[k]);
        if (s.held.hi > s.held.lo)
            total += SLICE_BYTES + 3 * sizeof(float) * (s.held.hi - s.held.lo);
    }
    return total;
}

/* What a part file holds: the stages' slices, each at offsets[k] of the whole model. */
typedef struct part_file {
    vp_checkpoint_info info;
    vp_stage *const *stages;
    int n_stages;
    const size_t *offsets;
} part_file;

static void produce_part(writer *w, const void *ctx) {
    const part_file *pf = ctx;
    uint8_t h[HEADER_BYTES];
    encode_header(h, &pf->info, part_file_bytes(pf->stages, pf->n_stages));
    put(w, h, sizeof h);
    for (int k = 0; k < pf->n_stages; k++) {
        vp_stage_state s = vp_stage_state_of(pf->stages[k]);
        size_t n = s.held.hi - s.held.lo, bytes = n * sizeof(float);
        if (n == 0)
            continue; /* an empty shard */
        uint8_t r[SLICE_BYTES];
        le64(r, (uint64_t)(pf->offsets[k] + s.held.lo));
        le64(r + 8, (uint64_t)n);
        put(w, r, sizeof r);
        put(w, s.params + s.held.lo, bytes);
        put(w, s.adam_m, bytes);
        put(w, s.adam_v, bytes);
    }
    uint8_t t[TRAILER_BYTES];
    le64(t, w->hash);
    put(w, t, sizeof t);
}

/* VP_ERUNTIME naming the first non-finite number of a slice the stages write. */
static vp_status check_finite(vp_stage *const *stages, int n_stages, int step, vp_error *err) {
    for (int k = 0; k < n_stages; k++) {
        vp_stage_state s = vp_stage_state_of(stages[k]);
        size_t n = s.held.hi - s.held.lo;
        const float *arrays[3] = {s.params + s.held.lo, s.adam_m, s.adam_v};
        for (int a = 0; a < 3; a++) {
            size_t i = nonfinite_at((const uint8_t *)arrays[a], n);
            if (i != n)
                return vp__fail(err, VP_ERUNTIME,
                                "refusing to checkpoint step %d: %s %zu of stage %d is %g", step,
                                ARRAY_NAMES[a], s.held.lo + i, k, (double)arrays[a][i]);
        }
    }
    return VP_OK;
}

vp_status vp_checkpoint_write_part(const char *dir, const vp_checkpoint_run *o,
                                   const vp_checkpoint_part *part, int step, uint64_t data_pos,
                                   vp_error *err) {
    int n_stages = part->n_stages;
    if (!dir || !o || (n_stages && !part->stages) || n_stages < 0 || part->n_parts < 1 ||
        part->part < 0 || part->part >= part->n_parts || step < 0)
        return vp__fail(err, VP_EINVAL,
                        "bad checkpoint arguments (part %d of %d, step %d, %d stages)", part->part,
                        part->n_parts, step, n_stages);
    vp_status st = check_finite(part->stages, n_stages, step, err);
    size_t *offsets = vp__calloc((size_t)n_stages, sizeof *offsets);
    if (st == VP_OK && !offsets)
        st = vp__fail(err, VP_ENOMEM, "out of memory");
    for (int k = 0; st == VP_OK && k < n_stages; k++)
        st = vp_stage_offset_of(&o->model, vp_stage_state_of(part->stages[k]).range, &offsets[k],
                                err);
    part_file pf = {.info = {.part = part->part,
                             .n_parts = part->n_parts,
                             .step = step,
                             .data_pos = data_pos,
                             .run = *o},
                    .stages = part->stages,
                    .n_stages = n_stages,
                    .offsets = offsets};
    for (int k = 0; k < n_stages; k++) {
        vp_stage_state s = vp_stage_state_of(part->stages[k]);
        pf.info.n_slices += s.held.hi > s.held.lo;
    }
    char name[64];
    part_file_name(name, sizeof name, part->part, step);
    if (st == VP_OK)
        st = write_atomic(dir, name, produce_part, &pf, err);
    free(offsets);
    return st;
}

static void produce_text(writer *w, const void *ctx) {
    put(w, ctx, strlen(ctx));
}

/* The commit record as JSON text with a final newline (caller frees), or NULL. */
static char *meta_text(const vp_checkpoint_meta *m) {
    json_t *files = json_array();
    for (int k = 0; files && k < m->n_parts; k++) {
        char name[64];
        part_file_name(name, sizeof name, k, m->step);
        json_array_append_new(files, json_string(name));
    }
    const vp_checkpoint_shape *sh = &m->shape;
    json_t *root = json_pack("{s:s, s:i, s:i, s:I, s:i, s:o, s:{s:i, s:i, s:i, s:s, s:s}}",
                             "format", META_FORMAT, "version", VP_CHECKPOINT_VERSION, "step",
                             m->step, "data_position", (json_int_t)m->data_pos, "parts", m->n_parts,
                             "files", files, "shape", "p", sh->p, "dp", sh->dp, "zero", sh->zero,
                             "schedule", sh->schedule, "transport", sh->transport);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    size_t n = text ? strlen(text) : 0;
    char *line = text ? realloc(text, n + 2) : NULL;
    if (!line) {
        free(text);
        return NULL;
    }
    memcpy(line + n, "\n", 2);
    return line;
}

vp_status vp_checkpoint_commit(const char *dir, const vp_checkpoint_meta *m, vp_error *err) {
    const vp_checkpoint_shape *sh = m ? &m->shape : NULL;
    if (!dir || !m || m->n_parts < 1 || m->step < 0 || m->data_pos > (uint64_t)LLONG_MAX ||
        sh->p < 1 || sh->dp < 1 || (sh->zero != 0 && sh->zero != 1) ||
        !memchr(sh->schedule, 0, sizeof sh->schedule) ||
        !memchr(sh->transport, 0, sizeof sh->transport))
        return vp__fail(err, VP_EINVAL, "bad checkpoint commit (%d parts, step %d)",
                        m ? m->n_parts : 0, m ? m->step : 0);
    char *line = meta_text(m);
    if (!line)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status st = write_atomic(dir, META_NAME, produce_text, line, err);
    free(line);
    return st;
}

/* Whether name is a part file, part-<k>.step-<s>.ckpt, or that plus ".tmp" (*tmp set);
 * *step receives s. */
static bool part_file_match(const char *name, int *step, bool *tmp) {
    int k, s, used = 0;
    if (sscanf(name, "part-%d.step-%d.ckpt%n", &k, &s, &used) != 2 || used == 0 || k < 0 || s < 0)
        return false;
    *tmp = !strcmp(name + used, ".tmp");
    *step = s;
    return *tmp || name[used] == '\0';
}

vp_status vp_checkpoint_prune(const char *dir, int step, vp_error *err) {
    DIR *d = opendir(dir);
    if (!d)
        return vp__fail(err, VP_EIO, "cannot read checkpoint directory %s: %s", dir,
                        strerror(errno));
    vp_status st = VP_OK;
    struct dirent *e;
    while (st == VP_OK && (e = readdir(d)) != NULL) {
        int s;
        bool tmp;
        if (!part_file_match(e->d_name, &s, &tmp) || (s == step && !tmp))
            continue;
        char path[PATH_BYTES];
        st = join(path, dir, e->d_name, err);
        if (st == VP_OK && unlink(path) != 0 && errno != ENOENT)
            st =
                vp__fail(err, VP_EIO, "cannot remove old checkpoint %s: %s", path, strerror(errno));
    }
    closedir(d);
    return st;
}

vp_status vp_checkpoint_save(const char *dir, const vp_checkpoint_run *o,
                             const vp_checkpoint_part *part, const vp_checkpoint_meta *meta,
                             vp_error *err) {
    if (part->part != 0 || part->n_parts != 1 || meta->n_parts != 1)
        return vp__fail(err, VP_EINVAL, "saving in one go takes the whole run (part 0 of 1)");
    vp_status st = vp_checkpoint_write_part(dir, o, part, meta->step, meta->data_pos, err);
    if (st == VP_OK)
        st = vp_checkpoint_commit(dir, meta, err);
    if (st == VP_OK)
        st = vp_checkpoint_prune(dir, meta->step, err);
    return st;
}

/* ---- loading -------------------------------------------------------------------------- */

vp_status vp_checkpoint_latest(const char *dir, vp_checkpoint_meta *meta, vp_error *err) {
    char path[PATH_BYTES];
    vp_status st = join(path, dir, META_NAME, err);
    char *text = NULL;
    size_t len = 0;
    vp_error why = {0};
    if (st == VP_OK && vp_read_file(path, 0, &text, &len, &why) != VP_OK)
        st = vp__fail(err, VP_EIO, "no checkpoint in %s (%s)", dir, why.message);
    if (st == VP_OK)
        st = vp_checkpoint_meta_parse(text, len, path, meta, err);
    free(text);
    return st;
}

/* Reads part k of the commit record m in dir into the loader. */
static vp_status load_part(loader *ld, const char *dir, const vp_checkpoint_meta *m, int k,
                           vp_error *err) {
    char name[64], path[PATH_BYTES];
    part_file_name(name, sizeof name, k, m->step);
    vp_status st = join(path, dir, name, err);
    if (st != VP_OK)
        return st;
    char *bytes = NULL;
    /* a regular file (never a device), read whole: a checkpoint of a large model may pass
     * the 1 GiB default of vp_read_file, and the file's own header says what it holds */
    size_t size = 0, most = SIZE_MAX / 4;
    vp_error why = {0};
    if (vp_read_file(path, most, &bytes, &size, &why) != VP_OK)
        return vp__fail(err, why.status, "checkpoint: %s", why.message);
    st = loader_add(ld, (const uint8_t *)bytes, size, path, m, k, err);
    free(bytes);
    return st;
}

vp_status vp_checkpoint_load(const char *dir, const vp_checkpoint_run *o,
                             const vp_checkpoint_part *part, vp_checkpoint_meta *meta,
                             vp_error *err) {
    vp_checkpoint_meta m;
    vp_status st = vp_checkpoint_latest(dir, &m, err);
    if (st != VP_OK)
        return st;
    loader ld;
    st = loader_init(&ld, o, part, err);
    for (int k = 0; st == VP_OK && k < m.n_parts; k++)
        st = load_part(&ld, dir, &m, k, err);
    if (st == VP_OK)
        st = loader_check(&ld, dir, err);
    if (st == VP_OK)
        loader_commit(&ld);
    loader_free(&ld);
    if (st == VP_OK && meta)
        *meta = m;
    return st;
}
