/* The status vocabulary, the version, error filling and failed internal checks. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

size_t vp__text_escape(char *dst, size_t size, const char *src) {
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)src; *c && size > 0; c++) {
        char esc[12] = {0};
        bool c1 = c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f; /* U+0080..U+009F */
        if (c1)
            snprintf(esc, sizeof esc, "\\u%04x", c[1]);
        else if ((*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", *c);
        size_t len = esc[0] ? strlen(esc) : 1;
        if (n + len >= size)
            break;
        if (esc[0])
            memcpy(dst + n, esc, len);
        else
            dst[n] = (char)*c;
        n += len;
        c += c1;
    }
    if (size > 0)
        dst[n] = '\0';
    return n;
}

static vp_status fail_v(vp_error *err, vp_status status, int line, int column, const char *fmt,
                        va_list ap) {
    if (err) {
        /* formatted apart first: an argument may be err->message itself */
        char text[sizeof err->message], shown[4 * sizeof text];
        bool cut = vsnprintf(text, sizeof text, fmt, ap) >= (int)sizeof text;
        size_t n = vp__text_escape(shown, sizeof shown, text);
        err->status = status;
        err->line = line;
        err->column = column;
        if (cut || n >= sizeof err->message) { /* a message too long ends in "...", whole UTF-8 */
            n = sizeof err->message - 4;
            while (n > 0 && (shown[n] & 0xc0) == 0x80)
                n--;
            memcpy(shown + n, "...", 4);
        }
        memcpy(err->message, shown, strlen(shown) + 1);
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

bool vp__text_has_control(const char *text) {
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        if (*c < 0x20 || *c == 0x7f || (c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f))
            return true;
    return false;
}
