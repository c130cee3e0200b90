/* The neutral timeline every renderer reads, and the titles they share. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "render/render_internal.h"

vp_status vp_timeline_new(const char *family, int p, int S, int m, vp_timeline **out,
                          vp_error *err) {
    *out = NULL;
    if (p < 1 || S < 1 || m < 0)
        return vp__fail(err, VP_EINVAL, "timeline needs p, S >= 1 and m >= 0 (p=%d, S=%d, m=%d)", p,
                        S, m);
    vp_timeline *tl = vp__calloc(1, sizeof *tl);
    if (!tl)
        return vp__fail(err, VP_ENOMEM, "timeline: out of memory");
    snprintf(tl->family, sizeof tl->family, "%s", family ? family : "custom");
    snprintf(tl->mem_unit, sizeof tl->mem_unit, "units");
    tl->p = p;
    tl->S = S;
    tl->m = m;
    tl->trace_us = 1000.0;
    tl->stage_chunk = vp__calloc((size_t)S, sizeof *tl->stage_chunk);
    tl->dev = vp__calloc((size_t)p, sizeof *tl->dev);
    if (!tl->stage_chunk || !tl->dev) {
        vp_timeline_free(tl);
        return vp__fail(err, VP_ENOMEM, "timeline: out of memory");
    }
    *out = tl;
    return VP_OK;
}

void vp_timeline_free(vp_timeline *tl) {
    if (!tl)
        return;
    for (int d = 0; d < tl->p; d++) {
        if (tl->dev)
            free(tl->dev[d].slices);
        if (tl->copy)
            free(tl->copy[d].slices);
    }
    free(tl->dev);
    free(tl->copy);
    free(tl->host_peak);
    free(tl->stage_chunk);
    free(tl);
}

/* Adds slice to tracks[d] after checking d and its times: at the end, or with sorted in
 * its place by start time (after the slices that start no later). */
static vp_status add_slice(vp_track *tracks, int d, vp_slice slice, bool sorted, vp_error *err) {
    if (!(slice.end >= slice.start) || !isfinite(slice.start) || !isfinite(slice.end))
        return vp__fail(err, VP_EINVAL,
                        "timeline: device %d: slice ends (%g) before it starts (%g)", d, slice.end,
                        slice.start);
    vp_track *t = &tracks[d];
    if (vp__grow((void **)&t->slices, &t->cap, t->n + 1, sizeof *t->slices))
        return vp__fail(err, VP_ENOMEM, "timeline: out of memory");
    int at = t->n++;
    for (; sorted && at > 0 && t->slices[at - 1].start > slice.start; at--)
        t->slices[at] = t->slices[at - 1];
    t->slices[at] = slice;
    return VP_OK;
}

vp_status vp_timeline_add(vp_timeline *tl, int d, vp_slice slice, vp_error *err) {
    if (!tl || d < 0 || d >= tl->p)
        return vp__fail(err, VP_EINVAL, "timeline: no device %d", d);
    return add_slice(tl->dev, d, slice, false, err);
}

vp_status vp_timeline_add_copy(vp_timeline *tl, int d, vp_slice slice, vp_error *err) {
    if (!tl || d < 0 || d >= tl->p)
        return vp__fail(err, VP_EINVAL, "timeline: no device %d", d);
    if (slice.op.kind != VP_OP_O && slice.op.kind != VP_OP_L)
        return vp__fail(err, VP_EINVAL, "timeline: a copy is an O or an L, not %s",
                        vp_op_kind_name((vp_op_kind)slice.op.kind));
    if (!tl->copy && !(tl->copy = vp__calloc((size_t)tl->p, sizeof *tl->copy)))
        return vp__fail(err, VP_ENOMEM, "timeline: out of memory");
    return add_slice(tl->copy, d, slice, true, err);
}

vp_status vp_timeline_set_host_peak(vp_timeline *tl, const double *peak, vp_error *err) {
    if (!tl->host_peak && !(tl->host_peak = vp__calloc((size_t)tl->p, sizeof *tl->host_peak)))
        return vp__fail(err, VP_ENOMEM, "timeline: out of memory");
    memcpy(tl->host_peak, peak, (size_t)tl->p * sizeof *peak);
    return VP_OK;
}

/* Adds the copies of device d of s as simulated by sim. */
static vp_status add_copies(vp_timeline *tl, const vp_schedule *s, const vp_sim *sim, int d,
                            vp_error *err) {
    for (int i = 0; i < s->dev[d].n; i++) {
        const vp_op *op = &s->dev[d].ops[i];
        if (op->kind != VP_OP_O && op->kind != VP_OP_L)
            continue;
        vp_slice sl = {*op, sim->copy_start[d][i], sim->copy_end[d][i], 0.0};
        vp_status st = vp_timeline_add_copy(tl, d, sl, err);
        if (st)
            return st;
    }
    return VP_OK;
}

vp_status vp_timeline_from_sim(const vp_schedule *s, const vp_sim *sim, vp_timeline **out,
                               vp_error *err) {
    *out = NULL;
    if (!s || !sim || sim->p != s->p)
        return vp__fail(err, VP_EINVAL, "timeline: the simulation does not belong to the schedule");
    vp_timeline *tl = NULL;
    vp_status rc = vp_timeline_new(s->family, s->p, s->S, s->m, &tl, err);
    if (rc != VP_OK)
        return rc;
    memcpy(tl->stage_chunk, s->stage_chunk, (size_t)s->S * sizeof *tl->stage_chunk);
    tl->has_mem = sim->mem_after != NULL;
    for (int d = 0; rc == VP_OK && d < s->p; d++) {
        for (int i = 0; rc == VP_OK && i < s->dev[d].n; i++) {
            vp_slice sl = {s->dev[d].ops[i], sim->start[d][i], sim->end[d][i],
                           tl->has_mem ? sim->mem_after[d][i] : 0.0};
            rc = vp_timeline_add(tl, d, sl, err);
        }
        if (rc == VP_OK && sim->copy_start)
            rc = add_copies(tl, s, sim, d, err);
    }
    if (rc == VP_OK && sim->host_peak)
        rc = vp_timeline_set_host_peak(tl, sim->host_peak, err);
    if (rc != VP_OK) {
        vp_timeline_free(tl);
        return rc;
    }
    *out = tl;
    return VP_OK;
}

void vp_timeline_stats_get(const vp_timeline *tl, vp_timeline_stats *st) {
    memset(st, 0, sizeof *st);
    double t0 = INFINITY, t1 = -INFINITY, busy = 0, span_max = 0;
    for (int d = 0; d < tl->p; d++) {
        const vp_track *t = &tl->dev[d];
        if (t->n == 0)
            continue;
        double first = t->slices[0].start, last = t->slices[0].end;
        for (int i = 0; i < t->n; i++) {
            const vp_slice *sl = &t->slices[i];
            first = fmin(first, sl->start);
            last = fmax(last, sl->end);
            busy += sl->end - sl->start;
            if (tl->has_mem)
                st->peak_max = fmax(st->peak_max, sl->mem);
        }
        t0 = fmin(t0, first);
        t1 = fmax(t1, last);
        span_max = fmax(span_max, last - first);
    }
    for (int s = 0; s < tl->S; s++)
        if (tl->stage_chunk[s] + 1 > st->chunks)
            st->chunks = tl->stage_chunk[s] + 1;
    if (t1 < t0)
        return; /* no slices at all */
    st->t0 = t0;
    st->makespan = t1 - t0;
    double mean_busy = busy / tl->p;
    st->bubble = span_max > 0 ? 1.0 - mean_busy / span_max : 0.0;
    st->bubble_makespan = st->makespan > 0 ? 1.0 - mean_busy / st->makespan : 0.0;
}

int vp__render_chunk(const vp_timeline *tl, int kind, int stage) {
    return !vp_op_kind_is_vocab(kind) && stage >= 0 && stage < tl->S ? tl->stage_chunk[stage] : 0;
}

/* snprintf that appends at *pos and never runs past size. */
static void append(char *buf, size_t size, size_t *pos, const char *fmt, ...) VP_PRINTF(4, 5);
static void append(char *buf, size_t size, size_t *pos, const char *fmt, ...) {
    if (*pos >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *pos, size - *pos, fmt, ap);
    va_end(ap);
    if (n > 0)
        *pos = *pos + (size_t)n < size ? *pos + (size_t)n : size - 1;
}

char *vp__render_costs(const vp_costs *c, char *buf, size_t size) {
    size_t pos = 0;
    buf[0] = '\0';
    append(buf, size, &pos, "F=%g B=%g W=%g c=%g", c->f, c->b, c->w, c->c);
    if (c->fb >= 0)
        append(buf, size, &pos, " F&B=%g", c->fb);
    if (c->r >= 0)
        append(buf, size, &pos, " R=%g", c->r);
    if (c->o >= 0)
        append(buf, size, &pos, " O=%g", c->o);
    if (c->l >= 0)
        append(buf, size, &pos, " L=%g", c->l);
    return buf;
}

char *vp__render_headline(const vp_timeline *tl, const vp_timeline_stats *st, const vp_costs *costs,
                          const char *sep, char *buf, size_t size) {
    size_t pos = 0;
    buf[0] = '\0';
    append(buf, size, &pos, "%s%sp=%d m=%d", tl->family, sep, tl->p, tl->m);
    if (st->chunks > 1)
        append(buf, size, &pos, " v=%d", st->chunks);
    if (costs) {
        char text[128];
        append(buf, size, &pos, "%s%s", sep, vp__render_costs(costs, text, sizeof text));
    }
    return buf;
}

char *vp__render_numbers(const vp_timeline *tl, const vp_timeline_stats *st, const char *sep,
                         char *buf, size_t size) {
    size_t pos = 0;
    buf[0] = '\0';
    append(buf, size, &pos, "bubble %.2f%% (of makespan %.2f%%)%smakespan %.4g", 100 * st->bubble,
           100 * st->bubble_makespan, sep, st->makespan);
    if (tl->has_mem)
        append(buf, size, &pos, "%speak %.4g %s", sep, st->peak_max, tl->mem_unit);
    return buf;
}
