/* Part files: the header, and the reader that checks a file as it streams past in
 * constant memory (checkpoint_internal.h; the format is in vpipe/checkpoint.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/checkpoint_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint tensors are stored as little-endian floats"
#endif

static const char MAGIC[8] = {'V', 'P', 'I', 'P', 'E', 'C', 'K', 'P'};
enum { CHUNK = 1 << 16 }; /* bytes read at a time */

const char *const vp__ckpt_array_names[3] = {"parameter", "AdamW first moment",
                                             "AdamW second moment"};

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
    AT_DATA_POS = 64,
    AT_SEED = 72,
    AT_M = 80,
    AT_LR = 96,
    AT_ADAMW = 120,
    AT_SLICES = 136,
    AT_DATA = 144
};

void vp__ckpt_encode_header(uint8_t *h, const vp_checkpoint_info *in, uint64_t total) {
    const vp_checkpoint_run *o = &in->run;
    const vp_model_config *c = &o->model;
    memset(h, 0, VP__CKPT_HEADER);
    memcpy(h, MAGIC, sizeof MAGIC);
    le32(h + AT_VERSION, VP_CHECKPOINT_VERSION);
    le64(h + AT_TOTAL, total);
    const int model[6] = {c->n_layer, c->width, c->n_head, c->seq_len, c->microbatch, c->vocab};
    for (int i = 0; i < 6; i++)
        le32(h + AT_MODEL + 4 * i, (uint32_t)model[i]);
    le32(h + AT_PART, (uint32_t)in->part);
    le32(h + AT_PART + 4, (uint32_t)in->n_parts);
    le64(h + AT_STEP, (uint64_t)in->step);
    le64(h + AT_DATA_POS, in->data_pos);
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
    le64(h + AT_DATA, o->data_bytes);
    le64(h + AT_DATA + 8, o->data_digest);
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
    out->data_pos = rd64(h + AT_DATA_POS);
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
    o->data_bytes = rd64(h + AT_DATA);
    o->data_digest = rd64(h + AT_DATA + 8);
}

/* The whole model's element count (cfg checked). */
static size_t model_elements(const vp_model_config *cfg) {
    vp_stage_sizes sz;
    vp_stage_sizes_of(cfg, (vp_stage_range){.l1 = cfg->n_layer, .first = true, .last = true}, &sz,
                      NULL);
    return sz.param_bytes / sizeof(float);
}

uint64_t vp__ckpt_max_bytes(const vp_model_config *cfg) {
    return VP__CKPT_HEADER + VP__CKPT_TRAILER +
           (uint64_t)model_elements(cfg) * (VP__CKPT_SLICE + 3 * sizeof(float));
}

size_t vp__ckpt_nonfinite_at(const uint8_t *bytes, size_t n) {
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

/* ---- reading ------------------------------------------------------------------------ */

/* Reads the n bytes at offset `at` of the source (within its size) into dst. */
static vp_status src_read(const vp__ckpt_source *s, uint64_t at, void *dst, size_t n,
                          vp_error *err) {
    if (s->mem) {
        memcpy(dst, s->mem + at, n);
        return VP_OK;
    }
    for (size_t done = 0; done < n;) {
        ssize_t got = pread(s->fd, (char *)dst + done, n - done, (off_t)(at + done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return vp__fail(err, VP_EIO, "checkpoint %s: %s", s->name, strerror(errno));
        if (got == 0)
            return vp__fail(err, VP_EPARSE, "checkpoint %s: truncated while being read", s->name);
        done += (size_t)got;
    }
    return VP_OK;
}

/* FNV-1a 64 (vp_digest) of the first n bytes of the source, read a chunk at a time. */
static vp_status src_digest(const vp__ckpt_source *s, uint64_t n, uint8_t *buf, uint64_t *hash,
                            vp_error *err) {
    *hash = VP_DIGEST_INIT;
    vp_status rc = VP_OK;
    for (uint64_t at = 0; rc == VP_OK && at < n; at += CHUNK) {
        size_t k = n - at < CHUNK ? (size_t)(n - at) : CHUNK;
        rc = src_read(s, at, buf, k, err);
        if (rc == VP_OK)
            *hash = vp_digest(buf, k, *hash);
    }
    return rc;
}

/* Why version v is not read (with the detail of the older versions). */
static vp_status bad_version(const char *name, uint32_t v, vp_error *err) {
    return vp__fail(
        err, VP_EPARSE, "checkpoint %s: unsupported version %u (this vpipe reads version %d%s)",
        name, v, VP_CHECKPOINT_VERSION,
        v == 1   ? "; version 1 stored each rank's stages, written by an older vpipe: resume it "
                   "with that vpipe, or start again"
        : v == 2 ? "; version 2 does not record the training data, written by an older vpipe: "
                   "resume it with that vpipe, or start again"
                 : "");
}

/* Magic, version and length of the file whose first bytes are h, before anything else
 * is read: its size must be the one its header announces, within limit (0: none; past
 * it, *too_large is set). */
static vp_status check_frame(const vp__ckpt_source *s, const uint8_t *h, uint64_t limit,
                             bool *too_large, vp_error *err) {
    const char *name = s->name;
    uint64_t size = s->size, min = VP__CKPT_HEADER + VP__CKPT_TRAILER;
    if (size == 0 || memcmp(h, MAGIC, size < sizeof MAGIC ? size : sizeof MAGIC) != 0)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: not a vpipe checkpoint (bad magic)", name);
    if (size < min)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: truncated (%llu bytes; the header alone takes %llu)", name,
                        (unsigned long long)size, (unsigned long long)min);
    uint32_t version = rd32(h + AT_VERSION);
    if (version != VP_CHECKPOINT_VERSION)
        return bad_version(name, version, err);
    uint64_t total = rd64(h + AT_TOTAL);
    if (total > size)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: truncated (%llu of the %llu bytes its header announces)",
                        name, (unsigned long long)size, (unsigned long long)total);
    if (total != size)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: %llu bytes, its header announces %llu",
                        name, (unsigned long long)size, (unsigned long long)total);
    *too_large = limit && size > limit;
    if (*too_large)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: %llu bytes, more than any checkpoint of the run's model "
                        "holds (%llu)",
                        name, (unsigned long long)size, (unsigned long long)limit);
    return VP_OK;
}

/* The checksum of every byte before the trailer against the trailer. */
static vp_status check_sum(const vp__ckpt_source *s, uint8_t *buf, vp_error *err) {
    uint64_t end = s->size - VP__CKPT_TRAILER, computed = 0;
    uint8_t t[VP__CKPT_TRAILER];
    vp_status rc = src_digest(s, end, buf, &computed, err);
    if (rc == VP_OK)
        rc = src_read(s, end, t, sizeof t, err);
    if (rc == VP_OK && rd64(t) != computed)
        rc = vp__fail(err, VP_EPARSE,
                      "checkpoint %s: checksum mismatch (stored %016llx, computed %016llx): "
                      "the file is corrupt",
                      s->name, (unsigned long long)rd64(t), (unsigned long long)computed);
    return rc;
}

/* Reads slice k's record at *off (the slices end at end) of a model of total elements,
 * advancing *off past the record: [*at, *at + *count). */
static vp_status slice_record(const vp__ckpt_source *s, uint64_t end, uint64_t *off, int k,
                              size_t total, size_t *at, size_t *count, vp_error *err) {
    uint8_t r[VP__CKPT_SLICE];
    if (end - *off < VP__CKPT_SLICE)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: slice %d runs past the end", s->name, k);
    vp_status rc = src_read(s, *off, r, sizeof r, err);
    if (rc != VP_OK)
        return rc;
    uint64_t offset = rd64(r), n = rd64(r + 8);
    if (n < 1 || offset >= total || n > total - offset)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: slice %d holds elements [%llu, +%llu), outside the "
                        "model's %zu",
                        s->name, k, (unsigned long long)offset, (unsigned long long)n, total);
    *off += VP__CKPT_SLICE;
    if ((end - *off) / (3 * sizeof(float)) < n)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: slice %d runs past the end", s->name, k);
    *at = (size_t)offset;
    *count = (size_t)n;
    return VP_OK;
}

/* Streams the three arrays of slice k ([at, at + n), its floats from *off) to sink,
 * checking that every number is finite. */
static vp_status slice_arrays(const vp__ckpt_source *s, uint64_t *off, int k, size_t at, size_t n,
                              const vp__ckpt_sink *sink, uint8_t *buf, vp_error *err) {
    const size_t per = CHUNK / sizeof(float);
    for (int a = 0; a < 3; a++)
        for (size_t done = 0; done < n;) {
            size_t c = n - done < per ? n - done : per;
            vp_status rc = src_read(s, *off, buf, c * sizeof(float), err);
            if (rc != VP_OK)
                return rc;
            size_t i = vp__ckpt_nonfinite_at(buf, c);
            if (i != c)
                return vp__fail(err, VP_EPARSE, "checkpoint %s: slice %d: %s %zu is not finite",
                                s->name, k, vp__ckpt_array_names[a], at + done + i);
            if (sink && sink->floats)
                sink->floats(sink->ctx, a, at + done, c, buf);
            *off += c * sizeof(float);
            done += c;
        }
    return VP_OK;
}

/* The header's fields and every slice, after the frame and the checksum held. */
static vp_status read_body(const vp__ckpt_source *s, const uint8_t *h, const vp__ckpt_sink *sink,
                           vp_checkpoint_info *in, uint8_t *buf, vp_error *err) {
    decode_header(h, in);
    vp_status rc = check_header(h, in, s->name, err);
    if (rc == VP_OK && sink && sink->header)
        rc = sink->header(sink->ctx, in, err);
    size_t elements = rc == VP_OK ? model_elements(&in->run.model) : 0;
    uint64_t off = VP__CKPT_HEADER, end = s->size - VP__CKPT_TRAILER;
    for (int k = 0; rc == VP_OK && k < in->n_slices; k++) {
        size_t at = 0, n = 0;
        rc = slice_record(s, end, &off, k, elements, &at, &n, err);
        if (rc == VP_OK && sink && sink->slice)
            rc = sink->slice(sink->ctx, at, n, err);
        if (rc == VP_OK)
            rc = slice_arrays(s, &off, k, at, n, sink, buf, err);
    }
    if (rc == VP_OK && off != end)
        rc = vp__fail(err, VP_EPARSE, "checkpoint %s: %llu unexpected bytes after the slices",
                      s->name, (unsigned long long)(end - off));
    return rc;
}

vp_status vp__ckpt_read(const vp__ckpt_source *src, uint64_t limit, const vp__ckpt_sink *sink,
                        vp_checkpoint_info *info, vp_error *err) {
    uint8_t h[VP__CKPT_HEADER] = {0};
    size_t head = src->size < VP__CKPT_HEADER ? (size_t)src->size : VP__CKPT_HEADER;
    bool too_large = false;
    vp_status rc = src_read(src, 0, h, head, err);
    if (rc == VP_OK)
        rc = check_frame(src, h, limit, &too_large, err);
    vp_checkpoint_info in;
    if (too_large && sink && sink->header) {
        /* too large for the run's model: when the header names another run, say that */
        decode_header(h, &in);
        vp_error other = {0};
        if (sink->header(sink->ctx, &in, &other) != VP_OK) {
            if (err)
                *err = other;
            return other.status;
        }
    }
    uint8_t *buf = rc == VP_OK ? malloc(CHUNK) : NULL;
    if (rc == VP_OK && !buf)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc == VP_OK)
        rc = check_sum(src, buf, err);
    if (rc == VP_OK)
        rc = read_body(src, h, sink, &in, buf, err);
    free(buf);
    if (rc == VP_OK && info)
        *info = in;
    return rc;
}

vp_status vp_checkpoint_parse(const void *bytes, size_t size, const char *name,
                              vp_checkpoint_info *info, vp_error *err) {
    const vp__ckpt_source src = {name, size ? bytes : (const uint8_t *)"", -1, size};
    return vp__ckpt_read(&src, 0, NULL, info, err);
}
