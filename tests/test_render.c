/* Renderers: golden terminal and SVG output, timeline numbers against the simulator,
 * Chrome trace contents, and timelines built by hand (as the runtime will). */
#include <stdlib.h>

#include <jansson.h>

#include "test_util.h"
#include "vpipe/render.h"
#include "vpipe/io.h"

/* Runs a renderer into a string (caller frees). */
typedef vp_status (*render_fn)(const vp_timeline *, const vp_render_opts *, char **, vp_error *);

static char *render(render_fn fn, const vp_timeline *tl, const vp_render_opts *o) {
    char *text = NULL;
    vp_error err = {0};
    if (fn(tl, o, &text, &err) != VP_OK)
        fail_msg("render: %s", err.message);
    assert_non_null(text);
    return text;
}

static vp_status trace_fn(const vp_timeline *tl, const vp_render_opts *o, char **out, vp_error *e) {
    (void)o;
    return vp_render_trace(tl, out, e);
}

static vp_timeline *timeline_of(const vp_schedule *s, vp_costs costs, vp_sim **sim_out) {
    vp_sim *sim = tu_sim(s, costs, NULL);
    vp_timeline *tl = NULL;
    assert_int_equal(vp_timeline_from_sim(s, sim, &tl, NULL), VP_OK);
    if (sim_out)
        *sim_out = sim;
    else
        vp_sim_free(sim);
    return tl;
}

/* Compares text with tests/golden/name; VP_UPDATE_GOLDEN=1 rewrites the file instead. */
static void golden(const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/golden/%s", VP_SOURCE_DIR, name);
    if (getenv("VP_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        return;
    }
    char *want = NULL;
    size_t len = 0;
    vp_error err = {0};
    if (vp_read_file(path, 0, &want, &len, &err) != VP_OK)
        fail_msg("%s (run with VP_UPDATE_GOLDEN=1 to create it)", err.message);
    if (strcmp(want, text)) {
        size_t i = 0;
        while (want[i] && want[i] == text[i])
            i++;
        fail_msg("%s differs from the output at byte %zu (VP_UPDATE_GOLDEN=1 rewrites it)\n"
                 "want: %.80s\ngot:  %.80s",
                 name, i, want + i, text + i);
    }
    free(want);
}

/* A V schedule on 2 ranks with overlapped F&B pairs, read from PyTorch CSV. */
static vp_schedule *overlap_schedule(void) {
    static const char text[] = "0F0,0F1,3F0,3I0,3W0,(3F1;0B0)OVERLAP_F_B,3B1,0I1,0W1\n"
                               "1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n";
    vp_schedule *s = NULL;
    assert_int_equal(vp_torch_csv_read(text, strlen(text), NULL, &s, NULL), VP_OK);
    return s;
}

/* Golden pictures; 1f1b-r is the one with R (a schedule without R draws no R). */
static void test_golden(void **state) {
    (void)state;
    static const char *const families[] = {"gpipe", "1f1b", "interleaved", "overlap", "1f1b-r"};
    vp_costs costs = vp_costs_default();
    vp_render_opts o = {.costs = &costs};
    char name[128];
    for (int i = 0; i < 5; i++) {
        vp_schedule *s = i != 3 ? tu_build(families[i], 4, 8, 0, costs) : overlap_schedule();
        vp_timeline *tl = timeline_of(s, costs, NULL);
        const char *fam = families[i];
        char *text = render(vp_render_ascii, tl, &o);
        snprintf(name, sizeof name, "%s_p%d_m%d.txt", fam, s->p, s->m);
        golden(name, text);
        free(text);
        text = render(vp_render_svg, tl, &o);
        snprintf(name, sizeof name, "%s_p%d_m%d.svg", fam, s->p, s->m);
        golden(name, text);
        free(text);
        if (i == 1) { /* colour and squeezed variants of one */
            vp_render_opts c = {.costs = &costs, .color = 1, .width = 80, .fit = 1};
            text = render(vp_render_ascii, tl, &c);
            golden("1f1b_p4_m8_color_fit.txt", text);
            free(text);
        }
        vp_timeline_free(tl);
        vp_schedule_free(s);
    }
}

static void test_gallery(void **state) {
    (void)state;
    vp_costs costs = tu_costs(1, 1, 1, 0);
    vp_timeline *tls[3];
    static const char *const families[] = {"gpipe", "1f1b", "interleaved"};
    for (int i = 0; i < 3; i++) {
        vp_schedule *s = tu_build(families[i], 4, 8, 0, costs);
        tls[i] = timeline_of(s, costs, NULL);
        vp_schedule_free(s);
    }
    char *buf = NULL;
    vp_render_opts o = {.costs = &costs};
    assert_int_equal(vp_render_svg_gallery((const vp_timeline *const *)tls, 3, &o, &buf, NULL),
                     VP_OK);
    golden("gallery_p4_m8.svg", buf);
    /* one time scale: gpipe's makespan line sits right of 1f1b's at the same ratio */
    assert_non_null(strstr(buf, "vpipe compare"));
    free(buf);
    buf = (char *)"untouched";
    assert_int_equal(vp_render_svg_gallery((const vp_timeline *const *)tls, 0, &o, &buf, NULL),
                     VP_EINVAL);
    assert_null(buf); /* a failed renderer hands back nothing */
    for (int i = 0; i < 3; i++)
        vp_timeline_free(tls[i]);
}

/* Timeline numbers equal the simulator's over a grid of families, shapes and costs. */
static void test_stats_match_sim(void **state) {
    (void)state;
    static const int ps[] = {1, 2, 3, 4, 7};
    static const int ms[] = {1, 3, 4, 8, 13};
    vp_costs grid[3] = {tu_costs(1, 1, 1, 0), tu_costs(1, 2, 0.5, 0.25), tu_costs(2, 3, 1, 1)};
    for (int fi = 0; fi < vp_family_count(); fi++)
        for (size_t a = 0; a < sizeof ps / sizeof *ps; a++)
            for (size_t b = 0; b < sizeof ms / sizeof *ms; b++)
                for (int c = 0; c < 3; c++) {
                    vp_spec spec = vp_spec_make(ps[a], ms[b]);
                    spec.costs = grid[c];
                    vp_schedule *s = NULL;
                    if (vp_family_build(vp_family_at(fi)->name, &spec, &s, NULL) != VP_OK)
                        continue;
                    vp_sim *sim;
                    vp_timeline *tl = timeline_of(s, grid[c], &sim);
                    vp_timeline_stats st;
                    vp_timeline_stats_get(tl, &st);
                    TU_NEAR(st.makespan, sim->makespan);
                    TU_NEAR(st.bubble, sim->bubble);
                    TU_NEAR(st.bubble_makespan, sim->bubble_makespan);
                    TU_NEAR(st.peak_max, sim->peak_max);
                    assert_int_equal(st.chunks, vp_schedule_chunks_per_device(s));
                    /* the terminal picture fits its width and has one row per device and band */
                    vp_render_opts o = {.width = 60 + 10 * c};
                    char *text = render(vp_render_ascii, tl, &o);
                    int rows = 0;
                    for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
                        if (nl - line > o.width)
                            fail_msg("line wider than %d: %.*s", o.width, (int)(nl - line), line);
                        rows += line[0] == 'd' && strspn(line + 1, "0123456789") > 0 &&
                                strncmp(line + 1 + strspn(line + 1, "0123456789"), " |", 2) == 0;
                    }
                    assert_int_equal(rows % s->p, 0);
                    assert_true(rows >= s->p);
                    assert_null(strchr(text, '\033')); /* no colour unless asked */
                    char want[64];
                    snprintf(want, sizeof want, "bubble %.2f%%", 100 * sim->bubble);
                    assert_non_null(strstr(text, want));
                    free(text);
                    vp_timeline_free(tl);
                    vp_sim_free(sim);
                    vp_schedule_free(s);
                }
}

/* Every op is one slice in the trace, in order, with its pass in args and its times. */
static void test_trace(void **state) {
    (void)state;
    vp_costs costs = tu_costs(1, 2, 1, 0.5);
    for (int i = 0; i < 3; i++) { /* the third recomputes: its R slices are named R */
        vp_schedule *s = i == 1 ? overlap_schedule() : tu_build("interleaved", 3, 6, 2, costs);
        if (i == 2) {
            vp_schedule *r = NULL;
            assert_int_equal(vp_schedule_recompute(s, VP_RECOMPUTE_SELECTIVE, &r, NULL), VP_OK);
            vp_schedule_free(s);
            s = r;
        }
        vp_sim *sim;
        vp_timeline *tl = timeline_of(s, costs, &sim);
        char *text = render(trace_fn, tl, NULL);
        json_error_t jerr;
        json_t *root = json_loads(text, 0, &jerr);
        if (!root)
            fail_msg("trace is not JSON: %s at %d:%d", jerr.text, jerr.line, jerr.column);
        json_t *events = json_object_get(root, "traceEvents");
        int *seen = calloc((size_t)s->p, sizeof(int));
        int counters = 0;
        size_t k;
        json_t *e;
        json_array_foreach(events, k, e) {
            const char *ph = json_string_value(json_object_get(e, "ph"));
            int d = (int)json_integer_value(json_object_get(e, "pid"));
            assert_true(d >= 0 && d < s->p);
            if (!strcmp(ph, "C")) {
                counters++;
                continue;
            }
            if (strcmp(ph, "X"))
                continue;
            assert_true(seen[d] < s->dev[d].n);
            const vp_op *op = &s->dev[d].ops[seen[d]];
            json_t *args = json_object_get(e, "args");
            assert_string_equal(json_string_value(json_object_get(args, "kind")),
                                vp_op_kind_name((vp_op_kind)op->kind));
            assert_int_equal(json_integer_value(json_object_get(args, "stage")), op->stage);
            assert_int_equal(json_integer_value(json_object_get(args, "microbatch")), op->mb);
            assert_int_equal(json_integer_value(json_object_get(args, "chunk")),
                             s->stage_chunk[op->stage]);
            if (op->kind == VP_OP_FB)
                assert_int_equal(json_integer_value(json_object_get(args, "microbatch2")), op->mb2);
            if (op->kind == VP_OP_R)
                assert_string_equal(json_string_value(json_object_get(e, "cname")), "terrible");
            assert_true(fabs(json_number_value(json_object_get(e, "ts")) -
                             1000 * sim->start[d][seen[d]]) < 1e-3);
            assert_true(fabs(json_number_value(json_object_get(e, "dur")) -
                             1000 * (sim->end[d][seen[d]] - sim->start[d][seen[d]])) < 1e-3);
            seen[d]++;
        }
        long ops = 0;
        for (int d = 0; d < s->p; d++) {
            assert_int_equal(seen[d], s->dev[d].n);
            ops += s->dev[d].n;
        }
        assert_int_equal(counters, ops + s->p); /* one per op plus a zero at each start */
        free(seen);
        json_decref(root);
        free(text);
        vp_timeline_free(tl);
        vp_sim_free(sim);
        vp_schedule_free(s);
    }
}

/* Every op of an SVG picture carries one title (its hover text) naming its pass, stage,
 * microbatch, device, start and end, in the device's order; each memory strip one with its
 * peak; the picture's dark style is present. */
static void test_svg_titles(void **state) {
    (void)state;
    vp_costs costs = tu_costs(1, 2, 1, 0.5);
    for (int i = 0; i < 2; i++) {
        vp_schedule *s = i ? overlap_schedule() : tu_build("interleaved", 3, 6, 2, costs);
        vp_sim *sim;
        vp_timeline *tl = timeline_of(s, costs, &sim);
        char *text = render(vp_render_svg, tl, NULL), *at = text;
        assert_non_null(strstr(text, "@media (prefers-color-scheme: dark)"));
        for (int d = 0; d < s->p; d++) {
            for (int j = 0; j < s->dev[d].n; j++) {
                const vp_op *op = &s->dev[d].ops[j];
                char want[160];
                int n = snprintf(want, sizeof want, "<g><title>%s stage %d, microbatch %d",
                                 op->kind == VP_OP_FB ? "F" : vp_op_kind_name((vp_op_kind)op->kind),
                                 op->stage, op->mb);
                if (op->kind == VP_OP_FB)
                    n += snprintf(want + n, sizeof want - (size_t)n,
                                  " with %s stage %d, microbatch %d",
                                  vp_op_kind_name((vp_op_kind)op->bkind), op->stage2, op->mb2);
                snprintf(want + n, sizeof want - (size_t)n, "; device %d, %g to %g</title>", d,
                         sim->start[d][j], sim->end[d][j]);
                at = strstr(at, want);
                if (!at)
                    fail_msg("no title \"%s\" after the previous op's", want);
            }
            char strip[96];
            snprintf(strip, sizeof strip,
                     "<g><title>device %d: memory (units) after each op, peak %.4g", d,
                     sim->peak[d]);
            at = strstr(at, strip);
            if (!at)
                fail_msg("no memory title \"%s\"", strip);
        }
        free(text);
        vp_timeline_free(tl);
        vp_sim_free(sim);
        vp_schedule_free(s);
    }
}

/* A timeline filled by hand, as the runtime will: no memory, seconds, odd names. */
static void test_measured_timeline(void **state) {
    (void)state;
    vp_timeline *tl = NULL;
    assert_int_equal(vp_timeline_new("run <1> & \"x\"", 2, 2, 1, &tl, NULL), VP_OK);
    tl->trace_us = 1e6;
    vp_slice f0 = {{VP_OP_F, 0, 0, 0, 0, 0}, 0.0, 0.010, 0};
    vp_slice f1 = {{VP_OP_F, 0, 1, 0, 0, 0}, 0.011, 0.020, 0};
    vp_slice b1 = {{VP_OP_BW, 0, 1, 0, 0, 0}, 0.020, 0.041, 0};
    vp_slice b0 = {{VP_OP_BW, 0, 0, 0, 0, 0}, 0.042, 0.060, 0};
    assert_int_equal(vp_timeline_add(tl, 0, f0, NULL), VP_OK);
    assert_int_equal(vp_timeline_add(tl, 1, f1, NULL), VP_OK);
    assert_int_equal(vp_timeline_add(tl, 1, b1, NULL), VP_OK);
    assert_int_equal(vp_timeline_add(tl, 0, b0, NULL), VP_OK);
    vp_error err = {0};
    assert_int_equal(vp_timeline_add(tl, 2, f0, &err), VP_EINVAL);
    vp_slice bad = {{VP_OP_F, 0, 0, 0, 0, 0}, 1.0, 0.5, 0};
    assert_int_equal(vp_timeline_add(tl, 0, bad, &err), VP_EINVAL);

    vp_timeline_stats st;
    vp_timeline_stats_get(tl, &st);
    TU_NEAR(st.makespan, 0.060);
    TU_NEAR(st.bubble, 1 - (0.028 + 0.030) / 2 / 0.060);

    char *text = render(vp_render_ascii, tl, NULL);
    assert_null(strstr(text, "peak"));
    assert_non_null(strstr(text, "d0 |F0 ..........BW0  |"));
    free(text);
    text = render(vp_render_svg, tl, NULL);
    assert_non_null(strstr(text, "run &lt;1&gt; &amp; &quot;x&quot;"));
    assert_null(strstr(text, "run <1>"));
    assert_null(strstr(text, "peak"));
    free(text);
    text = render(trace_fn, tl, NULL);
    json_t *root = json_loads(text, 0, NULL);
    assert_non_null(root);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(root, "otherData"), "family")),
        "run <1> & \"x\"");
    assert_null(strstr(text, "\"C\""));
    assert_non_null(strstr(text, "\"ts\":42000.000,\"dur\":18000.000"));
    json_decref(root);
    free(text);
    vp_timeline_free(tl);
    assert_int_equal(vp_timeline_new(NULL, 0, 1, 1, &tl, NULL), VP_EINVAL);
    assert_null(tl);
    vp_timeline_free(NULL);
}

static void test_narrow_width(void **state) {
    (void)state;
    vp_schedule *s = tu_build("1f1b", 12, 4, 0, vp_costs_default());
    vp_timeline *tl = timeline_of(s, vp_costs_default(), NULL);
    vp_render_opts o = {.width = 12};
    vp_error err = {0};
    char *text = (char *)"untouched";
    assert_int_equal(vp_render_ascii(tl, &o, &text, &err), VP_EINVAL);
    assert_null(text);
    assert_non_null(strstr(err.message, "too narrow"));
    vp_timeline_free(tl);
    vp_schedule_free(s);
}

/* A training log cut where a resumed run continues it: the lines of earlier steps kept as
 * they were (blank ones dropped), the later ones counted; what is not a log refused. */
static void test_loss_log_cut(void **state) {
    (void)state;
    const char *log = "{\"step\":1,\"loss\":3}\n\n{\"step\":2, \"loss\":2.5}\n"
                      "{\"step\":4,\"loss\":2}\n{\"step\":5,\"loss\":1.5}";
    char *kept = NULL;
    int dropped = -1;
    vp_error err = {0};
    assert_int_equal(vp_render_loss_cut(log, strlen(log), "a.log", 4, &kept, &dropped, &err),
                     VP_OK);
    assert_string_equal(kept, "{\"step\":1,\"loss\":3}\n{\"step\":2, \"loss\":2.5}\n");
    assert_int_equal(dropped, 2);
    vp_free(kept);
    assert_int_equal(vp_render_loss_cut(log, strlen(log), "a.log", 9, &kept, &dropped, &err),
                     VP_OK);
    assert_int_equal(dropped, 0);
    assert_int_equal((int)strlen(kept), (int)strlen(log)); /* the blank line out, a newline in */
    vp_free(kept);
    assert_int_equal(vp_render_loss_cut("", 0, "a.log", 1, &kept, &dropped, &err), VP_OK);
    assert_string_equal(kept, "");
    vp_free(kept);
    const char *bad = "{\"step\":2}\n{\"step\":1}\n";
    assert_int_equal(vp_render_loss_cut(bad, strlen(bad), "b.log", 3, &kept, &dropped, &err),
                     VP_EPARSE);
    assert_null(kept);
    assert_string_equal(err.message, "b.log:2: step 1 after step 2 (the steps must grow)");
    const char nul[] = "{\"step\":5\0,\"loss\":1}\n"; /* jansson alone reads \0 as a space */
    assert_int_equal(vp_render_loss_cut(nul, sizeof nul - 1, "c.log", 9, &kept, &dropped, &err),
                     VP_EPARSE);
    assert_string_equal(err.message, "c.log:1: not a JSON object (a NUL byte)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),          cmocka_unit_test(test_gallery),
        cmocka_unit_test(test_stats_match_sim), cmocka_unit_test(test_trace),
        cmocka_unit_test(test_svg_titles),      cmocka_unit_test(test_measured_timeline),
        cmocka_unit_test(test_narrow_width),    cmocka_unit_test(test_loss_log_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
