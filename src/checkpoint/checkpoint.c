/* Checkpoint directories: the lock a run holds, writing part files and the commit
 * record atomically, pruning, and restoring stages from the parts of any shape (the
 * format and the protocol are described in vpipe/checkpoint.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint_internal.h"

enum { PATH_BYTES = 4096 };
#define LOCK_NAME ".vpipe-lock"

/* ---- the directory ------------------------------------------------------------------- */

/* dir/name into buf; VP_EINVAL when it does not fit. */
static vp_status join(char *buf, const char *dir, const char *name, vp_error *err) {
    int n = snprintf(buf, PATH_BYTES, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_BYTES)
        return vp__fail(err, VP_EINVAL, "checkpoint path %s/%s is too long", dir, name);
    return VP_OK;
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
    char path[PATH_BYTES];
    vp_status st = make_dir(dir, err);
    if (st == VP_OK)
        st = join(path, dir, ".vpipe-probe.XXXXXX", err);
    if (st != VP_OK)
        return st;
    int fd = mkstemp(path);
    if (fd < 0)
        return vp__fail(err, VP_EIO, "cannot write to checkpoint directory %s: %s", dir,
                        strerror(errno));
    close(fd);
    unlink(path);
    return VP_OK;
}

struct vp_checkpoint_lock {
    int fd;     /* DIR/.vpipe-lock, locked */
    char *path; /* removed on release */
};

/* Locks the lock file at path (vp_file_hold) into *fd; VP_EIO naming the run (pid and
 * host) that holds dir. The holder removes the file before it lets go. */
static vp_status lock_file(const char *dir, const char *path, int *fd, vp_error *err) {
    bool created, busy;
    if (vp_file_hold(path, fd, &created, &busy, err) == VP_OK)
        return VP_OK;
    if (!busy)
        return vp__fail(err, VP_EIO, "cannot lock checkpoint directory %s: %s", dir, err->message);
    char *who = NULL;
    size_t len = 0;
    if (vp_read_file(path, 128, &who, &len, NULL) == VP_OK)
        who[strcspn(who, "\n")] = '\0';
    vp_status rc = vp__fail(err, VP_EIO,
                            "checkpoint directory %s is in use by %s (another run saving there: "
                            "two runs in one directory would destroy each other's checkpoints)",
                            dir, who && who[0] ? who : "another run");
    free(who);
    return rc;
}

/* Records this process (pid and host) in the lock file fd it locked. */
static void record_holder(int fd) {
    char host[64] = "", line[128];
    gethostname(host, sizeof host - 1);
    int n = snprintf(line, sizeof line, "pid %ld on %s\n", (long)getpid(), host);
    if (ftruncate(fd, 0) == 0 && n > 0 && pwrite(fd, line, (size_t)n, 0) != n)
        (void)ftruncate(fd, 0); /* an unreadable record only loses the pid in a message */
}

/* Whether paths a and b name the same directory. */
static bool same_dir(const char *a, const char *b) {
    struct stat x, y;
    return b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

/* VP_EINVAL when dir holds a committed checkpoint the run would replace. */
static vp_status check_fresh(const char *dir, const char *resume_dir, bool replace, vp_error *err) {
    char path[PATH_BYTES];
    struct stat st;
    vp_status rc = join(path, dir, VP__CKPT_META, err);
    if (rc != VP_OK || replace || same_dir(dir, resume_dir) || lstat(path, &st) != 0)
        return rc;
    vp_checkpoint_meta meta;
    char step[32] = "";
    if (vp_checkpoint_latest(dir, &meta, NULL) == VP_OK)
        snprintf(step, sizeof step, " (step %d)", meta.step);
    return vp__fail(err, VP_EINVAL,
                    "checkpoint directory %s already holds a checkpoint%s: a new run would "
                    "replace it; resume from it (--resume %s), or allow replacing it "
                    "(--overwrite)",
                    dir, step, dir);
}

vp_status vp_checkpoint_acquire(const char *dir, const char *resume_dir, bool replace,
                                vp_checkpoint_lock **out, vp_error *err) {
    *out = NULL;
    char path[PATH_BYTES];
    vp_status rc = dir ? make_dir(dir, err) : vp__fail(err, VP_EINVAL, "no checkpoint directory");
    if (rc == VP_OK)
        rc = join(path, dir, LOCK_NAME, err);
    int fd = -1;
    if (rc == VP_OK)
        rc = lock_file(dir, path, &fd, err);
    if (rc != VP_OK)
        return rc;
    record_holder(fd);
    vp_checkpoint_lock *lock = malloc(sizeof *lock);
    char *copy = strdup(path);
    rc = lock && copy ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
    if (lock)
        *lock = (vp_checkpoint_lock){fd, copy};
    if (rc == VP_OK)
        rc = vp_checkpoint_prepare(dir, err);
    if (rc == VP_OK)
        rc = check_fresh(dir, resume_dir, replace, err);
    if (rc != VP_OK) {
        if (lock)
            vp_checkpoint_release(lock);
        else {
            unlink(path);
            close(fd);
            free(copy);
        }
        return rc;
    }
    *out = lock;
    return VP_OK;
}

void vp_checkpoint_release(vp_checkpoint_lock *lock) {
    if (!lock)
        return;
    if (lock->path)
        unlink(lock->path); /* while still held: see lock_file */
    close(lock->fd);
    free(lock->path);
    free(lock);
}

/* ---- saving --------------------------------------------------------------------------- */

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

/* Writes dir/name atomically through a temporary file of its own (vp__atomic_*),
 * creating dir (one level) when missing: on failure no file is left and dir/name is as
 * it was. */
static vp_status write_atomic(const char *dir, const char *name, producer produce, const void *ctx,
                              vp_error *err) {
    char path[PATH_BYTES];
    vp_status st = join(path, dir, name, err);
    if (st == VP_OK)
        st = make_dir(dir, err);
    if (st != VP_OK)
        return st;
    writer w = {NULL, VP_DIGEST_INIT};
    vp_error why = {0};
    st = vp__atomic_open(path, &w.file, &why);
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
    size_t total = VP__CKPT_HEADER + VP__CKPT_TRAILER;
    for (int k = 0; k < n_stages; k++) {
        vp_stage_state s = vp_stage_state_of(stages[k]);
        if (s.held.hi > s.held.lo)
            total += VP__CKPT_SLICE + 3 * sizeof(float) * (s.held.hi - s.held.lo);
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
    uint8_t h[VP__CKPT_HEADER];
    vp__ckpt_encode_header(h, &pf->info, part_file_bytes(pf->stages, pf->n_stages));
    put(w, h, sizeof h);
    for (int k = 0; k < pf->n_stages; k++) {
        vp_stage_state s = vp_stage_state_of(pf->stages[k]);
        size_t n = s.held.hi - s.held.lo, bytes = n * sizeof(float);
        if (n == 0)
            continue; /* an empty shard */
        uint8_t r[VP__CKPT_SLICE];
        uint64_t at = pf->offsets[k] + s.held.lo;
        for (int i = 0; i < 8; i++) {
            r[i] = (uint8_t)(at >> (8 * i));
            r[8 + i] = (uint8_t)((uint64_t)n >> (8 * i));
        }
        put(w, r, sizeof r);
        put(w, s.params + s.held.lo, bytes);
        put(w, s.adam_m, bytes);
        put(w, s.adam_v, bytes);
    }
    uint8_t t[VP__CKPT_TRAILER];
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(w->hash >> (8 * i));
    put(w, t, sizeof t);
}

/* VP_ERUNTIME naming the first non-finite number of a slice the stages write. */
static vp_status check_finite(vp_stage *const *stages, int n_stages, int step, vp_error *err) {
    for (int k = 0; k < n_stages; k++) {
        vp_stage_state s = vp_stage_state_of(stages[k]);
        size_t n = s.held.hi - s.held.lo;
        const float *arrays[3] = {s.params + s.held.lo, s.adam_m, s.adam_v};
        for (int a = 0; a < 3; a++) {
            size_t i = vp__ckpt_nonfinite_at((const uint8_t *)arrays[a], n);
            if (i != n)
                return vp__fail(err, VP_ERUNTIME,
                                "refusing to checkpoint step %d: %s %zu of stage %d is %g", step,
                                vp__ckpt_array_names[a], s.held.lo + i, k, (double)arrays[a][i]);
        }
    }
    return VP_OK;
}

vp_status vp_checkpoint_write_part(const char *dir, const vp_checkpoint_run *o,
                                   const vp_checkpoint_part *part, int step, uint64_t data_pos,
                                   vp_error *err) {
    int n_stages = part->n_stages;
    if (!dir || !o || (n_stages && !part->stages) || n_stages < 0 || part->n_parts < 1 ||
        part->n_parts > VP__CKPT_MAX_PARTS || part->part < 0 || part->part >= part->n_parts ||
        step < 0)
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
    vp__ckpt_part_name(name, sizeof name, part->part, step);
    if (st == VP_OK)
        st = write_atomic(dir, name, produce_part, &pf, err);
    free(offsets);
    return st;
}

static void produce_text(writer *w, const void *ctx) {
    put(w, ctx, strlen(ctx));
}

vp_status vp_checkpoint_commit(const char *dir, const vp_checkpoint_meta *m, vp_error *err) {
    const vp_checkpoint_shape *sh = m ? &m->shape : NULL;
    if (!dir || !m || m->n_parts < 1 || m->n_parts > VP__CKPT_MAX_PARTS || m->step < 0 ||
        m->data_pos > (uint64_t)LLONG_MAX || sh->p < 1 || sh->dp < 1 ||
        (sh->zero != 0 && sh->zero != 1) || !memchr(sh->schedule, 0, sizeof sh->schedule) ||
        !memchr(sh->transport, 0, sizeof sh->transport))
        return vp__fail(err, VP_EINVAL, "bad checkpoint commit (%d parts, step %d)",
                        m ? m->n_parts : 0, m ? m->step : 0);
    char *line = vp__ckpt_meta_text(m);
    if (!line)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status st = write_atomic(dir, VP__CKPT_META, produce_text, line, err);
    free(line);
    return st;
}

/* Whether name is a part file, part-<k>.step-<s>.ckpt, or the temporary file of one
 * (*tmp set); *step receives s. */
static bool part_file_match(const char *name, int *step, bool *tmp) {
    int k, s, used = 0;
    if (sscanf(name, "part-%d.step-%d.ckpt%n", &k, &s, &used) != 2 || used == 0 || k < 0 || s < 0)
        return false;
    const char *rest = name + used; /* ".tmp" is what an older vpipe left */
    *tmp = !strcmp(rest, ".tmp") || !strncmp(rest, VP__TMP_MARK, strlen(VP__TMP_MARK));
    *step = s;
    return *tmp || name[used] == '\0';
}

/* Whether name is the temporary file of the commit record. */
static bool meta_tmp_match(const char *name) {
    size_t n = strlen(VP__CKPT_META VP__TMP_MARK);
    return !strncmp(name, VP__CKPT_META VP__TMP_MARK, n);
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
        bool tmp = false;
        bool stale = meta_tmp_match(e->d_name) ||
                     (part_file_match(e->d_name, &s, &tmp) && (s != step || tmp));
        char path[PATH_BYTES];
        if (!stale)
            continue;
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
    vp_status st = join(path, dir, VP__CKPT_META, err);
    char *text = NULL;
    size_t len = 0;
    vp_error why = {0};
    struct stat sb;
    if (st == VP_OK && stat(path, &sb) != 0)
        st = vp__fail(err, VP_EIO, "no checkpoint in %s (%s: %s)", dir, path, strerror(errno));
    if (st == VP_OK && vp_read_file(path, VP__CKPT_META_MAX, &text, &len, &why) != VP_OK)
        st = vp__fail(err, why.status, "cannot read checkpoint record %s", why.message);
    if (st == VP_OK)
        st = vp_checkpoint_meta_parse(text, len, path, meta, err);
    free(text);
    return st;
}

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
        {"lr decay steps (the learning-rate schedule's length, which a resumed run keeps; "
         "--steps alone extends a run)",
         a->decay_steps, b->decay_steps},
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
    if (a->data_bytes != b->data_bytes || a->data_digest != b->data_digest)
        return vp__fail(err, VP_EINVAL,
                        "checkpoint %s belongs to another run: it was trained on other data "
                        "(%llu bytes, digest %016llx there; %llu bytes, digest %016llx here)",
                        name, (unsigned long long)a->data_bytes, (unsigned long long)a->data_digest,
                        (unsigned long long)b->data_bytes, (unsigned long long)b->data_digest);
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

/* A restore in progress: the run, the targets, every slice seen so far (they must tile
 * the model), and the part being read (expect: its commit record, k: its index). Stages
 * change only in loader_commit, after every check passed. */
typedef struct loader {
    const vp_checkpoint_run *run;
    size_t elements; /* of the whole model */
    target *t;
    int n;
    span *seen;
    int n_seen, cap_seen;
    const char *name;
    const vp_checkpoint_meta *expect;
    int k;
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
    vp_stage_sizes all;
    vp_stage_sizes_of(&run->model,
                      (vp_stage_range){.l1 = run->model.n_layer, .first = true, .last = true}, &all,
                      NULL);
    ld->elements = all.param_bytes / sizeof(float);
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

/* The header in of file name is part k of the commit record e (NULL: there is none). */
static vp_status check_record(const char *name, const vp_checkpoint_info *in,
                              const vp_checkpoint_meta *e, int k, vp_error *err) {
    if (e && (in->step != e->step || in->data_pos != e->data_pos || in->part != k ||
              in->n_parts != e->n_parts))
        return vp__fail(err, VP_EPARSE,
                        "checkpoint %s holds part %d of %d at step %d (data position %llu), "
                        "its " VP__CKPT_META " says part %d of %d at step %d (data position %llu)",
                        name, in->part, in->n_parts, in->step, (unsigned long long)in->data_pos, k,
                        e->n_parts, e->step, (unsigned long long)e->data_pos);
    return VP_OK;
}

/* The header of the part being read: the part its commit record names (when there is
 * one), of the run being resumed. */
static vp_status loader_header(void *ctx, const vp_checkpoint_info *in, vp_error *err) {
    loader *ld = ctx;
    vp_status st = check_record(ld->name, in, ld->expect, ld->k, err);
    if (st == VP_OK)
        st = compare_options(&in->run, ld->run, ld->name, err);
    if (st == VP_OK && in->step > ld->run->steps)
        st = vp__fail(err, VP_EINVAL,
                      "checkpoint %s holds step %d, past the %d steps of the run resuming it: "
                      "give it %d steps or more",
                      ld->name, in->step, ld->run->steps, in->step);
    return st;
}

static vp_status loader_slice(void *ctx, size_t at, size_t n, vp_error *err) {
    loader *ld = ctx;
    if (vp__grow((void **)&ld->seen, &ld->cap_seen, ld->n_seen + 1, sizeof *ld->seen) != 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    ld->seen[ld->n_seen++] = (span){at, n};
    return VP_OK;
}

/* Copies what of elements [at, at + n) (floats at bytes) lies within [lo, hi) into dst,
 * whose first element is element lo. */
static void copy_overlap(float *dst, size_t lo, size_t hi, size_t at, size_t n,
                         const uint8_t *bytes) {
    size_t from = at > lo ? at : lo, to = at + n < hi ? at + n : hi;
    if (from < to)
        memcpy(dst + (from - lo), bytes + (from - at) * sizeof(float), (to - from) * sizeof(float));
}

static void loader_floats(void *ctx, int a, size_t at, size_t n, const uint8_t *bytes) {
    const loader *ld = ctx;
    for (int j = 0; j < ld->n; j++) {
        const target *t = &ld->t[j];
        size_t lo = t->offset + t->s.held.lo, hi = t->offset + t->s.held.hi;
        if (a == 0)
            copy_overlap(t->params, t->offset, t->offset + t->s.n, at, n, bytes);
        else
            copy_overlap(a == 1 ? t->m : t->v, lo, hi, at, n, bytes);
    }
}

/* Reads one part file (src) into the loader; expect is its commit record (NULL: none),
 * whose part k it is. Larger files than any of the run's model are refused unread. */
static vp_status loader_add(loader *ld, const vp__ckpt_source *src,
                            const vp_checkpoint_meta *expect, int k, vp_error *err) {
    ld->name = src->name;
    ld->expect = expect;
    ld->k = k;
    const vp__ckpt_sink sink = {ld, loader_header, loader_slice, loader_floats};
    return vp__ckpt_read(src, vp__ckpt_max_bytes(&ld->run->model), &sink, NULL, err);
}

static int by_offset(const void *a, const void *b) {
    size_t x = ((const span *)a)->offset, y = ((const span *)b)->offset;
    return x < y ? -1 : x > y;
}

/* The slices seen tile the whole model: none missing, none twice. */
static vp_status loader_check(loader *ld, const char *where, vp_error *err) {
    if (ld->n_seen > 0) /* a file of no slices leaves seen NULL, which qsort may not take */
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
    const vp__ckpt_source src = {name, size ? bytes : (const uint8_t *)"", -1, size};
    vp_status st = loader_init(&ld, o, part, err);
    if (st == VP_OK)
        st = loader_add(&ld, &src, NULL, 0, err);
    if (st == VP_OK)
        st = loader_check(&ld, name, err);
    if (st == VP_OK)
        loader_commit(&ld);
    loader_free(&ld);
    return st;
}

/* Opens part k of the commit record m in dir, a regular file (never a FIFO or a device),
 * as src (its name in path[PATH_BYTES]; close src->fd). */
static vp_status open_part(const char *dir, const vp_checkpoint_meta *m, int k, char *path,
                           vp__ckpt_source *src, vp_error *err) {
    char name[64];
    vp__ckpt_part_name(name, sizeof name, k, m->step);
    vp_status st = join(path, dir, name, err);
    if (st != VP_OK)
        return st;
    int fd;
    size_t size;
    vp_error why = {0};
    if (vp__open_regular(path, SIZE_MAX, &fd, &size, &why) != VP_OK)
        return vp__fail(err, why.status, "checkpoint: %s", why.message);
    *src = (vp__ckpt_source){path, NULL, fd, size};
    return VP_OK;
}

/* Reads part k of the commit record m in dir into the loader, streaming the file: no
 * larger than a part of the run's model. */
static vp_status load_part(loader *ld, const char *dir, const vp_checkpoint_meta *m, int k,
                           vp_error *err) {
    char path[PATH_BYTES];
    vp__ckpt_source src;
    vp_status st = open_part(dir, m, k, path, &src, err);
    if (st != VP_OK)
        return st;
    st = loader_add(ld, &src, m, k, err);
    close(src.fd);
    return st;
}

/* vp_checkpoint_inspect's reader: the first part's header against its commit record. */
typedef struct inspection {
    const char *name;
    const vp_checkpoint_meta *meta;
} inspection;

static vp_status inspect_header(void *ctx, const vp_checkpoint_info *in, vp_error *err) {
    const inspection *x = ctx;
    return check_record(x->name, in, x->meta, 0, err);
}

vp_status vp_checkpoint_inspect(const char *dir, vp_checkpoint_info *info, vp_checkpoint_meta *meta,
                                vp_error *err) {
    vp_checkpoint_meta m;
    char path[PATH_BYTES];
    vp__ckpt_source src;
    vp_status st = vp_checkpoint_latest(dir, &m, err);
    if (st == VP_OK)
        st = open_part(dir, &m, 0, path, &src, err);
    if (st != VP_OK)
        return st;
    inspection x = {path, &m};
    const vp__ckpt_sink sink = {&x, inspect_header, NULL, NULL};
    vp_checkpoint_info in;
    st = vp__ckpt_read(&src, VP__CKPT_OWN_LIMIT, &sink, &in, err);
    close(src.fd);
    if (st == VP_OK) {
        *info = in;
        if (meta)
            *meta = m;
    }
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
