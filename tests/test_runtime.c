/* The pipeline runtime: every family trains bit-identically to the single-rank
 * reference, measured peak activation bytes equal the simulator's prediction, the
 * paper's memory ratios hold on the real model, and failures stop every rank. */
#include <stdlib.h>

#include "test_util.h"
#include "vpipe/runtime.h"

static vp_data *data;

static int setup(void **state) {
    (void)state;
    vp_error err = {0};
    if (vp_data_load("/usr/share/common-licenses/GPL-3", 0.1, &data, &err) != VP_OK) {
        fprintf(stderr, "%s\n", err.message);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    vp_data_free(data);
    return 0;
}

/* A small model that splits over up to 8 stages; clipping on, so the gradient norm's
 * bits reach the parameters. */
static vp_pipeline_options small_options(int m) {
    vp_pipeline_options o;
    vp_pipeline_options_default(&o);
    o.train.model = (vp_model_config){
        .n_layer = 8, .width = 32, .n_head = 2, .seq_len = 16, .microbatch = 2, .vocab = 256};
    o.train.m = m;
    o.train.steps = 2;
    o.train.eval_batches = 2;
    o.train.clip = 0.5;
    return o;
}

static int build(const char *family, int p, int m, vp_schedule **s) {
    vp_spec spec = vp_spec_make(p, m);
    vp_error err = {0};
    return vp_family_build(family, &spec, s, &err) == VP_OK;
}

/* Every registered family, p in {2, 4}, m in {p, 2p, 4p} where the family takes m:
 * same losses and parameters as vp_train_run, and measured peaks = predicted. DualPipe
 * sums two replicas' gradients, which reorders a float sum: there the test asks for a
 * relative 1e-6 on the losses instead of equal bits (and says so through bit_exact). */
static void test_every_family_matches_reference(void **state) {
    (void)state;
    int runs = 0, exact_runs = 0;
    for (int p = 2; p <= 4; p += 2)
        for (int m = p; m <= 4 * p; m *= 2) {
            vp_pipeline_options o = small_options(m);
            vp_train_result ref;
            vp_error err = {0};
            assert_int_equal(vp_train_run(&o.train, data, NULL, NULL, &ref, &err), VP_OK);
            for (int f = 0; f < vp_family_count(); f++) {
                const char *name = vp_family_at(f)->name;
                vp_schedule *s = NULL;
                if (!build(name, p, m, &s))
                    continue; /* the family does not take this m (e.g. m < 2p) */
                o.schedule = s;
                vp_pipeline_result r;
                if (vp_pipeline_train(&o, data, NULL, NULL, &r, &err) != VP_OK)
                    fail_msg("%s p=%d m=%d: %s", name, p, m, err.message);
                if (r.bit_exact) {
                    if (r.train.param_digest != ref.param_digest ||
                        r.train.train_loss != ref.train_loss || r.train.val_loss != ref.val_loss)
                        fail_msg("%s p=%d m=%d: loss %.9g/%.9g vs %.9g/%.9g, digest differs=%d",
                                 name, p, m, r.train.train_loss, r.train.val_loss, ref.train_loss,
                                 ref.val_loss, r.train.param_digest != ref.param_digest);
                    exact_runs++;
                } else {
                    assert_string_equal(name, "dualpipe");
                    assert_true(fabs(r.train.train_loss - ref.train_loss) < 1e-6 * ref.train_loss);
                    assert_true(fabs(r.train.val_loss - ref.val_loss) < 1e-6 * ref.val_loss);
                }
                for (int d = 0; d < p; d++)
                    if ((double)r.peak_act_bytes[d] != r.predicted_peak_bytes[d])
                        fail_msg("%s p=%d m=%d rank %d: measured %zu bytes, predicted %.0f", name,
                                 p, m, d, r.peak_act_bytes[d], r.predicted_peak_bytes[d]);
                runs++;
                vp_pipeline_result_release(&r);
                vp_schedule_free(s);
            }
        }
    /* 14 families x 6 shapes, less the shapes V/DualPipe families refuse (m < 2p). */
    assert_true(runs >= 60);
    assert_true(exact_runs >= runs - 6);
}

/* Peak of the busiest rank for family at (p, m) on a model whose layers dominate the
 * embeddings and head. */
static size_t max_peak(const char *family, int p, int m, int layers) {
    vp_pipeline_options o = small_options(m);
    o.train.model.n_layer = layers;
    o.train.model.width = 64;
    o.train.model.seq_len = 32;
    o.train.steps = 1;
    vp_schedule *s = NULL;
    assert_true(build(family, p, m, &s));
    o.schedule = s;
    vp_pipeline_result r;
    vp_error err = {0};
    if (vp_pipeline_train(&o, data, NULL, NULL, &r, &err) != VP_OK)
        fail_msg("%s: %s", family, err.message);
    size_t peak = r.train.peak_act_bytes;
    vp_pipeline_result_release(&r);
    vp_schedule_free(s);
    return peak;
}

/* The paper's claims on this runtime: V-Half and V-Min hold within 10% of
 * floor((p+2)/2)/p and floor((p+4)/3)/p of 1F1B's activation memory. */
static void test_memory_ratios(void **state) {
    (void)state;
    for (int p = 4; p <= 8; p += 4) {
        int layers = 4 * p, m = 2 * p;
        double base = (double)max_peak("1f1b", p, m, layers);
        double half = max_peak("v-half", p, m, layers) / base;
        double min = max_peak("v-min", p, m, layers) / base;
        double want_half = (double)((p + 2) / 2) / p, want_min = (double)((p + 4) / 3) / p;
        fprintf(stderr, "p=%d: V-Half/1F1B %.3f (paper %.3f), V-Min/1F1B %.3f (paper %.3f)\n", p,
                half, want_half, min, want_min);
        assert_true(fabs(half - want_half) <= 0.1 * want_half);
        assert_true(fabs(min - want_min) <= 0.1 * want_min);
    }
}

static void test_split_layers(void **state) {
    (void)state;
    int l0[9];
    vp_error err = {0};
    assert_int_equal(vp_split_layers(6, 4, l0, &err), VP_OK);
    int want[5] = {0, 1, 3, 5, 6}; /* first and last take fewer */
    for (int k = 0; k <= 4; k++)
        assert_int_equal(l0[k], want[k]);
    assert_int_equal(vp_split_layers(7, 4, l0, &err), VP_OK);
    assert_int_equal(l0[1], 2); /* the extra beyond the middle goes to the first */
    assert_int_equal(l0[4], 7);
    assert_int_equal(vp_split_layers(2, 4, l0, &err), VP_OK); /* empty first and last */
    assert_int_equal(l0[1], 0);
    assert_int_equal(l0[4], 2);
    assert_int_equal(vp_split_layers(1, 4, l0, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "at least 2 layers"));
    assert_int_equal(vp_split_layers(5, 1, l0, &err), VP_OK);
    assert_int_equal(l0[1], 5);
}

static void test_invalid_schedule_refused(void **state) {
    (void)state;
    vp_pipeline_options o = small_options(4);
    vp_schedule *s = NULL;
    assert_true(build("1f1b", 2, 4, &s));
    s->dev[1].n--; /* a missing op */
    o.schedule = s;
    vp_pipeline_result r;
    vp_error err = {0};
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &r, &err), VP_EVALIDATION);
    assert_non_null(strstr(err.message, "missing"));
    s->dev[1].n++;
    o.train.m = 8; /* schedule and training disagree on m */
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &r, &err), VP_EINVAL);
    vp_schedule_free(s);
}

static void test_rank_failure_stops_everyone(void **state) {
    (void)state;
    vp_pipeline_options o = small_options(8);
    vp_schedule *s = NULL;
    assert_true(build("v-half", 4, 8, &s));
    o.schedule = s;
    o.train.faults.rank = 2;
    o.train.faults.step = 1;
    o.train.faults.op = 5;
    vp_pipeline_result r;
    vp_error err = {0};
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &r, &err), VP_ERUNTIME);
    assert_non_null(strstr(err.message, "rank 2: injected failure before op 5"));
    vp_schedule_free(s);
}

static void test_watchdog_names_every_rank(void **state) {
    (void)state;
    vp_pipeline_options o = small_options(4);
    vp_schedule *s = NULL;
    assert_true(build("1f1b", 4, 4, &s));
    o.schedule = s;
    o.train.faults.rank = 3;
    o.train.faults.step = 0;
    o.train.faults.op = 1;
    o.train.faults.stall = 1;
    o.watchdog_s = 0.3;
    vp_pipeline_result r;
    vp_error err = {0};
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &r, &err), VP_ERUNTIME);
    assert_non_null(strstr(err.message, "watchdog"));
    for (int d = 0; d < 4; d++) {
        char needle[16];
        snprintf(needle, sizeof needle, "rank %d: ", d);
        if (!strstr(err.message, needle))
            fail_msg("report lacks %s: %s", needle, err.message);
    }
    vp_schedule_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_layers),
        cmocka_unit_test(test_every_family_matches_reference),
        cmocka_unit_test(test_memory_ratios),
        cmocka_unit_test(test_invalid_schedule_refused),
        cmocka_unit_test(test_rank_failure_stops_everyone),
        cmocka_unit_test(test_watchdog_names_every_rank),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
