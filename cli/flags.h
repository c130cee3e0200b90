/* The command line's flag tables and their parser.
 *
 * Every option is declared once, in a table: its long and short name, its kind, its
 * bounds, where its value goes and its help line. Options come in groups (the schedule
 * spec, the model, a subcommand's own) so that several subcommands reuse one table, and a
 * subcommand is a list of groups, each placed at an offset of the subcommand's argument
 * struct. One parser reads every subcommand's argv from its tables, and the same tables
 * generate its --help text, so the two cannot drift apart. */
#ifndef VPIPE_CLI_FLAGS_H
#define VPIPE_CLI_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    CLI_INT,    /* int within [lo, hi] */
    CLI_DOUBLE, /* finite double within [lo, hi] */
    CLI_STRING, /* const char *, pointing into argv */
    CLI_FLAG,   /* bool set to true; takes no value */
    CLI_ENUM,   /* int: the index of the value in choices */
    CLI_CUSTOM  /* the option's own parser */
} cli_kind;

/* A custom parser: reads value into dest (the option's destination). flag is the option
 * as the user typed it, for messages. Returns 0, or prints an error naming flag and
 * returns the exit code. */
typedef int (*cli_parse_fn)(const char *flag, const char *value, void *dest);

typedef struct cli_opt {
    const char *name;           /* long name without dashes ("cost" for --cost), or NULL */
    char short_name;            /* 'p' for -p, or 0 */
    cli_kind kind;              /* what the value is */
    size_t offset;              /* destination: offset in the group's struct */
    const char *arg;            /* the value's name in the help ("N"); NULL for a flag, and
                                   for an enum (then its choices, "a|b|c") */
    double lo, hi;              /* bounds of CLI_INT and CLI_DOUBLE */
    const char *const *choices; /* CLI_ENUM: the names, NULL-terminated */
    cli_parse_fn parse;         /* CLI_CUSTOM */
    const char *help;           /* the help text; '\n' starts another line */
    const char *bare;           /* CLI_INT: the value when none follows (the next argument
                                   is not an integer, or there is none), or NULL: required */
} cli_opt;

/* A table of options; title heads them in the help (NULL: no heading). */
typedef struct cli_group {
    const char *title;
    const cli_opt *opts;
    size_t n;
} cli_group;

#define CLI_GROUP(title, table)                                                                    \
    { title, table, sizeof table / sizeof table[0] }

/* One group of a subcommand, its struct at args + offset. */
typedef struct cli_use {
    const cli_group *group;
    size_t offset;
} cli_use;

/* Designated initialisers of a cli_command's groups: .uses and .n_uses from one array. */
#define CLI_USES(list) .uses = list, .n_uses = sizeof list / sizeof list[0]

/* A subcommand: its name, help texts, option groups, and what runs it. */
typedef struct cli_command {
    const char *name;         /* "schedule" */
    const char *summary;      /* one line for `vpipe --help` */
    const char *usage;        /* what follows "usage: vpipe <name> " (may hold '\n') */
    const char *about;        /* paragraphs after the usage line */
    const char *epilog;       /* text after the options, or NULL */
    const cli_use *uses;      /* its option groups */
    size_t n_uses;            /* how many */
    const char *operand;      /* name of its positional arguments ("FILE"), NULL: none */
    size_t operand_offset;    /* where the operand goes (a const char *) in args */
    int operands;             /* how many it takes (0: one), into consecutive const char *
                                 slots from operand_offset */
    size_t args_size;         /* size of its argument struct */
    void (*init)(void *args); /* fills the defaults (args arrive zeroed); may be NULL */
    int (*run)(void *args);   /* runs the parsed command; returns the exit code */
    bool request;             /* args is a vp_request, run by the library (cli_request_run):
                                 args_size, init and run are then implied */
} cli_command;

/* What cli_parse returns after printing the help for -h or --help. */
#define CLI_HELP (-1)

/* Parses argv[1..argc) of cmd into args: every option of its groups, and at most
 * cmd->operands operands (one by default; "-" is an operand; after "--" everything is). A long
 * option's value may also follow '=' (--cost=F=2); an option with a bare value takes the next
 * argument only when it is an integer (--zero 2, --zero --flash). Returns 0; CLI_HELP after
 * printing the help to stdout when -h or --help is anywhere in argv; or, after printing an error
 * naming the option, the exit code: 2 for an unknown option, a missing value, a value out of range
 * or not a choice, an option given twice, a value given to a flag or an extra operand (a custom
 * parser may return another code). */
int cli_parse(const cli_command *cmd, int argc, char **argv, void *args);

/* cmd's help text, generated from its tables; each option's current value in args (the
 * defaults) is shown when it is within the option's bounds. New string (caller frees),
 * NULL when memory runs out. */
char *cli_help(const cli_command *cmd, const void *args);

/* Checks that cmd's tables are well formed: every option has a name and a help text, no
 * name or short name is used twice or is -h/--help, value options name their value (or
 * list choices), bounds are ordered, custom options have a parser. Returns 0, or -1
 * after writing "<command>: <option> <problem>" into why. */
int cli_command_check(const cli_command *cmd, char *why, size_t size);

/* A new (calloc'ed) argument struct of cmd with its defaults; NULL when memory runs out. */
void *cli_args_new(const cli_command *cmd);

/* Runs cmd: defaults, parsing, then cmd->run (a request command: vp_request_init and
 * cli_request_run). Returns the exit code (0 after --help). */
int cli_run(const cli_command *cmd, int argc, char **argv);

/* Strict integer parse: the whole string, base 10, within [lo, hi]. Prints a usage error
 * naming flag and returns 2 on failure; 0 on success. */
int cli_parse_int(const char *flag, const char *text, long lo, long hi, long *out);

/* Strict finite number parse within [lo, hi]; same contract as cli_parse_int. */
int cli_parse_double(const char *flag, const char *text, double lo, double hi, double *out);

#endif
