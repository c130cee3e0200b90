/* Shared command-line helpers (see cli.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_error(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("vpipe: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

int cli_lib_error(const vp_error *err) {
    int code = vp_status_exit_code(err->status);
    if (err->line > 0)
        return cli_error(code, "%d:%d: %s", err->line, err->column, err->message);
    return cli_error(code, "%s", err->message[0] ? err->message : vp_status_str(err->status));
}

int cli_parse_int(const char *flag, const char *text, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < lo || v > hi) {
        cli_error(VP_EXIT_USAGE, "%s expects an integer in [%ld, %ld], got '%s'", flag, lo, hi,
                  text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *flag, const char *text, double lo, double hi, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end != '\0' || !isfinite(v) || v < lo || v > hi) {
        cli_error(VP_EXIT_USAGE, "%s expects a number in [%g, %g], got '%s'", flag, lo, hi, text);
        return -1;
    }
    *out = v;
    return 0;
}

const char *cli_flag_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_error(VP_EXIT_USAGE, "%s needs a value", argv[*i]);
        return NULL;
    }
    *i += 1;
    return argv[*i];
}

FILE *cli_open_out(const char *path) {
    if (!path || (path[0] == '-' && path[1] == '\0'))
        return stdout;
    FILE *f = fopen(path, "w");
    if (!f)
        cli_error(VP_EXIT_INPUT, "cannot write %s: %s", path, strerror(errno));
    return f;
}

void cli_close_out(FILE *f) {
    if (f && f != stdout)
        fclose(f);
    else if (f)
        fflush(f);
}
