/* Reading a block from JSON (format in block.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block/block_internal.h"

#define MAX_DIM 65536
#define MAX_PASSES 1000000
#define MAX_TIME 1e15

static vp_status bad(vp_error *err, const char *path, const char *what) {
    return vp__fail(err, VP_EPARSE, "%s: %s", path, what);
}

/* Optional integer member in [lo, hi]; *out unchanged when absent. */
static vp_status opt_int(json_t *root, const char *key, int lo, int hi, int *out, vp_error *err) {
    json_t *v = json_object_get(root, key);
    if (!v)
        return VP_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return vp__fail(err, VP_EPARSE, "%s: must be an integer in [%d, %d]", key, lo, hi);
    *out = (int)json_integer_value(v);
    return VP_OK;
}

static vp_status read_placement(json_t *root, vp_placement_kind *out, vp_error *err) {
    json_t *pl = json_object_get(root, "placement");
    if (!pl) {
        *out = VP_PLACE_SINGLE;
        return VP_OK;
    }
    if (json_is_string(pl) && vp_placement_parse(json_string_value(pl), out) == VP_OK)
        return VP_OK;
    return vp__fail(err, VP_EPARSE, "placement: must be one of single, loop, v, bidir, custom");
}

/* Stage count implied by the placement when "stages" is absent (0: required). */
static int default_stages(vp_placement_kind pl, int p) {
    switch (pl) {
    case VP_PLACE_SINGLE:
        return p;
    case VP_PLACE_V:
    case VP_PLACE_BIDIR:
        return 2 * p;
    default:
        return 0;
    }
}

/* Reads passes[x]: [kind, stage, start, mb?, dur?]; dur < 0 marks "from the costs". */
static vp_status read_pass(json_t *row, vp_block *b, size_t x, vp_error *err) {
    char path[64];
    snprintf(path, sizeof path, "passes[%zu]", x);
    size_t n = json_is_array(row) ? json_array_size(row) : 0;
    if (n < 3 || n > 5)
        return bad(err, path, "a pass is [kind, stage, start] with optional mb and duration");
    json_t *k = json_array_get(row, 0), *st = json_array_get(row, 1);
    vp_op_kind kind = VP_OP_FB; /* not a block pass */
    if (json_is_string(k))
        vp_op_kind_parse(json_string_value(k), &kind);
    if (kind == VP_OP_FB || kind == VP_OP_R)
        return bad(err, path, "kind must be \"F\", \"B\", \"W\" or \"BW\"");
    if (!json_is_integer(st) || json_integer_value(st) < 0 || json_integer_value(st) >= b->S) {
        char what[80];
        snprintf(what, sizeof what, "stage must be an integer in [0, %d)", b->S);
        return bad(err, path, what);
    }
    json_t *t = json_array_get(row, 2);
    double start = json_is_number(t) ? json_number_value(t) : NAN;
    if (!isfinite(start) || fabs(start) > MAX_TIME)
        return bad(err, path, "start must be a number with |start| <= 1e15");
    int mb = 0;
    if (n >= 4) {
        json_t *v = json_array_get(row, 3);
        if (!json_is_integer(v) || json_integer_value(v) > VP__BLOCK_MAX_MB_OFFSET ||
            json_integer_value(v) < -VP__BLOCK_MAX_MB_OFFSET) /* llabs(LLONG_MIN) overflows */
            return bad(err, path, "mb (4th element) must be an integer offset within +-1000000");
        mb = (int)json_integer_value(v);
    }
    double dur = -1;
    if (n == 5) {
        json_t *v = json_array_get(row, 4);
        dur = json_is_number(v) ? json_number_value(v) : NAN;
        if (!isfinite(dur) || dur < 0 || dur > MAX_TIME)
            return bad(err, path, "duration (5th element) must be a number in [0, 1e15]");
    }
    if (vp__grow((void **)&b->pass, &b->cap, b->n + 1, sizeof *b->pass) != 0)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_block_pass ps = {
        .kind = kind, .stage = (int)json_integer_value(st), .mb = mb, .start = start, .dur = dur};
    b->pass[b->n++] = ps;
    return VP_OK;
}

/* Picks the costs (override, file, default) and fills the durations left to them. */
static vp_status apply_costs(json_t *root, vp_block *b, const vp_costs *override, vp_costs *used,
                             vp_error *err) {
    vp_costs costs = vp_costs_default();
    json_t *jc = json_object_get(root, "costs");
    if (jc) {
        if (!json_is_string(jc))
            return vp__fail(err, VP_EPARSE, "costs: must be a string like \"F=2,B=2,W=2,c=0\"");
        vp_error cerr = {0};
        if (vp_costs_parse(json_string_value(jc), &costs, &cerr) != VP_OK)
            return vp__fail(err, VP_EPARSE, "costs: %s (column %d)", cerr.message, cerr.column);
    }
    if (override)
        costs = *override;
    if (used)
        *used = costs;
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    vp_status rc = vp_block_cost_model(b, &costs, &mem, &cm, err);
    if (rc != VP_OK)
        return rc;
    for (int i = 0; i < b->n; i++)
        if (b->pass[i].dur < 0)
            b->pass[i].dur = vp_cost_model_pass_time(cm, b->pass[i].kind, b->pass[i].stage);
    vp_cost_model_free(cm);
    return VP_OK;
}

static vp_status read_block(json_t *root, const vp_costs *override, vp_costs *used, vp_block **out,
                            vp_error *err) {
    if (!json_is_object(root))
        return vp__fail(err, VP_EPARSE, "a block file is a JSON object");
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), VP_BLOCK_FORMAT))
        return vp__fail(err, VP_EPARSE, "format: must be \"%s\"", VP_BLOCK_FORMAT);
    int version = VP_BLOCK_VERSION, p = 0, S = 0, k = 1;
    vp_placement_kind pl = VP_PLACE_SINGLE;
    vp_status rc = opt_int(root, "version", 1, 1000, &version, err);
    if (rc == VP_OK && version != VP_BLOCK_VERSION)
        return vp__fail(err, VP_EPARSE, "version: must be %d (got %d)", VP_BLOCK_VERSION, version);
    if (rc == VP_OK && !json_object_get(root, "p"))
        rc = vp__fail(err, VP_EPARSE, "p: missing (number of devices)");
    if (rc == VP_OK)
        rc = opt_int(root, "p", 1, MAX_DIM, &p, err);
    if (rc == VP_OK)
        rc = read_placement(root, &pl, err);
    if (rc == VP_OK) {
        S = default_stages(pl, p);
        rc = opt_int(root, "stages", 1, MAX_DIM, &S, err);
    }
    if (rc == VP_OK && S == 0)
        rc = vp__fail(err, VP_EPARSE, "stages: required for placement %s", vp_placement_name(pl));
    if (rc == VP_OK)
        rc = opt_int(root, "mb_per_copy", 1, VP__BLOCK_MAX_CLASSES, &k, err);
    if (rc != VP_OK)
        return rc;
    vp_error perr = {0};
    vp_block *b = NULL;
    rc = vp_block_new(p, S, pl, &b, &perr);
    if (rc != VP_OK)
        return vp__fail(err, rc == VP_ENOMEM ? VP_ENOMEM : VP_EPARSE, "%s", perr.message);
    b->mb_per_copy = k;
    json_t *map = json_object_get(root, "stage_device");
    if (pl == VP_PLACE_CUSTOM && !map)
        rc = vp__fail(err, VP_EPARSE, "stage_device: required for the custom placement");
    else if (map && pl != VP_PLACE_CUSTOM)
        rc = vp__fail(err, VP_EPARSE, "stage_device: only for the custom placement");
    else if (map && (!json_is_array(map) || (int)json_array_size(map) != S))
        rc = vp__fail(err, VP_EPARSE, "stage_device: must be an array of %d devices", S);
    for (int s = 0; rc == VP_OK && map && s < S; s++) {
        json_t *v = json_array_get(map, (size_t)s);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= p)
            rc = vp__fail(err, VP_EPARSE, "stage_device[%d]: must be an integer in [0, %d)", s, p);
        else
            b->stage_device[s] = (int)json_integer_value(v);
    }
    json_t *iv = json_object_get(root, "interval");
    if (rc == VP_OK && iv) {
        b->T = json_is_number(iv) ? json_number_value(iv) : NAN;
        if (!(b->T > 0) || !(b->T <= MAX_TIME))
            rc = vp__fail(err, VP_EPARSE, "interval: must be a number in (0, 1e15]");
    }
    json_t *passes = json_object_get(root, "passes");
    if (rc == VP_OK && (!json_is_array(passes) || json_array_size(passes) == 0 ||
                        json_array_size(passes) > MAX_PASSES))
        rc = vp__fail(err, VP_EPARSE, "passes: must be a non-empty array of at most %d passes",
                      MAX_PASSES);
    for (size_t x = 0; rc == VP_OK && x < json_array_size(passes); x++)
        rc = read_pass(json_array_get(passes, x), b, x, err);
    if (rc == VP_OK)
        rc = apply_costs(root, b, override, used, err);
    if (rc == VP_OK)
        rc = vp_block_check(b, err);
    if (rc != VP_OK) {
        vp_block_free(b);
        return rc;
    }
    *out = b;
    return VP_OK;
}

/* VP_EINVAL naming what in b or costs cannot be written: a number that is not finite
 * (the JSON would not read back), per-device costs (the "costs" string has no form for
 * them). */
static vp_status check_writable(const vp_block *b, const vp_costs *costs, vp_error *err) {
    if (!isfinite(b->T))
        return vp__fail(err, VP_EINVAL, "block JSON: the interval is not finite");
    for (int i = 0; i < b->n; i++)
        if (!isfinite(b->pass[i].start) || !isfinite(b->pass[i].dur))
            return vp__fail(err, VP_EINVAL, "block JSON: pass %d's start or duration is not finite",
                            i);
    if (costs && !(isfinite(costs->f) && isfinite(costs->b) && isfinite(costs->w) &&
                   isfinite(costs->c) && isfinite(costs->fb)))
        return vp__fail(err, VP_EINVAL, "block JSON: a cost is not finite");
    if (costs && (costs->dev_f || costs->dev_b || costs->dev_w))
        return vp__fail(err, VP_EUNSUPPORTED,
                        "block JSON: per-device costs have no form in the \"costs\" string");
    return VP_OK;
}

vp_status vp_block_write_json(const vp_block *b, const vp_costs *costs, char **text,
                              vp_error *err) {
    *text = NULL;
    vp_status rc = check_writable(b, costs, err);
    if (rc != VP_OK)
        return rc;
    vp__buf o = {0};
    vp__buf_printf(&o,
                   "{\"format\": \"%s\", \"version\": %d, \"p\": %d, \"stages\": %d,\n"
                   " \"placement\": \"%s\"",
                   VP_BLOCK_FORMAT, VP_BLOCK_VERSION, b->p, b->S, vp_placement_name(b->placement));
    if (b->placement == VP_PLACE_CUSTOM) {
        vp__buf_printf(&o, ", \"stage_device\": [");
        for (int s = 0; s < b->S; s++)
            vp__buf_printf(&o, "%s%d", s ? "," : "", b->stage_device[s]);
        vp__buf_printf(&o, "]");
    }
    if (b->mb_per_copy != 1)
        vp__buf_printf(&o, ", \"mb_per_copy\": %d", b->mb_per_copy);
    if (b->T > 0)
        vp__buf_printf(&o, ", \"interval\": %.17g", b->T);
    if (costs) {
        vp__buf_printf(&o, ",\n \"costs\": \"F=%.17g,B=%.17g,W=%.17g,c=%.17g", costs->f, costs->b,
                       costs->w, costs->c);
        if (costs->fb >= 0)
            vp__buf_printf(&o, ",FB=%.17g", costs->fb);
        vp__buf_printf(&o, "\"");
    }
    vp__buf_printf(&o, ",\n \"passes\": [");
    for (int i = 0; i < b->n; i++) {
        const vp_block_pass *ps = &b->pass[i];
        vp__buf_printf(&o, "%s\n  [\"%s\", %d, %.17g, %d, %.17g]", i ? "," : "",
                       vp_op_kind_name((vp_op_kind)ps->kind), ps->stage, ps->start, ps->mb,
                       ps->dur);
    }
    vp__buf_printf(&o, "\n ]\n}\n");
    *text = vp__buf_take(&o);
    return *text ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}

vp_status vp_block_read_json(const char *text, size_t len, const vp_costs *override, vp_costs *used,
                             vp_block **out, vp_error *err) {
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return vp__fail_at(err, VP_EPARSE, jerr.line > 0 ? jerr.line : 1,
                           jerr.column > 0 ? jerr.column : 1, "%s", jerr.text);
    vp_status rc = read_block(root, override, used, out, err);
    json_decref(root);
    return rc;
}
