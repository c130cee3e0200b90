/* Error printing, the one output writer, and the progress line (see cli.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_error(int code, const char *fmt, ...) {
    cli_progress_clear();
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

int cli_write(const char *path, const char *text, size_t len) {
    vp_error err = {0};
    if (vp_write_file(path, text, len, &err) == VP_OK)
        return 0;
    /* vp_write_file's messages are "<path>: <reason>" */
    return cli_error(err.status == VP_ENOMEM ? VP_EXIT_FAILURE : VP_EXIT_INPUT, "cannot write %s",
                     err.message);
}

int cli_print(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!text)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = cli_write("-", text, (size_t)n);
    free(text);
    return rc;
}

int cli_out_begin(cli_out *o) {
    *o = (cli_out){0};
    o->f = open_memstream(&o->text, &o->len);
    return o->f ? 0 : cli_error(VP_EXIT_FAILURE, "out of memory");
}

char *cli_out_take(cli_out *o) {
    char *text = NULL;
    if (o->f && fclose(o->f) == 0)
        text = o->text;
    else
        free(o->text);
    *o = (cli_out){0};
    if (!text)
        cli_error(VP_EXIT_FAILURE, "out of memory");
    return text;
}

int cli_out_end(cli_out *o, const char *path) {
    char *text = cli_out_take(o);
    if (!text)
        return VP_EXIT_FAILURE;
    int rc = path ? cli_write(path, text, strlen(text)) : 0;
    free(text);
    return rc;
}

/* Fills err with status and the formatted message; returns status. */
static vp_status fail(vp_error *err, vp_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static vp_status fail(vp_error *err, vp_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->status = status;
    err->line = err->column = 0;
    return status;
}

/* Creates and removes a file named "<prefix>XXXXXX"; 0, or the errno of the failure. */
static int try_create(const char *prefix) {
    size_t n = strlen(prefix) + 8;
    char *probe = malloc(n);
    if (!probe)
        return ENOMEM;
    snprintf(probe, n, "%sXXXXXX", prefix);
    int fd = mkstemp(probe);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    free(probe);
    return e;
}

vp_status cli_probe_output(const char *path, vp_error *err) {
    struct stat st;
    if (!strcmp(path, "-"))
        return VP_OK;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return fail(err, VP_EIO, "cannot write %s: is a directory", path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return VP_OK; /* a device or a FIFO is written in place */
    size_t n = strlen(path) + 8;
    char *prefix = malloc(n);
    if (!prefix)
        return fail(err, VP_ENOMEM, "out of memory");
    snprintf(prefix, n, "%s.probe", path);
    int e = try_create(prefix);
    free(prefix);
    return e ? fail(err, VP_EIO, "cannot write %s: %s", path, strerror(e)) : VP_OK;
}

vp_status cli_prepare_dir(const char *dir, vp_error *err) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return fail(err, VP_EIO, "cannot create directory %s: %s", dir, strerror(errno));
    size_t n = strlen(dir) + 16;
    char *prefix = malloc(n);
    if (!prefix)
        return fail(err, VP_ENOMEM, "out of memory");
    snprintf(prefix, n, "%s/.vpipe-probe", dir);
    int e = try_create(prefix);
    free(prefix);
    return e ? fail(err, VP_EIO, "cannot write in %s: %s", dir, strerror(e)) : VP_OK;
}

vp_status cli_probe(void *user, const char *path, bool dir, vp_error *err) {
    (void)user;
    return dir ? cli_prepare_dir(path, err) : cli_probe_output(path, err);
}

int cli_write_line(const char *path, const char *text) {
    size_t n = strlen(text);
    char *line = malloc(n + 2);
    if (!line)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    memcpy(line, text, n);
    memcpy(line + n, "\n", 2);
    int rc = cli_write(path, line, n + 1);
    free(line);
    return rc;
}

json_t *cli_json_take(char *text) {
    json_t *json = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return json;
}

int cli_write_json(const char *path, json_t *json) {
    char *text = json ? json_dumps(json, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : NULL;
    if (!text)
        return cli_error(VP_EXIT_FAILURE, "cannot build the JSON output (out of memory)");
    int rc = cli_write_line(path, text);
    free(text);
    return rc;
}

/* Whether a status line is on the terminal now. */
static bool progress_shown;

void cli_progress(const char *fmt, ...) {
    if (!isatty(STDERR_FILENO))
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("\r\033[K", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
    progress_shown = true;
}

void cli_progress_line(void *user, const char *line) {
    (void)user;
    if (line)
        cli_progress("%s", line);
    else
        cli_progress_clear();
}

void cli_progress_clear(void) {
    if (!progress_shown)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    progress_shown = false;
}
