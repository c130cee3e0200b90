/* PyTorch pipelining schedule CSV: export (compute_only, compute_comms) and import. */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "vpipe/io.h"

/* ---------------------------------------------------------------- action types */

typedef enum {
    T_F,
    T_I,
    T_W,
    T_B,
    T_SEND_F,
    T_RECV_F,
    T_SEND_B,
    T_RECV_B,
    T_REDUCE_GRAD,
    T_UNSHARD,
    T_RESHARD,
    T_COUNT
} act_type;

/* Names as PyTorch spells them, indexed by act_type. */
static const char *const type_name[T_COUNT] = {"F",           "I",       "W",      "B",
                                               "SEND_F",      "RECV_F",  "SEND_B", "RECV_B",
                                               "REDUCE_GRAD", "UNSHARD", "RESHARD"};

static int is_compute(int t) {
    return t <= T_B;
}

static int has_mb(int t) {
    return t <= T_RECV_B;
}

/* ---------------------------------------------------------------- writer */

/* Appends one cell, with the separating comma when it is not the row's first. */
static void cell_out(vp__buf *b, int *first, int stage, int type, int mb) {
    vp__buf_printf(b, "%s%d%s", *first ? "" : ",", stage, type_name[type]);
    if (mb >= 0)
        vp__buf_printf(b, "%d", mb);
    *first = 0;
}

/* PyTorch type of a vpipe backward kind (B -> I, BW -> B). */
static int torch_backward(int kind) {
    return kind == VP_OP_B ? T_I : kind == VP_OP_BW ? T_B : T_W;
}

/* The passes an op is made of: 1, or 2 for F&B (forward half first). */
static int op_passes(const vp_op *op, int kind[2], int stage[2], int mb[2]) {
    if (op->kind != VP_OP_FB) {
        kind[0] = op->kind, stage[0] = op->stage, mb[0] = op->mb;
        return 1;
    }
    kind[0] = VP_OP_F, stage[0] = op->stage, mb[0] = op->mb;
    kind[1] = op->bkind, stage[1] = op->stage2, mb[1] = op->mb2;
    return 2;
}

/* Communication of pass (kind, s, j) on device d: the RECV it waits for (recv = 1) or the
 * SEND it makes (recv = 0), or -1 when the neighbour stage is on the same device or there
 * is none. */
static int comm_of(const vp_schedule *s, int d, int kind, int stage, int recv) {
    int fwd = kind == VP_OP_F, bwd = kind == VP_OP_B || kind == VP_OP_BW;
    int peer = (fwd == recv) ? stage - 1 : stage + 1; /* F receives from s-1, B from s+1 */
    if ((!fwd && !bwd) || peer < 0 || peer >= s->S || s->stage_device[peer] == d)
        return -1;
    if (fwd)
        return recv ? T_RECV_F : T_SEND_F;
    return recv ? T_RECV_B : T_SEND_B;
}

static void write_row(vp__buf *b, const vp_schedule *s, int d, int comms, int *done) {
    int first = 1;
    for (int i = 0; i < s->dev[d].n; i++) {
        const vp_op *op = &s->dev[d].ops[i];
        int kind[2], stage[2], mb[2], n = op_passes(op, kind, stage, mb);
        for (int h = 0; comms && h < n; h++) {
            int t = comm_of(s, d, kind[h], stage[h], 1);
            if (t >= 0)
                cell_out(b, &first, stage[h], t, mb[h]);
        }
        if (op->kind == VP_OP_FB)
            vp__buf_printf(b, "%s(%dF%d;%d%s%d)OVERLAP_F_B", first ? "" : ",", op->stage, op->mb,
                           op->stage2, type_name[torch_backward(op->bkind)], op->mb2);
        else
            cell_out(b, &first, op->stage, op->kind == VP_OP_F ? T_F : torch_backward(op->kind),
                     op->mb);
        first = 0;
        for (int h = 0; comms && h < n; h++) {
            int t = comm_of(s, d, kind[h], stage[h], 0);
            if (t >= 0)
                cell_out(b, &first, stage[h], t, mb[h]);
        }
        /* PyTorch reduces a stage's gradients after its m-th W or full backward */
        for (int h = 0; comms && h < n; h++)
            if ((kind[h] == VP_OP_W || kind[h] == VP_OP_BW) && ++done[stage[h]] == s->m)
                cell_out(b, &first, stage[h], T_REDUCE_GRAD, -1);
    }
    vp__buf_printf(b, "\n");
}

/* Why s cannot be written as a PyTorch CSV, or NULL. */
static const char *unexportable(const vp_schedule *s) {
    if (s->placement == VP_PLACE_BIDIR)
        return "the bidirectional placement (two model copies, as in DualPipe) has no PyTorch "
               "CSV form: PyTorch runs every microbatch through every stage (export dualpipev "
               "instead)";
    if (s->route_len != s->S)
        return "microbatches that pass through only some stages have no PyTorch CSV form";
    if (s->recompute != VP_RECOMPUTE_NONE)
        return "PyTorch's schedule actions (F, I, W, B, OVERLAP_F_B, SEND/RECV, REDUCE_GRAD, "
               "UNSHARD/RESHARD) have no recomputation: torchtitan recomputes inside the "
               "backward by activation checkpointing. Export the schedule without "
               "recomputation and set torchtitan's activation_checkpoint.mode to \"full\" or "
               "\"selective\"";
    if (s->vocab_parallel)
        return "PyTorch's schedule actions have no vocabulary passes (EF, EB, S, T): its "
               "pipelining keeps the embedding on the first stage and the output layer on the "
               "last. Export the schedule without vocabulary parallelism (build it without "
               "--vocab-parallel): the same transformer passes in the same order, the "
               "vocabulary unsplit";
    if (vp_schedule_offloads(s))
        return "PyTorch's schedule actions have no activation offload or reload (O, L): "
               "export the schedule without offload (its compute order is the same without O "
               "and L; vp_schedule_offload_shares with policy none) and offload inside the "
               "model, e.g. Megatron-LM's fine-grained activation offloading";
    for (int j = 0; j < s->m; j++)
        if (s->mb_first[j] != 0)
            return "microbatches that start elsewhere than stage 0 have no PyTorch CSV form";
    return NULL;
}

vp_status vp_torch_csv_write(const vp_schedule *s, vp_torch_csv_format format, char **text,
                             vp_error *err) {
    *text = NULL;
    if (format != VP_TORCH_CSV_COMPUTE_ONLY && format != VP_TORCH_CSV_COMPUTE_COMMS)
        return vp__fail(err, VP_EINVAL, "torch csv: choose compute_only or compute_comms");
    const char *why = unexportable(s);
    if (why)
        return vp__fail(err, VP_EUNSUPPORTED, "torch csv: %s", why);
    int *done = vp__calloc((size_t)s->S, sizeof *done);
    vp__buf b = {.failed = !done};
    for (int d = 0; d < s->p && !b.failed; d++)
        write_row(&b, s, d, format == VP_TORCH_CSV_COMPUTE_COMMS, done);
    free(done);
    *text = vp__buf_take(&b);
    return *text ? VP_OK : vp__fail(err, VP_ENOMEM, "torch csv: out of memory");
}

const char *vp_torch_schedule_name(const vp_schedule *s) {
    switch (s->placement) {
    case VP_PLACE_SINGLE:
        return "PipelineScheduleSingle";
    case VP_PLACE_LOOP: /* one chunk per device is the single placement */
        return s->S == s->p ? "PipelineScheduleSingle" : "PipelineScheduleMulti";
    case VP_PLACE_V:
        for (int d = 0; d < s->p; d++)
            for (int i = 0; i < s->dev[d].n; i++)
                if (s->dev[d].ops[i].kind == VP_OP_FB)
                    return "DualPipeV";
        return "ZBVZeroBubble";
    default:
        return NULL;
    }
}

int vp_torch_csv_notes(const vp_schedule *s, char *buf, size_t size) {
    vp__buf b = {0};
    int warnings = 0;
    const char *why = unexportable(s);
    const char *name = vp_torch_schedule_name(s);
    if (why) {
        vp__buf_printf(&b, "warning: cannot export: %s\n", why);
        warnings++;
    } else if (name) {
        vp__buf_printf(&b, "torchtitan: pipeline_parallel_schedule = \"%s\"", name);
        if (s->placement == VP_PLACE_V)
            vp__buf_printf(&b,
                           " (or \"%s\"; both give the V placement: rank r holds stages r and "
                           "%d-r)\n",
                           strcmp(name, "DualPipeV") ? "DualPipeV" : "ZBVZeroBubble", 2 * s->p - 1);
        else if (s->S > s->p)
            vp__buf_printf(&b,
                           " (or \"Interleaved1F1B\"; loop placement: rank r holds stages r, "
                           "r+%d, ...; %d stages per rank%s)\n",
                           s->p, s->S / s->p,
                           s->S == 2 * s->p ? ""
                                            : ": set pipeline_parallel_layers_per_stage to match");
        else
            vp__buf_printf(&b, " (one stage per rank)\n");
        vp__buf_printf(&b,
                       "torchtitan: pipeline_parallel_schedule_csv = <this file>, "
                       "num_pp_microbatches = %d\n",
                       s->m);
    } else {
        vp__buf_printf(&b, "warning: no torchtitan schedule name splits the model with this "
                           "placement; PyTorch's _PipelineScheduleRuntime infers it from the file, "
                           "torchtitan does not\n");
        warnings++;
    }
    long input_only = 0;
    for (int d = 0; d < s->p; d++)
        for (int i = 0; i < s->dev[d].n; i++)
            input_only += s->dev[d].ops[i].kind == VP_OP_FB && s->dev[d].ops[i].bkind == VP_OP_B;
    if (!why && input_only) {
        vp__buf_printf(&b,
                       "warning: %ld overlapped F&B ops have an input-only backward, written "
                       "(sFj;sIj)OVERLAP_F_B; PyTorch's own schedules overlap only full "
                       "backwards (B), so this pair is untested upstream\n",
                       input_only);
        warnings++;
    }
    char *text = vp__buf_take(&b);
    if (size)
        snprintf(buf, size, "%s", text ? text : "");
    free(text);
    return warnings;
}

/* ---------------------------------------------------------------- reader: cells */

typedef struct act {
    int8_t type;
    int32_t stage, mb; /* mb -1 when the type has none */
} act;

typedef struct cellrec {
    int row, line, col; /* rank and the 1-based position of the cell's first character */
    int n;              /* 0 blank, 1 action, 2 overlapped pair */
    act a[2];
} cellrec;

typedef struct lexer {
    const char *end, *p, *line_start;
    int line;
    vp_error *err;
} lexer;

static int col_at(const lexer *lx, const char *p) {
    return (int)(p - lx->line_start) + 1;
}

static int at_cell_end(const lexer *lx, const char *p) {
    return p >= lx->end || *p == ',' || *p == '\n';
}

static const char *skip_blank(const lexer *lx, const char *p) {
    while (p < lx->end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    return p;
}

/* Copies up to 16 printable characters of the cell text from p into buf. */
static const char *snippet(const lexer *lx, const char *p, char *buf, int size) {
    int n = 0;
    while (p < lx->end && !at_cell_end(lx, p) && n < size - 4 && n < 16) {
        unsigned char c = (unsigned char)*p++;
        buf[n++] = (char)(isprint(c) ? c : '?');
    }
    if (p < lx->end && !at_cell_end(lx, p))
        buf[n++] = '.', buf[n++] = '.', buf[n++] = '.';
    buf[n] = '\0';
    return buf;
}

static vp_status parse_fail(const lexer *lx, const char *p, const char *fmt, ...) VP_PRINTF(3, 4);
static vp_status parse_fail(const lexer *lx, const char *p, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vp__fail_at(lx->err, VP_EPARSE, lx->line, col_at(lx, p), "torch csv: %s", msg);
}

/* Reads a non-negative index at *pp (what names it in messages). */
static vp_status parse_index(const lexer *lx, const char **pp, const char *what, int32_t *out) {
    const char *p = *pp;
    char tmp[40];
    if (p + 1 < lx->end && *p == '-' && isdigit((unsigned char)p[1]))
        return parse_fail(lx, p, "negative %s in '%s'", what, snippet(lx, p, tmp, sizeof tmp));
    if (p >= lx->end || !isdigit((unsigned char)*p))
        return parse_fail(lx, p, "expected a %s number at '%s'", what,
                          snippet(lx, p, tmp, sizeof tmp));
    long v = 0;
    const char *start = p;
    while (p < lx->end && isdigit((unsigned char)*p)) {
        if (v < VP_TORCH_CSV_MAX_INDEX)
            v = v * 10 + (*p - '0');
        p++;
    }
    if (v >= VP_TORCH_CSV_MAX_INDEX)
        return parse_fail(lx, start, "%s %.*s is out of range (at most %d)", what,
                          (int)(p - start) > 12 ? 12 : (int)(p - start), start,
                          VP_TORCH_CSV_MAX_INDEX - 1);
    *out = (int32_t)v;
    *pp = p;
    return VP_OK;
}

/* One action `<stage><TYPE>[<microbatch>]` at *pp. */
static vp_status parse_action(const lexer *lx, const char **pp, act *a) {
    const char *p = *pp;
    vp_status st = parse_index(lx, &p, "stage", &a->stage);
    if (st)
        return st;
    int t = 0;
    for (; t < T_COUNT; t++) {
        size_t n = strlen(type_name[t]);
        if ((size_t)(lx->end - p) >= n && !memcmp(p, type_name[t], n))
            break; /* no type name is a prefix of another */
    }
    char tmp[40];
    if (t == T_COUNT)
        return parse_fail(lx, p,
                          "unknown action type at '%s' (expected F, I, W, B, SEND_F, "
                          "RECV_F, SEND_B, RECV_B, REDUCE_GRAD, UNSHARD or RESHARD)",
                          snippet(lx, p, tmp, sizeof tmp));
    p += strlen(type_name[t]);
    a->type = (int8_t)t;
    a->mb = -1;
    if (has_mb(t)) {
        if (t == T_B && p < lx->end && *p == 'W')
            return parse_fail(lx, p - 1,
                              "'BW' is not a PyTorch action: a full backward is "
                              "written B (e.g. %dB0)",
                              a->stage);
        st = parse_index(lx, &p, "microbatch", &a->mb);
        if (st)
            return st;
    }
    *pp = p;
    return VP_OK;
}

/* One cell starting at lx->p; leaves lx->p at the ',' / newline / end after it. */
static vp_status parse_cell(lexer *lx, cellrec *c) {
    const char *p = skip_blank(lx, lx->p);
    c->line = lx->line;
    c->col = col_at(lx, p);
    c->n = 0;
    vp_status st = VP_OK;
    char tmp[40];
    if (at_cell_end(lx, p)) {
        lx->p = p;
        return VP_OK;
    }
    if (*p == '(') {
        const char *open = p;
        p = skip_blank(lx, p + 1);
        if ((st = parse_action(lx, &p, &c->a[0])))
            return st;
        p = skip_blank(lx, p);
        if (p >= lx->end || *p != ';')
            return parse_fail(lx, p, "expected ';' between the two actions of an overlapped pair");
        p = skip_blank(lx, p + 1);
        if ((st = parse_action(lx, &p, &c->a[1])))
            return st;
        p = skip_blank(lx, p);
        static const char tail[] = ")OVERLAP_F_B";
        if ((size_t)(lx->end - p) < sizeof tail - 1 || memcmp(p, tail, sizeof tail - 1))
            return parse_fail(lx, p, "expected ')OVERLAP_F_B' to close the pair at '%s'",
                              snippet(lx, p, tmp, sizeof tmp));
        p += sizeof tail - 1;
        if (c->a[0].type != T_F || (c->a[1].type != T_I && c->a[1].type != T_B))
            return parse_fail(lx, open,
                              "an overlapped pair must be a forward then a backward, "
                              "(sFj;sBj)OVERLAP_F_B or (sFj;sIj)OVERLAP_F_B");
        c->n = 2;
    } else {
        if ((st = parse_action(lx, &p, &c->a[0])))
            return st;
        c->n = 1;
    }
    p = skip_blank(lx, p);
    if (!at_cell_end(lx, p))
        return parse_fail(lx, p,
                          "stray text '%s' after the action (PyTorch would silently "
                          "drop it)",
                          snippet(lx, p, tmp, sizeof tmp));
    lx->p = p;
    return VP_OK;
}

/* The cells of a file: its actions only (an empty cell is an idle slot, kept as the
 * position of the first one), so that a file of empty cells takes no memory. */
typedef struct parsed {
    cellrec *cells;
    int n, cap;
    int rows;      /* ranks: lines up to the last one holding an action */
    cellrec blank; /* the first empty cell (blank.n = -1: none) */
} parsed;

/* Parses the cells of the line at lx->p (up to its newline or the end) into ps as row
 * `row`; *actions receives whether it holds one. */
static vp_status parse_line(lexer *lx, parsed *ps, int row, bool *actions) {
    *actions = false;
    for (;;) {
        cellrec c = {.row = row};
        vp_status st = parse_cell(lx, &c);
        if (st)
            return st;
        if (c.n == 0 && ps->blank.n < 0)
            ps->blank = c;
        if (c.n > 0) {
            if (vp__grow((void **)&ps->cells, &ps->cap, ps->n + 1, sizeof *ps->cells))
                return vp__fail(lx->err, VP_ENOMEM, "torch csv: out of memory");
            ps->cells[ps->n++] = c;
            *actions = true;
        }
        if (lx->p >= lx->end || *lx->p == '\n')
            return VP_OK;
        lx->p++; /* the comma */
    }
}

/* Splits the text into rows (lines; a final newline ends the last row) and cells. Lines
 * after the last action are not ranks (a trailing blank line adds no idle rank); a rank
 * without any action before it is refused. */
static vp_status parse_text(const char *text, size_t len, vp_error *err, parsed *ps) {
    lexer lx = {text + len, text, text, 1, err};
    memset(ps, 0, sizeof *ps);
    ps->blank.n = -1;
    if (len == 0)
        return vp__fail_at(err, VP_EPARSE, 1, 1, "torch csv: empty file (one row per rank)");
    int idle_row = -1, idle_line = 0;
    for (int row = 0;; row++) {
        bool actions = false;
        vp_status st = parse_line(&lx, ps, row, &actions);
        if (st)
            return st;
        if (actions)
            ps->rows = row + 1;
        else if (idle_row < 0)
            idle_row = row, idle_line = lx.line;
        if (lx.p >= lx.end || ++lx.p >= lx.end) /* the newline; a final one ends the file */
            break;
        lx.line++;
        lx.line_start = lx.p;
    }
    if (idle_row >= 0 && idle_row < ps->rows)
        return vp__fail_at(err, VP_EVALIDATION, idle_line, 1,
                           "torch csv: rank %d has no action (an empty line): every rank of a "
                           "pipeline schedule runs a stage",
                           idle_row);
    return VP_OK;
}

/* ---------------------------------------------------------------- reader: rules */

enum {
    HAS_F = 1 << T_F,
    HAS_I = 1 << T_I,
    HAS_W = 1 << T_W,
    HAS_B = 1 << T_B,
    HAS_SEND_F = 1 << T_SEND_F,
    HAS_RECV_F = 1 << T_RECV_F,
    HAS_SEND_B = 1 << T_SEND_B,
    HAS_RECV_B = 1 << T_RECV_B
};

typedef struct checker {
    const parsed *ps;
    vp_error *err;
    int S, m, comms;
    int32_t *rank;    /* [S] rank of each stage */
    int *first_cell;  /* [S] cell where the stage first appears */
    uint16_t *flags;  /* [S*m] HAS_* of each (stage, microbatch) */
    int *backwards;   /* [S] W and full B seen so far (for REDUCE_GRAD) */
    uint8_t *reduced; /* [S] REDUCE_GRAD seen */
} checker;

static vp_status rule_fail(const checker *ck, const cellrec *c, const char *fmt, ...)
    VP_PRINTF(3, 4);
static vp_status rule_fail(const checker *ck, const cellrec *c, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c)
        return vp__fail_at(ck->err, VP_EVALIDATION, c->line, c->col, "torch csv: rank %d: %s",
                           c->row, msg);
    return vp__fail(ck->err, VP_EVALIDATION, "torch csv: %s", msg);
}

/* Infers S and m (or checks opts->m), and makes sure every stage can hold m forwards before
 * anything of size S*m is allocated. */
static vp_status infer_shape(checker *ck, const vp_torch_csv_opts *o) {
    const parsed *ps = ck->ps;
    int max_stage = -1, max_mb = -1, stage_cell = -1, mb_cell = -1;
    long forwards = 0;
    for (int i = 0; i < ps->n; i++)
        for (int h = 0; h < ps->cells[i].n; h++) {
            const act *a = &ps->cells[i].a[h];
            if (!is_compute(a->type))
                continue;
            forwards += a->type == T_F;
            if (a->stage > max_stage)
                max_stage = a->stage, stage_cell = i;
            if (a->mb > max_mb)
                max_mb = a->mb, mb_cell = i;
            if (o->m > 0 && a->mb >= o->m)
                return rule_fail(ck, &ps->cells[i], "microbatch %d is out of range (m = %d)", a->mb,
                                 o->m);
        }
    if (max_stage < 0)
        return rule_fail(ck, NULL, "no compute actions (F, I, W, B) in the file");
    ck->S = max_stage + 1;
    ck->m = o->m > 0 ? o->m : max_mb + 1;
    if (o->m <= 0 && ck->m > forwards)
        return rule_fail(ck, &ps->cells[mb_cell],
                         "microbatch %d is out of range: the file holds only %ld forwards", max_mb,
                         forwards);
    if (ck->S > forwards)
        return rule_fail(ck, &ps->cells[stage_cell],
                         "stage %d is out of range: the file holds only %ld forwards", max_stage,
                         forwards);
    /* per stage #F = m; counted before the S*m table exists */
    int *count = vp__calloc((size_t)ck->S, sizeof *count);
    if (!count)
        return vp__fail(ck->err, VP_ENOMEM, "torch csv: out of memory");
    for (int i = 0; i < ps->n; i++)
        for (int h = 0; h < ps->cells[i].n; h++)
            if (ps->cells[i].a[h].type == T_F)
                count[ps->cells[i].a[h].stage]++;
    vp_status st = VP_OK;
    for (int s = 0; s < ck->S && !st; s++)
        if (count[s] < ck->m)
            st = rule_fail(ck, NULL,
                           "stage %d has %d forward(s), expected one per microbatch (m = %d%s)", s,
                           count[s], ck->m, o->m > 0 ? "" : ", from the largest index");
    free(count);
    return st;
}

/* Every action's stage in range and on one rank (PyTorch infers the map the same way). */
static vp_status map_stages(checker *ck) {
    const parsed *ps = ck->ps;
    for (int s = 0; s < ck->S; s++)
        ck->rank[s] = -1;
    for (int i = 0; i < ps->n; i++) {
        const cellrec *c = &ps->cells[i];
        for (int h = 0; h < c->n; h++) {
            const act *a = &c->a[h];
            if (a->stage >= ck->S)
                return rule_fail(ck, c,
                                 "stage %d is out of range (no compute action has it; "
                                 "stages are 0..%d)",
                                 a->stage, ck->S - 1);
            if (a->mb >= ck->m)
                return rule_fail(ck, c, "microbatch %d is out of range (m = %d)", a->mb, ck->m);
            if (ck->rank[a->stage] < 0) {
                ck->rank[a->stage] = c->row;
                ck->first_cell[a->stage] = i;
            } else if (ck->rank[a->stage] != c->row) {
                const cellrec *f = &ps->cells[ck->first_cell[a->stage]];
                return rule_fail(ck, c,
                                 "stage %d is also on rank %d (line %d, column %d); each "
                                 "stage must be on exactly one rank",
                                 a->stage, f->row, f->line, f->col);
            }
        }
    }
    return VP_OK;
}

/* The neighbour a communication action talks to is on another rank, and exists. */
static vp_status check_peer(const checker *ck, const cellrec *c, const act *a) {
    int down = a->type == T_SEND_F || a->type == T_RECV_B; /* talks to stage + 1 */
    int peer = down ? a->stage + 1 : a->stage - 1;
    if (peer < 0 || peer >= ck->S)
        return rule_fail(ck, c, "%d%s%d has no neighbour stage %d", a->stage, type_name[a->type],
                         a->mb, peer);
    if (ck->rank[peer] == c->row)
        return rule_fail(ck, c,
                         "%d%s%d: stages %d and %d are both on this rank, so nothing is "
                         "sent between them",
                         a->stage, type_name[a->type], a->mb, a->stage, peer);
    return VP_OK;
}

/* Applies one action in its rank's order. */
static vp_status apply(checker *ck, const cellrec *c, const act *a) {
    if (a->type == T_UNSHARD || a->type == T_RESHARD)
        return VP_OK;
    if (a->type == T_REDUCE_GRAD) {
        if (ck->reduced[a->stage]++)
            return rule_fail(ck, c, "duplicate %dREDUCE_GRAD", a->stage);
        if (ck->backwards[a->stage] < ck->m)
            return rule_fail(ck, c,
                             "%dREDUCE_GRAD before the stage's last backward (%d of %d "
                             "W or B done)",
                             a->stage, ck->backwards[a->stage], ck->m);
        return VP_OK;
    }
    if (a->type >= T_SEND_F) {
        vp_status st = check_peer(ck, c, a);
        if (st)
            return st;
    }
    uint16_t *f = &ck->flags[(size_t)a->stage * ck->m + a->mb];
    int bit = 1 << a->type;
    if (*f & bit)
        return rule_fail(ck, c, "duplicate %d%s%d", a->stage, type_name[a->type], a->mb);
    const char *missing = NULL;
    switch (a->type) {
    case T_I:
    case T_B:
        if (!(*f & HAS_F))
            missing = "before its forward";
        else if (*f & (HAS_I | HAS_B))
            missing = "after another backward of the same microbatch (I and B both)";
        break;
    case T_W:
        if (!(*f & HAS_I))
            missing = (*f & HAS_B) ? "after a full backward B (W follows only an I)"
                                   : "before its input backward I";
        break;
    case T_RECV_F:
        if (*f & HAS_F)
            missing = "after the forward that needs it";
        break;
    case T_SEND_F:
        if (!(*f & HAS_F))
            missing = "before the forward that produces it";
        break;
    case T_RECV_B:
        if (*f & (HAS_I | HAS_B))
            missing = "after the backward that needs it";
        break;
    case T_SEND_B:
        if (!(*f & (HAS_I | HAS_B)))
            missing = "before the backward that produces it";
        break;
    }
    if (missing)
        return rule_fail(ck, c, "%d%s%d comes %s", a->stage, type_name[a->type], a->mb, missing);
    *f |= (uint16_t)bit;
    if (a->type == T_W || a->type == T_B)
        ck->backwards[a->stage]++;
    return VP_OK;
}

/* After the whole file: every microbatch of every stage complete, and (compute_comms)
 * every hop between ranks sent once and received once. */
static vp_status check_complete(const checker *ck) {
    for (int s = 0; s < ck->S; s++)
        for (int j = 0; j < ck->m; j++) {
            uint16_t f = ck->flags[(size_t)s * ck->m + j];
            if (!(f & (HAS_I | HAS_B)))
                return rule_fail(ck, NULL,
                                 "stage %d, microbatch %d has no backward (I or B; "
                                 "#B + #I must be m)",
                                 s, j);
            if ((f & HAS_I) && !(f & HAS_W))
                return rule_fail(ck, NULL,
                                 "stage %d, microbatch %d has an I but no W (#I must "
                                 "equal #W)",
                                 s, j);
            if (!ck->comms)
                continue;
            if (s + 1 < ck->S && ck->rank[s + 1] != ck->rank[s]) {
                uint16_t next = ck->flags[(size_t)(s + 1) * ck->m + j];
                if (!(f & HAS_SEND_F) || !(next & HAS_RECV_F))
                    return rule_fail(ck, NULL,
                                     "compute_comms: the forward of microbatch %d from "
                                     "stage %d (rank %d) to stage %d (rank %d) needs "
                                     "%dSEND_F%d and %dRECV_F%d",
                                     j, s, ck->rank[s], s + 1, ck->rank[s + 1], s, j, s + 1, j);
                if (!(f & HAS_RECV_B) || !(next & HAS_SEND_B))
                    return rule_fail(ck, NULL,
                                     "compute_comms: the backward of microbatch %d from "
                                     "stage %d (rank %d) to stage %d (rank %d) needs "
                                     "%dSEND_B%d and %dRECV_B%d",
                                     j, s + 1, ck->rank[s + 1], s, ck->rank[s], s + 1, j, s, j);
            }
        }
    return VP_OK;
}

/* Placement kind when the stage -> rank map is exactly one of the regular ones. */
static vp_placement_kind detect_placement(const int32_t *rank, int S, int p) {
    int single = S == p, loop = S % p == 0, v = S == 2 * p;
    for (int s = 0; s < S; s++) {
        single &= rank[s] == s;
        loop &= rank[s] == s % p;
        v &= rank[s] == (s < p ? s : 2 * p - 1 - s);
    }
    return single ? VP_PLACE_SINGLE : loop ? VP_PLACE_LOOP : v ? VP_PLACE_V : VP_PLACE_CUSTOM;
}

static vp_status build(const checker *ck, vp_schedule **out, vp_error *err) {
    const parsed *ps = ck->ps;
    vp_placement_kind kind = detect_placement(ck->rank, ck->S, ps->rows);
    vp_schedule *s = NULL;
    vp_shape shape = {.p = ps->rows, .S = ck->S, .m = ck->m, .placement = kind};
    vp_status st = vp_schedule_new("custom", shape, &s, err);
    if (st != VP_OK)
        return st;
    if (kind == VP_PLACE_CUSTOM) {
        memcpy(s->stage_device, ck->rank, (size_t)ck->S * sizeof *ck->rank);
        st = vp_schedule_set_chunks(s, err);
    }
    static const uint8_t vp_kind[4] = {VP_OP_F, VP_OP_B, VP_OP_W, VP_OP_BW};
    for (int i = 0; i < ps->n && !st; i++) {
        const cellrec *c = &ps->cells[i];
        if (!is_compute(c->a[0].type))
            continue;
        vp_op op = {vp_kind[c->a[0].type], 0, c->a[0].stage, c->a[0].mb, 0, 0};
        if (c->n == 2) {
            op.kind = VP_OP_FB;
            op.bkind = vp_kind[c->a[1].type];
            op.stage2 = c->a[1].stage;
            op.mb2 = c->a[1].mb;
        }
        if (vp_schedule_push(s, c->row, op) != VP_OK)
            st = vp__fail(err, VP_ENOMEM, "torch csv: out of memory");
    }
    if (st == VP_OK)
        st = vp_schedule_validate(s, err);
    if (st) {
        vp_schedule_free(s);
        return st;
    }
    *out = s;
    return VP_OK;
}

/* The format rules: no communication in compute_only, no blanks in compute_comms. */
static vp_status check_format(checker *ck, const vp_torch_csv_opts *o) {
    const parsed *ps = ck->ps;
    const cellrec *comm = NULL;
    const cellrec *blank = ps->blank.n == 0 && ps->blank.row < ps->rows ? &ps->blank : NULL;
    for (int i = 0; i < ps->n && !comm; i++) {
        const cellrec *c = &ps->cells[i];
        if (c->n == 1 && !is_compute(c->a[0].type))
            comm = c;
    }
    if (comm && o->format == VP_TORCH_CSV_COMPUTE_ONLY)
        return rule_fail(ck, comm, "%s in a compute_only file (only F, I, W, B and OVERLAP_F_B)",
                         type_name[comm->a[0].type]);
    ck->comms = o->format == VP_TORCH_CSV_COMPUTE_COMMS || (comm && o->format == VP_TORCH_CSV_AUTO);
    if (ck->comms && blank) {
        if (comm)
            return rule_fail(ck, blank,
                             "empty cell in a compute_comms file (it has %s at line "
                             "%d, column %d); blanks are allowed only in compute_only",
                             type_name[comm->a[0].type], comm->line, comm->col);
        return rule_fail(ck, blank, "empty cell in a compute_comms file");
    }
    if (o->p > 0 && ps->rows != o->p) {
        int line = ps->rows > o->p ? o->p + 1 : ps->rows + 1;
        return vp__fail_at(ck->err, VP_EVALIDATION, line, 1,
                           "torch csv: the file has %d rows, expected one per rank (p = %d)",
                           ps->rows, o->p);
    }
    return VP_OK;
}

vp_status vp_torch_csv_read(const char *text, size_t len, const vp_torch_csv_opts *opts,
                            vp_schedule **out, vp_error *err) {
    *out = NULL;
    vp_torch_csv_opts o = opts ? *opts : (vp_torch_csv_opts){0};
    parsed ps;
    vp_status st = parse_text(text, len, err, &ps);
    checker ck = {&ps, err, 0, 0, 0, NULL, NULL, NULL, NULL, NULL};
    if (!st)
        st = check_format(&ck, &o);
    if (!st)
        st = infer_shape(&ck, &o);
    if (!st) {
        ck.rank = vp__calloc((size_t)ck.S, sizeof *ck.rank);
        ck.first_cell = vp__calloc((size_t)ck.S, sizeof *ck.first_cell);
        ck.flags = vp__calloc((size_t)ck.S * (size_t)ck.m, sizeof *ck.flags);
        ck.backwards = vp__calloc((size_t)ck.S, sizeof *ck.backwards);
        ck.reduced = vp__calloc((size_t)ck.S, sizeof *ck.reduced);
        if (!ck.rank || !ck.first_cell || !ck.flags || !ck.backwards || !ck.reduced)
            st = vp__fail(err, VP_ENOMEM, "torch csv: out of memory");
    }
    if (!st)
        st = map_stages(&ck);
    for (int i = 0; !st && i < ps.n; i++)
        for (int h = 0; !st && h < ps.cells[i].n; h++)
            st = apply(&ck, &ps.cells[i], &ps.cells[i].a[h]);
    if (!st)
        st = check_complete(&ck);
    if (!st)
        st = build(&ck, out, err);
    free(ck.rank);
    free(ck.first_cell);
    free(ck.flags);
    free(ck.backwards);
    free(ck.reduced);
    free(ps.cells);
    return st;
}
