/* The pipeline's shared state: what pipeline.c sets up and reports, and exec.c's ranks
 * work on. Private to src/runtime/. */
#ifndef VPIPE_RUNTIME_EXEC_H
#define VPIPE_RUNTIME_EXEC_H

#include "runtime/runtime_internal.h"
#include "runtime/transport/transport.h"

/* One process's part of a run: the ranks [rank_lo, rank_hi) it hosts (all of them on the
 * threads transport, one under MPI) and their stages. */
typedef struct vp__run {
    const vp_pipeline_options *o;
    const vp_schedule *s;
    const vp_data *data;
    vp_train_callback callback;
    void *user;
    vp_transport *t;
    int rank_lo, rank_hi;
    int L, units;             /* layers; gradient-norm units: embedding, layers, head */
    int *l0;                  /* [route_len + 1] */
    size_t io_floats;         /* B*T*C: one tensor between stages */
    vp_stage **stage;         /* [S], NULL for stages of ranks this process does not host */
    vp_mem **mem;             /* [p], likewise */
    const vp_cost_model *emu; /* emulation: per-stage pass times (ms) to wait; NULL computes */
    /* Gathered at the end (on the process of rank 0 for times and digest). */
    double *peak, *busy, *span;         /* [p] */
    double *memory;                     /* [p * VP_MEM_CATEGORIES] peak bytes per category */
    double **t_start, **t_end, **t_mem; /* [p][n_d] last step: ms from its start, MiB */
    uint64_t digest;
    vp_train_result res; /* filled by the process's lowest rank */
} vp__run;

/* One rank of the run r, as its thread (or MPI process) works on it. */
typedef struct vp__rank {
    vp__run *r;
    int rank;
    vp_batch batch;                  /* one microbatch */
    double compute_start;            /* when the current op's inputs had arrived (< 0: not yet) */
    double peak, busy, span;         /* training peak bytes; last step's busy time and span */
    double *t_start, *t_end, *t_mem; /* [n] last step's op times */
} vp__rank;

/* Position of stage st on its route. */
static inline int vp__route_pos(const vp_schedule *s, int st) {
    return st % s->route_len;
}

/* The layers and parts stage st holds. */
static inline vp_stage_range vp__stage_range(const vp__run *r, int st) {
    return vp_split_range(r->l0, vp__route_pos(r->s, st), r->s->route_len);
}

/* Runs rank ((vp__rank *)arg)->rank to the end of the run (a thread's body); a failure
 * aborts the transport with the rank's message. Returns NULL. */
void *vp__rank_main(void *arg);

#endif
