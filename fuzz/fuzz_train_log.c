/* Fuzz target for the training-log reader (vp_render_loss_svg, what vpipe plot reads): any
 * input is either refused with VP_EPARSE and a message naming the log, or drawn into an
 * SVG page that is one whole <svg> element holding no "nan" or "inf" coordinate. And its
 * cut (vp_render_loss_cut, what a resumed run's --log keeps) of the same input before a
 * step the input's first byte picks: refused alike, or lines of the input, each ending in a
 * newline, that cut again keep themselves whole. The corpus (fuzz/corpus/train_log/)
 * holds logs written by vpipe train --log (pipelined, with validation; the reference; a
 * run and its extension concatenated) and damaged ones. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vpipe/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *svg = NULL;
    vp_error err = {0};
    char *kept = NULL, *again = NULL;
    int dropped = 0, none = 0;
    int first = size ? 1 + data[0] % 16 : 1;
    vp_status rc =
        vp_render_loss_cut((const char *)data, size, "fuzz.log", first, &kept, &dropped, &err);
    if (rc != VP_OK && ((rc != VP_EPARSE && rc != VP_ENOMEM) || !err.message[0] || kept))
        abort();
    if (rc == VP_OK) {
        size_t n = strlen(kept);
        if (n > size + 1 || (n && kept[n - 1] != '\n') || dropped < 0)
            abort();
        if (vp_render_loss_cut(kept, n, "kept.log", first, &again, &none, &err) != VP_OK ||
            strcmp(again, kept) || none)
            abort(); /* what was kept is a log, all of it before first */
        free(again);
        free(kept);
    }
    rc = vp_render_loss_svg((const char *)data, size, "fuzz.log", &svg, &err);
    if (rc != VP_OK) {
        if ((rc != VP_EPARSE && rc != VP_ENOMEM) || !err.message[0] || svg)
            abort(); /* every refusal explains itself and leaves nothing */
        return 0;
    }
    size_t n = strlen(svg);
    if (strncmp(svg, "<svg ", 5) != 0 || n < 7 || strcmp(svg + n - 7, "</svg>\n") != 0)
        abort();
    if (strstr(svg, "nan") || strstr(svg, "inf"))
        abort(); /* every coordinate finite */
    free(svg);
    return 0;
}
