/* A stand-in for a machine on which OpenBLAS falls back to its generic kernel (OpenBLAS
 * 0.3.21 on Sapphire Rapids answers "Prescott"): preloaded (LD_PRELOAD) into vpipe, it
 * answers openblas_get_corename() with "Prescott" while OPENBLAS_CORETYPE is unset, and
 * forwards to the real OpenBLAS once it is set. Used by tests/cli/blas.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

char *openblas_get_corename(void);

char *openblas_get_corename(void) {
    static char generic[] = "Prescott";
    if (!getenv("OPENBLAS_CORETYPE"))
        return generic;
    char *(*real)(void);
    *(void **)&real = dlsym(RTLD_NEXT, "openblas_get_corename");
    return real ? real() : generic;
}
