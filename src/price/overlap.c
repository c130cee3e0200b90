/* The expert-parallel all-to-all hidden by overlapped pairs: DualPipe's F&B and Megatron-LM's
 * combined 1F1B (--overlap-moe-expert-parallel-comm, vp_workload.ep_overlap).
 *
 * The model. A pair runs the forward of one microbatch beside the backward of another, layer
 * by layer split into attention, dispatch, MLP and combine so that one microbatch's
 * all-to-alls run while the other computes (DeepSeek-V3's report, arXiv 2412.19437, §3.2.1
 * and its figure 4). The pair's compute C (both halves without their all-to-alls) and its
 * communication X (the forward's dispatch and combine, the backward's) then overlap; while
 * the communication runs it holds streaming multiprocessors the compute loses: DeepSeek-V3
 * "allocate[s] 20 out of the 132 SMs available in the H800 GPU" for it (§3.5.1), so compute
 * beside it goes at 112/132 of its speed. The pair lasts max(X, C + X (1 - 112/132))
 * (vp_cost_model.xf, xb, comm_rate; the simulator's F&B time): the communication is hidden
 * except for the compute it slows, or, when it outlasts the compute, all but the compute is
 * exposed. Everything else of a pass (TP collectives, pipeline sends, overheads) counts as
 * compute C. Without a pair (1F1B, interleaved, the zero-bubble families, and the warm-up
 * and cool-down of every schedule) a pass waits for its all-to-alls: f_ms and b_ms include
 * them. Measured costs are taken as they are (an F&B is its FB cost, or the sum).
 *
 * The combined 1F1B (vp__overlap_pair): a forward and a backward of another microbatch run
 * as one F&B pair, layer by layer (forward layer i beside the backward of the last layer not
 * yet run back), so its memory moves from the pair's start to its end (vp_cost_model
 * .fb_layered; DualPipe's pairs keep the table's accounting, forward before backward). 1F1B's order
 * is rebuilt for it (fuse_single: the pairs need a deeper warm-up, which the simulator's memory
 * then counts); in interleaved 1F1B each forward a device runs right before such a backward
 * (its steady state) is fused with it. Only those pair: schedules of whole backwards on one
 * stage per device or the loop placement (Megatron-LM's combined 1F1B runs without a pipeline
 * and with interleaving). Split backwards (B apart from W: the zero-bubble families), R passes,
 * the V and bidirectional placements and schedules that already pair (DualPipe, DualPipeV)
 * are left as they are: fusing their adjacent F and B without a warm-up built for it made
 * them wait on each other (zb-h1 about 40% slower), and the note says why nothing was hidden. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/internal.h"
#include "price/price_internal.h"

/* The share of compute speed beside the all-to-alls: 112 of the H800's 132 SMs (above). */
#define A2A_COMPUTE_RATE (112.0 / 132.0)

bool vp__overlap_any(const vp_price_layout *lay) {
    for (int st = 0; st < lay->S; st++)
        if (lay->cm->xf[st] > 0 || lay->cm->xb[st] > 0)
            return true;
    return false;
}

/* Whether lay's stages sit as DualPipe's (a V or both directions: stage s and S - 1 - s on
 * one device), whose pairs keep their own memory accounting (the table's p + 1). */
static bool dualpipe_shape(const vp_price_layout *lay) {
    bool paired = lay->S == 2 * lay->p;
    for (int st = 0; paired && st < lay->S; st++)
        paired = lay->stage[st].device == lay->stage[lay->S - 1 - st].device;
    return paired;
}

void vp__overlap_fill(const vp_price_setup *su, vp_price_layout *lay) {
    if (su->measured)
        return;
    vp_cost_model *cm = lay->cm;
    cm->comm_rate = A2A_COMPUTE_RATE;
    for (int st = 0; st < lay->S; st++) {
        cm->xf[st] = lay->stage[st].a2a_f_ms;
        cm->xb[st] = lay->stage[st].a2a_b_ms;
    }
    lay->ep_pairs = su->work->ep_overlap && vp__overlap_any(lay);
    cm->fb_layered = lay->ep_pairs && !dualpipe_shape(lay);
}

double vp__overlap_bound_rate(const vp_price_layout *lay) {
    if (!vp__overlap_any(lay))
        return 0;
    return dualpipe_shape(lay) || lay->ep_pairs ? lay->cm->comm_rate : 0;
}

long vp__overlap_pairs(const vp_schedule *s) {
    long n = 0;
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++)
            n += s->dev[d].ops[k].kind == VP_OP_FB;
    return n;
}

/* Pushes op onto device d of out, or, when fb_with is given, the F&B pair of op (a forward)
 * and *fb_with (a backward). */
static vp_status push(vp_schedule *out, int d, const vp_op *op, const vp_op *fb_with) {
    if (!fb_with)
        return vp_schedule_push(out, d, *op);
    vp_op fb = {.kind = VP_OP_FB,
                .bkind = fb_with->kind,
                .stage = op->stage,
                .mb = op->mb,
                .stage2 = fb_with->stage,
                .mb2 = fb_with->mb};
    return vp_schedule_push(out, d, fb);
}

/* Whether every op of s is an F or a BW, one stage per device (1F1B's, GPipe's). */
static bool single_fbw(const vp_schedule *s) {
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++)
            if (s->dev[d].ops[k].kind != VP_OP_F && s->dev[d].ops[k].kind != VP_OP_BW)
                return false;
    return s->placement == VP_PLACE_SINGLE;
}

/* The combined 1F1B of a one-stage-per-device schedule: device d runs a = 2(p - d - 1) + 1
 * forwards, then pairs (F of the next, BW of the oldest), then the last backwards. A pair
 * waits for its neighbours' pairs both ways, so two of them must be in flight between
 * neighbours (a grows by 2 per device, as DualPipe's warm-up does); the last device runs one
 * forward ahead (its backward needs its own forward's loss). With p = 1: F, then (F, B)
 * pairs, then B, Megatron-LM's combined 1F1B without a pipeline. */
static vp_status fuse_single(const vp_schedule *s, vp_schedule *out) {
    vp_status rc = VP_OK;
    for (int d = 0; rc == VP_OK && d < s->p; d++) {
        const vp_oplist *l = &s->dev[d];
        int nf = 0, nb = 0, a = 2 * (s->p - d - 1) + 1;
        const vp_op **f = vp__calloc((size_t)l->n + 1, sizeof *f);
        const vp_op **bws = vp__calloc((size_t)l->n + 1, sizeof *bws);
        if (!f || !bws) {
            free(f);
            free(bws);
            return VP_ENOMEM;
        }
        for (int k = 0; k < l->n; k++)
            if (l->ops[k].kind == VP_OP_F)
                f[nf++] = &l->ops[k];
            else
                bws[nb++] = &l->ops[k];
        a = a < nf ? a : nf;
        int i = 0, j = 0;
        for (; rc == VP_OK && i < a; i++)
            rc = push(out, d, f[i], NULL);
        for (; rc == VP_OK && i < nf && j < nb; i++, j++)
            rc = push(out, d, f[i], bws[j]);
        for (; rc == VP_OK && j < nb; j++)
            rc = push(out, d, bws[j], NULL);
        free(f);
        free(bws);
    }
    return rc;
}

/* Whether the combined 1F1B pairs s: whole backwards (no B, W or R passes), no pairs of its
 * own, one stage per device or the loop placement. */
static bool combinable(const vp_schedule *s) {
    if (s->placement != VP_PLACE_SINGLE && s->placement != VP_PLACE_LOOP)
        return false;
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++) {
            int kind = s->dev[d].ops[k].kind;
            if (kind == VP_OP_B || kind == VP_OP_W || kind == VP_OP_R || kind == VP_OP_FB)
                return false;
        }
    return true;
}

/* Every forward a device runs right before a backward of another microbatch, fused with it
 * (interleaved 1F1B's steady state; its warm-up keeps enough in flight). */
static vp_status fuse_adjacent(const vp_schedule *s, vp_schedule *out) {
    vp_status rc = VP_OK;
    for (int d = 0; rc == VP_OK && d < s->p; d++) {
        const vp_oplist *l = &s->dev[d];
        for (int k = 0; rc == VP_OK && k < l->n; k++) {
            const vp_op *op = &l->ops[k], *next = k + 1 < l->n ? &l->ops[k + 1] : NULL;
            bool pair = op->kind == VP_OP_F && next && next->kind == VP_OP_BW && next->mb != op->mb;
            rc = push(out, d, op, pair ? next : NULL);
            k += pair;
        }
    }
    return rc;
}

/* s with its forwards and backwards paired as the combined 1F1B runs them into *out. */
static vp_status fuse(const vp_schedule *s, vp_schedule **out, vp_error *err) {
    vp_status rc = vp_schedule_copy_shape(s, out, err);
    if (rc == VP_OK)
        rc = single_fbw(s) ? fuse_single(s, *out) : fuse_adjacent(s, *out);
    if (rc == VP_ENOMEM)
        return vp__fail(err, rc, "out of memory");
    return rc;
}

bool vp__overlap_fuses(const vp_price_layout *lay, const vp_schedule *s) {
    return lay->ep_pairs && combinable(s);
}

vp_status vp__overlap_pair(const vp_price_layout *lay, vp_schedule **s, vp_error *err) {
    if (!vp__overlap_fuses(lay, *s))
        return VP_OK;
    vp_schedule *fused = NULL;
    vp_status rc = fuse(*s, &fused, err);
    if (rc == VP_OK && vp_schedule_validate(fused, NULL) != VP_OK) {
        vp_schedule_free(fused); /* pairs that would wait on each other: left apart */
        return VP_OK;
    }
    if (rc != VP_OK) {
        vp_schedule_free(fused);
        return rc;
    }
    vp_schedule_free(*s);
    *s = fused;
    return VP_OK;
}

vp_status vp__overlap_hidden(const vp_cost_model *cm, const vp_schedule *s, vp_price_stage *stage,
                             vp_error *err) {
    double *seen = vp__calloc((size_t)s->S, sizeof *seen); /* microbatches through a stage */
    if (!seen)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    for (int st = 0; st < s->S; st++)
        stage[st].a2a_hidden_ms = 0;
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            if (op->kind != VP_OP_F && op->kind != VP_OP_FB)
                continue;
            seen[op->stage] += 1;
            double x = cm->xf[op->stage] + cm->xb[op->stage2];
            if (op->kind != VP_OP_FB || !(x > 0))
                continue;
            double sum = cm->f[op->stage] + vp_cost_model_pass_time(cm, op->bkind, op->stage2);
            double hidden = sum - vp_cost_model_op_time(cm, op); /* shared by their shares */
            stage[op->stage].a2a_hidden_ms += hidden * cm->xf[op->stage] / x;
            stage[op->stage2].a2a_hidden_ms += hidden * cm->xb[op->stage2] / x;
        }
    for (int st = 0; st < s->S; st++)
        stage[st].a2a_hidden_ms = seen[st] > 0 ? stage[st].a2a_hidden_ms / seen[st] : 0;
    free(seen);
    return VP_OK;
}

/* ---- the report --------------------------------------------------------------------- */

/* Per microbatch summed over r's stages: all-to-all and the hidden part of it. */
static void totals(const vp_price_result *r, double *a2a, double *hidden) {
    *a2a = *hidden = 0;
    for (int st = 0; st < r->S; st++) {
        *a2a += r->stage[st].a2a_f_ms + r->stage[st].a2a_b_ms;
        *hidden += r->stage[st].a2a_hidden_ms;
    }
}

/* One sentence on the overlap into buf; false when there is nothing to say. */
static bool note(const vp_price_result *r, char *buf, size_t size) {
    double a2a, hidden;
    totals(r, &a2a, &hidden);
    if (!(a2a > 0) && (r->pairs > 0 || r->ep_overlap))
        snprintf(buf, size,
                 "all-to-all overlap buys nothing: no all-to-all to hide (EP %d%s); the %ld "
                 "overlapped F&B pairs cost the sum of their halves",
                 r->ep, r->ep > 1 ? "" : ", or a dense model", r->pairs);
    else if (a2a > 0 && r->pairs == 0 && r->ep_overlap)
        snprintf(buf, size,
                 "all-to-all %.4g ms per microbatch (summed over the stages), all exposed: "
                 "--ep-overlap pairs the whole forwards and backwards of 1F1B, GPipe and "
                 "interleaved 1F1B (Megatron-LM's combined 1F1B), which %s does not run",
                 a2a, r->family);
    else if (a2a > 0 && r->pairs == 0)
        snprintf(buf, size,
                 "all-to-all %.4g ms per microbatch (summed over the stages), all exposed: no "
                 "overlapped F&B pairs (DualPipe's, or --ep-overlap's combined 1F1B) hide it",
                 a2a);
    else if (a2a > 0)
        snprintf(buf, size,
                 "all-to-all %.4g ms per microbatch (summed over the stages): %.4g ms hidden by "
                 "%ld overlapped F&B pairs, %.4g ms exposed",
                 a2a, hidden, r->pairs, a2a - hidden);
    else
        return false;
    return true;
}

struct json_t *vp__overlap_json(const vp_price_result *r) {
    double a2a, hidden;
    totals(r, &a2a, &hidden);
    char text[384] = "";
    note(r, text, sizeof text);
    json_t *o = json_object();
    json_object_set_new(o, "pairs", json_integer(r->pairs));
    json_object_set_new(o, "a2a_ms", json_real(a2a));
    json_object_set_new(o, "hidden_ms", json_real(hidden));
    json_object_set_new(o, "exposed_ms", json_real(a2a - hidden));
    json_object_set_new(o, "note", json_string(text));
    return o;
}

char *vp_price_overlap_text(const vp_price_result *r) {
    char text[384];
    if (!note(r, text, sizeof text))
        return NULL;
    vp__buf b = {0};
    vp__buf_printf(&b, "%s\n", text);
    double a2a, hidden;
    totals(r, &a2a, &hidden);
    if (a2a > 0 && r->pairs > 0) {
        vp__buf_printf(&b, "%-5s %6s %10s %10s %10s\n", "stage", "device", "a2a ms", "hidden ms",
                       "exposed ms");
        for (int st = 0; st < r->S; st++) {
            const vp_price_stage *g = &r->stage[st];
            double all = g->a2a_f_ms + g->a2a_b_ms;
            vp__buf_printf(&b, "%-5d %6d %10.4g %10.4g %10.4g\n", st, g->device, all,
                           g->a2a_hidden_ms, all - g->a2a_hidden_ms);
        }
    }
    return vp__buf_take(&b);
}
