/* A rank's copy engine: one thread beside the rank's compute that runs the copies of its
 * offloads (to the rank's host pool) and reloads one at a time, in the order the rank
 * issues them (exec.c: an offloaded forward issues its offload when it ends, an L issues
 * its reload). The rank waits for an offload's copy at its O (then lets the device
 * buffers go) and for a reload's before the pass that reads the activation again. Only
 * this thread touches the host pool; only the rank's thread its device pool. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/exec.h"

/* One issued copy: kind VP_OP_O or VP_OP_L of (stage, mb). */
typedef struct job {
    int kind, stage, mb;
} job;

struct vp__copier {
    vp__rank *c;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *queue; /* ring of cap jobs: [head, head + n) */
    int head, n, cap;
    uint8_t *done;       /* [S * m * 2] a copy has ended and is not yet waited for */
    double *start, *end; /* [S * m * 2] its times (ms, the rank's clock) */
    vp_status rc;        /* the first failure, then every wait fails with it */
    vp_error err;
    bool stop;
};

/* Index of copy (kind, stage, mb) in the per-copy arrays. */
static size_t slot_of(const vp__run *r, int kind, int stage, int mb) {
    return ((size_t)stage * (size_t)r->s->m + (size_t)mb) * 2 + (kind == VP_OP_L);
}

/* Runs one copy on the engine's thread. */
static vp_status run_job(vp__copier *cp, const job *j, vp_error *err) {
    vp__rank *c = cp->c;
    vp__run *r = c->r;
    if (r->emu) { /* emulated: the copy's time passes */
        vp__emulate_for(j->kind == VP_OP_O ? r->emu->o[j->stage] : r->emu->l[j->stage]);
        return VP_OK;
    }
    vp_stage *st = vp__stage_at(c, j->stage);
    if (j->kind == VP_OP_O)
        return vp_stage_offload_copy(st, j->mb, r->s->offload[j->stage], r->host[c->rank], err);
    return vp_stage_reload_copy(st, j->mb, err);
}

static void *engine(void *arg) {
    vp__copier *cp = arg;
    pthread_mutex_lock(&cp->mu);
    for (;;) {
        while (cp->n == 0 && !cp->stop)
            pthread_cond_wait(&cp->cv, &cp->mu);
        if (cp->n == 0)
            break; /* stopped, nothing left */
        job j = cp->queue[cp->head];
        cp->head = (cp->head + 1) % cp->cap;
        cp->n--;
        bool failed = cp->rc != VP_OK;
        pthread_mutex_unlock(&cp->mu);
        vp_error err = {0};
        double t0 = vp__now_ms();
        vp_status rc = failed ? VP_OK : run_job(cp, &j, &err);
        double t1 = vp__now_ms();
        pthread_mutex_lock(&cp->mu);
        size_t i = slot_of(cp->c->r, j.kind, j.stage, j.mb);
        cp->start[i] = t0;
        cp->end[i] = t1;
        cp->done[i] = 1;
        if (rc != VP_OK && cp->rc == VP_OK) {
            cp->rc = rc;
            cp->err = err;
        }
        pthread_cond_broadcast(&cp->cv);
    }
    pthread_mutex_unlock(&cp->mu);
    return NULL;
}

/* Frees what a copier holds but its thread and locks. */
static void free_arrays(vp__copier *cp) {
    free(cp->queue);
    free(cp->done);
    free(cp->start);
    free(cp->end);
    free(cp);
}

void vp__copier_free(vp__copier *cp) {
    if (!cp)
        return;
    pthread_mutex_lock(&cp->mu);
    cp->stop = true;
    pthread_cond_broadcast(&cp->cv);
    pthread_mutex_unlock(&cp->mu);
    pthread_join(cp->thread, NULL);
    pthread_mutex_destroy(&cp->mu);
    pthread_cond_destroy(&cp->cv);
    free_arrays(cp);
}

vp_status vp__copier_new(vp__rank *c, vp__copier **out, vp_error *err) {
    *out = NULL;
    const vp_schedule *s = c->r->s;
    size_t copies = (size_t)s->S * (size_t)s->m * 2;
    vp__copier *cp = vp__calloc(1, sizeof *cp);
    if (!cp)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    cp->c = c;
    cp->cap = (int)copies;
    cp->queue = vp__calloc(copies, sizeof *cp->queue);
    cp->done = vp__calloc(copies, 1);
    cp->start = vp__calloc(copies, sizeof *cp->start);
    cp->end = vp__calloc(copies, sizeof *cp->end);
    bool mu = false, cv = false, ok = cp->queue && cp->done && cp->start && cp->end;
    ok = ok && (mu = pthread_mutex_init(&cp->mu, NULL) == 0);
    ok = ok && (cv = pthread_cond_init(&cp->cv, NULL) == 0);
    ok = ok && pthread_create(&cp->thread, NULL, engine, cp) == 0;
    if (!ok) {
        if (cv)
            pthread_cond_destroy(&cp->cv);
        if (mu)
            pthread_mutex_destroy(&cp->mu);
        free_arrays(cp);
        return vp__fail(err, VP_ERUNTIME, "cannot start a copy engine");
    }
    *out = cp;
    return VP_OK;
}

void vp__copier_issue(vp__copier *cp, int kind, int stage, int mb) {
    pthread_mutex_lock(&cp->mu);
    VP_ASSERT(cp->n < cp->cap); /* at most one of each copy is outstanding */
    cp->queue[(cp->head + cp->n) % cp->cap] = (job){kind, stage, mb};
    cp->n++;
    pthread_cond_broadcast(&cp->cv);
    pthread_mutex_unlock(&cp->mu);
}

vp_status vp__copier_wait(vp__copier *cp, int kind, int stage, int mb, double *start, double *end,
                          vp_error *err) {
    size_t i = slot_of(cp->c->r, kind, stage, mb);
    pthread_mutex_lock(&cp->mu);
    while (!cp->done[i] && cp->rc == VP_OK)
        pthread_cond_wait(&cp->cv, &cp->mu);
    cp->done[i] = 0;
    *start = cp->start[i];
    *end = cp->end[i];
    vp_status rc = cp->rc;
    if (rc != VP_OK && err)
        *err = cp->err;
    pthread_mutex_unlock(&cp->mu);
    return rc;
}

void vp__copier_times(vp__copier *cp, int kind, int stage, int mb, double *start, double *end) {
    size_t i = slot_of(cp->c->r, kind, stage, mb);
    pthread_mutex_lock(&cp->mu);
    *start = cp->start[i];
    *end = cp->end[i];
    pthread_mutex_unlock(&cp->mu);
}
