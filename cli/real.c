/* The real-model options (--model, --gpu, the workload), pricing a schedule with them, and
 * its reports in GiB and seconds (see cli.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define GIB 1073741824.0

/* In vp_split_goal's order. */
static const char *const split_names[] = {"time", "memory", "even", NULL};

/* The counts of "a,b,c" (each in [0, 2^20]) into v[n]. Returns 0 or the exit code. */
static int read_counts(const char *flag, const char *value, int *v, size_t n) {
    const char *at = value;
    for (size_t k = 0; k < n; k++) {
        size_t len = strcspn(at, ",");
        char item[32];
        long count;
        if (len == 0 || len >= sizeof item)
            return cli_error(VP_EXIT_USAGE, "%s expects counts like 3,4,4,3, got '%s'", flag,
                             value);
        memcpy(item, at, len);
        item[len] = '\0';
        int rc = cli_parse_int(flag, item, 0, 1 << 20, &count);
        if (rc)
            return rc;
        v[k] = (int)count;
        at += len + 1;
    }
    return 0;
}

/* --layers-per-stage a,b,c into a cli_int_list (owned: cli_split_release). */
static int parse_counts(const char *flag, const char *value, void *dest) {
    size_t n = 1;
    for (const char *c = value; *c; c++)
        n += *c == ',';
    int *v = calloc(n, sizeof *v);
    if (!v)
        return cli_error(VP_EXIT_FAILURE, "out of memory");
    int rc = read_counts(flag, value, v, n);
    if (rc) {
        free(v);
        return rc;
    }
    *(cli_int_list *)dest = (cli_int_list){v, (int)n};
    return 0;
}

#define REAL_INT(name_, field, hi_, help_)                                                         \
    {                                                                                              \
        .name = name_, .kind = CLI_INT, .offset = offsetof(cli_real, field), .arg = "N", .lo = 1,  \
        .hi = hi_, .help = help_                                                                   \
    }
#define REAL_FLAG(name_, field, help_)                                                             \
    { .name = name_, .kind = CLI_FLAG, .offset = offsetof(cli_real, field), .help = help_ }

static const cli_opt real_opts[] = {
    {.name = "model",
     .kind = CLI_STRING,
     .offset = offsetof(cli_real, model),
     .arg = "NAME|FILE",
     .help = "price the schedule for a real model, in GiB and seconds: a\n"
             "preset (vpipe model list), a Hugging Face config.json, or\n"
             "vpipe:L,W,H,S (vpipe's own GPT: layers, width, heads, seq);\n"
             "--cost then gives measured ms per pass of a device's slice"},
    {.name = "gpu",
     .kind = CLI_STRING,
     .offset = offsetof(cli_real, gpu),
     .arg = "NAME|FILE",
     .help = "accelerator: a preset (vpipe model list) or a JSON file\n"
             "(default h100-80gb)"},
    REAL_INT("seq", seq, 1 << 30,
             "tokens per sequence (default: the model's positions, at\n"
             "most 2048)"),
    REAL_INT("mbs", mbs, 1 << 20, "sequences per microbatch (default 1)"),
    REAL_INT("tp", tp, 1 << 20, "tensor-parallel degree (default 1)"),
    REAL_FLAG("sp", sp, "sequence parallelism (with --tp > 1)"),
    REAL_INT("dp", dp, 1 << 20, "data-parallel degree (default 1)"),
    REAL_FLAG("zero", zero,
              "distributed optimizer (ZeRO-1): master weights and moments\n"
              "split over --dp"),
    REAL_FLAG("flash", flash, "FlashAttention: no s x s attention matrix kept"),
    REAL_FLAG("tp-overlap", tp_overlap,
              "TP collectives pipelined with the linears they feed\n"
              "(Megatron-LM's --tp-comm-overlap)"),
    REAL_FLAG("pp-overlap", pp_overlap,
              "pipeline sends overlapped with compute (default: they block\n"
              "both ends, as Megatron-LM's 1F1B)"),
    {.name = "reserve",
     .kind = CLI_DOUBLE,
     .offset = offsetof(cli_real, reserve_gib),
     .arg = "GIB",
     .lo = 0,
     .hi = 1e6,
     .help = "per-rank memory to keep free beyond every item priced\n"
             "(default 0)"},
    {.name = "dp-overlap",
     .kind = CLI_DOUBLE,
     .offset = offsetof(cli_real, dp_overlap),
     .arg = "F",
     .lo = 0,
     .hi = 1,
     .help = "share of the DP reduction hidden behind compute (default:\n"
             "overlapped bucket by bucket with the backward, as frameworks do)"},
};

const cli_group cli_real_group = CLI_GROUP("real model", real_opts);

static const cli_opt split_opts[] = {
    {.name = "split",
     .kind = CLI_ENUM,
     .offset = offsetof(cli_split, goal),
     .choices = split_names,
     .help = "layers over stages: balance each rank's pass time (FLOPs)\n"
             "or bytes (model states plus activations under the\n"
             "schedule), the embedding, head and loss weighed where they\n"
             "sit, or even (equal counts, the ends one fewer); default even\n"
             "for vpipe's own model (train, vpipe:...), time otherwise"},
    {.name = "layers-per-stage",
     .kind = CLI_CUSTOM,
     .offset = offsetof(cli_split, layers),
     .arg = "A,B,...",
     .parse = parse_counts,
     .help = "explicit split: layers of each stage of a microbatch's\n"
             "route (instead of --split)"},
};

const cli_group cli_split_group = CLI_GROUP("layer split", split_opts);

const char *cli_split_name(vp_split_goal goal) {
    return (unsigned)goal <= VP_SPLIT_EVEN ? split_names[goal] : "?";
}

void cli_real_init(cli_real *r) {
    memset(r, 0, sizeof *r);
    r->recompute = r->split.goal = -1;
    r->reserve_gib = r->dp_overlap = -1;
}

void cli_split_release(cli_split *sp) {
    free(sp->layers.v);
    sp->layers = (cli_int_list){0};
}

void cli_real_release(cli_real *r) {
    cli_split_release(&r->split);
}

/* The first real-model option given, or NULL. */
static const char *first_given(const cli_real *r) {
    const struct {
        bool given;
        const char *name;
    } opts[] = {{r->gpu, "--gpu"},
                {r->seq, "--seq"},
                {r->mbs, "--mbs"},
                {r->tp, "--tp"},
                {r->sp, "--sp"},
                {r->dp, "--dp"},
                {r->zero, "--zero"},
                {r->flash, "--flash"},
                {r->tp_overlap, "--tp-overlap"},
                {r->pp_overlap, "--pp-overlap"},
                {r->split.goal >= 0, "--split"},
                {r->split.layers.v, "--layers-per-stage"},
                {r->reserve_gib >= 0, "--reserve"},
                {r->dp_overlap >= 0, "--dp-overlap"}};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (opts[i].given)
            return opts[i].name;
    return NULL;
}

/* The error of resolving --model or --gpu: bad content of a file is bad input (3, with
 * its position), an unknown name a usage error (2). */
static int source_error(const char *flag, const char *value, const vp_error *err) {
    int code = vp_status_exit_code(err->status);
    if (err->status == VP_EIO) /* the message names the file */
        return cli_error(code, "%s %s", flag, err->message);
    if (err->line > 0)
        return cli_error(code, "%s %s:%d:%d: %s", flag, value, err->line, err->column,
                         err->message);
    return cli_error(code, "%s %s: %s", flag, value, err->message);
}

/* The workload: the model's defaults with every option given applied. */
static void apply_workload(cli_real *r) {
    vp_workload *w = &r->work;
    *w = vp_workload_default(&r->arch);
    w->seq = r->seq ? r->seq : w->seq;
    w->mbs = r->mbs ? r->mbs : w->mbs;
    w->tp = r->tp ? r->tp : w->tp;
    w->dp = r->dp ? r->dp : w->dp;
    w->sp = r->sp;
    w->zero1 = r->zero;
    w->flash = r->flash;
    w->tp_overlap = r->tp_overlap;
    w->pp_overlap = r->pp_overlap;
    if (r->recompute >= 0 && r->arch.impl != VP_IMPL_VPIPE) /* see cli_real_ready */
        w->recompute = (vp_recompute)r->recompute;
    w->reserve_bytes = r->reserve_gib >= 0 ? r->reserve_gib * GIB : w->reserve_bytes;
    w->dp_overlap = r->dp_overlap >= 0 ? r->dp_overlap : w->dp_overlap;
}

int cli_real_ready(cli_real *r, cli_spec *o) {
    if (!r->model) {
        const char *flag = first_given(r);
        return flag ? cli_error(VP_EXIT_USAGE, "%s needs --model (the model it describes)", flag)
                    : 0;
    }
    if (o->spec.mem.kind != VP_MEM_AT_W)
        return cli_error(VP_EXIT_USAGE,
                         "--memory-model does not apply with --model: the model's own "
                         "tensors give every stage's bytes");
    vp_error err = {0};
    const char *gpu = r->gpu ? r->gpu : "h100-80gb";
    if (vp_arch_resolve(r->model, &r->arch, &err) != VP_OK)
        return source_error("--model", r->model, &err);
    if (vp_gpu_resolve(gpu, &r->accel, &err) != VP_OK)
        return source_error("--gpu", gpu, &err);
    r->recompute = o->recompute;
    apply_workload(r);
    bool own = r->arch.impl == VP_IMPL_VPIPE;
    if (!own && o->recompute >= 0) /* Megatron's way: inside B, no R passes (vp_workload) */
        o->spec.recompute = VP_RECOMPUTE_NONE;
    r->setup = (vp_price_setup){
        .arch = &r->arch,
        .gpu = &r->accel,
        .work = &r->work,
        .split = r->split.goal >= 0 ? (vp_split_goal)r->split.goal
                 : own              ? VP_SPLIT_EVEN
                                    : VP_SPLIT_TIME,
        .layers_per_stage = r->split.layers.v,
        .n_layers_per_stage = r->split.layers.n,
        .measured = o->have_cost || o->profile.given ? &o->spec.costs : NULL,
    };
    if (vp_price_check(&r->setup, &err) != VP_OK)
        return cli_lib_error(&err);
    r->on = true;
    return 0;
}

char *cli_workload_text(const vp_workload *w, char *buf, size_t size) {
    snprintf(buf, size, "TP %d%s, DP %d%s, seq %d, mbs %d%s, recompute %s", w->tp,
             w->sp && w->tp > 1 ? " + SP" : "", w->dp, w->zero1 && w->dp > 1 ? " + ZeRO-1" : "",
             w->seq, w->mbs, w->flash ? ", FlashAttention" : "", vp_recompute_name(w->recompute));
    return buf;
}

int cli_price(const char *what, const cli_spec *o, const cli_real *real, vp_price_result **r,
              vp_schedule **s) {
    vp_error err = {0};
    *r = NULL;
    *s = NULL;
    if (vp_family_find(what) && (!o->spec.p || !o->spec.m))
        return cli_error(VP_EXIT_USAGE, "building '%s' needs -p and -m", what);
    if (vp_family_find(what))
        return vp_price_family(&real->setup, what, &o->spec, r, s, &err) == VP_OK
                   ? 0
                   : cli_lib_error(&err);
    int rc = cli_obtain_schedule(what, o, s);
    if (!rc && vp_price_schedule(&real->setup, *s, r, &err) != VP_OK)
        rc = cli_lib_error(&err);
    return rc;
}

json_t *cli_price_json(const vp_schedule *s, const vp_price_result *r) {
    json_t *o = cli_sim_json(s, r->sim, &r->costs);
    json_t *price = cli_json_take(vp_price_result_json(r));
    if (!o || !price || json_object_update(o, price)) {
        json_decref(o);
        o = NULL;
    }
    json_decref(price);
    return o;
}

void cli_print_split(FILE *out, const vp_price_result *r) {
    fprintf(out, "layers per stage:");
    for (int k = 0; k < r->route_len; k++)
        fprintf(out, "%s%d", k ? "," : " ", r->layers_per_stage[k]);
    fputc('\n', out);
}

/* One rank's memory row, GiB. */
static void memory_row(FILE *out, const char *label, const vp_rank_memory *m) {
    fprintf(out,
            "%-5s %8.2f %8.2f %9.2f %11.2f %8.2f %9.2f %7.2f %7.2f %6.2f %8.2f %7.2f %8.2f "
            "%8.2f\n",
            label, m->params / GIB, m->grads / GIB, m->optimizer / GIB, m->activations / GIB,
            m->buffers / GIB, m->workspace / GIB, m->logits / GIB, m->gathers / GIB,
            m->fragmentation / GIB, m->context / GIB, m->comm / GIB, m->reserve / GIB,
            m->total / GIB);
}

void cli_price_text(FILE *out, const vp_price_result *r, const vp_workload *w, bool measured) {
    char setting[256];
    fprintf(out, "%s  %s on %s  p=%d m=%d  %s  (%d GPUs)\n", r->family, r->model, r->gpu, r->p,
            r->m, cli_workload_text(w, setting, sizeof setting), r->gpus);
    fprintf(out,
            "step %.4g s = makespan %.4g s + optimizer %.3g s + exposed DP reduction %.3g s\n"
            "MFU %.2f%%   bubble %.2f%%   %.4g samples/s per GPU   %.6g tokens/s\n",
            r->step_time_s, r->makespan_s, r->optimizer_s, r->dp_exposed_s, 100 * r->mfu,
            100 * r->bubble, r->samples_per_s_per_gpu, r->tokens_per_s);
    char trust[512];
    fprintf(out, "%s\n", vp_price_expected_text(r->gpu, &r->expected, trust, sizeof trust));
    fprintf(out,
            "mean device slice per microbatch: F %.4g ms, B %.4g ms, W %.4g ms, hop %.3g ms%s\n",
            r->costs.f, r->costs.b, r->costs.w, r->hop_ms, measured ? " (measured)" : "");
    cli_print_split(out, r);
    fprintf(out,
            "\nmemory per rank, GiB:\n%-5s %8s %8s %9s %11s %8s %9s %7s %7s %6s %8s %7s %8s %8s\n",
            "rank", "params", "grads", "optimizer", "activations", "buffers", "workspace", "logits",
            "gathers", "frag", "context", "comm", "reserve", "total");
    for (int d = 0; d < r->p; d++) {
        char label[16];
        snprintf(label, sizeof label, "%d", d);
        memory_row(out, label, &r->memory[d]);
    }
    fprintf(out, "\nmax %.2f GiB on rank %d of %.2f GiB: %s\n", r->memory_max_bytes / GIB,
            r->memory_max_rank, r->capacity_bytes / GIB, r->fits ? "fits" : "does NOT fit");
}
