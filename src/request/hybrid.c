/* plan --model: the DP x TP x PP x microbatch x schedule x recompute search, its report,
 * and its exports (door.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/door.h"
#include "vpipe/hybrid.h"
#include "vpipe/io.h"

#define GIB 1073741824.0

/* The options that the search decides itself, refused in order. */
static vp_status check_options(const vp__run *run, vp_error *err) {
    static const char *const built[] = {"v", "memory_limit", "max_ops", NULL};
    const vp_request *q = run->req;
    if (q->p || q->m || q->memory || q->cost || q->cost_file)
        return vp__fail(err, VP_EINVAL,
                        "with %s the search chooses the pipeline: %s, %s, %s and %s do not "
                        "apply (%s fixes the pipeline degree)",
                        VP__NAME(run, "model"), VP__NAME(run, "p"), VP__NAME(run, "m"),
                        VP__NAME(run, "memory"), VP__NAME(run, "cost"), VP__NAME(run, "pp"));
    const char *given = vp__first_given(run, built);
    if (given)
        return vp__fail(err, VP_EINVAL,
                        "%s does not apply with %s: the search builds every candidate itself",
                        VP__NAME(run, given), VP__NAME(run, "model"));
    if (!q->gpus || !q->global_batch)
        return vp__fail(err, VP_EINVAL, "plan %s needs %s N and %s B", VP__NAME(run, "model"),
                        VP__NAME(run, "gpus"), VP__NAME(run, "global_batch"));
    if (q->layers_per_stage)
        return vp__fail(err, VP_EINVAL,
                        "%s does not apply to the search: every configuration gets its own "
                        "split (%s)",
                        VP__NAME(run, "layers_per_stage"), VP__NAME(run, "split"));
    if (q->offload && strcmp(q->offload, "auto") && strcmp(q->offload, "none"))
        return vp__fail(err, VP_EINVAL,
                        "%s with %s is auto (the search offloads where a configuration would "
                        "not fit otherwise) or none",
                        VP__NAME(run, "offload"), VP__NAME(run, "model"));
    if ((q->emit == VP_EMIT_TORCHTITAN) != (q->operand[0] != NULL))
        return vp__fail(err, VP_EINVAL,
                        "%s torchtitan takes a directory: %s torchtitan DIR (and a directory "
                        "needs %s torchtitan)",
                        VP__NAME(run, "emit"), VP__NAME(run, "emit"), VP__NAME(run, "emit"));
    return VP_OK;
}

static void progress(void *arg, long done, long total) {
    vp__progress(arg, "plan: %ld/%ld configurations visited", done, total);
}

/* The search request (the model's fixed degrees, the search's own options). */
static vp_hybrid_request search_request(vp__run *run) {
    const vp_request *r = run->req;
    vp_hybrid_request q = vp_hybrid_request_make(&run->arch, &run->gpu, r->gpus, r->global_batch);
    q.work = run->work;
    q.split = r->split >= 0 ? (vp_split_goal)r->split : VP_SPLIT_TIME;
    q.tp = r->tp;
    q.dp = r->dp;
    q.ep = r->ep;
    q.etp = r->etp;
    q.cp = r->cp;
    q.zero_search = r->zero < 0;
    q.mbs = r->mbs;
    q.pp = r->pp;
    q.recompute = r->recompute;
    q.offload = run->offload_auto;
    q.vocab_parallel = r->vocab_parallel;
    q.fp8_search = r->fp8 == VP_REQUEST_FP8_AUTO;
    q.max_chunks = r->max_chunks;
    q.top = r->top;
    q.threads = r->threads;
    q.time_limit_s = r->time_limit;
    q.margin_bytes = r->margin >= 0 ? r->margin * GIB : -1;
    q.progress = progress;
    q.progress_arg = run;
    return q;
}

/* "v-zb" or "interleaved v=2" or "v-block f1=1 ..." of c into buf, and " offload 0.5"
 * when it offloads. */
static const char *family_text(const vp_hybrid_config *c, char *buf, size_t size) {
    int n = c->v ? snprintf(buf, size, "%s v=%d", c->family, c->v)
                 : snprintf(buf, size, "%s%s%s", c->family, c->params[0] ? " " : "", c->params);
    if (c->offload > 0 && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " offload %g", c->offload);
    return buf;
}

static void config_row(vp__buf *out, const char *label, const vp_hybrid_config *c, bool zero) {
    char fam[160], ep[192] = "";
    int n = c->cp > 1 ? snprintf(ep, sizeof ep, ", CP %d", c->cp) : 0;
    if (c->ep > 1 || c->etp > 1)
        n += snprintf(ep + n, sizeof ep - (size_t)n, ", EP %d, ETP %d", c->ep, c->etp);
    if (c->fp8 != VP_FP8_OFF)
        n += snprintf(ep + n, sizeof ep - (size_t)n, ", FP8 %s", vp_fp8_name(c->fp8));
    if (zero) /* the stage searched: each row says which */
        n += snprintf(ep + n, sizeof ep - (size_t)n, ", ZeRO %d", c->zero);
    char names[96];
    if (c->recompute == VP_RECOMPUTE_SELECTIVE && c->recompute_modules && (size_t)n < sizeof ep)
        snprintf(ep + n, sizeof ep - (size_t)n, ", modules %s",
                 vp_recompute_modules_text(c->recompute_modules, names, sizeof names));
    vp__buf_printf(
        out, "%-4s %-14s %3d %3d %3d %4d %5d %-9s %9.4g %6.2f%% %7.2f%% %8.2f %6.1f%s  %s%s\n",
        label, c->group, c->dp, c->tp, c->pp, c->mbs, c->m, vp_recompute_name(c->recompute),
        c->step_time_s, 100 * c->mfu, 100 * c->bubble, c->memory_max_bytes / GIB,
        c->headroom_bytes / GIB, c->tight ? " tight" : "      ", family_text(c, fam, sizeof fam),
        ep);
}

static void table_head(vp__buf *out) {
    vp__buf_printf(out, "%-4s %-14s %3s %3s %3s %4s %5s %-9s %9s %7s %8s %8s %12s  %s\n", "",
                   "family", "DP", "TP", "PP", "mbs", "m", "recompute", "step s", "MFU", "bubble",
                   "max GiB", "room GiB", "schedule");
}

/* The ZeRO stage in the plan's first line: searched, or fixed (", distributed optimizer" for
 * ZeRO-1, as plans always said). */
static const char *zero_text(const vp_hybrid_request *q, char *buf, size_t size) {
    if (q->zero_search)
        snprintf(buf, size, ", the ZeRO stage searched");
    else if (q->work.zero == 1)
        snprintf(buf, size, ", distributed optimizer");
    else if (q->work.zero > 1)
        snprintf(buf, size, ", %s", vp_zero_text(q->work.zero));
    else
        buf[0] = '\0';
    return buf;
}

static void search_text(vp__buf *out, const vp_hybrid *h, const vp_hybrid_request *q) {
    char zero[48], framework[48] = "";
    if (q->work.framework != VP_FRAMEWORK_MEGATRON)
        snprintf(framework, sizeof framework, ", as %s runs it",
                 vp_framework_name(q->work.framework));
    vp__buf_printf(
        out,
        "plan: %s on %d %s (%.1f GiB each, a margin of %.1f GiB kept), sequence %d, "
        "global batch %d%s%s%s%s%s%s%s\n",
        q->arch->name, q->gpus, q->gpu->name, q->gpu->memory_bytes / GIB, h->margin_bytes / GIB,
        q->work.seq, q->global_batch, q->work.flash ? ", FlashAttention" : "",
        q->work.sp ? ", sequence parallelism" : "", zero_text(q, zero, sizeof zero),
        q->vocab_parallel ? ", vocabulary parallelism" : "",
        q->work.prec.grad < 4 ? ", 16-bit gradients" : "", vp__optimizer_text(&q->work), framework);
    vp__buf_printf(out,
                   "%ld configurations%s: %ld evaluated, %ld pruned (%ld by the step-time bound, "
                   "%ld by the memory bound, %ld over memory when built), %ld refused; %.2f s\n",
                   h->candidates, h->timed_out ? " reached before the time limit" : "",
                   h->evaluated, h->pruned_bound + h->pruned_memory + h->over_memory,
                   h->pruned_bound, h->pruned_memory, h->over_memory, h->refused, h->elapsed_s);
    if (h->timed_out)
        vp__buf_printf(out, "TIME LIMIT reached: the best found so far, not every configuration\n");
    vp__buf_printf(out, "\nwhy: %s\n\ntop %d:\n", h->reason, h->n_top);
    table_head(out);
    for (int i = 0; i < h->n_top; i++) {
        char label[16];
        snprintf(label, sizeof label, "%d", i + 1);
        config_row(out, label, &h->top[i], q->zero_search);
    }
    vp__buf_printf(out, "\nbest of every family (1f1b-r: 1F1B with full recomputation):\n");
    table_head(out);
    for (int i = 0; i < h->n_best; i++)
        config_row(out, "", &h->best[i], q->zero_search);
    vp__buf_printf(out, "\nthe winner in detail:\n");
    vp__price_text(out, h->winner.result, &h->winner.work, false);
}

/* DIR/job.toml and DIR/schedule.csv for the winner, and a note that says so. */
static vp_status emit_torchtitan(vp__run *run, const vp_hybrid *h, const vp_hybrid_request *q,
                                 vp_error *err) {
    const char *dir = run->req->operand[0];
    char csv_path[4096], toml_path[4096];
    snprintf(csv_path, sizeof csv_path, "%s/schedule.csv", dir);
    snprintf(toml_path, sizeof toml_path, "%s/job.toml", dir);
    char *toml = NULL, *csv = NULL;
    vp_schedule *plain = NULL; /* the CSV has no O or L: the compute order without them */
    vp_offload none = {.policy = VP_OFFLOAD_NONE};
    vp_status rc = vp_hybrid_torchtitan(q, &h->winner, csv_path, &toml, err);
    if (rc == VP_OK)
        rc = vp_schedule_offload_shares(h->winner.schedule, &none, &plain, err);
    if (rc == VP_OK)
        rc = vp_torch_csv_write(plain, VP_TORCH_CSV_COMPUTE_ONLY, &csv, err);
    vp_schedule_free(plain);
    if (rc == VP_OK) {
        rc = vp__write(run, csv_path, csv, err);
        csv = NULL;
    }
    if (rc == VP_OK) {
        rc = vp__write(run, toml_path, toml, err);
        toml = NULL;
    }
    if (rc == VP_OK)
        rc = vp__note(run, vp__printf("vpipe: wrote %s and %s\n", toml_path, csv_path), err);
    free(toml);
    free(csv);
    return rc;
}

/* Whether c is of a family Megatron-LM runs (1F1B, interleaved 1F1B). */
static bool megatron_family(const vp_hybrid_config *c) {
    return !strcmp(c->family, "1f1b") || !strcmp(c->family, "interleaved");
}

/* The fastest first (qsort). */
static int by_step_time(const void *a, const void *b) {
    double x = (*(const vp_hybrid_config *const *)a)->step_time_s;
    double y = (*(const vp_hybrid_config *const *)b)->step_time_s;
    return (x > y) - (x < y);
}

/* Megatron's flags for the fastest configuration it runs, among the top and every family's
 * best of 1F1B and interleaved: the first vp_hybrid_megatron takes (not, say, a 1F1B
 * pipeline with the all-to-all overlap), with a comment on a faster one it refused. */
static vp_status emit_megatron(vp__run *run, const vp_hybrid *h, const vp_hybrid_request *q,
                               vp_error *err) {
    const vp_hybrid_config **order = vp__calloc((size_t)(h->n_top + h->n_best) + 1, sizeof *order);
    if (!order)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < h->n_top; i++)
        if (megatron_family(&h->top[i]))
            order[n++] = &h->top[i];
    for (int i = 0; i < h->n_best; i++)
        if (megatron_family(&h->best[i]))
            order[n++] = &h->best[i];
    qsort(order, (size_t)n, sizeof *order, by_step_time);
    const vp_hybrid_config *pick = NULL;
    vp_hybrid_priced priced;
    char *flags = NULL;
    vp_status rc = VP_OK;
    vp_error refused = {0}; /* the first refusal, of a faster configuration than the pick */
    for (int i = 0; i < n && !pick && rc == VP_OK; i++) {
        memset(&priced, 0, sizeof priced);
        vp_error why = {0};
        rc = vp_hybrid_price(q, order[i], &priced, err);
        if (rc == VP_OK && (rc = vp_hybrid_megatron(q, &priced, &flags, &why)) != VP_OK && err)
            *err = why;
        if (rc == VP_OK)
            pick = order[i];
        else
            vp_hybrid_priced_release(&priced);
        if (rc == VP_EUNSUPPORTED && !refused.message[0])
            refused = why;
        rc = rc == VP_EUNSUPPORTED ? VP_OK : rc;
    }
    free(order);
    if (rc != VP_OK)
        return rc;
    if (!pick)
        return vp__fail(err, VP_EINVAL, "no configuration Megatron-LM runs fits%s%s",
                        refused.message[0] ? ": " : " (it runs only 1F1B and interleaved 1F1B)",
                        refused.message);
    rc = vp__say(run,
                 vp__printf("# Megatron-LM: %s, predicted step %.4g s, MFU %.1f%%%s\n%s%s%s%s",
                            pick->group, pick->step_time_s, 100 * pick->mfu,
                            h->n_top > 0 && !megatron_family(&h->top[0])
                                ? " (vpipe's winner is a schedule Megatron lacks)"
                                : "",
                            refused.message[0] ? "# a faster one is refused: " : "",
                            refused.message, refused.message[0] ? "\n" : "", flags),
                 err);
    free(flags);
    vp_hybrid_priced_release(&priced);
    return rc;
}

/* The winner's schedule to -o, then the report (text or JSON) on stdout unless -o - or
 * Megatron-LM's flags took it. */
static vp_status search_report(vp__run *run, const vp_hybrid *h, const vp_hybrid_request *q,
                               vp_error *err) {
    const char *out = run->req->output;
    if (out) {
        char *text = NULL;
        vp_status rc = vp_json_write(h->winner.schedule, &text, err);
        if (rc == VP_OK)
            rc = vp__write(run, out, text, err);
        if (rc != VP_OK || !strcmp(out, "-"))
            return rc;
    }
    if (run->req->emit == VP_EMIT_MEGATRON)
        return VP_OK;
    if (run->req->json)
        return vp__say_json(run, vp__json_take(vp_hybrid_json(h, q)), err);
    vp__buf b = {0};
    search_text(&b, h, q);
    return vp__say_buf(run, &b, err);
}

vp_status vp__hybrid(vp__run *run, vp_error *err) {
    const vp_request *r = run->req;
    vp_status rc = vp__spec_ready(run, err);
    if (rc == VP_OK)
        rc = check_options(run, err);
    if (rc == VP_OK)
        rc = vp__real_ready(run, err);
    if (rc == VP_OK && r->operand[0])
        rc = vp__probe(run, r->operand[0], true, err);
    if (rc == VP_OK && r->output)
        rc = vp__probe(run, r->output, false, err);
    if (rc != VP_OK)
        return rc;
    vp_hybrid_request q = search_request(run);
    vp_hybrid *h = NULL;
    rc = vp_hybrid_run(&q, &h, err);
    vp__progress_clear(run);
    if (rc == VP_OK && r->emit == VP_EMIT_TORCHTITAN)
        rc = emit_torchtitan(run, h, &q, err);
    if (rc == VP_OK && r->emit == VP_EMIT_MEGATRON)
        rc = emit_megatron(run, h, &q, err);
    if (rc == VP_OK)
        rc = search_report(run, h, &q, err);
    vp_hybrid_free(h);
    return rc;
}
