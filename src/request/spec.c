/* The schedule options of a request: what -p, -m, -v, --cost, --cost-file, --memory-model,
 * --memory-limit, --max-ops and --recompute mean, the schedule a command works on (a
 * family or a file), and its simulation (door.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "request/door.h"
#include "vpipe/io.h"

vp_status vp__value_error(const vp__run *run, const char *key, const char *value, vp_status status,
                          vp_error *err) {
    char why[sizeof err->message], column[32] = "";
    snprintf(why, sizeof why, "%s", err->message);
    if (err->column > 0)
        snprintf(column, sizeof column, "column %d: ", err->column);
    /* a malformed or out-of-range value is a usage error, as on the command line */
    bool refused = err->status == VP_EPARSE || err->status == VP_EVALIDATION;
    if (status == VP_OK)
        status = refused && run->spelling != VP__SPELL_OLD ? VP_EINVAL : err->status;
    if (run->spelling == VP__SPELL_OLD)
        return vp__fail(err, status, "%s: %s%s", VP__NAME(run, key), column, why);
    return vp__fail(err, status, "%s '%s': %s%s", VP__NAME(run, key), value, column, why);
}

/* Fails naming a file an option gave: its reader's error with the path and position. */
static vp_status file_error(const vp__run *run, const char *key, const char *path, vp_error *err) {
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    if (err->status == VP_EIO || err->status == VP_ENOMEM) /* the message names the file */
        return vp__fail(err, err->status, "%s %s", VP__NAME(run, key), why);
    vp_status status = vp_status_exit_code(err->status) == 3 ? err->status : VP_EPARSE;
    if (err->line > 0)
        return vp__fail(err, status, "%s %s:%d:%d: %s", VP__NAME(run, key), path, err->line,
                        err->column, why);
    return vp__fail(err, status, "%s %s: %s", VP__NAME(run, key), path, why);
}

/* --cost-file: read, and with -p each rank's slice costs and the unit's bytes. */
static vp_status read_costs(vp__run *run, vp_error *err) {
    const vp_request *req = run->req;
    if (!req->read_costs)
        return vp__fail(err, VP_EUNSUPPORTED,
                        "%s needs libvpipe-runtime to read the profile (vp_profile_request_call)",
                        VP__NAME(run, "cost_file"));
    if (req->read_costs(req->cost_file, &run->costs, err) != VP_OK) {
        run->costs = (vp_cost_source){0};
        return file_error(run, "cost_file", req->cost_file, err);
    }
    return VP_OK;
}

static vp_status apply_costs(vp__run *run, vp_error *err) {
    int p = run->spec.p;
    if (!(run->dev = vp__calloc(3 * (size_t)p, sizeof *run->dev)))
        return vp__fail(err, VP_ENOMEM, "out of memory");
    if (run->costs.slices(run->costs.ctx, p, run->dev, &run->spec.costs, &run->spec.mem.unit_bytes,
                          err) == VP_OK)
        return VP_OK;
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    return vp__fail(err, VP_EINVAL, "%s at %s %d: %s", VP__NAME(run, "cost_file"),
                    VP__NAME(run, "p"), p, why);
}

/* --offload and --offload-policy into the spec (plan's "auto" leaves it to the planner). */
static vp_status offload_ready(vp__run *run, vp_error *err) {
    const vp_request *req = run->req;
    vp_offload *o = &run->spec.offload;
    if (req->offload_policy >= 0 && !req->offload)
        return vp__fail(err, VP_EINVAL, "%s needs %s", VP__NAME(run, "offload_policy"),
                        VP__NAME(run, "offload"));
    if (!req->offload)
        return VP_OK;
    if (run->cmd == VP__PLAN && !strcmp(req->offload, "auto")) {
        run->offload_auto = true;
        return VP_OK;
    }
    if (vp_offload_parse(req->offload, o, &run->offload_shares, err) != VP_OK)
        return vp__value_error(run, "offload", req->offload, VP_OK, err);
    if (req->offload_policy >= 0 && o->policy != VP_OFFLOAD_NONE)
        o->policy = (vp_offload_policy)req->offload_policy;
    return VP_OK;
}

vp_status vp__spec_ready(vp__run *run, vp_error *err) {
    const vp_request *req = run->req;
    vp_spec *spec = &run->spec;
    *spec = vp_spec_make(req->p, req->m);
    spec->v = req->v;
    spec->mem_limit = req->memory_limit;
    spec->max_ops = req->max_ops;
    if (req->cost && vp_costs_parse(req->cost, &spec->costs, err) != VP_OK)
        return vp__value_error(run, "cost", req->cost, VP_OK, err);
    run->have_cost = req->cost != NULL;
    if (req->memory_model && vp_memcfg_parse(req->memory_model, &spec->mem, err) != VP_OK)
        return vp__value_error(run, "memory_model", req->memory_model, VP_OK, err);
    if (req->cost_file && read_costs(run, err) != VP_OK)
        return err->status;
    if (req->recompute >= 0)
        spec->recompute = (vp_recompute)req->recompute;
    if (offload_ready(run, err) != VP_OK)
        return err->status;
    spec->vocab_parallel = req->vocab_parallel;
    if (spec->p > 0 && spec->m > 0 && vp_spec_check_size(spec, err) != VP_OK)
        return err->status;
    if (req->cost && req->cost_file)
        return vp__fail(err, VP_EINVAL, "give %s or %s, not both", VP__NAME(run, "cost"),
                        VP__NAME(run, "cost_file"));
    return req->cost_file && spec->p > 0 ? apply_costs(run, err) : VP_OK;
}

vp_status vp__unknown_family(const char *name, vp_error *err) {
    const vp_family *near = vp_family_nearest(name);
    return vp__fail(err, VP_EINVAL, "unknown family '%s'%s", name,
                    vp__did_you_mean(near ? near->name : NULL, "vpipe list").text);
}

/* A schedule read from path ("-" is stdin), with the command line's messages. */
static vp_status load(const char *path, vp_schedule **out, vp_error *err) {
    struct stat st;
    /* a bare word that names nothing is a mistyped family; anything else is a file */
    if (strcmp(path, "-") && stat(path, &st) != 0 && !strchr(path, '/') && !strchr(path, '.')) {
        const vp_family *near = vp_family_nearest(path);
        return vp__fail(err, VP_EINVAL, "'%s' is neither a family nor a file%s", path,
                        vp__did_you_mean(near ? near->name : NULL, "vpipe list").text);
    }
    if (vp_schedule_load(path, out, err) == VP_OK)
        return VP_OK;
    vp_status status =
        err->status == VP_ENOMEM || vp_status_exit_code(err->status) == 3 ? err->status : VP_EPARSE;
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    if (err->line > 0)
        return vp__fail(err, status, "%s:%d:%d: %s", path, err->line, err->column, why);
    return vp__fail(err, status, "%s", why);
}

vp_status vp__obtain(vp__run *run, const char *what, vp_schedule **owned, const vp_schedule **s,
                     vp_error *err) {
    const vp_spec *spec = &run->spec;
    *owned = NULL;
    *s = NULL;
    if (!run->req->schedule && vp_family_find(what)) {
        if (!spec->p || !spec->m)
            return vp__fail(err, VP_EINVAL, "building '%s' needs %s and %s", what,
                            VP__NAME(run, "p"), VP__NAME(run, "m"));
        vp_status rc = vp_family_build(what, spec, owned, err);
        *s = *owned;
        return rc;
    }
    const vp_schedule *got = run->req->schedule;
    if (!got && load(what, owned, err) != VP_OK)
        return err->status;
    got = got ? got : *owned;
    const char *name = run->req->schedule ? "the schedule" : what;
    if ((spec->p && spec->p != got->p) || (spec->m && spec->m != got->m))
        return vp__fail(err, VP_EVALIDATION, "%s has p=%d, m=%d, not the %s/%s given", name, got->p,
                        got->m, VP__NAME(run, "p"), VP__NAME(run, "m"));
    *s = got;
    if (spec->vocab_parallel && !got->vocab_parallel)
        return vp__fail(err, VP_EVALIDATION,
                        "%s has no vocabulary passes (EF, EB, S, T): %s places them into a "
                        "family it builds, not into a file (write the file from a family built "
                        "with %s, or drop it)",
                        name, VP__NAME(run, "vocab_parallel"), VP__NAME(run, "vocab_parallel"));
    vp_status rc = VP_OK;
    if (spec->recompute != VP_RECOMPUTE_NONE) {
        vp_schedule *r = NULL;
        rc = vp_schedule_recompute(*s, spec->recompute, &r, err);
        vp_schedule_free(*owned);
        *owned = r;
        *s = r;
    }
    if (rc == VP_OK && (run->req->offload || spec->offload.policy != VP_OFFLOAD_NONE) &&
        !run->offload_auto) { /* "none" strips O and L */
        vp_schedule *o = NULL;
        rc = vp_schedule_offload(*s, &spec->costs, &spec->mem, &spec->offload, &o, err);
        vp_schedule_free(*owned);
        *owned = o;
        *s = o;
    }
    return rc;
}

vp_status vp_request_obtain(const char *what, const vp_spec *spec, vp_schedule **out,
                            vp_error *err) {
    vp_request req;
    vp_request_init(&req, NULL);
    vp__run run = {.req = &req, .spec = *spec};
    const vp_schedule *s = NULL;
    *out = NULL;
    return vp__obtain(&run, what, out, &s, err);
}

vp_status vp__simulate(const vp__run *run, const vp_schedule *s, vp_sim **out, vp_error *err) {
    vp_cost_model *cm = NULL;
    *out = NULL;
    vp_status rc = vp_cost_model_new(s, &run->spec.costs, &run->spec.mem, &cm, err);
    if (rc == VP_OK && run->costs.fill)
        rc = run->costs.fill(run->costs.ctx, s, cm, err);
    if (rc == VP_OK)
        rc = vp_simulate(s, cm, out, err);
    vp_cost_model_free(cm);
    return rc;
}

const char *vp__costs_text(const vp_costs *c, char *buf, size_t size) {
    int n = snprintf(buf, size, "F=%g B=%g W=%g c=%g", c->f, c->b, c->w, c->c);
    if (c->fb >= 0 && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, " FB=%g", c->fb);
    if (c->r >= 0 && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, " R=%g", c->r);
    if ((c->s > 0 || c->t > 0 || c->e > 0) && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, " S=%g T=%g E=%g", c->s, c->t, c->e);
    if (c->o >= 0 && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, " O=%g", c->o);
    if (c->l >= 0 && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " L=%g", c->l);
    return buf;
}

json_t *vp__sim_json(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs) {
    char *text = NULL;
    return vp__json_take(vp_sim_json(s, sim, costs, &text, NULL) == VP_OK ? text : NULL);
}
