/* The search's memo of schedules whose order ignores the costs (vp_family.costs_free):
 * configurations that differ in degrees, microbatch size, recomputation or ZeRO stage but
 * share a family, PP, m and chunk count build the same schedule, so it is built (and
 * validated) once and copied. Keyed by every input its build reads; thread-safe; it keeps
 * at most MEMO_OPS ops, building afresh past that. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "hybrid/hybrid_internal.h"

/* The most ops the memo keeps (20 bytes each: 40 MiB), and bytes of V grids. */
#define MEMO_OPS (1L << 21)
#define GRID_BYTES ((size_t)64 << 20)

typedef struct entry {
    const vp_family *family;
    int p, m, v;
    long max_ops;
    bool ep_pairs; /* the layout's: vp_price_build fuses F&B pairs then */
    bool mean;     /* vp_price_build's mean_costs */
    vp_schedule *s;
} entry;

struct vp__hy_memo {
    pthread_mutex_t mu;
    vp_vgrid_memo *grids; /* the V families' block builds (vp_spec.grids) */
    entry *e;
    int n, cap;
    long ops; /* held by the entries */
};

vp__hy_memo *vp__hy_memo_new(void) {
    vp__hy_memo *memo = vp__calloc(1, sizeof *memo);
    if (!memo || vp_vgrid_memo_new(GRID_BYTES, &memo->grids, NULL) != VP_OK) {
        free(memo);
        return NULL;
    }
    pthread_mutex_init(&memo->mu, NULL);
    return memo;
}

void vp__hy_memo_free(vp__hy_memo *memo) {
    if (!memo)
        return;
    for (int i = 0; i < memo->n; i++)
        vp_schedule_free(memo->e[i].s);
    pthread_mutex_destroy(&memo->mu);
    vp_vgrid_memo_free(memo->grids);
    free(memo->e);
    free(memo);
}

static long ops_of(const vp_schedule *s) {
    long n = 0;
    for (int d = 0; d < s->p; d++)
        n += s->dev[d].n;
    return n;
}

/* A copy of s (its shape and every device's ops) into *out. */
static vp_status copy(const vp_schedule *s, vp_schedule **out, vp_error *err) {
    vp_status rc = vp_schedule_copy_shape(s, out, err);
    for (int d = 0; rc == VP_OK && d < s->p; d++) {
        vp_oplist *l = &(*out)->dev[d];
        int n = s->dev[d].n;
        if (n > 0 && vp__grow((void **)&l->ops, &l->cap, n, sizeof *l->ops) != 0) {
            vp_schedule_free(*out);
            *out = NULL;
            return vp__fail(err, VP_ENOMEM, "out of memory");
        }
        if (n > 0)
            memcpy(l->ops, s->dev[d].ops, (size_t)n * sizeof *l->ops);
        l->n = n;
    }
    return rc;
}

/* The entry of key, or NULL (memo->mu held). */
static const entry *find(const vp__hy_memo *memo, const entry *key) {
    for (int i = 0; i < memo->n; i++) {
        const entry *x = &memo->e[i];
        if (x->family == key->family && x->p == key->p && x->m == key->m && x->v == key->v &&
            x->max_ops == key->max_ops && x->ep_pairs == key->ep_pairs)
            return x;
    }
    return NULL;
}

/* Keeps a copy of s under key when there is room and no entry has it. */
static void keep(vp__hy_memo *memo, entry key, const vp_schedule *s) {
    long n = ops_of(s);
    if (n > MEMO_OPS || copy(s, &key.s, NULL) != VP_OK)
        return;
    pthread_mutex_lock(&memo->mu);
    if (memo->ops + n <= MEMO_OPS && !find(memo, &key) &&
        vp__grow((void **)&memo->e, &memo->cap, memo->n + 1, sizeof *memo->e) == 0) {
        memo->e[memo->n++] = key;
        memo->ops += n;
        key.s = NULL;
    }
    pthread_mutex_unlock(&memo->mu);
    vp_schedule_free(key.s);
}

vp_status vp__hy_memo_build(vp__hy_memo *memo, const vp_price_layout *lay, const char *family,
                            const vp_spec *spec, vp_schedule **out, bool *mean, vp_error *err) {
    const vp_family *f = vp_family_find(family);
    bool plain = memo && f && f->costs_free && !spec->vocab_parallel &&
                 spec->recompute == VP_RECOMPUTE_NONE && spec->offload.policy == VP_OFFLOAD_NONE;
    vp_spec shared = *spec;
    shared.grids = memo ? memo->grids : NULL;
    if (!plain)
        return vp_price_build(lay, family, &shared, out, mean, err);
    entry key = {f, spec->p, spec->m, spec->v, spec->max_ops, lay->ep_pairs, false, NULL};
    pthread_mutex_lock(&memo->mu);
    const entry *hit = find(memo, &key);
    const vp_schedule *kept = hit ? hit->s : NULL; /* stays while the memo lives */
    *mean = hit && hit->mean;
    pthread_mutex_unlock(&memo->mu);
    if (kept)
        return copy(kept, out, err);
    vp_status rc = vp_price_build(lay, family, spec, out, mean, err);
    key.mean = *mean;
    if (rc == VP_OK)
        keep(memo, key, *out);
    return rc;
}
