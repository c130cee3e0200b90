/* Offload of a slot's activations to a host pool and back (vpipe/model.h).
 *
 * What a slot holds between F (or a drop) and its backward is listed in one order: each
 * layer's tensors in the order of vp__block_act, then the stage's own (its input after a
 * full drop, tokens, targets, the last stage's final-norm and head tensors). An offload of
 * a share x takes the longest prefix of that list whose every tensor's middle lies within
 * x of the list's bytes (x = 1: all of it), whole tensors only. The pure size function and
 * the stage read the same list, so the bytes predicted are the bytes moved.
 */
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "model/stage_internal.h"

/* One tensor a slot holds: its layer (-1: the stage's own), which field, its size. */
typedef struct held {
    int layer, field;
    size_t bytes;
} held;

/* The fields of a block's activations, in the list's order. */
static const size_t block_fields[] = {
    offsetof(vp__block_act, x),     offsetof(vp__block_act, ln1),   offsetof(vp__block_act, mean1),
    offsetof(vp__block_act, rstd1), offsetof(vp__block_act, qkv),   offsetof(vp__block_act, probs),
    offsetof(vp__block_act, att),   offsetof(vp__block_act, x2),    offsetof(vp__block_act, ln2),
    offsetof(vp__block_act, mean2), offsetof(vp__block_act, rstd2), offsetof(vp__block_act, h),
    offsetof(vp__block_act, hg),    offsetof(vp__block_act, part)};
enum { BLOCK_FIELDS = sizeof block_fields / sizeof block_fields[0], PROBS_FIELD = 5 };

/* The stage's own fields, in the list's order. */
enum { S_INPUT, S_TOKENS, S_TARGETS, S_XF, S_LNF, S_MEANF, S_RSTDF, S_PROBS, S_PARTF, S_FIELDS };
static const size_t slot_fields[S_FIELDS] = {
    offsetof(vp__slot, input), offsetof(vp__slot, tokens), offsetof(vp__slot, targets),
    offsetof(vp__slot, xf),    offsetof(vp__slot, lnf),    offsetof(vp__slot, meanf),
    offsetof(vp__slot, rstdf), offsetof(vp__slot, probs),  offsetof(vp__slot, partf)};

/* What a stage of nl layers (first, last; split: vocabulary parallelism, which keeps the
 * tokens, targets and head on the vocabulary stages) holds in slot state `state` (after F,
 * after a selective drop, after a full drop), into out (capacity nl * BLOCK_FIELDS +
 * S_FIELDS); returns the count. */
static int held_list(vp__dims d, int vocab, int nl, bool first, bool last, bool split, int state,
                     held *out) {
    vp__block_bytes z = vp__block_bytes_of(d);
    size_t f = sizeof(float), N = (size_t)d.B * (size_t)d.T, C = (size_t)d.C;
    const size_t block_sizes[BLOCK_FIELDS] = {z.nc, z.nc, z.n, z.n, z.qkv, z.probs, z.nc,
                                              z.nc, z.nc, z.n, z.n, z.h,   z.h,     z.part};
    int n = 0;
    for (int l = 0; state != VP__SLOT_INPUT_ONLY && l < nl; l++)
        for (int k = 0; k < BLOCK_FIELDS; k++)
            if (k != PROBS_FIELD || state != VP__SLOT_NO_CORE)
                out[n++] = (held){l, k, block_sizes[k]};
    if (state == VP__SLOT_INPUT_ONLY && !first)
        out[n++] = (held){-1, S_INPUT, f * N * C};
    if (first && !split)
        out[n++] = (held){-1, S_TOKENS, N};
    if (last) {
        if (!split)
            out[n++] = (held){-1, S_TARGETS, N};
        const size_t sizes[] = {f * N * C, f * N * C, f * N, f * N, f * N * (size_t)vocab,
                                f * 2 * C};
        for (int k = S_XF; state != VP__SLOT_INPUT_ONLY && k <= S_PARTF; k++)
            if (!split || (k != S_LNF && k != S_PROBS)) /* the shards' S holds those */
                out[n++] = (held){-1, k, sizes[k - S_XF]};
    }
    return n;
}

/* How many of the n tensors of list an offload of share takes: the longest prefix whose
 * every tensor's middle lies within share of the list's bytes. */
static int take_count(const held *list, int n, double share) {
    double total = 0, cum = 0;
    for (int i = 0; i < n; i++)
        total += (double)list[i].bytes;
    int k = 0;
    while (k < n && cum + 0.5 * (double)list[k].bytes <= share * total * (1 + 1e-12)) {
        cum += (double)list[k].bytes;
        k++;
    }
    return k;
}

/* The slot state a drop mode leaves (0 none, 1 selective, 2 full). */
static int state_of_drop(int drop) {
    return drop == 2 ? VP__SLOT_INPUT_ONLY : drop == 1 ? VP__SLOT_NO_CORE : VP__SLOT_ACT;
}

vp_status vp_stage_offload_bytes(const vp_model_config *cfg, vp_stage_range range, int drop,
                                 double share, size_t *bytes, vp_error *err) {
    vp_stage_sizes sz;
    vp_status rc = vp_stage_sizes_of(cfg, range, &sz, err);
    if (rc != VP_OK)
        return rc;
    if (!(share >= 0 && share <= 1) || drop < 0 || drop > 2)
        return vp__fail(err, VP_EINVAL, "offload share %g or drop %d out of range", share, drop);
    int nl = range.l1 - range.l0;
    held *list = vp__calloc((size_t)nl * BLOCK_FIELDS + S_FIELDS, sizeof *list);
    if (!list)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp__dims d = {cfg->microbatch, cfg->seq_len, cfg->width, cfg->n_head, false};
    int n = held_list(d, cfg->vocab, nl, range.first, range.last, range.vocab_shards > 0,
                      state_of_drop(drop), list);
    int k = take_count(list, n, share);
    *bytes = 0;
    for (int i = 0; i < k; i++)
        *bytes += list[i].bytes;
    free(list);
    return VP_OK;
}

/* The address of entry h's field in slot sl. */
static void **field_of(vp__slot *sl, const held *h) {
    char *base = h->layer >= 0 ? (char *)&sl->blocks[h->layer] : (char *)sl;
    return (void **)(base + (h->layer >= 0 ? block_fields[h->field] : slot_fields[h->field]));
}

/* Slot mb of s with off_state `want` and a pass state an offload may find, or VP_EINVAL. */
static vp_status off_check(vp_stage *s, int mb, int want, const char *what, vp_error *err) {
    if (mb < 0 || mb >= s->n_slots)
        return vp__fail(err, VP_EINVAL, "%s: microbatch slot %d is not in [0, %d)", what, mb,
                        s->n_slots);
    const vp__slot *sl = &s->slots[mb];
    int state = sl->state;
    if (state != VP__SLOT_ACT && state != VP__SLOT_NO_CORE && state != VP__SLOT_INPUT_ONLY)
        return vp__fail(err, VP_EINVAL, "%s: microbatch slot %d of stage [%d, %d) holds no forward",
                        what, mb, s->l0, s->l1);
    if (sl->off_state != want)
        return vp__fail(err, VP_EINVAL, "%s: microbatch slot %d of stage [%d, %d) is not %s", what,
                        mb, s->l0, s->l1,
                        want == VP__OFF_NONE     ? "on the device"
                        : want == VP__OFF_COPIED ? "copied to host"
                        : want == VP__OFF_AWAY   ? "offloaded"
                                                 : "reserved for its reload");
    return VP_OK;
}

vp_status vp_stage_offload_copy(vp_stage *s, int mb, double share, vp_mem *host, vp_error *err) {
    vp_status rc = off_check(s, mb, VP__OFF_NONE, "offload", err);
    if (rc != VP_OK)
        return rc;
    if (!(share >= 0 && share <= 1) || !host)
        return vp__fail(err, VP_EINVAL, "offload: a share in [0, 1] and a host pool");
    vp__slot *sl = &s->slots[mb];
    held *list = vp__calloc((size_t)s->n_local * BLOCK_FIELDS + S_FIELDS, sizeof *list);
    int n = list ? held_list(s->d, s->cfg.vocab, s->n_local, s->first, s->last, s->vocab_shards > 0,
                             sl->state, list)
                 : 0;
    int k = take_count(list, n, share);
    sl->off = list ? vp__calloc((size_t)k + 1, sizeof *sl->off) : NULL;
    sl->host = host;
    bool ok = sl->off != NULL;
    for (int i = 0; ok && i < k; i++) {
        vp__off *o = &sl->off[sl->n_off];
        o->field = field_of(sl, &list[i]);
        o->bytes = list[i].bytes;
        VP_ASSERT(*o->field); /* held_list lists what the state holds */
        ok = (o->host = vp_mem_alloc(host, o->bytes)) != NULL;
        if (ok) {
            memcpy(o->host, *o->field, o->bytes);
            sl->n_off++;
        }
    }
    free(list);
    sl->off_state = VP__OFF_COPIED;
    if (!ok) {
        vp__slot_offload_discard(sl);
        return vp__fail(err, VP_ENOMEM, "offload: out of host memory");
    }
    return VP_OK;
}

vp_status vp_stage_offload_release(vp_stage *s, int mb, vp_error *err) {
    vp_status rc = off_check(s, mb, VP__OFF_COPIED, "offload release", err);
    if (rc != VP_OK)
        return rc;
    vp__slot *sl = &s->slots[mb];
    for (int i = 0; i < sl->n_off; i++) {
        vp_mem_release(s->mem, *sl->off[i].field, sl->off[i].bytes);
        *sl->off[i].field = NULL;
    }
    sl->off_state = VP__OFF_AWAY;
    return VP_OK;
}

vp_status vp_stage_reload_reserve(vp_stage *s, int mb, vp_error *err) {
    vp_status rc = off_check(s, mb, VP__OFF_AWAY, "reload", err);
    if (rc != VP_OK)
        return rc;
    vp__slot *sl = &s->slots[mb];
    for (int i = 0; i < sl->n_off; i++)
        if (!(*sl->off[i].field = vp_mem_alloc(s->mem, sl->off[i].bytes))) {
            for (int j = 0; j < i; j++) { /* back to offloaded: the host pool is not ours */
                vp_mem_release(s->mem, *sl->off[j].field, sl->off[j].bytes);
                *sl->off[j].field = NULL;
            }
            return vp__fail(err, VP_ENOMEM, "reload: out of memory for activations");
        }
    sl->off_state = VP__OFF_RESERVED;
    return VP_OK;
}

vp_status vp_stage_reload_copy(vp_stage *s, int mb, vp_error *err) {
    vp_status rc = off_check(s, mb, VP__OFF_RESERVED, "reload copy", err);
    if (rc != VP_OK)
        return rc;
    vp__slot *sl = &s->slots[mb];
    for (int i = 0; i < sl->n_off; i++)
        memcpy(*sl->off[i].field, sl->off[i].host, sl->off[i].bytes);
    vp__slot_offload_discard(sl);
    return VP_OK;
}

void vp__slot_offload_discard(vp__slot *sl) {
    for (int i = 0; i < sl->n_off; i++)
        vp_mem_release(sl->host, sl->off[i].host, sl->off[i].bytes);
    free(sl->off);
    sl->off = NULL;
    sl->n_off = 0;
    sl->off_state = VP__OFF_NONE;
}
