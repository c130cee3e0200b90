/* vpipe validate FILE|FAMILY: checks a schedule; exit 0 when valid, 3 when not. */
#include <string.h>

#include "cli.h"

int cmd_validate(int argc, char **argv) {
    const char *what = NULL;
    cli_spec o;
    cli_spec_init(&o);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: vpipe validate FILE | FAMILY -p P -m M\n\n"
                   "Checks a schedule file (vpipe JSON; - reads stdin) or a built family: every\n"
                   "pass present once, on its stage's device, in dependency order, and the\n"
                   "replay free of deadlock. Exit 0 when valid, 3 with the first problem\n"
                   "(device, position, op) when not.\n\n%s",
                   cli_spec_help);
            return VP_EXIT_OK;
        }
        int r = cli_spec_flag(argc, argv, &i, &o);
        if (r < 0)
            return -r;
        if (r)
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
