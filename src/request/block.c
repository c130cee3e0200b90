/* block: a schedule built from the user's building block, with its timing, memory and
 * lifespans; --example, the 1F1B block to start from (door.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/door.h"
#include "vpipe/block.h"
#include "vpipe/io.h"

/* The 1F1B block for p devices. */
static vp_status example(vp__run *run, vp_error *err) {
    static const char *const unused[] = {"m",         "v",       "memory_model", "memory_limit",
                                         "cost_file", "max_ops", "reorder",      "output",
                                         "json",      NULL};
    const char *given = vp__first_given(run, unused);
    if (given)
        return vp__fail(err, VP_EINVAL, "%s does not apply to block %s (it takes %s and %s)",
                        VP__NAME(run, given), VP__NAME(run, "example"), VP__NAME(run, "p"),
                        VP__NAME(run, "cost"));
    vp_costs costs = vp_costs_default();
    const char *cost = run->req->cost;
    if (cost && vp_costs_parse(cost, &costs, err) != VP_OK)
        return vp__value_error(run, "cost", cost, VP_OK, err);
    int p = run->req->p ? run->req->p : 4;
    vp_block *shape = NULL, *b = NULL;
    vp_memcfg mem = vp_memcfg_default();
    vp_cost_model *cm = NULL;
    char *text = NULL;
    vp_status rc = vp_block_new(p, p, VP_PLACE_SINGLE, &shape, err);
    if (rc == VP_OK)
        rc = vp_block_cost_model(shape, &costs, &mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_block_1f1b(p, cm, 0, &b, err);
    if (rc == VP_OK)
        rc = vp_block_write_json(b, &costs, &text, err);
    if (rc == VP_OK)
        rc = vp__say(run, text, err);
    vp_block_free(b);
    vp_cost_model_free(cm);
    vp_block_free(shape);
    return rc;
}

/* Errors about the user's block are bad input (exit 3); memory is a failure. */
static vp_status block_error(vp_error *err) {
    if (err->status == VP_ENOMEM)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    if (err->status == VP_EIO)
        return err->status;
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    vp_status status = vp_status_exit_code(err->status) == 3 ? err->status : VP_EVALIDATION;
    if (err->line > 0)
        return vp__fail(err, status, "line %d, column %d: %s", err->line, err->column, why);
    return vp__fail(err, status, "%s", why);
}

static void block_text(vp__buf *out, const vp_block *b, bool T_given, const vp_schedule *s,
                       const vp_sim *sim, const vp_block_lifespan *ls, int moved) {
    vp__buf_printf(out, "block  p=%d  stages=%d  placement=%s  mb_per_copy=%d  passes=%d\n", b->p,
                   b->S, vp_placement_name(b->placement), b->mb_per_copy, b->n);
    vp__buf_printf(out, "interval T=%g%s\n", b->T, T_given ? "" : " (smallest collision-free)");
    vp__buf_printf(out,
                   "schedule  m=%d  makespan %g  bubble %.2f%% (longest span %g)  over makespan "
                   "%.2f%%",
                   s->m, sim->makespan, 100.0 * sim->bubble, vp_sim_longest_span(sim),
                   100.0 * sim->bubble_makespan);
    if (moved >= 0)
        vp__buf_printf(out, "  reorder moves %d", moved);
    vp__buf_printf(out, "\n\ndevice      start        end       busy    peak   bound  steady\n");
    for (int d = 0; d < s->p; d++)
        vp__buf_printf(out, "%6d %10g %10g %10g %7g %7g %7g\n", d, sim->dev_first[d],
                       sim->dev_last[d], sim->dev_busy[d], sim->peak[d], ls->bound[d],
                       ls->steady[d]);
    vp__buf_printf(out, "\nstage  device   lifespan  ceil(l/T)\n");
    for (int st = 0; st < b->S; st++)
        vp__buf_printf(out, "%5d %7d %10g %10g\n", st, b->stage_device[st], ls->life[st],
                       ls->life[st] > 0 ? ceil(ls->life[st] / b->T - 1e-9) : 0.0);
}

static json_t *lifespan_json(const vp_block *b, const vp_block_lifespan *ls) {
    json_t *stages = json_array(), *devices = json_array();
    for (int st = 0; st < b->S; st++)
        json_array_append_new(stages, json_pack("{s:i, s:i, s:f}", "stage", st, "device",
                                                b->stage_device[st], "lifespan", ls->life[st]));
    for (int d = 0; d < b->p; d++)
        json_array_append_new(devices,
                              json_pack("{s:i, s:f, s:f, s:f}", "device", d, "bound", ls->bound[d],
                                        "steady", ls->steady[d], "peak", ls->peak[d]));
    return json_pack("{s:f, s:o, s:o}", "interval", b->T, "stages", stages, "devices", devices);
}

/* Reads the block file with the costs (the file's unless --cost was given). */
static vp_status read_block(vp__run *run, const char *path, vp_block **out, bool *T_given,
                            vp_error *err) {
    char *text = NULL;
    size_t len = 0;
    if (vp_read_file(path, 0, &text, &len, err) != VP_OK)
        return err->status;
    vp_costs *costs = &run->spec.costs;
    vp_status rc = vp_block_read_json(text, len, run->have_cost ? costs : NULL, costs, out, err);
    free(text);
    *T_given = rc == VP_OK && (*out)->T > 0;
    if (rc == VP_OK && !*T_given)
        rc = vp_block_min_interval(*out, &(*out)->T, err);
    if (rc == VP_OK)
        rc = vp_block_collisions(*out, (*out)->T, NULL, err);
    if (rc == VP_OK)
        return VP_OK;
    vp_block_free(*out);
    *out = NULL;
    return block_error(err);
}

/* The number of ops m microbatches of b make, refused over the limit before anything is
 * built: each microbatch runs every pass of its copy's class once. */
static vp_status check_size(const vp__run *run, const vp_block *b, int m, vp_error *err) {
    long limit = run->spec.max_ops > 0 ? run->spec.max_ops : VP_MAX_OPS_DEFAULT;
    double ops = (double)b->n / b->mb_per_copy * m;
    if (ops <= (double)limit)
        return VP_OK;
    return vp__fail(err, VP_ELIMIT,
                    "block: m=%d makes about %.3g ops of %d passes per copy, over the limit of "
                    "%ld; raise the limit (%s) if the machine has the memory",
                    m, ops, b->n, limit, VP__NAME(run, "max_ops"));
}

/* What a block makes: the schedule, its simulation, the lifespans, passes moved. */
typedef struct built {
    vp_schedule *s;
    vp_sim *sim;
    vp_block_lifespan *ls;
    int moved; /* -1 without --reorder */
} built;

/* Repeats, validates, optionally reorders and simulates. */
static vp_status build(const vp__run *run, const vp_block *b, int m, built *out, vp_error *err) {
    vp_cost_model *cm = NULL;
    vp_status rc = vp_block_repeat(b, m, "block", &out->s, err);
    if (rc == VP_OK && (rc = vp_schedule_validate(out->s, err)) != VP_OK) {
        if (rc == VP_ENOMEM)
            return rc; /* not the block's fault */
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        return vp__fail(err, VP_EVALIDATION, "the block's timing breaks a dependency: %s", why);
    }
    if (rc == VP_OK)
        rc = vp_block_cost_model(b, &run->spec.costs, &run->spec.mem, &cm, err);
    if (rc == VP_OK)
        rc = vp_block_lifespan_new(b, cm, m, &out->ls, err);
    if (rc == VP_OK && run->req->reorder)
        rc = vp_block_reorder(out->s, cm, &out->moved, err);
    vp_cost_model_free(cm);
    if (rc != VP_OK)
        return block_error(err);
    return vp__simulate(run, out->s, &out->sim, err);
}

/* The report: JSON, or text unless -o took stdout. */
static vp_status report(vp__run *run, const vp_block *b, bool T_given, const built *x,
                        vp_error *err) {
    const char *out = run->req->output;
    if (run->req->json) {
        json_t *j =
            json_pack("{s:o, s:o}", "simulation", vp__sim_json(x->s, x->sim, &run->spec.costs),
                      "lifespan", lifespan_json(b, x->ls));
        json_object_set_new(j, "reorder_moves", json_integer(x->moved));
        return vp__say_json(run, j, err);
    }
    if (out && !strcmp(out, "-"))
        return VP_OK;
    vp__buf text = {0};
    block_text(&text, b, T_given, x->s, x->sim, x->ls, x->moved);
    return vp__say_buf(run, &text, err);
}

/* Checks the options that do not need the file. */
static vp_status check_options(vp__run *run, vp_error *err) {
    const vp_request *q = run->req;
    if (!q->operand[0])
        return vp__fail(err, VP_EINVAL, "block needs a block file (--help shows the format)");
    if (q->p || q->v)
        return vp__fail(err, VP_EINVAL, "block: %s and %s come from the block file",
                        VP__NAME(run, "p"), VP__NAME(run, "v"));
    vp_status rc = vp__spec_ready(run, err);
    return rc == VP_OK && q->output ? vp__probe(run, q->output, false, err) : rc;
}

vp_status vp__block(vp__run *run, vp_error *err) {
    if (run->req->example)
        return run->req->operand[0]
                   ? vp__fail(err, VP_EINVAL, "block %s takes no FILE", VP__NAME(run, "example"))
                   : example(run, err);
    vp_block *b = NULL;
    bool T_given = false;
    built x = {.moved = run->req->reorder ? 0 : -1};
    vp_status rc = check_options(run, err);
    if (rc == VP_OK)
        rc = read_block(run, run->req->operand[0], &b, &T_given, err);
    int m = run->spec.m ? run->spec.m : b ? 2 * b->p : 0;
    if (rc == VP_OK)
        rc = check_size(run, b, m, err);
    if (rc == VP_OK)
        rc = build(run, b, m, &x, err);
    char *text = NULL;
    if (rc == VP_OK && run->req->output && (rc = vp_json_write(x.s, &text, err)) == VP_OK)
        rc = vp__write(run, run->req->output, text, err);
    if (rc == VP_OK)
        rc = report(run, b, T_given, &x, err);
    vp_block_lifespan_free(x.ls);
    vp_sim_free(x.sim);
    vp_schedule_free(x.s);
    vp_block_free(b);
    return rc;
}
