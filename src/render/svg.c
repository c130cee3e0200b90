/* SVG pictures: one schedule, or a gallery of schedules on one shared time scale. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "render/render_internal.h"

#define FONT "DejaVu Sans, Helvetica, Arial, sans-serif"
#define MARGIN_L 64.0   /* device labels */
#define MARGIN_R 84.0   /* peak labels */
#define BAR_H 22.0      /* height of a device's op bar */
#define MEM_GAP 3.0     /* bar to memory strip */
#define COPY_H 10.0     /* copy-engine lane under the bar (timelines with copies) */
#define MEM_H 24.0      /* memory strip */
#define LANE_GAP 12.0   /* between lanes */
#define AXIS_H 34.0     /* time axis with labels */
#define PANEL_GAP 18.0  /* between gallery panels */
#define PANEL_HEAD 24.0 /* gallery panel title */
#define MIN_OP_PX 18.0  /* auto width: the shortest op gets at least this many pixels */
#define CHAR_W 6.6      /* approximate advance of a 12px glyph, for laying out text */
#define LEGEND_ROW 20.0 /* between legend rows */

/* On a dark background (prefers-color-scheme: dark, where the viewer honours it: browsers
 * do, in a page or alone), the page's ink, grid and memory strips turn dark; the ops keep
 * their colours. The classes name what each colour is for. */
#define DARK_STYLE                                                                                 \
    "<style>@media (prefers-color-scheme: dark) {.vp-bg{fill:#16191d}.vp-ink{fill:#dde3ea}"        \
    ".vp-muted{fill:#9aa5b1}.vp-grid{stroke:#2a3038}.vp-axis{stroke:#9aa5b1}"                      \
    ".vp-strip{fill:#20252b}.vp-mem{fill:#4a6a8a;stroke:#b7c7d9}.vp-edge{stroke:#16191d}}"         \
    "</style>\n"

/* Base colours per kind (F, B, W, BW, F&B drawn as its two halves, R, the vocabulary's EF,
 * EB, S, T, and O, L). */
static const unsigned kind_rgb[VP_OP_KIND_COUNT] = {0x3b6fb6, 0x2f9e5f, 0xe08a2e, 0x7b5ea7,
                                                    0x3b6fb6, 0xc0392b, 0x7f8c8d, 0x95a5a6,
                                                    0x16a085, 0x8e6c3a, 0x17a2b8, 0x8e5b3a};

/* Page geometry shared by every panel. */
typedef struct layout {
    double k;      /* pixels per time unit */
    double span;   /* time shown (the longest makespan) */
    double plot_w; /* k * span */
    double peak;   /* memory scale: largest peak over all timelines */
    int chunks;    /* most chunks per device over all timelines */
    int gallery;
} layout;

static void xml_text(vp__buf *out, const char *s) {
    for (; *s; s++) {
        if (*s == '&')
            vp__render_puts(out, "&amp;");
        else if (*s == '<')
            vp__render_puts(out, "&lt;");
        else if (*s == '>')
            vp__render_puts(out, "&gt;");
        else if (*s == '"')
            vp__render_puts(out, "&quot;");
        else if ((unsigned char)*s >= 0x20 || *s == '\t')
            vp__render_putc(out, *s);
    }
}

/* Colour of kind for a chunk: later chunks are mixed towards white. Sets *light when the
 * result is pale enough to need dark text. */
static void shade(int kind, int chunk, int chunks, char hex[8], int *light) {
    double t = chunks > 1 ? 0.62 * chunk / (chunks - 1) : 0.0;
    unsigned rgb = kind_rgb[kind], out = 0;
    for (int sh = 16; sh >= 0; sh -= 8) {
        double c = (rgb >> sh) & 0xff;
        out |= (unsigned)lround(c + (255 - c) * t) << sh;
    }
    snprintf(hex, 8, "#%06x", out);
    if (light)
        *light = t >= 0.35 || kind == VP_OP_W;
}

/* Smallest 1/2/5 x 10^e step at least min_step. */
static double nice_step(double min_step) {
    double e = pow(10, floor(log10(min_step)));
    static const double f[3] = {1, 2, 5};
    for (int i = 0; i < 3; i++)
        if (f[i] * e >= min_step)
            return f[i] * e;
    return 10 * e;
}

/* Height of the copy lane under each bar (0 without copies). */
static double copy_h(const vp_timeline *tl) {
    return tl->copy ? MEM_GAP + COPY_H : 0;
}

static double lane_pitch(const vp_timeline *tl) {
    return BAR_H + copy_h(tl) + (tl->has_mem ? MEM_GAP + MEM_H : 0) + LANE_GAP;
}

static double panel_height(const vp_timeline *tl, int gallery) {
    return (gallery ? PANEL_HEAD : 0) + tl->p * lane_pitch(tl) + AXIS_H;
}

/* Where slice sl is drawn: its left edge *x and width *w. */
static void slice_box(const layout *L, const vp_slice *sl, double t0, double *x, double *w) {
    *x = MARGIN_L + (sl->start - t0) * L->k;
    *w = (sl->end - sl->start) * L->k;
}

/* One rectangle of an op (stroked by its lane's group). */
static void slice_rect(vp__buf *out, double x, double y, double w, double h, int kind, int chunk,
                       int chunks) {
    char fill[8];
    shade(kind, chunk, chunks, fill, NULL);
    vp__buf_printf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>",
                   x, y, w, h, fill);
}

/* The microbatch number centred in an op's rectangle when it fits (font 11 is the lane's). */
static void slice_number(vp__buf *out, double x, double y, double w, double h, int kind, int chunk,
                         int chunks, int mb, double font) {
    char fill[8], num[16], size[24] = "";
    int light, len = snprintf(num, sizeof num, "%d", mb);
    if (w < len * font * 0.62 + 3 || h < font)
        return;
    shade(kind, chunk, chunks, fill, &light);
    if (font != 11)
        snprintf(size, sizeof size, " font-size=\"%.0f\"", font);
    vp__buf_printf(out, "<text x=\"%.1f\" y=\"%.1f\"%s fill=\"%s\">%s</text>\n", x + w / 2,
                   y + h / 2 + font * 0.36, size, light ? "#1f2933" : "#ffffff", num);
}

/* The op's hover text: pass, stage, microbatch (both halves of an F&B), device, start, end;
 * a copy says which way it goes. */
static void slice_title(vp__buf *out, const vp_slice *sl, int d, double t0) {
    const vp_op *op = &sl->op;
    vp__buf_printf(out, "<title>%s%s %s %d, microbatch %d",
                   op->kind == VP_OP_O   ? "copy to host: "
                   : op->kind == VP_OP_L ? "copy from host: "
                                         : "",
                   vp_op_kind_name((vp_op_kind)(op->kind == VP_OP_FB ? VP_OP_F : op->kind)),
                   vp_op_kind_is_vocab(op->kind) ? "vocabulary shard" : "stage", op->stage, op->mb);
    if (op->kind == VP_OP_FB)
        vp__buf_printf(out, " with %s stage %d, microbatch %d",
                       vp_op_kind_name((vp_op_kind)op->bkind), op->stage2, op->mb2);
    vp__buf_printf(out, "; device %d, %g to %g</title>", d, sl->start - t0, sl->end - t0);
}

/* One op as a titled group of height h: a rectangle, or for F&B its forward half over its
 * backward half. */
static void draw_slice(vp__buf *out, const vp_timeline *tl, const layout *L, int d,
                       const vp_slice *sl, double t0, double y, double h) {
    double x, w;
    slice_box(L, sl, t0, &x, &w);
    if (w <= 0)
        return;
    const vp_op *op = &sl->op;
    int chunk = vp__render_chunk(tl, op->kind, op->stage);
    vp__render_puts(out, "<g>");
    slice_title(out, sl, d, t0);
    if (op->kind != VP_OP_FB) {
        slice_rect(out, x, y, w, h, op->kind, chunk, L->chunks);
    } else {
        slice_rect(out, x, y, w, BAR_H / 2, VP_OP_F, chunk, L->chunks);
        slice_rect(out, x, y + BAR_H / 2, w, BAR_H / 2, op->bkind,
                   vp__render_chunk(tl, op->bkind, op->stage2), L->chunks);
    }
    vp__render_puts(out, "</g>\n");
}

/* The numbers of slice sl, drawn over every op of its lane. */
static void draw_numbers(vp__buf *out, const vp_timeline *tl, const layout *L, const vp_slice *sl,
                         double t0, double y) {
    double x, w;
    slice_box(L, sl, t0, &x, &w);
    const vp_op *op = &sl->op;
    int chunk = vp__render_chunk(tl, op->kind, op->stage);
    if (op->kind != VP_OP_FB) {
        slice_number(out, x, y, w, BAR_H, op->kind, chunk, L->chunks, op->mb, 11);
    } else {
        slice_number(out, x, y, w, BAR_H / 2, VP_OP_F, chunk, L->chunks, op->mb, 9);
        slice_number(out, x, y + BAR_H / 2, w, BAR_H / 2, op->bkind,
                     vp__render_chunk(tl, op->bkind, op->stage2), L->chunks, op->mb2, 9);
    }
}

/* Device d's ops at y: their groups, a thin edge (in the background's colour) keeping
 * neighbouring ops of one colour apart, then their numbers, which let the pointer through to
 * the op under them. */
static void draw_ops(vp__buf *out, const vp_timeline *tl, const layout *L, int d, double t0,
                     double y) {
    const vp_track *t = &tl->dev[d];
    vp__render_puts(out, "<g class=\"vp-edge\" stroke=\"#ffffff\" stroke-width=\"0.8\">\n");
    for (int i = 0; i < t->n; i++)
        draw_slice(out, tl, L, d, &t->slices[i], t0, y, BAR_H);
    vp__render_puts(out,
                    "</g>\n<g font-size=\"11\" text-anchor=\"middle\" pointer-events=\"none\">\n");
    for (int i = 0; i < t->n; i++)
        draw_numbers(out, tl, L, &t->slices[i], t0, y);
    vp__render_puts(out, "</g>\n");
}

/* Device d's copy lane at y: a strip, its copies, and a label with the host peak. */
static void draw_copies(vp__buf *out, const vp_timeline *tl, const layout *L, int d, double t0,
                        double y) {
    const vp_track *t = &tl->copy[d];
    vp__buf_printf(out,
                   "<rect class=\"vp-strip\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                   "height=\"%.1f\" fill=\"#f4f5f7\"/>\n",
                   MARGIN_L, y, L->plot_w, COPY_H);
    vp__render_puts(out, "<g class=\"vp-edge\" stroke=\"#ffffff\" stroke-width=\"0.5\">\n");
    for (int i = 0; i < t->n; i++)
        draw_slice(out, tl, L, d, &t->slices[i], t0, y, COPY_H);
    vp__render_puts(out, "</g>\n");
    vp__buf_printf(out,
                   "<text class=\"vp-muted\" x=\"%.1f\" y=\"%.1f\" font-size=\"9\" "
                   "text-anchor=\"end\" fill=\"#7b8794\">copy</text>\n",
                   MARGIN_L - 8, y + COPY_H - 1);
    if (tl->host_peak)
        vp__buf_printf(out,
                       "<text class=\"vp-muted\" x=\"%.1f\" y=\"%.1f\" font-size=\"9\" "
                       "fill=\"#52606d\">host %.4g</text>\n",
                       MARGIN_L + L->plot_w + 8, y + COPY_H - 1, tl->host_peak[d]);
}

/* Step curve of memory after each op, under the device's bar, titled with its peak and
 * when the device first reached it. */
static void draw_memory(vp__buf *out, const vp_timeline *tl, const layout *L, int d, double t0,
                        double y) {
    const vp_track *t = &tl->dev[d];
    double base = y + MEM_H, scale = L->peak > 0 ? (MEM_H - 3) / L->peak : 0;
    double x_end = MARGIN_L + L->plot_w, peak = 0, peak_at = 0;
    for (int i = 0; i < t->n; i++)
        if (t->slices[i].mem > peak) {
            peak = t->slices[i].mem;
            peak_at = t->slices[i].end - t0;
        }
    vp__buf_printf(out, "<g><title>device %d: memory (%s) after each op, peak %.4g at %g</title>",
                   d, tl->mem_unit, peak, peak_at);
    vp__buf_printf(out,
                   "<rect class=\"vp-strip\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                   "height=\"%.1f\" fill=\"#f4f5f7\"/>\n",
                   MARGIN_L, y, L->plot_w, MEM_H);
    vp__buf_printf(out, "<path class=\"vp-mem\" d=\"M%.1f %.1f", MARGIN_L, base);
    for (int i = 0; i < t->n; i++) {
        double x = MARGIN_L + (t->slices[i].end - t0) * L->k;
        vp__buf_printf(out, " H%.1f V%.1f", x, base - t->slices[i].mem * scale);
    }
    vp__buf_printf(out,
                   " H%.1f V%.1f Z\" fill=\"#b7c7d9\" fill-opacity=\"0.7\" stroke=\"#334e68\" "
                   "stroke-width=\"1\" stroke-linejoin=\"round\"/>\n",
                   x_end, base);
    vp__buf_printf(out,
                   "<text class=\"vp-muted\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                   "fill=\"#52606d\">peak %.4g</text>\n",
                   x_end + 8, base - 8, peak);
    vp__buf_printf(out,
                   "<text class=\"vp-muted\" x=\"%.1f\" y=\"%.1f\" font-size=\"9\" "
                   "text-anchor=\"end\" fill=\"#7b8794\">mem</text></g>\n",
                   MARGIN_L - 8, base - 8);
}

/* Vertical grid lines (from top to bottom) and the labelled axis at y_axis. */
static void draw_axis(vp__buf *out, const layout *L, double top, double y_axis) {
    double step = nice_step(60.0 / L->k);
    vp__buf_printf(out, "<g class=\"vp-grid\" stroke=\"#e4e7eb\" stroke-width=\"1\">\n");
    for (double t = 0; t <= L->span + 1e-9; t += step)
        vp__buf_printf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                       MARGIN_L + t * L->k, top, MARGIN_L + t * L->k, y_axis);
    vp__buf_printf(out,
                   "</g>\n<line class=\"vp-axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                   "stroke=\"#52606d\"/>\n",
                   MARGIN_L, y_axis, MARGIN_L + L->plot_w, y_axis);
    vp__buf_printf(
        out, "<g class=\"vp-muted vp-axis\" font-size=\"10\" fill=\"#52606d\" stroke=\"#52606d\" "
             "text-anchor=\"middle\">\n");
    for (double t = 0; t <= L->span + 1e-9; t += step)
        vp__buf_printf(out,
                       "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<text x=\"%.1f\" y=\"%.1f\" stroke=\"none\">%g</text>\n",
                       MARGIN_L + t * L->k, y_axis, MARGIN_L + t * L->k, y_axis + 4,
                       MARGIN_L + t * L->k, y_axis + 15, t);
    vp__buf_printf(out,
                   "</g>\n<text class=\"vp-muted\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                   "fill=\"#52606d\">time</text>\n",
                   MARGIN_L + L->plot_w + 20, y_axis + 15);
}

/* One timeline's lanes (and, in a gallery, its title) starting at y. */
static void draw_panel(vp__buf *out, const vp_timeline *tl, const layout *L, double y) {
    vp_timeline_stats st;
    vp_timeline_stats_get(tl, &st);
    if (L->gallery) {
        char nums[256];
        vp__buf_printf(
            out,
            "<text class=\"vp-ink\" x=\"%.1f\" y=\"%.1f\" font-size=\"13\" fill=\"#1f2933\">"
            "<tspan font-weight=\"bold\">",
            MARGIN_L, y + 15);
        xml_text(out, tl->family);
        if (st.chunks > 1)
            vp__buf_printf(out, " (v=%d)", st.chunks);
        vp__render_puts(out, "</tspan><tspan class=\"vp-muted\" fill=\"#52606d\" dx=\"12\">");
        xml_text(out, vp__render_numbers(tl, &st, " \xc2\xb7 ", nums, sizeof nums));
        vp__render_puts(out, "</tspan></text>\n");
        y += PANEL_HEAD;
    }
    double y_axis = y + tl->p * lane_pitch(tl) - LANE_GAP / 2;
    draw_axis(out, L, y, y_axis);
    for (int d = 0; d < tl->p; d++) {
        double ly = y + d * lane_pitch(tl);
        vp__buf_printf(out,
                       "<text class=\"vp-ink\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                       "font-weight=\"bold\" text-anchor=\"end\" fill=\"#323f4b\">dev %d</text>\n",
                       MARGIN_L - 8, ly + BAR_H / 2 + 4, d);
        draw_ops(out, tl, L, d, st.t0, ly);
        if (tl->copy)
            draw_copies(out, tl, L, d, st.t0, ly + BAR_H + MEM_GAP);
        if (tl->has_mem)
            draw_memory(out, tl, L, d, st.t0, ly + BAR_H + copy_h(tl) + MEM_GAP);
    }
    if (L->gallery) {
        double x = MARGIN_L + st.makespan * L->k;
        vp__buf_printf(out,
                       "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c0392b\" "
                       "stroke-width=\"1.2\" stroke-dasharray=\"4 3\"/>\n",
                       x, y - 4, x, y_axis);
    }
}

/* Legend entries: one per kind present, then chunk shading, memory, numbers. */
enum { LEG_CHUNKS = VP_OP_KIND_COUNT, LEG_MEMORY, LEG_NUMBERS, LEG_COUNT };

static const char *legend_text(int item) {
    static const char *const text[LEG_COUNT] = {"F forward",
                                                "B input backward",
                                                "W weight backward",
                                                "BW full backward",
                                                "F&B overlapped F + backward",
                                                "R recompute",
                                                "EF embedding forward (shard)",
                                                "EB embedding backward (shard)",
                                                "S output forward (shard)",
                                                "T output backward (shard)",
                                                "O offload (copy to host)",
                                                "L reload (copy from host)",
                                                "lighter = later chunk",
                                                "memory (units)",
                                                "numbers: microbatch"};
    return text[item];
}

/* Which entries the page shows; returns how many. */
static int legend_items(const vp_timeline *const *tls, int n, const layout *L, int *items) {
    int present[VP_OP_KIND_COUNT] = {0}, mem = 0, k = 0;
    for (int i = 0; i < n; i++) {
        mem |= tls[i]->has_mem;
        for (int d = 0; d < tls[i]->p; d++)
            for (int j = 0; j < tls[i]->dev[d].n; j++)
                present[tls[i]->dev[d].slices[j].op.kind] = 1;
        for (int d = 0; tls[i]->copy && d < tls[i]->p; d++)
            for (int j = 0; j < tls[i]->copy[d].n; j++)
                present[tls[i]->copy[d].slices[j].op.kind] = 1;
    }
    for (int kind = 0; kind < VP_OP_KIND_COUNT; kind++)
        if (present[kind])
            items[k++] = kind;
    if (L->chunks > 1)
        items[k++] = LEG_CHUNKS;
    if (mem)
        items[k++] = LEG_MEMORY;
    items[k++] = LEG_NUMBERS;
    return k;
}

/* Lays the entries out in rows that fit the page; fills x (and row) per entry when given,
 * returns the number of rows. */
static int legend_rows(const int *items, int k, const layout *L, double *x, int *row) {
    double left = MARGIN_L, right = MARGIN_L + L->plot_w + MARGIN_R - 8, at = left;
    int rows = 1;
    for (int i = 0; i < k; i++) {
        double w = (items[i] == LEG_NUMBERS ? 0 : 19) + strlen(legend_text(items[i])) * CHAR_W;
        if (at > left && at + w > right) {
            rows++;
            at = left;
        }
        if (x) {
            x[i] = at;
            row[i] = rows - 1;
        }
        at += w + 16;
    }
    return rows;
}

/* The legend, first row's baseline at y. */
static void draw_legend(vp__buf *out, const vp_timeline *const *tls, int n, const layout *L,
                        double y) {
    int items[LEG_COUNT], row[LEG_COUNT];
    double xs[LEG_COUNT];
    int k = legend_items(tls, n, L, items);
    legend_rows(items, k, L, xs, row);
    char fill[8];
    vp__buf_printf(out, "<g class=\"vp-ink\" font-size=\"12\" fill=\"#323f4b\">\n");
    for (int i = 0; i < k; i++) {
        double x = xs[i], yy = y + row[i] * LEGEND_ROW;
        int it = items[i];
        if (it < VP_OP_KIND_COUNT) {
            shade(it, 0, 1, fill, NULL);
            vp__buf_printf(out,
                           "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>",
                           x, yy - 11, fill);
            if (it == VP_OP_FB) {
                shade(VP_OP_BW, 0, 1, fill, NULL);
                vp__buf_printf(
                    out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"7\" fill=\"%s\"/>", x,
                    yy - 4, fill);
            }
        } else if (it == LEG_CHUNKS) {
            for (int c = 0; c < 2; c++) {
                shade(VP_OP_F, c ? L->chunks - 1 : 0, L->chunks, fill, NULL);
                vp__buf_printf(
                    out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"14\" fill=\"%s\"/>",
                    x + 7 * c, yy - 11, fill);
            }
        } else if (it == LEG_MEMORY) {
            vp__buf_printf(
                out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"#b7c7d9\" "
                "stroke=\"#334e68\"/>",
                x, yy - 11);
        }
        vp__buf_printf(out, "<text x=\"%.1f\" y=\"%.1f\"%s>", x + (it == LEG_NUMBERS ? 0 : 19), yy,
                       it == LEG_NUMBERS ? " class=\"vp-muted\" fill=\"#7b8794\"" : "");
        if (it == LEG_MEMORY)
            vp__buf_printf(out, "memory (%s)", tls[0]->mem_unit);
        else
            xml_text(out, legend_text(it));
        vp__render_puts(out, "</text>\n");
    }
    vp__render_puts(out, "</g>\n");
}

/* Shared scales: the shortest op gets MIN_OP_PX unless that makes the page too wide. */
static layout make_layout(const vp_timeline *const *tls, int n, const vp_render_opts *o) {
    layout L = {0};
    double min_dur = INFINITY;
    for (int i = 0; i < n; i++) {
        vp_timeline_stats st;
        vp_timeline_stats_get(tls[i], &st);
        L.span = fmax(L.span, st.makespan);
        L.peak = fmax(L.peak, st.peak_max);
        L.chunks = st.chunks > L.chunks ? st.chunks : L.chunks;
        for (int d = 0; d < tls[i]->p; d++)
            for (int j = 0; j < tls[i]->dev[d].n; j++) {
                double dur = tls[i]->dev[d].slices[j].end - tls[i]->dev[d].slices[j].start;
                if (dur > 0)
                    min_dur = fmin(min_dur, dur);
            }
    }
    if (L.span <= 0)
        L.span = 1;
    if (o->width > 0)
        L.plot_w = o->width;
    else
        L.plot_w = fmin(2000, fmax(760, isfinite(min_dur) ? MIN_OP_PX / min_dur * L.span : 0));
    L.k = L.plot_w / L.span;
    L.gallery = n > 1;
    return L;
}

static vp_status draw_page(vp__buf *out, const vp_timeline *const *tls, int n,
                           const vp_render_opts *opts, vp_error *err) {
    if (n < 1)
        return vp__fail(err, VP_EINVAL, "render: a gallery needs at least one schedule");
    vp_render_opts o = opts ? *opts : (vp_render_opts){0};
    layout L = make_layout(tls, n, &o);
    vp_timeline_stats st0;
    vp_timeline_stats_get(tls[0], &st0);

    int items[LEG_COUNT];
    int legend_n = legend_items(tls, n, &L, items);
    double head_h = 96 + (legend_rows(items, legend_n, &L, NULL, NULL) - 1) * LEGEND_ROW;
    double height = head_h;
    for (int i = 0; i < n; i++)
        height += panel_height(tls[i], L.gallery) + (i ? PANEL_GAP : 0);
    double width = MARGIN_L + L.plot_w + MARGIN_R;
    vp__buf_printf(out,
                   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                   "viewBox=\"0 0 %.0f %.0f\" font-family=\"%s\">\n"
                   "%s<rect class=\"vp-bg\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
                   width, height, width, height, FONT, DARK_STYLE);

    char head[512], line2[512];
    if (o.title)
        snprintf(head, sizeof head, "%s", o.title);
    else if (L.gallery)
        snprintf(head, sizeof head, "vpipe compare \xc2\xb7 p=%d m=%d", tls[0]->p, tls[0]->m);
    else
        vp__render_headline(tls[0], &st0, o.costs, " \xc2\xb7 ", head, sizeof head);
    if (!L.gallery)
        vp__render_numbers(tls[0], &st0, " \xc2\xb7 ", line2, sizeof line2);
    else if (o.costs)
        vp__render_costs(o.costs, line2, sizeof line2);
    else
        line2[0] = '\0';
    vp__buf_printf(
        out,
        "<text class=\"vp-ink\" x=\"%.1f\" y=\"30\" font-size=\"19\" font-weight=\"bold\" "
        "fill=\"#1f2933\">",
        MARGIN_L);
    xml_text(out, head);
    vp__buf_printf(out,
                   "</text>\n<text class=\"vp-muted\" x=\"%.1f\" y=\"52\" font-size=\"13\" "
                   "fill=\"#52606d\">",
                   MARGIN_L);
    xml_text(out, line2);
    if (L.gallery)
        xml_text(out, "  (one time scale and one memory scale; dashed line: makespan)");
    vp__render_puts(out, "</text>\n");
    draw_legend(out, tls, n, &L, 78);

    double y = head_h;
    for (int i = 0; i < n; i++) {
        draw_panel(out, tls[i], &L, y);
        y += panel_height(tls[i], L.gallery) + PANEL_GAP;
    }
    vp__render_puts(out, "</svg>\n");
    return VP_OK;
}

vp_status vp_render_svg_gallery(const vp_timeline *const *tls, int n, const vp_render_opts *opts,
                                char **out, vp_error *err) {
    vp__buf b = {0};
    return vp__render_finish(&b, draw_page(&b, tls, n, opts, err), out, err);
}

vp_status vp_render_svg(const vp_timeline *tl, const vp_render_opts *opts, char **out,
                        vp_error *err) {
    return vp_render_svg_gallery(&tl, 1, opts, out, err);
}
