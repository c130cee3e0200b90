/* Terminal timeline: one row per device, time to the right, wrapped into bands. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "render/render_internal.h"

#define LABEL_MAX 32
#define MAX_BANDS 16 /* wrapping never makes more bands than this; labels get cut instead */

/* Colour of a cell: -1 idle, else kind * 2 + (odd chunk). */
typedef struct cell {
    char ch;
    signed char attr;
} cell;

/* Writes kind + microbatch ("F3", "bw3" for an odd chunk) into buf; returns its length. */
static int pass_label(const vp_timeline *tl, int kind, int stage, int mb, char *buf, int size) {
    int n = snprintf(buf, (size_t)size, "%s%d", vp_op_kind_name((vp_op_kind)kind), mb);
    if (vp__render_chunk(tl, kind, stage) % 2)
        for (int i = 0; buf[i]; i++)
            buf[i] = (char)tolower((unsigned char)buf[i]);
    return n < size ? n : size - 1;
}

/* Label of a whole op: "F3", or "F7+B3" for an overlapped pair. */
static int op_label(const vp_timeline *tl, const vp_op *op, char *buf, int size) {
    if (op->kind != VP_OP_FB)
        return pass_label(tl, op->kind, op->stage, op->mb, buf, size);
    int n = pass_label(tl, VP_OP_F, op->stage, op->mb, buf, size);
    buf[n++] = '+';
    return n + pass_label(tl, op->bkind, op->stage2, op->mb2, buf + n, size - n);
}

static int col_of(double t, double t0, double k) {
    return (int)floor((t - t0) * k + 0.5);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of the positive op durations (0 when there are none, or no memory for them). */
static double median_duration(const vp_timeline *tl) {
    long n = 0;
    for (int d = 0; d < tl->p; d++)
        n += tl->dev[d].n;
    double *dur = vp__calloc((size_t)n + 1, sizeof *dur), med = 0;
    if (!dur)
        return 0;
    long k = 0;
    for (int d = 0; d < tl->p; d++)
        for (int i = 0; i < tl->dev[d].n; i++)
            if (tl->dev[d].slices[i].end > tl->dev[d].slices[i].start)
                dur[k++] = tl->dev[d].slices[i].end - tl->dev[d].slices[i].start;
    if (k) {
        qsort(dur, (size_t)k, sizeof *dur, cmp_double);
        med = dur[(k - 1) / 2]; /* the lower median */
    }
    free(dur);
    return med;
}

/* Columns per time unit: every op at least as long as the median one gets room for its
 * label and a space (shorter ones show what fits), at most MAX_BANDS bands; fit squeezes
 * the whole run into one band. */
static double choose_scale(const vp_timeline *tl, const vp_timeline_stats *st, int band, int fit) {
    if (st->makespan <= 0)
        return 1.0;
    double one_band = band / st->makespan;
    if (fit)
        return one_band;
    double k = 0, med = median_duration(tl);
    char label[LABEL_MAX];
    for (int d = 0; d < tl->p; d++)
        for (int i = 0; i < tl->dev[d].n; i++) {
            const vp_slice *sl = &tl->dev[d].slices[i];
            double dur = sl->end - sl->start;
            if (dur > 0 && dur >= med)
                k = fmax(k, (op_label(tl, &sl->op, label, LABEL_MAX) + 1) / dur);
        }
    if (k <= 0)
        k = one_band;
    return fmin(k, MAX_BANDS * one_band);
}

/* Paints every slice of track t into row (cols cells). */
static void paint_row(const vp_timeline *tl, const vp_track *t, double t0, double k, cell *row,
                      int cols) {
    for (int c = 0; c < cols; c++)
        row[c] = (cell){'.', -1};
    char label[LABEL_MAX];
    for (int i = 0; i < t->n; i++) {
        const vp_slice *sl = &t->slices[i];
        int a = col_of(sl->start, t0, k), b = col_of(sl->end, t0, k);
        if (b > cols)
            b = cols;
        int len = op_label(tl, &sl->op, label, LABEL_MAX);
        signed char attr =
            (signed char)(sl->op.kind * 2 + vp__render_chunk(tl, sl->op.kind, sl->op.stage) % 2);
        for (int c = a; c < b; c++)
            row[c] = (cell){c - a < len ? label[c - a] : ' ', attr};
    }
}

/* ANSI SGR for an attribute: white on a saturated colour for even chunks, black on the
 * bright variant for odd ones; dim for idle. */
static const char *sgr(int attr) {
    static const char *const even[VP_OP_KIND_COUNT] = {"97;44", "97;42", "30;43", "97;45",
                                                       "30;46", "97;41", "30;47", "30;47",
                                                       "97;40", "97;40", "30;46", "97;43"};
    static const char *const odd[VP_OP_KIND_COUNT] = {"30;104", "30;102", "30;103", "30;105",
                                                      "30;106", "30;101", "30;107", "30;107",
                                                      "97;100", "97;100", "30;106", "30;103"};
    if (attr < 0)
        return "2";
    return attr % 2 ? odd[attr / 2] : even[attr / 2];
}

static void print_cells(vp__buf *out, const cell *row, int n, int color) {
    int cur = -2;
    for (int c = 0; c < n; c++) {
        if (color && row[c].attr != cur) {
            cur = row[c].attr;
            vp__buf_printf(out, "\033[0;%sm", sgr(cur));
        }
        vp__render_putc(out, row[c].ch);
    }
    if (color)
        vp__render_puts(out, "\033[0m");
}

/* Smallest 1/2/5 x 10^e step at least min_step. */
static double nice_step(double min_step) {
    double e = pow(10, floor(log10(min_step)));
    for (int i = 0; i < 3; i++) {
        static const double f[3] = {1, 2, 5};
        if (f[i] * e >= min_step)
            return f[i] * e;
    }
    return 10 * e;
}

/* Time labels over one band [c0, c0 + n) after a prefix of pre columns. */
static void print_axis(vp__buf *out, int pre, int c0, int n, double t0, double k) {
    char line[4096];
    int len = pre + n < (int)sizeof line - 1 ? pre + n : (int)sizeof line - 1;
    memset(line, ' ', (size_t)len);
    double step = nice_step(10.0 / k);
    for (double t = ceil(c0 / k / step) * step; col_of(t0 + t, t0, k) < c0 + n; t += step) {
        char num[32];
        int w = snprintf(num, sizeof num, "%g", t);
        int at = pre + col_of(t0 + t, t0, k) - c0;
        if (at + w <= len)
            memcpy(line + at, num, (size_t)w);
    }
    while (len > 0 && line[len - 1] == ' ')
        len--;
    vp__buf_printf(out, "%.*s\n", len, line);
}

/* Prints text wrapped at spaces to lines of at most width columns. */
static void print_wrapped(vp__buf *out, const char *text, int width) {
    while (*text) {
        int n = (int)strlen(text);
        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ')
                n--;
            if (n == 0) /* one word longer than the line */
                n = (int)strcspn(text, " ");
        }
        vp__buf_printf(out, "%.*s\n", n, text);
        text += n;
        while (*text == ' ')
            text++;
    }
}

/* Legend of the kinds present, chunk marking, idle and scale. */
static void legend(const vp_timeline *tl, const vp_timeline_stats *st, double k, char *buf,
                   size_t size) {
    static const char *const what[VP_OP_KIND_COUNT] = {"F forward",
                                                       "B input backward",
                                                       "W weight backward",
                                                       "BW full backward",
                                                       "F7+B3 overlapped pair",
                                                       "R recompute",
                                                       "EF embedding forward (vocabulary shard)",
                                                       "EB embedding backward (vocabulary shard)",
                                                       "S output forward (vocabulary shard)",
                                                       "T output backward (vocabulary shard)",
                                                       "O offload (row cD: device D's copy engine)",
                                                       "L reload"};
    int present[VP_OP_KIND_COUNT] = {0};
    for (int d = 0; d < tl->p; d++)
        for (int i = 0; i < tl->dev[d].n; i++)
            present[tl->dev[d].slices[i].op.kind] = 1;
    size_t pos = (size_t)snprintf(buf, size, "legend:");
    for (int kind = 0; kind < VP_OP_KIND_COUNT && pos < size; kind++)
        if (present[kind])
            pos += (size_t)snprintf(buf + pos, size - pos, " %s,", what[kind]);
    if (pos < size)
        snprintf(buf + pos, size - pos,
                 " number = microbatch,%s dots = idle; 1 column = %.3g time units",
                 st->chunks > 1 ? " lowercase = odd chunk," : "", 1.0 / k);
}

/* The timeline drawn into out (see vp_render_ascii). */
static vp_status draw_ascii(vp__buf *out, const vp_timeline *tl, const vp_render_opts *opts,
                            vp_error *err) {
    vp_render_opts o = opts ? *opts : (vp_render_opts){0};
    int width = o.width > 0 ? o.width : 100;
    int pre = snprintf(NULL, 0, "d%d |", tl->p - 1);
    int band = width - pre - 1;
    if (band < 10)
        return vp__fail(err, VP_EINVAL, "render: width %d is too narrow (need %d columns)", width,
                        pre + 11);
    vp_timeline_stats st;
    vp_timeline_stats_get(tl, &st);
    double k = choose_scale(tl, &st, band, o.fit);
    int cols = col_of(st.t0 + st.makespan, st.t0, k);
    if (cols < 1)
        cols = 1;
    int rows = tl->copy ? 2 * tl->p : tl->p; /* device d's row 2d, its copies' 2d + 1 */
    cell *grid = vp__calloc((size_t)rows * (size_t)cols, sizeof *grid);
    if (!grid)
        return vp__fail(err, VP_ENOMEM, "render: out of memory");
    for (int d = 0; d < tl->p; d++) {
        paint_row(tl, &tl->dev[d], st.t0, k, grid + (size_t)(rows / tl->p * d) * cols, cols);
        if (tl->copy)
            paint_row(tl, &tl->copy[d], st.t0, k, grid + (size_t)(2 * d + 1) * cols, cols);
    }

    int bands = (cols + band - 1) / band;
    band = (cols + bands - 1) / bands; /* equal bands, so the last is not a sliver */
    char text[4096];
    print_wrapped(
        out, o.title ? o.title : vp__render_headline(tl, &st, o.costs, ", ", text, sizeof text),
        width);
    for (int c0 = 0; c0 < cols; c0 += band) {
        int n = cols - c0 < band ? cols - c0 : band;
        vp__render_putc(out, '\n');
        print_axis(out, pre, c0, n, st.t0, k);
        for (int r = 0; r < rows; r++) {
            vp__buf_printf(out, "%c%-*d |", rows > tl->p && r % 2 ? 'c' : 'd', pre - 3,
                           r / (rows / tl->p));
            print_cells(out, grid + (size_t)r * cols + c0, n, o.color);
            vp__render_puts(out, "|\n");
        }
    }
    free(grid);
    vp__render_putc(out, '\n');
    legend(tl, &st, k, text, sizeof text);
    print_wrapped(out, text, width);
    print_wrapped(out, vp__render_numbers(tl, &st, ", ", text, sizeof text), width);
    if (tl->has_mem) {
        size_t pos = (size_t)snprintf(text, sizeof text, "peak per device:");
        for (int d = 0; d < tl->p && pos < sizeof text; d++) {
            double peak = 0;
            for (int i = 0; i < tl->dev[d].n; i++)
                peak = fmax(peak, tl->dev[d].slices[i].mem);
            pos += (size_t)snprintf(text + pos, sizeof text - pos, " d%d %.4g", d, peak);
        }
        print_wrapped(out, text, width);
    }
    if (tl->host_peak) {
        size_t pos = (size_t)snprintf(text, sizeof text, "host peak per device:");
        for (int d = 0; d < tl->p && pos < sizeof text; d++)
            pos +=
                (size_t)snprintf(text + pos, sizeof text - pos, " d%d %.4g", d, tl->host_peak[d]);
        print_wrapped(out, text, width);
    }
    return VP_OK;
}

vp_status vp_render_ascii(const vp_timeline *tl, const vp_render_opts *opts, char **out,
                          vp_error *err) {
    vp__buf b = {0};
    return vp__render_finish(&b, draw_ascii(&b, tl, opts, err), out, err);
}
