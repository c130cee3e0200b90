/* Reading and writing schedules.
 *
 * vpipe JSON (versioned, round-trips exactly):
 *   {"format": "vpipe-schedule", "version": 1, "family": "1f1b",
 *    "p": 4, "stages": 4, "microbatches": 8, "route_len": 4,
 *    "placement": "single", "stage_device": [0,1,2,3],
 *    "mb_first": [0,...]            (only when some microbatch starts elsewhere than 0)
 *    "devices": [[["F",0,0], ["BW",0,0], ...], ...]}
 * An op is [kind, stage, microbatch]; an overlapped pair is ["F&B", s, j, bkind, s2, j2]
 * with bkind "B" or "BW".
 */
#ifndef VPIPE_IO_H
#define VPIPE_IO_H

#include <stddef.h>
#include <stdio.h>

#include "vpipe/schedule.h"

#define VP_JSON_VERSION 1

/* Serialises s as vpipe JSON (compact op rows, one device per line) into a new
 * NUL-terminated string the caller frees with free(). NULL when memory runs out. */
char *vp_json_write(const vp_schedule *s);

/* Parses vpipe JSON text of len bytes into a new schedule. Checks the structure and
 * ranges (VP_EPARSE with line/column, or with the JSON path of the bad field), not the
 * schedule's validity: call vp_schedule_validate after. */
vp_status vp_json_read(const char *text, size_t len, vp_schedule **out, vp_error *err);

/* Reads a whole file ("-" is stdin) into a new NUL-terminated buffer (caller frees);
 * *len receives its length. VP_EIO with the reason when it cannot be read. */
vp_status vp_read_file(const char *path, char **text, size_t *len, vp_error *err);

/* Reads a schedule file and validates it: vpipe JSON when its first non-blank character
 * is '{', else a PyTorch pipelining CSV (torch_csv.h). */
vp_status vp_schedule_load(const char *path, vp_schedule **out, vp_error *err);

#endif
