/* vpipe's own JSON schedule format (see io.h), and loading schedule files. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "vpipe/io.h"

/* ---- writing ---------------------------------------------------------------------- */

static void write_int_array(vp__buf *b, const int32_t *v, int n) {
    vp__buf_add(b, "[", 1);
    for (int i = 0; i < n; i++)
        vp__buf_printf(b, "%s%d", i ? "," : "", v[i]);
    vp__buf_add(b, "]", 1);
}

static int routes_default(const vp_schedule *s) {
    for (int j = 0; j < s->m; j++)
        if (s->mb_first[j] != 0)
            return 0;
    return 1;
}

/* Appends device d's op list. */
static void write_ops(vp__buf *b, const vp_schedule *s, int d) {
    vp__buf_printf(b, "%s\n  [", d ? "," : "");
    for (int k = 0; k < s->dev[d].n; k++) {
        const vp_op *op = &s->dev[d].ops[k];
        const char *sep = k ? "," : "";
        if (op->kind == VP_OP_FB)
            vp__buf_printf(b, "%s[\"F&B\",%d,%d,\"%s\",%d,%d]", sep, op->stage, op->mb,
                           vp_op_kind_name((vp_op_kind)op->bkind), op->stage2, op->mb2);
        else
            vp__buf_printf(b, "%s[\"%s\",%d,%d]", sep, vp_op_kind_name((vp_op_kind)op->kind),
                           op->stage, op->mb);
    }
    vp__buf_add(b, "]", 1);
}

vp_status vp_json_write(const vp_schedule *s, char **text, vp_error *err) {
    *text = NULL;
    json_t *fam = json_string(s->family);
    char *fam_text = fam ? json_dumps(fam, JSON_ENCODE_ANY) : NULL;
    json_decref(fam);
    if (!fam_text)
        return vp__fail(err, fam ? VP_ENOMEM : VP_EINVAL,
                        fam ? "out of memory" : "the family name is not UTF-8");
    vp__buf b = {0};
    vp__buf_printf(&b,
                   "{\"format\": \"vpipe-schedule\", \"version\": %d, \"family\": %s,\n"
                   " \"p\": %d, \"stages\": %d, \"microbatches\": %d, \"route_len\": %d,\n"
                   " \"placement\": \"%s\", \"stage_device\": ",
                   VP_JSON_VERSION, fam_text, s->p, s->S, s->m, s->route_len,
                   vp_placement_name(s->placement));
    free(fam_text);
    write_int_array(&b, s->stage_device, s->S);
    if (s->recompute != VP_RECOMPUTE_NONE)
        vp__buf_printf(&b, ",\n \"recompute\": \"%s\"", vp_recompute_name(s->recompute));
    if (s->vocab_parallel)
        vp__buf_printf(&b, ",\n \"vocab_parallel\": true");
    if (vp_schedule_offloads(s)) {
        vp__buf_printf(&b, ",\n \"offload\": [");
        for (int i = 0; i < s->S; i++)
            vp__buf_printf(&b, "%s%.17g", i ? "," : "", s->offload[i]);
        vp__buf_add(&b, "]", 1);
    }
    if (s->host_limit > 0)
        vp__buf_printf(&b, ",\n \"host_limit\": %.17g", s->host_limit);
    if (!routes_default(s)) {
        vp__buf_printf(&b, ",\n \"mb_first\": ");
        write_int_array(&b, s->mb_first, s->m);
    }
    vp__buf_printf(&b, ",\n \"devices\": [");
    for (int d = 0; d < s->p; d++)
        write_ops(&b, s, d);
    vp__buf_printf(&b, "\n ]\n}\n");
    *text = vp__buf_take(&b);
    return *text ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}

/* ---- reading ---------------------------------------------------------------------- */

static vp_status bad(vp_error *err, const char *path, const char *what) {
    return vp__fail(err, VP_EPARSE, "%s: %s", path, what);
}

/* Integer member key of obj within [lo, hi]. */
static vp_status get_int(json_t *obj, const char *key, int lo, int hi, int *out, vp_error *err) {
    json_t *v = json_object_get(obj, key);
    if (!v)
        return vp__fail(err, VP_EPARSE, "missing field \"%s\"", key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return vp__fail(err, VP_EPARSE, "field \"%s\" must be an integer in [%d, %d]", key, lo, hi);
    *out = (int)json_integer_value(v);
    return VP_OK;
}

static vp_status read_int_array(json_t *arr, const char *key, int n, int lo, int hi, int32_t *out,
                                vp_error *err) {
    if (!json_is_array(arr) || (int)json_array_size(arr) != n)
        return vp__fail(err, VP_EPARSE, "field \"%s\" must be an array of %d integers", key, n);
    for (int i = 0; i < n; i++) {
        json_t *v = json_array_get(arr, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
            return vp__fail(err, VP_EPARSE, "%s[%d] must be an integer in [%d, %d]", key, i, lo,
                            hi);
        out[i] = (int32_t)json_integer_value(v);
    }
    return VP_OK;
}

/* One op row: [kind, stage, mb] or ["F&B", s, j, bkind, s2, j2]. Ranges are checked
 * loosely here (non-negative, below S and m); the validator does the rest. */
static vp_status read_op(json_t *row, const vp_schedule *s, const char *path, vp_op *op,
                         vp_error *err) {
    if (!json_is_array(row) || json_array_size(row) < 3)
        return bad(err, path, "an op must be [kind, stage, microbatch]");
    json_t *k = json_array_get(row, 0);
    vp_op_kind kind;
    if (!json_is_string(k) || vp_op_kind_parse(json_string_value(k), &kind) != VP_OK)
        return bad(err, path, "unknown op kind (F, B, W, BW, F&B, R, EF, EB, S, T, O or L)");
    size_t want = kind == VP_OP_FB ? 6 : 3;
    if (json_array_size(row) != want)
        return bad(err, path,
                   kind == VP_OP_FB
                       ? "an overlapped op must be [\"F&B\", s, j, \"B\"|\"BW\", s2, j2]"
                       : "an op must be [kind, stage, microbatch]");
    int idx[4] = {1, 2, 4, 5};
    int32_t val[4] = {0};
    for (size_t i = 0; i < (want == 6 ? 4u : 2u); i++) {
        json_t *v = json_array_get(row, (size_t)idx[i]);
        int shard = i == 0 && vp_op_kind_is_vocab(kind);
        long long lim = shard ? s->p : (i % 2 == 0) ? s->S : s->m;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= lim)
            return bad(err, path,
                       shard        ? "a vocabulary shard must be an integer in [0, p)"
                       : i % 2 == 0 ? "stage must be an integer in [0, stages)"
                                    : "microbatch must be an integer in [0, microbatches)");
        val[i] = (int32_t)json_integer_value(v);
    }
    memset(op, 0, sizeof *op);
    op->kind = (uint8_t)kind;
    op->stage = val[0];
    op->mb = val[1];
    if (kind == VP_OP_FB) {
        json_t *bk = json_array_get(row, 3);
        vp_op_kind b = VP_OP_F;
        if (json_is_string(bk))
            vp_op_kind_parse(json_string_value(bk), &b);
        if (b != VP_OP_B && b != VP_OP_BW)
            return bad(err, path, "the backward half of F&B must be \"B\" or \"BW\"");
        op->bkind = (uint8_t)b;
        op->stage2 = val[2];
        op->mb2 = val[3];
    }
    return VP_OK;
}

/* The optional field "vocab_parallel" into *out (0 when absent). */
static vp_status parse_vocab(json_t *root, int *out, vp_error *err) {
    json_t *v = json_object_get(root, "vocab_parallel");
    *out = v && json_is_true(v);
    if (!v || json_is_boolean(v))
        return VP_OK;
    return vp__fail(err, VP_EPARSE, "field \"vocab_parallel\" must be true or false");
}

/* The optional field "recompute" into *out (none when absent). */
static vp_status parse_recompute(json_t *root, vp_recompute *out, vp_error *err) {
    json_t *r = json_object_get(root, "recompute");
    *out = VP_RECOMPUTE_NONE;
    if (!r || (json_is_string(r) && vp_recompute_parse(json_string_value(r), out, NULL) == VP_OK))
        return VP_OK;
    return vp__fail(err, VP_EPARSE, "field \"recompute\" must be one of none, selective, full");
}

/* The optional fields "offload" (an array of S shares in [0, 1]) and "host_limit" (a
 * number >= 0) into s. */
static vp_status parse_offload(json_t *root, vp_schedule *s, vp_error *err) {
    json_t *arr = json_object_get(root, "offload"), *lim = json_object_get(root, "host_limit");
    if (arr && (!json_is_array(arr) || (int)json_array_size(arr) != s->S))
        return vp__fail(err, VP_EPARSE, "field \"offload\" must be an array of %d numbers", s->S);
    for (int i = 0; arr && i < s->S; i++) {
        json_t *v = json_array_get(arr, (size_t)i);
        double x = json_is_number(v) ? json_number_value(v) : -1.0;
        if (!(x >= 0 && x <= 1))
            return vp__fail(err, VP_EPARSE, "offload[%d] must be a number in [0, 1]", i);
        s->offload[i] = x;
    }
    if (lim &&
        !(json_is_number(lim) && json_number_value(lim) >= 0 && json_number_value(lim) <= 1e300))
        return vp__fail(err, VP_EPARSE, "field \"host_limit\" must be a number >= 0");
    s->host_limit = lim ? json_number_value(lim) : 0.0;
    return VP_OK;
}

static vp_status parse_placement(json_t *root, vp_placement_kind *out, vp_error *err) {
    json_t *pl = json_object_get(root, "placement");
    if (json_is_string(pl) && vp_placement_parse(json_string_value(pl), out) == VP_OK)
        return VP_OK;
    return vp__fail(err, VP_EPARSE,
                    "field \"placement\" must be one of single, loop, v, bidir, custom");
}

#define VP_JSON_MAX_DIM 1000000

static vp_status read_schedule(json_t *root, vp_schedule **out, vp_error *err) {
    if (!json_is_object(root))
        return vp__fail(err, VP_EPARSE, "a schedule file is a JSON object");
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "vpipe-schedule"))
        return vp__fail(err, VP_EPARSE, "field \"format\" must be \"vpipe-schedule\"");
    int version = 0, p = 0, S = 0, m = 0, route_len = 0, vocab = 0;
    vp_placement_kind placement = VP_PLACE_CUSTOM;
    vp_recompute recompute = VP_RECOMPUTE_NONE;
    vp_status rc = get_int(root, "version", 1, 1000, &version, err);
    if (rc == VP_OK && version != VP_JSON_VERSION)
        return vp__fail(err, VP_EPARSE, "unsupported schedule version %d (this vpipe reads %d)",
                        version, VP_JSON_VERSION);
    if (rc == VP_OK)
        rc = get_int(root, "p", 1, 65536, &p, err);
    if (rc == VP_OK)
        rc = get_int(root, "stages", 1, 65536, &S, err);
    if (rc == VP_OK)
        rc = get_int(root, "microbatches", 1, VP_JSON_MAX_DIM, &m, err);
    if (rc == VP_OK)
        rc = get_int(root, "route_len", 1, 65536, &route_len, err);
    if (rc == VP_OK)
        rc = parse_placement(root, &placement, err);
    if (rc == VP_OK)
        rc = parse_recompute(root, &recompute, err);
    if (rc == VP_OK)
        rc = parse_vocab(root, &vocab, err);
    if (rc != VP_OK)
        return rc;
    if ((long long)S * m > 10LL * VP_JSON_MAX_DIM)
        return vp__fail(err, VP_EPARSE, "stages x microbatches = %lld is too large",
                        (long long)S * m);
    json_t *fam = json_object_get(root, "family");
    if (fam && !json_is_string(fam))
        return vp__fail(err, VP_EPARSE, "field \"family\" must be a string");
    vp_schedule *s = NULL;
    vp_shape shape = {.p = p, .S = S, .m = m, .placement = VP_PLACE_CUSTOM};
    char family[sizeof s->family]; /* printed in every report: no terminal control */
    vp__text_escape(family, sizeof family, fam ? json_string_value(fam) : "custom");
    rc = vp_schedule_new(family, shape, &s, err);
    if (rc != VP_OK)
        return rc;
    s->placement = placement;
    s->route_len = route_len;
    s->recompute = recompute;
    s->vocab_parallel = vocab;
    rc = read_int_array(json_object_get(root, "stage_device"), "stage_device", S, 0, p - 1,
                        s->stage_device, err);
    json_t *routes = json_object_get(root, "mb_first");
    if (rc == VP_OK && routes)
        rc = read_int_array(routes, "mb_first", m, 0, S - 1, s->mb_first, err);
    if (rc == VP_OK)
        rc = vp_schedule_set_chunks(s, err);
    if (rc == VP_OK)
        rc = parse_offload(root, s, err);
    json_t *devs = json_object_get(root, "devices");
    if (rc == VP_OK && (!json_is_array(devs) || (int)json_array_size(devs) != p))
        rc = vp__fail(err, VP_EPARSE, "field \"devices\" must be an array of %d op lists", p);
    for (int d = 0; rc == VP_OK && d < p; d++) {
        json_t *ops = json_array_get(devs, (size_t)d);
        if (!json_is_array(ops)) {
            rc = vp__fail(err, VP_EPARSE, "devices[%d] must be an array of ops", d);
            break;
        }
        for (size_t k = 0; rc == VP_OK && k < json_array_size(ops); k++) {
            char path[64];
            snprintf(path, sizeof path, "devices[%d][%zu]", d, k);
            vp_op op;
            rc = read_op(json_array_get(ops, k), s, path, &op, err);
            if (rc == VP_OK && vp_schedule_push(s, d, op) != VP_OK)
                rc = vp__fail(err, VP_ENOMEM, "out of memory");
        }
    }
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return rc;
    }
    *out = s;
    return VP_OK;
}

vp_status vp_json_read(const char *text, size_t len, vp_schedule **out, vp_error *err) {
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return vp__fail_at(err, VP_EPARSE, jerr.line > 0 ? jerr.line : 1,
                           jerr.column > 0 ? jerr.column : 1, "%s", jerr.text);
    vp_status rc = read_schedule(root, out, err);
    json_decref(root);
    return rc;
}

/* ---- files ------------------------------------------------------------------------ */

vp_status vp_schedule_parse(const char *text, size_t len, vp_schedule **out, vp_error *err) {
    size_t i = 0;
    *out = NULL;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (i == len)
        return vp__fail(err, VP_EPARSE, "is empty");
    if (text[i] != '{')
        return vp_torch_csv_read(text, len, NULL, out, err); /* validates */
    vp_status rc = vp_json_read(text, len, out, err);
    if (rc == VP_OK && (rc = vp_schedule_validate(*out, err)) != VP_OK) {
        vp_schedule_free(*out);
        *out = NULL;
    }
    return rc;
}

vp_status vp_schedule_load(const char *path, vp_schedule **out, vp_error *err) {
    char *text;
    size_t len;
    *out = NULL;
    vp_status rc = vp_read_file(path, 0, &text, &len, err);
    if (rc != VP_OK)
        return rc;
    rc = vp_schedule_parse(text, len, out, err);
    free(text);
    if (rc != VP_OK && err && !err->line) { /* name the file; a line error has its place */
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        vp__fail(err, rc, "%s: %s", path, why);
    }
    return rc;
}
