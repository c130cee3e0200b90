/* The status vocabulary, the version, error filling and failed internal checks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"

#define MESSAGE_CASE(name, value, message, exit_code)                                              \
    case name:                                                                                     \
        return message;
#define NAME_CASE(name, value, message, exit_code)                                                 \
    case name:                                                                                     \
        return #name;
#define EXIT_CASE(name, value, message, exit_code)                                                 \
    case name:                                                                                     \
        return exit_code;

const char *vp_status_str(vp_status status) {
    switch (status) { VP_STATUS_LIST(MESSAGE_CASE) }
    return "unknown status";
}

const char *vp_status_name(vp_status status) {
    switch (status) { VP_STATUS_LIST(NAME_CASE) }
    return "VP_UNKNOWN";
}

int vp_status_exit_code(vp_status status) {
    switch (status) { VP_STATUS_LIST(EXIT_CASE) }
    return 1;
}

void vp__assert_fail(const char *cond, const char *file, int line) {
    fprintf(stderr, "vpipe: %s:%d: internal check failed: %s\n", file, line, cond);
    abort();
}

const char *vp_version(void) {
    return VP_VERSION_STRING;
}

static vp_status fail_v(vp_error *err, vp_status status, int line, int column, const char *fmt,
                        va_list ap) {
    if (err) {
        err->status = status;
        err->line = line;
        err->column = column;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
    }
    return status;
}

vp_status vp__fail(vp_error *err, vp_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_v(err, status, 0, 0, fmt, ap);
    va_end(ap);
    return status;
}

vp_status vp__fail_at(vp_error *err, vp_status status, int line, int column, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_v(err, status, line, column, fmt, ap);
    va_end(ap);
    return status;
}
