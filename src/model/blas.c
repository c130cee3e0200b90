/* The BLAS behind the matrix products (OpenBLAS): its threads, its kernel, and the kernel
 * to run instead when it fell back to a generic one (vpipe/model.h). */
#include <cblas.h>
#include <ctype.h>
#include <string.h>

#include "model/kernels.h"
#include "vpipe/model.h"

void vp_blas_set_threads(int n) {
    openblas_set_num_threads(n);
}

const char *vp_blas_corename(void) {
    return openblas_get_corename();
}

const char *vp_blas_config(void) {
    return openblas_get_config();
}

/* Whether name equals lower (case-insensitive: OpenBLAS spells its cores "SkylakeX" in
 * OPENBLAS_CORETYPE and "skylakex" in some versions' corename). */
static bool same_name(const char *name, const char *lower) {
    for (; *name && *lower; name++, lower++)
        if (tolower((unsigned char)*name) != *lower)
            return false;
    return !*name && !*lower;
}

/* The kernels made for AVX2 or AVX-512, for which OpenBLAS's own choice stands. */
static const char *const fast[] = {"haswell",        "zen",      "skylakex", "cooperlake",
                                   "sapphirerapids", "excavator"};

const char *vp__blas_choose(const char *kernel, unsigned cpu) {
    for (size_t i = 0; kernel && i < sizeof fast / sizeof *fast; i++)
        if (same_name(kernel, fast[i]))
            return NULL;
    const unsigned avx512 =
        VP__CPU_AVX512F | VP__CPU_AVX512CD | VP__CPU_AVX512BW | VP__CPU_AVX512DQ | VP__CPU_AVX512VL;
    if ((cpu & avx512) == avx512)
        return cpu & VP__CPU_AVX512BF16 ? "Cooperlake" : "SkylakeX";
    if ((cpu & (VP__CPU_AVX2 | VP__CPU_FMA)) == (VP__CPU_AVX2 | VP__CPU_FMA))
        return "Haswell";
    return NULL;
}

unsigned vp__cpu_features(void) {
    unsigned f = 0;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    /* these say what the CPU has and the operating system enables (the AVX and AVX-512
     * register state in XCR0) */
    __builtin_cpu_init();
    f |= __builtin_cpu_supports("avx2") ? VP__CPU_AVX2 : 0;
    f |= __builtin_cpu_supports("fma") ? VP__CPU_FMA : 0;
    f |= __builtin_cpu_supports("avx512f") ? VP__CPU_AVX512F : 0;
    f |= __builtin_cpu_supports("avx512cd") ? VP__CPU_AVX512CD : 0;
    f |= __builtin_cpu_supports("avx512bw") ? VP__CPU_AVX512BW : 0;
    f |= __builtin_cpu_supports("avx512dq") ? VP__CPU_AVX512DQ : 0;
    f |= __builtin_cpu_supports("avx512vl") ? VP__CPU_AVX512VL : 0;
    f |= __builtin_cpu_supports("avx512bf16") ? VP__CPU_AVX512BF16 : 0;
#endif
    return f;
}

const char *vp_blas_better_kernel(const char *kernel) {
    return vp__blas_choose(kernel, vp__cpu_features());
}
