/* Internal helpers shared by the block framework's files. */
#ifndef VPIPE_BLOCK_INTERNAL_H
#define VPIPE_BLOCK_INTERNAL_H

#include "base/internal.h"
#include "vpipe/block.h"

/* Limits that keep index arithmetic far from overflow. */
#define VP__BLOCK_MAX_CLASSES 64
#define VP__BLOCK_MAX_MB_OFFSET 1000000

/* Microbatch class of an offset: mb mod mb_per_copy, in [0, mb_per_copy). */
int vp__block_class(const vp_block *b, int mb);

/* First stage of each class's route (lo[mb_per_copy]) and the common route length.
 * Returns 0 when some class has no pass or the routes differ in length. */
int vp__block_routes(const vp_block *b, int *lo, int *len);

/* A new empty schedule with the block's shape, placement, routes and m microbatches
 * (family NULL: "block"). VP_EINVAL, VP_ENOMEM; *out untouched on failure. */
vp_status vp__block_shape(const vp_block *b, int m, const char *family, vp_schedule **out,
                          vp_error *err);

/* Tolerance for comparing block times of magnitude scale. */
static inline double vp__block_eps(double scale) {
    return 1e-9 * (scale > 1.0 ? scale : 1.0);
}

#endif
