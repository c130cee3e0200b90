/* The pipeline runtime: every family trains bit-identically to the single-rank
 * reference, measured peak activation bytes equal the simulator's prediction, the
 * paper's memory ratios hold on the real model, and failures stop every rank. */
#include <stdlib.h>
#include <unistd.h>

#include "test_data.h"
#include "test_util.h"
#include "vpipe/runtime.h"

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

/* Measured = predicted for every rank and category (vp_runtime_predict_memory). */
static void expect_memory_predicted(const char *what, const vp_pipeline_result *r) {
    for (int d = 0; d < r->p; d++) {
        if ((double)r->peak_act_bytes[d] != r->predicted_peak_bytes[d])
            fail_msg("%s rank %d: measured %zu activation bytes, predicted %.0f", what, d,
                     r->peak_act_bytes[d], r->predicted_peak_bytes[d]);
        for (int c = 0; c < VP_MEM_CATEGORIES; c++) {
            double got = r->memory[d * VP_MEM_CATEGORIES + c];
            double want = r->predicted_memory[d * VP_MEM_CATEGORIES + c];
            if (got != want)
                fail_msg("%s rank %d: measured %.0f %s bytes, predicted %.0f", what, d, got,
                         vp_mem_category_name((vp_mem_category)c), want);
        }
        assert_true(r->memory[d * VP_MEM_CATEGORIES + VP_MEM_PARAMS] > 0);
    }
}

/* Trains with o on schedule s and checks the result r against the reference's: the same
 * losses and parameters when bit-exactness is expected (DualPipe: within a relative
 * 1e-6), and every rank's measured bytes as predicted, every category. Returns whether the run was
 * bit-exact. */
static bool check_run(const char *what, vp_pipeline_options *o, vp_schedule *s,
                      const vp_train_result *ref, vp_pipeline_result *r) {
    vp_error err = {0};
    o->schedule = s;
    if (vp_pipeline_train(o, data, NULL, NULL, r, &err) != VP_OK)
        fail_msg("%s: %s", what, err.message);
    if (r->bit_exact &&
        (r->train.param_digest != ref->param_digest || r->train.train_loss != ref->train_loss ||
         r->train.val_loss != ref->val_loss))
        fail_msg("%s: loss %.9g/%.9g vs %.9g/%.9g, digest differs=%d", what, r->train.train_loss,
                 r->train.val_loss, ref->train_loss, ref->val_loss,
                 r->train.param_digest != ref->param_digest);
    if (!r->bit_exact) {
        assert_string_equal(s->family, "dualpipe");
        assert_true(fabs(r->train.train_loss - ref->train_loss) < 1e-6 * ref->train_loss);
        assert_true(fabs(r->train.val_loss - ref->val_loss) < 1e-6 * ref->val_loss);
    }
    expect_memory_predicted(what, r);
    return r->bit_exact;
}

/* check_run, the result released: whether the run was bit-exact. */
static int run_matches(const char *what, vp_pipeline_options o, vp_schedule *s,
                       const vp_train_result *ref) {
    vp_pipeline_result r;
    int exact = check_run(what, &o, s, ref, &r);
    vp_pipeline_result_release(&r);
    return exact;
}

/* The runs of one family's schedule s at m = 2p under the memory and time splits
 * (vp_runtime_split), without and with full recomputation. */
static void split_variants(vp_pipeline_options o, const vp_schedule *s, const vp_train_result *ref,
                           int *runs, int *exact) {
    static const vp_split_goal goals[] = {VP_SPLIT_MEMORY, VP_SPLIT_TIME};
    int l0[2 * 4 + 1];
    for (int g = 0; g < 2; g++) {
        assert_int_equal(vp_runtime_split(s, &o.train.model, goals[g], l0, NULL), VP_OK);
        assert_int_equal(vp_split_check(o.train.model.n_layer, s->route_len, l0, NULL), VP_OK);
        o.layer_start = l0;
        for (int rc = VP_RECOMPUTE_NONE; rc <= VP_RECOMPUTE_FULL; rc += 2) {
            vp_schedule *x = NULL;
            assert_int_equal(vp_schedule_recompute(s, (vp_recompute)rc, &x, NULL), VP_OK);
            char what[96];
            snprintf(what, sizeof what, "%s p=%d m=%d split %s recompute %s", s->family, s->p, s->m,
                     g ? "time" : "memory", vp_recompute_name((vp_recompute)rc));
            *exact += run_matches(what, o, x, ref);
            (*runs)++;
            vp_schedule_free(x);
        }
    }
}

/* s offloading share under policy, placed with unit costs (copies as long as forwards). */
static vp_schedule *offloaded(const vp_schedule *s, vp_offload_policy policy, double share) {
    vp_offload spec = {.policy = policy, .share = share};
    vp_costs costs = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_schedule *out = NULL;
    vp_error err = {0};
    if (vp_schedule_offload(s, &costs, &mem, &spec, &out, &err) != VP_OK)
        fail_msg("offload %s: %s", s->family, err.message);
    return out;
}

/* Offload changes no bit: 1F1B, V-Half, ZB-H1 and interleaved at p in {2, 4}, m = 2p,
 * both policies at shares 1/2 and 1, with and without full recomputation, give the
 * reference's losses and parameters, and every rank's device and host bytes are as
 * predicted, category by category. Offloading everything that pays, 1F1B's rank 0 holds
 * fewer activation bytes, by exactly the predicted difference, and the bytes it left went
 * to its host pool. */
static void test_offload_matches_reference(void **state) {
    (void)state;
    static const char *const families[] = {"1f1b", "v-half", "zb-h1", "interleaved"};
    int runs = 0;
    for (int p = 2; p <= 4; p += 2) {
        vp_pipeline_options o = small_options(2 * p);
        vp_train_result ref;
        assert_int_equal(vp_train_run(&o.train, data, NULL, NULL, &ref, NULL), VP_OK);
        for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
            vp_schedule *base = NULL;
            assert_true(build(families[f], p, 2 * p, &base));
            for (int pol = VP_OFFLOAD_UNIFORM; pol <= VP_OFFLOAD_SELECTIVE; pol++)
                for (int k = 1; k <= 2; k++)
                    for (int rc = VP_RECOMPUTE_NONE; rc <= VP_RECOMPUTE_FULL; rc += 2) {
                        vp_schedule *r = NULL;
                        assert_int_equal(vp_schedule_recompute(base, (vp_recompute)rc, &r, NULL),
                                         VP_OK);
                        vp_schedule *s = offloaded(r, (vp_offload_policy)pol, 0.5 * k);
                        char what[96];
                        snprintf(what, sizeof what, "%s p=%d offload %g %s recompute %s",
                                 families[f], p, 0.5 * k, vp_offload_policy_name(pol),
                                 vp_recompute_name((vp_recompute)rc));
                        assert_true(run_matches(what, o, s, &ref));
                        runs++;
                        vp_schedule_free(s);
                        vp_schedule_free(r);
                    }
            vp_schedule_free(base);
        }
    }
    assert_int_equal(runs, 2 * 4 * 2 * 2 * 2);
    vp_pipeline_options o = small_options(8);
    vp_schedule *plain = NULL, *off = NULL;
    assert_true(build("1f1b", 4, 8, &plain));
    off = offloaded(plain, VP_OFFLOAD_UNIFORM, 1.0);
    vp_pipeline_result a, b;
    o.schedule = plain;
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &a, NULL), VP_OK);
    o.schedule = off;
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &b, NULL), VP_OK);
    expect_memory_predicted("1f1b offload 1", &b);
    double drop = (double)a.peak_act_bytes[0] - (double)b.peak_act_bytes[0];
    assert_true(drop > 0);
    TU_NEAR(drop, a.predicted_peak_bytes[0] - b.predicted_peak_bytes[0]);
    assert_true(b.memory[VP_MEM_HOST] > 0 && a.memory[VP_MEM_HOST] == 0);
    assert_true(b.train.param_digest == a.train.param_digest);
    vp_pipeline_result_release(&a);
    vp_pipeline_result_release(&b);
    vp_schedule_free(off);
    vp_schedule_free(plain);
}

/* Every registered family, p in {2, 4}, m in {p, 2p, 4p} where the family takes m, with
 * and without recomputation (selective, full), and at m = 2p under the memory and time
 * splits: the same losses and parameters as vp_train_run, and measured = predicted for
 * every rank and category. */
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
                for (int rc = VP_RECOMPUTE_NONE; rc <= VP_RECOMPUTE_FULL; rc++) {
                    vp_schedule *x = NULL;
                    assert_int_equal(vp_schedule_recompute(s, (vp_recompute)rc, &x, NULL), VP_OK);
                    char what[96];
                    snprintf(what, sizeof what, "%s p=%d m=%d recompute %s", name, p, m,
                             vp_recompute_name((vp_recompute)rc));
                    exact_runs += run_matches(what, o, x, &ref);
                    runs++;
                    vp_schedule_free(x);
                }
                if (m == 2 * p)
                    split_variants(o, s, &ref, &runs, &exact_runs);
                vp_schedule_free(s);
            }
        }
    /* 15 families x 6 shapes x 3, less the shapes V/DualPipe families refuse (m < 2p), and
     * 4 split runs of each family at m = 2p. */
    assert_true(runs >= 3 * 66 + 4 * 2 * 15);
    assert_true(exact_runs >= runs - 3 * 6 - 4 * 2);
}

/* Data parallelism: for every family at p in {2, 4}, two replicas of m microbatches each,
 * with and without ZeRO-1, give the losses and parameters of the reference summing the
 * same two groups (DualPipe: the same bits with and without ZeRO-1, near the reference);
 * ZeRO-1 holds half the moments per rank; the measured peaks equal the predicted. */
static void test_data_parallel_matches_grouped_reference(void **state) {
    (void)state;
    int runs = 0;
    for (int p = 2; p <= 4; p += 2) {
        int m = 2 * p; /* per replica: every family takes it */
        vp_pipeline_options o = small_options(2 * m);
        o.train.dp = 2;
        vp_train_result ref;
        vp_error err = {0};
        assert_int_equal(vp_train_run(&o.train, data, NULL, NULL, &ref, &err), VP_OK);
        for (int f = 0; f < vp_family_count(); f++) {
            const char *name = vp_family_at(f)->name;
            vp_schedule *s = NULL;
            assert_true(build(name, p, m, &s));
            vp_pipeline_result r[2];
            for (int zero = 0; zero <= 1; zero++) {
                char what[64];
                snprintf(what, sizeof what, "%s p=%d dp=2 zero=%d", name, p, zero);
                o.zero = zero;
                check_run(what, &o, s, &ref, &r[zero]);
                assert_int_equal(r[zero].p, 2 * p);
                runs++;
            }
            assert_true(r[1].train.param_digest == r[0].train.param_digest);
            assert_true(r[1].train.train_loss == r[0].train.train_loss);
            for (int d = 0; d < 2 * p; d++) { /* half the moments, to half a block a stage */
                double full = r[0].memory[d * VP_MEM_CATEGORIES + VP_MEM_OPTIMIZER];
                double half = r[1].memory[d * VP_MEM_CATEGORIES + VP_MEM_OPTIMIZER];
                double slack = s->S / p * VP_NORM_BLOCK / 2 * 2 * sizeof(float);
                if (fabs(half - full / 2) > slack)
                    fail_msg("%s p=%d rank %d holds %.0f of %.0f moment bytes", name, p, d, half,
                             full);
            }
            vp_pipeline_result_release(&r[0]);
            vp_pipeline_result_release(&r[1]);
            vp_schedule_free(s);
        }
    }
    assert_true(runs == 4 * vp_family_count());
}

/* Two replicas with ZeRO-1, full recomputation and the memory split together, for 1f1b,
 * v-half and zb-v at p in {2, 4}: the grouped reference's bits, and every rank's bytes as
 * predicted in every category (optimizer: the rank's shards' moments, less than half a
 * replica's whole stages plus a block; activations: what F keeps until R). */
static void test_data_parallel_with_recompute(void **state) {
    (void)state;
    static const char *const fams[] = {"1f1b", "v-half", "zb-v"};
    for (int p = 2; p <= 4; p += 2) {
        int m = 2 * p;
        vp_pipeline_options o = small_options(2 * m);
        o.train.dp = 2;
        o.zero = 1;
        vp_train_result ref;
        assert_int_equal(vp_train_run(&o.train, data, NULL, NULL, &ref, NULL), VP_OK);
        for (int f = 0; f < 3; f++) {
            vp_schedule *plain = NULL, *s = NULL;
            assert_true(build(fams[f], p, m, &plain));
            assert_int_equal(vp_schedule_recompute(plain, VP_RECOMPUTE_FULL, &s, NULL), VP_OK);
            int l0[2 * 4 + 1];
            assert_int_equal(vp_runtime_split(s, &o.train.model, VP_SPLIT_MEMORY, l0, NULL), VP_OK);
            o.layer_start = l0;
            char what[64];
            snprintf(what, sizeof what, "%s p=%d dp=2 zero=1 recompute full", fams[f], p);
            vp_pipeline_result r;
            assert_true(check_run(what, &o, s, &ref, &r));
            for (int d = 0; d < p; d++) {
                const double *mine = &r.memory[d * VP_MEM_CATEGORIES];
                const double *twin = &r.memory[(p + d) * VP_MEM_CATEGORIES];
                assert_true(mine[VP_MEM_OPTIMIZER] > 0 && twin[VP_MEM_OPTIMIZER] > 0);
                assert_true(mine[VP_MEM_OPTIMIZER] + twin[VP_MEM_OPTIMIZER] ==
                            2 * mine[VP_MEM_PARAMS]); /* the two shards tile the moments */
                assert_true(mine[VP_MEM_ACTIVATIONS] == twin[VP_MEM_ACTIVATIONS]);
            }
            vp_pipeline_result_release(&r);
            vp_schedule_free(s);
            vp_schedule_free(plain);
        }
    }
}

/* Replicas that cannot split the global batch, ZeRO-1 without replicas, emulated replicas
 * and a fault at a rank past the replicas are refused before any step. */
static void test_data_parallel_refusals(void **state) {
    (void)state;
    vp_pipeline_options o = small_options(8);
    vp_schedule *s = NULL;
    assert_true(build("1f1b", 2, 4, &s));
    o.schedule = s;
    vp_pipeline_result r;
    vp_error err = {0};
    o.train.dp = 3; /* 8 microbatches over 3 replicas */
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &r, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "m=4 microbatches per replica"));
    o.train.m = 12; /* 12 = 3 x 4 */
    o.train.faults = (vp_faults){.rank = 6};
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &r, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "rank 6 of 6"));
    o.train.faults = (vp_faults){.rank = -1};
    o.train.dp = 1;
    o.train.m = 4;
    o.zero = 1;
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &r, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "ZeRO-1"));
    vp_train_result ref;
    o.train.dp = 3;
    o.train.m = 8;
    assert_int_equal(vp_train_run(&o.train, data, NULL, NULL, &ref, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "do not divide the 8 microbatches"));
    vp_schedule_free(s);
}

static bool stop_after_4(const vp_train_progress *p, void *user) {
    (void)user;
    return p->step < 4;
}

/* Trains family on p ranks (dp replicas, ZeRO-1 when zero) with the options o, resuming
 * from resume (NULL: fresh) and checkpointing into save every 3 steps (NULL: never); the
 * callback may stop it. Returns the result (released by the caller). */
static vp_pipeline_result run_shape(vp_pipeline_options o, const char *family, int p, int dp,
                                    int zero, const char *resume, const char *save,
                                    vp_train_callback stop) {
    vp_schedule *s = NULL;
    assert_true(build(family, p, o.train.m / dp, &s));
    o.schedule = s;
    o.train.dp = dp;
    o.zero = zero;
    o.train.resume_dir = resume;
    o.train.checkpoint_dir = save;
    o.train.checkpoint_every = save ? 3 : 0;
    vp_pipeline_result r;
    vp_error err = {0};
    if (vp_pipeline_train(&o, data, stop, NULL, &r, &err) != VP_OK)
        fail_msg("%s p=%d dp=%d: %s", family, p, dp, err.message);
    vp_schedule_free(s);
    return r;
}

/* Checkpoints change shape: K = 3 steps at (p = 4, v-half) resume at (p = 2, 1f1b) and at
 * (p = 4, zb-v) to the uninterrupted run's bits (the grouping of the sums is the same);
 * with two replicas (another grouping) the resumed run equals the reference of that
 * grouping resumed from the same checkpoint, with and without ZeRO-1. */
static void test_checkpoints_change_shape(void **state) {
    (void)state;
    vp_pipeline_options o = small_options(8);
    o.train.steps = 6;
    char dir[] = "/tmp/vp_runtime_shape_XXXXXX";
    assert_non_null(mkdtemp(dir));
    vp_pipeline_result full = run_shape(o, "v-half", 4, 1, 0, NULL, NULL, NULL);
    vp_pipeline_result cut = run_shape(o, "v-half", 4, 1, 0, NULL, dir, stop_after_4);
    assert_int_equal(cut.train.steps, 4); /* the checkpoint holds step 3 */
    const struct {
        const char *family;
        int p;
    } same[] = {{"1f1b", 2}, {"zb-v", 4}, {"v-half", 4}};
    for (int k = 0; k < 3; k++) {
        vp_pipeline_result r = run_shape(o, same[k].family, same[k].p, 1, 0, dir, NULL, NULL);
        assert_int_equal(r.train.resumed_step, 3);
        assert_true(r.train.param_digest == full.train.param_digest);
        assert_true(r.train.train_loss == full.train.train_loss);
        assert_true(r.train.val_loss == full.train.val_loss);
        vp_pipeline_result_release(&r);
    }
    vp_train_options grouped = o.train;
    grouped.dp = 2;
    grouped.resume_dir = dir;
    vp_train_result ref;
    vp_error err = {0};
    assert_int_equal(vp_train_run(&grouped, data, NULL, NULL, &ref, &err), VP_OK);
    assert_int_equal(ref.resumed_step, 3);
    for (int zero = 0; zero <= 1; zero++) {
        vp_pipeline_result r = run_shape(o, "1f1b", 2, 2, zero, dir, NULL, NULL);
        assert_true(r.train.param_digest == ref.param_digest);
        assert_true(r.train.train_loss == ref.train_loss);
        assert_true(r.train.val_loss == ref.val_loss);
        fprintf(stderr, "resumed at dp=2%s: final loss %.9g, uninterrupted %.9g (%+.2e)\n",
                zero ? " zero-1" : "", r.train.train_loss, full.train.train_loss,
                r.train.train_loss - full.train.train_loss);
        vp_pipeline_result_release(&r);
    }
    vp_pipeline_result_release(&full);
    vp_pipeline_result_release(&cut);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -r %s", dir);
    assert_int_equal(system(rm), 0);
}

/* Measured peak activation bytes of the busiest rank for family at (p, m = 2p) under the
 * split goal, on the model of test_memory_ratios. */
static double max_peak(const char *family, int p, vp_split_goal goal) {
    vp_pipeline_options o = small_options(2 * p);
    o.train.model = (vp_model_config){
        .n_layer = 16, .width = 64, .n_head = 2, .seq_len = 32, .microbatch = 2, .vocab = 256};
    o.train.steps = 1;
    vp_schedule *s = NULL;
    assert_true(build(family, p, 2 * p, &s));
    int l0[2 * 8 + 1];
    assert_int_equal(vp_runtime_split(s, &o.train.model, goal, l0, NULL), VP_OK);
    o.schedule = s;
    o.layer_start = l0;
    vp_pipeline_result r;
    vp_error err = {0};
    if (vp_pipeline_train(&o, data, NULL, NULL, &r, &err) != VP_OK)
        fail_msg("%s: %s", family, err.message);
    expect_memory_predicted(family, &r);
    double peak = (double)r.train.peak_act_bytes;
    vp_pipeline_result_release(&r);
    vp_schedule_free(s);
    return peak;
}

/* The paper's claims on this runtime: with a memory-balanced split, V-Half's and V-Min's
 * busiest rank holds at most floor((p+2)/2)/p and floor((p+4)/3)/p (+ 0.02) of the
 * activation bytes of 1F1B's busiest rank under its ordinary (even) split, at p = 4 and
 * 8. The model (16 layers of width 64, sequence 32, microbatch 2) is one where the
 * claim needs the split: the V placement puts the head and loss (0.35 of a layer's
 * activations here, 2.2% of the model's) on rank 0 beside the first layers, so with the
 * even split both V schedules stay above the bound. */
static void test_memory_ratios(void **state) {
    (void)state;
    for (int p = 4; p <= 8; p += 4) {
        double base = max_peak("1f1b", p, VP_SPLIT_EVEN);
        double bound[2] = {(double)((p + 2) / 2) / p + 0.02, (double)((p + 4) / 3) / p + 0.02};
        static const char *const fams[2] = {"v-half", "v-min"};
        for (int f = 0; f < 2; f++) {
            double even = max_peak(fams[f], p, VP_SPLIT_EVEN) / base;
            double balanced = max_peak(fams[f], p, VP_SPLIT_MEMORY) / base;
            fprintf(stderr, "p=%d: %s / 1F1B %.4f with the memory split, %.4f even (bound %.4f)\n",
                    p, fams[f], balanced, even, bound[f]);
            assert_true(balanced <= bound[f]);
            assert_true(even > bound[f]);
        }
    }
}

/* 1F1B with full recomputation holds one stage input per microbatch in flight and the
 * whole activation of the one it recomputes: rank d peaks at act + (min(p - d, m) - 1) *
 * input of its stage, measured (the first stage's input is its tokens). */
static void test_1f1b_r_holds_inputs(void **state) {
    (void)state;
    for (int p = 2; p <= 4; p += 2) {
        vp_pipeline_options o = small_options(2 * p);
        vp_schedule *s = NULL;
        assert_true(build("1f1b-r", p, 2 * p, &s));
        int l0[5];
        assert_int_equal(vp_split_layers(o.train.model.n_layer, p, l0, NULL), VP_OK);
        o.schedule = s;
        vp_pipeline_result r;
        assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &r, NULL), VP_OK);
        for (int d = 0; d < p; d++) {
            vp_stage_sizes sz;
            assert_int_equal(vp_stage_sizes_of(&o.train.model, vp_split_range(l0, d, p), &sz, NULL),
                             VP_OK);
            size_t in_flight = (size_t)(p - d < 2 * p ? p - d : 2 * p);
            fprintf(stderr, "1f1b-r p=%d rank %d: %zu bytes = act %zu + %zu x input %zu\n", p, d,
                    r.peak_act_bytes[d], sz.act_bytes, in_flight - 1, sz.input_bytes);
            assert_int_equal(r.peak_act_bytes[d], sz.act_bytes + (in_flight - 1) * sz.input_bytes);
        }
        vp_pipeline_result_release(&r);
        vp_schedule_free(s);
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
    assert_int_equal(r.failed_rank, 2);
    assert_int_equal(r.report, 1); /* one process: it reports */
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
    /* the stalled rank names the op it stalls at: op 1 of rank 3 is BW3.0 */
    if (!strstr(err.message, "rank 3: op 1 (BW3.0) blocked by an injected stall at stage 3, "
                             "microbatch 0"))
        fail_msg("the stall is not named: %s", err.message);
    assert_null(strstr(err.message, "stage -1"));
    vp_schedule_free(s);
}

/* Counts the steps a run reports (a run refused up front reports none). */
static bool count_steps(const vp_train_progress *p, void *user) {
    (void)p;
    (*(int *)user)++;
    return true;
}

/* What can be checked before the first step is: data shorter than a window, a layer split
 * that cannot fill the route (before the schedule's replay: a broken schedule with too
 * few layers is refused for its layers), and a checkpoint directory that cannot be made
 * (on both loops). No step runs. */
static void test_refused_before_the_first_step(void **state) {
    (void)state;
    vp_pipeline_options o = small_options(2);
    o.train.steps = 3;
    vp_schedule *s = NULL;
    assert_true(build("1f1b", 2, 2, &s));
    o.schedule = s;
    vp_data *tiny = NULL;
    char hundred[100];
    memset(hundred, 'a', sizeof hundred);
    assert_int_equal(vp_data_parse(hundred, sizeof hundred, "hundred", 0.1, &tiny, NULL), VP_OK);
    vp_pipeline_result r;
    vp_error err = {0};
    int steps = 0;
    assert_int_equal(vp_pipeline_train(&o, tiny, count_steps, &steps, &r, &err), VP_EIO);
    assert_non_null(strstr(err.message, "longer than the data"));
    vp_data_free(tiny);
    vp_schedule *broken = NULL;
    assert_true(build("1f1b", 4, 4, &broken));
    broken->dev[1].n--; /* it fails validation, and 1 layer cannot fill its 4 stages: */
    vp_model_config one_layer = o.train.model;
    one_layer.n_layer = 1;
    assert_int_equal(vp_pipeline_plan_check(broken, &one_layer, NULL, NULL, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "cannot fill"));
    vp_schedule_free(broken);
    char file[] = "/tmp/vp_runtime_file_XXXXXX";
    int fd = mkstemp(file);
    assert_true(fd >= 0);
    close(fd);
    char under_file[64];
    snprintf(under_file, sizeof under_file, "%s/ck", file);
    o.train.checkpoint_dir = under_file;
    assert_int_equal(vp_pipeline_train(&o, data, count_steps, &steps, &r, &err), VP_EIO);
    assert_non_null(strstr(err.message, "cannot create checkpoint directory"));
    vp_train_result ref;
    assert_int_equal(vp_train_run(&o.train, data, count_steps, &steps, &ref, &err), VP_EIO);
    assert_non_null(strstr(err.message, under_file));
    assert_int_equal(steps, 0);
    remove(file);
    vp_schedule_free(s);
}

/* Faults are injected only where the run has them: a rank of the schedule, a step of the
 * run, an op of that rank; the single-rank run has no rank to fail; a poisoned step
 * within the run. */
static void test_faults_out_of_range_refused(void **state) {
    (void)state;
    vp_pipeline_options o = small_options(4);
    vp_schedule *s = NULL;
    assert_true(build("1f1b", 2, 4, &s));
    o.schedule = s;
    const vp_faults bad[] = {{.rank = 2},
                             {.rank = 1, .step = 2},
                             {.rank = 0, .step = -1},
                             {.rank = 1, .op = 8},
                             {.rank = -1, .nonfinite_step = 3}};
    const char *why[] = {"rank 2 of 2", "step 2", "step -1", "op 8", "step 3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.train.faults = bad[i];
        vp_pipeline_result r;
        vp_error err = {0};
        assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &r, &err), VP_EINVAL);
        if (!strstr(err.message, why[i]))
            fail_msg("fault %zu: %s", i, err.message);
    }
    assert_int_equal(s->dev[1].n, 8); /* op 7 exists: the last op of rank 1 */
    o.train.faults = (vp_faults){.rank = 0};
    vp_train_result ref;
    vp_error err = {0};
    assert_int_equal(vp_train_run(&o.train, data, NULL, NULL, &ref, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "single-rank"));
    vp_schedule_free(s);
}

/* Resuming the checkpoint of a pipelined run's last step is a finished run: VP_OK, the
 * uninterrupted run's digest, no step. */
static void test_resume_of_a_finished_pipeline(void **state) {
    (void)state;
    vp_pipeline_options o = small_options(4);
    vp_schedule *s = NULL;
    assert_true(build("v-half", 2, 4, &s));
    o.schedule = s;
    char dir[] = "/tmp/vp_runtime_ck_XXXXXX";
    assert_non_null(mkdtemp(dir));
    o.train.checkpoint_dir = dir;
    vp_pipeline_result full, done;
    vp_error err = {0};
    assert_int_equal(vp_pipeline_train(&o, data, NULL, NULL, &full, &err), VP_OK);
    o.train.checkpoint_dir = NULL;
    o.train.resume_dir = dir;
    int steps = 0;
    if (vp_pipeline_train(&o, data, count_steps, &steps, &done, &err) != VP_OK)
        fail_msg("%s", err.message);
    assert_int_equal(steps, 0);
    assert_int_equal(done.train.steps, o.train.steps);
    assert_int_equal(done.train.resumed_step, o.train.steps);
    assert_true(done.train.param_digest == full.train.param_digest);
    assert_true(isnan(done.train.train_loss));
    vp_pipeline_result_release(&full);
    vp_pipeline_result_release(&done);
    char path[128];
    snprintf(path, sizeof path, "rm -r %s", dir);
    assert_int_equal(system(path), 0);
    vp_schedule_free(s);
}

static bool remember_lr(const vp_train_progress *p, void *user) {
    *(double *)user = p->lr;
    return true;
}

/* An emulated run has no model: NaN losses and learning rate, no digest, no measured
 * peaks, and says so; its step times are real. */
static void test_emulated_run_reports_what_it_has(void **state) {
    (void)state;
    vp_pipeline_options o = small_options(4);
    vp_schedule *s = NULL;
    assert_true(build("1f1b", 2, 4, &s));
    vp_costs costs = vp_costs_default();
    costs.f = costs.b = costs.w = 0.01; /* ms */
    vp_memcfg mem = vp_memcfg_default();
    vp_error err = {0};
    vp_cost_model *cm = NULL;
    assert_int_equal(vp_cost_model_new(s, &costs, &mem, &cm, &err), VP_OK);
    o.schedule = s;
    o.op_ms = cm;
    o.emulate = 1;
    double lr = 0.0;
    vp_pipeline_result r;
    assert_int_equal(vp_pipeline_train(&o, NULL, remember_lr, &lr, &r, &err), VP_OK);
    assert_true(r.emulated);
    assert_true(isnan(lr) && isnan(r.train.train_loss) && isnan(r.train.val_loss));
    assert_true(r.train.param_digest == 0);
    assert_int_equal(r.train.peak_act_bytes, 0);
    assert_true(r.train.step_ms > 0.0);
    /* its measured op times give per-stage costs back; a model of another shape is refused */
    assert_int_equal(vp_runtime_measured_costs(s, r.measured, cm, &err), VP_OK);
    assert_true(cm->f[0] >= 0.01 && cm->c == 0.0);
    vp_schedule *other = NULL;
    assert_true(build("1f1b", 4, 4, &other));
    assert_int_equal(vp_runtime_measured_costs(other, r.measured, cm, &err), VP_EINVAL);
    vp_schedule_free(other);
    vp_pipeline_result_release(&r);
    vp_cost_model_free(cm);
    vp_schedule_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_layers),
        cmocka_unit_test(test_every_family_matches_reference),
        cmocka_unit_test(test_offload_matches_reference),
        cmocka_unit_test(test_data_parallel_matches_grouped_reference),
        cmocka_unit_test(test_data_parallel_with_recompute),
        cmocka_unit_test(test_data_parallel_refusals),
        cmocka_unit_test(test_checkpoints_change_shape),
        cmocka_unit_test(test_memory_ratios),
        cmocka_unit_test(test_1f1b_r_holds_inputs),
        cmocka_unit_test(test_invalid_schedule_refused),
        cmocka_unit_test(test_rank_failure_stops_everyone),
        cmocka_unit_test(test_watchdog_names_every_rank),
        cmocka_unit_test(test_refused_before_the_first_step),
        cmocka_unit_test(test_faults_out_of_range_refused),
        cmocka_unit_test(test_resume_of_a_finished_pipeline),
        cmocka_unit_test(test_emulated_run_reports_what_it_has),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
