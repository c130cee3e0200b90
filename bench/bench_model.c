/* Model throughput: GFLOP/s of one transformer layer's F, B and W and of a whole
 * training step, beside plain cblas_sgemm on a layer-sized shape in the same run.
 * usage: bench_model [width heads seq microbatch layers]   (768 12 256 4 4)
 * Counts the FLOPs the kernels execute (attention over full T x T score matrices). Runs
 * on the BLAS kernel `vpipe train` would (cli_blas_select: a generic fallback replaced,
 * OPENBLAS_CORETYPE and VPIPE_BLAS_KERNEL=library respected) and prints it, and the
 * digest of the parameters after the steps (equal digests: the same bits). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "model/kernels.h"
#include "vpipe/model.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void cpu_name(char *out, size_t n) {
    snprintf(out, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            snprintf(out, n, "%s", colon + 2);
            out[strcspn(out, "\n")] = '\0';
            break;
        }
    }
    if (f)
        fclose(f);
}

static void die(const char *what, const vp_error *err) {
    fprintf(stderr, "bench_model: %s: %s\n", what, err->message);
    exit(1);
}

int main(int argc, char **argv) {
    cli_blas_select(argv); /* may start again on a better kernel */
    vp_model_config cfg = {
        .n_layer = 4, .width = 768, .n_head = 12, .seq_len = 256, .microbatch = 4, .vocab = 256};
    if (argc == 6) {
        cfg.width = atoi(argv[1]);
        cfg.n_head = atoi(argv[2]);
        cfg.seq_len = atoi(argv[3]);
        cfg.microbatch = atoi(argv[4]);
        cfg.n_layer = atoi(argv[5]);
    }
    vp_error err = {0};
    if (vp_model_config_check(&cfg, &err) || cfg.n_layer < 3)
        die("config (layers >= 3)", &err);
    vp_blas_set_threads(1);
    char cpu[128];
    cpu_name(cpu, sizeof cpu);
    const char *env = getenv("OPENBLAS_CORETYPE");
    printf("machine: %s | OpenBLAS core %s (OPENBLAS_CORETYPE=%s) | 1 thread\n", cpu,
           vp_blas_corename(), env ? env : "unset");
    double C = cfg.width, T = cfg.seq_len, N = (double)cfg.microbatch * cfg.seq_len;
    cli_blas_describe(stdout);
    printf("model: width %d, heads %d, seq %d, microbatch %d, layers %d\n\n", cfg.width, cfg.n_head,
           cfg.seq_len, cfg.microbatch, cfg.n_layer);

    /* plain sgemm on the fc shape: [N,C] @ [C,4C] */
    int n = (int)N, c = cfg.width;
    float *a = calloc((size_t)n * c, 4), *b = calloc((size_t)c * 4 * c, 4),
          *o = calloc((size_t)n * 4 * c, 4);
    for (long i = 0; i < (long)n * c; i++)
        a[i] = (float)(i % 7) * 0.01f;
    for (long i = 0; i < (long)c * 4 * c; i++)
        b[i] = (float)(i % 5) * 0.01f;
    vp__sgemm(false, false, true, n, 4 * c, c, 1.0f, a, c, b, c, 0.0f, o, 4 * c); /* warm up */
    int reps = 5;
    double t0 = now_s();
    for (int r = 0; r < reps; r++)
        vp__sgemm(false, false, true, n, 4 * c, c, 1.0f, a, c, b, c, 0.0f, o, 4 * c);
    double sgemm_gf = reps * 2.0 * N * C * 4 * C / (now_s() - t0) / 1e9;
    printf("%-28s %8.1f GFLOP/s   ([%d,%d] x [%d,%d])\n", "cblas_sgemm", sgemm_gf, n, c, c, 4 * c);
    free(a);
    free(b);
    free(o);

    /* one layer: a middle stage [1, 2) */
    vp_mem *mem = vp_mem_new();
    vp_stage *st = NULL;
    if (vp_stage_new(&cfg, (vp_stage_range){1, 2, false, false, 0, 0},
                     &(vp_stage_options){.n_slots = 1, .seed = 1}, mem, &st, &err))
        die("stage", &err);
    vp_stage_sizes sz;
    vp_stage_sizes_of(&cfg, (vp_stage_range){1, 2, false, false, 0, 0}, &sz, &err);
    double flops_f = 24 * N * C * C + 4 * N * T * C, flops_b = 24 * N * C * C + 8 * N * T * C,
           flops_w = 24 * N * C * C;
    double tf = 0, tb = 0, tw = 0;
    int layer_reps = 4;
    for (int r = 0; r <= layer_reps; r++) { /* the first round warms up */
        float *in = malloc(sz.io_bytes), *dout = malloc(sz.io_bytes), *out = NULL, *din = NULL;
        for (size_t i = 0; i < sz.io_bytes / 4; i++) {
            in[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
            dout[i] = (float)((i * 40503u) % 1000) * 1e-6f;
        }
        double s0 = now_s();
        if (vp_stage_forward(st, 0, &(vp_stage_io){.in = in, .out = &out}, &err))
            die("forward", &err);
        double s1 = now_s();
        if (vp_stage_backward_input(st, 0, dout, 1.0f, &din, &err))
            die("backward_input", &err);
        double s2 = now_s();
        if (vp_stage_backward_weight(st, 0, &err))
            die("backward_weight", &err);
        double s3 = now_s();
        if (r > 0) {
            tf += s1 - s0;
            tb += s2 - s1;
            tw += s3 - s2;
        }
        vp_stage_buffer_free(out);
        vp_stage_buffer_free(din);
    }
    vp_stage_free(st);
    tf /= layer_reps;
    tb /= layer_reps;
    tw /= layer_reps;
    double layer_gf = (flops_f + flops_b + flops_w) / (tf + tb + tw) / 1e9;
    printf("%-28s %8.1f GFLOP/s   %7.1f ms\n", "layer F", flops_f / tf / 1e9, tf * 1e3);
    printf("%-28s %8.1f GFLOP/s   %7.1f ms\n", "layer B", flops_b / tb / 1e9, tb * 1e3);
    printf("%-28s %8.1f GFLOP/s   %7.1f ms\n", "layer W", flops_w / tw / 1e9, tw * 1e3);
    printf("%-28s %8.1f GFLOP/s   %7.1f ms   = %.0f%% of sgemm\n", "layer F+B+W", layer_gf,
           (tf + tb + tw) * 1e3, 100 * layer_gf / sgemm_gf);

    /* a whole training step: all layers, embeddings, head, loss, AdamW */
    if (vp_stage_new(&cfg, (vp_stage_range){0, cfg.n_layer, true, true, 0, 0},
                     &(vp_stage_options){.n_slots = 1, .seed = 1}, mem, &st, &err))
        die("stage", &err);
    uint8_t *tok = malloc((size_t)n), *tgt = malloc((size_t)n);
    for (int i = 0; i < n; i++) {
        tok[i] = (uint8_t)(i * 31 % 251);
        tgt[i] = (uint8_t)(i * 17 % 253);
    }
    vp_adamw opt = {0.9f, 0.95f, 1e-8f, 0.1f};
    double step_flops = cfg.n_layer * (flops_f + flops_b + flops_w) + 3 * 2 * N * C * cfg.vocab;
    double ts = 0;
    int step_reps = 2;
    for (int r = 0; r <= step_reps; r++) {
        double loss, s0 = now_s();
        vp_stage_zero_grad(st);
        if (vp_stage_forward(st, 0, &(vp_stage_io){.tokens = tok, .targets = tgt, .loss = &loss},
                             &err) ||
            vp_stage_backward_input(st, 0, NULL, 1.0f, NULL, &err) ||
            vp_stage_backward_weight(st, 0, &err))
            die("step", &err);
        vp_stage_adamw(st, &opt, r + 1, 1e-4f, 1.0f);
        if (r > 0)
            ts += now_s() - s0;
    }
    ts /= step_reps;
    double step_gf = step_flops / ts / 1e9;
    printf("%-28s %8.1f GFLOP/s   %7.1f ms   = %.0f%% of sgemm, %.0f tokens/s\n", "training step",
           step_gf, ts * 1e3, 100 * step_gf / sgemm_gf, N / ts);
    printf("\npeak activation bytes: %zu | param digest %016llx\n", vp_mem_peak(mem),
           (unsigned long long)vp_stage_digest(st, VP_DIGEST_INIT));
    free(tok);
    free(tgt);
    vp_stage_free(st);
    vp_mem_free(mem);
    return 0;
}
