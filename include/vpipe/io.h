/* Reading and writing schedules: vpipe JSON and PyTorch's pipelining CSV.
 *
 * Module `io` (src/io/). Depends on schedule.
 *
 * vpipe JSON (versioned, round-trips exactly):
 *   {"format": "vpipe-schedule", "version": 1, "family": "1f1b",
 *    "p": 4, "stages": 4, "microbatches": 8, "route_len": 4,
 *    "placement": "single", "stage_device": [0,1,2,3],
 *    "recompute": "full"            (only when the schedule recomputes: full or selective)
 *    "vocab_parallel": true         (only with vocabulary parallelism)
 *    "offload": [0.5, ...]          (only when it offloads: each stage's share, S numbers)
 *    "host_limit": 8                (only when set: host units per device, schedule.h)
 *    "mb_first": [0,...]            (only when some microbatch starts elsewhere than 0)
 *    "devices": [[["F",0,0], ["BW",0,0], ...], ...]}
 * An op is [kind, stage, microbatch] (kind F, B, W, BW, R, O or L, or a vocabulary pass
 * EF, EB, S or T with its shard in place of the stage); an overlapped pair is ["F&B", s, j,
 * bkind, s2, j2] with bkind "B" or "BW".
 */
#ifndef VPIPE_IO_H
#define VPIPE_IO_H

#include <stddef.h>

#include "vpipe/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VP_JSON_VERSION 1

/* Serialises s as vpipe JSON (compact op rows, one device per line) into a new
 * NUL-terminated *text the caller frees with free(). VP_EINVAL when the family name is not
 * UTF-8, VP_ENOMEM; *text is NULL on failure. */
VP_API vp_status vp_json_write(const vp_schedule *s, char **text, vp_error *err);

/* Parses vpipe JSON text of len bytes into a new schedule. Checks the structure and
 * ranges (VP_EPARSE with line/column, or with the JSON path of the bad field), not the
 * schedule's validity: call vp_schedule_validate after. */
VP_API vp_status vp_json_read(const char *text, size_t len, vp_schedule **out, vp_error *err);

/* Parses a schedule from text of len bytes, detecting the format by content, and validates
 * it into a new *out (caller frees with vp_schedule_free; NULL on failure): vpipe JSON
 * when the first non-blank character is '{', else a PyTorch pipelining CSV (below).
 * VP_EPARSE for blank text, else the errors of vp_json_read, vp_torch_csv_read and
 * vp_schedule_validate. */
VP_API vp_status vp_schedule_parse(const char *text, size_t len, vp_schedule **out, vp_error *err);

/* Reads a schedule file (at most VP_READ_MAX bytes) with vp_schedule_parse. Errors of
 * vp_read_file and vp_schedule_parse; a message without a line and column starts with the
 * path. */
VP_API vp_status vp_schedule_load(const char *path, vp_schedule **out, vp_error *err);

/* ---- PyTorch CSV ---------------------------------------------------------------------
 *
 * PyTorch pipelining schedule CSV (torch.distributed.pipelining `_load_csv`, torchtitan's
 * `pipeline_parallel_schedule_csv`).
 *
 * No header; row r holds rank r's actions in execution order. A cell is
 * `<stage><TYPE><microbatch>` with global stage numbers and TYPE F (forward), I (input
 * backward = vpipe B), W (weight backward), B (full backward = vpipe BW); an overlapped
 * pair is `(0F7;7B3)OVERLAP_F_B`. "compute_only" files hold only those (and blank idle
 * cells); "compute_comms" files add `<s>SEND_F<j>` / `<s>RECV_F<j>` / `<s>SEND_B<j>` /
 * `<s>RECV_B<j>` (never between two stages of one rank), `<s>REDUCE_GRAD` after a stage's
 * last backward, optionally `<s>UNSHARD` / `<s>RESHARD`, and no blanks. The stage -> rank
 * map is inferred from the file.
 */

typedef enum {
    VP_TORCH_CSV_AUTO = 0,         /* reader: compute_comms when any communication cell */
    VP_TORCH_CSV_COMPUTE_ONLY = 1, /* F, I, W, B, OVERLAP_F_B and blanks */
    VP_TORCH_CSV_COMPUTE_COMMS = 2 /* plus SEND/RECV (and REDUCE_GRAD, UNSHARD, RESHARD) */
} vp_torch_csv_format;

/* Largest stage or microbatch index the reader accepts, plus one. */
#define VP_TORCH_CSV_MAX_INDEX (1 << 20)

/* Writes s as a PyTorch CSV into a new NUL-terminated string (caller frees with free()).
 * compute_comms places each RECV right before the op that needs it, each SEND right after
 * the op that produces it, and REDUCE_GRAD after each stage's last backward, as PyTorch's
 * own lowering does. VP_EUNSUPPORTED (message says why) when s cannot be expressed: the
 * bidirectional placement or any route other than stages 0..S-1 (PyTorch runs every
 * microbatch through every stage), a vocabulary-parallel schedule (PyTorch's actions have
 * no vocabulary passes: export the schedule built without them), a schedule that
 * offloads (PyTorch's actions have no O or L: the schedule without them,
 * vp_schedule_offload_shares with policy none, is what exports), or a schedule that
 * recomputes. PyTorch's actions have
 * no recomputation (torchtitan recomputes inside the backward by activation
 * checkpointing), so R is refused rather than dropped: the equivalent is the schedule
 * without recomputation (vp_schedule_recompute with VP_RECOMPUTE_NONE) exported, with
 * torchtitan's activation_checkpoint.mode set to "full" or "selective". VP_EINVAL for
 * format AUTO, VP_ENOMEM. */
VP_API vp_status vp_torch_csv_write(const vp_schedule *s, vp_torch_csv_format format, char **text,
                                    vp_error *err);

/* Reader options; NULL or zeroes: infer everything. */
typedef struct vp_torch_csv_opts {
    vp_torch_csv_format format; /* AUTO: decided by content */
    int p;                      /* expected ranks (rows), 0: any */
    int m;                      /* expected microbatches, 0: the largest index + 1 */
} vp_torch_csv_opts;

/* Parses a PyTorch CSV of len bytes into a new schedule (family "custom"; placement
 * single, loop or v when the inferred stage -> rank map is exactly that, else custom) and
 * validates it. Applies PyTorch's loader checks (rows = ranks, every stage on exactly one
 * rank, per stage #F = m, #I = #W, #B + #I = m, I/B after their F, W after its I) and
 * stricter ones: unknown cell types, negative or out-of-range stages and microbatches,
 * duplicate ops, an I and a B for one microbatch, text after a cell (PyTorch ignores it),
 * blanks in compute_comms, and for compute_comms every SEND paired with one RECV, none
 * between stages on one rank, each RECV before and each SEND after its op. VP_EPARSE with
 * line and column for text problems, VP_EVALIDATION for rule violations (with the line and
 * column of the offending cell when there is one), or the status of
 * vp_schedule_validate. */
VP_API vp_status vp_torch_csv_read(const char *text, size_t len, const vp_torch_csv_opts *opts,
                                   vp_schedule **out, vp_error *err);

/* torchtitan `pipeline_parallel_schedule` name that splits the model with the placement of
 * s: "PipelineScheduleSingle" (one stage per rank), "PipelineScheduleMulti" (loop with
 * several stages per rank), "ZBVZeroBubble" or, when s overlaps F&B, "DualPipeV" (V);
 * NULL when no name gives that placement. Static string. */
VP_API const char *vp_torch_schedule_name(const vp_schedule *s);

/* Writes advice for using an export of s into buf (one note per line, NUL-terminated,
 * truncated to size): which torchtitan schedule name to pair with the file, and what
 * PyTorch will not see as vpipe does (input-only backward inside OVERLAP_F_B, placements
 * torchtitan cannot split, schedules that cannot be exported at all). Returns the number
 * of warnings among the notes (0 when the export is faithful). */
VP_API int vp_torch_csv_notes(const vp_schedule *s, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
