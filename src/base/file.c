/* Reading whole files with a size cap, and writing them atomically. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"

/* Reads at most max bytes of f, starting with room for hint bytes; one byte more means
 * the input is too long. */
static vp_status read_capped(FILE *f, const char *path, size_t max, size_t hint, char **text,
                             size_t *len, vp_error *err) {
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n + 1 >= cap) {
            size_t want = cap ? 2 * cap : hint + 2 > 65536 ? hint + 2 : 65536;
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

vp_status vp__open_regular(const char *path, size_t max, int *fd, size_t *size, vp_error *err) {
    *fd = -1;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO without a writer, or a device, must not wait */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0)
        return vp__fail(err, VP_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    vp_status rc = VP_OK;
    if (fstat(f, &st) != 0)
        rc = vp__fail(err, VP_EIO, "%s: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        rc = vp__fail(err, VP_EIO, "%s: is a directory", path);
    else if (!S_ISREG(st.st_mode))
        rc =
            vp__fail(err, VP_EIO, "%s: is not a regular file (a FIFO, a device or a socket)", path);
    else if ((unsigned long long)st.st_size > (unsigned long long)max)
        rc = vp__fail(err, VP_EIO, "%s: is larger than %zu bytes", path, max);
    else if (fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK) != 0)
        rc = vp__fail(err, VP_EIO, "%s: %s", path, strerror(errno));
    if (rc != VP_OK) {
        close(f);
        return rc;
    }
    *fd = f;
    *size = (size_t)st.st_size;
    return VP_OK;
}

vp_status vp_read_file(const char *path, size_t max, char **text, size_t *len, vp_error *err) {
    *text = NULL;
    *len = 0;
    if (!max)
        max = VP_READ_MAX;
    if (!strcmp(path, "-"))
        return read_capped(stdin, "standard input", max, 0, text, len, err);
    int fd;
    size_t size;
    vp_status rc = vp__open_regular(path, max, &fd, &size, err);
    if (rc != VP_OK)
        return rc;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return vp__fail(err, VP_ENOMEM, "%s: out of memory reading it", path);
    }
    rc = read_capped(f, path, max, size, text, len, err);
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

/* ---- atomic writes ---- */

struct vp__atomic {
    char *path, *tmp; /* the destination and the temporary file beside it */
    int fd;
    int errnum; /* the first failure (0: none) */
};

/* Temporary files of this process are told apart by a counter (threads write at once). */
static atomic_uint tmp_counter;

vp_status vp__atomic_open(const char *path, vp__atomic **out, vp_error *err) {
    *out = NULL;
    size_t n = strlen(path) + 48;
    vp__atomic *a = vp__calloc(1, sizeof *a);
    char *tmp = malloc(n), *copy = strdup(path);
    int fd = -1, e = ENOMEM;
    for (int tries = 0; a && tmp && copy && fd < 0 && tries < 100; tries++) {
        snprintf(tmp, n, "%s" VP__TMP_MARK "%ld.%u", path, (long)getpid(),
                 atomic_fetch_add(&tmp_counter, 1));
        /* a name of its own (O_EXCL), 0666 less the umask as any new file; a symbolic
         * link in the way is refused */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
        e = fd < 0 ? errno : 0;
        if (fd < 0 && e != EEXIST)
            break;
    }
    struct stat st; /* a file replaced keeps its permissions */
    if (fd >= 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
        fchmod(fd, st.st_mode & 07777) != 0)
        e = errno;
    if (fd < 0 || e) {
        vp_status rc = vp__fail(err, e == ENOMEM ? VP_ENOMEM : VP_EIO, "%s: %s", path, strerror(e));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(a);
        free(tmp);
        free(copy);
        return rc;
    }
    *a = (vp__atomic){copy, tmp, fd, 0};
    *out = a;
    return VP_OK;
}

void vp__atomic_write(vp__atomic *a, const void *bytes, size_t n) {
    if (!a->errnum && write_all(a->fd, bytes, n) != 0)
        a->errnum = errno;
}

static void atomic_end(vp__atomic *a) {
    if (a->fd >= 0)
        close(a->fd);
    unlink(a->tmp);
    free(a->path);
    free(a->tmp);
    free(a);
}

void vp__atomic_abort(vp__atomic *a) {
    if (a)
        atomic_end(a);
}

/* fsyncs the directory holding path, so that a rename into it is durable; 0 or errno
 * (a file system that cannot sync directories counts as done). */
static int sync_dir(const char *path) {
    char *copy = strdup(path);
    if (!copy)
        return ENOMEM;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = fd < 0 || fsync(fd) != 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    free(copy);
    return e == EINVAL || e == ENOTSUP ? 0 : e;
}

vp_status vp__atomic_commit(vp__atomic *a, vp_error *err) {
    if (!a->errnum && fsync(a->fd) != 0)
        a->errnum = errno;
    if (close(a->fd) != 0 && !a->errnum)
        a->errnum = errno;
    a->fd = -1;
    if (!a->errnum && rename(a->tmp, a->path) != 0)
        a->errnum = errno;
    vp_status rc = VP_OK;
    if (a->errnum) {
        rc = vp__fail(err, VP_EIO, "%s: %s", a->path, strerror(a->errnum));
    } else {
        int e = sync_dir(a->path);
        if (e)
            rc = vp__fail(err, VP_EIO, "%s: cannot sync its directory: %s", a->path, strerror(e));
    }
    atomic_end(a);
    return rc;
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

/* The file a path names once every symbolic link on it is followed (the path itself when it
 * is none; a link to nowhere gives the path it points to), in a new string; NULL when out
 * of memory or more than 40 links deep (ELOOP). */
static char *follow_links(const char *path) {
    char *p = strdup(path);
    for (int hops = 0; p && hops < 40; hops++) {
        struct stat st;
        if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode))
            return p;
        char target[PATH_MAX];
        ssize_t n = readlink(p, target, sizeof target - 1);
        if (n < 0)
            return p;
        target[n] = '\0';
        char *dir = strdup(p), *next = NULL;
        size_t size = strlen(p) + (size_t)n + 2;
        if (dir && (next = malloc(size)) != NULL) {
            if (target[0] == '/')
                snprintf(next, size, "%s", target);
            else
                snprintf(next, size, "%s/%s", dirname(dir), target);
        }
        free(dir);
        free(p);
        p = next;
    }
    errno = p ? ELOOP : ENOMEM;
    free(p);
    return NULL;
}

vp_status vp_write_file(const char *path, const void *bytes, size_t len, vp_error *err) {
    if (!strcmp(path, "-"))
        return write_stdout(bytes, len, err);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return vp__fail(err, VP_EIO, "%s: is a directory", path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return write_in_place(path, bytes, len, err);
    /* a symbolic link stays one: the file it points to is replaced */
    char *real = follow_links(path);
    if (!real)
        return vp__fail(err, errno == ENOMEM ? VP_ENOMEM : VP_EIO, "%s: %s", path, strerror(errno));
    vp__atomic *a = NULL;
    vp_status rc = vp__atomic_open(real, &a, err);
    if (rc == VP_OK) {
        vp__atomic_write(a, bytes, len);
        rc = vp__atomic_commit(a, err);
    }
    free(real);
    return rc;
}

/* vp_file_hold on the file real names (no link). */
static vp_status hold(const char *path, const char *real, int *fd, bool *created, bool *busy,
                      vp_error *err) {
    for (int tries = 0; tries < 100; tries++) {
        int f = open(real, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
        bool made = f >= 0;
        if (f < 0 && errno == EEXIST) {
            f = open(real, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
            if (f < 0 && errno == ENOENT)
                continue; /* removed meanwhile */
        }
        if (f < 0)
            return vp__fail(err, VP_EIO, "%s: %s", path, strerror(errno));
        struct stat held, now;
        if (fstat(f, &held) != 0 || !S_ISREG(held.st_mode)) {
            close(f);
            return vp__fail(err, VP_EIO, "%s: is not a regular file", path);
        }
        if (flock(f, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            close(f);
            *busy = e == EWOULDBLOCK;
            return vp__fail(err, VP_EIO, "%s: %s", path,
                            *busy ? "held by another process" : strerror(e));
        }
        if (lstat(real, &now) == 0 && held.st_dev == now.st_dev && held.st_ino == now.st_ino) {
            *fd = f;
            *created = made;
            return VP_OK;
        }
        close(f); /* its holder removed it meanwhile */
    }
    return vp__fail(err, VP_EIO, "%s: keeps being replaced while it is locked", path);
}

vp_status vp_file_hold(const char *path, int *fd, bool *created, bool *busy, vp_error *err) {
    *fd = -1;
    *created = *busy = false;
    char *real = follow_links(path);
    if (!real)
        return vp__fail(err, errno == ENOMEM ? VP_ENOMEM : VP_EIO, "%s: %s", path, strerror(errno));
    vp_status rc = hold(path, real, fd, created, busy, err);
    free(real);
    return rc;
}

bool vp_file_same(const char *a, const char *b) {
    struct stat x, y;
    if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-"))
        return false;
    return !strcmp(a, b) ||
           (stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino);
}
