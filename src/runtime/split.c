/* The layer split of a run: the price module's split of vpipe's own model (vp_arch_vpipe
 * describes it byte for byte), so that the runtime and the real-model planner balance
 * stages by one rule. */
#include <stdlib.h>

#include "runtime/runtime_internal.h"
#include "vpipe/price.h"

vp_status vp_runtime_split(const vp_schedule *s, const vp_model_config *cfg, vp_split_goal goal,
                           int *layer_start, vp_error *err) {
    vp_status rc = vp_model_config_check(cfg, err);
    if (rc != VP_OK)
        return rc;
    if (goal == VP_SPLIT_EVEN)
        return vp_split_layers(cfg->n_layer, s->route_len, layer_start, err);
    vp_arch arch = vp_arch_vpipe(cfg->n_layer, cfg->width, cfg->n_head, cfg->seq_len);
    arch.vocab = cfg->vocab;
    vp_workload work = vp_workload_default(&arch);
    work.seq = cfg->seq_len;
    work.mbs = cfg->microbatch;
    vp_gpu gpu; /* times are FLOPs at one rate: any accelerator gives the same split */
    rc = vp_gpu_preset("a100-80gb", &gpu, err);
    vp_price_setup setup = {.arch = &arch, .gpu = &gpu, .work = &work, .split = goal};
    vp_price_layout *lay = NULL;
    if (rc == VP_OK)
        rc = vp_price_layout_new(&setup, s, &lay, err);
    if (rc == VP_OK) {
        layer_start[0] = 0;
        for (int k = 0; k < s->route_len; k++)
            layer_start[k + 1] = layer_start[k] + lay->layers_per_stage[k];
    }
    vp_price_layout_free(lay);
    return rc;
}
