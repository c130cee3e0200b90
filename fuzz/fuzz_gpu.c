/* Fuzz target for the accelerator JSON reader (--gpu FILE; its FP8 keys fp8_peak_tflops and
 * mxfp8_peak_tflops among the rest): any input is either rejected with VP_EPARSE and a
 * message, or read into an accelerator whose FP8 peaks are finite and not negative, that
 * writes back (vp_gpu_json) and reads again to the same FP8 peaks, and on which a layer of
 * GPT-2 with FP8 multiplies either is refused with a message (no FP8 tensor cores, or a
 * speed model out of range) or prices to finite, non-negative pass times. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "price/price_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Same within the printed precision (12 significant digits). */
static bool near(double a, double b) {
    return fabs(a - b) <= 1e-9 * fabs(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vp_gpu g, again;
    vp_error err = {0};
    if (vp_gpu_parse_json((const char *)data, size, &g, &err) != VP_OK) {
        if (err.status != VP_EPARSE || err.message[0] == '\0')
            abort(); /* every rejection is a parse error that explains itself */
        return 0;
    }
    if (!isfinite(g.fp8_peak_flops) || !(g.fp8_peak_flops >= 0) || !isfinite(g.mxfp8_peak_flops) ||
        !(g.mxfp8_peak_flops >= 0))
        abort();
    char *json = vp_gpu_json(&g);
    if (!json)
        return 0;
    vp_status rc = vp_gpu_parse_json(json, strlen(json), &again, &err);
    free(json);
    if (rc != VP_OK || !near(again.fp8_peak_flops, g.fp8_peak_flops) ||
        !near(again.mxfp8_peak_flops, g.mxfp8_peak_flops))
        abort(); /* what it writes, it reads */
    vp_arch a;
    if (vp_arch_preset("gpt2-124m", &a, NULL) != VP_OK)
        abort();
    vp_workload t = vp_workload_default(&a);
    t.seq = 64;
    t.fp8 = g.mxfp8_peak_flops > 0 ? VP_FP8_MXFP8 : VP_FP8_TENSORWISE;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    err = (vp_error){0};
    if (vp_price_check(&su, &err) != VP_OK) {
        if (err.message[0] == '\0')
            abort();
        return 0;
    }
    double sec[4], lin[3];
    vp__piece_seconds(&su, VP_PRICE_LAYER, 0, sec, lin);
    for (int i = 0; i < 3; i++)
        if (!isfinite(sec[i]) || !(sec[i] >= 0) || !isfinite(lin[i]) || !(lin[i] >= 0))
            abort();
    return 0;
}
