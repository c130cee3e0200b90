/* DualPipe and DualPipeV (DeepSeek; schedules.md §5): overlapped F&B units.
 *
 * Both run the same eight-step program on every device, over R "ranks" with rank index r
 * and n microbatches per direction ("phase"); phase 0 is the direction whose inputs reach
 * the device first:
 *   1. 2(R-r-1) forwards of phase 0
 *   2. r+1 pairs (F0, F1)
 *   3. R-r-1 triples (B1 with its W deferred, that W, F1)
 *   4. n-2R+r+1 main steps: F0&B1 overlapped (on the middle rank the first one runs as F0
 *      then B1), then F1&B0 overlapped
 *   5. R-r-1 pairs (B1, F1&B0)
 *   6. r+1 pairs (B1, B0); from the middle of the step on the backwards defer their W
 *   7. R-r-1 pairs (W, B0 with its W deferred)
 *   8. r+1 W
 * The backward half of an F&B and every backward without a deferred W is a full backward
 * (BW); deferred W's run in FIFO order.
 *
 * DualPipeV: V placement, R = p, r = device, n = m; phase 0 is chunk 0 (stage r), phase
 * 1 chunk 1 (stage 2p-1-r). Needs m >= 2p. Memory, in units (one microbatch's activation
 * of a device's whole slice, so a chunk holds 1/2): every device holds 2p chunk
 * activations (p units) in the steady state, and the simulator counts an F&B as
 * allocating its forward before its backward frees, so the peak is p + 1/2 units on every
 * device. The peak falls in the steady state, where every backward is a full BW, so the
 * figure is the same under release-at-W and the ZB split (zb:R, any R).
 *
 * DualPipe: bidirectional placement (two model copies: copy A is stages 0..p-1 with stage
 * r on device r, copy B is stages p..2p-1 with stage p+k on device p-1-k); microbatches
 * 0..m/2-1 enter copy A at device 0, m/2..m-1 enter copy B at device p-1. R = p/2 and r =
 * min(d, p-1-d); phase 0 is copy A on the first half of the devices and copy B on the
 * second. Needs p even and m even with m >= 2p. Every stage is a whole slice (1 unit per
 * activation); the peak is p + 1 units on every device (again under either memory
 * model), and every device keeps two parameter copies (vp_schedule_param_copies).
 */
#include <stdlib.h>

#include "families/families_internal.h"

/* One device's program state: the stage and microbatch numbering of each phase, the
 * counters, and the FIFO of backwards whose W is deferred. */
typedef struct program {
    vp_schedule *s;
    int d;
    int stage[2];   /* stage of each phase on this device */
    int mb_base[2]; /* global microbatch of each phase's first local microbatch */
    int next_f[2], next_b[2];
    int *wq; /* [2 * n] (stage, mb) pairs */
    int wq_head, wq_tail;
    vp_status rc;
} program;

static void emit(program *g, vp_op op) {
    if (g->rc == VP_OK)
        g->rc = vp_schedule_push(g->s, g->d, op);
}

static void fwd(program *g, int phase) {
    vp_op op = {
        .kind = VP_OP_F, .stage = g->stage[phase], .mb = g->mb_base[phase] + g->next_f[phase]++};
    emit(g, op);
}

/* Backward of phase; zb defers its W. */
static void bwd(program *g, int phase, int zb) {
    vp_op op = {.kind = zb ? VP_OP_B : VP_OP_BW,
                .stage = g->stage[phase],
                .mb = g->mb_base[phase] + g->next_b[phase]++};
    if (zb) {
        g->wq[2 * g->wq_tail] = op.stage;
        g->wq[2 * g->wq_tail + 1] = op.mb;
        g->wq_tail++;
    }
    emit(g, op);
}

static void weight(program *g) {
    vp_op op = {.kind = VP_OP_W, .stage = g->wq[2 * g->wq_head], .mb = g->wq[2 * g->wq_head + 1]};
    g->wq_head++;
    emit(g, op);
}

/* Forward of fphase overlapped with the full backward of bphase. */
static void fwd_bwd(program *g, int fphase, int bphase) {
    vp_op op = {.kind = VP_OP_FB,
                .bkind = VP_OP_BW,
                .stage = g->stage[fphase],
                .mb = g->mb_base[fphase] + g->next_f[fphase]++,
                .stage2 = g->stage[bphase],
                .mb2 = g->mb_base[bphase] + g->next_b[bphase]++};
    emit(g, op);
}

/* The eight steps of the file comment for rank r of R, n microbatches per phase. */
static void run_program(program *g, int R, int r, int n) {
    int last = r == R - 1;
    for (int i = 0; i < 2 * (R - r - 1); i++)
        fwd(g, 0);
    for (int i = 0; i < r + 1; i++) {
        fwd(g, 0);
        fwd(g, 1);
    }
    for (int i = 0; i < R - r - 1; i++) {
        bwd(g, 1, 1);
        weight(g);
        fwd(g, 1);
    }
    for (int i = 0; i < n - 2 * R + r + 1; i++) {
        if (i == 0 && last) {
            fwd(g, 0);
            bwd(g, 1, 0);
        } else {
            fwd_bwd(g, 0, 1);
        }
        fwd_bwd(g, 1, 0);
    }
    for (int i = 0; i < R - r - 1; i++) {
        bwd(g, 1, 0);
        fwd_bwd(g, 1, 0);
    }
    int zb = 0;
    for (int i = 0; i < r + 1; i++) {
        if (i == (r + 1) / 2 && r % 2 == 1)
            zb = 1;
        bwd(g, 1, zb);
        if (i == (r + 1) / 2 && r % 2 == 0)
            zb = 1;
        bwd(g, 0, zb);
    }
    for (int i = 0; i < R - r - 1; i++) {
        weight(g);
        bwd(g, 0, 1);
    }
    for (int i = 0; i < r + 1; i++)
        weight(g);
}

/* Builds every device's program. bidir: DualPipe, else DualPipeV. */
static vp_status build(const char *family, const vp_spec *spec, int bidir, vp_schedule **out,
                       vp_error *err) {
    int p = spec->p, m = spec->m;
    vp_schedule *s = NULL;
    vp_shape shape = {.p = p, .S = 2 * p, .m = m, .placement = bidir ? VP_PLACE_BIDIR : VP_PLACE_V};
    vp_status rc = vp_schedule_new(family, shape, &s, err);
    if (rc != VP_OK)
        return rc;
    int n = bidir ? m / 2 : m;
    program g = {.s = s, .rc = VP_OK};
    g.wq = vp__calloc(2 * (size_t)n + 2, sizeof *g.wq);
    if (!g.wq)
        g.rc = VP_ENOMEM;
    for (int j = 0; bidir && j < m; j++)
        s->mb_first[j] = j < n ? 0 : p;
    for (int d = 0; d < p && g.rc == VP_OK; d++) {
        g.d = d;
        g.next_f[0] = g.next_f[1] = g.next_b[0] = g.next_b[1] = 0;
        g.wq_head = g.wq_tail = 0;
        int R = p, r = d, second = 0;
        if (bidir) {
            R = p / 2;
            second = d >= R;
            r = second ? p - 1 - d : d;
        }
        /* stage r of copy A / chunk 0 and stage 2p-1-d of copy B / chunk 1 */
        int a = d, b = 2 * p - 1 - d;
        g.stage[0] = second ? b : a;
        g.stage[1] = second ? a : b;
        g.mb_base[0] = bidir && second ? n : 0;
        g.mb_base[1] = bidir && !second ? n : 0;
        run_program(&g, R, r, n);
    }
    free(g.wq);
    if (g.rc != VP_OK) {
        vp_schedule_free(s);
        return vp__fail(err, g.rc, "out of memory");
    }
    *out = s;
    return VP_OK;
}

vp_status vp__build_dualpipev(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    vp_status rc = vp__check_pm("dualpipev", spec, err);
    if (rc != VP_OK)
        return rc;
    if (spec->p < 2)
        return vp__fail(err, VP_EINVAL,
                        "dualpipev needs p >= 2 (a V folds the model over at least two "
                        "devices; got p=%d)",
                        spec->p);
    if (spec->m < 2 * spec->p)
        return vp__fail(err, VP_EINVAL,
                        "dualpipev needs m >= 2p = %d microbatches to fill its warm-up (got "
                        "m=%d)",
                        2 * spec->p, spec->m);
    return build("dualpipev", spec, 0, out, err);
}

vp_status vp__build_dualpipe(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    vp_status rc = vp__check_pm("dualpipe", spec, err);
    if (rc != VP_OK)
        return rc;
    int p = spec->p, m = spec->m;
    if (p < 2 || p % 2 != 0)
        return vp__fail(err, VP_EINVAL,
                        "dualpipe needs an even p >= 2 (its two directions meet in the middle "
                        "of the pipeline; got p=%d)",
                        p);
    if (m % 2 != 0)
        return vp__fail(err, VP_EINVAL,
                        "dualpipe needs an even m (half of the microbatches run in each "
                        "direction; got m=%d)",
                        m);
    if (m < 2 * p)
        return vp__fail(err, VP_EINVAL,
                        "dualpipe needs m >= 2p = %d microbatches to fill its warm-up (got "
                        "m=%d)",
                        2 * p, m);
    return build("dualpipe", spec, 1, out, err);
}
