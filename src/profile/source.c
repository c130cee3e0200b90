/* A `vpipe profile` file as the measured costs of a request (profile.h:
 * vp_profile_cost_reader), and the string API with --cost-file (vp_profile_request_call). */
#include <stdlib.h>

#include "base/internal.h"
#include "vpipe/profile.h"

static vp_status slices(void *ctx, int p, double *dev, vp_costs *costs, double *unit_bytes,
                        vp_error *err) {
    vp_status rc = vp_profile_slice_costs(ctx, p, dev, costs, err);
    return rc == VP_OK ? vp_profile_unit_bytes(ctx, p, unit_bytes, err) : rc;
}

static vp_status fill(void *ctx, const vp_schedule *s, vp_cost_model *cm, vp_error *err) {
    return vp_profile_cost_model(ctx, s, NULL, cm, err);
}

vp_status vp_profile_cost_reader(const char *path, vp_cost_source *out, vp_error *err) {
    char *text = NULL;
    size_t len = 0;
    *out = (vp_cost_source){0};
    vp_status rc = vp_read_file(path, VP_PROFILE_MAX, &text, &len, err);
    if (rc != VP_OK)
        return rc;
    vp_profile *pr = malloc(sizeof *pr);
    rc = pr ? vp_profile_read_json(text, len, pr, err) : vp__fail(err, VP_ENOMEM, "out of memory");
    free(text);
    if (rc != VP_OK) {
        free(pr);
        return rc;
    }
    *out = (vp_cost_source){.ctx = pr, .slices = slices, .fill = fill, .release = free};
    return VP_OK;
}

vp_status vp_profile_request_call(const char *command, const char *options, char **reply,
                                  vp_error *err) {
    return vp_request_call_with(command, NULL, options, vp_profile_cost_reader, reply, err);
}
