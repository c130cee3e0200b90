/* Stages: splitting the layers into stages and reordering the passes (any schedule
 * that runs each stage's W in microbatch order) gives bit-identical losses, gradients
 * and parameters; the size functions equal the allocator's measurements; misuse is
 * refused; data loading and windows behave. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vpipe/data.h"
#include "vpipe/model.h"

static const vp_model_config cfg = {
    .n_layer = 4, .width = 32, .n_head = 4, .seq_len = 16, .microbatch = 2, .vocab = 256};
enum { M = 3, MAX_STAGES = 4 };

/* A model split into stages on one allocator, run pass by pass. */
typedef struct {
    int n;
    vp_stage *st[MAX_STAGES];
    vp_mem *mem;
    float *fwd[MAX_STAGES][M]; /* in-flight activation into stage s for microbatch j */
    float *bwd[MAX_STAGES][M]; /* in-flight gradient into stage s for microbatch j */
    double loss[M];
} chain;

static void chain_new(chain *p, int n, const int *bounds) {
    memset(p, 0, sizeof *p);
    p->n = n;
    p->mem = vp_mem_new();
    for (int s = 0; s < n; s++) {
        assert_int_equal(
            vp_stage_new(&cfg, (vp_stage_range){bounds[s], bounds[s + 1], s == 0, s == n - 1, 0, 0},
                         &(vp_stage_options){.n_slots = M, .seed = 11}, p->mem, &p->st[s], NULL),
            VP_OK);
    }
}

static void chain_free(chain *p) {
    for (int s = 0; s < p->n; s++)
        vp_stage_free(p->st[s]);
    assert_int_equal(vp_mem_current(p->mem), 0);
    vp_mem_free(p->mem);
}

static void batch(int step, int j, uint8_t *tok, uint8_t *tgt) {
    int n = cfg.microbatch * cfg.seq_len;
    for (int i = 0; i < n; i++) {
        tok[i] = (uint8_t)((i * 31 + j * 7 + step * 13) % 251);
        tgt[i] = (uint8_t)((i * 17 + j * 3 + step * 5) % 253);
    }
}

/* Recomputation of the passes below: 0 none, 1 selective, 2 full (drop after F, R before
 * B). */
static int recompute;

/* Pass kinds for a stage: F, B, W */
static void run_f(chain *p, int s, int j, int step) {
    uint8_t tok[512], tgt[512];
    batch(step, j, tok, tgt);
    bool first = s == 0, last = s == p->n - 1;
    assert_int_equal(vp_stage_forward(p->st[s], j,
                                      &(vp_stage_io){.in = first ? NULL : p->fwd[s][j],
                                                     .tokens = first ? tok : NULL,
                                                     .targets = last ? tgt : NULL,
                                                     .out = last ? NULL : &p->fwd[s + 1][j],
                                                     .loss = last ? &p->loss[j] : NULL},
                                      NULL),
                     VP_OK);
    if (recompute)
        assert_int_equal(vp_stage_drop(p->st[s], j, recompute == 2, NULL), VP_OK);
}

static void run_b(chain *p, int s, int j) {
    bool first = s == 0, last = s == p->n - 1;
    if (recompute)
        assert_int_equal(vp_stage_recompute(p->st[s], j, NULL), VP_OK);
    assert_int_equal(vp_stage_backward_input(p->st[s], j, last ? NULL : p->bwd[s][j], 1.0f / M,
                                             first ? NULL : &p->bwd[s - 1][j], NULL),
                     VP_OK);
}

static void run_w(chain *p, int s, int j) {
    assert_int_equal(vp_stage_backward_weight(p->st[s], j, NULL), VP_OK);
}

/* Orders of one step. */
enum { ORDER_REFERENCE, ORDER_GPIPE, ORDER_DELAYED_W };

static void run_step(chain *p, int order, int step) {
    for (int s = 0; s < p->n; s++)
        vp_stage_zero_grad(p->st[s]);
    if (order == ORDER_REFERENCE) { /* per microbatch: F down, then B and W up */
        for (int j = 0; j < M; j++) {
            for (int s = 0; s < p->n; s++)
                run_f(p, s, j, step);
            for (int s = p->n - 1; s >= 0; s--) {
                run_b(p, s, j);
                run_w(p, s, j);
            }
        }
    } else if (order == ORDER_GPIPE) { /* all F, then all BW (last microbatch first) */
        for (int j = 0; j < M; j++)
            for (int s = 0; s < p->n; s++)
                run_f(p, s, j, step);
        for (int s = p->n - 1; s >= 0; s--)
            for (int j = 0; j < M; j++)
                run_b(p, s, M - 1 - j);
        for (int s = 0; s < p->n; s++)
            for (int j = 0; j < M; j++)
                run_w(p, s, j);
    } else { /* zero-bubble style: B as soon as possible, W of j after F of j+1 */
        for (int j = 0; j < M; j++) {
            for (int s = 0; s < p->n; s++)
                run_f(p, s, j, step);
            for (int s = p->n - 1; s >= 0; s--)
                run_b(p, s, j);
            if (j > 0)
                for (int s = 0; s < p->n; s++)
                    run_w(p, s, j - 1);
        }
        for (int s = 0; s < p->n; s++)
            run_w(p, s, M - 1);
    }
    /* global norm: every stage's blocks, from two shards of each, added in model order */
    int n_blocks = vp_norm_block_count(&cfg);
    double *blocks = calloc((size_t)n_blocks, sizeof *blocks), sumsq = 0;
    for (int s = 0; s < p->n; s++)
        for (int k = 0; k < 2; k++) {
            vp_shard sh;
            vp_stage_state st = vp_stage_state_of(p->st[s]);
            assert_int_equal(vp_shard_of(&cfg, st.range, k, 2, &sh, NULL), VP_OK);
            vp_stage_grad_sumsq_blocks(p->st[s], sh, blocks + sh.b0);
        }
    for (int b = 0; b < n_blocks; b++)
        sumsq += blocks[b];
    free(blocks);
    if (p->n == 1) /* the single-stage sum is the same sum */
        assert_true(vp_stage_grad_sumsq(p->st[0]) == sumsq);
    assert_true(sqrt(sumsq) > 0.1); /* the clip below is active, so the norm's bits matter */
    float scale = (float)(0.1 / sqrt(sumsq));
    vp_adamw opt = {0.9f, 0.95f, 1e-8f, 0.1f};
    for (int s = 0; s < p->n; s++)
        vp_stage_adamw(p->st[s], &opt, step + 1, 1e-3f, scale);
}

/* Losses and concatenated gradients of the second step, digest after it. */
typedef struct {
    double loss[M];
    float *grads;
    size_t n;
    uint64_t digest;
} outcome;

static outcome run(int n_stages, const int *bounds, int order) {
    chain p;
    chain_new(&p, n_stages, bounds);
    outcome o = {0};
    run_step(&p, order, 0);
    for (int s = 0; s < p.n; s++) { /* gradients of the second step below */
        size_t k;
        vp_stage_grads(p.st[s], &k);
        o.n += k;
    }
    run_step(&p, order, 1); /* the update leaves the gradients in place */
    memcpy(o.loss, p.loss, sizeof o.loss);
    o.grads = malloc(o.n * sizeof(float));
    size_t at = 0;
    for (int s = 0; s < p.n; s++) {
        size_t k;
        float *g = vp_stage_grads(p.st[s], &k);
        memcpy(o.grads + at, g, k * sizeof(float));
        at += k;
    }
    o.digest = VP_DIGEST_INIT;
    for (int s = 0; s < p.n; s++)
        o.digest = vp_stage_digest(p.st[s], o.digest);
    chain_free(&p);
    return o;
}

static void assert_same(const outcome *a, const outcome *b) {
    assert_memory_equal(a->loss, b->loss, sizeof a->loss);
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->grads, b->grads, a->n * sizeof(float));
    assert_true(a->digest == b->digest);
}

/* One stage of 4 layers and stages [0,1), [1,3), [3,4) agree bit for bit. */
static void test_split_bitwise(void **state) {
    (void)state;
    const int one[2] = {0, 4}, three[4] = {0, 1, 3, 4}, four[5] = {0, 0, 2, 4, 4};
    outcome a = run(1, one, ORDER_REFERENCE);
    outcome b = run(3, three, ORDER_REFERENCE);
    outcome c = run(4, four, ORDER_REFERENCE); /* embedding-only and head-only ends */
    assert_same(&a, &b);
    assert_same(&a, &c);
    assert_true(a.loss[0] > 5.0 && a.loss[0] < 6.0); /* near ln 256 at init */
    free(a.grads);
    free(b.grads);
    free(c.grads);
}

/* Dropping after F and recomputing before B, selectively or fully, gives the bits of
 * keeping everything, on every kind of stage and in every order. */
static void test_recompute_bitwise(void **state) {
    (void)state;
    const int one[2] = {0, 4}, four[5] = {0, 0, 2, 4, 4}, three[4] = {0, 1, 3, 4};
    for (int order = ORDER_REFERENCE; order <= ORDER_DELAYED_W; order++) {
        recompute = 0;
        outcome ref = run(3, three, order);
        for (recompute = 1; recompute <= 2; recompute++) {
            outcome a = run(1, one, order), b = run(3, three, order), c = run(4, four, order);
            assert_same(&ref, &a);
            assert_same(&ref, &b);
            assert_same(&ref, &c);
            free(a.grads);
            free(b.grads);
            free(c.grads);
        }
        free(ref.grads);
    }
    recompute = 0;
}

/* B+W straight away equals B now and W later, in any order of other microbatches'
 * passes, as long as each stage's W runs in microbatch order. */
static void test_orders_bitwise(void **state) {
    (void)state;
    const int three[4] = {0, 1, 3, 4};
    outcome ref = run(3, three, ORDER_REFERENCE);
    outcome gp = run(3, three, ORDER_GPIPE);
    outcome zb = run(3, three, ORDER_DELAYED_W);
    assert_same(&ref, &gp);
    assert_same(&ref, &zb);
    free(ref.grads);
    free(gp.grads);
    free(zb.grads);
}

static void check_sizes_with(const vp_model_config *c, vp_stage_range r) {
    bool first = r.first, last = r.last;
    vp_stage_sizes sz;
    assert_int_equal(vp_stage_sizes_of(c, r, &sz, NULL), VP_OK);
    vp_mem *mem = vp_mem_new();
    vp_stage *st = NULL;
    assert_int_equal(
        vp_stage_new(c, r, &(vp_stage_options){.n_slots = 1, .seed = 5}, mem, &st, NULL), VP_OK);
    size_t np;
    vp_stage_params(st, &np);
    assert_int_equal(np * sizeof(float), sz.param_bytes);
    assert_int_equal(vp_mem_current_of(mem, VP_MEM_PARAMS), sz.param_bytes);
    assert_int_equal(vp_mem_current_of(mem, VP_MEM_GRADS), sz.param_bytes);
    assert_int_equal(vp_mem_current_of(mem, VP_MEM_OPTIMIZER), 2 * sz.param_bytes);
    assert_int_equal(vp_mem_current_of(mem, VP_MEM_WORKSPACE), sz.work_bytes);
    int n = c->microbatch * c->seq_len;
    uint8_t *tok = calloc((size_t)n, 1);
    float *in = first ? NULL : calloc(sz.io_bytes, 1), *out = NULL, *din = NULL;
    float *dout = last ? NULL : calloc(sz.io_bytes, 1);
    double loss;
    assert_int_equal(vp_stage_forward(st, 0,
                                      &(vp_stage_io){.in = in,
                                                     .tokens = first ? tok : NULL,
                                                     .targets = last ? tok : NULL,
                                                     .out = last ? NULL : &out,
                                                     .loss = last ? &loss : NULL},
                                      NULL),
                     VP_OK);
    assert_int_equal(vp_mem_current(mem), sz.act_bytes);
    if (recompute) {
        assert_int_equal(vp_stage_drop(st, 0, recompute == 2, NULL), VP_OK);
        assert_int_equal(vp_mem_current(mem),
                         recompute == 2 ? sz.input_bytes : sz.act_bytes - sz.core_bytes);
        assert_int_equal(vp_stage_recompute(st, 0, NULL), VP_OK);
        assert_int_equal(vp_mem_current(mem), sz.act_bytes);
    }
    assert_int_equal(vp_stage_backward_input(st, 0, dout, 1.0f, first ? NULL : &din, NULL), VP_OK);
    assert_int_equal(vp_mem_current(mem), sz.stash_bytes);
    assert_int_equal(vp_stage_backward_weight(st, 0, NULL), VP_OK);
    assert_int_equal(vp_mem_current(mem), 0);
    /* B adopts the output gradient, so a first stage can hold more after B */
    assert_int_equal(vp_mem_peak(mem),
                     sz.act_bytes > sz.stash_bytes ? sz.act_bytes : sz.stash_bytes);
    vp_stage_buffer_free(out);
    vp_stage_buffer_free(din);
    free(tok);
    vp_stage_free(st);
    for (int cat = 0; cat < VP_MEM_CATEGORIES; cat++)
        assert_int_equal(vp_mem_current_of(mem, (vp_mem_category)cat), 0);
    assert_int_equal(vp_mem_peak_of(mem, VP_MEM_PARAMS), sz.param_bytes);
    vp_mem_free(mem);
}

/* After F the allocator holds act_bytes (after a drop input_bytes, or act_bytes -
 * core_bytes, and after R act_bytes again), after B stash_bytes, after W nothing, and
 * never more than the larger of the two; the stage's parameters, gradients, moments and
 * scratch sit in their own categories until it is freed. Each stage on its own allocator;
 * several configurations and every kind of stage. */
static void check_sizes(const vp_model_config *c, int l0, int l1, bool first, bool last) {
    for (recompute = 0; recompute <= 2; recompute++)
        check_sizes_with(c, (vp_stage_range){l0, l1, first, last, 0, 0});
    recompute = 0;
}
static void test_sizes_match_allocator(void **state) {
    (void)state;
    const vp_model_config cfgs[] = {
        cfg,
        {.n_layer = 6, .width = 48, .n_head = 3, .seq_len = 20, .microbatch = 3, .vocab = 256},
        {.n_layer = 2, .width = 16, .n_head = 1, .seq_len = 7, .microbatch = 1, .vocab = 5},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        const vp_model_config *c = &cfgs[i];
        int L = c->n_layer;
        check_sizes(c, 0, L, true, true);
        check_sizes(c, 0, 1, true, false);
        check_sizes(c, 1, L - 1 > 1 ? L - 1 : 2, false, L - 1 <= 1);
        check_sizes(c, L - 1, L, false, true);
        check_sizes(c, 0, 0, true, false);
        check_sizes(c, L, L, false, true);
    }
    /* the sizes are additive over a split: layers, then the ends */
    vp_stage_sizes all, a, b;
    assert_int_equal(vp_stage_sizes_of(&cfg, (vp_stage_range){0, 4, true, true, 0, 0}, &all, NULL),
                     VP_OK);
    assert_int_equal(vp_stage_sizes_of(&cfg, (vp_stage_range){0, 2, true, false, 0, 0}, &a, NULL),
                     VP_OK);
    assert_int_equal(vp_stage_sizes_of(&cfg, (vp_stage_range){2, 4, false, true, 0, 0}, &b, NULL),
                     VP_OK);
    assert_int_equal(all.act_bytes, a.act_bytes + b.act_bytes);
    assert_int_equal(all.stash_bytes, a.stash_bytes + b.stash_bytes);
    assert_int_equal(all.param_bytes, a.param_bytes + b.param_bytes);
}

/* Several stages and microbatches on one allocator: the peak is the largest sum of
 * per-stage act/stash held between passes, the same for any split. */
static void test_shared_allocator_peak(void **state) {
    (void)state;
    const int one[2] = {0, 4}, three[4] = {0, 1, 3, 4};
    vp_stage_sizes sz;
    assert_int_equal(vp_stage_sizes_of(&cfg, (vp_stage_range){0, 4, true, true, 0, 0}, &sz, NULL),
                     VP_OK);
    size_t peaks[2];
    for (int k = 0; k < 2; k++) {
        chain p;
        chain_new(&p, k ? 3 : 1, k ? three : one);
        run_step(&p, ORDER_GPIPE, 0); /* M microbatches' activations at once */
        peaks[k] = vp_mem_peak(p.mem);
        chain_free(&p);
    }
    assert_int_equal(peaks[0], M * sz.act_bytes);
    assert_int_equal(peaks[1], M * sz.act_bytes);
}

static void test_misuse(void **state) {
    (void)state;
    vp_error err = {0};
    vp_model_config bad = cfg;
    bad.n_head = 5;
    assert_int_equal(vp_model_config_check(&bad, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "divisible"));
    bad = cfg;
    bad.seq_len = 0;
    assert_int_equal(vp_model_config_check(&bad, &err), VP_EINVAL);
    bad = cfg;
    bad.vocab = 300;
    assert_int_equal(vp_model_config_check(&bad, &err), VP_EINVAL);
    vp_mem *mem = vp_mem_new();
    vp_stage *st = NULL;
    assert_int_equal(vp_stage_new(&cfg, (vp_stage_range){1, 5, false, true, 0, 0},
                                  &(vp_stage_options){.n_slots = 1, .seed = 1}, mem, &st, &err),
                     VP_EINVAL);
    assert_int_equal(vp_stage_new(&cfg, (vp_stage_range){1, 2, false, false, 0, 0},
                                  &(vp_stage_options){.n_slots = 0, .seed = 1}, mem, &st, &err),
                     VP_EINVAL);
    assert_int_equal(vp_stage_new(&cfg, (vp_stage_range){2, 2, false, false, 0, 0},
                                  &(vp_stage_options){.n_slots = 1, .seed = 1}, mem, &st, &err),
                     VP_EINVAL);
    assert_int_equal(vp_stage_new(&cfg, (vp_stage_range){1, 4, true, true, 0, 0},
                                  &(vp_stage_options){.n_slots = 1, .seed = 1}, mem, &st, &err),
                     VP_EINVAL);
    assert_null(st);
    assert_int_equal(vp_stage_new(&cfg, (vp_stage_range){0, 4, true, true, 0, 0},
                                  &(vp_stage_options){.n_slots = 2, .seed = 1}, mem, &st, &err),
                     VP_OK);
    uint8_t tok[32] = {0};
    double loss;
    assert_int_equal(vp_stage_backward_input(st, 0, NULL, 1.0f, NULL, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "empty"));
    assert_int_equal(vp_stage_backward_weight(st, 1, &err), VP_EINVAL);
    assert_int_equal(
        vp_stage_forward(st, 2, &(vp_stage_io){.tokens = tok, .targets = tok, .loss = &loss}, &err),
        VP_EINVAL);
    assert_int_equal(vp_stage_forward(st, 0, &(vp_stage_io){.targets = tok, .loss = &loss}, &err),
                     VP_EINVAL);
    assert_int_equal(
        vp_stage_forward(st, 0, &(vp_stage_io){.tokens = tok, .targets = tok, .loss = &loss}, &err),
        VP_OK);
    assert_int_equal(
        vp_stage_forward(st, 0, &(vp_stage_io){.tokens = tok, .targets = tok, .loss = &loss}, &err),
        VP_EINVAL);
    assert_int_equal(vp_stage_backward_weight(st, 0, &err), VP_EINVAL);
    assert_int_equal(vp_stage_recompute(st, 0, &err), VP_EINVAL); /* not dropped */
    assert_non_null(strstr(err.message, "not dropped"));
    assert_int_equal(vp_stage_drop(st, 1, true, &err), VP_EINVAL); /* no F */
    assert_int_equal(vp_stage_drop(st, 0, true, &err), VP_OK);
    assert_int_equal(vp_stage_drop(st, 0, false, &err), VP_EINVAL);
    assert_int_equal(vp_stage_backward_input(st, 0, NULL, 1.0f, NULL, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "waiting for R"));
    vp_stage_free(st); /* frees the held slot */
    assert_int_equal(vp_mem_current(mem), 0);
    vp_model_config small = cfg;
    small.vocab = 5;
    assert_int_equal(vp_stage_new(&small, (vp_stage_range){0, 4, true, true, 0, 0},
                                  &(vp_stage_options){.n_slots = 1, .seed = 1}, mem, &st, &err),
                     VP_OK);
    tok[3] = 7;
    assert_int_equal(
        vp_stage_forward(st, 0, &(vp_stage_io){.tokens = tok, .targets = tok, .loss = &loss}, &err),
        VP_EINVAL);
    assert_non_null(strstr(err.message, "vocabulary"));
    vp_stage_free(st);
    vp_mem_free(mem);
}

/* Configurations whose sizes would overflow are refused before anything multiplies them
 * (a crafted checkpoint header reached a signed overflow here); the largest accepted
 * sizes come out exact. */
static void test_config_sizes_cannot_overflow(void **state) {
    (void)state;
    vp_error err = {0};
    vp_model_config big = cfg;
    big.microbatch = big.seq_len = 1 << 30; /* B*T*4C would pass 2^63 */
    assert_int_equal(vp_model_config_check(&big, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "too large"));
    big = cfg;
    big.width = big.n_head = 1 << 20; /* 12 C^2 parameters per layer */
    assert_int_equal(vp_model_config_check(&big, &err), VP_EINVAL);
    big = (vp_model_config){.n_layer = 2147483647,
                            .width = 8192,
                            .n_head = 1,
                            .seq_len = 64,
                            .microbatch = 8,
                            .vocab = 256};
    assert_int_equal(vp_model_config_check(&big, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "2147483647 layers"));
    big.n_layer = 1000;
    vp_stage_sizes sz;
    assert_int_equal(
        vp_stage_sizes_of(&big, (vp_stage_range){0, 1000, true, true, 0, 0}, &sz, &err), VP_OK);
    size_t C = 8192, per_layer = 12 * C * C + 13 * C;
    assert_true(sz.param_bytes == 4 * (1000 * per_layer + 256 * C + 64 * C + 2 * C + 256 * C));
}

/* ---- data ---- */

static void write_file(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

static void test_data(void **state) {
    (void)state;
    vp_data *d = NULL;
    vp_error err = {0};
    const char *gpl = "/usr/share/common-licenses/GPL-3";
    assert_int_equal(vp_data_load(gpl, 0.1, &d, &err), VP_OK);
    size_t total = vp_data_train_bytes(d) + vp_data_val_bytes(d);
    assert_true(total > 30000);
    assert_true(vp_data_val_bytes(d) == total / 10);
    uint8_t tok[2][4 * 64], tgt[2][4 * 64];
    for (int k = 0; k < 2; k++)
        assert_int_equal(vp_data_batch(d, false, 9, 17, &(vp_batch){4, 64, tok[k], tgt[k]}, NULL),
                         VP_OK);
    assert_memory_equal(tok[0], tok[1], sizeof tok[0]); /* deterministic */
    assert_memory_equal(tok[0] + 1, tgt[0], 63);        /* targets are shifted tokens */
    assert_int_equal(vp_data_batch(d, false, 10, 17, &(vp_batch){4, 64, tok[1], tgt[1]}, NULL),
                     VP_OK);
    assert_memory_not_equal(tok[0], tok[1], sizeof tok[0]); /* the seed matters */
    assert_int_equal(vp_data_batch(d, true, 0, 0,
                                   &(vp_batch){1, (int)vp_data_val_bytes(d), tok[0], tgt[0]}, &err),
                     VP_EIO);
    assert_non_null(strstr(err.message, "sequence length"));
    vp_data_free(d);

    assert_int_equal(vp_data_load("/nonexistent/file.txt", 0.1, &d, &err), VP_EIO);
    assert_null(d);
    char path[] = "/tmp/vp_model_data_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(vp_data_load(path, 0.1, &d, &err), VP_EIO); /* empty */
    assert_non_null(strstr(err.message, "empty"));
    uint8_t junk[600] = "EC02Compressed Data File";
    junk[0x57] = 1; /* window size 1 << 8 */
    junk[0x5b] = 2; /* two windows, no valid table or header */
    write_file(path, junk, sizeof junk);
    assert_int_equal(vp_data_load(path, 0.1, &d, &err), VP_EIO);
    assert_int_equal(vp_data_load(path, 1.5, &d, &err), VP_EINVAL);
    remove(path);
}

/* Only regular files are read, and at most VP_DATA_MAX bytes: a device, a directory or a
 * larger file is refused before reading, naming the file and the reason. */
static void test_data_refuses_unbounded_input(void **state) {
    (void)state;
    vp_data *d = NULL;
    vp_error err = {0};
    assert_int_equal(vp_data_load("/dev/zero", 0.1, &d, &err), VP_EIO);
    assert_null(d);
    assert_non_null(strstr(err.message, "/dev/zero: is not a regular file"));
    assert_int_equal(vp_data_load("/tmp", 0.1, &d, &err), VP_EIO);
    assert_non_null(strstr(err.message, "/tmp: is a directory"));
    char path[] = "/tmp/vp_model_big_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)VP_DATA_MAX + 1), 0); /* sparse: nothing written */
    close(fd);
    assert_int_equal(vp_data_load(path, 0.1, &d, &err), VP_EIO);
    assert_non_null(strstr(err.message, "is larger than 1073741824 bytes"));
    assert_non_null(strstr(err.message, path));
    remove(path);
    const char text[] = "abcdefghij";
    assert_int_equal(vp_data_parse(text, 10, "ten", 0.2, &d, &err), VP_OK);
    assert_int_equal(vp_data_train_bytes(d), 8);
    assert_int_equal(vp_data_val_bytes(d), 2);
    vp_data_free(d);
    assert_int_equal(vp_data_parse(text, 0, "nothing", 0.2, &d, &err), VP_EIO);
    assert_non_null(strstr(err.message, "nothing is empty"));
}

/* The KJV Bible from bible-kjv-text decodes to its 4.4 MB of text. */
static void test_kjv_decoding(void **state) {
    (void)state;
    const char *path = vp_data_default_path();
    if (!path)
        skip();
    vp_data *d = NULL;
    assert_int_equal(vp_data_load(path, 0.1, &d, NULL), VP_OK);
    assert_int_equal(vp_data_train_bytes(d) + vp_data_val_bytes(d), 4404475);
    uint8_t tok[4096], tgt[4096];
    int found = 0;
    for (int i = 0; i < 64 && !found; i++) { /* windows are readable English */
        assert_int_equal(
            vp_data_batch(d, false, 1, (uint64_t)i, &(vp_batch){1, 4096, tok, tgt}, NULL), 0);
        for (size_t k = 0; k + 5 <= sizeof tok && !found; k++)
            found = !memcmp(tok + k, " the ", 5);
    }
    assert_true(found);
    vp_data_free(d);
}

static void test_lr_schedule(void **state) {
    (void)state;
    assert_true(vp_lr_at(VP_LR_CONSTANT, 5, 10, 3, 0.1, 0.0) == 0.1);
    assert_true(fabs(vp_lr_at(VP_LR_COSINE, 0, 100, 10, 1.0, 0.1) - 0.1) < 1e-12);
    assert_true(fabs(vp_lr_at(VP_LR_COSINE, 9, 100, 10, 1.0, 0.1) - 1.0) < 1e-12);
    assert_true(fabs(vp_lr_at(VP_LR_COSINE, 10, 100, 10, 1.0, 0.1) - 1.0) < 1e-12);
    assert_true(fabs(vp_lr_at(VP_LR_COSINE, 99, 100, 10, 1.0, 0.1) - 0.1) < 1e-12);
    double mid = vp_lr_at(VP_LR_COSINE, 55, 101, 10, 1.0, 0.0);
    assert_true(fabs(mid - 0.5) < 1e-12);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_bitwise),
        cmocka_unit_test(test_orders_bitwise),
        cmocka_unit_test(test_recompute_bitwise),
        cmocka_unit_test(test_sizes_match_allocator),
        cmocka_unit_test(test_shared_allocator_peak),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_config_sizes_cannot_overflow),
        cmocka_unit_test(test_data),
        cmocka_unit_test(test_data_refuses_unbounded_input),
        cmocka_unit_test(test_kjv_decoding),
        cmocka_unit_test(test_lr_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
