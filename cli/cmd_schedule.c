/* vpipe schedule FAMILY: builds a schedule and writes it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vpipe/io.h"

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

static const char usage[] =
    "usage: vpipe schedule FAMILY -p P -m M [-v V] [-o FILE] [--format FMT]\n\n"
    "Builds a schedule of FAMILY (vpipe list) and writes it: vpipe JSON (default),\n"
    "or text, one line of ops per device (F3.1 = forward of stage 3, microbatch 1).\n\n"
    "  -o FILE               output file (default - = stdout)\n"
    "  --format FMT          json, text, torch-csv (PyTorch compute_only) or\n"
    "                        torch-csv-comms (with SEND/RECV); the CSV exports\n"
    "                        print on stderr which torchtitan schedule to pair\n"
    "                        them with\n";

int cmd_schedule(int argc, char **argv) {
    const char *family = NULL, *out_path = "-", *format = "json";
    cli_spec o;
    cli_spec_init(&o);
    for (int i = 1; i < argc; i++) {
        int code;
        cli_arg arg = cli_common_arg(argc, argv, &i, &o, NULL, usage, &code);
        if (arg == CLI_ARG_EXIT)
            return code;
        if (arg == CLI_ARG_TAKEN)
            continue;
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--format")) {
            const char *val = cli_flag_value(argc, argv, &i);
            if (!val)
                return VP_EXIT_USAGE;
            if (argv[i - 1][1] == 'o')
                out_path = val;
            else
                format = val;
        } else if (!family && argv[i][0] != '-') {
            family = argv[i];
        } else {
            return cli_error(VP_EXIT_USAGE, "schedule: unexpected argument '%s'", argv[i]);
        }
    }
    if (!family)
        return cli_error(VP_EXIT_USAGE, "schedule needs a family (vpipe list)");
    vp_torch_csv_format csv = !strcmp(format, "torch-csv")         ? VP_TORCH_CSV_COMPUTE_ONLY
                              : !strcmp(format, "torch-csv-comms") ? VP_TORCH_CSV_COMPUTE_COMMS
                                                                   : VP_TORCH_CSV_AUTO;
    if (strcmp(format, "json") && strcmp(format, "text") && csv == VP_TORCH_CSV_AUTO)
        return cli_error(VP_EXIT_USAGE,
                         "unknown --format '%s' (json, text, torch-csv or torch-csv-comms)",
                         format);
    if (!vp_family_find(family))
        return cli_error(VP_EXIT_USAGE, "unknown family '%s' (vpipe list)", family);
    vp_schedule *s;
    int rc = cli_obtain_schedule(family, &o, &s);
    if (rc)
        return rc;
    char *text = NULL;
    if (csv != VP_TORCH_CSV_AUTO) {
        vp_error err = {0};
        if (vp_torch_csv_write(s, csv, &text, &err) != VP_OK) {
            vp_schedule_free(s);
            return cli_lib_error(&err);
        }
        char notes[1024];
        vp_torch_csv_notes(s, notes, sizeof notes);
        fputs(notes, stderr);
    } else if (strcmp(format, "text")) {
        vp_error err = {0};
        if (vp_json_write(s, &text, &err) != VP_OK) {
            vp_schedule_free(s);
            return cli_lib_error(&err);
        }
    }
    FILE *out = cli_open_out(out_path);
    if (out) {
        if (text)
            fputs(text, out);
        else
            write_text(out, s);
        cli_close_out(out);
    } else {
        rc = VP_EXIT_INPUT;
    }
    free(text);
    vp_schedule_free(s);
    return rc;
}
