/* The training log (vpipe train --log): one JSON object per step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "runtime/runtime_internal.h"

/* "key":v, with v null when not finite (17 significant digits: it reads back exactly). */
static void add_real(vp__buf *b, const char *key, double v) {
    if (isfinite(v))
        vp__buf_printf(b, ",\"%s\":%.17g", key, v);
    else
        vp__buf_printf(b, ",\"%s\":null", key);
}

vp_status vp_train_log_line(const vp_train_progress *p, char **line, vp_error *err) {
    vp__buf b = {0};
    vp__buf_printf(&b, "{\"step\":%d,\"steps\":%d", p->step, p->steps);
    add_real(&b, "loss", p->loss);
    add_real(&b, "val_loss", p->val_loss);
    add_real(&b, "lr", p->lr);
    add_real(&b, "grad_norm", p->grad_norm);
    add_real(&b, "tokens_per_s", p->tokens_per_s);
    add_real(&b, "step_ms", p->step_ms);
    if (p->peak_bytes) {
        vp__buf_printf(&b, ",\"peak_bytes\":[");
        for (int d = 0; d < p->ranks; d++)
            vp__buf_printf(&b, "%s%.0f", d ? "," : "", p->peak_bytes[d]);
        vp__buf_printf(&b, "]");
    } else {
        vp__buf_printf(&b, ",\"peak_bytes\":null");
    }
    vp__buf_printf(&b, ",\"skipped\":%s,\"checkpointed\":%s}\n", p->skipped ? "true" : "false",
                   p->checkpointed ? "true" : "false");
    *line = vp__buf_take(&b);
    return *line ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}
