/* vpipe validate FILE|FAMILY: checks a schedule; exit 0 when valid, 3 when not. */
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: vpipe validate FILE | FAMILY -p P -m M\n\n"
    "Checks a schedule file (vpipe JSON or PyTorch CSV; - reads stdin) or a built\n"
    "family: every pass present once, on its stage's device, in dependency order,\n"
    "and the replay free of deadlock. Exit 0 when valid, 3 with the first problem\n"
    "(device, position, op) when not.\n\n";

int cmd_validate(int argc, char **argv) {
    const char *what = NULL;
    cli_spec o;
    cli_spec_init(&o);
    for (int i = 1; i < argc; i++) {
        int code;
        cli_arg arg = cli_common_arg(argc, argv, &i, &o, NULL, usage, &code);
        if (arg == CLI_ARG_EXIT)
            return code;
        if (arg == CLI_ARG_TAKEN)
            continue;
        if (what || (argv[i][0] == '-' && argv[i][1]))
            return cli_error(VP_EXIT_USAGE, "validate: unexpected argument '%s'", argv[i]);
        what = argv[i];
    }
    if (!what)
        return cli_error(VP_EXIT_USAGE, "validate needs a file (vpipe validate --help)");
    vp_schedule *s;
    int rc = cli_obtain_schedule(what, &o, &s);
    if (rc)
        return rc;
    printf("%s: valid (%s, p=%d, stages=%d, m=%d, %ld ops)\n", what, s->family, s->p, s->S, s->m,
           vp_schedule_op_count(s));
    vp_schedule_free(s);
    return VP_EXIT_OK;
}
