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
enum { HEADER_BYTES = 144, RECORD_BYTES = 24, TRAILER_BYTES = 8, PATH_BYTES = 4096 };
#define META_NAME "meta.json"
#define META_FORMAT "vpipe-checkpoint"

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
    AT_RANK = 48,
    AT_STEP = 56,
    AT_DATA = 64,
    AT_SEED = 72,
    AT_M = 80,
    AT_LR = 96,
    AT_ADAMW = 120,
    AT_STAGES = 136
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
    le32(h + AT_RANK, (uint32_t)in->rank);
    le32(h + AT_RANK + 4, (uint32_t)in->n_ranks);
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
    le32(h + AT_STAGES, (uint32_t)in->n_stages);
}

static void decode_header(const uint8_t *h, vp_checkpoint_info *out) {
    memset(out, 0, sizeof *out);
    vp_checkpoint_run *o = &out->run;
    out->version = (int)rd32(h + AT_VERSION);
    vp_model_config *c = &o->model;
    int *model[6] = {&c->n_layer, &c->width, &c->n_head, &c->seq_len, &c->microbatch, &c->vocab};
    for (int i = 0; i < 6; i++)
        *model[i] = rdi32(h + AT_MODEL + 4 * i);
    out->rank = rdi32(h + AT_RANK);
    out->n_ranks = rdi32(h + AT_RANK + 4);
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
    out->n_stages = rdi32(h + AT_STAGES);
}

/* One stage record as found in a file. */
typedef struct record {
    vp_stage_range range;
    size_t count;        /* parameters */
    const uint8_t *data; /* params, m, v: 3 * count little-endian floats */
} record;

/* Reads and checks stage record k at *off (records end at end), advancing *off. */
static vp_status read_record(const uint8_t *b, size_t end, size_t *off, int k,
                             const vp_model_config *cfg, const char *name, record *r,
                             vp_error *err) {
    if (end - *off < RECORD_BYTES)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: stage record %d runs past the end", name,
                        k);
    const uint8_t *p = b + *off;
    int32_t first = rdi32(p + 8), last = rdi32(p + 12);
    uint64_t count = rd64(p + 16);
    *r = (record){{rdi32(p), rdi32(p + 4), first == 1, last == 1}, 0, p + RECORD_BYTES};
    if ((first != 0 && first != 1) || (last != 0 && last != 1))
        return vp__fail(err, VP_EPARSE, "checkpoint %s: stage record %d: bad first/last flags",
                        name, k);
    vp_stage_sizes sz;
    vp_error why = {0};
    if (vp_stage_sizes_of(cfg, r->range, &sz, &why) != VP_OK)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: stage record %d: %s", name, k, why.message);
    if (count != sz.param_bytes / sizeof(float))
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s: stage record %d holds %llu parameters, layers [%d, %d) "
                        "of its model have %zu",
                        name, k, (unsigned long long)count, r->range.l0, r->range.l1,
                        sz.param_bytes / sizeof(float));
    r->count = (size_t)count;
    size_t avail = end - *off - RECORD_BYTES;
    if (r->count > avail / (3 * sizeof(float)))
        return vp__fail(err, VP_EPARSE, "checkpoint %s: stage record %d runs past the end", name,
                        k);
    *off += RECORD_BYTES + 3 * sizeof(float) * r->count;
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
    if (in->n_ranks < 1 || in->rank < 0 || in->rank >= in->n_ranks)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: bad rank %d of %d", name, in->rank,
                        in->n_ranks);
    if (in->step < 0 || in->n_stages < 1)
        return vp__fail(err, VP_EPARSE, "checkpoint %s: bad step %d or stage count %d", name,
                        in->step, in->n_stages);
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
                        "checkpoint %s: unsupported version %u (this vpipe reads version %d)", name,
                        version, VP_CHECKPOINT_VERSION);
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
    for (int k = 0; st == VP_OK && k < in.n_stages; k++) {
        record r;
        st = read_record(b, end, &off, k, &in.run.model, name, &r, err);
        for (int a = 0; st == VP_OK && a < 3; a++) {
            size_t i = nonfinite_at(r.data + a * r.count * sizeof(float), r.count);
            if (i != r.count)
                st =
                    vp__fail(err, VP_EPARSE, "checkpoint %s: stage record %d: %s %zu is not finite",
                             name, k, ARRAY_NAMES[a], i);
        }
    }
    if (st == VP_OK && off != end)
        st = vp__fail(err, VP_EPARSE, "checkpoint %s: %zu unexpected bytes after the stages", name,
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
        {"microbatches per step (m)", a->m, b->m},
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

/* Parses, checks against the run (and the commit record when expect is given), then
 * copies: stages change only when every check passed. */
static vp_status restore(const uint8_t *b, size_t size, const char *name,
                         const vp_checkpoint_run *o, const vp_checkpoint_part *part,
                         const vp_checkpoint_meta *expect, vp_error *err) {
    int rank = part->rank, n_ranks = part->n_ranks, n_stages = part->n_stages;
    vp_stage *const *stages = part->stages;
    vp_checkpoint_info in;
    vp_status st = vp_checkpoint_parse(b, size, name, &in, err);
    if (st != VP_OK)
        return st;
    if (expect && (in.step != expect->step || in.data_pos != expect->data_pos))
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s holds step %d (data position %llu), its " META_NAME
                        " says step %d (data position %llu)",
                        name, in.step, (unsigned long long)in.data_pos, expect->step,
                        (unsigned long long)expect->data_pos);
    st = compare_options(&in.run, o, name, err);
    if (st != VP_OK)
        return st;
    if (in.rank != rank || in.n_ranks != n_ranks)
        return vp__fail(err, VP_EINVAL, "checkpoint %s is rank %d of %d, this is rank %d of %d",
                        name, in.rank, in.n_ranks, rank, n_ranks);
    if (in.n_stages != n_stages)
        return vp__fail(err, VP_EINVAL, "checkpoint %s holds %d stages, this rank has %d", name,
                        in.n_stages, n_stages);
    for (int pass = 0; pass < 2; pass++) { /* check every stage, then copy */
        size_t off = HEADER_BYTES;
        for (int k = 0; k < n_stages; k++) {
            record r;
            vp_stage_state s = vp_stage_state_of(stages[k]);
            read_record(b, size - TRAILER_BYTES, &off, k, &in.run.model, name, &r, NULL);
            vp_stage_range there = r.range, here = s.range;
            bool same = there.l0 == here.l0 && there.l1 == here.l1 && there.first == here.first &&
                        there.last == here.last;
            if (pass == 0 && !same)
                return vp__fail(err, VP_EINVAL,
                                "checkpoint %s: stage %d holds layers [%d, %d)%s%s there, "
                                "[%d, %d)%s%s here",
                                name, k, there.l0, there.l1, there.first ? " +embeddings" : "",
                                there.last ? " +head" : "", here.l0, here.l1,
                                here.first ? " +embeddings" : "", here.last ? " +head" : "");
            if (pass == 0)
                continue;
            size_t bytes = r.count * sizeof(float);
            memcpy(s.params, r.data, bytes);
            memcpy(s.adam_m, r.data + bytes, bytes);
            memcpy(s.adam_v, r.data + 2 * bytes, bytes);
            vp_stage_zero_grad(stages[k]);
        }
    }
    return VP_OK;
}

vp_status vp_checkpoint_restore(const void *bytes, size_t size, const char *name,
                                const vp_checkpoint_run *o, const vp_checkpoint_part *part,
                                vp_error *err) {
    return restore(bytes, size, name, o, part, NULL, err);
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

vp_status vp_checkpoint_meta_parse(const char *text, size_t len, const char *name,
                                   vp_checkpoint_meta *meta, vp_error *err) {
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return vp__fail_at(err, VP_EPARSE, jerr.line, jerr.column, "checkpoint record %s: %s", name,
                           jerr.text);
    json_int_t version = 0, step = 0, data_pos = 0, ranks = 0;
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
                      "version %d)",
                      name, (long long)version, VP_CHECKPOINT_VERSION);
    if (st == VP_OK)
        st = meta_int(root, "step", 0, INT_MAX, name, &step, err);
    if (st == VP_OK)
        st = meta_int(root, "data_position", 0, LLONG_MAX, name, &data_pos, err);
    if (st == VP_OK)
        st = meta_int(root, "ranks", 1, 1 << 20, name, &ranks, err);
    json_decref(root);
    if (st == VP_OK)
        *meta = (vp_checkpoint_meta){(int)step, (uint64_t)data_pos, (int)ranks};
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

static void rank_file_name(char *buf, size_t size, int rank, int step) {
    snprintf(buf, size, "rank-%d.step-%d.ckpt", rank, step);
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

/* Bytes of the rank file that holds stages. */
static size_t rank_file_bytes(vp_stage *const *stages, int n_stages) {
    size_t total = HEADER_BYTES + TRAILER_BYTES;
    for (int k = 0; k < n_stages; k++)
        total += RECORD_BYTES + 3 * sizeof(float) * vp_stage_state_of(stages[k]).n;
    return total;
}

/* What a rank file holds. */
typedef struct rank_file {
    vp_checkpoint_info info;
    vp_stage *const *stages;
} rank_file;

static void produce_rank(writer *w, const void *ctx) {
    const rank_file *rf = ctx;
    uint8_t h[HEADER_BYTES];
    encode_header(h, &rf->info, rank_file_bytes(rf->stages, rf->info.n_stages));
    put(w, h, sizeof h);
    for (int k = 0; k < rf->info.n_stages; k++) {
        vp_stage_state s = vp_stage_state_of(rf->stages[k]);
        uint8_t r[RECORD_BYTES];
        const int fields[4] = {s.range.l0, s.range.l1, s.range.first, s.range.last};
        for (int i = 0; i < 4; i++)
            le32(r + 4 * i, (uint32_t)fields[i]);
        le64(r + 16, (uint64_t)s.n);
        put(w, r, sizeof r);
        size_t bytes = s.n * sizeof(float);
        put(w, s.params, bytes);
        put(w, s.adam_m, bytes);
        put(w, s.adam_v, bytes);
    }
    uint8_t t[TRAILER_BYTES];
    le64(t, w->hash);
    put(w, t, sizeof t);
}

/* VP_ERUNTIME naming the first non-finite number a stage's state holds. */
static vp_status check_finite(vp_stage *const *stages, int n_stages, int step, vp_error *err) {
    for (int k = 0; k < n_stages; k++) {
        vp_stage_state s = vp_stage_state_of(stages[k]);
        const float *arrays[3] = {s.params, s.adam_m, s.adam_v};
        for (int a = 0; a < 3; a++) {
            size_t i = nonfinite_at((const uint8_t *)arrays[a], s.n);
            if (i != s.n)
                return vp__fail(err, VP_ERUNTIME,
                                "refusing to checkpoint step %d: %s %zu of stage %d is %g", step,
                                ARRAY_NAMES[a], i, k, (double)arrays[a][i]);
        }
    }
    return VP_OK;
}

vp_status vp_checkpoint_write_rank(const char *dir, const vp_checkpoint_run *o,
                                   const vp_checkpoint_part *part, int step, uint64_t data_pos,
                                   vp_error *err) {
    int rank = part->rank, n_ranks = part->n_ranks, n_stages = part->n_stages;
    vp_stage *const *stages = part->stages;
    if (!dir || !o || !stages || n_stages < 1 || n_ranks < 1 || rank < 0 || rank >= n_ranks ||
        step < 0)
        return vp__fail(err, VP_EINVAL,
                        "bad checkpoint arguments (rank %d of %d, step %d, %d "
                        "stages)",
                        rank, n_ranks, step, n_stages);
    vp_status st = check_finite(stages, n_stages, step, err);
    if (st != VP_OK)
        return st;
    rank_file rf = {.info = {.rank = rank,
                             .n_ranks = n_ranks,
                             .step = step,
                             .data_pos = data_pos,
                             .n_stages = n_stages,
                             .run = *o},
                    .stages = stages};
    char name[64];
    rank_file_name(name, sizeof name, rank, step);
    return write_atomic(dir, name, produce_rank, &rf, err);
}

static void produce_text(writer *w, const void *ctx) {
    put(w, ctx, strlen(ctx));
}

vp_status vp_checkpoint_commit(const char *dir, int n_ranks, int step, uint64_t data_pos,
                               vp_error *err) {
    if (!dir || n_ranks < 1 || step < 0 || data_pos > (uint64_t)LLONG_MAX)
        return vp__fail(err, VP_EINVAL, "bad checkpoint commit (%d ranks, step %d)", n_ranks, step);
    json_t *files = json_array();
    for (int r = 0; files && r < n_ranks; r++) {
        char name[64];
        rank_file_name(name, sizeof name, r, step);
        json_array_append_new(files, json_string(name));
    }
    json_t *root = json_pack("{s:s, s:i, s:i, s:I, s:i, s:o}", "format", META_FORMAT, "version",
                             VP_CHECKPOINT_VERSION, "step", step, "data_position",
                             (json_int_t)data_pos, "ranks", n_ranks, "files", files);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    if (!text)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    memcpy(line + n, "\n", 2);
    vp_status st = write_atomic(dir, META_NAME, produce_text, line, err);
    free(line);
    return st;
}

/* Whether name is one of rank's files: rank-<rank>.step-<s>.ckpt, or that plus ".tmp"
 * (*tmp set); *step receives s. */
static bool rank_file_match(const char *name, int rank, int *step, bool *tmp) {
    char prefix[32];
    int n = snprintf(prefix, sizeof prefix, "rank-%d.step-", rank);
    if (strncmp(name, prefix, (size_t)n) != 0)
        return false;
    const char *p = name + n;
    if (*p < '0' || *p > '9')
        return false;
    char *end;
    long s = strtol(p, &end, 10);
    if (s > INT_MAX || strncmp(end, ".ckpt", 5) != 0)
        return false;
    *tmp = !strcmp(end + 5, ".tmp");
    *step = (int)s;
    return *tmp || end[5] == '\0';
}

vp_status vp_checkpoint_prune(const char *dir, int rank, int step, vp_error *err) {
    DIR *d = opendir(dir);
    if (!d)
        return vp__fail(err, VP_EIO, "cannot read checkpoint directory %s: %s", dir,
                        strerror(errno));
    vp_status st = VP_OK;
    struct dirent *e;
    while (st == VP_OK && (e = readdir(d)) != NULL) {
        int s;
        bool tmp;
        if (!rank_file_match(e->d_name, rank, &s, &tmp) || (s == step && !tmp))
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
                             const vp_checkpoint_part *part, int step, uint64_t data_pos,
                             vp_error *err) {
    if (part->rank != 0 || part->n_ranks != 1)
        return vp__fail(err, VP_EINVAL, "saving in one go takes the whole run (rank 0 of 1)");
    vp_status st = vp_checkpoint_write_rank(dir, o, part, step, data_pos, err);
    if (st == VP_OK)
        st = vp_checkpoint_commit(dir, 1, step, data_pos, err);
    if (st == VP_OK)
        st = vp_checkpoint_prune(dir, 0, step, err);
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

vp_status vp_checkpoint_load(const char *dir, const vp_checkpoint_run *o,
                             const vp_checkpoint_part *part, vp_checkpoint_meta *meta,
                             vp_error *err) {
    vp_checkpoint_meta m;
    vp_status st = vp_checkpoint_latest(dir, &m, err);
    if (st != VP_OK)
        return st;
    if (m.n_ranks != part->n_ranks)
        return vp__fail(err, VP_EINVAL,
                        "checkpoint %s was written by a run on %d ranks, this run has %d", dir,
                        m.n_ranks, part->n_ranks);
    char name[64], path[PATH_BYTES];
    rank_file_name(name, sizeof name, part->rank, m.step);
    st = join(path, dir, name, err);
    if (st != VP_OK)
        return st;
    char *bytes = NULL;
    /* a regular file (never a device), read whole: a checkpoint of a large model may pass
     * the 1 GiB default of vp_read_file, and the file's own header says what it holds */
    size_t size = 0, most = SIZE_MAX / 4;
    vp_error why = {0};
    if (vp_read_file(path, most, &bytes, &size, &why) != VP_OK)
        return vp__fail(err, why.status, "checkpoint: %s", why.message);
    st = restore((const uint8_t *)bytes, size, path, o, part, &m, err);
    free(bytes);
    if (st == VP_OK && meta)
        *meta = m;
    return st;
}
