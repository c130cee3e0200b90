/* The RUNS.csv reader: RFC 4180 fields, a header naming the columns, one run a line, every
 * cell checked and every rejection naming its line and column. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "calibrate/calibrate_internal.h"

#define MAX_RUNS 100000
#define MAX_CELL 4096
#define MAX_FILE (16 << 20)

/* ---- fields ----------------------------------------------------------------------------- */

/* A cursor over the text: one line's fields at a time. */
typedef struct cursor {
    const char *text;
    size_t len, at;
    int line;
} cursor;

typedef struct field {
    size_t off; /* of its characters in the row's store while the line is read */
    char *v;    /* then: NUL-terminated, unquoted, trimmed */
    int column; /* 1-based character column of its start */
} field;

typedef struct row {
    field *f;
    int n, cap;
    char *store; /* the cells' characters */
    size_t used, size;
    int line;
} row;

static void row_free(row *r) {
    free(r->f);
    free(r->store);
}

/* Appends c to the cell being read (the store grows with the line). */
static int store_char(row *r, char c) {
    if (r->used + 1 >= r->size) {
        size_t size = r->size ? 2 * r->size : 256;
        char *grown = realloc(r->store, size);
        if (!grown)
            return -1;
        r->store = grown;
        r->size = size;
    }
    r->store[r->used++] = c;
    return 0;
}

static int new_field(row *r, int column) {
    if (vp__grow((void **)&r->f, &r->cap, r->n + 1, sizeof *r->f))
        return -1;
    r->f[r->n++] = (field){.off = r->used, .column = column};
    return 0;
}

/* Trims the cell that ends at r->used (spaces around an unquoted cell). */
static void trim_cell(row *r, size_t start) {
    while (r->used > start && isspace((unsigned char)r->store[r->used - 1]))
        r->used--;
}

/* Reads one cell at c (quoted or not) into r; stops before the ',' or end of line. */
static vp_status read_cell(cursor *c, row *r, const char *name, vp_error *err) {
    size_t start = r->used, line_start = c->at;
    while (c->at < c->len && (c->text[c->at] == ' ' || c->text[c->at] == '\t'))
        c->at++;
    bool quoted = c->at < c->len && c->text[c->at] == '"';
    c->at += quoted;
    for (; c->at < c->len; c->at++) {
        char ch = c->text[c->at];
        if (quoted && ch == '"') {
            if (c->at + 1 < c->len && c->text[c->at + 1] == '"') {
                c->at++;
            } else {
                quoted = false;
                c->at++;
                while (c->at < c->len && (c->text[c->at] == ' ' || c->text[c->at] == '\t'))
                    c->at++;
                if (c->at < c->len && c->text[c->at] != ',' && c->text[c->at] != '\n' &&
                    c->text[c->at] != '\r')
                    return vp__fail_at(err, VP_EPARSE, c->line, (int)(c->at - line_start) + 1,
                                       "%s:%d: text after a closing quote", name, c->line);
                break;
            }
        } else if (!quoted && (ch == ',' || ch == '\n' || ch == '\r')) {
            break;
        } else if (ch == '\0') {
            return vp__fail_at(err, VP_EPARSE, c->line, 1, "%s:%d: a NUL byte", name, c->line);
        }
        if (ch == '\n')
            c->line++;
        if (r->used - start >= MAX_CELL)
            return vp__fail_at(err, VP_ELIMIT, c->line, 1, "%s:%d: a cell longer than %d bytes",
                               name, c->line, MAX_CELL);
        if (store_char(r, ch))
            return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    if (quoted)
        return vp__fail_at(err, VP_EPARSE, r->line, 1, "%s:%d: a quote that is never closed", name,
                           r->line);
    trim_cell(r, start);
    return store_char(r, '\0') ? vp__fail(err, VP_ENOMEM, "out of memory") : VP_OK;
}

/* Reads the next line's fields into r (n 0 at the end of the text; comment and blank lines
 * are skipped). */
static vp_status read_row(cursor *c, row *r, const char *name, vp_error *err) {
    r->n = 0;
    r->used = 0;
    while (c->at < c->len) {
        size_t begin = c->at;
        const char *nl = memchr(c->text + begin, '\n', c->len - begin);
        size_t end = nl ? (size_t)(nl - c->text) : c->len;
        bool blank = true;
        for (size_t k = begin; k < end && blank; k++)
            blank = isspace((unsigned char)c->text[k]);
        if (blank || c->text[begin] == '#') {
            c->at = end + (nl != NULL);
            c->line++;
            continue;
        }
        r->line = c->line;
        for (;;) {
            if (new_field(r, (int)(c->at - begin) + 1))
                return vp__fail(err, VP_ENOMEM, "out of memory");
            vp_status rc = read_cell(c, r, name, err);
            if (rc != VP_OK)
                return rc;
            if (c->at < c->len && c->text[c->at] == ',') {
                c->at++;
                continue;
            }
            while (c->at < c->len && c->text[c->at] == '\r')
                c->at++;
            if (c->at < c->len && c->text[c->at] == '\n')
                c->at++;
            c->line++;
            break;
        }
        for (int k = 0; k < r->n; k++) /* the store no longer moves */
            r->f[k].v = r->store + r->f[k].off;
        return VP_OK;
    }
    return VP_OK;
}

/* ---- columns ---------------------------------------------------------------------------- */

enum {
    C_MODEL,
    C_GPU,
    C_TP,
    C_PP,
    C_VP,
    C_DP,
    C_CP,
    C_EP,
    C_MBS,
    C_GBS,
    C_SEQ,
    C_SCHEDULE,
    C_RECOMPUTE,
    C_FLASH,
    C_SP,
    C_ZERO,
    C_FP8,
    C_STEP,
    C_TOKENS,
    C_MEM,
    N_REQUIRED, /* the optional ones follow */
    C_ID = N_REQUIRED,
    C_SOURCE,
    C_CITE,
    C_NOTE,
    C_DP_OVERLAP,
    C_TP_OVERLAP,
    C_PP_OVERLAP,
    C_GRAD_BYTES,
    C_MEM_KIND,
    C_TUNED,
    C_EXPRESSIBLE,
    C_EP_OVERLAP,
    C_EP_DISPATCH,
    C_FP8_PARAMS,
    C_ATTN_KERNEL,
    C_FRAMEWORK,
    C_RECOMPUTE_MODULES,
    C_OPTIMIZER_DTYPE,
    C_CP_COMM,
    C_EP_ROUTING,
    C_EAGER,
    N_COLUMNS
};

static const char *const column_names[N_COLUMNS] = {"model",
                                                    "gpu",
                                                    "tp",
                                                    "pp",
                                                    "vp",
                                                    "dp",
                                                    "cp",
                                                    "ep",
                                                    "mbs",
                                                    "gbs",
                                                    "seq",
                                                    "schedule",
                                                    "recompute",
                                                    "flash",
                                                    "sp",
                                                    "zero",
                                                    "fp8",
                                                    "step_time_s",
                                                    "tokens_per_s_per_gpu",
                                                    "peak_mem_gib",
                                                    "id",
                                                    "source",
                                                    "cite",
                                                    "note",
                                                    "dp_overlap",
                                                    "tp_overlap",
                                                    "pp_overlap",
                                                    "grad_bytes",
                                                    "mem_kind",
                                                    "tuned",
                                                    "expressible",
                                                    "ep_overlap",
                                                    "ep_dispatch",
                                                    "fp8_params",
                                                    "attn_kernel",
                                                    "framework",
                                                    "recompute_modules",
                                                    "optimizer_dtype",
                                                    "cp_comm",
                                                    "ep_routing",
                                                    "eager"};
_Static_assert(sizeof column_names / sizeof column_names[0] == N_COLUMNS, "a name per column");

/* Where each column sits in a row (-1: absent). */
typedef struct layout {
    int at[N_COLUMNS];
    int width; /* fields of the header */
} layout;

static vp_status read_header(const row *h, const char *name, layout *lay, vp_run_set *set,
                             vp_error *err) {
    for (int k = 0; k < N_COLUMNS; k++)
        lay->at[k] = -1;
    lay->width = h->n;
    size_t used = 0;
    for (int i = 0; i < h->n; i++) {
        int k = 0;
        while (k < N_COLUMNS && strcmp(h->f[i].v, column_names[k]))
            k++;
        if (k == N_COLUMNS) {
            used += (size_t)snprintf(set->ignored + used,
                                     used < sizeof set->ignored ? sizeof set->ignored - used : 0,
                                     "%s%s", used ? "," : "", h->f[i].v);
            used = used < sizeof set->ignored ? used : sizeof set->ignored;
            continue;
        }
        if (lay->at[k] >= 0)
            return vp__fail_at(err, VP_EPARSE, h->line, h->f[i].column,
                               "%s:%d: column '%s' appears twice", name, h->line, h->f[i].v);
        lay->at[k] = i;
    }
    for (int k = 0; k < N_REQUIRED; k++)
        if (lay->at[k] < 0)
            return vp__fail_at(err, VP_EPARSE, h->line, 1,
                               "%s:%d: the header lacks column '%s' (required: model, gpu, tp, "
                               "pp, vp, dp, cp, ep, mbs, gbs, seq, schedule, recompute, flash, "
                               "sp, zero, fp8, step_time_s, tokens_per_s_per_gpu, peak_mem_gib)",
                               name, h->line, column_names[k]);
    return VP_OK;
}

/* ---- cells ------------------------------------------------------------------------------ */

/* The context of one row's cells, for messages. */
typedef struct cells {
    const row *r;
    const layout *lay;
    const char *name;
    vp_error *err;
} cells;

static const char *cell(const cells *c, int k) {
    int i = c->lay->at[k];
    return i >= 0 && i < c->r->n ? c->r->f[i].v : "";
}

static vp_status bad(const cells *c, int k, const char *what) {
    int i = c->lay->at[k];
    int column = i >= 0 && i < c->r->n ? c->r->f[i].column : 1;
    return vp__fail_at(c->err, VP_EPARSE, c->r->line, column, "%s:%d: column '%s': %s, got '%s'",
                       c->name, c->r->line, column_names[k], what, cell(c, k));
}

/* An integer in [lo, hi]; empty: fallback; "*": VP_RUN_ANY when any. */
static vp_status int_cell(const cells *c, int k, long lo, long hi, int fallback, bool any,
                          int *out) {
    const char *s = cell(c, k);
    if (!*s) {
        *out = fallback;
        return VP_OK;
    }
    if (any && !strcmp(s, "*")) {
        *out = VP_RUN_ANY;
        return VP_OK;
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!isdigit((unsigned char)*s) || *end || errno || v < lo || v > hi) {
        char what[96];
        snprintf(what, sizeof what, "expected an integer in [%ld, %ld]%s", lo, hi,
                 any ? " or *" : "");
        return bad(c, k, what);
    }
    *out = (int)v;
    return VP_OK;
}

/* A number > 0 (or, with zero_ok, >= 0); empty: 0. */
static vp_status real_cell(const cells *c, int k, double hi, double *out) {
    const char *s = cell(c, k);
    *out = 0;
    if (!*s)
        return VP_OK;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno || !(v > 0) || !(v <= hi) || !(isdigit((unsigned char)*s) || *s == '.')) {
        char what[64];
        snprintf(what, sizeof what, "expected a number in (0, %g]", hi);
        return bad(c, k, what);
    }
    *out = v;
    return VP_OK;
}

static vp_status flag_cell(const cells *c, int k, bool *out) {
    int v;
    vp_status rc = int_cell(c, k, 0, 1, 0, false, &v);
    if (rc == VP_OK)
        *out = v == 1;
    return rc == VP_OK ? VP_OK : bad(c, k, "expected 0 or 1");
}

static vp_status text_cell(const cells *c, int k, char *out, size_t size) {
    const char *s = cell(c, k);
    if (strlen(s) >= size) {
        char what[64];
        snprintf(what, sizeof what, "longer than %zu characters", size - 1);
        return bad(c, k, what);
    }
    snprintf(out, size, "%s", s);
    return VP_OK;
}

static vp_status recompute_cell(const cells *c, vp_run *run) {
    const char *s = cell(c, C_RECOMPUTE);
    if (!*s || !strcmp(s, "none"))
        run->recompute = VP_RECOMPUTE_NONE;
    else if (!strcmp(s, "*"))
        run->recompute = VP_RUN_ANY;
    else if (vp_recompute_parse(s, (vp_recompute *)&run->recompute, NULL) != VP_OK)
        return bad(c, C_RECOMPUTE, "expected none, selective, full or *");
    return VP_OK;
}

static vp_status schedule_cell(const cells *c, vp_run *run) {
    vp_status rc = text_cell(c, C_SCHEDULE, run->schedule, sizeof run->schedule);
    if (rc == VP_OK && run->schedule[0] && strcmp(run->schedule, "*") &&
        !vp_family_find(run->schedule))
        return bad(c, C_SCHEDULE, "expected a family (vpipe list) or *");
    return rc;
}

/* Cell k naming one of names[0..n) into *out (empty: names[0]); else `expected`. */
static vp_status choice_cell(const cells *c, int k, const char *const *names, int n,
                             const char *expected, int *out) {
    const char *s = cell(c, k);
    *out = 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            *out = i;
    return !*s || !strcmp(s, names[*out]) ? VP_OK : bad(c, k, expected);
}

static vp_status mem_kind_cell(const cells *c, vp_run *run) {
    static const char *const kinds[] = {"process", "reserved", "allocated"};
    int kind;
    vp_status rc =
        choice_cell(c, C_MEM_KIND, kinds, 3, "expected process, reserved or allocated", &kind);
    run->mem_kind = (vp_peak_kind)kind;
    return rc;
}

/* The FP8 recipe: a vp_fp8 name, 0 (off) or 1 (per-tensor scaling, what FP8 means in the
 * NVIDIA and torchtitan tables: Transformer Engine's and torchao's default). */
static vp_status fp8_cell(const cells *c, vp_run *run) {
    const char *s = cell(c, C_FP8);
    run->fp8 = !strcmp(s, "1") ? VP_FP8_TENSORWISE : VP_FP8_OFF;
    for (int f = VP_FP8_OFF; f <= VP_FP8_DELAYED; f++)
        if (!strcmp(s, vp_fp8_name((vp_fp8)f)))
            run->fp8 = (vp_fp8)f;
    bool known = !*s || !strcmp(s, "0") || run->fp8 != VP_FP8_OFF || !strcmp(s, "off");
    return known ? VP_OK
                 : bad(c, C_FP8, "expected 0, 1, off, tensorwise, blockwise, mxfp8 or delayed");
}

/* How the experts' all-to-alls run: ep_dispatch, empty or alltoall, or deepep
 * (vp_ep_dispatch); ep_routing, empty or random, or round-robin (vp_ep_routing). */
static vp_status expert_cells(const cells *c, vp_run *run) {
    const char *dispatches[] = {vp_ep_dispatch_name(VP_EP_ALLTOALL),
                                vp_ep_dispatch_name(VP_EP_DEEPEP)};
    const char *routings[] = {vp_ep_routing_name(VP_ROUTING_RANDOM),
                              vp_ep_routing_name(VP_ROUTING_ROUND_ROBIN)};
    int d = 0, r = 0;
    vp_status rc = choice_cell(c, C_EP_DISPATCH, dispatches, 2, "expected alltoall or deepep", &d);
    if (rc == VP_OK)
        rc = choice_cell(c, C_EP_ROUTING, routings, 2, "expected random or round-robin", &r);
    run->ep_dispatch = (vp_ep_dispatch)d;
    run->ep_routing = (vp_ep_routing)r;
    return rc;
}

/* attn_kernel: empty or fused, or fa2 (vp_attn_kernel); with flash only. */
static vp_status attn_kernel_cell(const cells *c, vp_run *run) {
    const char *names[] = {vp_attn_kernel_name(VP_ATTN_FUSED), vp_attn_kernel_name(VP_ATTN_FA2)};
    int k;
    vp_status rc = choice_cell(c, C_ATTN_KERNEL, names, 2, "expected fused or fa2", &k);
    run->attn_kernel = (vp_attn_kernel)k;
    if (rc == VP_OK && run->attn_kernel == VP_ATTN_FA2 && !run->flash)
        rc = bad(c, C_ATTN_KERNEL, "FlashAttention's kernels need flash 1");
    return rc;
}

/* framework: empty or megatron, or torchtitan (vp_framework). */
static vp_status framework_cell(const cells *c, vp_run *run) {
    const char *names[] = {vp_framework_name(VP_FRAMEWORK_MEGATRON),
                           vp_framework_name(VP_FRAMEWORK_TORCHTITAN)};
    int f;
    vp_status rc = choice_cell(c, C_FRAMEWORK, names, 2, "expected megatron or torchtitan", &f);
    run->framework = (vp_framework)f;
    return rc;
}

/* recompute_modules: empty, or Megatron-LM's modules (vp_recompute_modules_parse: "layernorm
 * moe_act"), with recompute selective. */
static vp_status modules_cell(const cells *c, vp_run *run) {
    const char *s = cell(c, C_RECOMPUTE_MODULES);
    run->recompute_modules = 0;
    if (!*s)
        return VP_OK;
    if (vp_recompute_modules_parse(s, &run->recompute_modules, NULL) != VP_OK)
        return bad(c, C_RECOMPUTE_MODULES,
                   "expected core_attn, layernorm, mla_up_proj, mlp, moe_act or shared_experts");
    if (run->recompute != VP_RECOMPUTE_SELECTIVE)
        return bad(c, C_RECOMPUTE_MODULES, "recompute modules need recompute selective");
    return VP_OK;
}

/* optimizer_dtype: empty or a vp_optimizer_dtype's name (vp_run.optimizer). */
static vp_status optimizer_cell(const cells *c, vp_run *run) {
    const char *names[] = {"fp32", "bf16", "bf16-moments"};
    int k;
    vp_status rc =
        choice_cell(c, C_OPTIMIZER_DTYPE, names, 3, "expected fp32, bf16 or bf16-moments", &k);
    run->optimizer = (vp_optimizer_dtype)k;
    return rc;
}

/* cp_comm: empty or p2p, or allgather (vp_cp_comm); allgather with cp > 1 only. */
static vp_status cp_comm_cell(const cells *c, vp_run *run) {
    const char *names[] = {vp_cp_comm_name(VP_CP_P2P), vp_cp_comm_name(VP_CP_ALLGATHER)};
    int k;
    vp_status rc = choice_cell(c, C_CP_COMM, names, 2, "expected p2p or allgather", &k);
    run->cp_comm = (vp_cp_comm)k;
    if (rc == VP_OK && run->cp_comm == VP_CP_ALLGATHER && run->cp <= 1)
        rc = bad(c, C_CP_COMM, "an all-gather of keys and values needs cp > 1");
    return rc;
}

static vp_status dp_overlap_cell(const cells *c, vp_run *run) {
    const char *s = cell(c, C_DP_OVERLAP);
    run->dp_overlap = VP_OVERLAP_MODELLED;
    if (!*s)
        return VP_OK;
    char *end = NULL;
    double v = strtod(s, &end);
    if (*end || !(v >= 0 && v <= 1) || !(isdigit((unsigned char)*s) || *s == '.'))
        return bad(c, C_DP_OVERLAP, "expected a share in [0, 1] (empty: the frameworks' overlap)");
    run->dp_overlap = v;
    return VP_OK;
}

/* The text cells and labels. */
static vp_status read_texts(const cells *c, vp_run *run) {
    const struct {
        int k;
        char *out;
        size_t size;
    } texts[] = {{C_MODEL, run->model, sizeof run->model},
                 {C_GPU, run->gpu, sizeof run->gpu},
                 {C_ID, run->id, sizeof run->id},
                 {C_SOURCE, run->source, sizeof run->source},
                 {C_CITE, run->cite, sizeof run->cite},
                 {C_NOTE, run->note, sizeof run->note},
                 {C_EXPRESSIBLE, run->why_not, sizeof run->why_not}};
    vp_status rc = VP_OK;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0] && rc == VP_OK; i++)
        rc = text_cell(c, texts[i].k, texts[i].out, texts[i].size);
    if (rc == VP_OK && !run->model[0])
        rc = bad(c, C_MODEL, "expected a preset or a config.json path");
    return rc;
}

/* Degrees and sizes. */
static vp_status read_sizes(const cells *c, vp_run *run) {
    const long big = 1 << 20;
    struct {
        int k;
        long hi;
        bool any;
        int *out;
    } ints[] = {{C_TP, 4096, false, &run->tp},   {C_PP, 4096, false, &run->pp},
                {C_VP, 1024, true, &run->vp},    {C_DP, big, false, &run->dp},
                {C_CP, 4096, false, &run->cp},   {C_EP, 4096, false, &run->ep},
                {C_MBS, 65536, true, &run->mbs}, {C_SEQ, 1 << 30, false, &run->seq}};
    vp_status rc = VP_OK;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0] && rc == VP_OK; i++)
        rc = int_cell(c, ints[i].k, 1, ints[i].hi, ints[i].k == C_SEQ ? 0 : 1, ints[i].any,
                      ints[i].out);
    if (rc == VP_OK)
        rc = int_cell(c, C_GBS, 1, 1 << 24, 0, false, &run->gbs);
    if (rc == VP_OK)
        rc = int_cell(c, C_ZERO, 0, 3, 0, false, &run->zero);
    if (rc == VP_OK)
        rc = int_cell(c, C_GRAD_BYTES, 1, 8, 0, false, &run->grad_bytes);
    if (rc == VP_OK && run->grad_bytes && run->grad_bytes != 2 && run->grad_bytes != 4)
        rc = bad(c, C_GRAD_BYTES, "expected 2 or 4");
    return rc;
}

/* Flags, recomputation, schedule, overlaps and the measured figures. */
static vp_status read_settings(const cells *c, vp_run *run) {
    vp_status rc = recompute_cell(c, run);
    if (rc == VP_OK)
        rc = schedule_cell(c, run);
    bool *flags[] = {&run->flash, &run->sp,         &run->tp_overlap, &run->pp_overlap,
                     &run->tuned, &run->ep_overlap, &run->fp8_params, &run->eager};
    int keys[] = {C_FLASH, C_SP,         C_TP_OVERLAP, C_PP_OVERLAP,
                  C_TUNED, C_EP_OVERLAP, C_FP8_PARAMS, C_EAGER};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && rc == VP_OK; i++)
        rc = flag_cell(c, keys[i], flags[i]);
    if (rc == VP_OK)
        rc = fp8_cell(c, run);
    if (rc == VP_OK && run->fp8_params && run->fp8 == VP_FP8_OFF)
        rc = bad(c, C_FP8_PARAMS, "FP8 weights need an FP8 recipe in fp8");
    if (rc == VP_OK)
        rc = dp_overlap_cell(c, run);
    if (rc == VP_OK)
        rc = mem_kind_cell(c, run);
    if (rc == VP_OK)
        rc = expert_cells(c, run);
    if (rc == VP_OK)
        rc = attn_kernel_cell(c, run);
    if (rc == VP_OK)
        rc = framework_cell(c, run);
    if (rc == VP_OK && run->eager && run->framework != VP_FRAMEWORK_TORCHTITAN)
        rc = bad(c, C_EAGER, "eager kernels are torchtitan's: framework torchtitan");
    if (rc == VP_OK)
        rc = modules_cell(c, run);
    if (rc == VP_OK)
        rc = optimizer_cell(c, run);
    if (rc == VP_OK)
        rc = cp_comm_cell(c, run);
    if (rc == VP_OK)
        rc = real_cell(c, C_STEP, 1e9, &run->step_time_s);
    if (rc == VP_OK)
        rc = real_cell(c, C_TOKENS, 1e12, &run->tokens_per_s_per_gpu);
    if (rc == VP_OK)
        rc = real_cell(c, C_MEM, 1e6, &run->peak_mem_gib);
    return rc;
}

/* The measured figures must be there and agree. */
static vp_status check_measured(const cells *c, vp_run *run) {
    if (!run->step_time_s && !run->tokens_per_s_per_gpu)
        return bad(c, C_STEP, "every run needs step_time_s or tokens_per_s_per_gpu");
    if (!run->step_time_s || !run->tokens_per_s_per_gpu || run->mbs == VP_RUN_ANY)
        return VP_OK;
    double gpus = (double)run->tp * run->pp * run->dp * run->cp;
    double tokens = (double)run->gbs * (run->seq ? run->seq : 0) / run->step_time_s / gpus;
    if (run->seq && fabs(tokens / run->tokens_per_s_per_gpu - 1) > 0.02) {
        char what[160];
        snprintf(what, sizeof what,
                 "disagrees with step_time_s: gbs x seq / (step x GPUs) = %.6g tokens/s per "
                 "GPU, more than 2%% apart",
                 tokens);
        return bad(c, C_TOKENS, what);
    }
    return VP_OK;
}

static vp_status read_run(const cells *c, vp_run *run) {
    *run = (vp_run){.line = c->r->line};
    if (c->r->n > c->lay->width)
        return vp__fail_at(c->err, VP_EPARSE, c->r->line, c->r->f[c->lay->width].column,
                           "%s:%d: %d cells, the header names %d", c->name, c->r->line, c->r->n,
                           c->lay->width);
    vp_status rc = read_texts(c, run);
    if (rc == VP_OK)
        rc = read_sizes(c, run);
    if (rc == VP_OK)
        rc = read_settings(c, run);
    if (rc != VP_OK)
        return rc;
    if (!run->gbs)
        run->gbs = run->dp * (run->mbs == VP_RUN_ANY ? 1 : run->mbs);
    return run->why_not[0] ? VP_OK : check_measured(c, run);
}

/* ---- the file --------------------------------------------------------------------------- */

static void set_base(vp_run_set *set, const char *name) {
    snprintf(set->name, sizeof set->name, "%s", name ? name : "RUNS.csv");
    const char *slash = name ? strrchr(name, '/') : NULL;
    if (slash && (size_t)(slash - name) < sizeof set->base_dir)
        snprintf(set->base_dir, sizeof set->base_dir, "%.*s", (int)(slash - name), name);
}

static vp_status read_runs(cursor *cur, row *r, const layout *lay, vp_run_set *set, vp_error *err) {
    int cap = 0;
    for (;;) {
        vp_status rc = read_row(cur, r, set->name, err);
        if (rc != VP_OK || r->n == 0)
            return rc;
        if (set->n == MAX_RUNS)
            return vp__fail_at(err, VP_ELIMIT, r->line, 1, "%s:%d: more than %d runs", set->name,
                               r->line, MAX_RUNS);
        if (vp__grow((void **)&set->runs, &cap, set->n + 1, sizeof *set->runs))
            return vp__fail(err, VP_ENOMEM, "out of memory");
        cells c = {r, lay, set->name, err};
        rc = read_run(&c, &set->runs[set->n]);
        if (rc != VP_OK)
            return rc;
        set->n++;
    }
}

vp_status vp_calibrate_read(const char *text, size_t len, const char *name, vp_run_set **out,
                            vp_error *err) {
    *out = NULL;
    vp_run_set *set = vp__calloc(1, sizeof *set);
    if (!set)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    set_base(set, name);
    cursor cur = {text, len, 0, 1};
    row r = {0};
    layout lay;
    vp_status rc = read_row(&cur, &r, set->name, err);
    if (rc == VP_OK && r.n == 0)
        rc = vp__fail_at(err, VP_EPARSE, 1, 1, "%s: no header line (and no runs)", set->name);
    if (rc == VP_OK)
        rc = read_header(&r, set->name, &lay, set, err);
    if (rc == VP_OK)
        rc = read_runs(&cur, &r, &lay, set, err);
    if (rc == VP_OK && set->n == 0)
        rc = vp__fail_at(err, VP_EPARSE, cur.line, 1, "%s: a header and no runs", set->name);
    row_free(&r);
    if (rc != VP_OK) {
        vp_calibrate_free(set);
        return rc;
    }
    *out = set;
    return VP_OK;
}

vp_status vp_calibrate_read_file(const char *path, vp_run_set **out, vp_error *err) {
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    vp_status rc = vp_read_file(path, MAX_FILE, &text, &len, err);
    if (rc == VP_OK)
        rc = vp_calibrate_read(text, len, path, out, err);
    free(text);
    return rc;
}

/* A relative file path of a run (model or gpu) made relative to the caller: base/path. */
static vp_status rebase(char *path, size_t size, const char *base, vp_error *err) {
    size_t n = strlen(path);
    bool file = strchr(path, '/') || (n >= 5 && !strcmp(path + n - 5, ".json"));
    if (!file || path[0] == '/' || !base[0])
        return VP_OK;
    char joined[1024];
    int len = snprintf(joined, sizeof joined, "%s/%s", base, path);
    if (len < 0 || (size_t)len >= size)
        return vp__fail(err, VP_ELIMIT, "path %s/%s is too long", base, path);
    memcpy(path, joined, (size_t)len + 1);
    return VP_OK;
}

/* Appends from's runs to into, their paths rebased on from's folder. */
static vp_status append_runs(vp_run_set *into, const vp_run_set *from, vp_error *err) {
    if (into->n + from->n > MAX_RUNS)
        return vp__fail(err, VP_ELIMIT, "more than %d runs in all", MAX_RUNS);
    vp_run *grown = realloc(into->runs, (size_t)(into->n + from->n) * sizeof *grown);
    if (!grown)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    into->runs = grown;
    for (int i = 0; i < from->n; i++) {
        vp_run *r = &into->runs[into->n++];
        *r = from->runs[i];
        vp_status rc = rebase(r->model, sizeof r->model, from->base_dir, err);
        if (rc == VP_OK && r->gpu[0])
            rc = rebase(r->gpu, sizeof r->gpu, from->base_dir, err);
        if (rc != VP_OK)
            return rc;
    }
    return VP_OK;
}

vp_status vp_calibrate_read_files(const char *const *paths, int n, vp_run_set **out,
                                  vp_error *err) {
    *out = NULL;
    vp_run_set *all = vp__calloc(1, sizeof *all);
    if (!all)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    snprintf(all->name, sizeof all->name, "%s", n == 1 ? paths[0] : "the runs");
    vp_status rc = VP_OK;
    for (int k = 0; k < n && rc == VP_OK; k++) {
        vp_run_set *one = NULL;
        rc = vp_calibrate_read_file(paths[k], &one, err);
        if (rc == VP_OK)
            rc = append_runs(all, one, err);
        vp_calibrate_free(one);
    }
    if (rc != VP_OK) {
        vp_calibrate_free(all);
        return rc;
    }
    *out = all;
    return VP_OK;
}

void vp_calibrate_free(vp_run_set *set) {
    if (!set)
        return;
    free(set->runs);
    free(set);
}
