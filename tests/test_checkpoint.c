/* Checkpoints: exact round trips between any two shapes (model, stage split, parts per
 * writer, ZeRO-1 shards), bit-identical resume of interrupted runs, refusal of truncated,
 * corrupted, incomplete and foreign files (with the stages left untouched), failed writes
 * that keep the previous checkpoint, pruning, and the NaN/Inf guard (fail, or skip
 * without ever checkpointing non-finite state). */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
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

/* The stages of the split l0[0..n] of o's model, holding the moments of shard `shard` of
 * `shards` (0 of 1: all); moments filled with a pattern keyed by salt so that round
 * trips are checked on every array. */
static void make_shards(const vp_train_options *o, const int *l0, int n, uint64_t seed, float salt,
                        int shard, int shards, vp_mem *mem, vp_stage **out) {
    for (int k = 0; k < n; k++) {
        vp_error err = {0};
        vp_stage_options opt = {.n_slots = 1, .seed = seed, .shard = shard, .shards = shards};
        vp_status st =
            vp_stage_new(&o->model, (vp_stage_range){l0[k], l0[k + 1], k == 0, k == n - 1, 0, 0},
                         &opt, mem, &out[k], &err);
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

static void make_stages(const vp_train_options *o, const int *l0, int n, uint64_t seed, float salt,
                        vp_mem *mem, vp_stage **out) {
    make_shards(o, l0, n, seed, salt, 0, 1, mem, out);
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

/* The commit record of a one-part checkpoint at step, data position pos. */
static vp_checkpoint_meta meta_at(int step, uint64_t pos) {
    return (vp_checkpoint_meta){step, pos, 1, {1, 1, 0, "single", "threads"}};
}

/* The whole model's parameters, first and second moments (arrays a = 0, 1, 2) of the
 * elements whose moments the stages hold, or (a = 3) every parameter of the stages, each
 * at its offset in the model; elements no stage gives are NaN. Caller frees. */
static float *whole(const vp_model_config *cfg, vp_stage *const *s, int n, int a) {
    vp_stage_sizes all;
    assert_int_equal(
        vp_stage_sizes_of(cfg, (vp_stage_range){0, cfg->n_layer, true, true, 0, 0}, &all, NULL),
        VP_OK);
    size_t N = all.param_bytes / sizeof(float);
    float *out = malloc(N * sizeof *out);
    for (size_t i = 0; i < N; i++)
        out[i] = NAN;
    for (int k = 0; k < n; k++) {
        vp_stage_state st = vp_stage_state_of(s[k]);
        size_t at;
        assert_int_equal(vp_stage_offset_of(cfg, st.range, &at, NULL), VP_OK);
        size_t lo = a == 3 ? 0 : st.held.lo, hi = a == 3 ? st.n : st.held.hi;
        const float *from = a == 1 ? st.adam_m : a == 2 ? st.adam_v : st.params + lo;
        memcpy(out + at + lo, from, (hi - lo) * sizeof *out);
    }
    return out;
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
    vp_checkpoint_run run = vp__checkpoint_run(o, NULL);
    vp_checkpoint_meta meta = meta_at(3, 6);
    if (vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, &meta, &err) != VP_OK)
        fail_msg("save: %s", err.message);
    vp_stage_free(s);
    *bytes = (uint8_t *)slurp(dir, "part-0.step-3.ckpt", size);
    return dir;
}

/* saved_checkpoint of o's model (two layers), and a reader's stage of it, with other
 * weights, in *s. */
static char *saved_with_reader(const vp_train_options *o, vp_mem *mem, uint8_t **bytes,
                               size_t *size, vp_stage **s) {
    char *dir = saved_checkpoint(o, mem, bytes, size);
    int l0[2] = {0, 2};
    make_stages(o, l0, 1, 5, 0.0f, mem, s);
    return dir;
}

/* ---- round trips ---------------------------------------------------------------------- */

/* One shape of a run's state: a split of the model into `route` stages, `per_part` of
 * them to a part, each stage in `shards` ZeRO-1 shards (each shard's stage in its own
 * set: shards * route stages). */
typedef struct shape {
    int route, per_part, shards;
} shape;

/* Makes the stages of shape sh (into s[shard * route + k]); false when the layers do not
 * split so. */
static bool make_shape(const vp_train_options *o, shape sh, uint64_t seed, float salt, vp_mem *mem,
                       vp_stage **s) {
    int l0[4];
    if (vp_split_layers(o->model.n_layer, sh.route, l0, NULL) != VP_OK)
        return false;
    for (int k = 0; k < sh.shards; k++)
        make_shards(o, l0, sh.route, seed, salt, k, sh.shards, mem, s + k * sh.route);
    return true;
}

/* Writes the state of stages s (of shape sh) as the parts of step `step`, and commits. */
static void write_shape(const char *dir, const vp_checkpoint_run *run, shape sh, vp_stage **s,
                        int step) {
    int per_set = (sh.route + sh.per_part - 1) / sh.per_part, parts = per_set * sh.shards;
    uint64_t pos = (uint64_t)step * (uint64_t)run->m;
    vp_error err = {0};
    for (int part = 0; part < parts; part++) {
        int set = part / per_set, k0 = part % per_set * sh.per_part;
        int n = sh.route - k0 < sh.per_part ? sh.route - k0 : sh.per_part;
        vp_checkpoint_part pt = {part, parts, s + set * sh.route + k0, n};
        if (vp_checkpoint_write_part(dir, run, &pt, step, pos, &err) != VP_OK)
            fail_msg("write part %d: %s", part, err.message);
    }
    vp_checkpoint_meta meta = {step, pos, parts, {sh.route, sh.shards, sh.shards > 1, "x", "y"}};
    assert_int_equal(vp_checkpoint_commit(dir, &meta, &err), VP_OK);
}

/* Arrays a of the whole model from stages a_st and b_st are the same, bit for bit. */
static void assert_same(const vp_model_config *cfg, vp_stage **a_st, int na, int a, vp_stage **b_st,
                        int nb, int b) {
    vp_stage_sizes all;
    vp_stage_sizes_of(cfg, (vp_stage_range){0, cfg->n_layer, true, true, 0, 0}, &all, NULL);
    float *x = whole(cfg, a_st, na, a), *y = whole(cfg, b_st, nb, b);
    for (size_t i = 0; i < all.param_bytes / sizeof(float); i++)
        assert_false(isnan(x[i])); /* the stages give every element */
    assert_memory_equal(x, y, all.param_bytes);
    free(x);
    free(y);
}

/* Every (model, writer's shape, reader's shape): a fresh set of stages with other weights
 * reads back every parameter and moment bit for bit, whatever the split, the parts or the
 * shards on either side, and the commit record names the step and the shape. */
static void test_round_trip_between_shapes(void **state) {
    (void)state;
    const int models[][3] = {{1, 8, 2}, {3, 16, 4}, {5, 24, 3}};
    const shape shapes[] = {{1, 1, 1}, {2, 1, 1}, {3, 2, 1}, {2, 2, 2}, {3, 1, 3}, {1, 1, 2}};
    int n_shapes = (int)(sizeof shapes / sizeof shapes[0]), trips = 0;
    for (size_t mo = 0; mo < sizeof models / sizeof models[0]; mo++) {
        vp_train_options o = tiny_options(models[mo][0], models[mo][1], models[mo][2]);
        vp_checkpoint_run run = vp__checkpoint_run(&o, NULL);
        for (int w = 0; w < n_shapes; w++)
            for (int r = 0; r < n_shapes; r++) {
                vp_mem *mem = vp_mem_new();
                vp_stage *src[9], *dst[9];
                shape ws = shapes[w], rs = shapes[r];
                if (!make_shape(&o, ws, 7, 0.5f, mem, src) ||
                    !make_shape(&o, rs, 99, 0.0f, mem, dst)) {
                    vp_mem_free(mem);
                    continue; /* too few layers for the split */
                }
                char *dir = new_dir();
                write_shape(dir, &run, ws, src, 5 + w);
                int nw = ws.route * ws.shards, nr = rs.route * rs.shards;
                vp_checkpoint_meta meta;
                vp_error err = {0};
                if (vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, dst, nr}, &meta,
                                       &err) != VP_OK)
                    fail_msg("load (model %zu, shapes %d, %d): %s", mo, w, r, err.message);
                assert_int_equal(meta.step, 5 + w);
                assert_int_equal(meta.data_pos, (uint64_t)(5 + w) * (uint64_t)o.m);
                assert_int_equal(meta.shape.p, ws.route);
                assert_int_equal(meta.shape.dp, ws.shards);
                for (int a = 0; a < 3; a++) /* the saved state, from each one's shards */
                    assert_same(&o.model, src, nw, a, dst, nr, a);
                for (int k = 0; k < rs.shards; k++) /* every set holds every parameter */
                    assert_same(&o.model, src, nw, 0, dst + k * rs.route, rs.route, 3);
                trips++;
                free_stages(src, nw);
                free_stages(dst, nr);
                vp_mem_free(mem);
                remove_tree(dir);
                free(dir);
            }
    }
    assert_true(trips >= 80);
}

/* A set whose slices miss part of the model, or hold part of it twice, is refused and
 * the stages keep their values. */
static void test_refuses_incomplete_sets(void **state) {
    (void)state;
    vp_train_options o = tiny_options(3, 16, 2);
    vp_checkpoint_run run = vp__checkpoint_run(&o, NULL);
    vp_mem *mem = vp_mem_new();
    vp_stage *src[3], *dst[1];
    shape three = {3, 1, 1}, one = {1, 1, 1};
    assert_true(make_shape(&o, three, 7, 0.5f, mem, src));
    assert_true(make_shape(&o, one, 9, 0.0f, mem, dst));
    uint64_t before = digest(dst, 1);
    vp_stage *missing[2] = {src[0], src[2]}, *twice[4] = {src[0], src[1], src[1], src[2]};
    vp_stage **sets[2] = {missing, twice};
    const char *says[2] = {"lacks elements", "twice"};
    for (int t = 0; t < 2; t++) {
        char *dir = new_dir();
        shape sh = {t == 0 ? 2 : 4, 1, 1};
        write_shape(dir, &run, sh, sets[t], 2);
        vp_error err = {0};
        assert_int_equal(
            vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, dst, 1}, NULL, &err),
            VP_EPARSE);
        if (!strstr(err.message, says[t]))
            fail_msg("%s", err.message);
        remove_tree(dir);
        free(dir);
    }
    assert_true(digest(dst, 1) == before);
    free_stages(src, 3);
    free_stages(dst, 1);
    vp_mem_free(mem);
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
    /* the same options on other data: another run (the README's promise) */
    vp_data *elsewhere = NULL;
    assert_int_equal(vp_data_load("/usr/share/common-licenses/Apache-2.0", 0.1, &elsewhere, NULL),
                     VP_OK);
    assert_int_equal(vp_train_run(&o, elsewhere, NULL, NULL, &r, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "trained on other data"));
    vp_data_free(elsewhere);
    /* the same bytes split otherwise: other training text, another run too */
    assert_int_equal(vp_data_load(TEXT, 0.2, &elsewhere, NULL), VP_OK);
    assert_int_equal(vp_train_run(&o, elsewhere, NULL, NULL, &r, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "trained on other data"));
    vp_data_free(elsewhere);
    /* another split of the same run loads (the shape may change): both halves of the
     * model, read by two parts, are the one stage that was saved */
    vp_checkpoint_run run = vp__checkpoint_run(&o, data);
    vp_mem *mem = vp_mem_new();
    int l0[3] = {0, 1, 2}, all[2] = {0, 2};
    vp_stage *s[2], *one;
    make_stages(&o, l0, 2, 1, 0.0f, mem, s);
    make_stages(&o, all, 1, 1, 0.0f, mem, &one);
    for (int k = 0; k < 2; k++)
        assert_int_equal(
            vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){k, 2, s + k, 1}, NULL, &err),
            VP_OK);
    assert_int_equal(
        vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &one, 1}, NULL, &err), VP_OK);
    assert_true(digest(s, 2) == digest(&one, 1));
    /* a stage of another model is refused */
    vp_train_options wider = tiny_options(2, 32, 2);
    vp_stage *other;
    make_stages(&wider, all, 1, 1, 0.0f, mem, &other);
    assert_int_equal(
        vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &other, 1}, NULL, &err),
        VP_EINVAL);
    assert_non_null(strstr(err.message, "not a stage of the run's model"));
    free_stages(s, 2);
    vp_stage_free(one);
    vp_stage_free(other);
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
    vp_checkpoint_run run = vp__checkpoint_run(&o, NULL);
    vp_mem *mem = vp_mem_new();
    uint8_t *good;
    size_t size;
    vp_stage *s;
    char *dir = saved_with_reader(&o, mem, &good, &size, &s);
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
    make_stages(&o, (int[]){0, 2}, 1, 5, 0.0f, mem, &s);

    const size_t cuts[] = {0, 1, 7, 8, 100, 167, 168, 200, size / 2, size - 9, size - 8, size - 1};
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
        {8, 4, VP_EPARSE, "unsupported version 4"},
        {8, 1, VP_EPARSE, "older vpipe"},
        {8, 2, VP_EPARSE, "does not record the training data"},
        {24, 0, VP_EPARSE, "bad model"}, /* layers 0 */
        {52, 0, VP_EPARSE, "bad part"},  /* parts 0 */
        {48, 3, VP_EPARSE, "bad part"},  /* part 3 of 1 */
        {92, 7, VP_EPARSE, "learning-rate schedule"},
        {136, 2, VP_EPARSE, "runs past the end"}, /* two slices announced */
        {136, 0, VP_EPARSE, "unexpected bytes"},  /* no slice, yet bytes follow */
        {160, 1, VP_EPARSE, "outside the model"}, /* offset 1: past the model's end */
        {168, 5, VP_EPARSE, "unexpected bytes"},  /* a shorter slice */
        {168, 0, VP_EPARSE, "slice 0 holds"},     /* an empty slice */
        {28, 16, VP_EINVAL, "width"},             /* another width: another run */
        {72, 9, VP_EINVAL, "seed"},
        {84, 13, VP_EINVAL, "steps"},
        {144, 9, VP_EINVAL, "trained on other data"},              /* the data's length */
        {152, 9, VP_EINVAL, "trained on other data"},              /* the data's digest */
        {176, 0x7fc00000, VP_EPARSE, "parameter 0 is not finite"}, /* a NaN weight */
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
    spill(dir, "part-0.step-3.ckpt", b, size);
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EPARSE);
    assert_non_null(strstr(err.message, "part-0.step-3.ckpt: checksum mismatch"));
    spill(dir, "part-0.step-3.ckpt", good, size);
#define META_V3 "{\"format\": \"vpipe-checkpoint\", \"version\": 3, "
#define SHAPE "\"shape\": {\"p\": 1, \"dp\": 1, \"zero\": 0, \"schedule\": \"s\", "
    const char *metas[] = {"",
                           "{",
                           "[]",
                           "{\"format\": \"x\"}",
                           "{\"format\": \"vpipe-checkpoint\", \"version\": 4}",
                           "{\"format\": \"vpipe-checkpoint\", \"version\": 1, \"step\": 3}",
                           META_V3 "\"step\": -1}",
                           META_V3 "\"step\": 3, \"data_position\": 6, \"parts\": 0}",
                           META_V3 "\"step\": 3, \"data_position\": 6, \"parts\": 1}",
                           META_V3 "\"step\": 3, \"data_position\": 6, \"parts\": 1, " SHAPE
                                   "\"transport\": 5}}",
                           META_V3 "\"step\": 3, \"data_position\": 6, \"parts\": 1, " SHAPE
                                   "\"transport\": \"a-very-long-transport-name\"}}"};
    for (size_t k = 0; k < sizeof metas / sizeof metas[0]; k++) {
        spill(dir, "meta.json", metas[k], strlen(metas[k]));
        assert_int_equal(
            vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
            VP_EPARSE);
        assert_non_null(strstr(err.message, "meta.json"));
        if (k == 5) /* version 1: refused as an older vpipe's */
            assert_non_null(strstr(err.message, "older vpipe"));
    }
    const char *later =
        META_V3 "\"step\": 3, \"data_position\": 8, \"parts\": 1, " SHAPE "\"transport\": \"t\"}}";
    spill(dir, "meta.json", later, strlen(later));
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EPARSE);
    assert_non_null(strstr(err.message, "says part 0 of 1 at step 3 (data position 8)"));
    const char *missing =
        META_V3 "\"step\": 4, \"data_position\": 8, \"parts\": 1, " SHAPE "\"transport\": \"t\"}}";
    spill(dir, "meta.json", missing, strlen(missing));
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "part-0.step-4.ckpt"));
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

/* A write that fails (the part file's name is taken by a directory; the commit record
 * cannot be written past a file size limit; the directory cannot be created) is an error,
 * leaves no file behind, and the previous checkpoint still loads. */
static void test_failed_write_keeps_previous(void **state) {
    (void)state;
    vp_train_options o = tiny_options(1, 8, 2);
    vp_checkpoint_run run = vp__checkpoint_run(&o, NULL);
    vp_mem *mem = vp_mem_new();
    uint8_t *good;
    size_t size, len;
    char *dir = saved_checkpoint(&o, mem, &good, &size);
    char *meta_before = slurp(dir, "meta.json", &len);
    int l0[2] = {0, 1};
    vp_stage *s;
    make_stages(&o, l0, 1, 8, 0.75f, mem, &s);
    char blocker[4096];
    path_of(blocker, dir, "part-0.step-4.ckpt");
    assert_int_equal(mkdir(blocker, 0777), 0);
    vp_error err = {0};
    vp_checkpoint_meta at4 = meta_at(4, 8), at5 = meta_at(5, 10);
    int before = entries(dir);
    assert_int_equal(vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, &at4, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "part-0.step-4.ckpt"));
    struct stat st;
    assert_true(stat(blocker, &st) == 0 && S_ISDIR(st.st_mode)); /* not replaced */
    assert_int_equal(entries(dir), before);                      /* no temporary file left */
    char *meta_after = slurp(dir, "meta.json", &len);
    assert_string_equal(meta_before, meta_after);
    free(meta_after);
    /* the commit record cannot be written: the part file exists but is not committed */
    rmdir(blocker);
    assert_int_equal(
        vp_checkpoint_write_part(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, 4, 8, &err), VP_OK);
    struct rlimit was;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &(struct rlimit){16, was.rlim_max}), 0);
    vp_status committed = vp_checkpoint_commit(dir, &at4, &err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, SIG_DFL);
    assert_int_equal(committed, VP_EIO);
    assert_non_null(strstr(err.message, "meta.json"));
    assert_non_null(strstr(err.message, "File too large"));
    meta_after = slurp(dir, "meta.json", &len);
    assert_string_equal(meta_before, meta_after);
    free(meta_after);
    vp_stage *back;
    make_stages(&o, l0, 1, 8, 0.0f, mem, &back);
    vp_checkpoint_meta meta;
    assert_int_equal(
        vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &back, 1}, &meta, &err), VP_OK);
    assert_int_equal(meta.step, 3);
    /* the next good save commits step 4 and prunes both older files */
    assert_int_equal(vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, &at4, &err),
                     VP_OK);
    assert_false(exists(dir, "part-0.step-3.ckpt"));
    assert_true(exists(dir, "part-0.step-4.ckpt"));
    assert_int_equal(
        vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &back, 1}, &meta, &err), VP_OK);
    assert_int_equal(meta.step, 4);
    assert_true(digest(&back, 1) == digest(&s, 1));
    /* a directory that cannot be created */
    char bad[4096];
    path_of(bad, dir, "meta.json/sub");
    assert_int_equal(vp_checkpoint_save(bad, &run, &(vp_checkpoint_part){0, 1, &s, 1}, &at5, &err),
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
    vp_checkpoint_run run = vp__checkpoint_run(&o, NULL);
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
    vp_checkpoint_meta at1 = meta_at(1, 2);
    for (int i = 0; i < 3; i++) {
        float keep = p[where[i]];
        p[where[i]] = bad[i];
        assert_int_equal(
            vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, &at1, &err),
            VP_ERUNTIME);
        assert_non_null(strstr(err.message, "refusing to checkpoint"));
        assert_int_equal(entries(dir), 0); /* no file, no temporary file, no record */
        p[where[i]] = keep;
    }
    assert_int_equal(vp_checkpoint_save(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, &at1, &err),
                     VP_OK);
    vp_stage_free(s);
    vp_mem_free(mem);
    remove_tree(dir);
    free(dir);
}

/* Pruning removes the part files of other steps (of any part, so of any earlier shape),
 * uncommitted and temporary ones (of part files and of the commit record, as this vpipe
 * and older ones name them), and nothing else. */
static void test_prune(void **state) {
    (void)state;
    char *dir = new_dir();
    const char *names[] = {"part-0.step-1.ckpt",
                           "part-0.step-7.ckpt",
                           "part-0.step-9.ckpt",
                           "part-0.step-3.ckpt.tmp",
                           "part-1.step-1.ckpt",
                           "part-10.step-1.ckpt",
                           "part-0.step-x.ckpt",
                           "notes.txt",
                           "part-5.step-7.ckpt",
                           "part-2.step-7.ckpt.tmp",
                           "rank-0.step-1.ckpt",
                           "part-0.step-7.ckptx",
                           "part-0.step-7.ckpt.tmp.12.3",
                           "meta.json.tmp.12.4",
                           ".vpipe-lock",
                           "meta.json",
                           "part-0.step-7.ckpt.tmpx"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        spill(dir, names[i], "x", 1);
    vp_error err = {0};
    assert_int_equal(vp_checkpoint_prune(dir, 7, &err), VP_OK);
    const bool kept[] = {false, true, false, false, false, false, true, true, true,
                         false, true, true,  false, false, true,  true, true};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (exists(dir, names[i]) != kept[i])
            fail_msg("%s: %s", names[i], kept[i] ? "removed" : "kept");
    remove_tree(dir);
    assert_int_equal(vp_checkpoint_prune(dir, 7, &err), VP_EIO);
    free(dir);
}

/* ---- holding a directory ----------------------------------------------------------------- */

/* A callback that, after step 1, starts a second run on the first run's directory (the
 * first holds it all the while): the second must be refused. */
typedef struct second_run {
    const vp_data *data;
    vp_train_options o;
    vp_status status;
    vp_error err;
} second_run;

static bool start_second(const vp_train_progress *p, void *user) {
    second_run *sr = user;
    vp_train_result r;
    if (p->step == 1)
        sr->status = vp_train_run(&sr->o, sr->data, NULL, NULL, &r, &sr->err);
    return true;
}

/* One run holds its directory: a second run on it is refused, naming the holder, and
 * changes nothing there, while the first finishes with its checkpoint intact; a fresh
 * run never replaces a checkpoint it does not resume from, unless told to. */
static void test_holds_directory(void **state) {
    (void)state;
    vp_data *data = NULL;
    assert_int_equal(vp_data_load(TEXT, 0.1, &data, NULL), VP_OK);
    vp_train_options o = tiny_options(2, 16, 2);
    o.steps = 4;
    char *dir = new_dir(), pid[32];
    snprintf(pid, sizeof pid, "pid %ld on ", (long)getpid());
    o.checkpoint_dir = dir;
    o.checkpoint_every = 1;
    second_run sr = {.data = data, .o = o};
    sr.o.steps = 3;
    vp_train_result r;
    vp_error err = {0};
    assert_int_equal(vp_train_run(&o, data, start_second, &sr, &r, &err), VP_OK);
    assert_int_equal(sr.status, VP_EIO);
    assert_non_null(strstr(sr.err.message, "is in use by "));
    assert_non_null(strstr(sr.err.message, pid));
    vp_checkpoint_meta meta;
    assert_int_equal(vp_checkpoint_latest(dir, &meta, &err), VP_OK);
    assert_int_equal(meta.step, 4); /* the first run's, whole: it resumes to its end */
    o.resume_dir = dir;
    vp_train_result again;
    assert_int_equal(vp_train_run(&o, data, NULL, NULL, &again, &err), VP_OK);
    assert_int_equal(again.resumed_step, 4);
    assert_true(again.param_digest == r.param_digest);
    /* a fresh run on a directory holding a checkpoint: refused, nothing changes */
    int before = entries(dir);
    o.resume_dir = NULL;
    assert_int_equal(vp_train_run(&o, data, NULL, NULL, &again, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "already holds a checkpoint (step 4)"));
    assert_int_equal(entries(dir), before);
    assert_int_equal(vp_checkpoint_latest(dir, &meta, &err), VP_OK);
    assert_int_equal(meta.step, 4);
    /* resuming from the same directory spelt otherwise, or replacing on purpose: taken */
    char spelt[4096];
    snprintf(spelt, sizeof spelt, "%s/.", dir);
    vp_checkpoint_lock *lock = NULL, *second = NULL;
    assert_int_equal(vp_checkpoint_acquire(dir, spelt, false, &lock, &err), VP_OK);
    assert_int_equal(vp_checkpoint_acquire(spelt, NULL, true, &second, &err), VP_EIO);
    assert_null(second);
    vp_checkpoint_release(lock);
    assert_int_equal(vp_checkpoint_acquire(dir, "/tmp", false, &lock, &err), VP_EINVAL);
    assert_int_equal(vp_checkpoint_acquire(dir, NULL, true, &lock, &err), VP_OK);
    vp_checkpoint_release(lock);
    o.overwrite_checkpoint = true;
    o.checkpoint_every = 0;
    o.steps = 2;
    assert_int_equal(vp_train_run(&o, data, NULL, NULL, &again, &err), VP_OK);
    assert_int_equal(vp_checkpoint_latest(dir, &meta, &err), VP_OK);
    assert_int_equal(meta.step, 2);
    remove_tree(dir);
    free(dir);
    vp_data_free(data);
}

/* A part file that is not a regular file, or far larger than a part of the run's model
 * can be (a sparse 3 GiB file), is refused before it is read; so is an oversized commit
 * record. */
static void test_refuses_oversized_files(void **state) {
    (void)state;
    vp_train_options o = tiny_options(2, 8, 2);
    vp_checkpoint_run run = vp__checkpoint_run(&o, NULL);
    vp_mem *mem = vp_mem_new();
    uint8_t *good;
    size_t size;
    vp_stage *s;
    char *dir = saved_with_reader(&o, mem, &good, &size, &s);
    char part[4096];
    path_of(part, dir, "part-0.step-3.ckpt");
    vp_error err = {0};
    const off_t big = (off_t)3 << 30;
    /* grown to 3 GiB (sparse): its header still announces the old length */
    assert_int_equal(truncate(part, big), 0);
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EPARSE);
    assert_non_null(strstr(err.message, "its header announces"));
    /* ... and announcing 3 GiB too: more than any part of this model */
    uint8_t total[8];
    for (int i = 0; i < 8; i++)
        total[i] = (uint8_t)((uint64_t)big >> (8 * i));
    FILE *f = fopen(part, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 16, SEEK_SET), 0);
    assert_int_equal(fwrite(total, 1, 8, f), 8);
    fclose(f);
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EPARSE);
    assert_non_null(strstr(err.message, "more than any checkpoint of the run's model holds"));
    /* a FIFO without a writer: refused at once */
    unlink(part);
    assert_int_equal(mkfifo(part, 0600), 0);
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "not a regular file"));
    /* a commit record padded past 4 MiB */
    unlink(part);
    spill(dir, "part-0.step-3.ckpt", good, size);
    size_t pad = (size_t)5 << 20;
    char *meta = malloc(pad);
    size_t len;
    char *text = slurp(dir, "meta.json", &len);
    memset(meta, ' ', pad);
    memcpy(meta, text, len);
    spill(dir, "meta.json", meta, pad);
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "is larger than"));
    spill(dir, "meta.json", text, len);
    assert_int_equal(vp_checkpoint_load(dir, &run, &(vp_checkpoint_part){0, 1, &s, 1}, NULL, &err),
                     VP_OK);
    free(text);
    free(meta);
    vp_stage_free(s);
    free(good);
    vp_mem_free(mem);
    remove_tree(dir);
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
        cmocka_unit_test(test_round_trip_between_shapes),
        cmocka_unit_test(test_refuses_incomplete_sets),
        cmocka_unit_test(test_resume_bit_identical),
        cmocka_unit_test(test_resume_refuses_other_runs),
        cmocka_unit_test(test_refuses_corruption),
        cmocka_unit_test(test_failed_write_keeps_previous),
        cmocka_unit_test(test_refuses_nonfinite_state),
        cmocka_unit_test(test_prune),
        cmocka_unit_test(test_holds_directory),
        cmocka_unit_test(test_refuses_oversized_files),
        cmocka_unit_test(test_nonfinite_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
