/* The commit record of a checkpoint directory, meta.json (vpipe/checkpoint.h). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint_internal.h"

#define META_FORMAT "vpipe-checkpoint"

void vp__ckpt_part_name(char *buf, size_t size, int part, int step) {
    snprintf(buf, size, "part-%d.step-%d.ckpt", part, step);
}

char *vp__ckpt_meta_text(const vp_checkpoint_meta *m) {
    json_t *files = json_array();
    for (int k = 0; files && k < m->n_parts; k++) {
        char name[64];
        vp__ckpt_part_name(name, sizeof name, k, m->step);
        json_array_append_new(files, json_string(name));
    }
    const vp_checkpoint_shape *sh = &m->shape;
    json_t *root = json_pack("{s:s, s:i, s:i, s:I, s:i, s:o, s:{s:i, s:i, s:i, s:s, s:s}}",
                             "format", META_FORMAT, "version", VP_CHECKPOINT_VERSION, "step",
                             m->step, "data_position", (json_int_t)m->data_pos, "parts", m->n_parts,
                             "files", files, "shape", "p", sh->p, "dp", sh->dp, "zero", sh->zero,
                             "schedule", sh->schedule, "transport", sh->transport);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    size_t n = text ? strlen(text) : 0;
    char *line = text ? realloc(text, n + 2) : NULL;
    if (!line) {
        free(text);
        return NULL;
    }
    memcpy(line + n, "\n", 2);
    return line;
}

/* An integer member of the commit record within [lo, hi]. */
static vp_status meta_int(json_t *root, const char *key, json_int_t lo, json_int_t hi,
                          const char *name, json_int_t *out, vp_error *err) {
    json_t *v = json_object_get(root, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint record %s: \"%s\" must be an integer in [%lld, %lld]", name,
                        key, (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return VP_OK;
}

/* A string member of the commit record's shape, shorter than size and without control
 * characters (it is printed), into out. */
static vp_status meta_string(json_t *obj, const char *key, const char *name, char *out, size_t size,
                             vp_error *err) {
    const char *v = json_string_value(json_object_get(obj, key));
    if (!v || strlen(v) >= size || vp__text_has_control(v))
        return vp__fail(err, VP_EPARSE,
                        "checkpoint record %s: \"shape\".\"%s\" must be a string of fewer than "
                        "%zu bytes, without control characters",
                        name, key, size);
    snprintf(out, size, "%s", v);
    return VP_OK;
}

/* The "shape" member of the commit record. */
static vp_status meta_shape(json_t *root, const char *name, vp_checkpoint_shape *shape,
                            vp_error *err) {
    json_t *obj = json_object_get(root, "shape");
    json_int_t p = 0, dp = 0, zero = 0;
    if (!json_is_object(obj))
        return vp__fail(err, VP_EPARSE, "checkpoint record %s: \"shape\" must be an object", name);
    vp_status st = meta_int(obj, "p", 1, 1 << 20, name, &p, err);
    if (st == VP_OK)
        st = meta_int(obj, "dp", 1, 1 << 20, name, &dp, err);
    if (st == VP_OK)
        st = meta_int(obj, "zero", 0, 1, name, &zero, err);
    if (st == VP_OK)
        st = meta_string(obj, "schedule", name, shape->schedule, sizeof shape->schedule, err);
    if (st == VP_OK)
        st = meta_string(obj, "transport", name, shape->transport, sizeof shape->transport, err);
    shape->p = (int)p;
    shape->dp = (int)dp;
    shape->zero = (int)zero;
    return st;
}

vp_status vp_checkpoint_meta_parse(const char *text, size_t len, const char *name,
                                   vp_checkpoint_meta *meta, vp_error *err) {
    if (len > VP__CKPT_META_MAX)
        return vp__fail(err, VP_EPARSE,
                        "checkpoint record %s: %zu bytes, more than a record holds (%zu)", name,
                        len, VP__CKPT_META_MAX);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return vp__fail(err, VP_EPARSE, "checkpoint record %s:%d:%d: %s", name, jerr.line,
                        jerr.column, jerr.text);
    json_int_t version = 0, step = 0, data_pos = 0, parts = 0;
    const char *format = json_string_value(json_object_get(root, "format"));
    vp_status st = VP_OK;
    if (!json_is_object(root) || !format || strcmp(format, META_FORMAT) != 0)
        st = vp__fail(err, VP_EPARSE,
                      "checkpoint record %s: not a vpipe checkpoint record "
                      "(\"format\" is not \"" META_FORMAT "\")",
                      name);
    if (st == VP_OK)
        st = meta_int(root, "version", 0, INT_MAX, name, &version, err);
    if (st == VP_OK && version != VP_CHECKPOINT_VERSION)
        st = vp__fail(err, VP_EPARSE,
                      "checkpoint record %s: unsupported version %lld (this vpipe reads "
                      "version %d%s)",
                      name, (long long)version, VP_CHECKPOINT_VERSION,
                      version < VP_CHECKPOINT_VERSION && version > 0
                          ? "; written by an older vpipe: resume it with that vpipe, or start "
                            "again"
                          : "");
    if (st == VP_OK)
        st = meta_int(root, "step", 0, INT_MAX, name, &step, err);
    if (st == VP_OK)
        st = meta_int(root, "data_position", 0, LLONG_MAX, name, &data_pos, err);
    if (st == VP_OK)
        st = meta_int(root, "parts", 1, VP__CKPT_MAX_PARTS, name, &parts, err);
    vp_checkpoint_shape shape = {0};
    if (st == VP_OK)
        st = meta_shape(root, name, &shape, err);
    json_decref(root);
    if (st == VP_OK)
        *meta = (vp_checkpoint_meta){(int)step, (uint64_t)data_pos, (int)parts, shape};
    return st;
}
