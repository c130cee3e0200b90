/* PyTorch CSV export and import: PyTorch's loader rules on every family's export,
 * round trips, compute_comms pairing, and the reader's rejections with positions. */
#include <stdlib.h>

#include "test_util.h"
#include "vpipe/io.h"

/* ------------------------------------------------------------------------------------
 * An independent reading of a CSV, in the manner of PyTorch's _load_csv +
 * _validate_schedule, plus the communication rules. Written without the library's
 * reader so that the two check each other. */

enum { MAXC = 1 << 16 };

typedef struct pt_cell {
    int rank, pos; /* row and position in the row */
    int stage, mb; /* mb -1 when absent */
    char type[16]; /* F I W B SEND_F RECV_F SEND_B RECV_B REDUCE_GRAD */
    int overlap;   /* 1: forward half of a pair, 2: backward half */
} pt_cell;

typedef struct pt_file {
    pt_cell *c;
    int n, rows;
} pt_file;

static int parse_simple(const char *s, pt_cell *c) {
    int used = 0;
    if (sscanf(s, "%d%n", &c->stage, &used) != 1)
        return -1;
    s += used;
    int t = 0;
    while ((*s >= 'A' && *s <= 'Z') || *s == '_')
        c->type[t++] = *s++;
    c->type[t] = '\0';
    c->mb = -1;
    if (*s >= '0' && *s <= '9') {
        c->mb = atoi(s);
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0' || *s == ';' || *s == ')' ? 0 : -1;
}

static pt_file pt_parse(const char *text) {
    pt_file f = {calloc(MAXC, sizeof(pt_cell)), 0, 0};
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        assert_non_null(eol); /* every row ends with a newline */
        char row[1 << 16];
        assert_true(eol - p < (long)sizeof row);
        memcpy(row, p, (size_t)(eol - p));
        row[eol - p] = '\0';
        int pos = 0;
        for (char *tok = row, *next; tok; tok = next, pos++) {
            next = strchr(tok, ',');
            if (next)
                *next++ = '\0';
            assert_true(*tok); /* vpipe never writes blanks */
            assert_true(f.n + 2 < MAXC);
            pt_cell *c = &f.c[f.n];
            c->rank = f.rows;
            c->pos = pos;
            if (*tok == '(') {
                char *semi = strchr(tok, ';');
                assert_non_null(semi);
                assert_string_equal(strchr(tok, ')'), ")OVERLAP_F_B");
                assert_int_equal(parse_simple(tok + 1, c), 0);
                c[1] = c[0];
                assert_int_equal(parse_simple(semi + 1, &c[1]), 0);
                c[0].overlap = 1;
                c[1].overlap = 2;
                f.n += 2;
            } else {
                if (parse_simple(tok, c))
                    fail_msg("cell '%s' does not parse", tok);
                f.n++;
            }
        }
        f.rows++;
        p = eol + 1;
    }
    return f;
}

/* Position of the first cell of rank r with stage, type and mb, or -1. */
static int pt_find(const pt_file *f, int rank, int stage, const char *type, int mb) {
    for (int i = 0; i < f->n; i++)
        if (f->c[i].rank == rank && f->c[i].stage == stage && f->c[i].mb == mb &&
            !strcmp(f->c[i].type, type))
            return f->c[i].pos;
    return -1;
}

/* PyTorch's _validate_schedule: rows = ranks, each stage on one rank, per stage #F = m,
 * #I = #W, #B + #I = m, I/B after F, W after I. Returns the stage -> rank map (S entries). */
static int *pt_loader_rules(const pt_file *f, int p, int S, int m) {
    assert_int_equal(f->rows, p);
    int *rank = malloc(sizeof(int) * (size_t)S);
    for (int s = 0; s < S; s++)
        rank[s] = -1;
    char *seen = calloc((size_t)S * m * 4, 1); /* F I W B per (stage, mb), as sets */
    int *count = calloc((size_t)S * 4, sizeof(int));
    for (int i = 0; i < f->n; i++) {
        const pt_cell *c = &f->c[i];
        assert_true(c->stage >= 0 && c->stage < S);
        if (rank[c->stage] < 0)
            rank[c->stage] = c->rank;
        assert_int_equal(rank[c->stage], c->rank);
        int k = !strcmp(c->type, "F")   ? 0
                : !strcmp(c->type, "I") ? 1
                : !strcmp(c->type, "W") ? 2
                : !strcmp(c->type, "B") ? 3
                                        : -1;
        if (k < 0)
            continue;
        assert_true(c->mb >= 0 && c->mb < m);
        char *sj = &seen[((size_t)c->stage * m + c->mb) * 4];
        if ((k == 1 || k == 3) && !sj[0])
            fail_msg("rank %d: %d%s%d before its F", c->rank, c->stage, c->type, c->mb);
        if (k == 2 && !sj[1])
            fail_msg("rank %d: %dW%d before its I", c->rank, c->stage, c->mb);
        if (!sj[k])
            count[c->stage * 4 + k]++;
        sj[k] = 1;
    }
    for (int s = 0; s < S; s++) {
        assert_int_equal(count[s * 4 + 0], m);
        assert_int_equal(count[s * 4 + 1], count[s * 4 + 2]);
        assert_int_equal(count[s * 4 + 3] + count[s * 4 + 1], m);
    }
    free(seen);
    free(count);
    return rank;
}

/* compute_comms: every SEND has exactly one RECV on the peer's rank, none between stages
 * on one rank, every hop between ranks is sent, RECVs before and SENDs after their ops. */
static void pt_comm_rules(const pt_file *f, const int *rank, int S) {
    int sends = 0, recvs = 0;
    for (int i = 0; i < f->n; i++) {
        const pt_cell *c = &f->c[i];
        int fwd = !strcmp(c->type, "SEND_F") || !strcmp(c->type, "RECV_F");
        int bwd = !strcmp(c->type, "SEND_B") || !strcmp(c->type, "RECV_B");
        if (!fwd && !bwd)
            continue;
        int send = c->type[0] == 'S';
        sends += send;
        recvs += !send;
        int peer = (fwd == send) ? c->stage + 1 : c->stage - 1;
        assert_true(peer >= 0 && peer < S);
        assert_int_not_equal(rank[peer], c->rank);
        if (send) {
            char want[8];
            snprintf(want, sizeof want, "RECV_%c", fwd ? 'F' : 'B');
            int matches = 0;
            for (int k = 0; k < f->n; k++)
                matches += f->c[k].rank == rank[peer] && f->c[k].stage == peer &&
                           f->c[k].mb == c->mb && !strcmp(f->c[k].type, want);
            assert_int_equal(matches, 1);
        }
        /* the op it serves, on this rank */
        int op = -1;
        if (fwd)
            op = pt_find(f, c->rank, c->stage, "F", c->mb);
        else if ((op = pt_find(f, c->rank, c->stage, "I", c->mb)) < 0)
            op = pt_find(f, c->rank, c->stage, "B", c->mb);
        assert_true(op >= 0);
        if (send)
            assert_true(c->pos > op);
        else
            assert_true(c->pos < op);
    }
    assert_int_equal(sends, recvs);
    /* every hop between ranks is there */
    for (int i = 0; i < f->n; i++) {
        const pt_cell *c = &f->c[i];
        if (!strcmp(c->type, "F") && c->stage + 1 < S && rank[c->stage + 1] != c->rank)
            assert_true(pt_find(f, c->rank, c->stage, "SEND_F", c->mb) >= 0);
        if ((!strcmp(c->type, "I") || !strcmp(c->type, "B")) && c->stage > 0 &&
            rank[c->stage - 1] != c->rank)
            assert_true(pt_find(f, c->rank, c->stage, "SEND_B", c->mb) >= 0);
    }
}

/* ------------------------------------------------------------------------------------ */

/* Compares a read-back schedule with the original. The CSV cannot tell apart placements
 * whose stage maps coincide (loop with v = 1 is single; at p = 1, loop with 2 stages is V),
 * so the kind is taken from the original when the maps agree. */
static void assert_same(const vp_schedule *s, vp_schedule *back) {
    if (back->S == s->S && !memcmp(back->stage_device, s->stage_device, sizeof(int32_t) * s->S))
        back->placement = s->placement;
    if (!vp_schedule_equal(s, back))
        fail_msg("%s p=%d m=%d: import(export(s)) differs from s", s->family, s->p, s->m);
}

static vp_schedule *read_ok(const char *text, const vp_torch_csv_opts *o) {
    vp_schedule *s = NULL;
    vp_error err = {0};
    if (vp_torch_csv_read(text, strlen(text), o, &s, &err) != VP_OK)
        fail_msg("read failed at %d:%d: %s\n%s", err.line, err.column, err.message, text);
    return s;
}

/* Exports s both ways, checks PyTorch's rules and the pairing, and reads both back. */
static int check_export(const vp_schedule *s) {
    char *only = NULL, *comms = NULL;
    vp_error err = {0};
    vp_status rc = vp_torch_csv_write(s, VP_TORCH_CSV_COMPUTE_ONLY, &only, &err);
    if (rc == VP_EUNSUPPORTED) {
        assert_true(s->placement == VP_PLACE_BIDIR || s->route_len != s->S ||
                    s->recompute != VP_RECOMPUTE_NONE);
        return 0;
    }
    assert_int_equal(rc, VP_OK);
    assert_int_equal(vp_torch_csv_write(s, VP_TORCH_CSV_COMPUTE_COMMS, &comms, &err), VP_OK);

    pt_file f = pt_parse(only);
    int *rank = pt_loader_rules(&f, s->p, s->S, s->m);
    for (int i = 0; i < f.n; i++) /* compute_only holds compute only */
        assert_true(strlen(f.c[i].type) == 1);
    free(f.c);
    free(rank);
    f = pt_parse(comms);
    rank = pt_loader_rules(&f, s->p, s->S, s->m);
    pt_comm_rules(&f, rank, s->S);
    free(f.c);
    free(rank);

    vp_torch_csv_opts o = {VP_TORCH_CSV_COMPUTE_ONLY, s->p, s->m};
    vp_schedule *back = read_ok(only, &o);
    assert_same(s, back);
    vp_schedule_free(back);
    back = read_ok(comms, NULL);
    assert_same(s, back);
    /* and the import writes the same text again */
    char *again = NULL;
    assert_int_equal(vp_torch_csv_write(back, VP_TORCH_CSV_COMPUTE_COMMS, &again, NULL), VP_OK);
    assert_string_equal(again, comms);
    free(again);
    vp_schedule_free(back);
    free(only);
    free(comms);
    return 1;
}

static void test_every_family(void **state) {
    (void)state;
    static const int ps[] = {1, 2, 3, 4, 6, 8};
    static const int ms[] = {1, 2, 3, 4, 5, 8, 12, 16};
    static const int vs[] = {0, 3};
    for (int fi = 0; fi < vp_family_count(); fi++) {
        const vp_family *fam = vp_family_at(fi);
        int built = 0, exported = 0;
        for (size_t a = 0; a < sizeof ps / sizeof *ps; a++)
            for (size_t b = 0; b < sizeof ms / sizeof *ms; b++)
                for (size_t c = 0; c < sizeof vs / sizeof *vs; c++) {
                    vp_spec spec = vp_spec_make(ps[a], ms[b]);
                    spec.v = vs[c];
                    vp_schedule *s = NULL;
                    if (vp_family_build(fam->name, &spec, &s, NULL) != VP_OK)
                        continue; /* the spec does not fit this family */
                    built++;
                    exported += check_export(s);
                    vp_schedule_free(s);
                }
        if (!built)
            fail_msg("family %s built nothing on the grid", fam->name);
        if (!exported && strcmp(fam->name, "dualpipe") && strcmp(fam->name, "1f1b-r"))
            fail_msg("family %s exported nothing", fam->name);
    }
}

/* A V schedule on 2 ranks with an overlapped F&B (full backward) and one with an
 * input-only backward inside the pair: written exactly as read. */
static const char dualv_full[] = "0F0,0F1,3F0,3I0,3W0,(3F1;0B0)OVERLAP_F_B,3B1,0I1,0W1\n"
                                 "1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n";
static const char dualv_input[] = "0F0,0F1,3F0,3I0,3W0,(3F1;0I0)OVERLAP_F_B,3B1,0W0,0I1,0W1\n"
                                  "1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n";

static void test_overlap_pairs(void **state) {
    (void)state;
    const char *texts[] = {dualv_full, dualv_input};
    for (int i = 0; i < 2; i++) {
        vp_schedule *s = read_ok(texts[i], NULL);
        assert_int_equal(s->placement, VP_PLACE_V);
        assert_int_equal(s->m, 2);
        assert_int_equal(s->dev[0].ops[5].kind, VP_OP_FB);
        assert_int_equal(s->dev[0].ops[5].bkind, i ? VP_OP_B : VP_OP_BW);
        assert_int_equal(s->dev[0].ops[5].stage2, 0);
        char *out = NULL;
        assert_int_equal(vp_torch_csv_write(s, VP_TORCH_CSV_COMPUTE_ONLY, &out, NULL), VP_OK);
        assert_string_equal(out, texts[i]);
        free(out);
        check_export(s);
        assert_string_equal(vp_torch_schedule_name(s), "DualPipeV");
        char notes[1024];
        int warnings = vp_torch_csv_notes(s, notes, sizeof notes);
        assert_non_null(strstr(notes, "\"DualPipeV\""));
        assert_int_equal(warnings, i); /* only the input-only pair warns */
        if (i)
            assert_non_null(strstr(notes, "input-only backward"));
        vp_schedule_free(s);
    }
}

static void test_compute_comms_layout(void **state) {
    (void)state;
    vp_schedule *s = tu_build("1f1b", 2, 2, 0, vp_costs_default());
    char *text = NULL;
    assert_int_equal(vp_torch_csv_write(s, VP_TORCH_CSV_COMPUTE_COMMS, &text, NULL), VP_OK);
    assert_string_equal(text, "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
                              "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n");
    free(text);
    assert_int_equal(vp_torch_csv_write(s, VP_TORCH_CSV_AUTO, &text, NULL), VP_EINVAL);
    vp_schedule_free(s);
}

static void test_unexportable(void **state) {
    (void)state;
    vp_schedule *s = tu_schedule("dualpipe", 2, 4, 2, VP_PLACE_BIDIR);
    char *text = NULL;
    vp_error err = {0};
    assert_int_equal(vp_torch_csv_write(s, VP_TORCH_CSV_COMPUTE_ONLY, &text, &err),
                     VP_EUNSUPPORTED);
    assert_null(text);
    assert_non_null(strstr(err.message, "bidirectional"));
    assert_null(vp_torch_schedule_name(s));
    char notes[512];
    assert_int_equal(vp_torch_csv_notes(s, notes, sizeof notes), 1);
    assert_non_null(strstr(notes, "cannot export"));
    vp_schedule_free(s);
}

/* A recomputing schedule is refused (PyTorch has no R action) with the way to the
 * equivalent, and the same schedule without recomputation exports. */
static void test_recompute_refused(void **state) {
    (void)state;
    vp_schedule *s = tu_build("1f1b-r", 4, 8, 0, vp_costs_default()), *plain = NULL;
    char *text = NULL;
    vp_error err = {0};
    for (int fmt = VP_TORCH_CSV_COMPUTE_ONLY; fmt <= VP_TORCH_CSV_COMPUTE_COMMS; fmt++) {
        assert_int_equal(vp_torch_csv_write(s, (vp_torch_csv_format)fmt, &text, &err),
                         VP_EUNSUPPORTED);
        assert_null(text);
        assert_non_null(strstr(err.message, "no recomputation"));
        assert_non_null(strstr(err.message, "activation_checkpoint.mode"));
    }
    char notes[1024];
    assert_int_equal(vp_torch_csv_notes(s, notes, sizeof notes), 1);
    assert_non_null(strstr(notes, "cannot export"));
    assert_int_equal(vp_schedule_recompute(s, VP_RECOMPUTE_NONE, &plain, NULL), VP_OK);
    assert_int_equal(vp_torch_csv_write(plain, VP_TORCH_CSV_COMPUTE_ONLY, &text, NULL), VP_OK);
    vp_schedule *back = read_ok(text, NULL), *ref = tu_build("1f1b", 4, 8, 0, vp_costs_default());
    assert_true(vp_schedule_equal(back, ref));
    free(text);
    vp_schedule_free(back);
    vp_schedule_free(ref);
    vp_schedule_free(plain);
    vp_schedule_free(s);
}

static void test_schedule_names(void **state) {
    (void)state;
    vp_schedule *s = tu_build("1f1b", 4, 8, 0, vp_costs_default());
    assert_string_equal(vp_torch_schedule_name(s), "PipelineScheduleSingle");
    vp_schedule_free(s);
    s = tu_build("interleaved", 4, 8, 1, vp_costs_default()); /* one chunk: single */
    assert_string_equal(vp_torch_schedule_name(s), "PipelineScheduleSingle");
    vp_schedule_free(s);
    s = tu_build("interleaved", 4, 8, 2, vp_costs_default());
    assert_string_equal(vp_torch_schedule_name(s), "PipelineScheduleMulti");
    char notes[1024];
    assert_int_equal(vp_torch_csv_notes(s, notes, sizeof notes), 0);
    assert_non_null(strstr(notes, "Interleaved1F1B"));
    vp_schedule_free(s);
    s = read_ok("0F0,2F0,2B0,0B0\n1F0,3F0,3B0,1B0\n", NULL); /* stages 0, 2 on rank 0 */
    assert_int_equal(s->placement, VP_PLACE_LOOP);
    vp_schedule_free(s);
    s = read_ok("1F0,1B0\n0F0,2F0,2B0,0B0\n", NULL); /* custom: stage 0 on rank 1 */
    assert_int_equal(s->placement, VP_PLACE_CUSTOM);
    assert_int_equal(s->stage_device[0], 1);
    assert_int_equal(s->stage_chunk[2], 1);
    assert_null(vp_torch_schedule_name(s));
    assert_int_equal(vp_torch_csv_notes(s, notes, sizeof notes), 1);
    vp_schedule_free(s);
}

/* Files PyTorch accepts in forms vpipe does not write: blanks, spaces, CRLF, upstream's
 * own artifact layout. */
static void test_accepts(void **state) {
    (void)state;
    vp_schedule *s = read_ok(" 0F0 , 0F1,,0B0,0B1\r\n,1F0,1F1,1B0 ,1B1\r\n", NULL);
    assert_int_equal(s->p, 2);
    assert_int_equal(s->m, 2);
    assert_int_equal(s->placement, VP_PLACE_SINGLE);
    assert_int_equal(s->dev[0].n, 4);
    vp_schedule_free(s);
    /* blank lines after the last rank (an editor's trailing newline) are not idle ranks */
    s = read_ok("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n\n\r\n , ,\n", NULL);
    assert_int_equal(s->p, 2);
    assert_int_equal(s->placement, VP_PLACE_SINGLE);
    vp_schedule_free(s);
    /* a compute_comms file as PyTorch dumps it, with FSDP actions and no final newline */
    s = read_ok("0UNSHARD,0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD,0RESHARD\n"
                "1UNSHARD,1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD,1RESHARD",
                NULL);
    assert_int_equal(s->dev[1].n, 2);
    vp_schedule_free(s);
    vp_torch_csv_opts o = {VP_TORCH_CSV_AUTO, 2, 3};
    vp_schedule *t = NULL;
    /* m given: microbatch 2 is missing, so stage 0 lacks a forward */
    assert_int_equal(vp_torch_csv_read("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n", 32, &o, &t, NULL),
                     VP_EVALIDATION);
    assert_null(t);
}

typedef struct bad_case {
    const char *text;
    vp_torch_csv_opts opts;
    vp_status status;
    int line, column; /* 0: not about one place */
    const char *needle;
} bad_case;

static void test_rejects(void **state) {
    (void)state;
    static const bad_case cases[] = {
        {"0F0,0X0\n", {0}, VP_EPARSE, 1, 6, "unknown action type"},
        {"0F0,0B0\n1F0,1Q0\n", {0}, VP_EPARSE, 2, 6, "unknown action type"},
        {"0F0,-1B0\n", {0}, VP_EPARSE, 1, 5, "negative stage"},
        {"0F0,0B-1\n", {0}, VP_EPARSE, 1, 7, "negative microbatch"},
        {"0F0,0B\n", {0}, VP_EPARSE, 1, 7, "expected a microbatch"},
        {"0F0,F0\n", {0}, VP_EPARSE, 1, 5, "expected a stage"},
        {"0F0x,0B0\n", {0}, VP_EPARSE, 1, 4, "stray text 'x'"},
        {"0F0,0B0 junk\n", {0}, VP_EPARSE, 1, 9, "stray text 'junk'"},
        {"0F0,0BW0\n", {0}, VP_EPARSE, 1, 6, "'BW' is not a PyTorch action"},
        {"0F0,0B99999999\n", {0}, VP_EPARSE, 1, 7, "out of range"},
        {"0F0,(0F1;0B0\n", {0}, VP_EPARSE, 1, 13, "OVERLAP_F_B"},
        {"0F0,(0B0;0F1)OVERLAP_F_B\n", {0}, VP_EPARSE, 1, 5, "forward then a backward"},
        {"0F0,(0F1 0B0)OVERLAP_F_B\n", {0}, VP_EPARSE, 1, 10, "expected ';'"},
        {"", {0}, VP_EPARSE, 1, 1, "empty file"},
        {"0F0,0F0,0B0\n", {0}, VP_EVALIDATION, 1, 5, "duplicate 0F0"},
        {"0F0,0B0,0B0\n", {0}, VP_EVALIDATION, 1, 9, "duplicate 0B0"},
        {"0B0,0F0\n", {0}, VP_EVALIDATION, 1, 1, "before its forward"},
        {"0F0,0W0,0I0\n", {0}, VP_EVALIDATION, 1, 5, "before its input backward"},
        {"0F0,0I0,0B0,0W0\n", {0}, VP_EVALIDATION, 1, 9, "I and B both"},
        {"0F0,0I0\n", {0}, VP_EVALIDATION, 0, 0, "has an I but no W"},
        {"0F0,0F1,0B0\n", {0}, VP_EVALIDATION, 0, 0, "stage 0, microbatch 1 has no backward"},
        {"0F0,0B0,1B0\n1F0\n", {0}, VP_EVALIDATION, 2, 1, "also on rank 0 (line 1, column 9)"},
        {"0F0,0F5,0B0,0B5\n", {0}, VP_EVALIDATION, 1, 5, "microbatch 5 is out of range"},
        {"0F0,7F0,0B0,7B0\n", {0}, VP_EVALIDATION, 1, 5, "stage 7 is out of range"},
        {"0F0,0F1,0B0,0B1,1F0,1B0\n", {0}, VP_EVALIDATION, 0, 0, "stage 1 has 1 forward"},
        {"0F0,0B0\n0F1\n", {0}, VP_EVALIDATION, 2, 1, "also on rank 0"},
        {"0F0,0B0\n", {VP_TORCH_CSV_AUTO, 2, 0}, VP_EVALIDATION, 2, 1, "expected one per rank"},
        {"0F0,0B0\n", {VP_TORCH_CSV_AUTO, 3, 0}, VP_EVALIDATION, 2, 1, "1 rows"},
        /* a rank without actions (an empty line before another rank's) */
        {"0F0,0B0\n\n1F0,1B0\n", {0}, VP_EVALIDATION, 2, 1, "rank 1 has no action"},
        {"0F0,0B0\n , ,\n1F0,1B0\n", {0}, VP_EVALIDATION, 2, 1, "rank 1 has no action"},
        {"0F0,0F1,0B0,0B1\n", {VP_TORCH_CSV_AUTO, 0, 1}, VP_EVALIDATION, 1, 5, "(m = 1)"},
        /* compute_only vs compute_comms */
        {"0F0,0SEND_F0,0B0\n1F0,1B0\n",
         {VP_TORCH_CSV_COMPUTE_ONLY, 0, 0},
         VP_EVALIDATION,
         1,
         5,
         "SEND_F in a compute_only file"},
        {"0F0,,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n",
         {0},
         VP_EVALIDATION,
         1,
         5,
         "empty cell in a compute_comms file"},
        {"0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1B0,1SEND_B0\n",
         {0},
         VP_EVALIDATION,
         0,
         0,
         "needs 0SEND_F0 and 1RECV_F0"},
        {"0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1RECV_F0,1B0,1SEND_B0\n",
         {0},
         VP_EVALIDATION,
         2,
         5,
         "after the forward that needs it"},
        {"0SEND_F0,0F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n",
         {0},
         VP_EVALIDATION,
         1,
         1,
         "before the forward that produces it"},
        {"0F0,0SEND_F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n",
         {0},
         VP_EVALIDATION,
         1,
         14,
         "duplicate 0SEND_F0"},
        {"0F0,0SEND_F0,1F0,1B0,0B0\n", {0}, VP_EVALIDATION, 1, 5, "both on this rank"},
        {"0F0,0RECV_F0,0B0\n", {0}, VP_EVALIDATION, 1, 5, "no neighbour stage -1"},
        {"0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1REDUCE_GRAD,1B0,1SEND_B0\n",
         {0},
         VP_EVALIDATION,
         2,
         14,
         "before the stage's last backward"},
        {"0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0,1SEND_F0\n",
         {0},
         VP_EVALIDATION,
         2,
         27,
         "no neighbour stage 2"},
        {"0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0,3RECV_B0\n",
         {0},
         VP_EVALIDATION,
         2,
         27,
         "stage 3 is out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const bad_case *c = &cases[i];
        vp_schedule *s = (vp_schedule *)&cases; /* must be reset to NULL */
        vp_error err = {0};
        vp_status rc = vp_torch_csv_read(c->text, strlen(c->text), &c->opts, &s, &err);
        if (rc != c->status || err.line != c->line || err.column != c->column ||
            !strstr(err.message, c->needle))
            fail_msg("case %zu '%s': want %d at %d:%d with '%s', got %d at %d:%d: %s", i, c->text,
                     c->status, c->line, c->column, c->needle, rc, err.line, err.column,
                     err.message);
        assert_null(s);
    }
}

/* A file the loader rules accept but whose ranks wait on each other forever. */
static void test_deadlock_rejected(void **state) {
    (void)state;
    vp_schedule *s = NULL;
    vp_error err = {0};
    /* rank 0's 0B0 waits for rank 1's last op, rank 1's first op waits for 0F1 */
    const char *text = "0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n";
    assert_int_equal(vp_torch_csv_read(text, strlen(text), NULL, &s, &err), VP_EDEADLOCK);
    assert_null(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_family),
        cmocka_unit_test(test_overlap_pairs),
        cmocka_unit_test(test_compute_comms_layout),
        cmocka_unit_test(test_unexportable),
        cmocka_unit_test(test_recompute_refused),
        cmocka_unit_test(test_schedule_names),
        cmocka_unit_test(test_accepts),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_deadlock_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
