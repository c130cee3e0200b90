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
        double bytes; /* 0: units */
    } suffixes[] = {{"u", 0},        {"b", 1},        {"KiB", 0x1p10}, {"MiB", 0x1p20},
                    {"GiB", 0x1p30}, {"TiB", 0x1p40}, {"kB", 1e3},     {"KB", 1e3},
                    {"MB", 1e6},     {"GB", 1e9},     {"TB", 1e12}};
    vp_budget b = {.kind = VP_BUDGET_FRACTION, .value = v};
    size_t k = 0, n = sizeof suffixes / sizeof suffixes[0];
    while (*end && k < n && strcmp(end, suffixes[k].suffix))
        k++;
    if (*end && k == n)
        return vp__fail_at(err, VP_EPARSE, 1, (int)(end - text) + 1,
                           "unexpected '%s' after the budget (suffix u for units; b, KiB, MiB, "
                           "GiB, TiB, kB, MB, GB or TB for bytes)",
                           end);
    if (*end) {
        b.kind = suffixes[k].bytes ? VP_BUDGET_BYTES : VP_BUDGET_UNITS;
        b.value = suffixes[k].bytes ? v * suffixes[k].bytes : v;
    }
    if (!isfinite(b.value))
        return vp__fail_at(err, VP_EPARSE, 1, 1, "memory budget '%s' is too large", text);
    if (!(v > 0))
        return vp__fail_at(err, VP_EPARSE, 1, 1, "memory budget must be > 0 (got %g)", v);
    *out = b;
    return VP_OK;
}
