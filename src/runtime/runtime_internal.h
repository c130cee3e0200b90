/* Internal pieces the reference loop (train.c) and the pipeline (exec.c) share. */
#ifndef VPIPE_RUNTIME_INTERNAL_H
#define VPIPE_RUNTIME_INTERNAL_H

#include "base/internal.h"
#include "vpipe/runtime.h"

/* The trajectory of a run as a checkpoint records it. */
vp_checkpoint_run vp__checkpoint_run(const vp_train_options *o);

#endif
