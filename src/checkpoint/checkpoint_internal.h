/* What the checkpoint module's files share: the part-file format (format.c) and the
 * commit record (meta.c), used by the directory's protocol (checkpoint.c). */
#ifndef VPIPE_CHECKPOINT_INTERNAL_H
#define VPIPE_CHECKPOINT_INTERNAL_H

#include <stdint.h>

#include "base/internal.h"
#include "vpipe/checkpoint.h"

/* Sizes of the part file's header, of a slice record and of the trailing checksum. */
enum { VP__CKPT_HEADER = 160, VP__CKPT_SLICE = 16, VP__CKPT_TRAILER = 8 };

/* The commit record's name in a checkpoint directory, and the most parts a set has (so
 * that the record is at most VP__CKPT_META_MAX bytes). */
#define VP__CKPT_META "meta.json"
#define VP__CKPT_MAX_PARTS (1 << 16)
#define VP__CKPT_META_MAX ((size_t)64 * VP__CKPT_MAX_PARTS + 4096)

/* ---- part files (format.c) ---------------------------------------------------------- */

/* The header of a part file holding info, total bytes long, into h[VP__CKPT_HEADER]. */
void vp__ckpt_encode_header(uint8_t *h, const vp_checkpoint_info *info, uint64_t total);

/* The largest part file a checkpoint of model cfg can hold (every element once, in
 * slices of one element): larger files are refused before they are read. */
uint64_t vp__ckpt_max_bytes(const vp_model_config *cfg);

/* Index of the first of n little-endian floats at bytes that is not finite; n if none. */
size_t vp__ckpt_nonfinite_at(const uint8_t *bytes, size_t n);

/* The names of the three arrays of a slice, for messages. */
extern const char *const vp__ckpt_array_names[3];

/* A part file's bytes: in memory (mem), or in the regular file fd (read with pread). */
typedef struct vp__ckpt_source {
    const char *name; /* in messages */
    const uint8_t *mem;
    int fd;
    uint64_t size;
} vp__ckpt_source;

/* What a reader does with a part file as it streams past, after the checksum held:
 * header (optional) sees the checked header first and may refuse the file; slice sees
 * each slice [at, at + n) of the whole model's elements; floats sees each run of its
 * arrays: elements [at, at + n) of array a (0 parameters, 1 and 2 the AdamW moments),
 * little-endian floats at bytes, all finite. */
typedef struct vp__ckpt_sink {
    void *ctx;
    vp_status (*header)(void *ctx, const vp_checkpoint_info *info, vp_error *err);
    vp_status (*slice)(void *ctx, size_t at, size_t n, vp_error *err);
    void (*floats)(void *ctx, int a, size_t at, size_t n, const uint8_t *bytes);
} vp__ckpt_sink;

/* Reads and checks a part file, in this order: magic, version, its length against the
 * length its header announces, against limit (0: none) and against the header alone,
 * then the checksum of every byte (streamed, in constant memory), then the header's
 * fields and every slice, passed to sink (NULL: checks only). Fills *info (optional).
 * VP_EPARSE with the file's name and the problem; VP_EIO when the file cannot be read;
 * what sink returns. */
vp_status vp__ckpt_read(const vp__ckpt_source *src, uint64_t limit, const vp__ckpt_sink *sink,
                        vp_checkpoint_info *info, vp_error *err);

/* ---- the commit record (meta.c) --------------------------------------------------- */

/* File name of part `part` at `step` ("part-<k>.step-<s>.ckpt") into buf. */
void vp__ckpt_part_name(char *buf, size_t size, int part, int step);

/* The commit record m as JSON text with a final newline (caller frees), or NULL. */
char *vp__ckpt_meta_text(const vp_checkpoint_meta *m);

#endif
