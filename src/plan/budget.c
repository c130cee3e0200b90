/* Memory budgets as users write them: "0.5" (of 1F1B's peak), "4u" (units), "123456b". */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

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
    vp_budget b = {.kind = VP_BUDGET_FRACTION, .value = v};
    if (*end == 'u' || *end == 'b') {
        b.kind = *end == 'u' ? VP_BUDGET_UNITS : VP_BUDGET_BYTES;
        end++;
    }
    if (*end)
        return vp__fail_at(err, VP_EPARSE, 1, (int)(end - text) + 1,
                           "unexpected '%s' after the budget (suffix u for units, b for bytes)",
                           end);
    if (!(v > 0))
        return vp__fail_at(err, VP_EPARSE, 1, 1, "memory budget must be > 0 (got %g)", v);
    *out = b;
    return VP_OK;
}
