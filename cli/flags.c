/* The flag-table parser and the help generator (see flags.h). */
#include "flags.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Column where help texts start, and the width a default may extend a line to. */
#define HELP_COLUMN 24
#define HELP_WIDTH 88

int cli_parse_int(const char *flag, const char *text, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < lo || v > hi)
        return cli_error(VP_EXIT_USAGE, "%s expects an integer in [%ld, %ld], got '%s'", flag, lo,
                         hi, text);
    *out = v;
    return 0;
}

int cli_parse_double(const char *flag, const char *text, double lo, double hi, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return cli_error(VP_EXIT_USAGE, "%s expects a number in [%g, %g], got '%s'", flag, lo, hi,
                         text);
    *out = v;
    return 0;
}

/* An option found in a command's tables: which one, and its destination. */
typedef struct found {
    const cli_opt *opt;
    char *dest;   /* args + group offset + option offset */
    size_t index; /* position among all the command's options (for duplicates) */
} found;

/* Looks up "--name" (name_len characters of name) or "-c" in cmd's tables. */
static bool find(const cli_command *cmd, const char *name, size_t name_len, char short_name,
                 void *args, found *f) {
    size_t index = 0;
    for (size_t u = 0; u < cmd->n_uses; u++) {
        const cli_group *g = cmd->uses[u].group;
        for (size_t k = 0; k < g->n; k++, index++) {
            const cli_opt *o = &g->opts[k];
            bool hit =
                name ? o->name && strlen(o->name) == name_len && !strncmp(o->name, name, name_len)
                     : o->short_name && o->short_name == short_name;
            if (hit) {
                *f = (found){o, (char *)args + cmd->uses[u].offset + o->offset, index};
                return true;
            }
        }
    }
    return false;
}

/* A long option of cmd that name (len bytes) likely misspells, or NULL. */
static const char *near_option(const cli_command *cmd, const char *name, size_t len) {
    for (size_t u = 0; u < cmd->n_uses; u++)
        for (size_t k = 0; k < cmd->uses[u].group->n; k++) {
            const char *o = cmd->uses[u].group->opts[k].name;
            if (o && vp_typo_edits(name, len, o) >= 0)
                return o;
        }
    return NULL;
}

static size_t option_count(const cli_command *cmd) {
    size_t n = 0;
    for (size_t u = 0; u < cmd->n_uses; u++)
        n += cmd->uses[u].group->n;
    return n;
}

static int parse_enum(const char *flag, const char *value, const cli_opt *o, int *dest) {
    for (int k = 0; o->choices[k]; k++)
        if (!strcmp(o->choices[k], value)) {
            *dest = k;
            return 0;
        }
    char list[256] = "";
    for (int k = 0; o->choices[k]; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                 o->choices[k]);
    return cli_error(VP_EXIT_USAGE, "%s is one of %s, got '%s'", flag, list, value);
}

/* Stores value (NULL for a flag) into the option's destination. */
static int store(const found *f, const char *flag, const char *value) {
    const cli_opt *o = f->opt;
    long n;
    switch (o->kind) {
    case CLI_INT: {
        int rc = cli_parse_int(flag, value, (long)o->lo, (long)o->hi, &n);
        if (!rc)
            *(int *)f->dest = (int)n;
        return rc;
    }
    case CLI_DOUBLE:
        return cli_parse_double(flag, value, o->lo, o->hi, (double *)f->dest);
    case CLI_STRING:
        *(const char **)f->dest = value;
        return 0;
    case CLI_FLAG:
        *(bool *)f->dest = true;
        return 0;
    case CLI_ENUM:
        return parse_enum(flag, value, o, (int *)f->dest);
    case CLI_CUSTOM:
        return o->parse(flag, value, f->dest);
    }
    return cli_error(VP_EXIT_FAILURE, "%s: unknown option kind", flag);
}

static bool is_help(const char *a) {
    return !strcmp(a, "-h") || !strcmp(a, "--help");
}

static int print_help(const cli_command *cmd, const void *args) {
    char *text = cli_help(cmd, args);
    if (!text)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    int rc = cli_write("-", text, strlen(text));
    free(text);
    return rc ? rc : CLI_HELP;
}

/* An operand: into the first free slot, where the command takes one more. */
static int take_operand(const cli_command *cmd, const char *a, void *args) {
    const char **slot = (const char **)((char *)args + cmd->operand_offset);
    for (int k = 0; cmd->operand && k < (cmd->operands > 0 ? cmd->operands : 1); k++)
        if (!slot[k]) {
            slot[k] = a;
            return 0;
        }
    return cli_error(VP_EXIT_USAGE, "%s: unexpected argument '%s' (vpipe %s --help)", cmd->name, a,
                     cmd->name);
}

/* Whether argv[i + 1] exists and reads as an integer (of any size: the bounds are checked
 * when it is stored). */
static bool integer_next(int argc, char **argv, int i) {
    if (i + 1 >= argc)
        return false;
    const char *a = argv[i + 1] + (argv[i + 1][0] == '-' || argv[i + 1][0] == '+');
    return *a && strspn(a, "0123456789") == strlen(a);
}

/* Parses the option at argv[*i] (and its value, advancing *i). */
static int take_option(const cli_command *cmd, int argc, char **argv, int *i, void *args,
                       unsigned char *seen) {
    const char *a = argv[*i], *value = NULL;
    bool is_long = a[1] == '-';
    size_t len = is_long ? strcspn(a + 2, "=") : 0;
    found f;
    if (is_long ? !find(cmd, a + 2, len, 0, args, &f)
                : a[2] != '\0' || !find(cmd, NULL, 0, a[1], args, &f)) {
        const char *near = is_long ? near_option(cmd, a + 2, len) : NULL;
        return cli_error(VP_EXIT_USAGE, "%s: unknown option '%s' (%s%s%svpipe %s --help)",
                         cmd->name, a, near ? "did you mean --" : "", near ? near : "",
                         near ? "? " : "", cmd->name);
    }
    char flag[64];
    snprintf(flag, sizeof flag, "%.*s", is_long ? (int)len + 2 : 2, a);
    if (is_long && a[2 + len] == '=')
        value = a + 3 + len;
    if (f.opt->kind == CLI_FLAG && value)
        return cli_error(VP_EXIT_USAGE, "%s takes no value", flag);
    if (f.opt->kind != CLI_FLAG && !value && f.opt->bare && !integer_next(argc, argv, *i))
        value = f.opt->bare; /* an old flag's spelling: --zero alone */
    if (f.opt->kind != CLI_FLAG && !value) {
        if (*i + 1 >= argc)
            return cli_error(VP_EXIT_USAGE, "%s needs a value", flag);
        value = argv[++*i];
    }
    if (seen[f.index]++)
        return cli_error(VP_EXIT_USAGE, "%s is given twice", flag);
    return store(&f, flag, value);
}

int cli_parse(const cli_command *cmd, int argc, char **argv, void *args) {
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (is_help(argv[i]))
            return print_help(cmd, args);
    unsigned char *seen = calloc(option_count(cmd) + 1, 1);
    if (!seen)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    int rc = 0;
    bool operands_only = false;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (operands_only || a[0] != '-' || a[1] == '\0')
            rc = take_operand(cmd, a, args);
        else if (!strcmp(a, "--"))
            operands_only = true;
        else
            rc = take_option(cmd, argc, argv, &i, args, seen);
    }
    free(seen);
    return rc;
}

/* "a|b|c" of an enum's choices. */
static void choices_text(const cli_opt *o, char *buf, size_t size) {
    buf[0] = '\0';
    for (int k = 0; o->choices[k]; k++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", k ? "|" : "", o->choices[k]);
}

/* " (default X)" when the destination holds a value within the option's bounds and the
 * help does not already say its default. */
static void default_text(const cli_opt *o, const char *dest, char *buf, size_t size) {
    buf[0] = '\0';
    if (!dest || (o->help && strstr(o->help, "(default")))
        return;
    if (o->kind == CLI_INT) {
        int v = *(const int *)dest;
        if (v >= o->lo && v <= o->hi)
            snprintf(buf, size, " (default %d)", v);
    } else if (o->kind == CLI_DOUBLE) {
        double v = *(const double *)dest;
        if (v >= o->lo && v <= o->hi)
            snprintf(buf, size, " (default %g)", v);
    } else if (o->kind == CLI_STRING && *(const char *const *)dest) {
        snprintf(buf, size, " (default %s)", *(const char *const *)dest);
    } else if (o->kind == CLI_ENUM) {
        int v = *(const int *)dest;
        int n = 0;
        while (o->choices[n])
            n++;
        if (v >= 0 && v < n)
            snprintf(buf, size, " (default %s)", o->choices[v]);
    }
}

/* "  -o, --output FILE" padded to the help column, then the help lines. */
static void help_option(FILE *out, const cli_opt *o, const char *dest) {
    char names[192], arg[128], dflt[96];
    if (o->kind == CLI_ENUM && !o->arg)
        choices_text(o, arg, sizeof arg);
    else
        snprintf(arg, sizeof arg, "%s", o->arg ? o->arg : "");
    char shorts[8] = "";
    if (o->short_name)
        snprintf(shorts, sizeof shorts, "-%c%s", o->short_name, o->name ? ", " : "");
    snprintf(names, sizeof names, "  %s%s%s%s%s", shorts, o->name ? "--" : "",
             o->name ? o->name : "", arg[0] ? " " : "", arg);
    int len = (int)strlen(names);
    if (len >= HELP_COLUMN - 1)
        fprintf(out, "%s\n%*s", names, HELP_COLUMN, "");
    else
        fprintf(out, "%-*s", HELP_COLUMN, names);
    size_t last = 0; /* length of the help's last line */
    for (const char *line = o->help; *line;) {
        last = strcspn(line, "\n");
        fprintf(out, "%.*s", (int)last, line);
        line += last;
        if (*line == '\n' && *++line)
            fprintf(out, "\n%*s", HELP_COLUMN, "");
    }
    default_text(o, dest, dflt, sizeof dflt);
    if (dflt[0] && HELP_COLUMN + last + strlen(dflt) > HELP_WIDTH)
        fprintf(out, "\n%*s", HELP_COLUMN - 1, ""); /* dflt starts with a space */
    fprintf(out, "%s\n", dflt);
}

char *cli_help(const cli_command *cmd, const void *args) {
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    fprintf(out, "usage: vpipe %s %s\n\n%s", cmd->name, cmd->usage, cmd->about);
    for (size_t u = 0; u < cmd->n_uses; u++) {
        const cli_group *g = cmd->uses[u].group;
        fprintf(out, g->title ? "\n%s:\n" : "\n", g->title);
        for (size_t k = 0; k < g->n; k++) {
            const cli_opt *o = &g->opts[k];
            help_option(out, o, args ? (const char *)args + cmd->uses[u].offset + o->offset : NULL);
        }
    }
    fprintf(out, "\n%-*s%s\n", HELP_COLUMN, "  -h, --help", "this help");
    if (cmd->epilog)
        fprintf(out, "\n%s", cmd->epilog);
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* Whether options a and b share a name. */
static bool clash(const cli_opt *a, const cli_opt *b) {
    return (a->name && b->name && !strcmp(a->name, b->name)) ||
           (a->short_name && a->short_name == b->short_name);
}

static const char *check_option(const cli_opt *o) {
    if (!o->name && !o->short_name)
        return "has neither a long nor a short name";
    if ((o->name && !strcmp(o->name, "help")) || o->short_name == 'h')
        return "takes -h or --help, which every command keeps for its help";
    if (!o->help)
        return "has no help text";
    if (o->kind == CLI_ENUM && (!o->choices || !o->choices[0]))
        return "is an enum without choices";
    if (o->kind == CLI_CUSTOM && !o->parse)
        return "is custom without a parser";
    if ((o->kind == CLI_INT || o->kind == CLI_DOUBLE) && !(o->lo <= o->hi))
        return "has bounds out of order";
    if (o->kind != CLI_FLAG && o->kind != CLI_ENUM && !o->arg)
        return "takes a value but does not name it";
    return NULL;
}

/* Fills why with "<command>: <option> <problem>"; returns -1. */
static int bad_option(const cli_command *cmd, const cli_opt *o, const char *problem, char *why,
                      size_t size) {
    if (o->name)
        snprintf(why, size, "%s: --%s %s", cmd->name, o->name, problem);
    else
        snprintf(why, size, "%s: -%c %s", cmd->name, o->short_name ? o->short_name : '?', problem);
    return -1;
}

int cli_command_check(const cli_command *cmd, char *why, size_t size) {
    if (!cmd->name || !cmd->summary || !cmd->usage || !cmd->about || !(cmd->run || cmd->request)) {
        snprintf(why, size, "%s: misses its name, summary, usage, about or run",
                 cmd->name ? cmd->name : "a command");
        return -1;
    }
    for (size_t u = 0; u < cmd->n_uses; u++) {
        const cli_group *g = cmd->uses[u].group;
        for (size_t k = 0; k < g->n; k++) {
            const char *problem = check_option(&g->opts[k]);
            if (problem)
                return bad_option(cmd, &g->opts[k], problem, why, size);
            for (size_t u2 = u; u2 < cmd->n_uses; u2++) {
                const cli_group *g2 = cmd->uses[u2].group;
                for (size_t k2 = u2 == u ? k + 1 : 0; k2 < g2->n; k2++)
                    if (clash(&g->opts[k], &g2->opts[k2]))
                        return bad_option(cmd, &g->opts[k], "shares its name with another option",
                                          why, size);
            }
        }
    }
    return 0;
}

/* A new argument struct of cmd with its defaults. */
void *cli_args_new(const cli_command *cmd) {
    size_t size = cmd->request ? sizeof(vp_request) : cmd->args_size;
    void *args = calloc(1, size ? size : 1);
    if (args && cmd->request)
        vp_request_init(args, cmd->name);
    else if (args && cmd->init)
        cmd->init(args);
    return args;
}

int cli_run(const cli_command *cmd, int argc, char **argv) {
    void *args = cli_args_new(cmd);
    if (!args)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    int rc = cli_parse(cmd, argc, argv, args);
    if (rc == CLI_HELP)
        rc = VP_EXIT_OK;
    else if (rc == 0)
        rc = cmd->request ? cli_request_run(cmd->name, args) : cmd->run(args);
    free(args);
    return rc;
}
