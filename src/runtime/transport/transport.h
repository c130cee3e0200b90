/* Transport between pipeline ranks: tensor hand-off matched by (stage, microbatch,
 * direction), a barrier, a deterministic sum, and abort. The executor (exec.c) is written
 * against this interface only; threads.c implements it for one thread per rank in one
 * process (zero-copy pointer hand-off), mpi.c for one process per rank.
 *
 * Every blocking call returns VP_ERUNTIME once the run is aborted (by any rank, or by the
 * watchdog when a receive waits past its limit), so no rank can hang on a failed peer.
 */
#ifndef VPIPE_RUNTIME_TRANSPORT_H
#define VPIPE_RUNTIME_TRANSPORT_H

#include <pthread.h>
#include <stddef.h>

#include "vpipe/base.h"

/* What a message carries. */
typedef enum {
    VP_MSG_ACT = 0,     /* activation into F(stage, mb) */
    VP_MSG_GRAD = 1,    /* gradient into B(stage, mb) */
    VP_MSG_REPLICA = 2, /* gradients of a bidirectional replica stage (stage = sender's) */
    VP_MSG_PARAMS = 3,  /* a stage's parameters, gathered on rank 0 at the end */
    VP_MSG_TIMES = 4,   /* a rank's measured op times, gathered on rank 0 (stage = rank) */
    VP_MSG_STALL = 5,   /* nothing: what a rank stalled on purpose waits for (the stage and
                           microbatch of the op it stalls at) */
    VP_MSG_REDUCE = 6,  /* a replica's copy of the receiver's shard of a stage's gradients */
    VP_MSG_GATHER = 7,  /* a replica's reduced shard of a stage's gradients, or with ZeRO-1
                           its updated shard of the parameters */
    VP_MSG_VOCAB = 8    /* vocabulary parallelism: a message of a vocabulary pass (stage =
                           shard * VP_VOCAB_MSGS + what, vp_vocab_msg) */
} vp_msg_dir;

#define VP_MSG_KINDS 9

/* What a vocabulary message carries (the shard is the sender's for EMB, STAT and GRAD,
 * the receiver's for HID and EMBG). */
enum {
    VP_VOCAB_EMB,  /* a shard's part of the first stage's input (EF -> F) */
    VP_VOCAB_HID,  /* the last stage's output for a shard's S (F -> S) */
    VP_VOCAB_STAT, /* a shard's softmax statistics (S -> T) */
    VP_VOCAB_GRAD, /* a shard's part of the last stage's output gradient (T -> B) */
    VP_VOCAB_EMBG, /* the first stage's input gradient for a shard's EB (B -> EB) */
    VP_VOCAB_MSGS = 8
};

typedef struct vp_msg_key {
    int stage; /* the receiving stage (for REPLICA: the sender's stage) */
    int mb;    /* microbatch (REPLICA: 0; REDUCE, GATHER: the sender's replica) */
    int dir;   /* vp_msg_dir */
} vp_msg_key;

/* The key of vocabulary message `what` of shard for microbatch mb. */
static inline vp_msg_key vp_vocab_msg(int what, int shard, int mb) {
    vp_msg_key key = {shard * VP_VOCAB_MSGS + what, mb, VP_MSG_VOCAB};
    return key;
}

typedef struct vp_transport vp_transport;

/* How a run ended: VP_OK, or the status, the rank and the message of the failure that
 * stopped it. */
typedef struct vp_outcome {
    vp_status status;
    int rank; /* -1 when nothing failed */
    char message[1536];
} vp_outcome;

typedef struct vp_transport_vtbl {
    /* Hands buf (n floats, malloc'ed) to rank `to`; the transport owns it from here. */
    vp_status (*send)(vp_transport *t, int from, int to, vp_msg_key key, float *buf, size_t n,
                      vp_error *err);
    /* Waits for the message key addressed to rank `rank` and returns it in *buf (n floats,
     * caller frees with free()). Past the watchdog limit: aborts the run with a report of
     * every rank's state. */
    vp_status (*recv)(vp_transport *t, int rank, vp_msg_key key, size_t n, float **buf,
                      vp_error *err);
    /* Waits until every rank arrives. */
    vp_status (*barrier)(vp_transport *t, int rank, vp_error *err);
    /* v[0..n) := element-wise sum over ranks of their v, added in rank order (so every
     * rank gets the same bits). */
    vp_status (*sum)(vp_transport *t, int rank, double *v, int n, vp_error *err);
    /* Stops the run: every blocked or later call returns VP_ERUNTIME. The first abort's
     * rank, status and message are kept (vp_transport_status, vp_transport_error). */
    void (*abort)(vp_transport *t, int rank, vp_status status, const char *message);
    /* Agrees on how the run ended. Every process calls it once, at the same point, with
     * the outcome it saw (its own first failure, or VP_OK); all get back the same one:
     * the failure of the lowest rank among those that failed before learning of another
     * failure, and with states, every rank's state appended (vp__transport_report lines
     * the message does not hold yet). Returns 1 when this process is the one to report
     * it (the process of that rank), 0 otherwise. Under MPI a process waits for the others
     * up to the watchdog limit, or 1 s when it saw a failure; past that it keeps what it
     * saw, says that a process did not answer, and reports it if the failure was its own. */
    int (*settle)(vp_transport *t, int with_states, vp_outcome *outcome);
    void (*free)(vp_transport *t);
} vp_transport_vtbl;

/* State each rank publishes for the watchdog report. */
typedef struct vp_rank_status {
    int op;          /* index of the op being run (-1: between steps) */
    char label[48];  /* the op ("F3.1") */
    int waiting;     /* 1 while blocked in recv */
    vp_msg_key wait; /* what it waits for */
} vp_rank_status;

/* The part every transport shares (transport.c): rank states for the watchdog report and
 * the first abort message, under one lock. */
struct vp_transport {
    const vp_transport_vtbl *vt;
    int p;
    double watchdog_s;
    pthread_mutex_t lock;
    vp_rank_status *status; /* [p] */
    int local_lo, local_hi; /* ranks this process hosts (their states are known here) */
    int aborted;
    int abort_rank;         /* of the first abort */
    vp_status abort_status; /* of the first abort */
    char error[1280];
};

/* Initialises the shared part (vt, p, watchdog, states, all ranks local); VP_ENOMEM. */
vp_status vp__transport_init(vp_transport *t, const vp_transport_vtbl *vt, int p,
                             double watchdog_s);
void vp__transport_deinit(vp_transport *t);

/* Records the first abort's rank, status and message (later ones are ignored); returns 1
 * for the first. */
int vp__transport_set_error(vp_transport *t, int rank, vp_status status, const char *message);

/* Writes "\n  rank r: <state>" lines for the ranks this process hosts into buf. */
void vp__transport_report(vp_transport *t, char *buf, size_t size);

/* What a receive of key waits for, as a phrase ("the activation of stage 2, microbatch
 * 5", "an injected stall at stage 2, microbatch 5"), into buf. */
void vp__msg_describe(vp_msg_key key, char *buf, size_t size);

/* The outcome this process saw: VP_OK, or the first failure it learnt of (its own or
 * another rank's) with its rank. *first is set when that failure is this process's own. */
void vp__transport_outcome(vp_transport *t, vp_outcome *out, int *first);

/* Appends to out->message each line of states (vp__transport_report lines) it does not
 * hold yet. */
void vp__outcome_add_states(vp_outcome *out, const char *states);

/* One thread per rank in this process. NULL when out of memory. */
vp_transport *vp_transport_threads_new(int p, double watchdog_s);

/* One process per rank under mpirun: initialises MPI (once), checks that the world has
 * p processes, and returns the transport and this process's rank. VP_EUNSUPPORTED when
 * vpipe was built without MPI; VP_EINVAL when the world size is not p. */
vp_status vp_transport_mpi_new(int p, double watchdog_s, vp_transport **out, int *rank,
                               vp_error *err);

/* Whether a schedule of S stages and m microbatches on D replicas, with vocab shards of
 * vocabulary parallelism (0: none), fits the MPI transport's message tags (fewer than 4095
 * stages, 16383 microbatches and 16383 replicas, 511 shards); VP_ELIMIT saying which does
 * not. */
vp_status vp_transport_mpi_fits(int S, int m, int D, int vocab, vp_error *err);

/* Publishes rank's current op (op index, -1 between steps, and label) for the watchdog
 * report. */
void vp_transport_set_op(vp_transport *t, int rank, int op, const char *label);

/* Publishes that rank blocks on (or, waiting = 0, got) message key. */
void vp_transport_set_wait(vp_transport *t, int rank, int waiting, vp_msg_key key);

/* The message of the first abort, or NULL when the run was not aborted. */
const char *vp_transport_error(vp_transport *t);

/* The status of the first abort (VP_OK when the run was not aborted). */
vp_status vp_transport_status(vp_transport *t);

#endif
