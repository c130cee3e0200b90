/* Fuzz target for the Hugging Face config.json reader: any input is either rejected with
 * VP_EPARSE and a message, or read into a model that passes vp_arch_check, whose heads
 * divide the width and KV heads divide the heads, and whose parameter count and per-layer
 * facts under a default training setup are finite and positive. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "vpipe/price.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vp_arch a;
    vp_error err = {0};
    if (vp_arch_parse_hf((const char *)data, size, "fuzz", &a, &err) != VP_OK) {
        if (err.status != VP_EPARSE || err.message[0] == '\0')
            abort(); /* every rejection is a parse error that explains itself */
        return 0;
    }
    if (vp_arch_check(&a, NULL) != VP_OK || a.hidden % a.heads || a.heads % a.kv_heads)
        abort();
    double params = vp_arch_params(&a);
    vp_workload t = vp_workload_default(&a);
    t.seq = t.seq < 64 ? t.seq : 64;
    vp_price_facts f;
    if (!(params > 0) || !isfinite(params) ||
        vp_price_part_facts(&a, &t, VP_PRICE_LAYER, &f, NULL) != VP_OK || !(f.act_bytes > 0) ||
        !isfinite(f.flops_f + f.flops_b + f.flops_w))
        abort();
    return 0;
}
