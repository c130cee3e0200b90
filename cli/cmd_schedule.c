/* vpipe schedule FAMILY: builds a schedule and writes it. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vpipe/io.h"

enum { FORMAT_JSON, FORMAT_TEXT, FORMAT_CSV, FORMAT_CSV_COMMS };
static const char *const formats[] = {"json", "text", "torch-csv", "torch-csv-comms", NULL};

typedef struct schedule_args {
    cli_spec spec;
    cli_real real;
    const char *family, *out;
    int format;
} schedule_args;

static const cli_opt schedule_opts[] = {
    {.short_name = 'o',
     .kind = CLI_STRING,
     .offset = offsetof(schedule_args, out),
     .arg = "FILE",
     .help = "output file; - is stdout"},
    {.name = "format",
     .kind = CLI_ENUM,
     .offset = offsetof(schedule_args, format),
     .choices = formats,
     .help = "vpipe JSON, text, or PyTorch's compute_only CSV (torch-csv)\n"
             "or its CSV with SEND/RECV (torch-csv-comms); the CSV exports\n"
             "print on stderr which torchtitan schedule to pair them with"},
};
static const cli_group schedule_group = CLI_GROUP("output", schedule_opts);

static void init(void *args) {
    schedule_args *a = args;
    cli_spec_init(&a->spec);
    cli_real_init(&a->real);
    a->out = "-";
}

/* One line of ops per device. */
static void write_text(FILE *out, const vp_schedule *s) {
    fprintf(out, "# %s p=%d stages=%d m=%d placement=%s\n", s->family, s->p, s->S, s->m,
            vp_placement_name(s->placement));
    for (int d = 0; d < s->p; d++) {
        fprintf(out, "device %d:", d);
        for (int k = 0; k < s->dev[d].n; k++) {
            char label[48];
            fprintf(out, " %s", vp_op_format(&s->dev[d].ops[k], label, sizeof label));
        }
        fputc('\n', out);
    }
}

/* The schedule in the chosen format, as a new string. */
static int format_schedule(const vp_schedule *s, int format, char **text) {
    vp_error err = {0};
    *text = NULL;
    if (format == FORMAT_CSV || format == FORMAT_CSV_COMMS) {
        vp_torch_csv_format csv =
            format == FORMAT_CSV ? VP_TORCH_CSV_COMPUTE_ONLY : VP_TORCH_CSV_COMPUTE_COMMS;
        if (vp_torch_csv_write(s, csv, text, &err) != VP_OK)
            return cli_lib_error(&err);
        char notes[1024];
        vp_torch_csv_notes(s, notes, sizeof notes);
        fputs(notes, stderr);
        return 0;
    }
    if (format == FORMAT_JSON)
        return vp_json_write(s, text, &err) == VP_OK ? 0 : cli_lib_error(&err);
    cli_out out;
    if (cli_out_begin(&out))
        return VP_EXIT_FAILURE;
    write_text(out.f, s);
    *text = cli_out_take(&out);
    return *text ? 0 : VP_EXIT_FAILURE;
}

static int run(void *args) {
    schedule_args *a = args;
    if (!a->family)
        return cli_error(VP_EXIT_USAGE, "schedule needs a family (vpipe list)");
    if (!vp_family_find(a->family))
        return cli_error(VP_EXIT_USAGE, "unknown family '%s' (vpipe list)", a->family);
    vp_schedule *s = NULL;
    vp_price_result *priced = NULL;
    char *text = NULL;
    int rc = cli_spec_ready(&a->spec);
    if (!rc)
        rc = cli_real_ready(&a->real, &a->spec);
    if (!rc && a->real.on)
        rc = cli_price(a->family, &a->spec, &a->real, &priced, &s);
    else if (!rc)
        rc = cli_obtain_schedule(a->family, &a->spec, &s);
    if (!rc && priced)
        cli_print_split(stderr, priced); /* what a launcher needs beside the schedule */
    if (!rc)
        rc = format_schedule(s, a->format, &text);
    if (!rc)
        rc = cli_write(a->out, text, strlen(text));
    free(text);
    vp_price_result_free(priced);
    vp_schedule_free(s);
    cli_real_release(&a->real);
    cli_spec_release(&a->spec);
    return rc;
}

static const cli_use uses[] = {
    {&cli_spec_group, offsetof(schedule_args, spec)},
    {&cli_limit_group, offsetof(schedule_args, spec.spec.max_ops)},
    {&cli_recompute_group, offsetof(schedule_args, spec.recompute)},
    {&cli_real_group, offsetof(schedule_args, real)},
    {&cli_split_group, offsetof(schedule_args, real.split)},
    {&schedule_group, 0},
};

const cli_command cli_cmd_schedule = {
    .name = "schedule",
    .summary = "build a schedule and write it (json, text, PyTorch CSV)",
    .usage = "FAMILY -p P -m M [options]",
    .about = "Builds a schedule of FAMILY (vpipe list) and writes it: vpipe JSON (default),\n"
             "text, one line of ops per device (F3.1 = forward of stage 3, microbatch 1),\n"
             "or PyTorch's pipelining CSV.\n\n"
             "With --model, cost-aware families are built with the real model's per-device\n"
             "pass times and memory (the layer split goes to stderr).\n",
    CLI_USES(uses),
    .operand = "FAMILY",
    .operand_offset = offsetof(schedule_args, family),
    .args_size = sizeof(schedule_args),
    .init = init,
    .run = run,
};
