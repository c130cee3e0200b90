/* Memory budgets as users write them: "0.5" (of 1F1B's peak), "4u" (units), "123456b",
 * "64MiB" or "2GB" (bytes). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "vpipe/plan.h"

vp_status vp_budget_parse(const char *text, vp_budget *out, vp_error *err) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno || !isfinite(v))
        return vp__fail_at(err, VP_EPARSE, 1, 1,
                           "memory budget '%s' needs a number: a fraction of 1F1B's peak (0.5), "
                           "units (4u) or bytes (123456b)",
                           text);
    static const struct {
        const char *suffix;
        vp_budget_kind kind;
        double scale; /* of the number */
    } suffixes[] = {{"u", VP_BUDGET_UNITS, 1},        {"b", VP_BUDGET_BYTES, 1},
                    {"KiB", VP_BUDGET_BYTES, 0x1p10}, {"MiB", VP_BUDGET_BYTES, 0x1p20},
                    {"GiB", VP_BUDGET_BYTES, 0x1p30}, {"TiB", VP_BUDGET_BYTES, 0x1p40},
                    {"kB", VP_BUDGET_BYTES, 1e3},     {"KB", VP_BUDGET_BYTES, 1e3},
                    {"MB", VP_BUDGET_BYTES, 1e6},     {"GB", VP_BUDGET_BYTES, 1e9},
                    {"TB", VP_BUDGET_BYTES, 1e12}};
    vp_budget b = {.kind = VP_BUDGET_FRACTION, .value = v};
    size_t k = 0, n = sizeof suffixes / sizeof suffixes[0];
    while (*end && k < n && strcmp(end, suffixes[k].suffix))
        k++;
    if (*end && k == n)
        return vp__fail_at(err, VP_EPARSE, 1, (int)(end - text) + 1,
                           "unexpected '%s' after the budget (suffix u for units; b, KiB, MiB, "
                           "GiB, TiB, kB, MB, GB or TB for bytes)",
                           end);
    if (*end)
        b = (vp_budget){.kind = suffixes[k].kind, .value = v * suffixes[k].scale};
    if (!isfinite(b.value))
        return vp__fail_at(err, VP_EPARSE, 1, 1, "memory budget '%s' is too large", text);
    if (!(v > 0))
        return vp__fail_at(err, VP_EPARSE, 1, 1, "memory budget must be > 0 (got %g)", v);
    *out = b;
    return VP_OK;
}
