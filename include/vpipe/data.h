/* Byte-level text data: a corpus split into training and validation text, and
 * deterministic windows of it.
 *
 * Module `data` (src/data/). Depends on base.
 */
#ifndef VPIPE_DATA_H
#define VPIPE_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vpipe/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A byte corpus split into training text and validation text (the last part). */
typedef struct vp_data vp_data;

/* The default corpus: the King James Bible of Debian's bible-kjv-text package
 * (/usr/lib/bible.data) when installed, else NULL. Static string. */
VP_API const char *vp_data_default_path(void);

/* Largest corpus vpipe reads: 1 GiB, for the file and for the text it decodes to. */
#define VP_DATA_MAX ((size_t)1 << 30)

/* Loads path: a plain text file, or a Bible Retrieval System data file ("EC02"
 * windows of LZW, as bible-kjv-text ships), decoded. The last val_fraction of the
 * bytes is validation text. Reads regular files only (or "-", standard input), at most
 * VP_DATA_MAX bytes, refusing anything else before reading it. VP_EIO naming the file
 * and the reason for a missing, unreadable, non-regular, empty, corrupt or too large
 * file; VP_EINVAL for val_fraction outside (0, 1); VP_ENOMEM. */
VP_API vp_status vp_data_load(const char *path, double val_fraction, vp_data **out, vp_error *err);

/* The same from len bytes in memory (copied; name is used in messages). */
VP_API vp_status vp_data_parse(const void *bytes, size_t len, const char *name, double val_fraction,
                               vp_data **out, vp_error *err);

VP_API void vp_data_free(vp_data *data);

/* Byte counts of the two parts. */
VP_API size_t vp_data_train_bytes(const vp_data *data);
VP_API size_t vp_data_val_bytes(const vp_data *data);

/* What identifies the corpus a checkpoint was trained on: FNV-1a 64 of its (decoded)
 * bytes, then of the training part's length (8 bytes, little-endian), computed once when
 * it is loaded. */
VP_API uint64_t vp_data_digest(const vp_data *data);

/* rows windows of seq_len tokens in caller storage: tokens and targets [rows*seq_len]. */
typedef struct vp_batch {
    int rows, seq_len;
    uint8_t *tokens, *targets;
} vp_batch;

/* Fills batch with windows of seq_len+1 bytes of one part: targets are tokens shifted by
 * one. Training window positions are a pure function of (seed, index, row); validation
 * windows of (index, row) only (seed is not used). VP_EIO when the part holds fewer
 * than seq_len+1 bytes. */
VP_API vp_status vp_data_batch(const vp_data *data, bool validation, uint64_t seed, uint64_t index,
                               const vp_batch *batch, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
