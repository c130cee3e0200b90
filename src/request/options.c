/* Reading a request's options (options.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "request/options.h"

/* Every option of request.h, by use: building, planning, drawing, pricing (two rows). */
static const char *const known[][10] = {
    {"family", "p", "m", "v", "costs", "memory_model", "memory_limit", "max_ops"},
    {"threads", "memory"},
    {"width", "fit", "color", "title"},
    {"model", "gpu", "seq", "mbs", "tp", "dp", "sp", "zero1", "flash", "recompute"},
    {"split", "layers_per_stage"}};

static bool is_known(const char *key) {
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        for (int j = 0; j < 10 && known[i][j]; j++)
            if (!strcmp(key, known[i][j]))
                return true;
    return false;
}

vp_status vp__options_open(const char *text, json_t **out, vp_error *err) {
    *out = NULL;
    json_error_t jerr;
    json_t *o = text && *text ? json_loads(text, JSON_REJECT_DUPLICATES, &jerr) : json_object();
    if (!o)
        return text && *text
                   ? vp__fail_at(err, VP_EPARSE, jerr.line, jerr.column, "options: %s", jerr.text)
                   : vp__fail(err, VP_ENOMEM, "out of memory");
    if (!json_is_object(o)) {
        json_decref(o);
        return vp__fail(err, VP_EINVAL, "options: not a JSON object");
    }
    const char *key;
    json_t *value;
    json_object_foreach(o, key, value) {
        if (!is_known(key)) {
            vp__fail(err, VP_EINVAL, "unknown option '%s'", key);
            json_decref(o);
            return VP_EINVAL;
        }
    }
    *out = o;
    return VP_OK;
}

/* Option key of o in *v (NULL when absent): a number in [lo, hi], an integer when
 * integer. */
static vp_status number_in(const json_t *o, const char *key, bool integer, double lo, double hi,
                           const json_t **v, vp_error *err) {
    *v = json_object_get(o, key);
    double x = json_number_value(*v);
    if (!*v || ((integer ? json_is_integer(*v) : json_is_number(*v)) && x >= lo && x <= hi))
        return VP_OK;
    return vp__fail(err, VP_EINVAL, "option '%s' must be %s in [%.15g, %.15g]", key,
                    integer ? "an integer" : "a number", lo, hi);
}

vp_status vp__option_long(const json_t *o, const char *key, long lo, long hi, long *out,
                          vp_error *err) {
    const json_t *v;
    vp_status rc = number_in(o, key, true, (double)lo, (double)hi, &v, err);
    if (rc == VP_OK && v)
        *out = (long)json_integer_value(v);
    return rc;
}

vp_status vp__option_int(const json_t *o, const char *key, int lo, int hi, int *out,
                         vp_error *err) {
    long v = *out;
    vp_status rc = vp__option_long(o, key, lo, hi, &v, err);
    *out = (int)v;
    return rc;
}

vp_status vp__option_number(const json_t *o, const char *key, double lo, double hi, double *out,
                            vp_error *err) {
    const json_t *v;
    vp_status rc = number_in(o, key, false, lo, hi, &v, err);
    if (rc == VP_OK && v)
        *out = json_number_value(v);
    return rc;
}

vp_status vp__option_bool(const json_t *o, const char *key, bool *out, vp_error *err) {
    const json_t *v = json_object_get(o, key);
    if (!v)
        return VP_OK;
    if (!json_is_boolean(v))
        return vp__fail(err, VP_EINVAL, "option '%s' must be true or false", key);
    *out = json_is_true(v);
    return VP_OK;
}

vp_status vp__option_string(const json_t *o, const char *key, const char **out, vp_error *err) {
    const json_t *v = json_object_get(o, key);
    if (!v)
        return VP_OK;
    if (!json_is_string(v))
        return vp__fail(err, VP_EINVAL, "option '%s' must be a string", key);
    *out = json_string_value(v);
    return VP_OK;
}

vp_status vp__option_required(const json_t *o, const char *key, vp_error *err) {
    return json_object_get(o, key) ? VP_OK
                                   : vp__fail(err, VP_EINVAL, "option '%s' is required", key);
}

vp_status vp__option_failed(vp_status rc, const char *key, vp_error *err) {
    if (err) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        if (err->column > 0)
            vp__fail(err, rc, "option '%s': column %d: %s", key, err->column, why);
        else
            vp__fail(err, rc, "option '%s': %s", key, why);
    }
    return rc;
}

vp_status vp__options_spec(const json_t *o, vp_spec *spec, vp_error *err) {
    *spec = vp_spec_make(0, 0);
    vp_status rc = vp__option_int(o, "p", 1, INT_MAX, &spec->p, err);
    if (rc == VP_OK)
        rc = vp__option_int(o, "m", 1, INT_MAX, &spec->m, err);
    if (rc == VP_OK)
        rc = vp__option_int(o, "v", 1, INT_MAX, &spec->v, err);
    if (rc == VP_OK)
        rc = vp__option_number(o, "memory_limit", 0, HUGE_VAL, &spec->mem_limit, err);
    if (rc == VP_OK)
        rc = vp__option_long(o, "max_ops", 1, LONG_MAX, &spec->max_ops, err);
    if (rc == VP_OK)
        rc = vp__option_int(o, "threads", 1, INT_MAX, &spec->threads, err);
    VP__OPTION_PARSE(o, "costs", vp_costs_parse, &spec->costs, err);
    VP__OPTION_PARSE(o, "memory_model", vp_memcfg_parse, &spec->mem, err);
    return rc;
}

vp_status vp__options_sized_spec(const json_t *o, vp_spec *spec, vp_error *err) {
    vp_status rc = vp__options_spec(o, spec, err);
    if (rc == VP_OK)
        rc = vp__option_required(o, "p", err);
    if (rc == VP_OK)
        rc = vp__option_required(o, "m", err);
    return rc == VP_OK ? vp_spec_check_size(spec, err) : rc;
}

vp_status vp__options_family(const json_t *o, vp_spec *spec, const char **family, vp_error *err) {
    vp_status rc = vp__options_sized_spec(o, spec, err);
    if (rc == VP_OK)
        rc = vp__option_required(o, "family", err);
    if (rc == VP_OK)
        rc = vp__option_string(o, "family", family, err);
    if (rc == VP_OK && !vp_family_find(*family))
        rc = vp__fail(err, VP_EINVAL, "unknown family '%s' (vpipe list)", *family);
    return rc;
}
