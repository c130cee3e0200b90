/* Pricing through the string API (request.h: vp_request_price): the one place where the
 * options meet price.h's model, accelerator and training setup. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "request/options.h"
#include "vpipe/request.h"

/* What a setup borrows. */
typedef struct priced {
    vp_arch arch;
    vp_gpu gpu;
    vp_workload train;
    int *layers; /* options' layers_per_stage, or NULL */
    vp_price_setup setup;
} priced;

/* The model and the accelerator (both required). */
static vp_status read_hardware(const json_t *o, priced *p, vp_error *err) {
    const char *model = NULL, *gpu = NULL;
    vp_status rc = vp__option_required(o, "model", err);
    if (rc == VP_OK)
        rc = vp__option_required(o, "gpu", err);
    if (rc == VP_OK)
        rc = vp__option_string(o, "model", &model, err);
    if (rc == VP_OK)
        rc = vp__option_string(o, "gpu", &gpu, err);
    if (rc == VP_OK && (rc = vp_arch_resolve(model, &p->arch, err)) != VP_OK)
        rc = vp__option_failed(rc, "model", err);
    if (rc == VP_OK && (rc = vp_gpu_resolve(gpu, &p->gpu, err)) != VP_OK)
        rc = vp__option_failed(rc, "gpu", err);
    return rc;
}

/* The training setup on top of the model's defaults. */
static vp_status read_train(const json_t *o, vp_workload *t, vp_error *err) {
    vp_status rc = vp__option_int(o, "seq", 1, INT_MAX, &t->seq, err);
    if (rc == VP_OK)
        rc = vp__option_int(o, "mbs", 1, INT_MAX, &t->mbs, err);
    if (rc == VP_OK)
        rc = vp__option_int(o, "tp", 1, INT_MAX, &t->tp, err);
    if (rc == VP_OK)
        rc = vp__option_int(o, "dp", 1, INT_MAX, &t->dp, err);
    if (rc == VP_OK)
        rc = vp__option_bool(o, "sp", &t->sp, err);
    if (rc == VP_OK)
        rc = vp__option_bool(o, "zero1", &t->zero1, err);
    if (rc == VP_OK)
        rc = vp__option_bool(o, "flash", &t->flash, err);
    VP__OPTION_PARSE(o, "recompute", vp_recompute_parse, &t->recompute, err);
    return rc;
}

/* "time", "memory" or "even". */
static vp_status split_parse(const char *text, vp_split_goal *goal, vp_error *err) {
    static const char *const names[] = {"time", "memory", "even"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(text, names[i])) {
            *goal = (vp_split_goal)i;
            return VP_OK;
        }
    return vp__fail(err, VP_EINVAL, "unknown split '%s' (time, memory or even)", text);
}

/* The split: a goal, or the layers of each stage. */
static vp_status read_split(const json_t *o, priced *p, vp_error *err) {
    vp_status rc = VP_OK;
    VP__OPTION_PARSE(o, "split", split_parse, &p->setup.split, err);
    const json_t *layers = json_object_get(o, "layers_per_stage");
    if (rc != VP_OK || !layers)
        return rc;
    int n = json_is_array(layers) ? (int)json_array_size(layers) : 0;
    if (n < 1 || n > 1 << 20)
        return vp__fail(err, VP_EINVAL, "option 'layers_per_stage' must be an array of integers");
    if (!(p->layers = vp__calloc((size_t)n, sizeof *p->layers)))
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const json_t *v = json_array_get(layers, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT_MAX)
            return vp__fail(err, VP_EINVAL,
                            "option 'layers_per_stage' must be an array of integers");
        p->layers[i] = (int)json_integer_value(v);
    }
    p->setup.layers_per_stage = p->layers;
    p->setup.n_layers_per_stage = n;
    return VP_OK;
}

static vp_status read_setup(const json_t *o, priced *p, vp_error *err) {
    memset(p, 0, sizeof *p);
    vp_status rc = read_hardware(o, p, err);
    if (rc == VP_OK) {
        p->train = vp_workload_default(&p->arch);
        rc = read_train(o, &p->train, err);
    }
    p->setup.arch = &p->arch;
    p->setup.gpu = &p->gpu;
    p->setup.work = &p->train;
    return rc == VP_OK ? read_split(o, p, err) : rc;
}

/* Builds options' family with the priced costs and prices it. */
static vp_status price_family(const json_t *o, const priced *p, vp_price_result **r,
                              vp_schedule **built, vp_error *err) {
    vp_spec spec;
    const char *family = NULL;
    vp_status rc = vp__options_family(o, &spec, &family, err);
    return rc == VP_OK ? vp_price_family(&p->setup, family, &spec, r, built, err) : rc;
}

vp_status vp_request_price(const vp_schedule *s, const char *options, char **report,
                           vp_schedule **built, vp_error *err) {
    json_t *o = NULL;
    priced p = {.layers = NULL};
    vp_price_result *r = NULL;
    *report = NULL;
    if (built)
        *built = NULL;
    vp_status rc = vp__options_open(options, &o, err);
    if (rc == VP_OK)
        rc = read_setup(o, &p, err);
    if (rc == VP_OK)
        rc = s ? vp_price_schedule(&p.setup, s, &r, err) : price_family(o, &p, &r, built, err);
    if (rc == VP_OK && !(*report = vp_price_result_json(r)))
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc != VP_OK && built) {
        vp_schedule_free(*built);
        *built = NULL;
    }
    vp_price_result_free(r);
    free(p.layers);
    json_decref(o);
    return rc;
}
