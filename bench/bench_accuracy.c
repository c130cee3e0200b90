/* The accuracy report's data: every run of the given RUNS.csv files (the published runs of
 * data/anchors/) priced with the default presets, as one JSON object (vp_calibrate_
 * accuracy_json) on stdout; bench/report.py turns it into docs/results.md's tables.
 * usage: bench_accuracy FILE.csv...   (the time to price every row is in "elapsed_s") */
#include <stdio.h>
#include <stdlib.h>

#include "vpipe/calibrate.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_accuracy FILE.csv...\n");
        return 2;
    }
    vp_run_set *set = NULL;
    vp_accuracy *acc = NULL;
    vp_error err = {0};
    if (vp_calibrate_read_files((const char *const *)argv + 1, argc - 1, &set, &err) != VP_OK ||
        vp_calibrate_accuracy(set, &acc, &err) != VP_OK) {
        fprintf(stderr, "bench_accuracy: %s\n", err.message);
        vp_calibrate_free(set);
        return 1;
    }
    char *json = vp_calibrate_accuracy_json(acc, set);
    int rc = json ? (puts(json) < 0) : 1;
    free(json);
    vp_calibrate_accuracy_free(acc);
    vp_calibrate_free(set);
    return rc;
}
