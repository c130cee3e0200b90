/* Internal helpers shared by every module: error filling and checked allocation. */
#ifndef VPIPE_INTERNAL_H
#define VPIPE_INTERNAL_H

#include <stddef.h>

#include "vpipe/vpipe.h"

#if defined(__GNUC__)
#define VP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VP_PRINTF(a, b)
/* Monotonic clock in milliseconds (for durations only). */
double vp__now_ms(void);

#endif

/* Fills err (if non-NULL) with status and a formatted message; returns status so that
 * callers can write `return vp__fail(err, VP_EINVAL, "...")`. */
vp_status vp__fail(vp_error *err, vp_status status, const char *fmt, ...) VP_PRINTF(3, 4);

/* Same, with a 1-based line and column for parser errors. */
vp_status vp__fail_at(vp_error *err, vp_status status, int line, int column, const char *fmt, ...)
    VP_PRINTF(5, 6);

/* calloc that treats n*size overflow as failure. */
void *vp__calloc(size_t n, size_t size);

/* Grows *buf (element size elem) so that it holds at least need elements; *cap tracks
 * the capacity. Returns 0 on success, -1 when memory runs out (buffer left unchanged). */
int vp__grow(void **buf, int *cap, int need, size_t elem);

/* Monotonic clock in milliseconds (for durations only). */
double vp__now_ms(void);

#endif
