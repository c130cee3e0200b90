/* Internal helpers every module shares: error filling, checked allocation, growth, a
 * monotonic clock and deterministic random numbers. Not part of the public API. */
#ifndef VPIPE_BASE_INTERNAL_H
#define VPIPE_BASE_INTERNAL_H

#include <stdbool.h>
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

/* Messages never carry terminal controls: a control character of text (but newline and
 * tab) is written as \xNN, a C1 control (UTF-8 U+0080..U+009F) as \u00NN. vp__fail and
 * vp__fail_at escape their messages so. Writes at most size bytes, NUL included, whole
 * characters and escapes only; returns the length written. */
size_t vp__text_escape(char *dst, size_t size, const char *src);

/* Whether text holds a control character (C0 including newline and tab, DEL, or C1): a
 * reader refuses such a name, which would reach a terminal. */
bool vp__text_has_control(const char *text);

/* The name nearest a mistyped word among those offered to vp__nearest_offer: one the word
 * begins (of 2 bytes or more), else the fewest vp_typo_edits; the first offered on a tie;
 * best stays NULL if none is near. */
typedef struct vp__nearest {
    const char *word;
    const char *best;
    int edits;
} vp__nearest;
void vp__nearest_offer(vp__nearest *n, const char *name);

/* A message's closing hint: " (did you mean 'best'? tail)", without the question when best
 * is NULL, without tail when it is NULL, "" when both are. */
typedef struct vp__hint {
    char text[512];
} vp__hint;
vp__hint vp__did_you_mean(const char *best, const char *tail);

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
 * it). vp__atomic_open creates a temporary file of its own beside path, named
 * "<path>" VP__TMP_MARK "<pid>.<n>" (never one another writer uses, and with the
 * permissions of a file at path it will replace); vp__atomic_write appends to it,
 * keeping the first failure (later writes do nothing); vp__atomic_commit then fsyncs,
 * closes and renames it over path and fsyncs the directory, or, after any failure,
 * removes it and returns VP_EIO with the path and the reason; vp__atomic_abort removes
 * it. Commit and abort free the writer. path is untouched until the rename. */
#define VP__TMP_MARK ".tmp."
typedef struct vp__atomic vp__atomic;
vp_status vp__atomic_open(const char *path, vp__atomic **out, vp_error *err);
void vp__atomic_write(vp__atomic *a, const void *bytes, size_t n);
vp_status vp__atomic_commit(vp__atomic *a, vp_error *err);
void vp__atomic_abort(vp__atomic *a);

/* Opens path for reading without blocking (a FIFO without a writer, a device) and
 * refuses, before reading anything, what is not a regular file or is larger than max
 * bytes: VP_EIO naming the path and the reason. *fd (close it) and *size on success. */
vp_status vp__open_regular(const char *path, size_t max, int *fd, size_t *size, vp_error *err);

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
/* FNV-1a 64 over n bytes, continuing from hash (0xcbf29ce484222325 to start): the
 * digest of checkpoints, parameters (vp_digest) and data (vp_data_digest). */
uint64_t vp__fnv1a(const void *bytes, size_t n, uint64_t hash);

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
