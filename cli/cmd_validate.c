/* vpipe validate FILE|FAMILY: checks a schedule; exit 0 when valid, 3 when not. */
#include <stddef.h>

#include "cli.h"

typedef struct validate_args {
    cli_spec spec;
    const char *what;
} validate_args;

static void init(void *args) {
    cli_spec_init(&((validate_args *)args)->spec);
}

static int run(void *args) {
    validate_args *a = args;
    if (!a->what)
        return cli_error(VP_EXIT_USAGE, "validate needs a file (vpipe validate --help)");
    vp_schedule *s = NULL;
    int rc = cli_spec_ready(&a->spec);
    if (!rc)
        rc = cli_obtain_schedule(a->what, &a->spec, &s);
    if (!rc)
        rc = cli_print("%s: valid (%s, p=%d, stages=%d, m=%d, %ld ops)\n", a->what, s->family, s->p,
                       s->S, s->m, vp_schedule_op_count(s));
    vp_schedule_free(s);
    cli_spec_release(&a->spec);
    return rc;
}

static const cli_use uses[] = {
    {&cli_spec_group, offsetof(validate_args, spec)},
    {&cli_limit_group, offsetof(validate_args, spec.spec.max_ops)},
};

const cli_command cli_cmd_validate = {
    .name = "validate",
    .summary = "check a schedule file",
    .usage = "FILE | FAMILY -p P -m M",
    .about = "Checks a schedule file (vpipe JSON or PyTorch CSV; - reads stdin) or a built\n"
             "family: every pass present once, on its stage's device, in dependency order,\n"
             "and the replay free of deadlock. Exit 0 when valid, 3 with the first problem\n"
             "(device, position, op) when not.\n",
    CLI_USES(uses),
    .operand = "FILE|FAMILY",
    .operand_offset = offsetof(validate_args, what),
    .args_size = sizeof(validate_args),
    .init = init,
    .run = run,
};
