/* Checkpoints: exact round trips over model shapes and stage splits, bit-identical
 * resume of interrupted runs, refusal of truncated, corrupted and foreign files (with the
 * stages left untouched), failed writes that keep the previous checkpoint, pruning, and
 * the NaN/Inf guard (fail, or skip without ever checkpointing non-finite state). */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "vpipe/checkpoint.h"
#include "vpipe/io.h"
#include "runtime/runtime_internal.h"

#define TEXT "/usr/share/common-licenses/GPL-3"

/* ---- helpers -------------------------------------------------------------------------- */

static char *new_dir(void) {
    char *d = strdup("/tmp/vp_ckpt_XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

/* Removes dir and what it holds (one level of subdirectories). */
static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0)
            remove_tree(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static void path_of(char *buf, const char *dir, const char *name) {
    snprintf(buf, 4096, "%s/%s", dir, name);
}

static bool exists(const char *dir, const char *name) {
    char p[4096];
    path_of(p, dir, name);
    struct stat st;
    return stat(p, &st) == 0;
}

/* Entries of dir other than . and .. */
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static char *slurp(const char *dir, const char *name, size_t *len) {
    char p[4096];
    path_of(p, dir, name);
    char *text = NULL;
    assert_int_equal(vp_read_file(p, 0, &text, len, NULL), VP_OK);
    return text;
}

static void spill(const char *dir, const char *name, const void *bytes, size_t len) {
    char p[4096];
    path_of(p, dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

static vp_train_options tiny_options(int layers, int width, int heads) {
    vp_train_options o;
    vp_train_options_default(&o);
    o.model = (vp_model_config){.n_layer = layers,
                                .width = width,
                                .n_head = heads,
                                .seq_len = 8,
                                .microbatch = 2,
                                .vocab = 256};
    o.m = 2;
    o.steps = 12;
    o.warmup = 2;
    o.eval_batches = 1;
    return o;
}

/* A rank's stages for the split l0[0..n] of o's model; moments filled with a pattern
 * keyed by salt so that round trips are checked on every array. */
static void make_stages(const vp_train_options *o, const int *l0, int n, uint64_t seed, float salt,
                        vp_mem *mem, vp_stage **out) {
    int L = o->model.n_layer;
    for (int k = 0; k < n; k++) {
        vp_error err = {0};
        vp_status st =
            vp_stage_new(&o->model, (vp_stage_range){l0[k], l0[k + 1], l0[k] == 0, l0[k + 1] == L},
                         &(vp_stage_options){.n_slots = 1, .seed = seed}, mem, &out[k], &err);
        if (st != VP_OK)
            fail_msg("stage [%d, %d): %s", l0[k], l0[k + 1], err.message);
        if (salt != 0.0f) { /* moments from made-up gradients, then shifted weights */
            size_t count;
            float *p = vp_stage_params(out[k], &count), *g = vp_stage_grads(out[k], &count);
            for (size_t i = 0; i < count; i++)
                g[i] = salt * (float)((int)(i % 13) - 6);
            vp_stage_adamw(out[k], &o->adamw, 1, 1e-3f, 1.0f);
            vp_stage_zero_grad(out[k]);
            for (size_t i = 0; i < count; i++)
                p[i] += salt * (float)(i % 7);
        }
    }
}

static void free_stages(vp_stage **s, int n) {
    for (int k = 0; k < n; k++)
        vp_stage_free(s[k]);
}

static uint64_t digest(vp_stage *const *s, int n) {
    uint64_t h = VP_DIGEST_INIT;
    for (int k = 0; k < n; k++)
        h = vp_stage_digest(s[k], h);
    return h;
}

/* Writes the header's checksum again after an edit, so the edit itself is what a loader
 * sees. */
static void reseal(uint8_t *b, size_t size) {
    uint64_t h = vp_digest(b, size - 8, VP_DIGEST_INIT);
    for (int i = 0; i < 8; i++)
        b[size - 8 + i] = (uint8_t)(h >> (8 * i));
}

/* A one-stage rank-0-of-1 checkpoint of o's model at step 3 in a new directory; its
 * bytes in *bytes. */
static char *saved_checkpoint(const vp_train_options *o, vp_mem *mem, uint8_t **bytes,
                              size_t *size) {
    char *dir = new_dir();
    int l0[2] = {0, o->model.n_layer};
    vp_stage *s;
    make_stages(o, l0, 1, o->seed, 0.25f, mem, &s);
    vp_error err = {0};
    vp_checkpoint_run run = vp__checkpoint_run(o);
    if (vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, 3, 6, &err) != VP_OK)
        fail_msg("save: %s", err.message);
    vp_stage_free(s);
    *bytes = (uint8_t *)slurp(dir, "rank-0.step-3.ckpt", size);
    return dir;
}

/* ---- round trips ---------------------------------------------------------------------- */

/* Every (model, split, rank layout): what each rank writes, a fresh set of stages with
 * other weights reads back bit for bit, and the commit record names the step. */
static void test_round_trip_grid(void **state) {
    (void)state;
    const int shapes[][3] = {{1, 8, 2}, {3, 16, 4}, {5, 24, 3}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        vp_train_options o = tiny_options(shapes[sh][0], shapes[sh][1], shapes[sh][2]);
        vp_checkpoint_run run = vp__checkpoint_run(&o);
        for (int route = 1; route <= 3; route++) {
            for (int per_rank = 1; per_rank <= 2; per_rank++) {
                int S = route; /* stages; rank r holds stages r*per_rank .. */
                int n_ranks = (S + per_rank - 1) / per_rank;
                int l0[4];
                if (vp_split_layers(o.model.n_layer, route, l0, NULL) != VP_OK)
                    continue;
                char *dir = new_dir();
                vp_mem *mem = vp_mem_new();
                vp_stage *src[3], *dst[3];
                make_stages(&o, l0, S, 7, 0.5f, mem, src);
                make_stages(&o, l0, S, 99, 0.0f, mem, dst);
                int step = 5 + route;
                uint64_t pos = (uint64_t)step * (uint64_t)o.m;
                vp_error err = {0};
                for (int r = 0; r < n_ranks; r++) {
                    int k0 = r * per_rank, n = S - k0 < per_rank ? S - k0 : per_rank;
                    if (vp_checkpoint_write_rank(dir, &run,
                                                 &(vp_checkpoint_part){r, n_ranks, src + k0, n},
                                                 step, pos, &err) != VP_OK)
                        fail_msg("write rank %d: %s", r, err.message);
                }
                assert_int_equal(vp_checkpoint_commit(dir, n_ranks, step, pos, &err), VP_OK);
                for (int r = 0; r < n_ranks; r++) {
                    int k0 = r * per_rank, n = S - k0 < per_rank ? S - k0 : per_rank;
                    vp_checkpoint_meta meta;
                    if (vp_checkpoint_load(dir, &run,
                                           &(vp_checkpoint_part){r, n_ranks, dst + k0, n}, &meta,
                                           &err) != VP_OK)
                        fail_msg("load rank %d: %s", r, err.message);
                    assert_int_equal(meta.step, step);
                    assert_int_equal(meta.data_pos, pos);
                    assert_int_equal(meta.n_ranks, n_ranks);
                }
                for (int k = 0; k < S; k++) {
                    size_t n1, n2;
                    const float *a = vp_stage_params(src[k], &n1),
                                *b = vp_stage_params(dst[k], &n2);
                    assert_int_equal(n1, n2);
                    assert_memory_equal(a, b, n1 * sizeof(float));
                }
                /* moments: one more identical AdamW step keeps both sets equal */
                for (int k = 0; k < S; k++) {
                    vp_stage_adamw(src[k], &o.adamw, step + 1, 1e-2f, 1.0f);
                    vp_stage_adamw(dst[k], &o.adamw, step + 1, 1e-2f, 1.0f);
                }
                assert_true(digest(src, S) == digest(dst, S));
                free_stages(src, S);
                free_stages(dst, S);
                vp_mem_free(mem);
                remove_tree(dir);
                free(dir);
            }
        }
    }
}

/* ---- bit-identical resume ---------------------------------------------------------------- */

typedef struct trace {
    int stop_at; /* the callback stops the run after this step (0: never) */
    double loss[64], norm[64], lr[64];
    bool seen[64];
} trace;

static bool record(const vp_train_progress *p, void *user) {
    trace *t = user;
    t->loss[p->step] = p->loss;
    t->norm[p->step] = p->grad_norm;
    t->lr[p->step] = p->lr;
    t->seen[p->step] = true;
    return p->step != t->stop_at;
}

/* Over (m, K, stop step, schedule, clip): a run stopped after step k (the work since its
 * last checkpoint lost, as in a crash) and resumed gives every later step's loss,
 * gradient norm and learning rate, and the final parameters, bit for bit. */
static void test_resume_bit_identical(void **state) {
    (void)state;
    vp_data *data = NULL;
    assert_int_equal(vp_data_load(TEXT, 0.1, &data, NULL), VP_OK);
    const struct {
        int m, every, stop;
        vp_lr_schedule schedule;
        double clip;
    } grid[] = {
        {1, 3, 7, VP_LR_COSINE, 1.0},    {2, 4, 4, VP_LR_COSINE, 0.0},
        {3, 5, 11, VP_LR_CONSTANT, 0.5}, {2, 1, 1, VP_LR_COSINE, 1.0},
        {1, 6, 6, VP_LR_CONSTANT, 1.0},  {2, 2, 9, VP_LR_COSINE, 1e9},
    };
    for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
        vp_train_options o = tiny_options(2, 16, 2);
        o.m = grid[g].m;
        o.schedule = grid[g].schedule;
        o.clip = grid[g].clip;
        o.eval_every = 4;
        o.lr = 3e-3;
        vp_error err = {0};
        trace full = {0}, first = {.stop_at = grid[g].stop}, second = {0};
        vp_train_result rf, r1, r2;
        if (vp_train_run(&o, data, record, &full, &rf, &err) != VP_OK)
            fail_msg("uninterrupted: %s", err.message);
        char *dir = new_dir();
        o.checkpoint_dir = dir;
        o.checkpoint_every = grid[g].every;
        assert_int_equal(vp_train_run(&o, data, record, &first, &r1, &err), VP_OK);
        assert_int_equal(r1.steps, grid[g].stop);
        int saved = grid[g].stop / grid[g].every * grid[g].every;
        vp_checkpoint_meta meta;
        assert_int_equal(vp_checkpoint_latest(dir, &meta, &err), VP_OK);
        assert_int_equal(meta.step, saved);
        assert_int_equal(meta.data_pos, (uint64_t)saved * (uint64_t)o.m);
        o.resume_dir = dir;
        if (vp_train_run(&o, data, record, &second, &r2, &err) != VP_OK)
            fail_msg("resume: %s", err.message);
        assert_int_equal(r2.resumed_step, saved);
        assert_int_equal(r2.steps, o.steps);
        for (int s = 1; s <= o.steps; s++) {
            assert_true(second.seen[s] == (s > saved));
            if (s <= saved)
                continue;
            assert_memory_equal(&second.loss[s], &full.loss[s], sizeof(double));
            assert_memory_equal(&second.norm[s], &full.norm[s], sizeof(double));
            assert_memory_equal(&second.lr[s], &full.lr[s], sizeof(double));
        }
        assert_true(r2.param_digest == rf.param_digest);
        assert_memory_equal(&r2.train_loss, &rf.train_loss, sizeof(double));
        assert_memory_equal(&r2.val_loss, &rf.val_loss, sizeof(double));
        /* the interrupted run's own result differs: resuming is doing real work */
        assert_true(r1.param_digest != rf.param_digest);
        /* the last step's checkpoint is the final state: resuming it is a finished run,
         * reported from the checkpoint (a restart loop ends), and runs no step */
        assert_int_equal(vp_checkpoint_latest(dir, &meta, &err), VP_OK);
        assert_int_equal(meta.step, o.steps);
        trace none = {0};
        vp_train_result done;
        assert_int_equal(vp_train_run(&o, data, record, &none, &done, &err), VP_OK);
        assert_int_equal(done.steps, o.steps);
        assert_int_equal(done.resumed_step, o.steps);
        assert_true(done.param_digest == rf.param_digest);
        assert_true(isnan(done.train_loss) && isnan(done.val_loss));
        for (int s = 1; s <= o.steps; s++)
            assert_false(none.seen[s]);
        remove_tree(dir);
        free(dir);
    }
    vp_data_free(data);
}

/* A resume with other options or another model is refused, naming what differs. */
static void test_resume_refuses_other_runs(void **state) {
    (void)state;
    vp_data *data = NULL;
    assert_int_equal(vp_data_load(TEXT, 0.1, &data, NULL), VP_OK);
    vp_train_options o = tiny_options(2, 16, 2);
    o.steps = 4;
    o.checkpoint_every = 2;
    char *dir = new_dir();
    o.checkpoint_dir = dir;
    trace t = {.stop_at = 2};
    vp_train_result r;
    vp_error err = {0};
    assert_int_equal(vp_train_run(&o, data, record, &t, &r, &err), VP_OK);
    o.checkpoint_dir = NULL;
    o.checkpoint_every = 0;
    o.resume_dir = dir;
    const struct {
        const char *what;
        int field;
    } cases[] = {{"width", 0},        {"layers", 1}, {"seed", 2},
                 {"steps", 3},        {"lr", 4},     {"microbatches per step", 5},
                 {"weight decay", 6}, {"warmup", 7}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        vp_train_options x = o;
        switch (cases[c].field) {
        case 0:
            x.model.width = 32;
            break;
        case 1:
            x.model.n_layer = 3;
            break;
        case 2:
            x.seed = 2;
            break;
        case 3:
            x.steps = 5;
            break;
        case 4:
            x.lr = 2e-3;
            break;
        case 5:
            x.m = 3;
            break;
        case 6:
            x.adamw.weight_decay = 0.0f;
            break;
        default:
            x.warmup = 1;
            break;
        }
        assert_int_equal(vp_train_run(&x, data, NULL, NULL, &r, &err), VP_EINVAL);
        if (!strstr(err.message, cases[c].what) || !strstr(err.message, "another run"))
            fail_msg("changing %s: %s", cases[c].what, err.message);
    }
    /* another rank layout and another split of the same model */
    vp_checkpoint_run run = vp__checkpoint_run(&o);
    vp_mem *mem = vp_mem_new();
    int l0[3] = {0, 1, 2};
    vp_stage *s[2];
    make_stages(&o, l0, 2, 1, 0.0f, mem, s);
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 2, s, 1}, NULL, &err),
                     VP_EINVAL);
    assert_non_null(strstr(err.message, "1 ranks, this run has 2"));
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, s, 2}, NULL, &err),
                     VP_EINVAL);
    assert_non_null(strstr(err.message, "holds 1 stages"));
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, s, 1}, NULL, &err),
                     VP_EINVAL);
    assert_non_null(strstr(err.message, "layers [0, 2) +embeddings +head there, [0, 1)"));
    free_stages(s, 2);
    vp_mem_free(mem);
    remove_tree(dir);
    free(dir);
    vp_data_free(data);
}

/* ---- refusing bad files ------------------------------------------------------------------ */

/* Truncations and bit flips anywhere, and crafted headers with a valid checksum: each is
 * refused with a message naming the file and the problem, and the stages keep their
 * values. */
static void test_refuses_corruption(void **state) {
    (void)state;
    vp_train_options o = tiny_options(2, 8, 2);
    vp_checkpoint_run run = vp__checkpoint_run(&o);
    vp_mem *mem = vp_mem_new();
    uint8_t *good;
    size_t size;
    char *dir = saved_checkpoint(&o, mem, &good, &size);
    int l0[2] = {0, 2};
    vp_stage *s;
    make_stages(&o, l0, 1, 5, 0.0f, mem, &s);
    uint64_t before = digest(&s, 1);
    uint8_t *b = malloc(size);
    vp_error err = {0};
    vp_checkpoint_info info;
    assert_int_equal(
        vp_checkpoint_restore(good, size, "good", &run, &(vp_checkpoint_part){0, 1, &s, 1}, &err),
        VP_OK);
    assert_int_equal(vp_checkpoint_parse(good, size, "good", &info, &err), VP_OK);
    assert_int_equal(info.step, 3);
    assert_int_equal(info.data_pos, 6);
    assert_int_equal(info.version, VP_CHECKPOINT_VERSION);
    uint64_t restored = digest(&s, 1);
    assert_true(restored != before);
    vp_stage_free(s);
    make_stages(&o, l0, 1, 5, 0.0f, mem, &s);

    const size_t cuts[] = {0, 1, 7, 8, 100, 151, 152, 200, size / 2, size - 9, size - 8, size - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        assert_int_equal(vp_checkpoint_restore(good, cuts[c], "cut.ckpt", &run,
                                               &(vp_checkpoint_part){0, 1, &s, 1}, &err),
                         VP_EPARSE);
        assert_non_null(strstr(err.message, "cut.ckpt"));
        if (cuts[c] >= 8 && !strstr(err.message, "truncated"))
            fail_msg("cut at %zu: %s", cuts[c], err.message);
    }
    size_t flips[64], n_flips = 0;
    for (size_t at = 0; at < size && n_flips < 60; at += 1 + at / 3)
        flips[n_flips++] = at;
    flips[n_flips++] = size - 9;
    flips[n_flips++] = size - 8;
    flips[n_flips++] = size - 1;
    for (size_t f = 0; f < n_flips; f++) {
        size_t at = flips[f];
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(b, good, size);
            b[at] ^= (uint8_t)(1u << bit);
            vp_status st = vp_checkpoint_restore(b, size, "flip.ckpt", &run,
                                                 &(vp_checkpoint_part){0, 1, &s, 1}, &err);
            if (st != VP_EPARSE)
                fail_msg("flip of bit %d at byte %zu: status %d", bit, at, st);
            bool named = strstr(err.message, "checksum mismatch") ||
                         strstr(err.message, "bad magic") || strstr(err.message, "version") ||
                         strstr(err.message, "truncated") || strstr(err.message, "announces");
            if (!named)
                fail_msg("flip at %zu: %s", at, err.message);
        }
    }
    assert_true(digest(&s, 1) == before);

    /* valid checksum, bad content */
    const struct {
        size_t at;
        uint32_t value;
        vp_status want;
        const char *says;
    } edits[] = {
        {8, 2, VP_EPARSE, "unsupported version 2"},
        {24, 0, VP_EPARSE, "bad model"}, /* layers 0 */
        {52, 0, VP_EPARSE, "bad rank"},  /* ranks 0 */
        {48, 3, VP_EPARSE, "bad rank"},  /* rank 3 of 1 */
        {92, 7, VP_EPARSE, "learning-rate schedule"},
        {136, 2, VP_EPARSE, "runs past the end"}, /* two stages announced */
        {144, 1, VP_EPARSE, "stage record 0"},    /* l0 = 1 on a first stage */
        {152, 2, VP_EPARSE, "first/last"},
        {160, 5, VP_EPARSE, "parameters"}, /* parameter count */
        {28, 16, VP_EPARSE, "parameters"}, /* another width: the sizes disagree */
        {72, 9, VP_EINVAL, "seed"},
        {84, 13, VP_EINVAL, "steps"},
        {168, 0x7fc00000, VP_EPARSE, "parameter 0 is not finite"}, /* a NaN weight */
    };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        memcpy(b, good, size);
        for (int i = 0; i < 4; i++)
            b[edits[e].at + (size_t)i] = (uint8_t)(edits[e].value >> (8 * i));
        reseal(b, size);
        vp_status st = vp_checkpoint_restore(b, size, "edit.ckpt", &run,
                                             &(vp_checkpoint_part){0, 1, &s, 1}, &err);
        if (st != edits[e].want || !strstr(err.message, edits[e].says))
            fail_msg("edit at %zu: status %d: %s", edits[e].at, st, err.message);
    }
    /* a longer file whose header announces the old length */
    uint8_t *longer = calloc(size + 16, 1);
    memcpy(longer, good, size);
    reseal(longer, size + 16);
    assert_int_equal(vp_checkpoint_restore(longer, size + 16, "long.ckpt", &run,
                                           &(vp_checkpoint_part){0, 1, &s, 1}, &err),
                     VP_EPARSE);
    assert_non_null(strstr(err.message, "announces"));
    free(longer);
    assert_true(digest(&s, 1) == before);

    /* through the directory: a bad file, a bad or missing commit record */
    memcpy(b, good, size);
    b[size / 2] ^= 0x10;
    spill(dir, "rank-0.step-3.ckpt", b, size);
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EPARSE);
    assert_non_null(strstr(err.message, "rank-0.step-3.ckpt: checksum mismatch"));
    spill(dir, "rank-0.step-3.ckpt", good, size);
    const char *metas[] = {
        "",
        "{",
        "[]",
        "{\"format\": \"x\"}",
        "{\"format\": \"vpipe-checkpoint\", \"version\": 2}",
        "{\"format\": \"vpipe-checkpoint\", \"version\": 1, \"step\": -1}",
        "{\"format\": \"vpipe-checkpoint\", \"version\": 1, \"step\": 3, \"ranks\": 0}"};
    for (size_t k = 0; k < sizeof metas / sizeof metas[0]; k++) {
        spill(dir, "meta.json", metas[k], strlen(metas[k]));
        assert_int_equal(
            vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
            VP_EPARSE);
        assert_non_null(strstr(err.message, "meta.json"));
    }
    const char *later = "{\"format\": \"vpipe-checkpoint\", \"version\": 1, \"step\": 3, "
                        "\"data_position\": 8, \"ranks\": 1}";
    spill(dir, "meta.json", later, strlen(later));
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EPARSE);
    assert_non_null(strstr(err.message, "says step 3 (data position 8)"));
    const char *missing = "{\"format\": \"vpipe-checkpoint\", \"version\": 1, \"step\": 4, "
                          "\"data_position\": 8, \"ranks\": 1}";
    spill(dir, "meta.json", missing, strlen(missing));
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "rank-0.step-4.ckpt"));
    char meta_path[4096];
    path_of(meta_path, dir, "meta.json");
    unlink(meta_path);
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "no checkpoint in"));
    assert_true(digest(&s, 1) == before);

    vp_stage_free(s);
    free(b);
    free(good);
    vp_mem_free(mem);
    remove_tree(dir);
    free(dir);
}

/* ---- writing ------------------------------------------------------------------------------ */

/* A write that fails (the temporary name is taken by a directory; the directory cannot
 * be created) is an error, leaves no file behind, and the previous checkpoint still
 * loads. */
static void test_failed_write_keeps_previous(void **state) {
    (void)state;
    vp_train_options o = tiny_options(1, 8, 2);
    vp_checkpoint_run run = vp__checkpoint_run(&o);
    vp_mem *mem = vp_mem_new();
    uint8_t *good;
    size_t size, len;
    char *dir = saved_checkpoint(&o, mem, &good, &size);
    char *meta_before = slurp(dir, "meta.json", &len);
    int l0[2] = {0, 1};
    vp_stage *s;
    make_stages(&o, l0, 1, 8, 0.75f, mem, &s);
    char blocker[4096];
    path_of(blocker, dir, "rank-0.step-4.ckpt.tmp");
    assert_int_equal(mkdir(blocker, 0777), 0);
    vp_error err = {0};
    assert_int_equal(vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, 4, 8, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "rank-0.step-4.ckpt"));
    assert_false(exists(dir, "rank-0.step-4.ckpt"));
    char *meta_after = slurp(dir, "meta.json", &len);
    assert_string_equal(meta_before, meta_after);
    free(meta_after);
    /* the commit record's temporary name taken: the rank file exists but is not committed */
    rmdir(blocker);
    path_of(blocker, dir, "meta.json.tmp");
    assert_int_equal(mkdir(blocker, 0777), 0);
    assert_int_equal(vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, 4, 8, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "meta.json"));
    meta_after = slurp(dir, "meta.json", &len);
    assert_string_equal(meta_before, meta_after);
    free(meta_after);
    vp_stage *back;
    make_stages(&o, l0, 1, 8, 0.0f, mem, &back);
    vp_checkpoint_meta meta;
    assert_int_equal(
        vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &back, 1}, &meta, &err), VP_OK);
    assert_int_equal(meta.step, 3);
    rmdir(blocker);
    /* the next good save commits step 4 and prunes both older files */
    assert_int_equal(vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, 4, 8, &err),
                     VP_OK);
    assert_false(exists(dir, "rank-0.step-3.ckpt"));
    assert_true(exists(dir, "rank-0.step-4.ckpt"));
    assert_int_equal(
        vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &back, 1}, &meta, &err), VP_OK);
    assert_int_equal(meta.step, 4);
    assert_true(digest(&back, 1) == digest(&s, 1));
    /* a directory that cannot be created */
    char bad[4096];
    path_of(bad, dir, "meta.json/sub");
    assert_int_equal(vp_checkpoint_save(bad, &run, &(vp_checkpoint_part){0, 1, &s, 1}, 5, 10, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "cannot create checkpoint directory"));
    vp_stage_free(back);
    vp_stage_free(s);
    free(meta_before);
    free(good);
    vp_mem_free(mem);
    remove_tree(dir);
    free(dir);
}

/* Non-finite parameters or moments are never written. */
static void test_refuses_nonfinite_state(void **state) {
    (void)state;
    vp_train_options o = tiny_options(1, 8, 2);
    vp_checkpoint_run run = vp__checkpoint_run(&o);
    vp_mem *mem = vp_mem_new();
    int l0[2] = {0, 1};
    vp_stage *s;
    make_stages(&o, l0, 1, 1, 0.0f, mem, &s);
    char *dir = new_dir();
    size_t n;
    float *p = vp_stage_params(s, &n);
    const size_t where[] = {0, n / 2, n - 1};
    const float bad[] = {NAN, INFINITY, -INFINITY};
    vp_error err = {0};
    for (int i = 0; i < 3; i++) {
        float keep = p[where[i]];
        p[where[i]] = bad[i];
        assert_int_equal(
            vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, 1, 2, &err),
            VP_ERUNTIME);
        assert_non_null(strstr(err.message, "refusing to checkpoint"));
        assert_int_equal(entries(dir), 0); /* no file, no temporary file, no record */
        p[where[i]] = keep;
    }
    assert_int_equal(vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, 1, 2, &err),
                     VP_OK);
    vp_stage_free(s);
    vp_mem_free(mem);
    remove_tree(dir);
    free(dir);
}

/* Pruning removes the rank's superseded, uncommitted and temporary files, nothing else. */
static void test_prune(void **state) {
    (void)state;
    char *dir = new_dir();
    const char *names[] = {"rank-0.step-1.ckpt",     "rank-0.step-7.ckpt", "rank-0.step-9.ckpt",
                           "rank-0.step-3.ckpt.tmp", "rank-1.step-1.ckpt", "rank-10.step-1.ckpt",
                           "rank-0.step-x.ckpt",     "notes.txt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        spill(dir, names[i], "x", 1);
    vp_error err = {0};
    assert_int_equal(vp_checkpoint_prune(dir, 0, 7, &err), VP_OK);
    const bool kept[] = {false, true, false, false, true, true, true, true};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (exists(dir, names[i]) != kept[i])
            fail_msg("%s: %s", names[i], kept[i] ? "removed" : "kept");
    remove_tree(dir);
    assert_int_equal(vp_checkpoint_prune(dir, 0, 7, &err), VP_EIO);
    free(dir);
}

/* ---- the NaN/Inf guard ------------------------------------------------------------------- */

static bool count_skips(const vp_train_progress *p, void *user) {
    int *skips = user;
    if (p->skipped) {
        skips[0]++;
        skips[1] = p->step;
    }
    return true;
}

/* A poisoned step fails the run, and the last checkpoint is the step before it; with
 * skip_nonfinite it is skipped (no parameter or moment changes) and training goes on. */
static void test_nonfinite_guard(void **state) {
    (void)state;
    vp_data *data = NULL;
    assert_int_equal(vp_data_load(TEXT, 0.1, &data, NULL), VP_OK);
    for (int bad = 1; bad <= 5; bad += 2) {
        vp_train_options o = tiny_options(2, 16, 2);
        o.steps = 6;
        o.faults.nonfinite_step = bad;
        char *dir = new_dir();
        o.checkpoint_dir = dir;
        o.checkpoint_every = 1;
        vp_train_result r;
        vp_error err = {0};
        assert_int_equal(vp_train_run(&o, data, NULL, NULL, &r, &err), VP_ERUNTIME);
        assert_non_null(strstr(err.message, "not finite"));
        vp_checkpoint_meta meta = {.step = -1};
        vp_status st = vp_checkpoint_latest(dir, &meta, &err);
        assert_int_equal(st, bad == 1 ? VP_EIO : VP_OK);
        if (bad > 1)
            assert_int_equal(meta.step, bad - 1);

        /* skipping: the state after the bad step is the state before it */
        char *dir2 = new_dir();
        o.checkpoint_dir = dir2;
        o.skip_nonfinite = true;
        int skips[2] = {0, 0};
        assert_int_equal(vp_train_run(&o, data, count_skips, skips, &r, &err), VP_OK);
        assert_int_equal(skips[0], 1);
        assert_int_equal(skips[1], bad);
        assert_int_equal(r.skipped_steps, 1);
        assert_true(isfinite(r.train_loss) && isfinite(r.val_loss));
        /* compare the checkpoints of steps bad-1 and bad: rerun each up to there */
        uint64_t dg[2];
        for (int k = 0; k < 2; k++) {
            vp_train_options x = o;
            x.checkpoint_dir = NULL;
            x.checkpoint_every = 0;
            trace t = {.stop_at = bad - 1 + k};
            vp_train_result rr;
            if (t.stop_at == 0) { /* before step 1: the initial weights */
                vp_mem *mem = vp_mem_new();
                vp_stage *s;
                int l0[2] = {0, 2};
                make_stages(&x, l0, 1, x.seed, 0.0f, mem, &s);
                dg[k] = digest(&s, 1);
                vp_stage_free(s);
                vp_mem_free(mem);
                continue;
            }
            assert_int_equal(vp_train_run(&x, data, record, &t, &rr, &err), VP_OK);
            dg[k] = rr.param_digest;
        }
        assert_true(dg[0] == dg[1]);
        remove_tree(dir);
        remove_tree(dir2);
        free(dir);
        free(dir2);
    }
    vp_data_free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_grid),
        cmocka_unit_test(test_resume_bit_identical),
        cmocka_unit_test(test_resume_refuses_other_runs),
        cmocka_unit_test(test_refuses_corruption),
        cmocka_unit_test(test_failed_write_keeps_previous),
        cmocka_unit_test(test_refuses_nonfinite_state),
        cmocka_unit_test(test_prune),
        cmocka_unit_test(test_nonfinite_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
