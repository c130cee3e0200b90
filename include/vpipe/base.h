/* vpipe base: the status vocabulary, the error record, the version, and reading files.
 *
 * Module `base` (src/base/) is the floor of the house: every other module depends on it.
 * Depends on libc only.
 *
 * Conventions that hold for the whole library:
 * - The library never prints and never exits. A fallible function returns a vp_status
 *   (VP_OK = 0, errors negative) and, when the caller passes a non-NULL vp_error, fills
 *   it with a one-line message (and line/column for parsers). Constructors have the shape
 *   `vp_status vp_x_new(..., vp_x **out, vp_error *err)`: *out is NULL on failure.
 * - Ownership: an object made by vp_<x>_new (or returned through an out-pointer by a
 *   builder or reader) belongs to the caller, who releases it with vp_<x>_free; every
 *   _free accepts NULL. Pointers a function returns without "new" in its contract are
 *   borrowed and live as long as their owner.
 * - Public names are vp_<module>_<verb>, types vp_<thing>, macros VP_*; vp__* names are
 *   internal to the library.
 */
#ifndef VPIPE_BASE_H
#define VPIPE_BASE_H

#include <stddef.h>

#define VP_VERSION_MAJOR 0
#define VP_VERSION_MINOR 1
#define VP_VERSION_PATCH 0
#define VP_VERSION_STRING "0.1.0"

/* Every status: X(name, value, message, exit code of the command line). The exit codes
 * are 0 ok, 1 the request ran and failed, 2 a usage error (bad flags, arguments out of
 * range, requests over a limit), 3 bad input (malformed or invalid data, unreadable or
 * unwritable files). */
#define VP_STATUS_LIST(X)                                                                          \
    X(VP_OK, 0, "ok", 0)                                                                           \
    X(VP_EINVAL, -1, "invalid argument", 2)                                                        \
    X(VP_ENOMEM, -2, "out of memory", 1)                                                           \
    X(VP_EIO, -3, "input/output error", 3)                                                         \
    X(VP_EPARSE, -4, "parse error", 3)                                                             \
    X(VP_EVALIDATION, -5, "fails validation", 3)                                                   \
    X(VP_EUNSUPPORTED, -6, "unsupported", 2)                                                       \
    X(VP_EDEADLOCK, -7, "deadlock", 3)                                                             \
    X(VP_ERUNTIME, -8, "runtime failure", 1)                                                       \
    X(VP_ELIMIT, -9, "over a size limit", 2)

#define VP__STATUS_ENUM(name, value, message, exit_code) name = value,
typedef enum { VP_STATUS_LIST(VP__STATUS_ENUM) } vp_status;
#undef VP__STATUS_ENUM

/* Filled by a failing call when the caller passes one. line/column are 1-based and 0
 * when the error is not about a position in a text. */
typedef struct vp_error {
    vp_status status;
    int line;
    int column;
    char message[512];
} vp_error;

/* Static message of a status ("invalid argument", ...); never NULL. */
const char *vp_status_str(vp_status status);

/* Static name of a status ("VP_EINVAL", ...); never NULL. */
const char *vp_status_name(vp_status status);

/* The command line's exit code for a status (the last column of VP_STATUS_LIST). */
int vp_status_exit_code(vp_status status);

/* The library's version, "MAJOR.MINOR.PATCH"; equal to VP_VERSION_STRING of the headers
 * it was built with. Static string. */
const char *vp_version(void);

/* Largest file vp_read_file accepts by default: 1 GiB. */
#define VP_READ_MAX ((size_t)1 << 30)

/* Reads a whole regular file ("-" is stdin) of at most max bytes (0: VP_READ_MAX) into a
 * new NUL-terminated buffer (caller frees with free()); *len receives its length.
 * Refuses a directory, a device or a FIFO (only "-" may be a stream) and anything longer
 * than max, before reading past it. VP_EIO with the path and the reason ("is a
 * directory", "is not a regular file", "is larger than N bytes", the system's message),
 * VP_ENOMEM. */
vp_status vp_read_file(const char *path, size_t max, char **text, size_t *len, vp_error *err);

/* Writes len bytes to path atomically: into a temporary file in the same directory,
 * checking every write, then fflush, fsync, fclose, and a rename over path (then an
 * fsync of the directory). On any failure the temporary file is removed, a previous file
 * at path is left untouched, and VP_EIO names the path and the reason (e.g. "No space
 * left on device"). "-" writes to stdout and checks the write and the flush; an existing
 * device or FIFO (/dev/null, /dev/full, a named pipe) is written in place, every write
 * checked. */
vp_status vp_write_file(const char *path, const void *bytes, size_t len, vp_error *err);

#endif
