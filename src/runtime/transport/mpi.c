/* MPI transport: one process per rank under mpirun (see transport.h). Built only with
 * Open MPI (VP_HAVE_MPI).
 *
 * Messages are non-blocking sends and receives matched by a tag that encodes (direction,
 * stage, microbatch), so any valid schedule order completes: MPI never lets two messages
 * with the same tag between two ranks overtake each other, and nothing else orders them.
 * Every wait polls, so it can notice an abort notice from another rank (a small message
 * on its own tag, kept posted) and the watchdog limit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/internal.h"
#include "runtime/transport/transport.h"
#include "vpipe/runtime.h"

enum { STAGE_BITS = 12, MB_BITS = 14 }; /* a tag packs direction (4 bits), stage + 1, mb + 1 */

vp_status vp_transport_mpi_fits(int S, int m, int D, int vocab, vp_error *err) {
    if (vocab * VP_VOCAB_MSGS + 1 >= (1 << STAGE_BITS))
        return vp__fail(err, VP_ELIMIT,
                        "MPI message tags hold fewer than %d vocabulary shards; the run has %d",
                        ((1 << STAGE_BITS) - 1) / VP_VOCAB_MSGS, vocab);
    if (S + 1 >= (1 << STAGE_BITS) || m + 1 >= (1 << MB_BITS) || D + 1 >= (1 << MB_BITS))
        return vp__fail(err, VP_ELIMIT,
                        "MPI message tags hold fewer than %d stages and %d microbatches or "
                        "replicas; the run has %d, %d and %d",
                        (1 << STAGE_BITS) - 1, (1 << MB_BITS) - 1, S, m, D);
    return VP_OK;
}

#ifndef VP_HAVE_MPI

vp_status vp_transport_mpi_new(int p, double watchdog_s, vp_transport **out, int *rank,
                               vp_error *err) {
    (void)p;
    (void)watchdog_s;
    *out = NULL;
    *rank = 0;
    return vp__fail(err, VP_EUNSUPPORTED,
                    "this vpipe was built without MPI (install libopenmpi-dev and rebuild)");
}

void vp_runtime_mpi_abort(int code) {
    (void)code;
}

#else

#include <mpi.h>

enum { ABORT_TAG = (1 << 30) - 1, NOTICE_BYTES = 1280 };

/* An abort notice: the rank that failed first (as its sender knows) and the message. */
typedef struct notice {
    int32_t rank;
    char text[NOTICE_BYTES];
} notice;

/* The communicator of the control messages that must match across processes even after
 * a run broke off mid-collective: the outcome (settle) and the final barrier of
 * vp_runtime_mpi_abort. A duplicate of MPI_COMM_WORLD, made once per process. */
static MPI_Comm control = MPI_COMM_NULL;

/* Set once a process did not answer on the control communicator (stopped or gone): no
 * later collective there can complete. */
static bool control_broken;

/* How long a process that saw the run fail waits for the others' outcomes: they learn of
 * the failure at the end of the op they are in, and a process that does not answer by
 * then is stopped or gone (a run that ended well waits up to the watchdog limit). */
#define SETTLE_GRACE_S 1.0

typedef struct pending_send {
    MPI_Request req;
    float *buf;
} pending_send;

typedef struct mpi_transport {
    vp_transport base;
    int rank;
    pending_send *sends;
    int nsends, capsends;
    MPI_Request notice_req; /* posted receive for abort notices */
    notice got;
} mpi_transport;

/* Tag of a key: direction, stage + 1 and microbatch + 1 packed below ABORT_TAG. */
static int key_tag(vp_msg_key key, vp_error *err, int *tag) {
    if (key.stage < -1 || key.stage + 1 >= (1 << STAGE_BITS) || key.mb < -1 ||
        key.mb + 1 >= (1 << MB_BITS) || key.dir < 0 || key.dir >= VP_MSG_KINDS)
        return vp__fail(err, VP_EINVAL, "message key (stage %d, microbatch %d) exceeds MPI tags",
                        key.stage, key.mb);
    *tag = ((key.dir << STAGE_BITS | (key.stage + 1)) << MB_BITS) | (key.mb + 1);
    return VP_OK;
}

/* Frees the buffers of completed sends. */
static void sweep_sends(mpi_transport *mt) {
    int kept = 0;
    for (int i = 0; i < mt->nsends; i++) {
        int done = 0;
        MPI_Test(&mt->sends[i].req, &done, MPI_STATUS_IGNORE);
        if (done)
            free(mt->sends[i].buf);
        else
            mt->sends[kept++] = mt->sends[i];
    }
    mt->nsends = kept;
}

/* True once another rank's abort notice arrived (it is recorded as the run's error). */
static int notice_arrived(mpi_transport *mt) {
    int got = 0;
    MPI_Status st;
    if (mt->notice_req == MPI_REQUEST_NULL)
        return 0;
    MPI_Test(&mt->notice_req, &got, &st);
    if (!got)
        return 0;
    mt->got.text[NOTICE_BYTES - 1] = '\0';
    vp__transport_set_error(&mt->base, mt->got.rank, VP_ERUNTIME, mt->got.text);
    return 1;
}

static vp_status aborted(vp_transport *t, vp_error *err) {
    return vp__fail(err, VP_ERUNTIME, "run aborted: %s", vp_transport_error(t));
}

/* Polls req until it completes, an abort arrives, or the watchdog limit passes (then
 * this rank aborts the run, naming what it waited for). A receive left waiting is
 * cancelled; a collective cannot be (MPI forbids it: the job is ending anyway). */
static vp_status wait_for(mpi_transport *mt, MPI_Request *req, MPI_Status *st, const char *what,
                          bool collective, vp_error *err) {
    vp_transport *t = &mt->base;
    double deadline = vp__now_ms() + t->watchdog_s * 1e3;
    struct timespec nap = {0, 20000};
    for (;;) {
        int done = 0;
        MPI_Test(req, &done, st);
        if (done)
            return VP_OK;
        if (vp_transport_error(t) || notice_arrived(mt))
            break;
        if (vp__now_ms() > deadline) {
            char msg[NOTICE_BYTES], report[700];
            vp__transport_report(t, report, sizeof report);
            snprintf(msg, sizeof msg, "watchdog: rank %d waited %g s for %s; ranks:%s", mt->rank,
                     t->watchdog_s, what, report);
            t->vt->abort(t, mt->rank, VP_ERUNTIME, msg);
            break;
        }
        nanosleep(&nap, NULL);
    }
    if (!collective) {
        MPI_Cancel(req);
        MPI_Request_free(req);
    }
    return aborted(t, err);
}

static vp_status mp_send(vp_transport *t, int from, int to, vp_msg_key key, float *buf, size_t n,
                         vp_error *err) {
    mpi_transport *mt = (mpi_transport *)t;
    (void)from;
    int tag = 0;
    vp_status rc = key_tag(key, err, &tag);
    if (rc == VP_OK &&
        vp__grow((void **)&mt->sends, &mt->capsends, mt->nsends + 1, sizeof *mt->sends) != 0)
        rc = vp__fail(err, VP_ENOMEM, "out of memory");
    if (rc != VP_OK) {
        free(buf);
        return rc;
    }
    pending_send *ps = &mt->sends[mt->nsends++];
    ps->buf = buf;
    MPI_Isend(buf, (int)n, MPI_FLOAT, to, tag, MPI_COMM_WORLD, &ps->req);
    sweep_sends(mt);
    return VP_OK;
}

static vp_status mp_recv(vp_transport *t, int rank, vp_msg_key key, size_t n, float **buf,
                         vp_error *err) {
    mpi_transport *mt = (mpi_transport *)t;
    int tag = 0;
    vp_status rc = key_tag(key, err, &tag);
    if (rc != VP_OK)
        return rc;
    /* Stages keep received tensors in their 64-byte aligned allocator pools. */
    float *b = aligned_alloc(64, (n * sizeof *b + 63) / 64 * 64 + 64);
    if (!b)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    char what[96];
    vp__msg_describe(key, what, sizeof what);
    MPI_Request req;
    MPI_Status st;
    MPI_Irecv(b, (int)n, MPI_FLOAT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &req);
    vp_transport_set_wait(t, rank, 1, key);
    rc = wait_for(mt, &req, &st, what, false, err);
    sweep_sends(mt);
    if (rc != VP_OK) {
        free(b);
        return rc;
    }
    vp_transport_set_wait(t, rank, 0, key);
    int count = 0;
    MPI_Get_count(&st, MPI_FLOAT, &count);
    if ((size_t)count != n) {
        free(b);
        return vp__fail(err, VP_ERUNTIME, "rank %d: message for stage %d has %d floats, not %zu",
                        rank, key.stage, count, n);
    }
    *buf = b;
    return VP_OK;
}

static vp_status mp_barrier(vp_transport *t, int rank, vp_error *err) {
    mpi_transport *mt = (mpi_transport *)t;
    (void)rank;
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    return wait_for(mt, &req, MPI_STATUS_IGNORE, "the other ranks at a barrier", true, err);
}

static vp_status mp_sum(vp_transport *t, int rank, double *v, int n, vp_error *err) {
    mpi_transport *mt = (mpi_transport *)t;
    (void)rank;
    double *all = vp__calloc((size_t)t->p * (size_t)n, sizeof *all);
    if (!all)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    MPI_Request req;
    MPI_Iallgather(v, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD, &req);
    vp_status rc = wait_for(mt, &req, MPI_STATUS_IGNORE, "the other ranks' sums", true, err);
    if (rc != VP_OK)
        return rc; /* all stays: the collective may still write it while the job ends */
    for (int i = 0; i < n; i++) {
        double total = 0.0; /* in rank order, the same bits on every rank */
        for (int r = 0; r < t->p; r++)
            total += all[(size_t)r * (size_t)n + (size_t)i];
        v[i] = total;
    }
    free(all);
    return rc;
}

static void mp_abort(vp_transport *t, int rank, vp_status status, const char *text) {
    mpi_transport *mt = (mpi_transport *)t;
    /* Only the process whose rank failed first tells the others (a notice it received
     * made this one's failure a consequence, not a cause). */
    if (!vp__transport_set_error(t, rank, status, text))
        return;
    static notice out; /* one abort per process: it stays valid while the sends go out */
    out.rank = rank;
    snprintf(out.text, sizeof out.text, "%s", t->error);
    /* Tell every other rank; the notices are small, so they go out eagerly even when
     * nobody waits for their completion. */
    for (int r = 0; r < t->p; r++) {
        if (r == mt->rank)
            continue;
        MPI_Request req;
        MPI_Isend(&out, (int)sizeof out, MPI_BYTE, r, ABORT_TAG, MPI_COMM_WORLD, &req);
        MPI_Request_free(&req);
    }
}

/* What one process tells the others at the end of a run. */
typedef struct settle_record {
    int32_t status, first, rank;
    char message[sizeof(((vp_outcome *)0)->message)];
    char states[512];
} settle_record;

/* Waits up to seconds for req; 0 when it did not complete (a process is gone). */
static int wait_bounded(MPI_Request *req, double seconds) {
    double deadline = vp__now_ms() + seconds * 1e3;
    struct timespec nap = {0, 100000};
    for (int done = 0;; nanosleep(&nap, NULL)) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done || vp__now_ms() > deadline)
            return done;
    }
}

/* The record that speaks for the run: the lowest rank that failed first, else the lowest
 * that failed; -1 when none did. */
static int speaker(const settle_record *all, int p) {
    int any = -1;
    for (int r = p - 1; r >= 0; r--)
        if (all[r].status != VP_OK)
            any = r;
    for (int r = 0; r < p; r++)
        if (all[r].status != VP_OK && all[r].first)
            return r;
    return any;
}

/* True when a process of lower rank also told of a failure of its own (watchdogs that
 * fire together): that one reports when the outcome cannot be agreed on, not this one. */
static bool lower_teller(mpi_transport *mt) {
    MPI_Status st;
    int got = 0;
    bool lower = false;
    if (mt->notice_req != MPI_REQUEST_NULL) {
        MPI_Test(&mt->notice_req, &got, &st);
        lower = got && st.MPI_SOURCE < mt->rank;
    }
    for (;;) {
        MPI_Iprobe(MPI_ANY_SOURCE, ABORT_TAG, MPI_COMM_WORLD, &got, &st);
        if (!got)
            return lower;
        notice drop;
        MPI_Recv(&drop, (int)sizeof drop, MPI_BYTE, st.MPI_SOURCE, ABORT_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        lower = lower || st.MPI_SOURCE < mt->rank;
    }
}

static int mp_settle(vp_transport *t, int with_states, vp_outcome *outcome) {
    mpi_transport *mt = (mpi_transport *)t;
    settle_record *all = vp__calloc((size_t)t->p, sizeof *all), mine = {0};
    vp_outcome seen;
    int first;
    vp__transport_outcome(t, &seen, &first);
    if (seen.status == VP_OK) /* a failure outside the ranks' work, or none */
        seen = *outcome, first = outcome->status != VP_OK;
    mine = (settle_record){seen.status, first, seen.rank, "", ""};
    snprintf(mine.message, sizeof mine.message, "%s", seen.message);
    if (with_states)
        vp__transport_report(t, mine.states, sizeof mine.states);
    MPI_Request req;
    double bound =
        seen.status == VP_OK || t->watchdog_s < SETTLE_GRACE_S ? t->watchdog_s : SETTLE_GRACE_S;
    if (!all ||
        MPI_Iallgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, control,
                       &req) != MPI_SUCCESS ||
        !wait_bounded(&req, bound)) {
        /* nobody to agree with: this process reports what it saw if that is its own
         * failure and no lower rank failed on its own too (a failure it was told of is
         * reported by its teller) */
        control_broken = true;
        *outcome = seen;
        vp__outcome_add_states(outcome, mine.states);
        if (seen.status != VP_OK)
            vp__outcome_add_states(outcome, "\n  (a process did not answer within the grace "
                                            "period after the failure: stopped, or gone; its "
                                            "ranks' states are missing)");
        return seen.status == VP_OK || (first && !lower_teller(mt));
    }
    int r = speaker(all, t->p);
    *outcome = (vp_outcome){.status = VP_OK, .rank = -1};
    if (r >= 0) {
        *outcome = (vp_outcome){.status = all[r].status, .rank = all[r].rank};
        snprintf(outcome->message, sizeof outcome->message, "%s", all[r].message);
        for (int k = 0; k < t->p; k++)
            vp__outcome_add_states(outcome, all[k].states);
    }
    free(all);
    return r == mt->rank;
}

static void mp_free(vp_transport *t) {
    mpi_transport *mt = (mpi_transport *)t;
    if (!mt)
        return;
    if (!vp_transport_error(t))
        for (int i = 0; i < mt->nsends; i++)
            MPI_Wait(&mt->sends[i].req, MPI_STATUS_IGNORE);
    for (int i = 0; i < mt->nsends; i++)
        free(mt->sends[i].buf);
    free(mt->sends);
    if (mt->notice_req != MPI_REQUEST_NULL) {
        MPI_Cancel(&mt->notice_req);
        MPI_Request_free(&mt->notice_req);
    }
    vp__transport_deinit(t);
    free(mt);
}

static const vp_transport_vtbl mpi_vtbl = {mp_send,  mp_recv,   mp_barrier, mp_sum,
                                           mp_abort, mp_settle, mp_free};

static void finalize_at_exit(void) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Finalize();
}

vp_status vp_transport_mpi_new(int p, double watchdog_s, vp_transport **out, int *rank,
                               vp_error *err) {
    *out = NULL;
    int started = 0, size = 0;
    MPI_Initialized(&started);
    if (!started) {
        if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
            return vp__fail(err, VP_ERUNTIME, "MPI_Init failed");
        atexit(finalize_at_exit);
    }
    if (control == MPI_COMM_NULL)
        MPI_Comm_dup(MPI_COMM_WORLD, &control);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (size != p)
        return vp__fail(err, VP_EINVAL,
                        "the run has %d ranks (p times dp) but MPI started %d processes "
                        "(mpirun -np %d)",
                        p, size, p);
    mpi_transport *mt = vp__calloc(1, sizeof *mt);
    if (!mt || vp__transport_init(&mt->base, &mpi_vtbl, p, watchdog_s) != VP_OK) {
        free(mt);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    mt->rank = *rank;
    mt->base.local_lo = *rank;
    mt->base.local_hi = *rank + 1;
    MPI_Irecv(&mt->got, (int)sizeof mt->got, MPI_BYTE, MPI_ANY_SOURCE, ABORT_TAG, MPI_COMM_WORLD,
              &mt->notice_req);
    *out = &mt->base;
    return VP_OK;
}

void vp_runtime_mpi_abort(int code) {
    int started = 0;
    MPI_Initialized(&started);
    if (!started)
        return;
    if (control != MPI_COMM_NULL) { /* the process that reports has printed when it comes */
        MPI_Request req;
        MPI_Ibarrier(control, &req);
        wait_bounded(&req, control_broken ? SETTLE_GRACE_S : 10.0);
    }
    MPI_Abort(MPI_COMM_WORLD, code);
}

#endif
