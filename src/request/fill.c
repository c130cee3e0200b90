/* A request from a JSON object (request.h: vp_request_from_json): every key checked for
 * its command, its type and its range, with an error naming it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "request/door.h"

/* What a filled request owns. */
typedef struct owned {
    json_t *json; /* the options: the request's strings point into it */
    char *counts; /* layers_per_stage given as an array, as text */
} owned;

static vp_status must_be(const char *key, const char *what, const vp__option *o, vp_error *err) {
    if (o && (o->kind == VP__INT || o->kind == VP__LONG || o->kind == VP__NUMBER))
        return vp__fail(err, VP_EINVAL, "option '%s' must be %s in [%.15g, %.15g]", key, what,
                        o->lo, o->hi);
    return vp__fail(err, VP_EINVAL, "option '%s' must be %s", key, what);
}

/* A number in [lo, hi]: any number, a whole one (integer: a JSON integer). */
static vp_status number(const json_t *v, const char *key, const vp__option *o, double *x,
                        vp_error *err) {
    bool integer = o->kind == VP__INT;
    *x = json_number_value(v);
    bool ok = integer ? json_is_integer(v) : json_is_number(v);
    if (o->kind == VP__LONG)
        ok = ok && *x == floor(*x);
    if (!ok || !(*x >= o->lo && *x <= o->hi))
        return must_be(key, o->kind == VP__NUMBER ? "a number" : "an integer", o, err);
    return VP_OK;
}

static vp_status choice(const json_t *v, const char *key, const vp__option *o, int *out,
                        vp_error *err) {
    if (!json_is_string(v))
        return must_be(key, "a string", o, err);
    const char *text = json_string_value(v);
    char list[128] = "";
    int n = 0;
    for (; o->choices[n]; n++)
        if (!strcmp(text, o->choices[n])) {
            *out = n;
            return VP_OK;
        }
    for (int k = 0; k < n; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", o->choices[k],
                 k + 2 < n   ? ", "
                 : k + 1 < n ? " or "
                             : "");
    return vp__fail(err, VP_EINVAL, "option '%s': unknown %s '%s' (%s)", key, o->noun, text, list);
}

/* An array of counts as "a,b,c" (owned by own), or the text itself. */
static vp_status counts(const json_t *v, const char *key, owned *own, const char **out,
                        vp_error *err) {
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return VP_OK;
    }
    size_t n = json_is_array(v) ? json_array_size(v) : 0;
    bool ok = n >= 1 && n <= 1 << 20;
    vp__buf b = {0};
    for (size_t i = 0; i < n && ok; i++) {
        const json_t *c = json_array_get(v, i);
        ok = json_is_integer(c) && json_integer_value(c) >= 0 && json_integer_value(c) <= 1 << 20;
        vp__buf_printf(&b, "%s%lld", i ? "," : "", (long long)json_integer_value(c));
    }
    if (!ok) {
        vp__buf_free(&b);
        return must_be(key, "an array of integers", NULL, err);
    }
    if (!(own->counts = vp__buf_take(&b)))
        return vp__fail(err, VP_ENOMEM, "out of memory");
    *out = own->counts;
    return VP_OK;
}

/* The operand: a string, or an array of one or two. */
static vp_status operand(const json_t *v, const char *key, const char **slot, vp_error *err) {
    if (json_is_string(v)) {
        slot[0] = json_string_value(v);
        return VP_OK;
    }
    size_t n = json_is_array(v) ? json_array_size(v) : 0;
    for (size_t i = 0; i < n && i < 2; i++)
        slot[i] = json_string_value(json_array_get(v, i));
    if (n < 1 || n > 2 || !slot[0] || (n == 2 && !slot[1]))
        return must_be(key, "a string or an array of two strings", NULL, err);
    return VP_OK;
}

/* Stores value v of option o (spelled key) into req. */
static vp_status store(const json_t *v, const char *key, const vp__option *o, vp_request *req,
                       owned *own, vp_error *err) {
    char *at = (char *)req + o->offset;
    double x;
    vp_status rc = VP_OK;
    switch (o->kind) {
    case VP__INT:
    case VP__LONG:
    case VP__NUMBER:
        if (o->boolean && json_is_boolean(v)) { /* an old flag: true is 1 */
            *(int *)at = json_is_true(v);
            return VP_OK;
        }
        if ((rc = number(v, key, o, &x, err)) != VP_OK)
            return rc;
        if (o->kind == VP__INT)
            *(int *)at = (int)x;
        else if (o->kind == VP__LONG)
            *(long *)at = (long)x;
        else
            *(double *)at = x;
        return VP_OK;
    case VP__TEXT:
        if (!json_is_string(v))
            return must_be(key, "a string", o, err);
        *(const char **)at = json_string_value(v);
        return VP_OK;
    case VP__FLAG:
        if (!json_is_boolean(v))
            return must_be(key, "true or false", o, err);
        *(bool *)at = json_is_true(v);
        return VP_OK;
    case VP__CHOICE:
        return choice(v, key, o, (int *)at, err);
    case VP__COUNTS:
        return counts(v, key, own, (const char **)at, err);
    case VP__OPERAND:
        return operand(v, key, (const char **)at, err);
    }
    return vp__fail(err, VP_EINVAL, "option '%s': unknown kind", key);
}

/* The option key names for command (cmd < 0: one of allowed, the first string API's). */
static vp_status find(const char *key, int cmd, const char *const *allowed, const vp__option **o,
                      vp_error *err) {
    *o = vp__option_find(key, cmd < 0);
    bool listed = cmd >= 0;
    for (int i = 0; allowed && allowed[i] && !listed; i++)
        listed = !strcmp(allowed[i], key);
    if (!*o || !listed) {
        vp__nearest near = {.word = key};
        for (int i = 0; cmd >= 0 && i < vp__n_options; i++)
            if (vp__options[i].commands & (1u << cmd))
                vp__nearest_offer(&near, vp__options[i].key);
        for (int i = 0; cmd < 0 && allowed && allowed[i]; i++)
            vp__nearest_offer(&near, allowed[i]);
        return vp__fail(err, VP_EINVAL, "unknown option '%s'%s", key,
                        vp__did_you_mean(near.best, NULL).text);
    }
    if (cmd >= 0 && !((*o)->commands & (1u << cmd)))
        return vp__fail(err, VP_EINVAL, "%s takes no option '%s'",
                        vp__command_name((vp__command)cmd), key);
    return VP_OK;
}

/* The options text as a JSON object (NULL or "" is {}). */
static vp_status parse(const char *text, json_t **out, vp_error *err) {
    json_error_t jerr;
    *out = text && *text ? json_loads(text, JSON_REJECT_DUPLICATES, &jerr) : json_object();
    if (!*out)
        return text && *text
                   ? vp__fail_at(err, VP_EPARSE, jerr.line, jerr.column, "options: %s", jerr.text)
                   : vp__fail(err, VP_ENOMEM, "out of memory");
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return vp__fail(err, VP_EINVAL, "options: not a JSON object");
    }
    return VP_OK;
}

vp_status vp__fill(const char *text, int cmd, const char *const *allowed, vp_request *req,
                   vp_error *err) {
    owned *own = calloc(1, sizeof *own);
    if (!own)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    req->owned = own;
    req->spelling = cmd < 0 ? (vp_spelling)VP__SPELL_OLD : VP_SPELL_JSON;
    vp_status rc = parse(text, &own->json, err);
    const char *key;
    json_t *v;
    if (rc == VP_OK)
        json_object_foreach(own->json, key, v) {
            const vp__option *o = NULL;
            rc = find(key, cmd, allowed, &o, err);
            if (rc == VP_OK)
                rc = store(v, key, o, req, own, err);
            if (rc != VP_OK)
                break;
        }
    if (rc != VP_OK)
        vp_request_release(req);
    return rc;
}

vp_status vp_request_from_json(const char *command, const char *options, vp_request *req,
                               vp_error *err) {
    vp_request_init(req, command);
    int cmd = vp__command_find(command);
    if (cmd < 0)
        return vp__unknown_command(command, err);
    return vp__fill(options, cmd, NULL, req, err);
}

void vp_request_release(vp_request *req) {
    owned *own = req->owned;
    const char *command = NULL;
    if (own) {
        json_decref(own->json);
        free(own->counts);
        free(own);
    }
    vp_request_init(req, command);
}
