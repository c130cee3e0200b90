/* The loss plot: a training log (vpipe train --log) read back and drawn as loss and
 * validation loss against steps; and the log cut where a resumed run continues it. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "render/render_internal.h"

#define PLOT_W 720.0
#define PLOT_H 420.0
#define LEFT 72.0
#define RIGHT 24.0
#define TOP 44.0
#define BOTTOM 52.0
#define TICKS 5
#define LOSS_INK "#2f6db5"
#define VAL_INK "#d9822b"
#define LOSS_MAX 1e15 /* the largest loss drawn: the scale stays finite */

/* The log's points: per line, its step and losses (NaN: none). */
typedef struct points {
    int n, cap;
    int *step;
    double *loss, *val;
} points;

static void points_free(points *pts) {
    free(pts->step);
    free(pts->loss);
    free(pts->val);
}

static vp_status points_grow(points *pts, vp_error *err) {
    if (pts->n < pts->cap)
        return VP_OK;
    int cap = pts->cap ? 2 * pts->cap : 64;
    int *step = realloc(pts->step, (size_t)cap * sizeof *step);
    if (step)
        pts->step = step;
    double *loss = step ? realloc(pts->loss, (size_t)cap * sizeof *loss) : NULL;
    if (loss)
        pts->loss = loss;
    double *val = loss ? realloc(pts->val, (size_t)cap * sizeof *val) : NULL;
    if (!val)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    pts->val = val;
    pts->cap = cap;
    return VP_OK;
}

/* A loss of the line's object o: a number, or null or absent (NaN). */
static vp_status loss_of(json_t *o, const char *key, double *v, const char *name, int line,
                         vp_error *err) {
    json_t *x = json_object_get(o, key);
    *v = NAN;
    if (!x || json_is_null(x))
        return VP_OK;
    if (!json_is_number(x) || !(fabs(json_number_value(x)) <= LOSS_MAX))
        return vp__fail(err, VP_EPARSE, "%s:%d: \"%s\" is not a number from -%g to %g, or null",
                        name, line, key, LOSS_MAX, LOSS_MAX);
    *v = json_number_value(x);
    return VP_OK;
}

/* One line of the log (len bytes at s): a JSON object whose "step" follows the last. */
static vp_status read_line(const char *s, size_t len, const char *name, int line, points *pts,
                           vp_error *err) {
    if (memchr(s, '\0', len)) /* jansson would read it as a space; no log line holds one */
        return vp__fail(err, VP_EPARSE, "%s:%d: not a JSON object (a NUL byte)", name, line);
    json_error_t jerr;
    json_t *o = json_loadb(s, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return vp__fail(err, VP_EPARSE, "%s:%d: not a JSON object (%s)", name, line,
                        o ? "another value" : jerr.text);
    }
    json_t *st = json_object_get(o, "step");
    json_int_t step = json_is_integer(st) ? json_integer_value(st) : 0;
    int last = pts->n ? pts->step[pts->n - 1] : 0;
    vp_status rc = VP_OK;
    if (step < 1 || step > INT_MAX)
        rc = vp__fail(err, VP_EPARSE, "%s:%d: \"step\" is not a whole number from 1 to %d", name,
                      line, INT_MAX);
    else if (step <= last)
        rc = vp__fail(err, VP_EPARSE, "%s:%d: step %lld after step %d (the steps must grow)", name,
                      line, (long long)step, last);
    if (rc == VP_OK)
        rc = points_grow(pts, err);
    if (rc == VP_OK)
        rc = loss_of(o, "loss", &pts->loss[pts->n], name, line, err);
    if (rc == VP_OK)
        rc = loss_of(o, "val_loss", &pts->val[pts->n], name, line, err);
    if (rc == VP_OK)
        pts->step[pts->n++] = (int)step;
    json_decref(o);
    return rc;
}

/* A log cut before a step: its earlier lines (kept, as they are) and how many were later. */
typedef struct cut {
    int first;
    vp__buf kept;
    int dropped;
} cut;

/* Every line of text (blank ones skipped) into pts, and into c (if any) by its step. */
static vp_status scan_log(const char *text, size_t size, const char *name, points *pts, cut *c,
                          vp_error *err) {
    int line = 0;
    for (size_t at = 0; at < size;) {
        const char *nl = memchr(text + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (text + at)) : size - at;
        line++;
        size_t k = 0;
        while (k < len && (text[at + k] == ' ' || text[at + k] == '\t' || text[at + k] == '\r'))
            k++;
        if (k < len) {
            vp_status rc = read_line(text + at, len, name, line, pts, err);
            if (rc != VP_OK)
                return rc;
            if (c && pts->step[pts->n - 1] < c->first) {
                vp__buf_add(&c->kept, text + at, len);
                vp__buf_add(&c->kept, "\n", 1);
            } else if (c) {
                c->dropped++;
            }
        }
        at += len + 1;
    }
    return VP_OK;
}

/* Every line of text; at least one loss to draw. */
static vp_status read_log(const char *text, size_t size, const char *name, points *pts,
                          vp_error *err) {
    vp_status rc = scan_log(text, size, name, pts, NULL, err);
    bool any = false;
    for (int i = 0; rc == VP_OK && i < pts->n; i++)
        any |= !isnan(pts->loss[i]) || !isnan(pts->val[i]);
    if (rc == VP_OK && !any)
        return vp__fail(err, VP_EPARSE, "%s: no losses to plot (%d steps)", name, pts->n);
    return rc;
}

/* The plot's scales: steps across, losses up. */
typedef struct scale {
    double x0, x1, y0, y1;
} scale;

static double px(const scale *sc, double step) {
    return LEFT + (step - sc->x0) / (sc->x1 - sc->x0) * (PLOT_W - LEFT - RIGHT);
}

static double py(const scale *sc, double v) {
    return PLOT_H - BOTTOM - (v - sc->y0) / (sc->y1 - sc->y0) * (PLOT_H - TOP - BOTTOM);
}

static scale scale_of(const points *pts) {
    scale sc = {pts->step[0], pts->step[pts->n - 1], INFINITY, -INFINITY};
    for (int i = 0; i < pts->n; i++)
        for (int k = 0; k < 2; k++) {
            double v = k ? pts->val[i] : pts->loss[i];
            if (!isnan(v)) {
                sc.y0 = fmin(sc.y0, v);
                sc.y1 = fmax(sc.y1, v);
            }
        }
    if (sc.x1 <= sc.x0)
        sc.x0 -= 1.0, sc.x1 += 1.0;
    double pad = sc.y1 > sc.y0 ? 0.05 * (sc.y1 - sc.y0) : 0.5;
    sc.y0 -= pad;
    sc.y1 += pad;
    return sc;
}

/* The axes: a frame, TICKS + 1 labelled grid lines each way and the axis names. */
static void draw_axes(vp__buf *b, const scale *sc) {
    double x0 = LEFT, x1 = PLOT_W - RIGHT, y0 = TOP, y1 = PLOT_H - BOTTOM;
    for (int k = 0; k <= TICKS; k++) {
        double v = sc->y0 + (sc->y1 - sc->y0) * k / TICKS, y = py(sc, v);
        double s = sc->x0 + (sc->x1 - sc->x0) * k / TICKS, x = px(sc, s);
        vp__buf_printf(b,
                       "<line class=\"vp-grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                       "stroke=\"#e3e7ec\"/>\n<text class=\"vp-muted\" x=\"%.1f\" y=\"%.1f\" "
                       "text-anchor=\"end\" fill=\"#5b6672\">%.3g</text>\n",
                       x0, y, x1, y, x0 - 6, y + 4, v);
        vp__buf_printf(b,
                       "<line class=\"vp-grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                       "stroke=\"#e3e7ec\"/>\n<text class=\"vp-muted\" x=\"%.1f\" y=\"%.1f\" "
                       "text-anchor=\"middle\" fill=\"#5b6672\">%.0f</text>\n",
                       x, y0, x, y1, x, y1 + 16, s);
    }
    vp__buf_printf(b,
                   "<rect class=\"vp-axis\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                   "fill=\"none\" stroke=\"#5b6672\"/>\n"
                   "<text class=\"vp-ink\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                   "fill=\"#1b2128\">step</text>\n"
                   "<text class=\"vp-ink\" x=\"16\" y=\"%.1f\" text-anchor=\"middle\" "
                   "fill=\"#1b2128\" transform=\"rotate(-90 16 %.1f)\">loss</text>\n",
                   x0, y0, x1 - x0, y1 - y0, (x0 + x1) / 2, PLOT_H - 12, (y0 + y1) / 2,
                   (y0 + y1) / 2);
}

/* One series (v[i] at step[i]) as polylines broken where it has no value; with dots (a
 * series measured now and then: validation), one line through its values, and dots. */
static void draw_series(vp__buf *b, const points *pts, const double *v, const scale *sc,
                        const char *ink, bool dots) {
    bool open = false;
    for (int i = 0; i <= pts->n; i++) {
        if (dots && i < pts->n && isnan(v[i]))
            continue;
        bool have = i < pts->n && !isnan(v[i]);
        if (have && !open)
            vp__buf_printf(b,
                           "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" "
                           "points=\"",
                           ink);
        if (have)
            vp__buf_printf(b, "%.1f,%.1f ", px(sc, pts->step[i]), py(sc, v[i]));
        if (!have && open)
            vp__buf_printf(b, "\"/>\n");
        open = have;
    }
    for (int i = 0; dots && i < pts->n; i++)
        if (!isnan(v[i]))
            vp__buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                           px(sc, pts->step[i]), py(sc, v[i]), ink);
}

static void draw_plot(vp__buf *b, const points *pts, const char *name) {
    scale sc = scale_of(pts);
    vp__buf_printf(b,
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                   "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, "
                   "sans-serif\" font-size=\"12\">\n"
                   "<style>@media (prefers-color-scheme: dark) {.vp-bg{fill:#16191d}"
                   ".vp-ink{fill:#dde3ea}.vp-muted{fill:#9aa5b1}.vp-grid{stroke:#2a3038}"
                   ".vp-axis{stroke:#9aa5b1}}</style>\n"
                   "<rect class=\"vp-bg\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
                   "<text class=\"vp-ink\" x=\"%.0f\" y=\"24\" font-size=\"14\" "
                   "fill=\"#1b2128\">",
                   PLOT_W, PLOT_H, PLOT_W, PLOT_H, LEFT);
    vp__render_xml(b, name);
    vp__buf_printf(b, ": loss and validation loss, steps %d to %d</text>\n", pts->step[0],
                   pts->step[pts->n - 1]);
    draw_axes(b, &sc);
    draw_series(b, pts, pts->loss, &sc, LOSS_INK, false);
    draw_series(b, pts, pts->val, &sc, VAL_INK, true);
    double lx = PLOT_W - RIGHT - 200;
    vp__buf_printf(b,
                   "<line x1=\"%.1f\" y1=\"32\" x2=\"%.1f\" y2=\"32\" stroke=\"%s\" "
                   "stroke-width=\"2\"/><text class=\"vp-ink\" x=\"%.1f\" y=\"36\" "
                   "fill=\"#1b2128\">loss</text>\n"
                   "<circle cx=\"%.1f\" cy=\"32\" r=\"3\" fill=\"%s\"/><text class=\"vp-ink\" "
                   "x=\"%.1f\" y=\"36\" fill=\"#1b2128\">validation loss</text>\n</svg>\n",
                   lx, lx + 20, LOSS_INK, lx + 26, lx + 80, VAL_INK, lx + 88);
}

vp_status vp_render_loss_file(const char *path, char **out, vp_error *err) {
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    vp_status rc = vp_read_file(path, VP_READ_MAX, &text, &len, err);
    if (rc == VP_OK)
        rc = vp_render_loss_svg(text, len, strcmp(path, "-") ? path : "stdin", out, err);
    free(text);
    return rc;
}

vp_status vp_render_loss_svg(const char *text, size_t size, const char *name, char **out,
                             vp_error *err) {
    points pts = {0};
    vp__buf b = {0};
    *out = NULL;
    vp_status rc = read_log(text ? text : "", text ? size : 0, name, &pts, err);
    if (rc == VP_OK)
        draw_plot(&b, &pts, name);
    points_free(&pts);
    return vp__render_finish(&b, rc, out, err);
}

vp_status vp_render_loss_cut(const char *text, size_t size, const char *name, int first,
                             char **kept, int *dropped, vp_error *err) {
    points pts = {0};
    cut c = {.first = first};
    vp_status rc = scan_log(text ? text : "", text ? size : 0, name, &pts, &c, err);
    points_free(&pts);
    *dropped = rc == VP_OK ? c.dropped : 0;
    return vp__render_finish(&c.kept, rc, kept, err);
}
