/* Chrome trace JSON (Perfetto, chrome://tracing) of a timeline, one event per line. */
#include <stdio.h>

#include "base/internal.h"
#include "render/render_internal.h"

/* Trace-viewer colour names per kind (Perfetto picks its own colours by name). */
static const char *const kind_cname[VP_OP_KIND_COUNT] = {"thread_state_running",
                                                         "rail_response",
                                                         "thread_state_iowait",
                                                         "rail_animation",
                                                         "yellow",
                                                         "terrible",
                                                         "grey",
                                                         "grey",
                                                         "good",
                                                         "bad",
                                                         "olive",
                                                         "rail_load"};

static void json_string(vp__buf *out, const char *s) {
    vp__render_putc(out, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            vp__buf_printf(out, "\\%c", c);
        else if (c < 0x20)
            vp__buf_printf(out, "\\u%04x", c);
        else
            vp__render_putc(out, c);
    }
    vp__render_putc(out, '"');
}

/* One slice on track tid (0: ops, 1: the copy engine) of device d. */
static void slice_event(vp__buf *out, const vp_timeline *tl, int d, int tid, const vp_slice *sl,
                        double t0) {
    const vp_op *op = &sl->op;
    const char *kind = vp_op_kind_name((vp_op_kind)op->kind);
    vp__buf_printf(out, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"name\":\"%s %d", d, tid, kind,
                   op->mb);
    if (op->kind == VP_OP_FB)
        vp__buf_printf(out, "/%d", op->mb2);
    vp__buf_printf(out,
                   "\",\"cat\":\"%s\",\"cname\":\"%s\",\"ts\":%.3f,\"dur\":%.3f,"
                   "\"args\":{\"kind\":\"%s\",\"stage\":%d,\"microbatch\":%d,\"chunk\":%d",
                   kind, kind_cname[op->kind], (sl->start - t0) * tl->trace_us,
                   (sl->end - sl->start) * tl->trace_us, kind, op->stage, op->mb,
                   vp__render_chunk(tl, op->kind, op->stage));
    if (op->kind == VP_OP_FB)
        vp__buf_printf(out, ",\"bkind\":\"%s\",\"stage2\":%d,\"microbatch2\":%d",
                       vp_op_kind_name((vp_op_kind)op->bkind), op->stage2, op->mb2);
    if (tl->has_mem && tid == 0)
        vp__buf_printf(out, ",\"memory_after\":%.6g", sl->mem);
    vp__render_puts(out, "}}");
}

static void memory_event(vp__buf *out, const vp_timeline *tl, int d, double ts, double value) {
    vp__buf_printf(out, ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":\"memory\",\"ts\":%.3f,\"args\":{", d,
                   ts);
    json_string(out, tl->mem_unit);
    vp__buf_printf(out, ":%.6g}}", value);
}

/* Device d's copy-engine track: its name, then its copies. */
static void copy_events(vp__buf *out, const vp_timeline *tl, int d, double t0) {
    vp__buf_printf(out,
                   ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"name\":\"thread_name\","
                   "\"args\":{\"name\":\"copy engine\"}}",
                   d);
    for (int i = 0; i < tl->copy[d].n; i++)
        slice_event(out, tl, d, 1, &tl->copy[d].slices[i], t0);
}

vp_status vp_render_trace(const vp_timeline *tl, char **out_text, vp_error *err) {
    vp__buf b = {0}, *out = &b;
    vp_timeline_stats st;
    vp_timeline_stats_get(tl, &st);
    vp__render_puts(out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"family\":");
    json_string(out, tl->family);
    vp__buf_printf(
        out,
        ",\"p\":%d,\"stages\":%d,\"microbatches\":%d,\"us_per_time_unit\":%.6g,"
        "\"makespan\":%.6g,\"bubble\":%.6g},\n\"traceEvents\":[\n"
        "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"device 0\"}}",
        tl->p, tl->S, tl->m, tl->trace_us, st.makespan, st.bubble);
    for (int d = 0; d < tl->p; d++) {
        if (d)
            vp__buf_printf(out,
                           ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\","
                           "\"args\":{\"name\":\"device %d\"}}",
                           d, d);
        vp__buf_printf(out,
                       ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\","
                       "\"args\":{\"sort_index\":%d}}"
                       ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"thread_name\","
                       "\"args\":{\"name\":\"ops\"}}",
                       d, d, d);
        const vp_track *t = &tl->dev[d];
        if (tl->has_mem && t->n)
            memory_event(out, tl, d, (t->slices[0].start - st.t0) * tl->trace_us, 0.0);
        for (int i = 0; i < t->n; i++) {
            int copy_op = t->slices[i].op.kind == VP_OP_O || t->slices[i].op.kind == VP_OP_L;
            if (!copy_op) /* O and L take no compute time: drawn on the copy engine */
                slice_event(out, tl, d, 0, &t->slices[i], st.t0);
            if (tl->has_mem)
                memory_event(out, tl, d, (t->slices[i].end - st.t0) * tl->trace_us,
                             t->slices[i].mem);
        }
        if (tl->copy)
            copy_events(out, tl, d, st.t0);
    }
    vp__render_puts(out, "\n]}\n");
    return vp__render_finish(&b, VP_OK, out_text, err);
}
