/* Threads transport: one thread per rank in one process. A send hands the pointer over
 * through the receiver's mailbox (no copy); a receive waits on the mailbox's condition
 * variable, at most the watchdog limit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/internal.h"
#include "runtime/transport/transport.h"

typedef struct letter {
    vp_msg_key key;
    float *buf;
    size_t n;
    struct letter *next;
} letter;

/* Messages in arrival order: two with the same key are delivered first-in, first-out. */
typedef struct mailbox {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    letter *head, **tail;
} mailbox;

typedef struct threads_transport {
    vp_transport base;
    mailbox *box; /* [p] */
    /* Barrier that an abort breaks. */
    pthread_mutex_t bar_lock;
    pthread_cond_t bar_cond;
    int bar_count;
    unsigned long bar_generation;
    double **contrib; /* [p] each rank's array during vp_transport sum */
} threads_transport;

static int key_equal(vp_msg_key a, vp_msg_key b) {
    return a.stage == b.stage && a.mb == b.mb && a.dir == b.dir;
}

static int is_aborted(vp_transport *t) {
    return vp_transport_error(t) != NULL;
}

static vp_status aborted(vp_transport *t, vp_error *err) {
    return vp__fail(err, VP_ERUNTIME, "run aborted: %s", vp_transport_error(t));
}

static vp_status th_send(vp_transport *t, int from, int to, vp_msg_key key, float *buf, size_t n,
                         vp_error *err) {
    threads_transport *tt = (threads_transport *)t;
    (void)from;
    letter *msg = malloc(sizeof *msg);
    if (!msg) {
        free(buf);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    msg->key = key;
    msg->buf = buf;
    msg->n = n;
    mailbox *mb = &tt->box[to];
    pthread_mutex_lock(&mb->lock);
    msg->next = NULL;
    *mb->tail = msg;
    mb->tail = &msg->next;
    pthread_cond_broadcast(&mb->ready);
    pthread_mutex_unlock(&mb->lock);
    return VP_OK;
}

/* Removes and returns the message key from mb (lock held), or NULL. */
static letter *take(mailbox *mb, vp_msg_key key) {
    for (letter **pp = &mb->head; *pp; pp = &(*pp)->next)
        if (key_equal((*pp)->key, key)) {
            letter *m = *pp;
            *pp = m->next;
            if (!*pp)
                mb->tail = pp;
            return m;
        }
    return NULL;
}

static void deadline_after(double seconds, struct timespec *ts) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    double whole = (double)(long)seconds;
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void watchdog_fire(vp_transport *t, int rank, vp_msg_key key) {
    char report[900], what[96], msg[1200];
    vp__transport_report(t, report, sizeof report);
    vp__msg_describe(key, what, sizeof what);
    snprintf(msg, sizeof msg, "watchdog: rank %d waited %g s for %s; ranks:%s", rank, t->watchdog_s,
             what, report);
    t->vt->abort(t, rank, VP_ERUNTIME, msg);
}

static vp_status th_recv(vp_transport *t, int rank, vp_msg_key key, size_t n, float **buf,
                         vp_error *err) {
    threads_transport *tt = (threads_transport *)t;
    mailbox *mb = &tt->box[rank];
    struct timespec deadline;
    deadline_after(t->watchdog_s, &deadline);
    vp_transport_set_wait(t, rank, 1, key);
    letter *msg = NULL;
    int timed_out = 0;
    pthread_mutex_lock(&mb->lock);
    while (!(msg = take(mb, key)) && !is_aborted(t) && !timed_out)
        timed_out = pthread_cond_timedwait(&mb->ready, &mb->lock, &deadline) == ETIMEDOUT;
    pthread_mutex_unlock(&mb->lock);
    if (!msg) {
        if (timed_out && !is_aborted(t))
            watchdog_fire(t, rank, key);
        return aborted(t, err);
    }
    vp_transport_set_wait(t, rank, 0, key);
    if (msg->n != n) {
        size_t got = msg->n;
        free(msg->buf);
        free(msg);
        return vp__fail(err, VP_ERUNTIME, "rank %d: message for stage %d has %zu floats, not %zu",
                        rank, key.stage, got, n);
    }
    *buf = msg->buf;
    free(msg);
    return VP_OK;
}

static vp_status th_barrier(vp_transport *t, int rank, vp_error *err) {
    threads_transport *tt = (threads_transport *)t;
    (void)rank;
    pthread_mutex_lock(&tt->bar_lock);
    unsigned long gen = tt->bar_generation;
    if (++tt->bar_count == t->p) {
        tt->bar_count = 0;
        tt->bar_generation++;
        pthread_cond_broadcast(&tt->bar_cond);
    } else {
        while (gen == tt->bar_generation && !is_aborted(t))
            pthread_cond_wait(&tt->bar_cond, &tt->bar_lock);
    }
    pthread_mutex_unlock(&tt->bar_lock);
    return is_aborted(t) ? aborted(t, err) : VP_OK;
}

static vp_status th_sum(vp_transport *t, int rank, double *v, int n, vp_error *err) {
    threads_transport *tt = (threads_transport *)t;
    double *total = vp__calloc((size_t)n, sizeof *total);
    if (!total)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    tt->contrib[rank] = v;
    vp_status rc = th_barrier(t, rank, err);
    for (int r = 0; rc == VP_OK && r < t->p; r++)
        for (int i = 0; i < n; i++)
            total[i] += tt->contrib[r][i];
    if (rc == VP_OK)
        rc = th_barrier(t, rank, err); /* nobody still reads v */
    if (rc == VP_OK)
        memcpy(v, total, (size_t)n * sizeof *v);
    free(total);
    return rc;
}

static void th_abort(vp_transport *t, int rank, vp_status status, const char *text) {
    threads_transport *tt = (threads_transport *)t;
    vp__transport_set_error(t, rank, status, text);
    for (int r = 0; r < t->p; r++) {
        pthread_mutex_lock(&tt->box[r].lock);
        pthread_cond_broadcast(&tt->box[r].ready);
        pthread_mutex_unlock(&tt->box[r].lock);
    }
    pthread_mutex_lock(&tt->bar_lock);
    pthread_cond_broadcast(&tt->bar_cond);
    pthread_mutex_unlock(&tt->bar_lock);
}

/* Every rank is in this process: its first failure is the run's. */
static int th_settle(vp_transport *t, int with_states, vp_outcome *outcome) {
    int first;
    vp_outcome seen = *outcome;
    vp__transport_outcome(t, outcome, &first);
    if (outcome->status == VP_OK)
        *outcome = seen; /* a failure outside the ranks (before or after them), or none */
    if (outcome->status != VP_OK && with_states) {
        char states[900];
        vp__transport_report(t, states, sizeof states);
        vp__outcome_add_states(outcome, states);
    }
    return 1;
}

static void th_free(vp_transport *t) {
    threads_transport *tt = (threads_transport *)t;
    if (!tt)
        return;
    for (int r = 0; tt->box && r < t->p; r++) {
        for (letter *m = tt->box[r].head, *next; m; m = next) {
            next = m->next;
            free(m->buf);
            free(m);
        }
        pthread_mutex_destroy(&tt->box[r].lock);
        pthread_cond_destroy(&tt->box[r].ready);
    }
    free(tt->box);
    free(tt->contrib);
    pthread_mutex_destroy(&tt->bar_lock);
    pthread_cond_destroy(&tt->bar_cond);
    vp__transport_deinit(t);
    free(tt);
}

static const vp_transport_vtbl threads_vtbl = {th_send,  th_recv,   th_barrier, th_sum,
                                               th_abort, th_settle, th_free};

vp_transport *vp_transport_threads_new(int p, double watchdog_s) {
    threads_transport *tt = vp__calloc(1, sizeof *tt);
    if (!tt)
        return NULL;
    if (vp__transport_init(&tt->base, &threads_vtbl, p, watchdog_s) != VP_OK) {
        free(tt);
        return NULL;
    }
    pthread_mutex_init(&tt->bar_lock, NULL);
    pthread_cond_init(&tt->bar_cond, NULL);
    tt->box = vp__calloc((size_t)p, sizeof *tt->box);
    tt->contrib = vp__calloc((size_t)p, sizeof *tt->contrib);
    if (!tt->box || !tt->contrib) {
        free(tt->box);
        tt->box = NULL;
        th_free(&tt->base);
        return NULL;
    }
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    for (int r = 0; r < p; r++) {
        pthread_mutex_init(&tt->box[r].lock, NULL);
        pthread_cond_init(&tt->box[r].ready, &attr);
        tt->box[r].tail = &tt->box[r].head;
    }
    pthread_condattr_destroy(&attr);
    return &tt->base;
}
