/* The BLAS kernel of the commands that compute, and what they say of it (see cli.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* Set for the re-executed process: the kernel OpenBLAS picked by itself. */
#define REPLACED "VPIPE_BLAS_REPLACED"
/* "library" keeps OpenBLAS's own choice; "auto" (the default) lets vpipe replace a
 * generic one. */
#define MODE "VPIPE_BLAS_KERNEL"

void cli_blas_select(char **argv) {
    const char *mode = getenv(MODE);
    if (getenv("OPENBLAS_CORETYPE") || (mode && !strcmp(mode, "library")))
        return; /* the user's choice, or the one a first run of vpipe made */
    if (mode && strcmp(mode, "auto") != 0)
        fprintf(stderr, "vpipe: warning: %s=%s is neither auto nor library: taken as auto\n", MODE,
                mode);
    const char *own = vp_blas_corename();
    const char *better = vp_blas_better_kernel(own);
    if (!better)
        return;
    /* OpenBLAS fixed its kernel when it loaded: start again with the better one (before
     * any thread, file or MPI exists; the process keeps its pid, arguments and
     * environment, so a launcher such as mpirun sees the same process) */
    if (setenv("OPENBLAS_CORETYPE", better, 1) == 0 && setenv(REPLACED, own, 1) == 0) {
        fflush(NULL);
        execv("/proc/self/exe", argv);
    }
    int e = errno;
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(REPLACED);
    fprintf(stderr,
            "vpipe: warning: cannot start again with OpenBLAS's %s kernel instead of its generic "
            "%s (%s): running on %s\n",
            better, own, strerror(e), own);
}

/* Who chose the kernel running now: "vpipe", "OPENBLAS_CORETYPE" or "library"; *own
 * receives the library's own choice when vpipe replaced it (else NULL). */
static const char *chosen_by(const char **own) {
    *own = getenv(REPLACED);
    if (*own && getenv("OPENBLAS_CORETYPE"))
        return "vpipe";
    *own = NULL;
    return getenv("OPENBLAS_CORETYPE") ? "OPENBLAS_CORETYPE" : "library";
}

void cli_blas_describe(FILE *out) {
    const char *own, *by = chosen_by(&own), *kernel = vp_blas_corename();
    const char *env = getenv("OPENBLAS_CORETYPE");
    fprintf(out, "blas: %s; kernel %s, ", vp_blas_config(), kernel);
    if (own)
        fprintf(out,
                "chosen by vpipe: OpenBLAS picked the generic %s on this CPU (%s=library "
                "keeps it)\n",
                own, MODE);
    else if (!strcmp(by, "OPENBLAS_CORETYPE"))
        fprintf(out, "from OPENBLAS_CORETYPE=%s\n", env);
    else
        fprintf(out, "OpenBLAS's own choice\n");
}

json_t *cli_blas_json(void) {
    const char *own, *by = chosen_by(&own);
    json_t *o = json_pack("{s:s, s:s, s:s}", "library", vp_blas_config(), "kernel",
                          vp_blas_corename(), "chosen_by", by);
    if (o && own)
        json_object_set_new(o, "library_kernel", json_string(own));
    return o;
}
