/* Model flags shared by vpipe train and vpipe profile. */
#include <stddef.h>
#include <string.h>

#include "cli.h"

const char cli_model_help[] = "  --layers N          transformer blocks (4)\n"
                              "  --width C           residual width, divisible by --heads (128)\n"
                              "  --heads H           attention heads (4)\n"
                              "  --seq T             tokens per sequence (64)\n"
                              "  --microbatch B      sequences per microbatch (8)\n";

int cli_model_flag(int argc, char **argv, int *i, vp_model_config *m) {
    static const struct {
        const char *flag;
        size_t offset;
        long max;
    } flags[] = {
        {"--layers", offsetof(vp_model_config, n_layer), 1 << 16},
        {"--width", offsetof(vp_model_config, width), 1 << 16},
        {"--heads", offsetof(vp_model_config, n_head), 1 << 16},
        {"--seq", offsetof(vp_model_config, seq_len), 1 << 20},
        {"--microbatch", offsetof(vp_model_config, microbatch), 1 << 20},
    };
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
        if (strcmp(argv[*i], flags[k].flag))
            continue;
        const char *v = cli_flag_value(argc, argv, i);
        long x;
        if (!v || cli_parse_int(flags[k].flag, v, 1, flags[k].max, &x) != 0)
            return -VP_EXIT_USAGE;
        *(int *)((char *)m + flags[k].offset) = (int)x;
        return 1;
    }
    return 0;
}
