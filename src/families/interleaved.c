/* Interleaved 1F1B (Megatron-LM's virtual pipeline): S = v*p stages on a loop placement,
 * stage c*p + i on device i (chunk c). Microbatches go in rounds of g: a device runs the
 * forwards of a round on chunk 0, then on chunk 1, ...; backwards take the chunks in
 * reverse. Device i warms up with (v-1)g + 2(p-1-i) forwards, then alternates one
 * forward and one full backward. As in PyTorch's Interleaved1F1B, there are
 * max(1, m div p) rounds and g = m / rounds, so m must split into equal rounds (any
 * m < 2p works; otherwise m a multiple of m div p). For m >= p this is Megatron-LM's
 * interleaved order op for op with its group size (microbatch_group_size_per_vp_stage)
 * set to g; Megatron's default, g = p, when p divides m.
 * Bubble (p-1)(F+B+W)/v when g = p; peak ((v-1)g + 2(p-1-i) + 1)/v units on device i,
 * capped by m. */
#include "families/families_internal.h"

int vp_interleaved_group(int p, int m) {
    return m / (m / p > 1 ? m / p : 1);
}

/* The k-th (chunk, microbatch) of a device's forward order (reverse_chunks = 0) or
 * backward order (reverse_chunks = 1), rounds of g microbatches. */
static void unit_at(int k, int g, int v, int reverse_chunks, int *chunk, int *mb) {
    int round = k / (g * v), within = k % (g * v);
    int c = within / g;
    *chunk = reverse_chunks ? v - 1 - c : c;
    *mb = round * g + within % g;
}

vp_status vp__build_interleaved(const vp_spec *spec, vp_schedule **out, vp_error *err) {
    vp_status rc = vp__check_pm("interleaved", spec, err);
    if (rc != VP_OK)
        return rc;
    int p = spec->p, m = spec->m, v = spec->v ? spec->v : 2;
    if (v < 1 || v > 64)
        return vp__fail(err, VP_EINVAL, "interleaved needs 1 <= v <= 64 chunks (got %d)", v);
    int rounds = m / p > 1 ? m / p : 1, g = vp_interleaved_group(p, m);
    if (m % rounds != 0)
        return vp__fail(err, VP_EINVAL,
                        "interleaved splits m into max(1, m div p) = %d equal rounds: m=%d is not "
                        "a multiple of %d (try m=%d or m=%d)",
                        rounds, m, rounds, m / rounds * rounds, (m / rounds + 1) * rounds);
    vp_schedule *s = NULL;
    vp_shape shape = {.p = p, .S = v * p, .m = m, .placement = VP_PLACE_LOOP};
    rc = vp_schedule_new("interleaved", shape, &s, err);
    if (rc != VP_OK)
        return rc;
    int total = m * v;
    for (int d = 0; d < p && rc == VP_OK; d++) {
        int warmup = (v - 1) * g + 2 * (p - 1 - d);
        if (warmup > total)
            warmup = total;
        int nf = 0, nb = 0, chunk, mb;
        while (nf < warmup && rc == VP_OK) {
            unit_at(nf++, g, v, 0, &chunk, &mb);
            rc = vp_schedule_push_pass(s, d, VP_OP_F, chunk * p + d, mb);
        }
        while (nf < total && rc == VP_OK) {
            unit_at(nf++, g, v, 0, &chunk, &mb);
            rc = vp_schedule_push_pass(s, d, VP_OP_F, chunk * p + d, mb);
            unit_at(nb++, g, v, 1, &chunk, &mb);
            if (rc == VP_OK)
                rc = vp_schedule_push_pass(s, d, VP_OP_BW, chunk * p + d, mb);
        }
        while (nb < total && rc == VP_OK) {
            unit_at(nb++, g, v, 1, &chunk, &mb);
            rc = vp_schedule_push_pass(s, d, VP_OP_BW, chunk * p + d, mb);
        }
    }
    if (rc != VP_OK) {
        vp_schedule_free(s);
        return vp__fail(err, rc, "out of memory");
    }
    *out = s;
    return VP_OK;
}
