/* Fuzz target for the small string parsers of the command line: --cost
 * (vp_costs_parse), --memory-model (vp_memcfg_parse), --memory (vp_budget_parse) and
 * --offload (vp_offload_parse). The same text goes to all four; each either refuses it
 * with a message or returns values in its documented range.
 *
 * The corpus (fuzz/corpus/parsers/) holds valid and invalid strings for each. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vpipe/plan.h"
#include "vpipe/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A refusal must explain itself. */
static void refused(const vp_error *err) {
    if (err->message[0] == '\0')
        abort();
}

static bool cost_ok(double x) {
    return isfinite(x) && x >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0'; /* the parsers read C strings: an embedded NUL ends the text */
    vp_error err = {0};
    vp_costs costs = vp_costs_default();
    if (vp_costs_parse(text, &costs, &err) != VP_OK)
        refused(&err);
    else if (!cost_ok(costs.f) || !cost_ok(costs.b) || !cost_ok(costs.w) || !cost_ok(costs.c) ||
             !(costs.fb < 0 || cost_ok(costs.fb)) || !(costs.o < 0 || cost_ok(costs.o)) ||
             !(costs.l < 0 || cost_ok(costs.l)) || costs.dev_f || costs.dev_b || costs.dev_w)
        abort();
    vp_memcfg mem = vp_memcfg_default();
    err = (vp_error){0};
    if (vp_memcfg_parse(text, &mem, &err) != VP_OK)
        refused(&err);
    else if ((mem.kind != VP_MEM_AT_W && mem.kind != VP_MEM_ZB) ||
             !(mem.zb_ratio >= 0 && mem.zb_ratio <= 1) || mem.unit_bytes != 0)
        abort();
    vp_budget budget;
    err = (vp_error){0};
    if (vp_budget_parse(text, &budget, &err) != VP_OK)
        refused(&err);
    else if (!isfinite(budget.value) || !(budget.value > 0) ||
             (budget.kind != VP_BUDGET_FRACTION && budget.kind != VP_BUDGET_UNITS &&
              budget.kind != VP_BUDGET_BYTES))
        abort();
    vp_offload off;
    double *shares = NULL;
    err = (vp_error){0};
    if (vp_offload_parse(text, &off, &shares, &err) != VP_OK) {
        refused(&err);
        if (shares)
            abort(); /* nothing kept on failure */
    } else {
        int n = off.shares ? off.n : 1;
        for (int i = 0; i < n; i++) {
            double x = off.shares ? off.shares[i] : off.share;
            if (!(x >= 0 && x <= 1))
                abort();
        }
        if ((off.shares != shares) || (off.shares && off.n < 2))
            abort();
    }
    free(shares);
    free(text);
    return 0;
}
