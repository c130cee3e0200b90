/* Reading a request's options (request.h): one JSON object, every key known, each value
 * checked for its type and range with an error naming the option. Private to request. */
#ifndef VPIPE_REQUEST_OPTIONS_H
#define VPIPE_REQUEST_OPTIONS_H

#include <stdbool.h>

#include <jansson.h>

#include "vpipe/families.h"

/* Parses options text (NULL or "" is {}) into a new object (caller releases with
 * json_decref). VP_EPARSE with line and column for malformed JSON or duplicate keys,
 * VP_EINVAL for a value that is not an object or an unknown key (naming it). */
vp_status vp__options_open(const char *text, json_t **out, vp_error *err);

/* Each reads one option into *out, leaving it unchanged when the option is absent.
 * VP_EINVAL naming the option for a value of the wrong type or outside [lo, hi]. */
vp_status vp__option_long(const json_t *o, const char *key, long lo, long hi, long *out,
                          vp_error *err);
vp_status vp__option_int(const json_t *o, const char *key, int lo, int hi, int *out, vp_error *err);
vp_status vp__option_number(const json_t *o, const char *key, double lo, double hi, double *out,
                            vp_error *err);
vp_status vp__option_bool(const json_t *o, const char *key, bool *out, vp_error *err);
vp_status vp__option_string(const json_t *o, const char *key, const char **out, vp_error *err);

/* VP_EINVAL "option 'key' is required" when o has no key. */
vp_status vp__option_required(const json_t *o, const char *key, vp_error *err);

/* Names the option in the message of err after a parser of its value failed with rc
 * ("option 'costs': ..."); returns rc. */
vp_status vp__option_failed(vp_status rc, const char *key, vp_error *err);

/* In a function whose status so far is rc: when rc is VP_OK and option key is given,
 * parses its string with parse (vp_costs_parse, vp_budget_parse, ...: text, dest, err)
 * into dest, naming the option in an error. */
#define VP__OPTION_PARSE(o, key, parse, dest, err)                                                 \
    do {                                                                                           \
        const char *text_ = NULL;                                                                  \
        if (rc == VP_OK)                                                                           \
            rc = vp__option_string(o, key, &text_, err);                                           \
        if (rc == VP_OK && text_ && (rc = parse(text_, dest, err)) != VP_OK)                       \
            rc = vp__option_failed(rc, key, err);                                                  \
    } while (0)

/* A spec from the options p, m, v, costs, memory_model, memory_limit, max_ops and
 * threads on top of vp_spec_make(0, 0). */
vp_status vp__options_spec(const json_t *o, vp_spec *spec, vp_error *err);

/* The same, with p and m required and the spec within its op limit (VP_ELIMIT). */
vp_status vp__options_sized_spec(const json_t *o, vp_spec *spec, vp_error *err);

/* The same, and *family, the option family (required), a registered name (VP_EINVAL). */
vp_status vp__options_family(const json_t *o, vp_spec *spec, const char **family, vp_error *err);

#endif
