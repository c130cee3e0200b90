/* The calibration's speed: vpipe calibrate's fit (vp_calibrate_fit) on the first N runs of
 * the given RUNS.csv files (one accelerator), the median of R repeats.
 * usage: bench_calibrate N R FILE.csv...
 * Output: the machine line, then "calibrate <runs> <median s> <iterations> <loo mean>". */
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "bench_machine.h"
#include "vpipe/calibrate.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_calibrate N R FILE.csv...\n");
        return 2;
    }
    int n = atoi(argv[1]), reps = atoi(argv[2]);
    reps = reps < 1 ? 1 : reps > 100 ? 100 : reps;
    vp_run_set *set = NULL;
    vp_error err = {0};
    if (vp_calibrate_read_files((const char *const *)argv + 3, argc - 3, &set, &err) != VP_OK) {
        fprintf(stderr, "bench_calibrate: %s\n", err.message);
        return 1;
    }
    set->n = n > 0 && n < set->n ? n : set->n;
    bench_print_machine();
    double t[100];
    vp_calibration *c = NULL;
    for (int r = 0; r < reps; r++) {
        vp_calibrate_fit_free(c);
        c = NULL;
        vp_calibrate_request req = {.runs = set};
        double t0 = vp__now_ms();
        if (vp_calibrate_fit(&req, &c, &err) != VP_OK) {
            fprintf(stderr, "bench_calibrate: %s\n", err.message);
            vp_calibrate_free(set);
            return 1;
        }
        t[r] = (vp__now_ms() - t0) / 1e3;
    }
    printf("calibrate\t%d\t%.3f\t%d\t%.4f\n", set->n, vp__median(t, reps), c->iterations,
           c->loo_mean);
    vp_calibrate_fit_free(c);
    vp_calibrate_free(set);
    return 0;
}
