/* The part of a transport every implementation shares: rank states and the abort
 * message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "runtime/transport/transport.h"

vp_status vp__transport_init(vp_transport *t, const vp_transport_vtbl *vt, int p,
                             double watchdog_s) {
    t->vt = vt;
    t->p = p;
    t->watchdog_s = watchdog_s > 0 ? watchdog_s : 60.0;
    t->aborted = 0;
    t->abort_rank = -1;
    t->local_lo = 0;
    t->local_hi = p;
    t->error[0] = '\0';
    t->status = vp__calloc((size_t)p, sizeof *t->status);
    if (!t->status)
        return VP_ENOMEM;
    for (int r = 0; r < p; r++)
        t->status[r].op = -1;
    pthread_mutex_init(&t->lock, NULL);
    return VP_OK;
}

void vp__transport_deinit(vp_transport *t) {
    pthread_mutex_destroy(&t->lock);
    free(t->status);
}

int vp__transport_set_error(vp_transport *t, int rank, vp_status status, const char *message) {
    pthread_mutex_lock(&t->lock);
    int first = !t->aborted;
    if (first) {
        t->aborted = 1;
        t->abort_rank = rank;
        t->abort_status = status;
        snprintf(t->error, sizeof t->error, "%s", message);
    }
    pthread_mutex_unlock(&t->lock);
    return first;
}

const char *vp_transport_error(vp_transport *t) {
    pthread_mutex_lock(&t->lock);
    const char *e = t->aborted ? t->error : NULL;
    pthread_mutex_unlock(&t->lock);
    return e;
}

vp_status vp_transport_status(vp_transport *t) {
    pthread_mutex_lock(&t->lock);
    vp_status s = t->aborted ? t->abort_status : VP_OK;
    pthread_mutex_unlock(&t->lock);
    return s;
}

void vp_transport_set_op(vp_transport *t, int rank, int op, const char *label) {
    pthread_mutex_lock(&t->lock);
    t->status[rank].op = op;
    snprintf(t->status[rank].label, sizeof t->status[rank].label, "%s", label ? label : "");
    t->status[rank].waiting = 0;
    pthread_mutex_unlock(&t->lock);
}

void vp_transport_set_wait(vp_transport *t, int rank, int waiting, vp_msg_key key) {
    pthread_mutex_lock(&t->lock);
    t->status[rank].waiting = waiting;
    t->status[rank].wait = key;
    pthread_mutex_unlock(&t->lock);
}

void vp__msg_describe(vp_msg_key key, char *buf, size_t size) {
    static const char *const what[VP_MSG_KINDS] = {
        "the activation",     "the gradient",      "the replica gradients",
        "the parameters",     "the op times",      "an injected stall",
        "the gradient shard", "the reduced shard", "a vocabulary message"};
    static const char *const vocab[VP_VOCAB_MSGS] = {
        "the embedding part", "the last stage's output", "the softmax statistics",
        "the output gradient part", "the input gradient"};
    if (key.dir == VP_MSG_VOCAB && key.stage >= 0 &&
        key.stage % VP_VOCAB_MSGS < VP_VOCAB_EMBG + 1) {
        snprintf(buf, size, "%s of vocabulary shard %d, microbatch %d",
                 vocab[key.stage % VP_VOCAB_MSGS], key.stage / VP_VOCAB_MSGS, key.mb);
        return;
    }
    const char *name = key.dir >= 0 && key.dir < VP_MSG_KINDS ? what[key.dir] : "a message";
    int replica = key.dir == VP_MSG_REDUCE || key.dir == VP_MSG_GATHER;
    snprintf(buf, size, "%s %s stage %d, %s %d", name, key.dir == VP_MSG_STALL ? "at" : "of",
             key.stage, replica ? "replica" : "microbatch", key.mb);
}

void vp__transport_outcome(vp_transport *t, vp_outcome *out, int *first) {
    pthread_mutex_lock(&t->lock);
    *out = (vp_outcome){.status = t->aborted ? t->abort_status : VP_OK,
                        .rank = t->aborted ? t->abort_rank : -1};
    snprintf(out->message, sizeof out->message, "%s", t->aborted ? t->error : "");
    *first = t->aborted && t->abort_rank >= t->local_lo && t->abort_rank < t->local_hi;
    pthread_mutex_unlock(&t->lock);
}

void vp__outcome_add_states(vp_outcome *out, const char *states) {
    while (*states) {
        const char *text = states + strspn(states, "\n "); /* the line without its indent */
        size_t n = strcspn(text, "\n"), len = strlen(out->message);
        char line[256];
        snprintf(line, sizeof line, "%.*s", (int)n, text);
        if (n && !strstr(out->message, line))
            snprintf(out->message + len, sizeof out->message - len, "\n  %s", line);
        states = text + n;
    }
}

void vp__transport_report(vp_transport *t, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    pthread_mutex_lock(&t->lock);
    for (int r = t->local_lo; r < t->local_hi && len < size; r++) {
        const vp_rank_status *st = &t->status[r];
        char what[96];
        vp__msg_describe(st->wait, what, sizeof what);
        int n;
        if (st->op < 0)
            n = snprintf(buf + len, size - len, "\n  rank %d: between steps", r);
        else if (st->waiting && st->wait.dir == VP_MSG_STALL)
            n = snprintf(buf + len, size - len, "\n  rank %d: op %d (%s) blocked by %s", r, st->op,
                         st->label, what);
        else if (st->waiting)
            n = snprintf(buf + len, size - len, "\n  rank %d: op %d (%s) blocked on %s", r, st->op,
                         st->label, what);
        else
            n = snprintf(buf + len, size - len, "\n  rank %d: running op %d (%s)", r, st->op,
                         st->label);
        len += n > 0 ? (size_t)n : 0;
    }
    pthread_mutex_unlock(&t->lock);
}
