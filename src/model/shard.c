/* Where a stage sits in the whole model's flat arrays, its ZeRO-1 shards, and the
 * gradient norm's blocks (see vpipe/model.h). */
#include "base/internal.h"
#include "model/stage_internal.h"

/* The units of a stage: the embeddings (first), its layers, the final norm with the head
 * (last), with their sizes in floats. With vocabulary parallelism the first stage's
 * embedding is the position table and the last's unit the final norm; a vocabulary
 * stage's two units are its rows of the token table and of the head. */
typedef struct units {
    size_t emb, layer, head; /* floats of each kind of unit */
    int count;
    vp_stage_range range;
} units;

/* Rows of shard k of the vocabulary under range r's parallelism. */
static size_t shard_rows(const vp_model_config *cfg, vp_stage_range r, int k) {
    int v0, v1;
    vp_vocab_rows(cfg->vocab, k, r.vocab_shards, &v0, &v1);
    return (size_t)(v1 - v0);
}

static units units_of(const vp_model_config *cfg, vp_stage_range r) {
    size_t C = (size_t)cfg->width, V = (size_t)cfg->vocab, T = (size_t)cfg->seq_len;
    size_t layer = (size_t)vp__block_param_count(cfg->width);
    if (r.vocab_shard) {
        size_t rows = shard_rows(cfg, r, r.vocab_shard - 1) * C;
        return (units){rows, 0, rows, 2, r};
    }
    int n = r.first + (r.l1 - r.l0) + r.last;
    if (r.vocab_shards)
        return (units){T * C, layer, 2 * C, n, r};
    return (units){V * C + T * C, layer, 2 * C + V * C, n, r};
}

static size_t unit_size(const units *u, int k) {
    if ((u->range.first || u->range.vocab_shard) && k == 0)
        return u->emb;
    return (u->range.last || u->range.vocab_shard) && k == u->count - 1 ? u->head : u->layer;
}

static int blocks_in(size_t floats) {
    return (int)((floats + VP_NORM_BLOCK - 1) / VP_NORM_BLOCK);
}

/* Blocks of the vocabulary shards before shard k (all of them for k = shards): each one's
 * token-table rows, then its head rows. */
static int shard_blocks_before(const vp_model_config *cfg, vp_stage_range r, int k) {
    int b = 0;
    for (int j = 0; j < k; j++)
        b += 2 * blocks_in(shard_rows(cfg, r, j) * (size_t)cfg->width);
    return b;
}

/* Calls visit(ctx, b, start, end) for every block of the stage, b counted from 0 in the
 * stage, [start, end) its elements; stops when visit returns false. */
static void each_block(const units *u, bool (*visit)(void *, int, size_t, size_t), void *ctx) {
    size_t at = 0;
    for (int k = 0, b = 0; k < u->count; k++) {
        size_t end = at + unit_size(u, k);
        for (size_t next; at < end; at = next, b++) {
            next = end - at > VP_NORM_BLOCK ? at + VP_NORM_BLOCK : end;
            if (!visit(ctx, b, at, next))
                return;
        }
    }
}

/* The stage's first block in the model's block order (vpipe/model.h: with vocabulary
 * parallelism the shards' blocks first). */
static int first_block(const vp_model_config *cfg, const units *u) {
    vp_stage_range r = u->range;
    if (r.vocab_shard)
        return shard_blocks_before(cfg, r, r.vocab_shard - 1);
    int shards = r.vocab_shards ? shard_blocks_before(cfg, r, r.vocab_shards) : 0;
    size_t emb = (size_t)cfg->seq_len * (size_t)cfg->width; /* of every stage after the first */
    if (!r.vocab_shards)
        emb += (size_t)cfg->vocab * (size_t)cfg->width;
    return shards + (r.first ? 0 : blocks_in(emb) + r.l0 * blocks_in(u->layer));
}

vp_status vp_stage_offset_of(const vp_model_config *cfg, vp_stage_range range, size_t *offset,
                             vp_error *err) {
    vp_stage_sizes sz;
    vp_status st = vp_stage_sizes_of(cfg, range, &sz, err);
    if (st == VP_OK && range.vocab_shard)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "a vocabulary shard's rows of the token table and of the head are two "
                        "slices of the model's arrays, not one");
    if (st == VP_OK) {
        size_t C = (size_t)cfg->width, table = (size_t)cfg->vocab * C;
        size_t emb = table + (size_t)cfg->seq_len * C;
        size_t layer = (size_t)vp__block_param_count(cfg->width);
        *offset = range.first ? (range.vocab_shards ? table : 0) : emb + (size_t)range.l0 * layer;
    }
    return st;
}

int vp_norm_blocks(const vp_model_config *cfg, int vocab_shards) {
    vp_stage_range whole = {0, cfg ? cfg->n_layer : 0, true, true, vocab_shards, 0};
    vp_stage_sizes sz;
    if (!cfg || vp_stage_sizes_of(cfg, whole, &sz, NULL) != VP_OK)
        return 0;
    units u = units_of(cfg, whole);
    return first_block(cfg, &u) + blocks_in(u.emb) + cfg->n_layer * blocks_in(u.layer) +
           blocks_in(u.head);
}

int vp_norm_block_count(const vp_model_config *cfg) {
    return vp_norm_blocks(cfg, 0);
}

/* Finding the cut of a shard: the block boundary nearest to target (the lower of two as
 * near). */
typedef struct cut {
    size_t target, at, dist;
    int block; /* -1 until a boundary was seen */
} cut;

static void consider(cut *c, int block, size_t at) {
    size_t dist = at > c->target ? at - c->target : c->target - at;
    if (c->block < 0 || dist < c->dist)
        *c = (cut){c->target, at, dist, block};
}

static bool nearest_start(void *ctx, int b, size_t start, size_t end) {
    (void)end;
    consider(ctx, b, start);
    return start <= ((cut *)ctx)->target;
}

/* The boundary nearest to target elements into the stage of n elements and blocks
 * blocks: a block's start, or the end. */
static cut cut_at(const units *u, size_t n, int blocks, size_t target) {
    cut c = {target, 0, 0, -1};
    each_block(u, nearest_start, &c);
    consider(&c, blocks, n);
    return c;
}

size_t vp_shard_moment_bytes(vp_shard sh) {
    return 2 * sizeof(float) * (sh.hi - sh.lo);
}

vp_status vp_shard_of(const vp_model_config *cfg, vp_stage_range range, int k, int n, vp_shard *out,
                      vp_error *err) {
    vp_stage_sizes sz;
    vp_status st = vp_stage_sizes_of(cfg, range, &sz, err);
    if (st != VP_OK)
        return st;
    if (n < 1 || k < 0 || k >= n)
        return vp__fail(err, VP_EINVAL, "no shard %d of %d", k, n);
    units u = units_of(cfg, range);
    size_t total = sz.param_bytes / sizeof(float);
    int blocks = 0;
    for (int j = 0; j < u.count; j++)
        blocks += blocks_in(unit_size(&u, j));
    /* the even share of shard j ends at total * j / n, computed without overflow */
    size_t lo_target = total / (size_t)n * (size_t)k + total % (size_t)n * (size_t)k / (size_t)n;
    size_t hi_target =
        total / (size_t)n * (size_t)(k + 1) + total % (size_t)n * (size_t)(k + 1) / (size_t)n;
    cut lo = cut_at(&u, total, blocks, lo_target), hi = cut_at(&u, total, blocks, hi_target);
    int b0 = first_block(cfg, &u);
    *out = (vp_shard){lo.at, hi.at, b0 + lo.block, b0 + hi.block};
    return VP_OK;
}

/* Squares of g[start, end) added in double, in order. */
static double squares(const float *g, size_t start, size_t end) {
    double sum = 0.0;
    for (size_t i = start; i < end; i++)
        sum += (double)g[i] * g[i];
    return sum;
}

/* Summing the blocks of a shard, or (sh NULL) the whole stage's blocks in order. */
typedef struct block_sums {
    const vp_stage *s;
    const vp_shard *sh;
    int b0; /* the stage's first block in the model's order */
    double *out, total;
} block_sums;

static bool sum_block(void *ctx, int b, size_t start, size_t end) {
    block_sums *bs = ctx;
    if (!bs->sh) {
        bs->total += squares(bs->s->grads, start, end);
        return true;
    }
    if (start >= bs->sh->hi)
        return false;
    if (start >= bs->sh->lo)
        bs->out[bs->b0 + b - bs->sh->b0] = squares(bs->s->grads, start, end);
    return true;
}

static units stage_units(const vp_stage *s) {
    return units_of(&s->cfg, (vp_stage_range){s->l0, s->l1, s->first, s->last, s->vocab_shards,
                                              s->vocab_shard});
}

void vp_stage_grad_sumsq_blocks(const vp_stage *s, vp_shard sh, double *out) {
    units u = stage_units(s);
    block_sums bs = {s, &sh, first_block(&s->cfg, &u), out, 0.0};
    each_block(&u, sum_block, &bs);
}

double vp_stage_grad_sumsq(const vp_stage *s) {
    units u = stage_units(s);
    block_sums bs = {s, NULL, 0, NULL, 0.0};
    each_block(&u, sum_block, &bs);
    return bs.total;
}
