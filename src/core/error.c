/* Status names, error filling and checked allocation. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/internal.h"

const char *vp_status_str(vp_status status) {
    switch (status) {
    case VP_OK:
        return "ok";
    case VP_EINVAL:
        return "invalid argument";
    case VP_ENOMEM:
        return "out of memory";
    case VP_EIO:
        return "input/output error";
    case VP_EPARSE:
        return "parse error";
    case VP_EINVALID:
        return "invalid schedule";
    case VP_EUNSUPPORTED:
        return "unsupported";
    case VP_EDEADLOCK:
        return "deadlock";
    case VP_ERUNTIME:
        return "runtime failure";
    }
    return "unknown status";
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

void *vp__calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size)
        return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

double vp__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int vp__grow(void **buf, int *cap, int need, size_t elem) {
    if (need <= *cap)
        return 0;
    int ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > INT32_MAX / 2)
            return -1;
        ncap *= 2;
    }
    void *nb = realloc(*buf, (size_t)ncap * elem);
    if (!nb)
        return -1;
    *buf = nb;
    *cap = ncap;
    return 0;
}
