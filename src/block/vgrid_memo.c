/* The memo of built V grids (block.h, vp_vgrid_memo): shots of split-mode builds keyed by
 * p, m and the block's slots, in a hash table under one lock. Entries are never removed
 * or changed until the memo is freed, so a found shot is read without the lock. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "block/vgrid_internal.h"

#define BUCKETS 4096

typedef struct entry {
    struct entry *next;
    uint64_t hash;
    int p, m;
    int (*slots)[6]; /* [p] */
    vp__vgrid_shot shot;
} entry;

struct vp_vgrid_memo {
    pthread_mutex_t mu;
    entry *bucket[BUCKETS];
    size_t bytes, max_bytes;
};

vp_status vp_vgrid_memo_new(size_t max_bytes, vp_vgrid_memo **out, vp_error *err) {
    *out = vp__calloc(1, sizeof **out);
    if (!*out)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    pthread_mutex_init(&(*out)->mu, NULL);
    (*out)->max_bytes = max_bytes;
    return VP_OK;
}

static void entry_free(entry *e) {
    free(e->slots);
    free(e->shot.ty);
    free(e->shot.mb);
    free(e);
}

void vp_vgrid_memo_free(vp_vgrid_memo *memo) {
    if (!memo)
        return;
    for (int b = 0; b < BUCKETS; b++)
        for (entry *e = memo->bucket[b], *next; e; e = next) {
            next = e->next;
            entry_free(e);
        }
    pthread_mutex_destroy(&memo->mu);
    free(memo);
}

void vp_vgrid_use_memo(vp_vgrid *w, vp_vgrid_memo *memo) {
    w->memo = memo;
}

/* FNV-1a over p, m and the slots. */
static uint64_t hash_of(const vp_vgrid *w, const int (*t)[6]) {
    uint64_t h = 1469598103934665603ULL;
    h = (h ^ (uint64_t)w->p) * 1099511628211ULL;
    h = (h ^ (uint64_t)w->m) * 1099511628211ULL;
    for (int d = 0; d < w->p; d++)
        for (int x = 0; x < 6; x++)
            h = (h ^ (uint64_t)(uint32_t)t[d][x]) * 1099511628211ULL;
    return h;
}

/* The entry of (w's p and m, t) in its bucket, or NULL (memo->mu held). */
static entry *lookup(vp_vgrid_memo *memo, uint64_t h, const vp_vgrid *w, const int (*t)[6]) {
    for (entry *e = memo->bucket[h % BUCKETS]; e; e = e->next)
        if (e->hash == h && e->p == w->p && e->m == w->m &&
            !memcmp(e->slots, t, (size_t)w->p * sizeof *e->slots))
            return e;
    return NULL;
}

const vp__vgrid_shot *vp__vgrid_memo_find(vp_vgrid_memo *memo, const vp_vgrid *w,
                                          const int (*t)[6]) {
    uint64_t h = hash_of(w, t);
    pthread_mutex_lock(&memo->mu);
    const entry *e = lookup(memo, h, w, t);
    pthread_mutex_unlock(&memo->mu);
    return e ? &e->shot : NULL;
}

void vp__vgrid_memo_keep(vp_vgrid_memo *memo, const vp_vgrid *w, const int (*t)[6]) {
    const grid *g = &w->g[w->cur];
    size_t cells = (size_t)w->p * (size_t)g->len;
    size_t bytes = sizeof(entry) + (size_t)w->p * sizeof *t + cells * (1 + sizeof(int32_t));
    entry *e = vp__calloc(1, sizeof *e);
    if (!e)
        return;
    *e = (entry){.hash = hash_of(w, t),
                 .p = w->p,
                 .m = w->m,
                 .shot = {g->len, w->mw, w->mm, w->cut, w->extra, w->order_peak, NULL, NULL}};
    e->slots = vp__malloc((size_t)w->p, sizeof *e->slots);
    e->shot.ty = vp__malloc(cells + 1, 1);
    e->shot.mb = vp__malloc(cells + 1, sizeof *e->shot.mb);
    if (!e->slots || !e->shot.ty || !e->shot.mb) {
        entry_free(e);
        return;
    }
    memcpy(e->slots, t, (size_t)w->p * sizeof *e->slots);
    for (int d = 0; d < w->p && g->len > 0; d++) {
        memcpy(e->shot.ty + (size_t)d * g->len, g->ty + CELL(g, d, 0), (size_t)g->len);
        memcpy(e->shot.mb + (size_t)d * g->len, g->mb + CELL(g, d, 0),
               (size_t)g->len * sizeof *g->mb);
    }
    pthread_mutex_lock(&memo->mu);
    bool room = memo->bytes + bytes <= memo->max_bytes && !lookup(memo, e->hash, w, t);
    if (room) {
        e->next = memo->bucket[e->hash % BUCKETS];
        memo->bucket[e->hash % BUCKETS] = e;
        memo->bytes += bytes;
    }
    pthread_mutex_unlock(&memo->mu);
    if (!room)
        entry_free(e);
}
