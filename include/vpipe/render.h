/* Drawing schedules: terminal timeline, SVG picture (single or gallery), Chrome trace.
 *
 * Module `render` (src/render/): the timeline value and its three renderers. Depends on
 * sim and schedule.
 *
 * Every renderer reads a vp_timeline: per device, the ops that ran with their start and
 * end times and the memory after each, and, when the schedule offloads, the copies of the
 * device's copy engine on a lane of their own. vp_timeline_from_sim makes one from a
 * simulated schedule; the runtime fills one from measured times, so planned and measured
 * runs are drawn by the same code.
 */
#ifndef VPIPE_RENDER_H
#define VPIPE_RENDER_H

#include "vpipe/sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One op as it ran on a device. */
typedef struct vp_slice {
    vp_op op;
    double start, end; /* time units of the timeline */
    double mem;        /* memory after the op (timeline's mem_unit); ignored without has_mem */
} vp_slice;

/* Slices of one device in time order. */
typedef struct vp_track {
    vp_slice *slices;
    int n;
    int cap;
} vp_track;

typedef struct vp_timeline {
    char family[32];      /* schedule name for titles ("1f1b", "custom", "measured", ...) */
    int p;                /* devices */
    int S;                /* stages */
    int m;                /* microbatches */
    int has_mem;          /* slices carry memory */
    char mem_unit[16];    /* "units" (activation units) or e.g. "MiB" */
    double trace_us;      /* microseconds per time unit in Chrome traces (1000 for simulations) */
    int32_t *stage_chunk; /* [S] chunk of each stage on its device (for shading) */
    vp_track *dev;        /* [p] */
    vp_track *copy;       /* [p] each device's copies (O to host, L back; mem unused), or NULL
                             while there are none */
    double *host_peak;    /* [p] peak host memory (mem_unit), or NULL when unknown */
} vp_timeline;

/* Numbers every renderer prints, computed from a timeline alone. */
typedef struct vp_timeline_stats {
    double makespan;        /* latest end (times start at the earliest start) */
    double t0;              /* earliest start */
    double bubble;          /* 1 - mean busy / longest device span (the ZB paper's rate) */
    double bubble_makespan; /* 1 - mean busy / makespan */
    double peak_max;        /* largest memory value over devices (0 without has_mem) */
    int chunks;             /* largest stage_chunk + 1 */
} vp_timeline_stats;

/* An empty timeline of p devices and S stages (all chunks 0, has_mem 0, mem_unit "units",
 * trace_us 1000) named family (NULL: "custom") into a new *out (caller frees).
 * VP_EINVAL (p or S < 1, m < 0), VP_ENOMEM; *out is NULL on failure. */
VP_API vp_status vp_timeline_new(const char *family, int p, int S, int m, vp_timeline **out,
                                 vp_error *err);

/* Releases a timeline; NULL is a no-op. */
VP_API void vp_timeline_free(vp_timeline *tl);

/* Appends a slice to device d (callers append in time order). VP_EINVAL for a bad device
 * or end < start, VP_ENOMEM when memory runs out. */
VP_API vp_status vp_timeline_add(vp_timeline *tl, int d, vp_slice slice, vp_error *err);

/* Adds a copy to device d's copy lane (kind O or L), in its place by start time.
 * Errors as vp_timeline_add, and VP_EINVAL for another kind. */
VP_API vp_status vp_timeline_add_copy(vp_timeline *tl, int d, vp_slice slice, vp_error *err);

/* Sets the peak host memory of each device, peak[p] (copied). VP_ENOMEM. */
VP_API vp_status vp_timeline_set_host_peak(vp_timeline *tl, const double *peak, vp_error *err);

/* A new timeline of schedule s as simulated by sim (times, memory, chunks, family; the
 * copies and host peaks when s offloads). VP_EINVAL when sim does not belong to s. */
VP_API vp_status vp_timeline_from_sim(const vp_schedule *s, const vp_sim *sim, vp_timeline **out,
                                      vp_error *err);

/* Fills *st from tl. */
VP_API void vp_timeline_stats_get(const vp_timeline *tl, vp_timeline_stats *st);

/* Options shared by the renderers; zero-initialised means defaults. */
typedef struct vp_render_opts {
    const vp_costs *costs; /* printed in titles when non-NULL */
    const char *title;     /* replaces the generated title when non-NULL */
    int width;             /* terminal: columns (0: 100); SVG: plot width in px (0: auto) */
    int color;             /* terminal: ANSI colours */
    int fit;               /* terminal: scale time into one band instead of wrapping */
} vp_render_opts;

/* Every renderer returns its text as a new NUL-terminated string in *out (caller frees
 * with free(); NULL on failure) and writes nothing itself: the caller decides where the
 * text goes (vp_write_file, a socket, a browser). VP_ENOMEM when memory runs out. */

/* Terminal timeline: one row per device, time to the right, each op as kind and microbatch
 * (lowercase letters for odd chunks), '.' for idle, wrapped into bands of opts->width
 * columns (or squeezed into one band with opts->fit), a legend, bubble and peak memory;
 * with copies, a row "cD" under each device for its copy engine and the host peaks. O and
 * L take no compute time and are drawn on the copy rows only. opts may be NULL. VP_EINVAL
 * when opts->width leaves no room for the timeline. */
VP_API vp_status vp_render_ascii(const vp_timeline *tl, const vp_render_opts *opts, char **out,
                                 vp_error *err);

/* SVG picture: title (family, p, m, costs, bubble, peak), legend, one lane per device with
 * coloured slices (F, B, W, BW, F&B; lighter shades for later chunks) and microbatch
 * numbers, with copies a thin copy-engine lane under it (O, L), the memory curve of each
 * device under its lane, a time axis. opts may be NULL. */
VP_API vp_status vp_render_svg(const vp_timeline *tl, const vp_render_opts *opts, char **out,
                               vp_error *err);

/* SVG gallery: n timelines stacked as panels on one shared time scale and one shared
 * memory scale, so they compare by eye. opts->title heads the page (NULL: generated from
 * the first timeline). VP_EINVAL when n < 1. */
VP_API vp_status vp_render_svg_gallery(const vp_timeline *const *tls, int n,
                                       const vp_render_opts *opts, char **out, vp_error *err);

/* Chrome trace JSON (Perfetto, chrome://tracing): one process per device holding one track
 * of slices (name "<kind> <microbatch>", args kind, stage, microbatch, chunk; stage2,
 * microbatch2, bkind for F&B), with copies a second track "copy engine" of O and L slices
 * (the O and L ops, which take no compute time, only there), and, with has_mem, a memory
 * counter. Times are scaled by tl->trace_us. */
VP_API vp_status vp_render_trace(const vp_timeline *tl, char **out, vp_error *err);

/* The loss plot of a training log (vpipe train --log; text of size bytes, name its file for
 * messages and the title): one JSON object per line (blank lines skipped) with "step", a
 * whole number greater than the line before's, and "loss" and "val_loss", numbers, null
 * or absent (other keys ignored), so logs of a run and of its extension concatenate. Draws
 * loss (a line) and validation loss (dots) against steps as an SVG page. VP_EPARSE naming
 * the line and the problem (not an object, a step missing or not growing, a loss not a
 * number, no loss at all), VP_ENOMEM. */
VP_API vp_status vp_render_loss_svg(const char *text, size_t size, const char *name, char **out,
                                    vp_error *err);

/* vp_render_loss_svg of the file at path ("-": standard input), read with vp_read_file
 * (VP_READ_MAX). Its errors and vp_read_file's. */
VP_API vp_status vp_render_loss_file(const char *path, char **out, vp_error *err);

/* A training log (as vp_render_loss_svg reads it) cut before step first, for a run that
 * continues it from step first: *kept (caller frees with vp_free) holds its lines of
 * earlier steps as they were, each ending in a newline (blank lines dropped), and
 * *dropped counts the lines of step first or later (a run past that point, replaced).
 * VP_EPARSE naming the line that is not a log line or whose step does not grow,
 * VP_ENOMEM. */
VP_API vp_status vp_render_loss_cut(const char *text, size_t size, const char *name, int first,
                                    char **kept, int *dropped, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
