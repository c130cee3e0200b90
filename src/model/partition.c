/* The layer split: which layers each stage of a route holds. */
#include "base/internal.h"
#include "vpipe/model.h"

vp_status vp_split_layers(int n_layer, int route_len, int *l0, vp_error *err) {
    if (route_len < 1 || n_layer < 0)
        return vp__fail(err, VP_EINVAL, "cannot split %d layers over %d stages", n_layer,
                        route_len);
    /* Equal shares; the remainder (< route_len) goes to the middle stages, and what the
     * middle cannot take (at most one layer) to the first stage. */
    int base = n_layer / route_len, rem = n_layer % route_len;
    l0[0] = 0;
    for (int k = 0; k < route_len; k++) {
        int is_middle = k > 0 && k < route_len - 1;
        int count = base + (is_middle && k <= rem);
        if (k == 0 && rem > route_len - 2 && route_len > 1)
            count++;
        if (is_middle && count == 0)
            return vp__fail(err, VP_EINVAL,
                            "%d layers cannot fill %d stages: every stage but the first and "
                            "the last needs a layer (use at least %d layers)",
                            n_layer, route_len, route_len - 2);
        l0[k + 1] = l0[k] + count;
    }
    return VP_OK;
}

vp_stage_range vp_split_range(const int *l0, int k, int route_len) {
    return (vp_stage_range){l0[k], l0[k + 1], k == 0, k == route_len - 1, 0, 0};
}

vp_status vp_split_check(int n_layer, int route_len, const int *l0, vp_error *err) {
    if (route_len < 1 || l0[0] != 0)
        return vp__fail(err, VP_EINVAL, "a layer split starts at layer 0 of at least one stage");
    if (l0[route_len] != n_layer)
        return vp__fail(err, VP_EINVAL, "the layers per stage add up to %d, the model has %d",
                        l0[route_len], n_layer);
    for (int k = 0; k < route_len; k++) {
        bool middle = k > 0 && k < route_len - 1;
        if (l0[k + 1] < l0[k] + (middle ? 1 : 0))
            return vp__fail(err, VP_EINVAL,
                            "stage %d of the layer split holds %d layers (a middle stage needs at "
                            "least one, no stage fewer than none)",
                            k, l0[k + 1] - l0[k]);
    }
    return VP_OK;
}
