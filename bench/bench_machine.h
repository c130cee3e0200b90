/* The machine line every benchmark prints first: CPU, online processors, OpenBLAS core
 * (and OPENBLAS_CORETYPE, which changes sgemm speed and bits), vpipe's version. */
#ifndef VPIPE_BENCH_MACHINE_H
#define VPIPE_BENCH_MACHINE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vpipe/model.h"

static inline void bench_print_machine(void) {
    char cpu[256] = "unknown", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            snprintf(cpu, sizeof cpu, "%s", colon + 2);
            cpu[strcspn(cpu, "\n")] = '\0';
            break;
        }
    }
    if (f)
        fclose(f);
    const char *env = getenv("OPENBLAS_CORETYPE");
    printf("machine: %s | %ld online processors | OpenBLAS core %s (OPENBLAS_CORETYPE=%s) | "
           "vpipe %s\n",
           cpu, sysconf(_SC_NPROCESSORS_ONLN), vp_blas_corename(), env ? env : "unset",
           VP_VERSION_STRING);
}

/* The line "load average: 1 5 15" (minutes) of /proc/loadavg, where it can be read: what
 * else ran beside a timed benchmark. */
static inline void bench_print_load(void) {
    double load[3];
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) == 3)
        printf("load average: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
    if (f)
        fclose(f);
}

#endif
