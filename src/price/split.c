/* The layer split: how many layers each position of a route holds. */
#include <stdlib.h>

#include "base/internal.h"
#include "price/price_internal.h"

vp_status vp__split_check(const int *counts, int n, int route_len, int layers, vp_error *err) {
    if (n != route_len)
        return vp__fail(err, VP_EINVAL, "layers per stage: %d values for %d stages", n, route_len);
    long sum = 0;
    for (int k = 0; k < n; k++) {
        bool middle = k > 0 && k < n - 1;
        if (counts[k] < (middle ? 1 : 0) || counts[k] > layers)
            return vp__fail(err, VP_EINVAL,
                            "layers per stage: stage %d holds %d layers (a middle "
                            "stage needs at least one)",
                            k, counts[k]);
        sum += counts[k];
    }
    if (sum != layers)
        return vp__fail(err, VP_EINVAL, "layers per stage add up to %ld, the model has %d", sum,
                        layers);
    return VP_OK;
}

/* Order in which equal candidates get a layer: the middle positions from the front, then
 * the first, then the last (so an even split gives the ends fewer, as vp_split_layers). */
static int candidate(int i, int R) {
    if (R <= 2)
        return i;
    return i < R - 2 ? i + 1 : (i == R - 2 ? 0 : R - 1);
}

/* Load after adding one layer at position k: the largest resulting load of a device that
 * holds a stage at k (per_device), or of the position itself. */
static double load_after(const vp_schedule *s, const vp__split_costs *c, const int *counts,
                         double *dev_load, int k) {
    int R = s->route_len;
    double own = c->ends[k] + (counts[k] + 1) * c->layer[k];
    if (!c->per_device)
        return own;
    for (int st = k; st < s->S; st += R)
        dev_load[s->stage_device[st]] += c->layer[k];
    double worst = 0;
    for (int st = k; st < s->S; st += R)
        if (dev_load[s->stage_device[st]] > worst)
            worst = dev_load[s->stage_device[st]];
    for (int st = k; st < s->S; st += R)
        dev_load[s->stage_device[st]] -= c->layer[k];
    return worst;
}

/* Greedy water-filling: every layer goes where the resulting load is smallest (ties: the
 * smaller position load, then the candidate order). With loads linear in the counts this
 * minimises the largest load. */
vp_status vp__split_layers(const vp_schedule *s, int layers, const vp__split_costs *c, int *counts,
                           vp_error *err) {
    int R = s->route_len;
    if (layers < R - 2)
        return vp__fail(err, VP_EINVAL,
                        "%d layers cannot fill %d stages: every stage but the "
                        "first and the last needs a layer (use at least %d layers)",
                        layers, R, R - 2);
    double *dev_load = vp__calloc((size_t)s->p, sizeof *dev_load);
    if (!dev_load)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    int placed = 0;
    for (int k = 0; k < R; k++) {
        counts[k] = k > 0 && k < R - 1 ? 1 : 0;
        placed += counts[k];
    }
    for (int st = 0; st < s->S; st++)
        dev_load[s->stage_device[st]] += c->ends[st % R] + counts[st % R] * c->layer[st % R];
    for (; placed < layers; placed++) {
        int best = -1;
        double best_load = 0, best_own = 0;
        for (int i = 0; i < R; i++) {
            int k = candidate(i, R);
            double load = load_after(s, c, counts, dev_load, k);
            double own = c->ends[k] + (counts[k] + 1) * c->layer[k];
            if (best < 0 || load < best_load || (load == best_load && own < best_own)) {
                best = k;
                best_load = load;
                best_own = own;
            }
        }
        counts[best]++;
        for (int st = best; st < s->S; st += R)
            dev_load[s->stage_device[st]] += c->layer[best];
    }
    free(dev_load);
    return VP_OK;
}

vp_status vp__stage_live_max(const vp_schedule *s, double *live, vp_error *err) {
    double *now = vp__calloc((size_t)s->S, sizeof *now);
    if (!now)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int st = 0; st < s->S; st++)
        live[st] = 0;
    for (int d = 0; d < s->p; d++)
        for (int i = 0; i < s->dev[d].n; i++) {
            const vp_op *op = &s->dev[d].ops[i];
            int kind = op->kind, stage = op->stage;
            if (kind == VP_OP_F || kind == VP_OP_FB) {
                if (++now[stage] > live[stage])
                    live[stage] = now[stage];
                if (kind == VP_OP_F)
                    continue;
                kind = op->bkind;
                stage = op->stage2;
            }
            if (kind == VP_OP_W || kind == VP_OP_BW)
                now[stage]--;
        }
    free(now);
    return VP_OK;
}
