/* Matrix products: cblas_sgemm (OpenBLAS) and the naive reference it is tested against. */
#include <cblas.h>

#include "model/kernels.h"
#include "vpipe/model.h"

void vp__sgemm(bool naive, bool ta, bool tb, int M, int N, int K, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (naive) {
        vp__sgemm_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
                K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void vp__sgemm_naive(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < K; k++) {
                float a = ta ? A[(long)k * lda + i] : A[(long)i * lda + k];
                float b = tb ? B[(long)j * ldb + k] : B[(long)k * ldb + j];
                acc += (double)a * b;
            }
            float *c = &C[(long)i * ldc + j];
            *c = (float)(alpha * acc + (beta == 0.0f ? 0.0 : (double)beta * *c));
        }
    }
}
