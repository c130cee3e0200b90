/* The pipeline's shared state: what pipeline.c sets up and reports, and exec.c's ranks
 * work on. Private to src/runtime/. */
#ifndef VPIPE_RUNTIME_EXEC_H
#define VPIPE_RUNTIME_EXEC_H

#include "runtime/runtime_internal.h"
#include "runtime/transport/transport.h"

/* One process's part of a run: the ranks [rank_lo, rank_hi) it hosts (all of them on the
 * threads transport, one under MPI) and their stages. Rank r * p + d is device d of
 * replica r (vpipe/runtime.h). */
typedef struct vp__run {
    const vp_pipeline_options *o;
    const vp_schedule *s;
    const vp_data *data;
    vp_train_callback callback;
    void *user;
    vp_transport *t;
    int rank_lo, rank_hi;
    int D, P;                 /* replicas; ranks (p * D) */
    int L, blocks;            /* layers; gradient-norm blocks of the model */
    int *l0;                  /* [route_len + 1] */
    size_t io_floats;         /* B*T*C: one tensor between stages */
    vp_stage **stage;         /* [D * S] stage st of replica k at k * S + st, NULL for the
                                 ranks this process does not host */
    int K;                    /* vocabulary shards: the schedule's p, or 0 without vocabulary
                                 parallelism */
    vp_stage **vocab;         /* [D * p] the vocabulary stage (shard d) of device d of replica
                                 k at k * p + d, NULL where not hosted */
    vp_mem **mem;             /* [P], likewise */
    vp_mem **host;            /* [P] each rank's host pool (offloaded activations), likewise */
    uint8_t *offloaded;       /* [S * m] the pairs the schedule offloads, or NULL: none */
    int **reduce_at;          /* [p][n_d] the stage whose last weight gradient of a step op k
                                 of device d completes, or -1 (vp__dp_plan) */
    const vp_cost_model *emu; /* emulation: per-stage pass times (ms) to wait; NULL computes */
    vp_checkpoint_lock *lock; /* the checkpoint directory, held by the process of rank 0 */
    /* Gathered at the end (on the process of rank 0 for times and digest). */
    double *peak, *busy, *span;         /* [P] */
    double *memory;                     /* [P * VP_MEM_CATEGORIES] peak bytes per category */
    double **t_start, **t_end, **t_mem; /* [p][n_d] replica 0's last step: ms, MiB */
    double **t_copy0, **t_copy1;        /* [p][n_d] ... and the copies of its O and L ops */
    uint64_t digest;
    vp_train_result res; /* filled by the process's lowest rank */
} vp__run;

typedef struct vp__copier vp__copier;

/* One rank of the run r, as its thread (or MPI process) works on it. */
typedef struct vp__rank {
    vp__run *r;
    int rank;
    int dev, replica;                /* rank = replica * p + dev */
    vp_batch batch;                  /* one microbatch */
    double compute_start;            /* when the current op's inputs had arrived (< 0: not yet) */
    int counting;                    /* 1 while training ops run: tensors in flight are counted */
    double peak, busy, span;         /* training peak bytes; last step's busy time and span */
    double *t_start, *t_end, *t_mem; /* [n] last step's op times */
    double *t_copy0, *t_copy1;       /* [n] for O and L ops, last step's copy times */
    vp__copier *copier;              /* the rank's copy engine (schedules that offload) */
} vp__rank;

/* Position of stage st on its route. */
static inline int vp__route_pos(const vp_schedule *s, int st) {
    return st % s->route_len;
}

/* The layers and parts stage st holds. */
static inline vp_stage_range vp__stage_range(const vp__run *r, int st) {
    vp_stage_range range = vp_split_range(r->l0, vp__route_pos(r->s, st), r->s->route_len);
    range.vocab_shards = r->K;
    return range;
}

/* Stage st of the rank's replica (NULL when another process hosts it). */
static inline vp_stage *vp__stage_at(const vp__rank *c, int st) {
    return c->r->stage[c->replica * c->r->s->S + st];
}

/* The rank's vocabulary stage (shard dev), or NULL without vocabulary parallelism. */
static inline vp_stage *vp__vocab_at(const vp__rank *c) {
    return c->r->K ? c->r->vocab[c->replica * c->r->s->p + c->dev] : NULL;
}

/* The rank of device dev in the rank's replica. */
static inline int vp__peer(const vp__rank *c, int dev) {
    return c->replica * c->r->s->p + dev;
}

/* Whether the rank's device holds stage st. */
static inline int vp__holds(const vp__rank *c, int st) {
    return c->r->s->stage_device[st] == c->dev;
}

/* ---- data parallelism (dp.c) ---- */

/* Allocates and fills r->reduce_at from the schedule (freed by vp__dp_plan_free, which
 * takes a partly filled one). VP_ENOMEM. */
vp_status vp__dp_plan(vp__run *r, vp_error *err);
void vp__dp_plan_free(vp__run *r);

/* The shard of stage st this rank's replica owns (the whole stage with one replica). */
vp_shard vp__dp_shard(const vp__rank *c, int st);

/* Reduces stage st's gradients across the replicas (vpipe/runtime.h): after it, the
 * rank's shard holds the sum in replica order, and without ZeRO the whole stage does.
 * Nothing with one replica. */
vp_status vp__dp_reduce(vp__rank *c, int st, vp_error *err);

/* ZeRO-1, after the AdamW step of the shards: every replica sends its shard of each of
 * the rank's stages' parameters to the others and takes theirs. Nothing without ZeRO. */
vp_status vp__dp_gather_params(vp__rank *c, vp_error *err);

/* Waits ms from now (an emulated pass or copy). */
void vp__emulate_for(double ms);

/* ---- the copy engine (copy.c) ---- */

/* Starts rank c's copy engine (a thread) into *out. VP_ENOMEM, VP_ERUNTIME. */
vp_status vp__copier_new(vp__rank *c, vp__copier **out, vp_error *err);

/* Stops it (after the copies issued) and frees it; NULL is a no-op. */
void vp__copier_free(vp__copier *cp);

/* Issues the copy of (stage, mb): kind VP_OP_O to host, VP_OP_L back. */
void vp__copier_issue(vp__copier *cp, int kind, int stage, int mb);

/* Waits for that copy to end; its times (ms) into *start, *end. The engine's first
 * failure (then every wait fails with it). */
vp_status vp__copier_wait(vp__copier *cp, int kind, int stage, int mb, double *start, double *end,
                          vp_error *err);

/* The times (ms) of the last copy of (kind, stage, mb) that ended. */
void vp__copier_times(vp__copier *cp, int kind, int stage, int mb, double *start, double *end);

/* Whether the schedule offloads (stage, mb). */
static inline int vp__offloads(const vp__run *r, int stage, int mb) {
    return r->offloaded && r->offloaded[(size_t)stage * (size_t)r->s->m + (size_t)mb];
}

/* Runs rank ((vp__rank *)arg)->rank to the end of the run (a thread's body); a failure
 * aborts the transport with the rank's message. Returns NULL. */
void *vp__rank_main(void *arg);

#endif
