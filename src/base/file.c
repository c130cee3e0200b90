/* Reading whole files with a size cap, and writing them atomically. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"

/* Reads at most max bytes of f; one byte more means the input is too long. */
static vp_status read_capped(FILE *f, const char *path, size_t max, char **text, size_t *len,
                             vp_error *err) {
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n + 1 >= cap) {
            size_t want = cap ? 2 * cap : 65536;
            if (want > max + 2)
                want = max + 2;
            char *grown = want > cap ? realloc(buf, want) : NULL;
            if (!grown) {
                free(buf);
                return vp__fail(err, VP_ENOMEM, "%s: out of memory reading it", path);
            }
            buf = grown;
            cap = want;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n > max) {
            free(buf);
            return vp__fail(err, VP_EIO, "%s: is larger than %zu bytes", path, max);
        }
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        return vp__fail(err, VP_EIO, "%s: %s", path, e ? strerror(e) : "read error");
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return VP_OK;
}

vp_status vp_read_file(const char *path, size_t max, char **text, size_t *len, vp_error *err) {
    *text = NULL;
    *len = 0;
    if (!max)
        max = VP_READ_MAX;
    if (!strcmp(path, "-"))
        return read_capped(stdin, "standard input", max, text, len, err);
    FILE *f = fopen(path, "rb");
    if (!f)
        return vp__fail(err, VP_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    vp_status rc = VP_OK;
    if (fstat(fileno(f), &st) != 0)
        rc = vp__fail(err, VP_EIO, "%s: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        rc = vp__fail(err, VP_EIO, "%s: is a directory", path);
    else if (!S_ISREG(st.st_mode))
        rc = vp__fail(err, VP_EIO, "%s: is not a regular file", path);
    else if ((unsigned long long)st.st_size > (unsigned long long)max)
        rc = vp__fail(err, VP_EIO, "%s: is larger than %zu bytes", path, max);
    if (rc == VP_OK)
        rc = read_capped(f, path, max, text, len, err);
    fclose(f);
    return rc;
}

/* Writes all of bytes to fd; 0, or -1 with errno set. */
static int write_all(int fd, const char *bytes, size_t len) {
    while (len > 0) {
        ssize_t put = write(fd, bytes, len);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0) {
            if (put == 0)
                errno = EIO;
            return -1;
        }
        bytes += put;
        len -= (size_t)put;
    }
    return 0;
}

static vp_status write_stdout(const void *bytes, size_t len, vp_error *err) {
    if ((len && fwrite(bytes, 1, len, stdout) != len) || fflush(stdout) != 0)
        return vp__fail(err, VP_EIO, "standard output: %s",
                        errno ? strerror(errno) : "write error");
    return VP_OK;
}

/* fsyncs the directory holding path, so that a rename into it is durable. */
static void sync_dir(const char *path) {
    char *copy = strdup(path);
    if (!copy)
        return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(copy);
}

/* A device or a FIFO (/dev/null, /dev/full, /dev/stdout, a named pipe) cannot be
 * replaced by a rename: it is written in place, every write checked. */
static vp_status write_in_place(const char *path, const void *bytes, size_t len, vp_error *err) {
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0)
        return vp__fail(err, VP_EIO, "%s: %s", path, strerror(errno));
    int failed = write_all(fd, bytes, len) != 0;
    int saved = errno;
    if (close(fd) != 0 && !failed)
        failed = 1, saved = errno;
    return failed ? vp__fail(err, VP_EIO, "%s: %s", path, strerror(saved)) : VP_OK;
}

vp_status vp_write_file(const char *path, const void *bytes, size_t len, vp_error *err) {
    if (!strcmp(path, "-"))
        return write_stdout(bytes, len, err);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return vp__fail(err, VP_EIO, "%s: is a directory", path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return write_in_place(path, bytes, len, err);
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return vp__fail(err, VP_ENOMEM, "%s: out of memory", path);
    snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        vp_status rc = vp__fail(err, VP_EIO, "%s: %s", path, strerror(errno));
        free(tmp);
        return rc;
    }
    int failed = write_all(fd, bytes, len) != 0 || fsync(fd) != 0;
    int saved = errno;
    failed |= close(fd) != 0;
    if (!failed)
        saved = errno = 0;
    /* mkstemp makes 0600 files; give the result the usual permissions (umask applies). */
    mode_t mask = umask(0);
    umask(mask);
    if (!failed && chmod(tmp, 0666 & ~mask) != 0)
        failed = 1, saved = errno;
    if (!failed && rename(tmp, path) != 0)
        failed = 1, saved = errno;
    if (failed) {
        unlink(tmp);
        free(tmp);
        return vp__fail(err, VP_EIO, "%s: %s", path, strerror(saved ? saved : EIO));
    }
    free(tmp);
    sync_dir(path);
    return VP_OK;
}
