/* The BLAS kernel vpipe runs instead of a generic fallback: only a kernel older than
 * AVX2 is replaced, only by one the CPU has (AVX-512 with BF16: Cooperlake; AVX-512:
 * SkylakeX; AVX2 and FMA: Haswell), and OpenBLAS's own fast kernels always stand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "model/kernels.h"
#include "vpipe/model.h"

static void test_choice(void **state) {
    (void)state;
    const unsigned avx2 = VP__CPU_AVX2 | VP__CPU_FMA;
    const unsigned avx512 = avx2 | VP__CPU_AVX512F | VP__CPU_AVX512CD | VP__CPU_AVX512BW |
                            VP__CPU_AVX512DQ | VP__CPU_AVX512VL;
    const struct {
        const char *kernel;
        unsigned cpu;
        const char *want; /* NULL: the library's choice stands */
    } cases[] = {
        {"Prescott", avx512 | VP__CPU_AVX512BF16, "Cooperlake"}, /* Sapphire Rapids */
        {"Prescott", avx512, "SkylakeX"},
        {"Prescott", avx2, "Haswell"},
        {"Sandybridge", avx512, "SkylakeX"},
        {"Nehalem", avx2, "Haswell"},
        {"Core2", avx2, "Haswell"},
        {"Prescott", VP__CPU_AVX2, NULL},                    /* no FMA: no Haswell kernel */
        {"Prescott", avx512 & ~VP__CPU_AVX512VL, "Haswell"}, /* an incomplete AVX-512 */
        {"Prescott", 0, NULL},                               /* nothing better it has */
        {"Haswell", avx512, NULL},                           /* the library's fast choices */
        {"Zen", avx512 | VP__CPU_AVX512BF16, NULL},
        {"SkylakeX", avx512, NULL},
        {"skylakex", avx512, NULL},
        {"Cooperlake", avx512 | VP__CPU_AVX512BF16, NULL},
        {"SapphireRapids", avx512 | VP__CPU_AVX512BF16, NULL},
        {NULL, avx2, "Haswell"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = vp__blas_choose(cases[i].kernel, cases[i].cpu);
        if ((got == NULL) != (cases[i].want == NULL) || (got && strcmp(got, cases[i].want) != 0))
            fail_msg("%s on cpu %#x: got %s, want %s", cases[i].kernel ? cases[i].kernel : "NULL",
                     cases[i].cpu, got ? got : "NULL", cases[i].want ? cases[i].want : "NULL");
    }
}

/* On this machine: the choice is one of those and never a kernel its CPU lacks; the
 * library's own kernel, when it is a fast one, stands. */
static void test_this_machine(void **state) {
    (void)state;
    unsigned cpu = vp__cpu_features();
    const char *got = vp_blas_better_kernel("Prescott");
    if (got && !strcmp(got, "Haswell"))
        assert_true((cpu & (VP__CPU_AVX2 | VP__CPU_FMA)) == (VP__CPU_AVX2 | VP__CPU_FMA));
    if (got && (!strcmp(got, "SkylakeX") || !strcmp(got, "Cooperlake")))
        assert_true(cpu & VP__CPU_AVX512F);
    if (got && !strcmp(got, "Cooperlake"))
        assert_true(cpu & VP__CPU_AVX512BF16);
    assert_null(vp_blas_better_kernel("Haswell"));
    assert_non_null(strstr(vp_blas_config(), "OpenBLAS"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choice),
        cmocka_unit_test(test_this_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
