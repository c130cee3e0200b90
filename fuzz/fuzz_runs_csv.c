/* Fuzz target for the RUNS.csv reader (vp_calibrate_read): any input is either rejected
 * with VP_EPARSE or VP_ELIMIT and a message naming a line, or read into runs whose every
 * field is in its documented range (degrees >= 1, "*" only where allowed, a measured time
 * on every run vpipe can express, flags 0/1). Nothing is resolved or priced. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vpipe/calibrate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int in(int v, int lo, int hi) {
    return v >= lo && v <= hi;
}

static void check_run(const vp_run *r) {
    if (!in(r->tp, 1, 4096) || !in(r->pp, 1, 4096) || !in(r->dp, 1, 1 << 20) ||
        !in(r->cp, 1, 4096) || !in(r->ep, 1, 4096) || !in(r->gbs, 1, 1 << 24) ||
        !in(r->seq, 0, 1 << 30) || !in(r->zero, 0, 3) || r->line < 1 || !r->model[0])
        abort();
    if ((r->vp != VP_RUN_ANY && !in(r->vp, 1, 1024)) ||
        (r->mbs != VP_RUN_ANY && !in(r->mbs, 1, 65536)) ||
        (r->recompute != VP_RUN_ANY && !in(r->recompute, 0, 2)))
        abort();
    if (!r->why_not[0] && !(r->step_time_s > 0 || r->tokens_per_s_per_gpu > 0))
        abort();
    if (r->step_time_s < 0 || r->tokens_per_s_per_gpu < 0 || r->peak_mem_gib < 0 ||
        !(r->dp_overlap == VP_OVERLAP_MODELLED || (r->dp_overlap >= 0 && r->dp_overlap <= 1)))
        abort();
    if (memchr(r->model, '\0', sizeof r->model) == NULL || strlen(r->schedule) >= 32)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vp_run_set *set = NULL;
    vp_error err = {0};
    vp_status rc = vp_calibrate_read((const char *)data, size, "fuzz.csv", &set, &err);
    if (rc != VP_OK) {
        if ((rc != VP_EPARSE && rc != VP_ELIMIT && rc != VP_ENOMEM) || !err.message[0] || set)
            abort();
        return 0;
    }
    if (!set || set->n < 1)
        abort();
    for (int i = 0; i < set->n; i++)
        check_run(&set->runs[i]);
    vp_calibrate_free(set);
    return 0;
}
