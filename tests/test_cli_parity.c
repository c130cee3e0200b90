/* Parity of the two doors: every case of tests/parity/grid.json (a command and its options
 * as the string API's JSON) is run by the command line (its flags made from the options,
 * in-process, in a scratch directory) and by vp_request_call_with; stdout, the files
 * written, stderr (the notes) and the exit code must be the same bytes, and a refusal the
 * same exit code and message (the JSON spelling of option names turned back into flags).
 * Also: the recomputation case of issue 30 gives 1.0687 through every door, a schedule
 * held in memory answers as its file does, and the flag tables and the library's option
 * table agree on every (command, option) pair. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "request/door.h"
#include "test_util.h"

#define DATA VP_SOURCE_DIR "/tests/parity"

/* ---- running the command line in-process ------------------------------------------------ */

/* What a run printed and wrote. */
typedef struct outcome {
    int rc;
    char *out, *err; /* stdout, stderr */
    json_t *files;   /* {"relative/path": "text"} */
} outcome;

static char *read_all(FILE *f) {
    fflush(f);
    rewind(f);
    vp__buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        vp__buf_add(&b, chunk, n);
    vp__buf_add(&b, "", 0);
    return vp__buf_take(&b);
}

/* Every file under dir (relative paths from prefix) into files. */
static void collect(const char *dir, const char *prefix, json_t *files) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[4096], rel[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(rel, sizeof rel, "%s%s", prefix, e->d_name);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            strcat(rel, "/");
            collect(path, rel, files);
            continue;
        }
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(vp_read_file(path, 0, &text, &len, NULL) == VP_OK || st.st_size == 0, 1);
        json_object_set_new(files, rel, json_stringn(text ? text : "", len));
        free(text);
    }
    closedir(d);
}

/* Runs `vpipe argv...` in a new scratch directory. */
static outcome run_cli(int argc, char **argv) {
    const cli_command *cmd = NULL;
    for (size_t i = 0; i < cli_command_count; i++)
        if (!strcmp(cli_commands[i]->name, argv[0]))
            cmd = cli_commands[i];
    assert_non_null(cmd);
    char dir[] = "/tmp/vpipe-parity-XXXXXX", cwd[4096];
    assert_non_null(mkdtemp(dir));
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    FILE *out = tmpfile(), *err = tmpfile();
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    outcome o = {.rc = cli_run(cmd, argc, argv)};
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    o.out = read_all(out);
    o.err = read_all(err);
    fclose(out);
    fclose(err);
    o.files = json_object();
    collect(".", "", o.files);
    assert_int_equal(chdir(cwd), 0);
    char rm[4200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
    return o;
}

static void outcome_free(outcome *o) {
    free(o->out);
    free(o->err);
    json_decref(o->files);
}

/* ---- options as flags -------------------------------------------------------------------- */

/* "@DATA@" in text replaced by the fixtures' directory (new string). */
static char *with_data(const char *text) {
    vp__buf b = {0};
    for (const char *at = text; *at;) {
        const char *hit = strstr(at, "@DATA@");
        size_t n = hit ? (size_t)(hit - at) : strlen(at);
        vp__buf_add(&b, at, n);
        if (!hit)
            break;
        vp__buf_printf(&b, "%s", DATA);
        at = hit + 6;
    }
    vp__buf_add(&b, "", 0);
    return vp__buf_take(&b);
}

/* The argv of command with options (strings owned by words). */
static int flags_of(const char *command, json_t *options, char **argv, json_t *words) {
    int argc = 0;
    argv[argc++] = (char *)command;
    const char *key;
    json_t *v;
    json_t *operands = json_array();
    json_object_foreach(options, key, v) {
        if (!strcmp(key, "operand")) {
            if (json_is_array(v))
                json_array_extend(operands, v);
            else
                json_array_append(operands, v);
            continue;
        }
        const vp__option *o = vp__option_find(key, false);
        assert_non_null(o);
        if (json_is_false(v) && !o->boolean) /* a flag not given */
            continue;
        json_array_append_new(words, json_string(o->flag));
        if (json_is_boolean(v) && o->boolean) /* a number read as an old flag: --zero 0 */
            json_array_append_new(words, json_string(json_is_true(v) ? "1" : "0"));
        if (json_is_boolean(v))
            continue;
        char text[64];
        if (json_is_integer(v))
            snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v))
            snprintf(text, sizeof text, "%.17g", json_real_value(v));
        json_array_append_new(words, json_is_string(v) ? json_incref(v) : json_string(text));
    }
    json_array_extend(words, operands);
    json_decref(operands);
    for (size_t i = 0; i < json_array_size(words); i++)
        argv[argc++] = (char *)json_string_value(json_array_get(words, i));
    argv[argc] = NULL;
    return argc;
}

/* The message with every "option 'key'" spelled as the key's flag. */
static char *as_flags(const char *message) {
    vp__buf b = {0};
    for (const char *at = message; *at;) {
        const char *hit = strstr(at, "option '");
        const char *end = hit ? strchr(hit + 8, '\'') : NULL;
        char key[64] = "";
        if (end && (size_t)(end - hit - 8) < sizeof key)
            memcpy(key, hit + 8, (size_t)(end - hit - 8));
        const vp__option *o = end ? vp__option_find(key, false) : NULL;
        size_t n = o ? (size_t)(hit - at) : strlen(at);
        vp__buf_add(&b, at, n);
        if (!o)
            break;
        vp__buf_printf(&b, "%s", o->flag);
        at = end + 1;
    }
    vp__buf_add(&b, "", 0);
    return vp__buf_take(&b);
}

/* text with the search's and the calibration's wall-clock time masked ("; 1.23 s",
 * "iterations, 1.23 s" and "elapsed_s": 1.23 become X), as a new string. */
static char *mask_elapsed(const char *text) {
    static const char *const marks[] = {" refused; ", " iterations, ", "\"elapsed_s\": "};
    vp__buf b = {0};
    for (const char *at = text; *at;) {
        const char *hit = NULL, *mark = NULL;
        for (int k = 0; k < 3; k++) {
            const char *h = strstr(at, marks[k]);
            if (h && (!hit || h < hit))
                hit = h, mark = marks[k];
        }
        if (!hit) {
            vp__buf_printf(&b, "%s", at);
            break;
        }
        hit += strlen(mark);
        vp__buf_add(&b, at, (size_t)(hit - at));
        vp__buf_add(&b, "X", 1);
        at = hit + strcspn(hit, " ,\n");
    }
    vp__buf_add(&b, "", 0);
    return vp__buf_take(&b);
}

/* ---- one case ---------------------------------------------------------------------------- */

static bool same_text(const char *what, const char *cli, const char *lib, const char *label) {
    char *a = mask_elapsed(cli), *b = mask_elapsed(lib);
    bool same = !strcmp(a, b);
    if (!same)
        print_message("%s: %s differs:\n--- command line\n%.600s\n--- library\n%.600s\n", label,
                      what, a, b);
    free(a);
    free(b);
    return same;
}

/* The library's answer against the command line's; false (after saying why) when not. */
static bool compare(const outcome *cli, vp_status st, const vp_error *err, const char *reply,
                    const char *label) {
    if (st != VP_OK) {
        char *want = as_flags(err->message), line[700];
        snprintf(line, sizeof line, "vpipe: error: %s\n", want);
        free(want);
        if (cli->rc == vp_status_exit_code(st) && !strcmp(cli->err, line))
            return true;
        print_message("%s: command line exit %d '%s', library %s '%s'\n", label, cli->rc, cli->err,
                      vp_status_name(st), line);
        return false;
    }
    json_t *r = json_loads(reply, 0, NULL);
    assert_non_null(r);
    vp__buf notes = {0};
    json_t *note;
    size_t i;
    json_array_foreach(json_object_get(r, "notes"), i, note)
        vp__buf_printf(&notes, "%s", json_string_value(note));
    vp__buf_add(&notes, "", 0);
    char *err_text = vp__buf_take(&notes);
    json_t *files = json_object(), *f;
    json_array_foreach(json_object_get(r, "files"), i, f) json_object_set(
        files, json_string_value(json_object_get(f, "path")), json_object_get(f, "text"));
    bool ok = cli->rc == json_integer_value(json_object_get(r, "exit"));
    if (!ok)
        print_message("%s: exit %d, library %lld\n", label, cli->rc,
                      (long long)json_integer_value(json_object_get(r, "exit")));
    ok &= same_text("stdout", cli->out, json_string_value(json_object_get(r, "stdout")), label);
    ok &= same_text("stderr", cli->err, err_text, label);
    if (!json_equal(files, cli->files)) {
        char *a = json_dumps(cli->files, 0), *b = json_dumps(files, 0);
        ok = same_text("files", a, b, label) && ok;
        free(a);
        free(b);
    }
    free(err_text);
    json_decref(files);
    json_decref(r);
    return ok;
}

/* Runs one case through both doors; true when they agree. */
static bool run_case(const char *command, json_t *options, const char *label) {
    json_t *words = json_array();
    char *argv[128];
    int argc = flags_of(command, options, argv, words);
    outcome cli = run_cli(argc, argv);
    char *text = json_dumps(options, JSON_COMPACT), *reply = NULL;
    vp_error err = {0};
    vp_status st = vp_request_call_with(command, NULL, text, vp_profile_cost_reader, &reply, &err);
    bool ok = compare(&cli, st, &err, reply, label);
    vp_free(reply);
    free(text);
    json_decref(words);
    outcome_free(&cli);
    return ok;
}

/* ---- the tests ----------------------------------------------------------------------------- */

static void test_grid(void **state) {
    (void)state;
    char *text = NULL;
    size_t len;
    assert_int_equal(vp_read_file(DATA "/grid.json", 0, &text, &len, NULL), VP_OK);
    char *grid_text = with_data(text);
    free(text);
    json_error_t jerr;
    json_t *grid = json_loads(grid_text, 0, &jerr);
    free(grid_text);
    assert_non_null(grid);
    size_t i, failed = 0, answered = 0;
    json_t *c;
    json_array_foreach(grid, i, c) {
        const char *command = json_string_value(json_object_get(c, "command"));
        char *label = json_dumps(c, JSON_COMPACT);
        failed += !run_case(command, json_object_get(c, "options"), label);
        free(label);
        answered++;
    }
    print_message("%zu cases, %zu differ\n", answered, failed);
    assert_true(answered >= 200);
    assert_int_equal(failed, 0);
    json_decref(grid);
}

/* Issue 30's case: 1F1B at p=4, m=8 recomputing in full peaks at 1.0687 units through the
 * command line, the door and the first string API alike. */
static void test_recompute_everywhere(void **state) {
    (void)state;
    char *argv[] = {"simulate", "1f1b", "-p", "4", "-m", "8", "--recompute", "full", NULL};
    outcome cli = run_cli(8, argv);
    assert_int_equal(cli.rc, 0);
    assert_non_null(strstr(cli.out, "peak memory 1.0687 units"));
    char *reply = NULL;
    vp_error err = {0};
    assert_int_equal(vp_request_call("simulate",
                                     "{\"operand\": \"1f1b\", \"p\": 4, \"m\": 8, \"recompute\": "
                                     "\"full\"}",
                                     &reply, &err),
                     VP_OK);
    assert_non_null(strstr(reply, "peak memory 1.0687 units"));
    vp_free(reply);
    vp_schedule *s = NULL;
    char *report = NULL;
    assert_int_equal(
        vp_request_schedule("{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"recompute\": \"full\"}",
                            &s, &err),
        VP_OK);
    assert_int_equal(vp_request_simulate(s, NULL, &report, &err), VP_OK);
    assert_non_null(strstr(report, "\"peak_memory_max\": 1.068"));
    vp_free(report);
    vp_schedule_free(s);
    outcome_free(&cli);
}

/* A schedule held in memory answers as its file does. */
static void test_schedule_in_memory(void **state) {
    (void)state;
    const char *cases[][2] = {{"simulate", "{\"cost\": \"F=2,B=2,W=2\"}"},
                              {"simulate", "{\"recompute\": \"full\", \"json\": true}"},
                              {"render", "{\"ascii\": true}"},
                              {"validate", "{}"}};
    vp_schedule *s = NULL;
    vp_error err = {0};
    assert_int_equal(vp_schedule_load(DATA "/sched.json", &s, &err), VP_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *from_file = NULL, *from_memory = NULL;
        json_t *o = json_loads(cases[i][1], 0, NULL);
        json_object_set_new(o, "operand", json_string(DATA "/sched.json"));
        char *text = json_dumps(o, 0);
        assert_int_equal(vp_request_call(cases[i][0], text, &from_file, &err), VP_OK);
        assert_int_equal(vp_request_call_schedule(cases[i][0], s, cases[i][1], &from_memory, &err),
                         VP_OK);
        if (strcmp(cases[i][0], "validate"))
            assert_string_equal(from_file, from_memory);
        else
            assert_non_null(strstr(from_memory, "the schedule: valid (1f1b, p=4, stages=4"));
        vp_free(from_file);
        vp_free(from_memory);
        free(text);
        json_decref(o);
    }
    char *reply = NULL;
    assert_int_equal(vp_request_call_schedule("simulate", s, "{\"p\": 3}", &reply, &err),
                     VP_EVALIDATION);
    assert_string_equal(err.message,
                        "the schedule has p=4, m=8, not the option 'p'/option 'm' given");
    vp_schedule_free(s);
}

/* The flag tables of every request command and the library's table: each flag writes where
 * its option goes and is taken by the command; each option the command takes has a flag. */
static void test_tables_agree(void **state) {
    (void)state;
    for (size_t c = 0; c < cli_command_count; c++) {
        const cli_command *cmd = cli_commands[c];
        if (!cmd->request)
            continue;
        int id = vp__command_find(cmd->name);
        assert_true(id >= 0);
        int flags = 0, taken = 0;
        for (size_t u = 0; u < cmd->n_uses; u++)
            for (size_t k = 0; k < cmd->uses[u].group->n; k++, flags++) {
                const cli_opt *f = &cmd->uses[u].group->opts[k];
                char key[64];
                snprintf(key, sizeof key, "%s",
                         f->name                ? f->name
                         : f->short_name == 'o' ? "output"
                                                : (char[2]){f->short_name, 0});
                for (char *d = key; *d; d++)
                    *d = *d == '-' ? '_' : *d;
                const vp__option *o = vp__option_find(key, false);
                if (!o || o->offset != cmd->uses[u].offset + f->offset ||
                    !(o->commands & (1u << id)))
                    fail_msg("%s: %s is not the library's option '%s'", cmd->name,
                             f->name ? f->name : key, key);
                for (int k2 = 0; f->kind == CLI_ENUM && f->choices[k2]; k2++)
                    assert_string_equal(f->choices[k2], o->choices[k2]);
            }
        for (int i = 0; i < vp__n_options; i++)
            taken += (vp__options[i].commands >> id) & 1;
        assert_int_equal(taken, flags + (cmd->operand != NULL));
    }
}

/* The JSON filler takes exactly the options of each command, and refuses the others by
 * name. */
static void test_every_option_used_or_refused(void **state) {
    (void)state;
    for (int c = 0; c < VP__COMMANDS; c++)
        for (int i = 0; i < vp__n_options; i++) {
            const vp__option *o = &vp__options[i];
            /* a value within bounds and not the "not given" one */
            json_t *v = o->kind == VP__FLAG     ? json_true()
                        : o->kind == VP__CHOICE ? json_string(o->choices[1])
                        : o->kind == VP__NUMBER ? json_real(o->lo + 1)
                        : o->kind == VP__INT || o->kind == VP__LONG
                            ? json_integer((json_int_t)o->lo)
                            : json_string("1");
            json_t *options = json_pack("{s:o}", o->key, v);
            char *text = json_dumps(options, 0);
            vp_request req;
            vp_error err = {0};
            vp_status st = vp_request_from_json(vp__command_name(c), text, &req, &err);
            bool takes = (o->commands >> c) & 1;
            if (takes && st != VP_OK)
                fail_msg("%s refused '%s': %s", vp__command_name(c), o->key, err.message);
            char want[128];
            snprintf(want, sizeof want, "%s takes no option '%s'", vp__command_name(c), o->key);
            if (!takes && (st != VP_EINVAL || strcmp(err.message, want)))
                fail_msg("%s took '%s' (%s)", vp__command_name(c), o->key, err.message);
            if (takes) /* the door sees it given: it uses it or refuses it by name */
                assert_true(vp__option_given(&req, o));
            vp_request_release(&req);
            free(text);
            json_decref(options);
        }
}

/* A request as vp_request_init leaves it gives no option, for every command: each field
 * holds its option's "not given" (FlashAttention's -1 is on for a real model, not off). */
static void test_init_gives_nothing(void **state) {
    (void)state;
    for (int c = 0; c < VP__COMMANDS; c++) {
        vp_request req;
        vp_request_init(&req, vp__command_name(c));
        for (int i = 0; i < vp__n_options; i++)
            if (vp__option_given(&req, &vp__options[i]) &&
                (c != VP__SCHEDULE || strcmp(vp__options[i].key, "output"))) /* to - */
                fail_msg("%s: option '%s' reads as given after vp_request_init",
                         vp__command_name(c), vp__options[i].key);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_gives_nothing),
        cmocka_unit_test(test_tables_agree),
        cmocka_unit_test(test_every_option_used_or_refused),
        cmocka_unit_test(test_recompute_everywhere),
        cmocka_unit_test(test_schedule_in_memory),
        cmocka_unit_test(test_grid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
