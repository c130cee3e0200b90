/* Fuzz target for the Hugging Face config.json reader (dense, mixture-of-experts, latent
 * attention, sliding-window and squared-ReLU keys: the seeds hold Llama, GPT-2, Mixtral,
 * Qwen3-MoE, DeepSeek-V3, GPT-OSS and Nemotron files): any input is either rejected with
 * VP_EPARSE and a message, or read into a model that passes vp_arch_check, whose heads
 * divide the width (or that states its head size) and KV heads divide the heads, whose
 * active parameters are positive and at most its parameters, and whose per-layer facts
 * under a default training setup are finite and positive. */
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
    if (vp_arch_check(&a, NULL) != VP_OK || (!a.head_dim && a.hidden % a.heads) ||
        a.heads % a.kv_heads)
        abort();
    double params = vp_arch_params(&a), active = vp_arch_active_params(&a);
    if (!(active > 0) || active > params * (1 + 1e-12))
        abort();
    vp_workload t = vp_workload_default(&a);
    t.seq = t.seq < 64 ? t.seq : 64;
    vp_price_facts f;
    if (!(params > 0) || !isfinite(params) ||
        vp_price_part_facts(&a, &t, VP_PRICE_LAYER, &f, NULL) != VP_OK || !(f.act_bytes > 0) ||
        !isfinite(f.flops_f + f.flops_b + f.flops_w))
        abort();
    return 0;
}
