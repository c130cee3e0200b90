/* The string API (request.h): every call answers what the object-level calls answer for
 * the same request, its options are checked with errors naming them, failures leave no
 * result and leak nothing (the sanitizer build runs this too). */
#include <stdlib.h>

#include <jansson.h>

#include "test_util.h"
#include "vpipe/render.h"
#include "vpipe/request.h"

static const char *const COSTS = "F=2,B=3,W=1,c=0.5";

/* The schedule and its simulation built with the object-level API. */
static vp_schedule *direct_build(const char *family, int p, int m, vp_costs *costs) {
    vp_error err = {0};
    *costs = vp_costs_default();
    assert_int_equal(vp_costs_parse(COSTS, costs, &err), VP_OK);
    return tu_build(family, p, m, 0, *costs);
}

static vp_schedule *request_build(const char *options) {
    vp_schedule *s = NULL;
    vp_error err = {0};
    if (vp_request_schedule(options, &s, &err) != VP_OK)
        fail_msg("%s: %s", options, err.message);
    return s;
}

static void test_schedule_and_simulate(void **state) {
    (void)state;
    const char *families[] = {"1f1b", "zb-2p", "v-half", "interleaved", "dualpipev"};
    for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
        char options[256];
        snprintf(options, sizeof options,
                 "{\"family\": \"%s\", \"p\": 4, \"m\": 8, \"costs\": \"%s\"}", families[i], COSTS);
        vp_costs costs;
        vp_schedule *want = direct_build(families[i], 4, 8, &costs);
        vp_schedule *got = request_build(options);
        assert_true(vp_schedule_equal(want, got));
        vp_sim *sim = tu_sim(want, costs, NULL);
        char *report = NULL, *direct = NULL;
        vp_error err = {0};
        assert_int_equal(vp_request_simulate(got, options, &report, &err), VP_OK);
        assert_int_equal(vp_sim_json(want, sim, &costs, &direct, &err), VP_OK);
        assert_string_equal(report, direct);
        assert_non_null(strstr(report, "\"makespan\""));
        free(report);
        free(direct);
        vp_sim_free(sim);
        vp_schedule_free(want);
        vp_schedule_free(got);
    }
}

static void test_render(void **state) {
    (void)state;
    vp_costs costs;
    vp_schedule *s = direct_build("zb-h1", 3, 6, &costs);
    vp_sim *sim = tu_sim(s, costs, NULL);
    vp_timeline *tl = NULL;
    vp_error err = {0};
    assert_int_equal(vp_timeline_from_sim(s, sim, &tl, &err), VP_OK);
    vp_render_opts ro = {.costs = &costs, .title = "T", .width = 40, .fit = 1};
    const char *options = "{\"costs\": \"F=2,B=3,W=1,c=0.5\", \"title\": \"T\", \"width\": 40, "
                          "\"fit\": true}";
    const char *formats[] = {"svg", "ascii", "trace"};
    for (int i = 0; i < 3; i++) {
        char *want = NULL, *got = NULL;
        vp_status st = i == 0   ? vp_render_svg(tl, &ro, &want, &err)
                       : i == 1 ? vp_render_ascii(tl, &ro, &want, &err)
                                : vp_render_trace(tl, &want, &err);
        assert_int_equal(st, VP_OK);
        assert_int_equal(vp_request_render(s, formats[i], options, &got, &err), VP_OK);
        assert_string_equal(got, want);
        free(want);
        free(got);
    }
    char *text = (char *)"untouched";
    assert_int_equal(vp_request_render(s, "png", NULL, &text, &err), VP_EINVAL);
    assert_null(text);
    assert_string_equal(err.message, "unknown picture format 'png' (svg, ascii or trace)");
    vp_timeline_free(tl);
    vp_sim_free(sim);
    vp_schedule_free(s);
}

static void test_plan(void **state) {
    (void)state;
    vp_spec spec = vp_spec_make(6, 12);
    vp_budget budget = {.kind = VP_BUDGET_FRACTION, .value = 0.6};
    vp_plan *plan = NULL;
    vp_error err = {0};
    assert_int_equal(vp_costs_parse(COSTS, &spec.costs, &err), VP_OK);
    assert_int_equal(vp_plan_run(&spec, &budget, &plan, &err), VP_OK);
    vp_sim *sim = tu_sim(plan->schedule, spec.costs, NULL);
    char *want = NULL, *got = NULL;
    assert_int_equal(vp_plan_json(plan, sim, &spec.costs, &want, &err), VP_OK);
    vp_schedule *chosen = NULL;
    const char *options = "{\"p\": 6, \"m\": 12, \"memory\": \"0.6\", \"costs\": "
                          "\"F=2,B=3,W=1,c=0.5\", \"threads\": 2}";
    assert_int_equal(vp_request_plan(options, &got, &chosen, &err), VP_OK);
    assert_string_equal(got, want);
    assert_true(vp_schedule_equal(chosen, plan->schedule));
    free(got);
    assert_int_equal(vp_request_plan(options, &got, NULL, &err), VP_OK); /* chosen optional */
    assert_string_equal(got, want);
    free(got);
    free(want);
    vp_schedule_free(chosen);
    vp_sim_free(sim);
    vp_plan_free(plan);
    chosen = (vp_schedule *)&err;
    assert_int_equal(
        vp_request_plan("{\"p\": 4, \"m\": 8, \"memory\": \"0.01\"}", &got, &chosen, &err),
        VP_EINVAL);
    assert_null(got);
    assert_null(chosen);
    assert_int_equal(vp_request_plan("{\"p\": 4, \"m\": 8}", &got, NULL, &err), VP_EINVAL);
    assert_string_equal(err.message, "option 'memory' is required");
}

static void test_price(void **state) {
    (void)state;
    const char *setup = "\"model\": \"llama2-7b\", \"gpu\": \"h100-80gb\", \"seq\": 4096, "
                        "\"tp\": 2, \"sp\": true, \"recompute\": \"selective\", \"split\": "
                        "\"even\"";
    char options[512];
    snprintf(options, sizeof options, "{\"family\": \"v-half\", \"p\": 4, \"m\": 8, %s}", setup);
    char *by_family = NULL, *by_schedule = NULL;
    vp_schedule *built = NULL;
    vp_error err = {0};
    assert_int_equal(vp_request_price(NULL, options, &by_family, &built, &err), VP_OK);
    assert_non_null(built);
    assert_int_equal(vp_request_price(built, options, &by_schedule, NULL, &err), VP_OK);
    assert_string_equal(by_family, by_schedule); /* the schedule priced is the one built */
    assert_non_null(strstr(by_family, "\"layers_per_stage\": [4, 4, 4, 4, 4, 4, 4, 4]"));
    free(by_family);
    free(by_schedule);
    vp_schedule_free(built);

    const char *bad[][2] = {
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"gpu\": \"h100-80gb\"}",
         "option 'model' is required"},
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"model\": \"llama2-7b\", \"gpu\": 3}",
         "option 'gpu' must be a string"},
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"model\": \"llama2-7b\", \"gpu\": "
         "\"h100-80gb\", \"layers_per_stage\": [8, \"x\"]}",
         "option 'layers_per_stage' must be an array of integers"},
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"model\": \"llama2-7b\", \"gpu\": "
         "\"h100-80gb\", \"layers_per_stage\": [8, 8]}",
         ""},
        {"{\"p\": 4, \"m\": 8, \"model\": \"llama2-7b\", \"gpu\": \"h100-80gb\"}",
         "option 'family' is required"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        built = (vp_schedule *)&err;
        by_family = (char *)"untouched";
        assert_int_equal(vp_request_price(NULL, bad[i][0], &by_family, &built, &err), VP_EINVAL);
        assert_null(by_family);
        assert_null(built);
        assert_true(strncmp(err.message, bad[i][1], strlen(bad[i][1])) == 0);
    }
}

/* Options that fail: the status and the start of the message. */
static void test_option_errors(void **state) {
    (void)state;
    const struct {
        const char *options;
        vp_status status;
        const char *message;
    } bad[] = {
        {"{\"family\": \"1f1b\", \"p\": 4", VP_EPARSE, "options: "},
        {"[1, 2]", VP_EINVAL, "options: not a JSON object"},
        {"{\"family\": \"1f1b\", \"p\": 4, \"p\": 5, \"m\": 8}", VP_EPARSE, "options: "},
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"colour\": true}", VP_EINVAL,
         "unknown option 'colour'"},
        {"{\"family\": \"1f1b\", \"p\": 4.5, \"m\": 8}", VP_EINVAL,
         "option 'p' must be an integer in [1, 2147483647]"},
        {"{\"family\": \"1f1b\", \"p\": \"4\", \"m\": 8}", VP_EINVAL, "option 'p' must be"},
        {"{\"family\": \"1f1b\", \"m\": 8}", VP_EINVAL, "option 'p' is required"},
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"memory_limit\": -1}", VP_EINVAL,
         "option 'memory_limit' must be a number in [0, inf]"},
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"costs\": \"F=x\"}", VP_EPARSE,
         "option 'costs': column 3: "},
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"costs\": {\"F\": 1}}", VP_EINVAL,
         "option 'costs' must be a string"},
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"memory_model\": \"zb\"}", VP_EPARSE,
         "option 'memory_model': "},
        {"{\"family\": \"nope\", \"p\": 4, \"m\": 8}", VP_EINVAL,
         "unknown family 'nope' (vpipe list)"},
        {"{\"family\": \"gpipee\", \"p\": 4, \"m\": 8}", VP_EINVAL,
         "unknown family 'gpipee' (did you mean 'gpipe'? vpipe list)"},
        {"{\"family\": \"1f1b\", \"p\": 4, \"m\": 8, \"max_ops\": 10}", VP_ELIMIT, ""},
        {"{\"family\": \"dualpipe\", \"p\": 3, \"m\": 8}", VP_EINVAL, "dualpipe needs an even p"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        vp_schedule *s = (vp_schedule *)&bad;
        vp_error err = {0};
        assert_int_equal(vp_request_schedule(bad[i].options, &s, &err), bad[i].status);
        assert_null(s);
        if (strncmp(err.message, bad[i].message, strlen(bad[i].message)) != 0)
            fail_msg("%s: '%s', not '%s...'", bad[i].options, err.message, bad[i].message);
    }
    vp_error err = {0};
    vp_schedule *s = NULL;
    assert_int_equal(vp_request_schedule("{\"family\": \"1f1b\",\n \"p\": x}", &s, &err),
                     VP_EPARSE);
    assert_int_equal(err.line, 2);
    assert_true(err.column > 0);
    /* NULL and "" are {}: a simulation under the defaults */
    vp_schedule *one = request_build("{\"family\": \"1f1b\", \"p\": 2, \"m\": 2}");
    char *a = NULL, *b = NULL;
    assert_int_equal(vp_request_simulate(one, NULL, &a, &err), VP_OK);
    assert_int_equal(vp_request_simulate(one, "", &b, &err), VP_OK);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "\"F\": 1.0"));
    free(a);
    free(b);
    vp_schedule_free(one);
}

/* vp_schedule_parse: the format by content, blank text refused, validation applied. */
static void test_schedule_parse(void **state) {
    (void)state;
    vp_schedule *s = tu_build("zb-v", 4, 8, 0, vp_costs_default());
    char *json = NULL, *csv = NULL;
    vp_error err = {0};
    assert_int_equal(vp_json_write(s, &json, &err), VP_OK);
    assert_int_equal(vp_torch_csv_write(s, VP_TORCH_CSV_COMPUTE_ONLY, &csv, &err), VP_OK);
    vp_schedule *from_json = NULL, *from_csv = NULL;
    assert_int_equal(vp_schedule_parse(json, strlen(json), &from_json, &err), VP_OK);
    assert_true(vp_schedule_equal(s, from_json));
    assert_int_equal(vp_schedule_parse(csv, strlen(csv), &from_csv, &err), VP_OK);
    assert_string_equal(from_csv->family, "custom");
    assert_int_equal(from_csv->m, 8);
    vp_schedule *none = (vp_schedule *)&err;
    assert_int_equal(vp_schedule_parse(" \n\t", 3, &none, &err), VP_EPARSE);
    assert_null(none);
    assert_string_equal(err.message, "is empty");
    /* valid JSON structure, invalid schedule: device 0 loses its last op ',[kind,s,j]' */
    char *end = strstr(json, "]]"), *start = end;
    assert_non_null(end);
    while (start > json && strncmp(start, ",[", 2) != 0)
        start--;
    memmove(start, end + 1, strlen(end + 1) + 1);
    assert_int_equal(vp_schedule_parse(json, strlen(json), &none, &err), VP_EVALIDATION);
    assert_null(none);
    free(json);
    free(csv);
    vp_schedule_free(from_json);
    vp_schedule_free(from_csv);
    vp_schedule_free(s);
}

/* vp_request_call's answer: the reply's JSON form, and refusals naming the option. */
static void test_call(void **state) {
    (void)state;
    char *reply = NULL;
    vp_error err = {0};
    /* a file to write is a file of the reply, not stdout */
    assert_int_equal(vp_request_call("schedule",
                                     "{\"operand\": \"1f1b\", \"p\": 2, \"m\": 2, \"output\": "
                                     "\"x.json\", \"format\": \"text\"}",
                                     &reply, &err),
                     VP_OK);
    json_t *r = json_loads(reply, 0, NULL);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "stdout")), "");
    json_t *file = json_array_get(json_object_get(r, "files"), 0);
    assert_string_equal(json_string_value(json_object_get(file, "path")), "x.json");
    assert_non_null(strstr(json_string_value(json_object_get(file, "text")), "device 0: F0.0"));
    assert_int_equal(json_integer_value(json_object_get(r, "exit")), 0);
    json_decref(r);
    vp_free(reply);
    /* refusals */
    const char *bad[][3] = {
        {"nope", "{}", "unknown command 'nope'"},
        {"simulate", "{\"svg\": \"x\"}", "simulate takes no option 'svg'"},
        {"simulate", "{\"colour\": true}", "unknown option 'colour'"},
        {"simulate", "{\"recompte\": \"full\"}",
         "unknown option 'recompte' (did you mean 'recompute'?)"},
        {"plan", "{\"global_bach\": 8}",
         "unknown option 'global_bach' (did you mean 'global_batch'?)"},
        {"simulat", "{}", "unknown command 'simulat' (did you mean 'simulate'?)"},
        {"simulate", "{\"operand\": \"1fb1\", \"p\": 4, \"m\": 8}",
         "'1fb1' is neither a family nor a file (did you mean '1f1b'? vpipe list)"},
        {"simulate", "{\"operand\": \"1f1b\", \"p\": 4, \"m\": 8, \"model\": \"llama3-8\"}",
         "option 'model' llama3-8: unknown model 'llama3-8' (did you mean 'llama3-8b'? known: "},
        {"simulate",
         "{\"operand\": \"1f1b\", \"p\": 4, \"m\": 8, \"model\": \"llama3-8b\", \"gpu\": "
         "\"h100-80g\"}",
         "option 'gpu' h100-80g: unknown accelerator 'h100-80g' (did you mean 'h100-80gb'? "
         "known: "},
        {"simulate", "{\"p\": \"4\"}", "option 'p' must be an integer in [1, 2147483647]"},
        {"simulate", "{\"recompute\": \"half\"}",
         "option 'recompute': unknown recomputation 'half' (none, selective or full)"},
        {"model", "{\"operand\": [\"show\", 3]}",
         "option 'operand' must be a string or an array of two strings"},
        {"simulate", "{\"operand\": \"1f1b\", \"p\": 4, \"m\": 8, \"tp\": 2}",
         "option 'tp' needs option 'model' (the model it describes)"},
        {"simulate", "{\"operand\": \"1f1b\", \"p\": 4, \"m\": 8, \"cost\": \"F=x\"}",
         "option 'cost' 'F=x': column 3: "},
        {"simulate", "{\"operand\": \"1f1b\", \"p\": 4, \"m\": 8, \"cost_file\": \"p.json\"}",
         "option 'cost_file' needs libvpipe-runtime"},
        {"model", "{\"operand\": \"list\", \"tp\": 2}", "model list takes no option 'tp'"},
        {"plan", "{\"model\": \"gpt2-124m\", \"gpus\": 8, \"global_batch\": 32, \"max_ops\": 9}",
         "option 'max_ops' does not apply with option 'model'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        reply = (char *)"untouched";
        if (vp_request_call(bad[i][0], bad[i][1], &reply, &err) == VP_OK ||
            strncmp(err.message, bad[i][2], strlen(bad[i][2])))
            fail_msg("%s %s: '%s'", bad[i][0], bad[i][1], err.message);
        assert_null(reply);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_call),           cmocka_unit_test(test_schedule_and_simulate),
        cmocka_unit_test(test_render),         cmocka_unit_test(test_plan),
        cmocka_unit_test(test_price),          cmocka_unit_test(test_option_errors),
        cmocka_unit_test(test_schedule_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
