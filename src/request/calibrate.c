/* calibrate: an accelerator's constants fitted to measured runs (--runs RUNS.csv, read here
 * as --model reads a config.json), written to -o as a --gpu file, and the fit's report
 * (door.h). */
#include <stdlib.h>

#include "request/door.h"
#include "vpipe/calibrate.h"

/* The options checked and resolved in the command line's order: the output probed,
 * --constants into cq->fit, --gpu into *base (cq->base), then the runs read into *runs. */
static vp_status calibrate_ready(vp__run *run, vp_calibrate_request *cq, vp_gpu *base,
                                 vp_run_set **runs, vp_error *err) {
    const vp_request *q = run->req;
    if (!q->runs || !q->output)
        return vp__fail(err, VP_EINVAL, "calibrate needs %s RUNS.csv and %s OUT.json",
                        VP__NAME(run, "runs"), VP__NAME(run, "output"));
    vp_status rc = vp__probe(run, q->output, false, err);
    if (rc == VP_OK && q->constants &&
        vp_calibrate_constants_parse(q->constants, &cq->fit, err) != VP_OK)
        rc = vp__value_error(run, "constants", q->constants, err->status, err);
    if (rc == VP_OK && q->gpu && (rc = vp__gpu_resolve(run, q->gpu, base, err)) == VP_OK)
        cq->base = base;
    /* the reader's messages name the file (and the line): said once, after the option */
    if (rc == VP_OK && (rc = vp_calibrate_read_file(q->runs, runs, err)) != VP_OK)
        vp__fail(err, rc, "%s %s", VP__NAME(run, "runs"), err->message);
    cq->runs = *runs;
    return rc;
}

/* text (taken) and a newline; NULL when text is NULL or memory ran out. */
static char *with_newline(char *text) {
    char *line = text ? vp__printf("%s\n", text) : NULL;
    free(text);
    return line;
}

vp_status vp__calibrate(vp__run *run, vp_error *err) {
    vp_calibrate_request cq = {0};
    vp_gpu base;
    vp_run_set *runs = NULL;
    vp_calibration *c = NULL;
    vp_status rc = calibrate_ready(run, &cq, &base, &runs, err);
    if (rc == VP_OK)
        rc = vp_calibrate_fit(&cq, &c, err);
    if (rc == VP_OK)
        rc = vp__write(run, run->req->output, with_newline(vp_gpu_json(&c->gpu)), err);
    if (rc == VP_OK && run->req->json)
        rc = vp__say(run, with_newline(vp_calibrate_json(c, runs)), err);
    else if (rc == VP_OK)
        rc = vp__say(run, vp_calibrate_text(c, runs), err);
    if (rc == VP_OK && runs->ignored[0])
        rc = vp__note(run, vp__printf("vpipe: note: columns not read: %s\n", runs->ignored), err);
    vp_calibrate_fit_free(c);
    vp_calibrate_free(runs);
    return rc;
}
