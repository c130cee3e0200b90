/* The floor of the house: reading files without blocking and within their caps, writing
 * them atomically without breaking symbolic links or loosening permissions, and error
 * messages that never carry terminal controls (nor overlap their own arguments). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/internal.h"

static char *new_dir(void) {
    char *d = strdup("/tmp/vp_base_XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static char *text_of(const char *path) {
    char *text = NULL;
    size_t len;
    vp_error err = {0};
    if (vp_read_file(path, 0, &text, &len, &err) != VP_OK)
        fail_msg("%s", err.message);
    return text;
}

/* A FIFO without a writer and a device are refused at once, before any read; a file over
 * its cap is refused before it is read; a regular file reads whole. */
static void test_read_refuses_streams(void **state) {
    (void)state;
    char *dir = new_dir(), fifo[4096], file[4096];
    snprintf(fifo, sizeof fifo, "%s/f.fifo", dir);
    snprintf(file, sizeof file, "%s/f.txt", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char *text = NULL;
    size_t len = 0;
    vp_error err = {0};
    const char *streams[] = {fifo, "/dev/zero", "/dev/null"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(vp_read_file(streams[i], 0, &text, &len, &err), VP_EIO);
        assert_non_null(strstr(err.message, "is not a regular file"));
        assert_null(text);
    }
    assert_int_equal(vp_read_file(dir, 0, &text, &len, &err), VP_EIO);
    assert_non_null(strstr(err.message, "is a directory"));
    assert_int_equal(vp_write_file(file, "0123456789", 10, &err), VP_OK);
    assert_int_equal(vp_read_file(file, 9, &text, &len, &err), VP_EIO);
    assert_non_null(strstr(err.message, "is larger than 9 bytes"));
    assert_int_equal(vp_read_file(file, 10, &text, &len, &err), VP_OK);
    assert_int_equal(len, 10);
    assert_string_equal(text, "0123456789");
    free(text);
    remove_dir(dir);
    free(dir);
}

/* Writing onto a symbolic link replaces the file it points to and keeps the link; a
 * file replaced keeps its permissions; no temporary file is left; two writers' temporary
 * files never collide. */
static void test_write_keeps_links_and_modes(void **state) {
    (void)state;
    char *dir = new_dir(), target[4096], link[4096], chain[4096], secret[4096];
    snprintf(target, sizeof target, "%s/target.json", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    snprintf(chain, sizeof chain, "%s/chain.json", dir);
    snprintf(secret, sizeof secret, "%s/secret.json", dir);
    vp_error err = {0};
    assert_int_equal(vp_write_file(target, "old\n", 4, &err), VP_OK);
    assert_int_equal(symlink("target.json", link), 0); /* relative, as ln -s makes them */
    assert_int_equal(symlink(link, chain), 0);         /* a link to a link */
    assert_int_equal(vp_write_file(chain, "new\n", 4, &err), VP_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(chain, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    char *text = text_of(target);
    assert_string_equal(text, "new\n");
    free(text);
    /* a dangling link: the file it names is created */
    unlink(target);
    assert_int_equal(vp_write_file(link, "made\n", 5, &err), VP_OK);
    text = text_of(target);
    assert_string_equal(text, "made\n");
    free(text);
    /* 0600 stays 0600 (whatever the umask) */
    assert_int_equal(vp_write_file(secret, "a", 1, &err), VP_OK);
    assert_int_equal(chmod(secret, 0600), 0);
    mode_t old = umask(022);
    assert_int_equal(vp_write_file(secret, "b", 1, &err), VP_OK);
    umask(old);
    assert_int_equal(stat(secret, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* nothing but the four names */
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(n, 4);
    /* two writers at once get two temporary files */
    vp__atomic *a = NULL, *b = NULL;
    assert_int_equal(vp__atomic_open(target, &a, &err), VP_OK);
    assert_int_equal(vp__atomic_open(target, &b, &err), VP_OK);
    vp__atomic_write(a, "from a", 6);
    vp__atomic_write(b, "from b", 6);
    assert_int_equal(vp__atomic_commit(a, &err), VP_OK);
    text = text_of(target);
    assert_string_equal(text, "from a");
    free(text);
    assert_int_equal(vp__atomic_commit(b, &err), VP_OK);
    text = text_of(target);
    assert_string_equal(text, "from b");
    free(text);
    remove_dir(dir);
    free(dir);
}

/* A held file: created when missing, one holder at a time (a second open of it is refused,
 * as another process's is), handed on when its holder removes it, a link's target held,
 * and what is not a regular file refused; two output paths that name one file. */
static void test_file_hold(void **state) {
    (void)state;
    char *dir = new_dir(), path[4096], link[4096], sub[4096];
    snprintf(path, sizeof path, "%s/run.log", dir);
    snprintf(link, sizeof link, "%s/link.log", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    vp_error err = {0};
    int fd = -1, fd2 = -1;
    bool created = false, busy = true;
    assert_int_equal(vp_file_hold(path, &fd, &created, &busy, &err), VP_OK);
    assert_true(fd >= 0 && created && !busy);
    assert_int_equal(vp_file_hold(path, &fd2, &created, &busy, &err), VP_EIO);
    assert_true(fd2 < 0 && busy);
    assert_non_null(strstr(err.message, "run.log: held by another process"));
    assert_int_equal(symlink("run.log", link), 0); /* the link's target is what is held */
    assert_int_equal(vp_file_hold(link, &fd2, &created, &busy, &err), VP_EIO);
    assert_true(busy);
    assert_int_equal(unlink(path), 0); /* the holder hands the name on */
    close(fd);
    assert_int_equal(vp_file_hold(link, &fd, &created, &busy, &err), VP_OK);
    assert_true(created); /* through the dangling link */
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    close(fd);
    assert_int_equal(vp_file_hold(path, &fd, &created, &busy, &err), VP_OK);
    assert_false(created); /* let go: held again, as it is */
    close(fd);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(vp_file_hold(sub, &fd, &created, &busy, &err), VP_EIO);
    assert_true(fd < 0 && !busy);
    snprintf(sub, sizeof sub, "%s/no/run.log", dir); /* no folder: the system's reason */
    assert_int_equal(vp_file_hold(sub, &fd, &created, &busy, &err), VP_EIO);
    assert_non_null(strstr(err.message, "no/run.log: No such file or directory"));
    snprintf(sub, sizeof sub, "%s/sub", dir);
    /* two outputs that name one file: the same text, or one file by a link */
    assert_true(vp_file_same(path, path));
    assert_true(vp_file_same(link, path));
    assert_false(vp_file_same(sub, path));
    assert_false(vp_file_same("-", "-"));
    assert_false(vp_file_same(NULL, path));
    assert_false(vp_file_same("missing-a", "missing-b"));
    rmdir(sub);
    remove_dir(dir);
    free(dir);
}

/* Messages escape terminal controls (C0 but newline and tab, DEL, C1), may quote their own
 * previous message, and say when they are cut. */
static void test_messages(void **state) {
    (void)state;
    vp_error err = {0};
    vp__fail(&err, VP_EPARSE, "family '%s'",
             "\x1b[31mred\x7f\xc2\x9b"
             "2J\ttab\nline\xc3\xa9");
    assert_string_equal(err.message, "family '\\x1b[31mred\\x7f\\u009b2J\ttab\nline\xc3\xa9'");
    vp__fail(&err, VP_EPARSE, "outer: %s", err.message);
    assert_string_equal(err.message,
                        "outer: family '\\x1b[31mred\\x7f\\u009b2J\ttab\nline\xc3\xa9'");
    /* a message too long for the error ends in "...", never in half a UTF-8 character */
    char word[700];
    memset(word, 'a', sizeof word - 1);
    word[sizeof word - 1] = '\0';
    word[sizeof err.message - 4] = '\0'; /* "x " and 508 letters: 510 bytes, whole */
    vp__fail(&err, VP_EPARSE, "x %s", word);
    assert_int_equal(strlen(err.message), sizeof err.message - 2);
    assert_int_not_equal(err.message[strlen(err.message) - 1], '.');
    word[sizeof err.message - 4] = 'a';
    vp__fail(&err, VP_EPARSE, "x %s", word);
    assert_int_equal(strlen(err.message), sizeof err.message - 1);
    assert_string_equal(err.message + sizeof err.message - 4, "...");
    for (size_t i = 0; i + 2 < sizeof word; i += 2)
        memcpy(word + i, "\xc3\xa9", 2);
    word[sizeof word - 1] = '\0';
    vp__fail(&err, VP_EPARSE, "x%s", word); /* 'x', then 2-byte characters */
    size_t kept = strlen(err.message) - 3;
    assert_string_equal(err.message + kept, "...");
    assert_int_equal(kept % 2, 1);
    assert_int_equal((unsigned char)err.message[kept - 2], 0xc3);
    memset(word, '\x1b', 200); /* escapes grow it past the error's size */
    word[200] = '\0';
    vp__fail(&err, VP_EPARSE, "%s", word);
    assert_string_equal(err.message + strlen(err.message) - 3, "...");
    char small[5];
    assert_int_equal(vp__text_escape(small, sizeof small, "ab\x1b"), 2); /* whole escapes */
    assert_string_equal(small, "ab");
    assert_true(vp__text_has_control("a\x1b"));
    assert_true(vp__text_has_control("a\n"));
    assert_true(vp__text_has_control("\xc2\x85"));
    assert_false(vp__text_has_control("v-half \xc3\xa9t\xc3\xa9"));
}

/* A typo's distance: insertions, deletions, substitutions and a swap of two neighbours,
 * one edit each, within 1 for names of up to 4 bytes and 2 for longer ones; the nearest of
 * several names (one the word begins first), the first offered on a tie; the hint it gives a
 * message. */
static void test_typo_edits(void **state) {
    (void)state;
    assert_int_equal(vp_typo_edits("1fb1", 4, "1f1b"), 1);          /* a swap */
    assert_int_equal(vp_typo_edits("llama3-8", 8, "llama3-8b"), 1); /* a letter dropped */
    assert_int_equal(vp_typo_edits("recompte", 8, "recompute"), 1);
    assert_int_equal(vp_typo_edits("h100-80g", 8, "h100-80gb"), 1);
    assert_int_equal(vp_typo_edits("glbal_bach", 10, "global_batch"), 2);
    assert_int_equal(vp_typo_edits("gloal_bch", 9, "global_batch"), -1); /* three */
    assert_int_equal(vp_typo_edits("b2", 2, "b200"), -1); /* two, for a name of 4 bytes */
    assert_int_equal(vp_typo_edits("b20", 3, "b200"), 1);
    assert_int_equal(vp_typo_edits("plan--x", 4, "plan"), 0); /* len counts, not the NUL */
    char long_word[80];
    memset(long_word, 'a', sizeof long_word - 1);
    long_word[sizeof long_word - 1] = '\0';
    assert_int_equal(vp_typo_edits(long_word, 64, long_word), -1);
    assert_int_equal(vp_typo_edits(long_word, 63, long_word + 16), 0);
    vp__nearest near = {.word = "gpip"};
    vp__nearest_offer(&near, "zb1p");
    vp__nearest_offer(&near, "gpipe"); /* 1 */
    vp__nearest_offer(&near, "gpipf"); /* 2 */
    vp__nearest_offer(&near, "gpi");   /* 1, offered later */
    vp__nearest_offer(&near, NULL);
    assert_string_equal(near.best, "gpipe");
    near = (vp__nearest){.word = "zzzzzz"};
    vp__nearest_offer(&near, "gpipe");
    assert_null(near.best);
    near = (vp__nearest){.word = "h200"}; /* a name it begins beats a closer typo */
    vp__nearest_offer(&near, "b200");
    vp__nearest_offer(&near, "h200-141gb");
    assert_string_equal(near.best, "h200-141gb");
    near = (vp__nearest){.word = "h"}; /* not of one letter */
    vp__nearest_offer(&near, "h200-141gb");
    assert_null(near.best);
    /* the message's closing hint, with and without a name or a tail */
    assert_string_equal(vp__did_you_mean("gpipe", "vpipe list").text,
                        " (did you mean 'gpipe'? vpipe list)");
    assert_string_equal(vp__did_you_mean("gpipe", NULL).text, " (did you mean 'gpipe'?)");
    assert_string_equal(vp__did_you_mean(NULL, "vpipe list").text, " (vpipe list)");
    assert_string_equal(vp__did_you_mean(NULL, NULL).text, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_refuses_streams),
        cmocka_unit_test(test_write_keeps_links_and_modes),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_typo_edits),
        cmocka_unit_test(test_file_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
