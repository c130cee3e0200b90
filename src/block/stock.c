/* Stock blocks: 1F1B written as a building block. */
#include "block/block_internal.h"

vp_status vp_block_1f1b(int p, const vp_cost_model *cm, int split, vp_block **out, vp_error *err) {
    *out = NULL;
    if (p < 1 || cm->S != p)
        return vp__fail(err, VP_EINVAL, "1f1b block needs p >= 1 and a cost model of p stages");
    vp_block *b = NULL;
    vp_status rc = vp_block_new(p, p, VP_PLACE_SINGLE, &b, err);
    if (rc != VP_OK)
        return rc;
    double f = 0;
    for (int i = 0; i < p && rc == VP_OK; i++) {
        rc = vp_block_add(b, VP_OP_F, i, 0, f, cm->f[i]);
        f += cm->f[i] + cm->c;
    }
    double back = f - cm->c; /* the last device's backward starts when its F ends */
    for (int i = p - 1; i >= 0 && rc == VP_OK; i--) {
        if (split) {
            rc = vp_block_add(b, VP_OP_B, i, 0, back, cm->b[i]);
            if (rc == VP_OK)
                rc = vp_block_add(b, VP_OP_W, i, 0, back + cm->b[i], cm->w[i]);
        } else {
            rc = vp_block_add(b, VP_OP_BW, i, 0, back, cm->b[i] + cm->w[i]);
        }
        back += cm->b[i] + cm->w[i] + cm->c;
    }
    if (rc == VP_OK)
        rc = vp_block_min_interval(b, &b->T, err);
    else
        vp__fail(err, rc, "out of memory");
    if (rc != VP_OK) {
        vp_block_free(b);
        return rc;
    }
    *out = b;
    return VP_OK;
}
