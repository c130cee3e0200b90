/* The schedule value: the one thing every part of vpipe reads.
 *
 * Module `schedule` (src/schedule/): the value, its validator, the rules of a pass
 * (which pass waits for which) and the event-driven replay that follows them. Depends on
 * base.
 *
 * A schedule has p devices, S stages and m microbatches. A placement maps every stage to
 * a device and a chunk (the stage's rank among the stages of its device). Every
 * microbatch travels a route: a contiguous run of route_len stages starting at its first
 * stage (0 for every microbatch in all families but DualPipe, whose two model copies are
 * the stage ranges [0, p) and [p, 2p)). Each device holds an ordered list of ops.
 *
 * Passes of (stage s, microbatch j): F forward, B input backward, W weight backward, BW
 * full backward (B then W as one op), R recomputation. F&B is one overlapped unit that
 * runs the forward of (s, j) and the backward (B or BW, `bkind`) of (s2, j2) together.
 *
 * Recomputation. In a schedule that recomputes (recompute full or selective) every F
 * drops part of what it saved: everything but the stage's input (full), or the attention
 * core's saved tensors (selective). The R of the same (stage, microbatch), on the stage's
 * device after its F and before its backward, runs the forward again to rebuild them.
 *
 * Offload. A stage with offload[s] > 0 may send that share of what its F keeps to host
 * memory and bring it back before the backward. Each device has one copy engine beside
 * its compute, running its copies one at a time in the order they are issued. For an
 * offloaded (stage, microbatch) the device's list holds an O and an L, both taking no
 * compute time:
 *   - the copy to host is issued when F ends; O is where the device lets go of the bytes:
 *     the device waits there for that copy to end (a stall if it has not);
 *   - L takes the bytes back on the device and issues the copy from host; the backward
 *     (and a recomputation, which reads what was kept) waits for that copy to end.
 * So device memory changes only at ops of its list, and host memory (taken when the copy
 * to host starts, given back when the copy from host ends) only in the order copies are
 * issued: both peaks depend on the orders alone, as without offload.
 * Vocabulary parallelism (vocab_parallel). The input embedding's token table and the output
 * layer (head and softmax cross-entropy) are split by vocabulary into p shards, shard d on
 * device d; a route's first stage keeps the rest of the embedding (positions), its last
 * stage the final norm. Each (shard, microbatch) has four passes, the op's `stage` naming
 * the shard:
 *   EF  the embedding's forward: the shard's rows of the microbatch's tokens; the shards'
 *       parts add up to the input of the route's first stage;
 *   EB  the embedding's backward: the shard's token-table gradient, from the input gradient
 *       of the route's first stage;
 *   S   the output layer's forward: the shard's logits of the last stage's output and their
 *       softmax statistics (maximum, sum of exponentials, target logit);
 *   T   the output layer's backward: the softmax from every shard's statistics (and the
 *       loss), the shard's part of the last stage's output gradient (the parts add up) and
 *       the shard's head gradient.
 * F of a route's first stage waits for EF of every shard, S for F of the route's last
 * stage, T for S of every shard (the statistics' all-reduce), B (or BW) of the last stage
 * for T of every shard (the gradient's sum), EB for the backward of the first stage.
 */
#ifndef VPIPE_SCHEDULE_H
#define VPIPE_SCHEDULE_H

#include <stdint.h>

#include "vpipe/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    VP_OP_F = 0,  /* forward */
    VP_OP_B = 1,  /* backward for the input (activation gradient) */
    VP_OP_W = 2,  /* backward for the weights */
    VP_OP_BW = 3, /* full backward: B then W */
    VP_OP_FB = 4, /* overlapped F of (stage, mb) with the backward of (stage2, mb2) */
    VP_OP_R = 5,  /* recomputation: the forward again, rebuilding what F dropped */
    VP_OP_EF = 6, /* vocabulary parallelism: the embedding's forward on shard `stage` */
    VP_OP_EB = 7, /* ... the embedding's backward on shard `stage` */
    VP_OP_S = 8,  /* ... the output layer's forward and softmax statistics on shard `stage` */
    VP_OP_T = 9,  /* ... the output layer's backward on shard `stage` */
    VP_OP_O = 10, /* offload: the offloaded bytes leave the device (after their copy) */
    VP_OP_L = 11  /* reload: the offloaded bytes come back (their copy starts here) */
} vp_op_kind;

#define VP_OP_KIND_COUNT 12

/* Whether kind is one of the vocabulary passes (EF, EB, S, T), whose `stage` is a shard. */
static inline int vp_op_kind_is_vocab(int kind) {
    return kind >= VP_OP_EF && kind <= VP_OP_T;
}

/* What the R passes of a schedule rebuild (and so what F keeps until R). */
typedef enum {
    VP_RECOMPUTE_NONE = 0,      /* no R: F keeps everything its backward needs */
    VP_RECOMPUTE_SELECTIVE = 1, /* F drops the attention core's saved tensors; R rebuilds them */
    VP_RECOMPUTE_FULL = 2       /* F keeps only the stage's input; R runs the whole forward */
} vp_recompute;

/* Parses "none", "selective" or "full". VP_EINVAL otherwise (*out unchanged). */
VP_API vp_status vp_recompute_parse(const char *text, vp_recompute *out, vp_error *err);
/* "none", "selective", "full" ("?" for anything else). Static string. */
VP_API const char *vp_recompute_name(vp_recompute r);

typedef struct vp_op {
    uint8_t kind;   /* vp_op_kind */
    uint8_t bkind;  /* for VP_OP_FB: VP_OP_B or VP_OP_BW, the backward half; else 0 */
    int32_t stage;  /* stage of the pass (of the forward half for VP_OP_FB) */
    int32_t mb;     /* microbatch of the pass (of the forward half for VP_OP_FB) */
    int32_t stage2; /* VP_OP_FB only: stage of the backward half */
    int32_t mb2;    /* VP_OP_FB only: microbatch of the backward half */
} vp_op;

typedef enum {
    VP_PLACE_SINGLE = 0, /* S = p, stage s on device s */
    VP_PLACE_LOOP = 1,   /* S = v*p, stage s on device s mod p, chunk s / p */
    VP_PLACE_V = 2,      /* S = 2p, device i holds stages i and 2p-1-i */
    VP_PLACE_BIDIR = 3,  /* two p-stage copies; device r holds stage r and p+(p-1-r) */
    VP_PLACE_CUSTOM = 4  /* any stage -> device map (e.g. read from a file) */
} vp_placement_kind;

/* Ops of one device in execution order. */
typedef struct vp_oplist {
    vp_op *ops;
    int n;
    int cap;
} vp_oplist;

typedef struct vp_schedule {
    char family[32]; /* generator name ("1f1b", ...) or "custom" */
    int p;           /* devices */
    int S;           /* stages */
    int m;           /* microbatches */
    int route_len;   /* stages one microbatch passes through (S except DualPipe) */
    vp_placement_kind placement;
    vp_recompute recompute; /* what its R ops rebuild (VP_RECOMPUTE_NONE: it has none) */
    int vocab_parallel;     /* 1: the vocabulary is split over the p devices (EF, EB, S, T) */
    double *offload;        /* [S] share in [0, 1] of what a stage's F keeps that its O sends
                               to host (0: the stage offloads nothing; every entry 0 for a
                               schedule without offload) */
    double host_limit;      /* most host memory the offloads of one device may hold, in units
                               of activation (vp_schedule_host_peak); 0: no limit */
    int32_t *stage_device;  /* [S] device of each stage */
    int32_t *stage_chunk;   /* [S] rank of the stage among its device's stages */
    int32_t *mb_first;      /* [m] first stage of each microbatch's route */
    vp_oplist *dev;         /* [p] ops per device */
} vp_schedule;

/* The shape of a schedule: devices, stages, microbatches and the stage placement. */
typedef struct vp_shape {
    int p, S, m;
    vp_placement_kind placement;
} vp_shape;

/* Allocates an empty schedule of the given shape into *out and fills stage_device,
 * stage_chunk and mb_first from the placement (VP_PLACE_CUSTOM leaves every stage on
 * device 0, for the caller to set, then call vp_schedule_set_chunks). S must fit the
 * placement: SINGLE S=p, LOOP S a multiple of p, V S=2p, BIDIR S=2p (route_len p,
 * microbatches alternate copies: even mb on copy 0, odd on copy 1, changeable by the
 * caller). family NULL is "custom". VP_EINVAL (p, S or m < 1, S not fitting), VP_ENOMEM;
 * *out is NULL on failure. Caller frees with vp_schedule_free. */
VP_API vp_status vp_schedule_new(const char *family, vp_shape shape, vp_schedule **out,
                                 vp_error *err);

/* Releases a schedule; NULL is a no-op. */
VP_API void vp_schedule_free(vp_schedule *s);

/* Appends op to device d's list (0 <= d < p, else the library aborts: a programmer
 * error). The op itself is checked by vp_schedule_validate. VP_ENOMEM on allocation
 * failure. */
VP_API vp_status vp_schedule_push(vp_schedule *s, int d, vp_op op);

/* Convenience: appends a single pass (any kind but F&B; else the library aborts). */
VP_API vp_status vp_schedule_push_pass(vp_schedule *s, int d, vp_op_kind kind, int stage, int mb);

/* Recomputes stage_chunk from stage_device (chunk = rank of the stage, by stage index,
 * among the stages of its device). VP_EINVAL (and nothing changed) when a stage's device
 * is outside 0..p-1, VP_ENOMEM. */
VP_API vp_status vp_schedule_set_chunks(vp_schedule *s, vp_error *err);

/* A copy of s with empty op lists into a new *out (caller frees): its family, shape,
 * placement, routes, recomputation, vocabulary parallelism, offload shares and host
 * limit. VP_ENOMEM; *out is NULL on failure. */
VP_API vp_status vp_schedule_copy_shape(const vp_schedule *s, vp_schedule **out, vp_error *err);

/* Number of chunks (stages) on the busiest device. */
VP_API int vp_schedule_chunks_per_device(const vp_schedule *s);

/* Total number of ops over all devices. */
VP_API long vp_schedule_op_count(const vp_schedule *s);

/* True when the two schedules have the same shape, placement, routes, recomputation,
 * vocabulary parallelism, offload shares, host limit and op lists (the family name is not
 * compared). */
VP_API int vp_schedule_equal(const vp_schedule *a, const vp_schedule *b);

/* Last stage of microbatch mb's route (where its loss is computed). */
static inline int vp_schedule_last_stage(const vp_schedule *s, int mb) {
    return s->mb_first[mb] + s->route_len - 1;
}

/* Parameter copies a schedule needs: 2 for the bidirectional placement (DualPipe keeps
 * both model copies on every device and sums their gradients), 1 otherwise. */
VP_API int vp_schedule_param_copies(const vp_schedule *s);

/* Whether s offloads anything (some stage's share is above 0). */
VP_API int vp_schedule_offloads(const vp_schedule *s);

/* Host memory each device's offloads hold at most, in units of activation (a stage holds
 * 1/v unit per microbatch, v its device's chunks; each copy of the bidirectional
 * placement a whole unit), into peak[p] (caller storage): an offloaded (stage, mb) takes
 * offload[stage] of its stage's unit when its F ends (its copy to host is issued) and
 * gives it back at its L's copy. With recomputation this counts the whole activation, not
 * the part F keeps: a bound. The ops must be on their routes (vp_schedule_validate checks
 * them). VP_ENOMEM (peak then holds 0 for every device). */
VP_API vp_status vp_schedule_host_peak(const vp_schedule *s, double *peak, vp_error *err);

/* Names: "F", "B", "W", "BW", "F&B", "R", "EF", "EB", "S", "T", "O", "L"; placement "single",
 * "loop", "v", "bidir", "custom". Static strings. */
VP_API const char *vp_op_kind_name(vp_op_kind kind);
VP_API const char *vp_placement_name(vp_placement_kind placement);

/* The op kind or placement named `name` (exactly as vp_op_kind_name or vp_placement_name
 * writes it) into *kind / *placement. VP_EINVAL (nothing written) for any other string. */
VP_API vp_status vp_op_kind_parse(const char *name, vp_op_kind *kind);
VP_API vp_status vp_placement_parse(const char *name, vp_placement_kind *placement);

/* Writes a short label of op into buf ("F3.1" = F of stage 3, microbatch 1;
 * "F0.7&BW7.3" for an overlapped pair). Returns buf. */
VP_API char *vp_op_format(const vp_op *op, char *buf, int size);

/* Checks the schedule: shape and placement are consistent; each (stage, microbatch) on
 * its route has exactly F plus either BW or B and W, plus one R when the schedule
 * recomputes (none otherwise), plus at most one O and then exactly one L when its stage
 * offloads (none otherwise); with vocabulary parallelism each (shard, microbatch) has
 * exactly one EF, EB, S and T on the shard's device (none otherwise); no pass is outside
 * its route; every op sits on its stage's device; on each device the order respects
 * dependencies (R after F; B/BW after F and after R; W after B; T after S; O after F and
 * before R and the backward: an offload of what is already freed is refused; L after O
 * and before R and the backward: a reload after its backward is refused); every offload
 * share is in [0, 1] and, with a host limit, no device's host memory passes it
 * (vp_schedule_host_peak); and replaying all devices together terminates (no
 * cross-device deadlock).
 * Returns VP_OK or VP_EVALIDATION / VP_EDEADLOCK with a message naming the device, the
 * position in its list and the op. */
VP_API vp_status vp_schedule_validate(const vp_schedule *s, vp_error *err);

/* The recomputing version of s under mode into a new *out (caller frees): a copy of s
 * (family name, vocabulary passes and offload included) with an R of (stage, mb) right
 * before every backward (B, BW or the backward half of an F&B), and out->recompute = mode.
 * mode VP_RECOMPUTE_NONE gives s without any R. R ops s already has are dropped first, so
 * the transform is idempotent. The result is valid whenever s is (R waits only for an
 * earlier op of its own device). VP_EINVAL for an unknown mode, VP_ENOMEM. */
VP_API vp_status vp_schedule_recompute(const vp_schedule *s, vp_recompute mode, vp_schedule **out,
                                       vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
