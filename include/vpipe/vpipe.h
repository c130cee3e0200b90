/* vpipe: pipeline-parallel schedules with controllable activation memory.
 *
 * Base header: status codes, the error record, version. Every module header includes
 * it; include the modules you use: schedule.h (the schedule value), sim.h (costs,
 * simulator), families.h (generators), block.h (building blocks), plan.h (memory-budget
 * planner), io.h and torch_csv.h (files), render.h (pictures), model.h (the
 * transformer), runtime.h (pipelined training).
 *
 * Conventions that hold for the whole library:
 * - The library never prints and never exits. A fallible function returns a vp_status
 *   (VP_OK = 0, errors negative) and, when the caller passes a non-NULL vp_error, fills
 *   it with a one-line message (and line/column for parsers).
 * - Ownership: an object made by vp_<x>_new (or returned through an out-pointer by a
 *   builder or reader) belongs to the caller, who releases it with vp_<x>_free; every
 *   _free accepts NULL. Pointers a function returns without "new" in its contract are
 *   borrowed and live as long as their owner.
 * - Public names are vp_<module>_<verb>, types vp_<thing>, macros VP_*.
 */
#ifndef VPIPE_VPIPE_H
#define VPIPE_VPIPE_H

#define VP_VERSION_MAJOR 0
#define VP_VERSION_MINOR 1
#define VP_VERSION_PATCH 0
#define VP_VERSION_STRING "0.1.0"

typedef enum {
    VP_OK = 0,
    VP_EINVAL = -1,       /* an argument is out of range or inconsistent */
    VP_ENOMEM = -2,       /* allocation failed */
    VP_EIO = -3,          /* a file could not be read or written */
    VP_EPARSE = -4,       /* input text is malformed (line/column in vp_error) */
    VP_EINVALID = -5,     /* a schedule fails validation */
    VP_EUNSUPPORTED = -6, /* the request is well-formed but not supported */
    VP_EDEADLOCK = -7,    /* a schedule's replay cannot make progress */
    VP_ERUNTIME = -8      /* a training run failed (rank error, non-finite value, ...) */
} vp_status;

/* Filled by a failing call when the caller passes one. line/column are 1-based and 0
 * when the error is not about a position in a text. */
typedef struct vp_error {
    vp_status status;
    int line;
    int column;
    char message[512];
} vp_error;

/* Static name of a status ("invalid argument", ...); never NULL. */
const char *vp_status_str(vp_status status);

#endif
