/* The commands that answer about one schedule: list (the families), simulate, render,
 * schedule and validate (door.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/door.h"
#include "vpipe/io.h"
#include "vpipe/render.h"

vp_status vp__list(vp__run *run, vp_error *err) {
    if (run->req->json) {
        json_t *arr = json_array();
        for (int i = 0; i < vp_family_count(); i++) {
            const vp_family *f = vp_family_at(i);
            json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "name", f->name, "summary",
                                                 f->summary, "needs", f->needs));
        }
        return vp__say_json(run, arr, err);
    }
    vp__buf out = {0};
    for (int i = 0; i < vp_family_count(); i++) {
        const vp_family *f = vp_family_at(i);
        vp__buf_printf(&out, "%-12s %s\n%-12s needs %s\n", f->name, f->summary, "", f->needs);
    }
    return vp__say_buf(run, &out, err);
}

/* The operand names a schedule already (a file, the caller's): the options that only
 * build a family do not apply. */
static vp_status check_given_schedule(const vp__run *run, const char *what, vp_error *err) {
    static const char *const building[] = {"v", "memory_limit", NULL};
    static const char *const costing[] = {"cost", "cost_file", "memory_model", NULL};
    if (!run->req->schedule && vp_family_find(what))
        return VP_OK;
    const char *given = vp__first_given(run, building);
    if (!given && run->cmd == VP__VALIDATE)
        given = vp__first_given(run, costing);
    if (!given)
        return VP_OK;
    return vp__fail(err, VP_EINVAL, "%s applies to a family built here: %s is a schedule already",
                    VP__NAME(run, given), run->req->schedule ? "the operand" : what);
}

/* The operand: what a command works on (NULL with the caller's schedule). */
static vp_status operand(const vp__run *run, const char *missing, const char **what,
                         vp_error *err) {
    *what = run->req->operand[0];
    if (!*what && !run->req->schedule)
        return vp__fail(err, VP_EINVAL, "%s", missing);
    return check_given_schedule(run, *what, err);
}

/* The schedule what names, the options resolved first: priced for --model (*priced),
 * else obtained. */
static vp_status resolve(vp__run *run, const char *what, vp_price_result **priced,
                         vp_schedule **owned, const vp_schedule **s, vp_error *err) {
    vp_status rc = vp__spec_ready(run, err);
    if (rc == VP_OK)
        rc = vp__real_ready(run, err);
    if (rc == VP_OK && run->real)
        return vp__price(run, what, priced, owned, s, err);
    return rc == VP_OK ? vp__obtain(run, what, owned, s, err) : rc;
}

/* ---- simulate -------------------------------------------------------------------------- */

static void simulate_text(vp__buf *out, const vp_schedule *s, const vp_sim *sim,
                          const vp_costs *c) {
    char costs[128];
    vp__buf_printf(out, "%s  p=%d  m=%d  stages=%d  placement=%s  costs %s", s->family, s->p, s->m,
                   s->S, vp_placement_name(s->placement), vp__costs_text(c, costs, sizeof costs));
    if (s->recompute != VP_RECOMPUTE_NONE)
        vp__buf_printf(out, "  recompute %s", vp_recompute_name(s->recompute));
    if (s->vocab_parallel)
        vp__buf_printf(out, "  vocabulary parallel");
    vp__buf_printf(out, "\n");
    vp__buf_printf(
        out, "makespan %g   bubble %.2f%% (longest span %g)   bubble over makespan %.2f%%\n",
        sim->makespan, 100.0 * sim->bubble, vp_sim_longest_span(sim), 100.0 * sim->bubble_makespan);
    vp__buf_printf(out, "peak memory %g units (max over devices)\n\n", sim->peak_max);
    vp__buf_printf(out, "device      start        end       busy  peak(units)%s\n",
                   sim->peak_bytes ? "  peak(bytes)" : "");
    for (int d = 0; d < s->p; d++) {
        vp__buf_printf(out, "%6d %10g %10g %10g %12g", d, sim->dev_first[d], sim->dev_last[d],
                       sim->dev_busy[d], sim->peak[d]);
        if (sim->peak_bytes)
            vp__buf_printf(out, " %12.0f", sim->peak_bytes[d]);
        vp__buf_printf(out, "\n");
    }
}

/* The report: text or JSON, of the simulation, or with --model of the pricing. */
static vp_status simulate_report(vp__run *run, const vp_schedule *s, const vp_sim *sim,
                                 const vp_price_result *priced, vp_error *err) {
    if (run->req->json && !priced) {
        char *text = NULL;
        vp_status rc = vp_sim_json(s, sim, &run->spec.costs, &text, err);
        return rc == VP_OK ? vp__say(run, text, err) : rc;
    }
    if (run->req->json)
        return vp__say_json(run, vp__price_json(s, priced), err);
    vp__buf out = {0};
    vp_workload shown = run->work;
    if (s->recompute != VP_RECOMPUTE_NONE) /* priced in its R passes (vp_workload) */
        shown.recompute = s->recompute;
    if (priced)
        vp__price_text(&out, priced, &shown, run->setup.measured != NULL);
    else
        simulate_text(&out, s, sim, &run->spec.costs);
    return vp__say_buf(run, &out, err);
}

vp_status vp__simulate_cmd(vp__run *run, vp_error *err) {
    const char *what = NULL;
    vp_schedule *owned = NULL;
    const vp_schedule *s = NULL;
    vp_sim *sim = NULL;
    vp_price_result *priced = NULL;
    vp_status rc = operand(run, "simulate needs a family or a file (--help)", &what, err);
    if (rc == VP_OK)
        rc = resolve(run, what, &priced, &owned, &s, err);
    if (rc == VP_OK && !priced)
        rc = vp__simulate(run, s, &sim, err);
    if (rc == VP_OK)
        rc = simulate_report(run, s, sim, priced, err);
    vp_price_result_free(priced);
    vp_sim_free(sim);
    vp_schedule_free(owned);
    return rc;
}

/* ---- render ---------------------------------------------------------------------------- */

/* The outputs asked for, checked before anything is drawn; *ascii when drawn to stdout. */
static vp_status render_outputs(const vp__run *run, bool *ascii, vp_error *err) {
    const vp_request *q = run->req;
    if (q->color && q->no_color)
        return vp__fail(err, VP_EINVAL, "give %s or %s, not both", VP__NAME(run, "color"),
                        VP__NAME(run, "no_color"));
    if ((q->svg && !strcmp(q->svg, "-")) + (q->trace && !strcmp(q->trace, "-")) + q->ascii > 1)
        return vp__fail(err, VP_EINVAL, "render: only one output can go to stdout");
    *ascii = q->ascii || (!q->svg && !q->trace);
    vp_status rc = q->svg ? vp__probe(run, q->svg, false, err) : VP_OK;
    return rc == VP_OK && q->trace ? vp__probe(run, q->trace, false, err) : rc;
}

/* Draws tl with the renderer of kind ('a'scii, 's'vg, 't'race) to path; costs are what
 * the title shows. */
static vp_status draw(vp__run *run, const vp_timeline *tl, const vp_costs *costs, char kind,
                      const char *path, vp_error *err) {
    const vp_request *q = run->req;
    vp_render_opts ro = {.costs = costs, .title = q->title, .width = q->width, .fit = q->fit};
    ro.color = kind == 'a' && !q->no_color && (q->color || q->color_terminal);
    char *text = NULL;
    vp_status rc = kind == 'a'   ? vp_render_ascii(tl, &ro, &text, err)
                   : kind == 's' ? vp_render_svg(tl, &ro, &text, err)
                                 : vp_render_trace(tl, &text, err);
    return rc == VP_OK ? vp__write(run, path, text, err) : rc;
}

vp_status vp__render(vp__run *run, vp_error *err) {
    const vp_request *q = run->req;
    const char *what = NULL;
    vp_schedule *owned = NULL;
    const vp_schedule *s = NULL;
    vp_sim *sim = NULL;
    vp_price_result *priced = NULL;
    vp_timeline *tl = NULL;
    bool ascii = false;
    vp_status rc = operand(run, "render needs a family or a file (--help)", &what, err);
    if (rc == VP_OK)
        rc = render_outputs(run, &ascii, err);
    if (rc == VP_OK)
        rc = resolve(run, what, &priced, &owned, &s, err);
    if (rc == VP_OK && !priced)
        rc = vp__simulate(run, s, &sim, err);
    if (rc == VP_OK)
        rc = vp_timeline_from_sim(s, sim ? sim : priced->sim, &tl, err);
    const vp_costs *costs = priced ? &priced->costs : &run->spec.costs;
    if (rc == VP_OK && ascii)
        rc = draw(run, tl, costs, 'a', "-", err);
    if (rc == VP_OK && q->svg)
        rc = draw(run, tl, costs, 's', q->svg, err);
    if (rc == VP_OK && q->trace)
        rc = draw(run, tl, costs, 't', q->trace, err);
    vp_timeline_free(tl);
    vp_price_result_free(priced);
    vp_sim_free(sim);
    vp_schedule_free(owned);
    return rc;
}

/* ---- schedule -------------------------------------------------------------------------- */

/* One line of ops per device. */
static void schedule_text(vp__buf *out, const vp_schedule *s) {
    vp__buf_printf(out, "# %s p=%d stages=%d m=%d placement=%s%s\n", s->family, s->p, s->S, s->m,
                   vp_placement_name(s->placement), s->vocab_parallel ? " vocab_parallel" : "");
    for (int d = 0; d < s->p; d++) {
        vp__buf_printf(out, "device %d:", d);
        for (int k = 0; k < s->dev[d].n; k++) {
            char label[48];
            vp__buf_printf(out, " %s", vp_op_format(&s->dev[d].ops[k], label, sizeof label));
        }
        vp__buf_printf(out, "\n");
    }
}

/* The schedule in the chosen format into *text; the CSV exports add their notes. */
static vp_status format_schedule(vp__run *run, const vp_schedule *s, char **text, vp_error *err) {
    int format = run->req->format;
    *text = NULL;
    if (format == VP_FORMAT_TORCH_CSV || format == VP_FORMAT_TORCH_CSV_COMMS) {
        vp_torch_csv_format csv =
            format == VP_FORMAT_TORCH_CSV ? VP_TORCH_CSV_COMPUTE_ONLY : VP_TORCH_CSV_COMPUTE_COMMS;
        vp_status rc = vp_torch_csv_write(s, csv, text, err);
        char notes[1024];
        vp_torch_csv_notes(s, notes, sizeof notes);
        return rc == VP_OK && notes[0] ? vp__note(run, strdup(notes), err) : rc;
    }
    if (format == VP_FORMAT_JSON)
        return vp_json_write(s, text, err);
    vp__buf out = {0};
    schedule_text(&out, s);
    *text = vp__buf_take(&out);
    return *text ? VP_OK : vp__fail(err, VP_ENOMEM, "out of memory");
}

vp_status vp__schedule(vp__run *run, vp_error *err) {
    const char *what = run->req->operand[0];
    vp_schedule *owned = NULL;
    const vp_schedule *s = NULL;
    vp_price_result *priced = NULL;
    char *text = NULL;
    if (!what && !run->req->schedule)
        return vp__fail(err, VP_EINVAL, "schedule needs a family (vpipe list)");
    if (what && !vp_family_find(what))
        return vp__unknown_family(what, err);
    vp_status rc = resolve(run, what, &priced, &owned, &s, err);
    if (rc == VP_OK && priced) { /* what a launcher needs beside the schedule */
        vp__buf split = {0};
        vp__split_text(&split, priced);
        rc = vp__note(run, vp__buf_take(&split), err);
    }
    if (rc == VP_OK)
        rc = format_schedule(run, s, &text, err);
    if (rc == VP_OK)
        rc = vp__write(run, run->req->output ? run->req->output : "-", text, err);
    else
        free(text);
    vp_price_result_free(priced);
    vp_schedule_free(owned);
    return rc;
}

/* ---- validate -------------------------------------------------------------------------- */

vp_status vp__validate(vp__run *run, vp_error *err) {
    const char *what = NULL;
    vp_schedule *owned = NULL;
    const vp_schedule *s = NULL;
    vp_status rc = operand(run, "validate needs a file (vpipe validate --help)", &what, err);
    if (rc == VP_OK)
        rc = vp__spec_ready(run, err);
    if (rc == VP_OK)
        rc = vp__obtain(run, what, &owned, &s, err);
    if (rc == VP_OK && run->req->schedule && (rc = vp_schedule_validate(s, err)) != VP_OK)
        rc = err->status;
    if (rc == VP_OK)
        rc = vp__say(run,
                     vp__printf("%s: valid (%s, p=%d, stages=%d, m=%d, %ld ops)\n",
                                what ? what : "the schedule", s->family, s->p, s->S, s->m,
                                vp_schedule_op_count(s)),
                     err);
    vp_schedule_free(owned);
    return rc;
}
