/* Internal helpers every module shares: error filling, checked allocation, growth, a
 * monotonic clock and deterministic random numbers. Not part of the public API. */
#ifndef VPIPE_BASE_INTERNAL_H
#define VPIPE_BASE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "vpipe/base.h"

#if defined(__GNUC__)
#define VP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VP_PRINTF(a, b)
#endif

/* Checks a precondition the library trusts its caller with (a programmer error, never
 * bad input, which gets a vp_status): when cond is false, prints the file, line and
 * condition to stderr and aborts. The one place the library prints. */
#define VP_ASSERT(cond) ((cond) ? (void)0 : vp__assert_fail(#cond, __FILE__, __LINE__))
_Noreturn void vp__assert_fail(const char *cond, const char *file, int line);

/* Fills err (if non-NULL) with status and a formatted message; returns status so that
 * callers can write `return vp__fail(err, VP_EINVAL, "...")`. */
vp_status vp__fail(vp_error *err, vp_status status, const char *fmt, ...) VP_PRINTF(3, 4);

/* Same, with a 1-based line and column for parser errors. */
vp_status vp__fail_at(vp_error *err, vp_status status, int line, int column, const char *fmt, ...)
    VP_PRINTF(5, 6);

/* A growable string (text output of every writer). A failed allocation is sticky: later
 * appends do nothing and vp__buf_take returns NULL, so writers check once at the end. */
typedef struct vp__buf {
    char *data; /* NUL-terminated while not failed */
    size_t len, cap;
    int failed;
} vp__buf;

/* Appends n bytes / a formatted string. */
void vp__buf_add(vp__buf *b, const char *bytes, size_t n);
void vp__buf_printf(vp__buf *b, const char *fmt, ...) VP_PRINTF(2, 3);

/* The text (caller frees with free()), or NULL when an allocation failed; b is empty
 * afterwards. */
char *vp__buf_take(vp__buf *b);

/* Releases what b holds (b may be reused). */
void vp__buf_free(vp__buf *b);

/* Writing a file atomically (file.c; vp_write_file and the checkpoints are built on
 * it). vp__atomic_open creates (or truncates) the temporary file tmp_path, which must be
 * in path's directory (NULL: "<path>.tmp.<pid>"); vp__atomic_write appends to it,
 * keeping the first failure (later writes do nothing); vp__atomic_commit then fsyncs,
 * closes and renames it over path and fsyncs the directory, or, after any failure,
 * removes it and returns VP_EIO with the path and the reason; vp__atomic_abort removes
 * it. Commit and abort free the writer. path is untouched until the rename. */
typedef struct vp__atomic vp__atomic;
vp_status vp__atomic_open(const char *path, const char *tmp_path, vp__atomic **out, vp_error *err);
void vp__atomic_write(vp__atomic *a, const void *bytes, size_t n);
vp_status vp__atomic_commit(vp__atomic *a, vp_error *err);
void vp__atomic_abort(vp__atomic *a);

/* calloc that treats n*size overflow as failure. */
void *vp__calloc(size_t n, size_t size);

/* malloc of n elements of size bytes (uninitialised) that treats overflow as failure. */
void *vp__malloc(size_t n, size_t size);

/* Grows *buf (element size elem) so that it holds at least need elements; *cap tracks
 * the capacity. Returns 0 on success, -1 when memory runs out (buffer left unchanged). */
int vp__grow(void **buf, int *cap, int need, size_t elem);

/* Reads a plain decimal number at text ("2", "0.5", ".5", "1e-3"; no blank, sign, hex,
 * inf or nan) into *v: a subnormal stays as it is, an overflow becomes HUGE_VAL. Returns
 * the end, or NULL when text does not start with such a number. */
const char *vp__read_number(const char *text, double *v);

/* Monotonic clock in milliseconds (for durations only). */
double vp__now_ms(void);

/* Median of v[0..n), n >= 1; sorts v. */
double vp__median(double *v, int n);

/* Deterministic random numbers (rng.c): a splitmix64 step, a stream key derived from
 * (seed, a, b), and n normal samples of standard deviation std (Box-Muller). */
uint64_t vp__rng_next(uint64_t *state);
uint64_t vp__rng_key(uint64_t seed, uint64_t a, uint64_t b);
void vp__rng_normal(uint64_t *state, float *out, int64_t n, float std);

#endif
