/* ZB-V: the Zero Bubble paper's V schedule, built greedily from the real costs.
 *
 * V placement: device d holds chunk 0 (stage d) and chunk 1 (stage 2p-1-d). A
 * microbatch's forward runs down chunk 0 and back up chunk 1, its input backward down
 * chunk 1 ("B1" below) and back up chunk 0 ("B0"); W run later from a per-device FIFO.
 * Memory limit: p units per device (2p chunk activations) unless the spec sets mem_limit.
 *
 * The greedy, per device: end time, memory, bubble (waiting after its first forward):
 *  1. warm-up: F0 of microbatch 0 down the devices; then, from the bottom device up,
 *     device i runs F1 of microbatch 0 after filling the wait with more F0 rounds on
 *     devices 0..i while memory (2+2i chunk activations ahead) and time allow;
 *  2. devices below the top catch up with alternating F0/F1 rounds until each has run
 *     at least as many forwards as the device above it;
 *  3. 2m steps, each one B per device (B1 once its chunk-1 dependency is done, else B0),
 *     then at most one F per device (F1 when its input is ready, else F0), with pending W
 *     run before a pass while they fit the wait for its dependency, plus one more when the
 *     wait would raise the worst bubble (always before B1; by option before B0 and F),
 *     and whenever memory needs room;
 *  4. the remaining W.
 * Two options (fill before B0, fill before F) give 4 variants; each is re-run with the
 * previous run's per-device bubbles as an allowance while that lowers the worst bubble.
 * The variant with the smallest worst bubble wins.
 */
#include <stdlib.h>
#include <string.h>

#include "families/families_internal.h"

/* Pass categories, numbered as the op kinds they are. */
enum { CAT_F = VP_OP_F, CAT_B = VP_OP_B, CAT_W = VP_OP_W };

typedef struct zbv {
    int p, m, S;
    const vp_cost_model *cm;
    double limit, eps;
    int fill_f, fill_b;
    int *count;        /* [p*6]: index cat*2 + chunk (B/W chunk 0 = model chunk 1) */
    double *tf, *tb;   /* [S*m] end times, < 0 while not run */
    double *cur, *mem; /* [p] */
    double *bub, maxbub;
    const double *approved; /* [p] allowance per device, or NULL */
    double max_approved;
    int *wq, *whead, *wtail; /* [p*2m] pending W (stage*m + mb) ring per device */
    vp_schedule *s;
    vp_status rc;
} zbv;

/* Stage of a pass: F chunk 0 and B chunk 1 run stage d, the others stage 2p-1-d. */
static int stage_of(const zbv *z, int cat, int chunk, int d) {
    int own = cat == CAT_F ? chunk == 0 : chunk == 1;
    return own ? d : 2 * z->p - 1 - d;
}

static double pass_cost(const zbv *z, int cat, int stage) {
    return vp_cost_model_pass_time(z->cm, cat, stage);
}

/* Net memory change of a pass of category cat of stage, in units. */
static double pass_mem(const zbv *z, int cat, int stage) {
    double up, down;
    vp_cost_model_pass_memory(z->cm, cat, stage, 0, &up, &down);
    return up - down;
}

/* End time of (cat, chunk) on device d for microbatch mb; < 0 when not run. */
static double end_of(const zbv *z, int cat, int chunk, int d, int mb) {
    size_t at = (size_t)stage_of(z, cat, chunk, d) * z->m + mb;
    return cat == CAT_F ? z->tf[at] : z->tb[at];
}

static double worst_bubble(const zbv *z, int d) {
    double w = z->maxbub;
    if (z->approved && z->max_approved - z->approved[d] > w)
        w = z->max_approved - z->approved[d];
    return w;
}

static void put(zbv *z, int cat, int chunk, int d) {
    if (z->rc != VP_OK)
        return;
    int stage = stage_of(z, cat, chunk, d), cnt = z->count[d * 6 + cat * 2 + chunk];
    double dur = pass_cost(z, cat, stage), t = z->cur[d] + dur, no_wait = t;
    if (cnt >= z->m || z->mem[d] + pass_mem(z, cat, stage) > z->limit + z->eps) {
        z->rc = VP_EINVAL;
        return;
    }
    if (cat < CAT_W && (cat > 0 || chunk > 0)) { /* the same-device predecessor */
        int prev = cat * 2 + chunk - 1;
        if (end_of(z, prev / 2, prev % 2, d, cnt) < 0) {
            z->rc = VP_EINVAL;
            return;
        }
    }
    int dep_d = -1;
    if (cat < CAT_W && chunk == 1 && d < z->p - 1)
        dep_d = d + 1;
    if (cat < CAT_W && chunk == 0 && d > 0)
        dep_d = d - 1;
    if (dep_d >= 0) {
        double e = end_of(z, cat, chunk, dep_d, cnt);
        if (e < 0) {
            z->rc = VP_EINVAL;
            return;
        }
        if (e + z->cm->c + dur > t)
            t = e + z->cm->c + dur;
    }
    if (z->count[d * 6] > 0) {
        z->bub[d] += t - no_wait;
        if (z->bub[d] > z->maxbub)
            z->maxbub = z->bub[d];
    }
    size_t at = (size_t)stage * z->m + cnt;
    if (cat == CAT_F)
        z->tf[at] = t;
    else if (cat == CAT_B)
        z->tb[at] = t;
    z->cur[d] = t;
    z->mem[d] += pass_mem(z, cat, stage);
    z->count[d * 6 + cat * 2 + chunk]++;
    if (cat == CAT_B)
        z->wq[(size_t)d * 2 * z->m + (size_t)(z->wtail[d]++)] = chunk;
    vp_op_kind kind = cat == CAT_F ? VP_OP_F : cat == CAT_B ? VP_OP_B : VP_OP_W;
    if (z->s)
        z->rc = vp_schedule_push_pass(z->s, d, kind, stage, cnt);
}

static int pending_w(const zbv *z, int d) {
    return z->wtail[d] - z->whead[d];
}

/* Cost of the W at the head of device d's queue. */
static double next_w_cost(const zbv *z, int d) {
    int chunk = z->wq[(size_t)d * 2 * z->m + (size_t)z->whead[d]];
    return pass_cost(z, CAT_W, stage_of(z, CAT_W, chunk, d));
}

static void put_w(zbv *z, int d) {
    if (z->rc != VP_OK)
        return;
    if (!pending_w(z, d)) {
        z->rc = VP_EINVAL;
        return;
    }
    put(z, CAT_W, z->wq[(size_t)d * 2 * z->m + (size_t)(z->whead[d]++)], d);
}

/* Runs pending W before a pass whose dependency ends at dep_end (< 0: none): all that fit
 * the wait, then one more when the wait exceeds the allowance and `extra` permits. */
static void fill_wait(zbv *z, int d, double dep_end, int extra) {
    if (dep_end < 0)
        return;
    double arrive = dep_end + z->cm->c;
    while (z->rc == VP_OK && pending_w(z, d) && arrive >= z->cur[d] + next_w_cost(z, d) - z->eps)
        put_w(z, d);
    if (z->rc == VP_OK && pending_w(z, d) &&
        arrive - z->cur[d] > worst_bubble(z, d) - z->bub[d] + z->eps && extra)
        put_w(z, d);
}

static void warmup(zbv *z) {
    int p = z->p, m = z->m;
    for (int i = 0; i < p; i++)
        put(z, CAT_F, 0, i);
    for (int i = p - 1; i >= 0 && z->rc == VP_OK; i--) {
        if (i < p - 1) {
            double arrive = end_of(z, CAT_F, 1, i + 1, 0) + z->cm->c;
            while (z->rc == VP_OK && z->mem[i] + z->cm->act[i] * (2 + 2 * i) <= z->limit + z->eps &&
                   z->cur[i] + z->cm->f[i] <= arrive + z->eps && z->count[i * 6] < m)
                for (int j = 0; j <= i; j++)
                    put(z, CAT_F, 0, j);
        }
        put(z, CAT_F, 1, i);
    }
    int chunk = 0;
    for (int i = 1; i < p && z->rc == VP_OK; i++) {
        const int *c = &z->count[i * 6], *up = &z->count[(i - 1) * 6];
        for (int guard = 0; c[0] + c[1] < up[0] + up[1] || (c[1] <= up[1] && up[1] < m); guard++) {
            if (guard > 4 * m + 8 || z->rc != VP_OK) {
                z->rc = VP_EINVAL;
                return;
            }
            for (int j = p - 1; j >= i; j--)
                if (z->count[j * 6 + chunk] < m)
                    put(z, CAT_F, chunk, j);
            chunk = 1 - chunk;
        }
    }
}

static void backward_step(zbv *z) {
    int p = z->p;
    for (int i = 0; i < p; i++)
        while (z->rc == VP_OK && z->mem[i] + pass_mem(z, CAT_B, i) > z->limit + z->eps)
            put_w(z, i);
    /* B1 where its chunk-1 input gradient is there (bottom device first), then B0 */
    int *b1 = vp__calloc((size_t)p, sizeof *b1);
    if (!b1) {
        z->rc = VP_ENOMEM;
        return;
    }
    for (int i = 0; i < p; i++) {
        const int *c = &z->count[i * 6];
        if (c[3] >= c[2])
            b1[i] = 0;
        else if (i == p - 1)
            b1[i] = 1;
        else
            b1[i] = end_of(z, CAT_B, 1, i + 1, c[3]) >= 0 || c[2] >= z->m;
    }
    for (int pass = 1; pass >= 0; pass--) {
        for (int x = 0; x < p && z->rc == VP_OK; x++) {
            int i = pass ? p - 1 - x : x;
            if (b1[i] != pass)
                continue;
            const int *c = &z->count[i * 6];
            double dep = -1;
            if (pass == 1 && i < p - 1)
                dep = end_of(z, CAT_B, 1, i + 1, c[3]);
            if (pass == 0 && i > 0)
                dep = end_of(z, CAT_B, 0, i - 1, c[2]);
            fill_wait(z, i, dep, pass == 1 || z->fill_b);
            put(z, CAT_B, pass, i);
        }
    }
    free(b1);
}

static void forward_step(zbv *z) {
    int p = z->p, m = z->m;
    for (int i = 0; i < p && z->rc == VP_OK; i++) {
        const int *c = &z->count[i * 6];
        if (c[1] >= m)
            continue;
        int item = -1;
        if (c[1] >= c[0])
            item = 0;
        else if (i == p - 1 || end_of(z, CAT_F, 1, i + 1, c[1]) >= 0)
            item = 1;
        else if (c[0] < m && (i == 0 || end_of(z, CAT_F, 0, i - 1, c[0]) >= 0))
            item = 0;
        if (item < 0)
            continue;
        double need = pass_mem(z, CAT_F, stage_of(z, CAT_F, item, i));
        while (z->rc == VP_OK && z->mem[i] + need > z->limit + z->eps)
            put_w(z, i);
        double dep = -1;
        if (item == 0 && i > 0)
            dep = end_of(z, CAT_F, 0, i - 1, c[0]);
        if (item == 1 && i < p - 1)
            dep = end_of(z, CAT_F, 1, i + 1, c[1]);
        fill_wait(z, i, dep, z->fill_f);
        put(z, CAT_F, item, i);
    }
}

/* One run, into a new schedule z->s when record is set (else only timed); returns the
 * worst bubble, or -1 on failure. */
static double run(zbv *z, const double *approved, int record) {
    int p = z->p, m = z->m;
    z->rc = VP_OK;
    z->maxbub = 0;
    z->approved = approved;
    z->max_approved = -1;
    for (int d = 0; approved && d < p; d++)
        if (approved[d] > z->max_approved)
            z->max_approved = approved[d];
    memset(z->count, 0, (size_t)p * 6 * sizeof *z->count);
    for (size_t x = 0; x < (size_t)z->S * m; x++)
        z->tf[x] = z->tb[x] = -1;
    for (int d = 0; d < p; d++) {
        z->cur[d] = z->mem[d] = z->bub[d] = 0;
        z->whead[d] = z->wtail[d] = 0;
    }
    z->s = NULL;
    if (record)
        z->rc = vp_schedule_new(
            "zb-v", (vp_shape){.p = p, .S = 2 * p, .m = m, .placement = VP_PLACE_V}, &z->s, NULL);
    if (z->rc != VP_OK)
        return -1;
    warmup(z);
    for (int step = 0; step < 2 * m && z->rc == VP_OK; step++) {
        backward_step(z);
        forward_step(z);
    }
    for (int d = 0; d < p; d++)
        while (z->rc == VP_OK && pending_w(z, d))
            put_w(z, d);
    return z->rc == VP_OK ? z->maxbub : -1;
}

/* The best run so far: its options and the allowance it ran with (has_allow 0: none);
 * first: it is the first run, whose schedule is kept in case it wins. */
typedef struct best_run {
    int found, fill_b, fill_f, has_allow, first;
    double bubble;
    double *allow; /* [p] */
} best_run;

/* Keeps the run just made (options of z, allowance approved) when its worst bubble is the
 * smallest so far; earlier runs win ties. */
static void keep_if_better(const zbv *z, double bubble, const double *approved, best_run *best) {
    if (bubble < 0 || (best->found && !(bubble < best->bubble - z->eps)))
        return;
    best->first = !best->found && z->s;
    best->found = 1;
    best->bubble = bubble;
    best->fill_b = z->fill_b;
    best->fill_f = z->fill_f;
    best->has_allow = approved != NULL;
    if (approved)
        memcpy(best->allow, approved, (size_t)z->p * sizeof *best->allow);
}

/* 1 when no later run can win: a worst bubble of zero cannot be beaten. */
static int unbeatable(const zbv *z, const best_run *best) {
    return best->found && best->bubble <= z->eps;
}

/* The 4 option variants, each re-run with the last run's bubbles as allowance while the
 * worst one drops, the best kept in *best. The runs are timed only, but the first is also
 * recorded into *first in case it wins. VP_ENOMEM or VP_OK. */
static vp_status search_runs(zbv *z, double *allow, best_run *best, vp_schedule **first) {
    for (int v = 0; v < 4 && !unbeatable(z, best); v++) {
        z->fill_b = !(v & 2); /* the paper's order: fill_b True first, then fill_f */
        z->fill_f = !(v & 1);
        double prev = -1;
        for (int level = 0; level < 64 && !unbeatable(z, best); level++) {
            double bubble = run(z, level ? allow : NULL, !v && !level);
            if (z->rc == VP_ENOMEM) {
                vp_schedule_free(z->s);
                z->s = NULL;
                return VP_ENOMEM;
            }
            keep_if_better(z, bubble, level ? allow : NULL, best);
            if (!v && !level && bubble >= 0)
                *first = z->s;
            else
                vp_schedule_free(z->s);
            z->s = NULL;
            if (bubble >= 0)
                memcpy(allow, z->bub, (size_t)z->p * sizeof *allow);
            if (bubble < 0 || (level > 0 && !(bubble < prev - z->eps)))
                break;
            prev = bubble;
        }
    }
    return VP_OK;
}

/* The best run's schedule into *out: the first run's (taken from *first), or the best run
 * again, recorded. */
static vp_status winner_schedule(zbv *z, const best_run *best, vp_schedule **first,
                                 vp_schedule **out) {
    if (best->first) {
        *out = *first;
        *first = NULL;
        return VP_OK;
    }
    z->fill_b = best->fill_b;
    z->fill_f = best->fill_f;
    double bubble = run(z, best->has_allow ? best->allow : NULL, 1);
    *out = z->s;
    z->s = NULL;
    return bubble >= 0 ? VP_OK : z->rc == VP_OK ? VP_EINVAL : z->rc;
}

vp_status vp__build_zbv(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    vp_status rc = vp__check_pm("zb-v", spec, err);
    if (rc != VP_OK)
        return rc;
    int p = spec->p, m = spec->m;
    vp_cost_model *cm = NULL;
    rc = vp__spec_cost_model(spec, (vp_shape){.p = p, .S = 2 * p, .m = 1, .placement = VP_PLACE_V},
                             &cm, err);
    if (rc != VP_OK)
        return rc;
    zbv z = {.p = p, .m = m, .S = 2 * p, .cm = cm, .eps = 1e-9};
    z.limit = spec->mem_limit > 0 ? spec->mem_limit : p;
    size_t cells = (size_t)2 * p * (size_t)m;
    z.count = vp__calloc((size_t)p * 6, sizeof *z.count);
    z.tf = vp__calloc(cells, sizeof *z.tf);
    z.tb = vp__calloc(cells, sizeof *z.tb);
    z.cur = vp__calloc((size_t)p, sizeof *z.cur);
    z.mem = vp__calloc((size_t)p, sizeof *z.mem);
    z.bub = vp__calloc((size_t)p, sizeof *z.bub);
    z.wq = vp__calloc(cells, sizeof *z.wq);
    z.whead = vp__calloc((size_t)p, sizeof *z.whead);
    z.wtail = vp__calloc((size_t)p, sizeof *z.wtail);
    double *allow = vp__calloc((size_t)p, sizeof *allow);
    best_run best = {.allow = vp__calloc((size_t)p, sizeof *best.allow)};
    if (!z.count || !z.tf || !z.tb || !z.cur || !z.mem || !z.bub || !z.wq || !z.whead || !z.wtail ||
        !allow || !best.allow)
        rc = VP_ENOMEM;
    vp_schedule *first = NULL, *winner = NULL;
    if (rc == VP_OK)
        rc = search_runs(&z, allow, &best, &first);
    if (rc == VP_OK && best.found)
        rc = winner_schedule(&z, &best, &first, &winner);
    free(z.count);
    free(z.tf);
    free(z.tb);
    free(z.cur);
    free(z.mem);
    free(z.bub);
    free(z.wq);
    free(z.whead);
    free(z.wtail);
    free(allow);
    free(best.allow);
    vp_schedule_free(first);
    vp_cost_model_free(cm);
    if (rc != VP_OK) {
        vp_schedule_free(winner);
        return vp__fail(err, rc,
                        rc == VP_ENOMEM ? "out of memory" : "zb-v: the best run failed to replay");
    }
    if (!winner)
        return vp__fail(err, VP_EINVAL,
                        "zb-v cannot schedule p=%d, m=%d within %g units per device", p, m,
                        z.limit);
    *out = winner;
    return VP_OK;
}
