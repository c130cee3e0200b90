/* Shared by the files of src/calibrate (not part of the public API). */
#ifndef VPIPE_CALIBRATE_INTERNAL_H
#define VPIPE_CALIBRATE_INTERNAL_H

#include "vpipe/calibrate.h"

/* A run made ready to price: its model, accelerator and workload resolved, and the
 * configuration chosen (the search's pick for "*" cells). */
typedef struct vp__run_ready {
    vp_arch arch;
    vp_gpu gpu;
    vp_workload work;
    char family[32];
    int p, m, v;
} vp__run_ready;

/* Resolves run i of set (its model, and its accelerator unless gpu is given) and its
 * workload at microbatch size mbs and recomputation rc; family, p, m and v from the run's
 * schedule (family NULL: the run's own). VP_EUNSUPPORTED (why_not), VP_EINVAL naming the
 * line for a configuration that does not hold together, resolving errors. */
vp_status vp__run_resolve(const vp_run_set *set, int i, const vp_gpu *gpu, vp__run_ready *out,
                          vp_error *err);

/* Prices run i as vp_calibrate_price does, and hands over the configuration it chose
 * (*chosen: the fastest that fits of what its "*" cells allow). */
vp_status vp__run_choose(const vp_run_set *set, int i, const vp_gpu *gpu, vp__run_ready *chosen,
                         vp_run_price *out, vp_error *err);

/* Prices ready (its family at p, m, v; the layers split evenly, as frameworks split them)
 * into *out (caller frees with vp_price_result_free). */
vp_status vp__run_price_ready(const vp__run_ready *ready, vp_price_result **out, vp_error *err);

/* Fills out's figures from a priced result of run. */
void vp__run_fill(const vp_run *run, const vp__run_ready *ready, const vp_price_result *r,
                  vp_run_price *out);

#endif
