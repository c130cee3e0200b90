/* ZB auto: the Zero Bubble paper's greedy scheduler under a memory limit, one stage per
 * device (presets zb-1p: limit p units, zb-2p: limit 2p units).
 *
 * The greedy walks microbatches in order and keeps, per device, its end time, memory and
 * accumulated bubble (waiting after its first forward):
 *  - microbatch 0: F on every device, then as many extra warm-up F as memory allows and
 *    as fit before the first B arrives (each device strictly fewer than the one before),
 *    then the B chain back;
 *  - later microbatches: every device runs its next F (devices may skip it to let a B go
 *    first when they run >= 2 forwards ahead), then the B chain back; before each F or B
 *    it runs pending W while they fit the wait for the dependency, and one more W when
 *    the wait would raise the worst bubble (or always, by option), and W whenever memory
 *    would exceed the limit;
 *  - the remaining W at the end.
 * Three yes/no options (an extra F in a short gap before the first B; letting B go first
 * when a device runs ahead; W greediness) give 8 variants; the one with the shortest
 * longest device span wins (first on ties). Costs and the hop time c are per stage from
 * the cost model, memory from the memory model (F adds act, B frees act-keep, W keep).
 */
#include <stdio.h>
#include <stdlib.h>

#include "families/families_internal.h"

/* One pass a run placed, in the order it placed them (its device is its stage's). */
typedef struct placed {
    int32_t stage, mb;
    uint8_t kind;
} placed;

typedef struct zba {
    int S, m;
    const vp_cost_model *cm;
    double limit, eps;
    int allow_gap, prioritize_b, greedy_w; /* the three options */
    int *nf, *nb, *nw;
    double *time, *delta; /* [3S] of F, B and W at [kind * S + stage]: the cost model's time
                             and net memory change in units, read once */
    double *mem, *end, *bub, maxbub;
    double *tf, *tb;    /* [S*m] end times of F and B */
    placed *log, *best; /* [3*S*m] the passes of this run and of the best so far */
    long n_log, n_best;
    vp_status rc;
} zba;

static double cost(const zba *z, vp_op_kind k, int j) {
    return z->time[k * z->S + j];
}

/* Net memory change of pass k of stage j, in units. */
static double mem_delta(const zba *z, vp_op_kind k, int j) {
    return z->delta[k * z->S + j];
}

/* Reads the cost model's times and memory changes of F, B and W into z's tables. */
static void read_costs(zba *z) {
    for (int k = VP_OP_F; k <= VP_OP_W; k++)
        for (int j = 0; j < z->S; j++) {
            double up, down;
            vp_cost_model_pass_memory(z->cm, k, j, 0, &up, &down);
            z->time[k * z->S + j] = vp_cost_model_pass_time(z->cm, k, j);
            z->delta[k * z->S + j] = up - down;
        }
}

static void put(zba *z, int j, vp_op_kind k) {
    if (z->rc != VP_OK)
        return;
    int *cnt = k == VP_OP_F ? z->nf : k == VP_OP_B ? z->nb : z->nw;
    int idx = cnt[j];
    if (idx >= z->m || (k == VP_OP_W && idx >= z->nb[j])) {
        z->rc = VP_EINVAL;
        return;
    }
    double c = cost(z, k, j), t = z->end[j] + c, no_wait = t;
    if (k == VP_OP_F && j > 0 && z->tf[(size_t)(j - 1) * z->m + idx] + z->cm->c + c > t)
        t = z->tf[(size_t)(j - 1) * z->m + idx] + z->cm->c + c;
    if (k == VP_OP_B && j + 1 < z->S && z->tb[(size_t)(j + 1) * z->m + idx] + z->cm->c + c > t)
        t = z->tb[(size_t)(j + 1) * z->m + idx] + z->cm->c + c;
    if (z->nf[j] > 0) {
        z->bub[j] += t - no_wait;
        if (z->bub[j] > z->maxbub)
            z->maxbub = z->bub[j];
    }
    z->end[j] = t;
    if (k == VP_OP_F)
        z->tf[(size_t)j * z->m + idx] = t;
    else if (k == VP_OP_B)
        z->tb[(size_t)j * z->m + idx] = t;
    z->mem[j] += mem_delta(z, k, j);
    cnt[j]++;
    z->log[z->n_log++] = (placed){j, idx, (uint8_t)k};
}

/* Runs W until pass k fits the memory limit; VP_EINVAL when no W is left to run. */
static void make_room(zba *z, int j, vp_op_kind k) {
    while (z->rc == VP_OK && z->mem[j] + mem_delta(z, k, j) > z->limit + z->eps) {
        if (z->nw[j] >= z->nb[j]) {
            z->rc = VP_EINVAL;
            return;
        }
        put(z, j, VP_OP_W);
    }
}

/* Fills the wait until `arrive` (a dependency's end + c) with W: every W that fits, then
 * one more when the wait would raise the worst bubble, or (greedy) in any case. */
static void fill_wait(zba *z, int j, double arrive) {
    while (z->rc == VP_OK && z->nw[j] < z->nb[j] &&
           z->end[j] + cost(z, VP_OP_W, j) <= arrive + z->eps)
        put(z, j, VP_OP_W);
    if (z->rc == VP_OK && z->nw[j] < z->nb[j] && z->end[j] < arrive - z->eps) {
        if (arrive - z->end[j] > z->maxbub - z->bub[j] + z->eps || z->greedy_w)
            put(z, j, VP_OP_W);
    }
}

static void warmup(zba *z, int *req) {
    int S = z->S, m = z->m;
    double c = z->cm->c;
    for (int j = 0; j < S; j++)
        put(z, j, VP_OP_F);
    double last = 0;
    for (int j = S - 1; j >= 0; j--) {
        req[j] = 0;
        if (j == S - 1) {
            last = z->tf[(size_t)j * m] + cost(z, VP_OP_B, j);
            continue;
        }
        double mem = z->mem[j], t = z->end[j];
        while (z->nf[j] + req[j] < m && mem + mem_delta(z, VP_OP_F, j) <= z->limit + z->eps) {
            if (z->allow_gap ? t + cost(z, VP_OP_F, j) > last + c + z->eps : t >= last + c - z->eps)
                break;
            mem += mem_delta(z, VP_OP_F, j);
            t += cost(z, VP_OP_F, j);
            req[j]++;
        }
        last = (t > last + c ? t : last + c) + cost(z, VP_OP_B, j);
    }
    req[S - 1] = 0;
    for (int j = 1; j < S; j++)
        while (req[j] > 0 && req[j] >= req[j - 1] && z->nf[j] + req[j] < m)
            req[j]--;
    for (int j = 0; j < S; j++)
        for (int x = 0; x < req[j]; x++)
            put(z, j, VP_OP_F);
    for (int j = S - 1; j >= 0; j--)
        put(z, j, VP_OP_B);
}

/* Whether device j should run its next F this step (before the B chain). */
static int wants_forward(const zba *z, int j) {
    if (z->nf[j] >= z->m)
        return 0;
    if (!(z->prioritize_b && j + 1 < z->S && z->nf[j] >= z->nf[j + 1] + 2))
        return 1;
    double next_b = z->end[j + 1] + cost(z, VP_OP_F, j + 1) + cost(z, VP_OP_B, j + 1) + z->cm->c;
    if (z->end[j] >= next_b - z->eps)
        return 0;
    double wcost = 0, mem = z->mem[j] + mem_delta(z, VP_OP_F, j);
    for (int x = 0; mem > z->limit + z->eps && z->nw[j] + x < z->nb[j]; x++) {
        wcost += cost(z, VP_OP_W, j);
        mem += mem_delta(z, VP_OP_W, j);
    }
    if (z->end[j] + cost(z, VP_OP_F, j) + wcost <= next_b + z->eps)
        return 1;
    return next_b - z->end[j] > z->maxbub - z->bub[j] + z->eps;
}

static void step(zba *z, int i, int *req) {
    int S = z->S, m = z->m;
    for (int j = 0; j < S; j++)
        req[j] = wants_forward(z, j);
    for (int j = S - 2; j >= 0; j--)
        if (req[j + 1] < req[j])
            req[j] = req[j + 1];
    for (int j = 0; j < S && z->rc == VP_OK; j++) {
        if (!req[j])
            continue;
        make_room(z, j, VP_OP_F);
        if (j > 0)
            fill_wait(z, j, z->tf[(size_t)(j - 1) * m + z->nf[j]] + z->cm->c);
        put(z, j, VP_OP_F);
    }
    for (int j = S - 1; j >= 0 && z->rc == VP_OK; j--) {
        if (z->nb[j] != i || z->nf[j] <= i) {
            z->rc = VP_EINVAL;
            return;
        }
        make_room(z, j, VP_OP_B);
        if (j + 1 < S)
            fill_wait(z, j, z->tb[(size_t)(j + 1) * m + i] + z->cm->c);
        if (j == 0 && z->nf[j] == m)
            while (z->rc == VP_OK && z->nw[j] < z->nb[j])
                put(z, j, VP_OP_W);
        put(z, j, VP_OP_B);
    }
}

/* One run of the options in z, its passes into z->log; returns the longest device span,
 * or -1 when the variant cannot keep to the memory limit (z->rc says why). */
static double run_variant(zba *z, int *req) {
    int S = z->S, m = z->m;
    for (int j = 0; j < S; j++) {
        z->nf[j] = z->nb[j] = z->nw[j] = 0;
        z->mem[j] = z->end[j] = z->bub[j] = 0;
    }
    z->maxbub = 0;
    z->rc = VP_OK;
    z->n_log = 0;
    for (int i = 0; i < m && z->rc == VP_OK; i++) {
        if (i == 0)
            warmup(z, req);
        else
            step(z, i, req);
    }
    for (int j = 0; j < S; j++)
        while (z->rc == VP_OK && z->nw[j] < m)
            put(z, j, VP_OP_W);
    if (z->rc != VP_OK)
        return -1;
    double span = 0;
    for (int j = 0; j < S; j++) {
        double first = z->tf[(size_t)j * m] - cost(z, VP_OP_F, j);
        if (z->end[j] - first > span)
            span = z->end[j] - first;
    }
    return span;
}

/* The longest span no variant can beat: the most work on one device. */
static double most_work(const zba *z) {
    double most = 0;
    for (int j = 0; j < z->S; j++) {
        double work = z->m * (cost(z, VP_OP_F, j) + cost(z, VP_OP_B, j) + cost(z, VP_OP_W, j));
        most = work > most ? work : most;
    }
    return most;
}

/* Sets z's three options to variant v (the paper's order: True before False). */
static void set_options(zba *z, int v) {
    z->allow_gap = !(v & 4);
    z->prioritize_b = !(v & 2);
    z->greedy_w = !(v & 1);
}

/* The best of the 8 variants into *out (NULL when none keeps to the limit): each run logs
 * its passes, the winner's log is kept and becomes the schedule; once a span meets the most
 * work on one device no later variant can win. */
static vp_status best_variant(zba *z, int *req, vp_schedule **out) {
    double best_span = 0, floor = most_work(z);
    int winner = -1;
    for (int v = 0; v < 8; v++) {
        if (winner >= 0 && best_span <= floor + 0.5e-9 * (1 + floor))
            break;
        set_options(z, v);
        double span = run_variant(z, req);
        if (span >= 0 && (winner < 0 || span < best_span - 1e-9 * (1 + span))) {
            winner = v;
            best_span = span;
            placed *kept = z->best;
            z->best = z->log;
            z->log = kept;
            z->n_best = z->n_log;
        }
    }
    *out = NULL;
    if (winner < 0)
        return VP_OK;
    vp_status rc = vp_schedule_new(
        "zb-auto", (vp_shape){.p = z->S, .S = z->S, .m = z->m, .placement = VP_PLACE_SINGLE}, out,
        NULL);
    for (long i = 0; rc == VP_OK && i < z->n_best; i++)
        rc = vp_schedule_push_pass(*out, z->best[i].stage, z->best[i].kind, z->best[i].stage,
                                   z->best[i].mb);
    if (rc != VP_OK) {
        vp_schedule_free(*out);
        *out = NULL;
    }
    return rc;
}

/* Builds the best of the 8 variants under limit (units per device). */
static vp_status zb_auto(const char *name, const vp_spec *spec, double limit, vp_schedule **out,
                         vp_error *err) {
    vp_status rc = vp__check_pm(name, spec, err);
    if (rc != VP_OK)
        return rc;
    int p = spec->p, m = spec->m;
    vp_cost_model *cm = NULL;
    rc = vp__spec_cost_model(spec, (vp_shape){.p = p, .S = p, .m = 1, .placement = VP_PLACE_SINGLE},
                             &cm, err);
    if (rc != VP_OK)
        return rc;
    if (!(limit >= 1.0 - 1e-9)) {
        vp_cost_model_free(cm);
        return vp__fail(err, VP_EINVAL,
                        "%s needs a memory limit of at least 1 unit (one microbatch's "
                        "activation), got %g",
                        name, limit);
    }
    zba z = {.S = p, .m = m, .cm = cm, .limit = limit, .eps = 1e-9};
    size_t cells = (size_t)p * (size_t)m;
    int *req = vp__calloc((size_t)p, sizeof *req);
    z.nf = vp__calloc((size_t)p, sizeof *z.nf);
    z.nb = vp__calloc((size_t)p, sizeof *z.nb);
    z.nw = vp__calloc((size_t)p, sizeof *z.nw);
    z.mem = vp__calloc((size_t)p, sizeof *z.mem);
    z.end = vp__calloc((size_t)p, sizeof *z.end);
    z.bub = vp__calloc((size_t)p, sizeof *z.bub);
    z.time = vp__calloc(3 * (size_t)p, sizeof *z.time);
    z.delta = vp__calloc(3 * (size_t)p, sizeof *z.delta);
    z.tf = vp__calloc(cells, sizeof *z.tf);
    z.tb = vp__calloc(cells, sizeof *z.tb);
    z.log = vp__malloc(3 * cells, sizeof *z.log);
    z.best = vp__malloc(3 * cells, sizeof *z.best);
    vp_schedule *best = NULL;
    rc = (req && z.nf && z.nb && z.nw && z.mem && z.end && z.bub && z.time && z.delta && z.tf &&
          z.tb && z.log && z.best)
             ? VP_OK
             : VP_ENOMEM;
    if (rc == VP_OK) {
        read_costs(&z);
        rc = best_variant(&z, req, &best);
    }
    free(req);
    free(z.nf);
    free(z.nb);
    free(z.nw);
    free(z.mem);
    free(z.end);
    free(z.bub);
    free(z.time);
    free(z.delta);
    free(z.tf);
    free(z.tb);
    free(z.log);
    free(z.best);
    vp_cost_model_free(cm);
    if (rc != VP_OK) {
        vp_schedule_free(best);
        if (rc == VP_ENOMEM)
            return vp__fail(err, rc, "out of memory");
        return vp__fail(err, rc, "%s: the best variant failed to replay", name);
    }
    if (!best)
        return vp__fail(err, VP_EINVAL,
                        "%s cannot keep to a memory limit of %g units at p=%d, m=%d under this "
                        "memory model (raise the limit)",
                        name, limit, p, m);
    snprintf(best->family, sizeof best->family, "%s", name);
    *out = best;
    return VP_OK;
}

vp_status vp__build_zb1p(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return zb_auto("zb-1p", spec, spec->mem_limit > 0 ? spec->mem_limit : spec->p, out, err);
}

vp_status vp__build_zb2p(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    return zb_auto("zb-2p", spec, spec->mem_limit > 0 ? spec->mem_limit : 2.0 * spec->p, out, err);
}
