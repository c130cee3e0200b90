/* Pieces shared by the renderers: text building, titles and op labels. */
#ifndef VPIPE_RENDER_INTERNAL_H
#define VPIPE_RENDER_INTERNAL_H

#include <stddef.h>
#include <string.h>

#include "base/internal.h"
#include "vpipe/render.h"

/* Appends a string / one character to a renderer's text. */
static inline void vp__render_puts(vp__buf *out, const char *s) {
    vp__buf_add(out, s, strlen(s));
}
static inline void vp__render_putc(vp__buf *out, char c) {
    vp__buf_add(out, &c, 1);
}

/* Ends a renderer whose drawing into b returned rc: on VP_OK hands b's text to *out (a new
 * string; VP_ENOMEM when an append failed), otherwise releases b and returns rc with *out
 * NULL. */
vp_status vp__render_finish(vp__buf *b, vp_status rc, char **out, vp_error *err);

/* Writes the headline "<family>, p=4 m=8 v=2, F=1 B=1 W=1 c=0" (costs when given) into buf,
 * parts joined by sep. Returns buf. */
char *vp__render_headline(const vp_timeline *tl, const vp_timeline_stats *st, const vp_costs *costs,
                          const char *sep, char *buf, size_t size);

/* Writes "F=1 B=1 W=1 c=0" (and " F&B=x" when set) into buf. Returns buf. */
char *vp__render_costs(const vp_costs *c, char *buf, size_t size);

/* Writes "bubble 27.27% (makespan 18.18%), makespan 66, peak 4 units" into buf, parts
 * joined by sep. Returns buf. */
char *vp__render_numbers(const vp_timeline *tl, const vp_timeline_stats *st, const char *sep,
                         char *buf, size_t size);

/* Chunk of the stage of a pass of kind (0 when the stage is out of range, and for a
 * vocabulary pass, whose stage is a shard). */
int vp__render_chunk(const vp_timeline *tl, int kind, int stage);

#endif
