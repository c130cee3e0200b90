/* The command line's flag-table parser: every kind, bounds, missing values, duplicates,
 * unknown options, operands, custom parsers, the generated help, the table checks, and
 * every real subcommand's tables. */
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "test_util.h"

typedef struct demo_args {
    int number;
    double ratio;
    const char *name;
    bool flag;
    int mode;
    const char *custom;
    int wide;
    const char *operand, *operand2; /* consecutive: a two-operand command fills both */
} demo_args;

/* Takes any value but "bad", which it refuses with exit 3. */
static int parse_custom(const char *flag, const char *value, void *dest) {
    if (!strcmp(value, "bad"))
        return cli_error(VP_EXIT_INPUT, "%s refuses '%s'", flag, value);
    *(const char **)dest = value;
    return 0;
}

static const char *const modes[] = {"fast", "slow", NULL};

static const cli_opt first_opts[] = {
    {.name = "number",
     .short_name = 'n',
     .kind = CLI_INT,
     .offset = offsetof(demo_args, number),
     .arg = "N",
     .lo = 1,
     .hi = 10,
     .help = "a number"},
    {.name = "ratio",
     .kind = CLI_DOUBLE,
     .offset = offsetof(demo_args, ratio),
     .arg = "X",
     .lo = 0,
     .hi = 1,
     .help = "a ratio\nover two lines"},
    {.short_name = 's',
     .kind = CLI_STRING,
     .offset = offsetof(demo_args, name),
     .arg = "TEXT",
     .help = "a name"},
};
static const cli_opt second_opts[] = {
    {.name = "flag", .kind = CLI_FLAG, .offset = offsetof(demo_args, flag), .help = "a flag"},
    {.name = "mode",
     .kind = CLI_ENUM,
     .offset = offsetof(demo_args, mode),
     .choices = modes,
     .help = "a mode"},
    {.name = "a-custom-option-with-a-long-name",
     .kind = CLI_CUSTOM,
     .offset = offsetof(demo_args, custom),
     .arg = "VALUE",
     .parse = parse_custom,
     .help = "its own parser"},
    {.name = "wide",
     .kind = CLI_INT,
     .offset = offsetof(demo_args, wide),
     .arg = "N",
     .lo = 0,
     .hi = 9,
     .bare = "4",
     .help = "a help line long enough that its default goes on a line of its own"},
};
static const cli_group first = CLI_GROUP("first", first_opts);
static const cli_group second = CLI_GROUP(NULL, second_opts);
static const cli_use demo_uses[] = {{&first, 0}, {&second, 0}};

static int demo_run(void *args) {
    (void)args;
    return 0;
}

static const cli_command demo = {
    .name = "demo",
    .summary = "a command for the tests",
    .usage = "[options] THING",
    .about = "About the demo.\n",
    .epilog = "Epilog.\n",
    CLI_USES(demo_uses),
    .operand = "THING",
    .operand_offset = offsetof(demo_args, operand),
    .args_size = sizeof(demo_args),
    .run = demo_run,
};

/* The demo taking two operands ("list" / "show NAME" style). */
static const cli_command demo_two = {
    .name = "two",
    .summary = "two operands",
    .usage = "A B",
    .about = "Two operands.\n",
    CLI_USES(demo_uses),
    .operand = "A B",
    .operand_offset = offsetof(demo_args, operand),
    .operands = 2,
    .args_size = sizeof(demo_args),
    .run = demo_run,
};

static void demo_init(demo_args *a) {
    *a = (demo_args){.number = 5, .ratio = 2.0 /* out of bounds: no default shown */, .wide = 7};
}

/* Output captured from a file descriptor. */
typedef struct capture {
    char text[8192];
} capture;

static void begin_capture(int fd, FILE **tmp, int *saved) {
    fflush(fd == 1 ? stdout : stderr);
    *tmp = tmpfile();
    assert_non_null(*tmp);
    *saved = dup(fd);
    dup2(fileno(*tmp), fd);
}

static void end_capture(int fd, FILE *tmp, int saved, capture *out) {
    fflush(fd == 1 ? stdout : stderr);
    dup2(saved, fd);
    close(saved);
    rewind(tmp);
    size_t n = fread(out->text, 1, sizeof out->text - 1, tmp);
    out->text[n] = '\0';
    fclose(tmp);
}

/* Parses argv (NULL-terminated, argv[0] the command) into a fresh demo_args; stderr and
 * stdout land in err and out. Returns cli_parse's result. */
static int parse(const cli_command *cmd, const char **argv, demo_args *a, capture *err,
                 capture *out) {
    int argc = 0;
    while (argv[argc])
        argc++;
    demo_init(a);
    FILE *t1, *t2;
    int s1, s2;
    begin_capture(1, &t1, &s1);
    begin_capture(2, &t2, &s2);
    int rc = cli_parse(cmd, argc, (char **)argv, a);
    end_capture(2, t2, s2, err);
    end_capture(1, t1, s1, out);
    return rc;
}

/* Expects argv to fail with code and a message holding needle. */
static void refused(const char **argv, int code, const char *needle) {
    demo_args a;
    capture err, out;
    int rc = parse(&demo, argv, &a, &err, &out);
    if (rc != code || !strstr(err.text, needle))
        fail_msg("%s ...: exit %d (want %d), message '%s' (want '%s')", argv[1], rc, code, err.text,
                 needle);
}

static void test_every_kind(void **state) {
    (void)state;
    demo_args a;
    capture err, out;
    const char *argv[] = {"demo",
                          "-n",
                          "3",
                          "--ratio",
                          "0.25",
                          "-s",
                          "x y",
                          "--flag",
                          "--mode",
                          "slow",
                          "--a-custom-option-with-a-long-name",
                          "v",
                          "thing",
                          NULL};
    assert_int_equal(parse(&demo, argv, &a, &err, &out), 0);
    assert_int_equal(a.number, 3);
    assert_true(a.ratio == 0.25);
    assert_string_equal(a.name, "x y");
    assert_true(a.flag);
    assert_int_equal(a.mode, 1);
    assert_string_equal(a.custom, "v");
    assert_string_equal(a.operand, "thing");
    assert_string_equal(err.text, "");

    /* long options take --name=value; "-" is an operand; after "--" everything is */
    const char *eq[] = {"demo", "--number=10", "--mode=fast", "-", NULL};
    assert_int_equal(parse(&demo, eq, &a, &err, &out), 0);
    assert_int_equal(a.number, 10);
    assert_int_equal(a.mode, 0);
    assert_string_equal(a.operand, "-");
    const char *dashes[] = {"demo", "--", "-n", NULL};
    assert_int_equal(parse(&demo, dashes, &a, &err, &out), 0);
    assert_string_equal(a.operand, "-n");
    assert_int_equal(a.number, 5); /* untouched: the default */
    /* a value may look like an option: it belongs to the option before it */
    const char *neg[] = {"demo", "-s", "--flag", NULL};
    assert_int_equal(parse(&demo, neg, &a, &err, &out), 0);
    assert_string_equal(a.name, "--flag");
    assert_false(a.flag);
    /* one operand by default: a second is refused; a command may take two, in order */
    const char *pair[] = {"demo", "a", "b", NULL};
    assert_int_equal(parse(&demo, pair, &a, &err, &out), 2);
    assert_non_null(strstr(err.text, "unexpected argument 'b'"));
    assert_int_equal(parse(&demo_two, pair, &a, &err, &out), 0);
    assert_string_equal(a.operand, "a");
    assert_string_equal(a.operand2, "b");
    /* a bare value: the next argument is the option's only when it is an integer */
    const char *bare[] = {"demo", "--wide", "--flag", NULL};
    assert_int_equal(parse(&demo, bare, &a, &err, &out), 0);
    assert_true(a.wide == 4 && a.flag);
    const char *last[] = {"demo", "thing", "--wide", NULL};
    assert_int_equal(parse(&demo, last, &a, &err, &out), 0);
    assert_true(a.wide == 4 && !strcmp(a.operand, "thing"));
    const char *given[] = {"demo", "--wide", "2", "thing", NULL};
    assert_int_equal(parse(&demo, given, &a, &err, &out), 0);
    assert_true(a.wide == 2 && !strcmp(a.operand, "thing"));
    const char *word[] = {"demo", "--wide", "thing", NULL};
    assert_int_equal(parse(&demo, word, &a, &err, &out), 0);
    assert_true(a.wide == 4 && !strcmp(a.operand, "thing"));
    const char *eq3[] = {"demo", "--wide=3", NULL};
    assert_int_equal(parse(&demo, eq3, &a, &err, &out), 0);
    assert_int_equal(a.wide, 3);
    const char *third[] = {"two", "a", "-n", "2", "b", "c", NULL};
    assert_int_equal(parse(&demo_two, third, &a, &err, &out), 2);
    assert_non_null(strstr(err.text, "unexpected argument 'c'"));
}

static void test_refusals(void **state) {
    (void)state;
    refused((const char *[]){"demo", "-n", "0", NULL}, 2,
            "-n expects an integer in [1, 10], got '0'");
    refused((const char *[]){"demo", "--number", "11", NULL}, 2, "--number expects an integer");
    refused((const char *[]){"demo", "--number", "3x", NULL}, 2, "got '3x'");
    refused((const char *[]){"demo", "--number", "", NULL}, 2, "got ''");
    refused((const char *[]){"demo", "--number", "99999999999999999999", NULL}, 2, "--number");
    refused((const char *[]){"demo", "--ratio", "1.5", NULL}, 2,
            "--ratio expects a number in [0, 1]");
    refused((const char *[]){"demo", "--ratio", "nan", NULL}, 2, "--ratio expects a number");
    refused((const char *[]){"demo", "--ratio", "inf", NULL}, 2, "--ratio expects a number");
    refused((const char *[]){"demo", "--number", NULL}, 2, "--number needs a value");
    refused((const char *[]){"demo", "--wide", "12", NULL}, 2,
            "--wide expects an integer in [0, 9], got '12'");
    refused((const char *[]){"demo", "--wide", "-1", NULL}, 2, "got '-1'");
    refused((const char *[]){"demo", "-s", NULL}, 2, "-s needs a value");
    refused((const char *[]){"demo", "-n", "1", "--number", "2", NULL}, 2,
            "--number is given twice");
    refused((const char *[]){"demo", "--flag", "--flag", NULL}, 2, "--flag is given twice");
    refused((const char *[]){"demo", "--nope", NULL}, 2, "demo: unknown option '--nope'");
    refused((const char *[]){"demo", "-x", NULL}, 2, "demo: unknown option '-x'");
    refused((const char *[]){"demo", "-n3", NULL}, 2, "unknown option '-n3'");
    refused((const char *[]){"demo", "--numbe", "3", NULL}, 2, "unknown option '--numbe'");
    refused((const char *[]){"demo", "--flag=1", NULL}, 2, "--flag takes no value");
    refused((const char *[]){"demo", "--mode", "medium", NULL}, 2,
            "--mode is one of fast, slow, got 'medium'");
    refused((const char *[]){"demo", "a", "b", NULL}, 2, "demo: unexpected argument 'b'");
    /* a custom parser's own exit code and message */
    refused((const char *[]){"demo", "--a-custom-option-with-a-long-name", "bad", NULL}, 3,
            "--a-custom-option-with-a-long-name refuses 'bad'");
}

static void test_help(void **state) {
    (void)state;
    demo_args a;
    capture err, out;
    /* -h or --help anywhere wins over the errors of other options */
    const char *argv[] = {"demo", "-n", "0", "--help", NULL};
    assert_int_equal(parse(&demo, argv, &a, &err, &out), CLI_HELP);
    assert_string_equal(err.text, "");
    const char *h = out.text;
    assert_non_null(strstr(h, "usage: vpipe demo [options] THING\n\nAbout the demo.\n"));
    assert_non_null(strstr(h, "\nfirst:\n"));
    /* names, value names, choices and help at column 24, defaults within bounds */
    assert_non_null(strstr(h, "\n  -n, --number N        a number (default 5)\n"));
    assert_non_null(strstr(h, "\n  --ratio X             a ratio\n"
                              "                        over two lines\n"));
    assert_null(strstr(h, "(default 2)")); /* out of bounds: an "unset" sentinel */
    assert_non_null(strstr(h, "\n  -s TEXT               a name\n"));
    assert_non_null(strstr(h, "\n  --flag                a flag\n"));
    assert_non_null(strstr(h, "\n  --mode fast|slow      a mode (default fast)\n"));
    /* a name too long for the column: the help starts on the next line */
    assert_non_null(strstr(h, "\n  --a-custom-option-with-a-long-name VALUE\n"
                              "                        its own parser\n"));
    /* a default that would make the line too long goes on a line of its own */
    assert_non_null(
        strstr(h, "\n  --wide N              a help line long enough that its default goes "
                  "on a line of its own\n"
                  "                        (default 7)\n"));
    assert_non_null(strstr(h, "\n  -h, --help            this help\n"));
    assert_non_null(strstr(h, "\nEpilog.\n"));
    const char *short_h[] = {"demo", "-h", NULL};
    capture out2;
    assert_int_equal(parse(&demo, short_h, &a, &err, &out2), CLI_HELP);
    assert_string_equal(out.text, out2.text);
}

/* A command made of one group, for the table checks. */
static const char *check_one(const cli_opt *opts, size_t n) {
    static char why[256];
    cli_group g = {"g", opts, n};
    cli_use use = {&g, 0};
    cli_command cmd = {.name = "t",
                       .summary = "s",
                       .usage = "u",
                       .about = "a",
                       .uses = &use,
                       .n_uses = 1,
                       .run = demo_run};
    return cli_command_check(&cmd, why, sizeof why) ? why : NULL;
}

static void test_table_checks(void **state) {
    (void)state;
    char why[256];
    assert_int_equal(cli_command_check(&demo, why, sizeof why), 0);
    cli_opt clash[] = {first_opts[0], {.short_name = 'n', .kind = CLI_FLAG, .help = "x"}};
    assert_string_equal(check_one(clash, 2), "t: --number shares its name with another option");
    cli_opt help[] = {{.short_name = 'h', .kind = CLI_FLAG, .help = "x"}};
    assert_non_null(strstr(check_one(help, 1), "t: -h takes -h or --help"));
    cli_opt no_choices[] = {{.name = "e", .kind = CLI_ENUM, .help = "x"}};
    assert_string_equal(check_one(no_choices, 1), "t: --e is an enum without choices");
    cli_opt no_arg[] = {{.name = "i", .kind = CLI_INT, .lo = 1, .hi = 2, .help = "x"}};
    assert_string_equal(check_one(no_arg, 1), "t: --i takes a value but does not name it");
    cli_opt bounds[] = {{.name = "i", .kind = CLI_INT, .arg = "N", .lo = 2, .hi = 1, .help = "x"}};
    assert_string_equal(check_one(bounds, 1), "t: --i has bounds out of order");
    cli_opt no_parser[] = {{.name = "c", .kind = CLI_CUSTOM, .arg = "V", .help = "x"}};
    assert_string_equal(check_one(no_parser, 1), "t: --c is custom without a parser");
    cli_opt nameless[] = {{.kind = CLI_FLAG, .help = "x"}};
    assert_non_null(strstr(check_one(nameless, 1), "neither a long nor a short name"));
    /* a clash across groups of one command */
    cli_use both[] = {{&first, 0}, {&first, 0}};
    cli_command twice = demo;
    twice.uses = both;
    assert_int_equal(cli_command_check(&twice, why, sizeof why), -1);
    assert_non_null(strstr(why, "shares its name"));
}

/* Every real subcommand: well-formed tables, and a help naming every option. */
static void test_real_commands(void **state) {
    (void)state;
    assert_true(cli_command_count >= 10);
    for (size_t i = 0; i < cli_command_count; i++) {
        const cli_command *cmd = cli_commands[i];
        char why[256];
        if (cli_command_check(cmd, why, sizeof why))
            fail_msg("%s", why);
        void *args = cli_args_new(cmd);
        assert_non_null(args);
        char *help = cli_help(cmd, args);
        assert_non_null(help);
        char usage[64];
        snprintf(usage, sizeof usage, "usage: vpipe %s ", cmd->name);
        assert_ptr_equal(strstr(help, usage), help);
        for (size_t u = 0; u < cmd->n_uses; u++)
            for (size_t k = 0; k < cmd->uses[u].group->n; k++) {
                const cli_opt *o = &cmd->uses[u].group->opts[k];
                char name[64];
                if (o->name)
                    snprintf(name, sizeof name, "--%s", o->name);
                else
                    snprintf(name, sizeof name, "-%c", o->short_name);
                if (!strstr(help, name))
                    fail_msg("%s --help does not name %s", cmd->name, name);
            }
        free(help);
        free(args);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind),    cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_help),          cmocka_unit_test(test_table_checks),
        cmocka_unit_test(test_real_commands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
