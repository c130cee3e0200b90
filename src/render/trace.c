/* Chrome trace JSON (Perfetto, chrome://tracing) of a timeline, one event per line. */
#include <stdio.h>

#include "base/internal.h"
#include "render/render_internal.h"

/* Trace-viewer colour names per kind (Perfetto picks its own colours by name). */
static const char *const kind_cname[VP_OP_KIND_COUNT] = {
    "thread_state_running", "rail_response", "thread_state_iowait", "rail_animation", "yellow"};

static void json_string(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void slice_event(FILE *out, const vp_timeline *tl, int d, const vp_slice *sl, double t0) {
    const vp_op *op = &sl->op;
    const char *kind = vp_op_kind_name((vp_op_kind)op->kind);
    fprintf(out, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"name\":\"%s %d", d, kind, op->mb);
    if (op->kind == VP_OP_FB)
        fprintf(out, "/%d", op->mb2);
    fprintf(out,
            "\",\"cat\":\"%s\",\"cname\":\"%s\",\"ts\":%.3f,\"dur\":%.3f,"
            "\"args\":{\"kind\":\"%s\",\"stage\":%d,\"microbatch\":%d,\"chunk\":%d",
            kind, kind_cname[op->kind], (sl->start - t0) * tl->trace_us,
            (sl->end - sl->start) * tl->trace_us, kind, op->stage, op->mb,
            vp__render_chunk(tl, op->stage));
    if (op->kind == VP_OP_FB)
        fprintf(out, ",\"bkind\":\"%s\",\"stage2\":%d,\"microbatch2\":%d",
                vp_op_kind_name((vp_op_kind)op->bkind), op->stage2, op->mb2);
    if (tl->has_mem)
        fprintf(out, ",\"memory_after\":%.6g", sl->mem);
    fputs("}}", out);
}

static void memory_event(FILE *out, const vp_timeline *tl, int d, double ts, double value) {
    fprintf(out, ",\n{\"ph\":\"C\",\"pid\":%d,\"name\":\"memory\",\"ts\":%.3f,\"args\":{", d, ts);
    json_string(out, tl->mem_unit);
    fprintf(out, ":%.6g}}", value);
}

vp_status vp_render_trace(FILE *out, const vp_timeline *tl, vp_error *err) {
    vp_timeline_stats st;
    vp_timeline_stats_get(tl, &st);
    fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"family\":", out);
    json_string(out, tl->family);
    fprintf(out,
            ",\"p\":%d,\"stages\":%d,\"microbatches\":%d,\"us_per_time_unit\":%.6g,"
            "\"makespan\":%.6g,\"bubble\":%.6g},\n\"traceEvents\":[\n"
            "{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"device 0\"}}",
            tl->p, tl->S, tl->m, tl->trace_us, st.makespan, st.bubble);
    for (int d = 0; d < tl->p; d++) {
        if (d)
            fprintf(out,
                    ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\","
                    "\"args\":{\"name\":\"device %d\"}}",
                    d, d);
        fprintf(out,
                ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\","
                "\"args\":{\"sort_index\":%d}}"
                ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"thread_name\","
                "\"args\":{\"name\":\"ops\"}}",
                d, d, d);
        const vp_track *t = &tl->dev[d];
        if (tl->has_mem && t->n)
            memory_event(out, tl, d, (t->slices[0].start - st.t0) * tl->trace_us, 0.0);
        for (int i = 0; i < t->n; i++) {
            slice_event(out, tl, d, &t->slices[i], st.t0);
            if (tl->has_mem)
                memory_event(out, tl, d, (t->slices[i].end - st.t0) * tl->trace_us,
                             t->slices[i].mem);
        }
    }
    fputs("\n]}\n", out);
    if (ferror(out))
        return vp__fail(err, VP_EIO, "trace: write failed");
    return VP_OK;
}
