/* The growable string every text writer builds into. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

/* Room for n more bytes and the NUL; 0, or -1 (and b failed) when memory runs out. */
static int reserve(vp__buf *b, size_t n) {
    if (b->failed)
        return -1;
    if (b->len + n + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) {
        if (cap > (size_t)-1 / 2) {
            b->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    char *grown = realloc(b->data, cap);
    if (!grown) {
        b->failed = 1;
        return -1;
    }
    b->data = grown;
    b->cap = cap;
    return 0;
}

void vp__buf_add(vp__buf *b, const char *bytes, size_t n) {
    if (reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void vp__buf_printf(vp__buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *vp__buf_take(vp__buf *b) {
    if (!b->failed && reserve(b, 0) != 0)
        return NULL;
    if (!b->failed)
        b->data[b->len] = '\0'; /* a buffer nothing was written to is "" too */
    char *text = b->failed ? NULL : b->data;
    if (b->failed)
        free(b->data);
    *b = (vp__buf){0};
    return text;
}

void vp__buf_free(vp__buf *b) {
    free(b->data);
    *b = (vp__buf){0};
}
