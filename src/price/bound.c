/* What a layout tells before any schedule is built or simulated: lower bounds of the step
 * time and of the largest rank's memory, and the memory of a schedule's op order. */
#include <stdlib.h>

#include "base/internal.h"
#include "price/price_internal.h"

/* Pass-time sums of a single route (S == route_len) for the makespan bound. */
typedef struct route_sums {
    double f_all;   /* every stage's F and the hops between devices along the route */
    double *head;   /* [p] F chain (with hops) before the device's first stage */
    double *tail_b; /* [p] B chain (with hops) after the device's last stage */
} route_sums;

/* Fills the route sums of lay (one route): for each device, the forward chain before its
 * first stage and the backward chain after its last stage (less the share `hide` of each
 * pass's all-to-all an overlapped pair may hide). */
static void sum_route(const vp_price_layout *lay, double hide, route_sums *r) {
    int S = lay->S;
    double chain = 0;
    for (int d = 0; d < lay->p; d++)
        r->head[d] = r->tail_b[d] = -1;
    for (int st = 0; st < S; st++) {
        const vp_price_stage *g = &lay->stage[st];
        if (st > 0 && lay->stage[st - 1].device != g->device)
            chain += lay->hop_ms;
        if (r->head[g->device] < 0)
            r->head[g->device] = chain;
        chain += g->f_ms - hide * g->a2a_f_ms;
    }
    r->f_all = chain;
    chain = 0;
    for (int st = S - 1; st >= 0; st--) {
        const vp_price_stage *g = &lay->stage[st];
        if (r->tail_b[g->device] < 0)
            r->tail_b[g->device] = chain;
        chain += g->b_ms - hide * g->a2a_b_ms +
                 (st > 0 && lay->stage[st - 1].device != g->device ? lay->hop_ms : 0);
    }
}

/* The makespan bound of each device in ms (dev[p]): the larger of (its first F cannot start before
 * the forward chain reaches it, then all its passes) and (its first B cannot start before the whole
 * forward chain and the backward chain down to its last stage, then all its B and W). A
 * bidirectional layout (two routes) uses the passes alone. */
static vp_status makespan_bound(const vp_price_layout *lay, int m, double hide, double *dev,
                                vp_error *err) {
    int p = lay->p;
    bool one_route = lay->S == lay->route_len;
    double per_stage = (double)m * lay->route_len / lay->S; /* microbatches through a stage */
    double *work = vp__calloc(4 * (size_t)p, sizeof *work), *bw = work + p;
    if (!work)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    route_sums r = {0, work + 2 * p, work + 3 * p};
    bool r_passes = lay->cm->recompute != VP_RECOMPUTE_NONE; /* else r_ms is in b_ms */
    for (int st = 0; st < lay->S; st++) {
        const vp_price_stage *g = &lay->stage[st];
        double r_ms = r_passes ? g->r_ms : 0;
        double xf = hide * g->a2a_f_ms, xb = hide * g->a2a_b_ms;
        work[g->device] += per_stage * (g->f_ms + r_ms + g->b_ms + g->w_ms - xf - xb);
        bw[g->device] += per_stage * (r_ms + g->b_ms + g->w_ms - xb);
    }
    if (one_route)
        sum_route(lay, hide, &r);
    for (int d = 0; d < p; d++) {
        double lb = work[d];
        if (one_route && r.head[d] >= 0) {
            double by_forward = r.head[d] + work[d], by_backward = r.f_all + r.tail_b[d] + bw[d];
            lb = by_forward > by_backward ? by_forward : by_backward;
        }
        dev[d] = lb;
    }
    free(work);
    return VP_OK;
}

/* The memory bound for a step of `microbatches`: every item but activations, plus on each
 * device what one microbatch holds when it reaches the device's last stage of its route
 * (its earlier stages there still hold what their F keeps: their B needs that stage's B
 * first). */
static double memory_bound(const vp_price_layout *lay, int microbatches) {
    double most = 0;
    for (int d = 0; d < lay->p; d++) {
        double act = 0;
        for (int first = 0; first < lay->S; first += lay->route_len) {
            double route = 0;
            int last = -1; /* the route's last stage on d */
            for (int st = first; st < first + lay->route_len; st++)
                if (lay->stage[st].device == d) {
                    route += lay->stage[st].hold_bytes;
                    last = st;
                }
            if (last >= 0) /* which has just run its F */
                route += lay->stage[last].act_bytes - lay->stage[last].hold_bytes;
            act = route > act ? route : act;
        }
        vp_rank_memory m;
        vp__rank_memory(lay, d, microbatches, act, &m);
        most = m.total > most ? m.total : most;
    }
    return most;
}

/* The bounds with `hide` of each all-to-all a pair may hide. */
static vp_status layout_bound(const vp_price_setup *su, const vp_price_layout *lay, int m,
                              double hide, vp_price_bound *out, vp_error *err) {
    if (m < 1)
        return vp__fail(err, VP_EINVAL, "a step needs at least one microbatch (got m %d)", m);
    double *dev = vp__calloc((size_t)lay->p, sizeof *dev);
    if (!dev)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = makespan_bound(lay, m, hide, dev, err);
    if (rc == VP_OK) {
        double makespan = 0;
        for (int d = 0; d < lay->p; d++) {
            makespan = dev[d] > makespan ? dev[d] : makespan;
            dev[d] /= 1e3;
        }
        vp__step_tail tail;
        vp__step_tail_of(su, lay, lay->fixed, dev, &tail);
        out->makespan_s = makespan / 1e3;
        out->step_time_s = tail.step_s;
        out->memory_max_bytes = memory_bound(lay, m);
    }
    free(dev);
    return rc;
}

vp_status vp_price_layout_bound(const vp_price_setup *su, const vp_price_layout *lay, int m,
                                vp_price_bound *out, vp_error *err) {
    return layout_bound(su, lay, m, vp__overlap_bound_rate(lay), out, err);
}

vp_status vp_price_layout_bound_of(const vp_price_setup *su, const vp_price_layout *lay,
                                   const vp_schedule *like, int m, vp_price_bound *out,
                                   vp_error *err) {
    bool pairs = vp__overlap_fuses(lay, like) || vp__overlap_pairs(like) > 0;
    return layout_bound(su, lay, m, pairs ? vp__overlap_bound_rate(lay) : 0, out, err);
}

vp_status vp_price_layout_memory(const vp_price_layout *lay, const vp_schedule *s,
                                 vp_rank_memory *memory, vp_error *err) {
    if (!vp__price_same_shape(lay, s))
        return vp__fail(err, VP_EINVAL, "the layout was priced for another shape than %s's",
                        s->family);
    double *peak = vp__calloc(2 * (size_t)s->p, sizeof *peak), *host = peak + s->p;
    if (!peak)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_memory_peaks(s, lay->cm, 1, peak);
    vp_status rc = vp_memory_host_peaks(s, lay->cm, host, err);
    for (int d = 0; d < s->p; d++) {
        vp__rank_memory(lay, d, s->m, peak[d], &memory[d]);
        memory[d].host = host[d] * lay->unit_bytes;
    }
    free(peak);
    return rc;
}
