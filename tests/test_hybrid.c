/* The hybrid planner: its answer is the exhaustive one (pruning never changes the best or
 * any family's best), it does not depend on the threads, every configuration it reports
 * fits and prices again to the same figures, nothing-fits names the smallest memory, the
 * paper's 98.5B experiment puts a V or ZB family 10% ahead of 1F1B and 1F1B with full
 * recomputation last, one pipeline rank is listed as 1F1B alone, and the exports carry
 * the winner's degrees. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "price_util.h"
#include "vpipe/hybrid.h"

static vp_hybrid *run(const vp_hybrid_request *q) {
    vp_hybrid *h = NULL;
    vp_error err = {0};
    if (vp_hybrid_run(q, &h, &err) != VP_OK)
        fail_msg("%s: %s", q->arch->name, err.message);
    return h;
}

static void assert_same_config(const vp_hybrid_config *a, const vp_hybrid_config *b) {
    if (strcmp(a->family, b->family) || strcmp(a->params, b->params) || a->dp != b->dp ||
        a->tp != b->tp || a->pp != b->pp || a->v != b->v || a->mbs != b->mbs ||
        a->recompute != b->recompute || a->step_time_s != b->step_time_s)
        fail_msg("%s dp%d tp%d pp%d mbs%d %.9g vs %s dp%d tp%d pp%d mbs%d %.9g", a->family, a->dp,
                 a->tp, a->pp, a->mbs, a->step_time_s, b->family, b->dp, b->tp, b->pp, b->mbs,
                 b->step_time_s);
}

/* A small grid: Llama-2-7B on 16 A100s, sequence 4096, batch 64 (q points into it). */
typedef struct small_grid {
    vp_arch a;
    vp_gpu g;
    vp_hybrid_request q;
} small_grid;

static void small_setup(small_grid *s) {
    s->a = tp_preset("llama2-7b");
    s->g = tp_gpu("a100-80gb");
    s->q = vp_hybrid_request_make(&s->a, &s->g, 16, 64);
    s->q.work.seq = 4096;
    s->q.work.flash = s->q.work.sp = true;
    s->q.work.zero = 1;
    s->q.max_chunks = 3;
    s->q.vblock_max_pp = 8;
}

/* On one pipeline rank every family is the same gradient accumulation: the search lists
 * 1F1B alone there, and the other families at PP > 1 (h: every fitting configuration). */
static void assert_one_rank_is_1f1b(const vp_hybrid *h) {
    int one_rank = 0, deeper = 0;
    for (int i = 0; i < h->n_top; i++) {
        bool one = h->top[i].pp == 1;
        one_rank += one;
        deeper += !one && strcmp(h->top[i].family, "1f1b");
        if (one && strcmp(h->top[i].family, "1f1b"))
            fail_msg("%s at PP 1", h->top[i].family);
    }
    assert_true(one_rank > 0 && deeper > 0);
}

/* With K larger than the grid no bound ever prunes: the pruned search's best, top and
 * every family's best equal that exhaustive search's, which lists PP 1 as 1F1B alone. */
static void test_pruning_is_exact(void **state) {
    (void)state;
    small_grid grid;
    small_setup(&grid);
    vp_hybrid_request q = grid.q;
    vp_hybrid *pruned = run(&q);
    q.top = 1000000;
    vp_hybrid *all = run(&q);
    assert_int_equal(all->pruned_bound, 0);
    assert_one_rank_is_1f1b(all);
    assert_true(pruned->pruned_bound > 0);
    assert_true(pruned->evaluated < all->evaluated);
    assert_int_equal(pruned->candidates, all->candidates);
    for (int i = 0; i < pruned->n_top; i++)
        assert_same_config(&pruned->top[i], &all->top[i]);
    assert_int_equal(pruned->n_best, all->n_best);
    for (int i = 0; i < pruned->n_best; i++)
        assert_same_config(&pruned->best[i], &all->best[i]);
    vp_hybrid_free(pruned);
    vp_hybrid_free(all);
}

/* An odd sequence cannot be split into CP's 2 chunks a rank, but CP 1 takes it whole. */
static void test_odd_sequence(void **state) {
    (void)state;
    small_grid grid;
    small_setup(&grid);
    grid.q.work.seq = 4095;
    vp_hybrid *h = run(&grid.q);
    assert_true(h->n_top > 0 && h->top[0].fits);
    for (int i = 0; i < h->n_top; i++)
        assert_true(h->top[i].cp <= 1);
    vp_hybrid_free(h);
}

/* A margin: configurations with less room are tight and rank after every one with room
 * (in the top list and among each family's best); pruning stays exact under it; margin 0
 * ranks by time alone; the default is the accelerator's measured memory error. */
static void test_margin(void **state) {
    (void)state;
    small_grid grid;
    small_setup(&grid);
    vp_hybrid_request q = grid.q;
    q.margin_bytes = 0;
    vp_hybrid *none = run(&q);
    q.margin_bytes = grid.g.memory_bytes - none->top[0].memory_max_bytes + 1; /* winner tight */
    vp_hybrid *pruned = run(&q);
    q.top = 1000000;
    vp_hybrid *all = run(&q);
    assert_true(pruned->top[0].step_time_s >= none->top[0].step_time_s);
    assert_true(all->n_top > 1 && all->top[all->n_top - 1].tight);
    for (int i = 1; i < all->n_top; i++)
        assert_true(!all->top[i - 1].tight || all->top[i].tight); /* room, then tight */
    for (int i = 0; i < all->n_top; i++) {
        const vp_hybrid_config *c = &all->top[i];
        TU_NEAR(c->headroom_bytes, grid.g.memory_bytes - c->memory_max_bytes);
        assert_true(c->tight == (c->headroom_bytes < q.margin_bytes));
    }
    for (int i = 0; i < pruned->n_top; i++)
        assert_same_config(&pruned->top[i], &all->top[i]);
    for (int i = 0; i < pruned->n_best; i++)
        assert_same_config(&pruned->best[i], &all->best[i]);
    TU_NEAR(vp_price_margin_default(&grid.g), grid.g.memory_bytes * grid.g.expected.memory_mean);
    assert_true(grid.g.expected.memory_runs > 0);
    vp_hybrid_free(none);
    vp_hybrid_free(pruned);
    vp_hybrid_free(all);
}

/* The offload lever under a reserve that leaves little room: the winner offloads, leaves
 * the margin and is faster than the winner without offload; every configuration it
 * reports fits the device and the host, and one that offloads says how much of its step
 * the copy engine is busy and what the host holds. */
static void test_offload_lever(void **state) {
    (void)state;
    small_grid grid;
    small_setup(&grid);
    vp_hybrid_request q = grid.q;
    q.work.reserve_bytes = 55 * 1073741824.0;
    vp_hybrid *plain = run(&q);
    q.offload = 1;
    vp_hybrid *off = run(&q);
    const vp_hybrid_config *w = &off->top[0];
    assert_true(w->offload > 0 && !w->tight);
    assert_true(w->step_time_s < plain->top[0].step_time_s);
    assert_true(plain->top[0].offload == 0 && plain->top[0].host_max_bytes == 0);
    for (int i = 0; i < off->n_top; i++) {
        const vp_hybrid_config *c = &off->top[i];
        assert_true(c->fits && c->memory_max_bytes <= grid.g.memory_bytes);
        assert_true(c->host_max_bytes <= grid.g.host_memory_bytes);
        assert_true(c->offload == 0 ||
                    (c->host_max_bytes > 0 && c->copy_occupancy > 0 && c->copy_occupancy <= 1));
    }
    vp_hybrid_free(plain);
    vp_hybrid_free(off);
}

/* One thread or three: the same JSON but for elapsed_s. */
static void test_threads_do_not_matter(void **state) {
    (void)state;
    small_grid grid;
    small_setup(&grid);
    vp_hybrid_request q = grid.q;
    char *text[2];
    for (int i = 0; i < 2; i++) {
        q.threads = i ? 3 : 1;
        vp_hybrid *h = run(&q);
        char *json = vp_hybrid_json(h, &q);
        assert_non_null(json);
        json_t *o = json_loads(json, 0, NULL);
        free(json);
        assert_non_null(o);
        json_object_del(o, "elapsed_s");
        text[i] = json_dumps(o, JSON_SORT_KEYS);
        json_decref(o);
        vp_hybrid_free(h);
    }
    assert_string_equal(text[0], text[1]);
    free(text[0]);
    free(text[1]);
}

/* Every configuration reported fits, and pricing it again gives its figures. */
static void test_reported_configurations_fit(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-70b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_hybrid_request q = vp_hybrid_request_make(&a, &g, 64, 512);
    q.work.seq = 8192;
    q.work.flash = q.work.sp = true;
    q.work.zero = 1;
    vp_hybrid *h = run(&q);
    const vp_hybrid_config *lists[2] = {h->top, h->best};
    int counts[2] = {h->n_top, h->n_best};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++) {
            const vp_hybrid_config *c = &lists[l][i];
            assert_true(c->fits && c->memory_max_bytes <= g.memory_bytes);
            assert_int_equal(c->dp * c->tp * c->pp, 64);
            assert_int_equal(c->dp * c->mbs * c->m, 512);
            vp_hybrid_priced again;
            vp_error err = {0};
            if (vp_hybrid_price(&q, c, &again, &err) != VP_OK)
                fail_msg("%s: %s", c->family, err.message);
            TU_NEAR(again.result->step_time_s, c->step_time_s);
            TU_NEAR(again.result->memory_max_bytes, c->memory_max_bytes);
            vp_hybrid_priced_release(&again);
        }
    for (int i = 1; i < h->n_top; i++)
        assert_true(h->top[i - 1].step_time_s <= h->top[i].step_time_s);
    TU_NEAR(h->winner.result->step_time_s, h->top[0].step_time_s);
    assert_non_null(strstr(h->reason, h->top[0].family));
    vp_hybrid_free(h);
}

/* A time limit already passed stops the enumeration after its first point; that point's
 * batch is still searched, so the answer is timed out with the best of it (or, when none
 * of it fits, an error naming the limit). */
static void test_time_limit_stops_enumeration(void **state) {
    (void)state;
    small_grid g;
    small_setup(&g);
    vp_hybrid *all = run(&g.q);
    g.q.time_limit_s = 1e-12;
    vp_hybrid *h = NULL;
    vp_error err = {0};
    vp_status rc = vp_hybrid_run(&g.q, &h, &err);
    if (rc == VP_OK) {
        assert_true(h->timed_out);
        assert_true(h->candidates < all->candidates);
        assert_true(h->n_top >= 1);
    } else {
        assert_non_null(strstr(err.message, "time limit"));
    }
    vp_hybrid_free(h);
    vp_hybrid_free(all);
}

/* 405B on 8 GPUs: no configuration fits; the message names the smallest memory needed. */
static void test_nothing_fits(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-405b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_hybrid_request q = vp_hybrid_request_make(&a, &g, 8, 64);
    q.work.seq = 8192;
    q.work.flash = q.work.sp = true;
    vp_hybrid *h = NULL;
    vp_error err = {0};
    assert_int_equal(vp_hybrid_run(&q, &h, &err), VP_EINVAL);
    assert_null(h);
    const char *at = strstr(err.message, "the smallest needs ");
    if (!at)
        fail_msg("%s", err.message);
    double gib = atof(at + strlen("the smallest needs "));
    /* at least the model states of 405B parameters over 8 GPUs at 18 bytes each */
    assert_true(gib * 1073741824.0 > 405e9 * 18 / 8);
    q.gpus = 0;
    assert_int_equal(vp_hybrid_run(&q, &h, &err), VP_EINVAL);
    q.gpus = 8;
    q.tp = 3; /* no legal degree: divides no head count */
    assert_int_equal(vp_hybrid_run(&q, &h, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "no legal configuration"));
}

/* The Controllable Memory paper's hybrid experiment (issue 19's acceptance): a V or Zero
 * Bubble family wins, by at least 10% predicted MFU over the best 1F1B (the paper: +16%),
 * and 1F1B with full recomputation ranks last of every family. The accelerator's kernel
 * model is calibrated to other published figures (src/price/gpus.c), not to this; the
 * papers' runtime overlaps its pipeline sends (their hop is timed apart from the passes),
 * so the request does. */
static void test_paper_experiment(void **state) {
    (void)state;
    vp_arch a = tp_preset("cm-98.5b");
    vp_gpu g = tp_gpu("a100-80gb");
    vp_hybrid_request q = vp_hybrid_request_make(&a, &g, 40, 160);
    q.work.seq = 1024;
    q.work.flash = q.work.sp = true;
    q.work.zero = 1;
    q.work.pp_overlap = true; /* the papers' runtime overlaps its sends (Zero Bubble Table 6) */
    vp_hybrid *h = run(&q);
    const char *w = h->best[0].group;
    assert_true(!strncmp(w, "v-", 2) || !strncmp(w, "zb-", 3));
    const vp_hybrid_config *one = NULL;
    for (int i = 0; i < h->n_best; i++)
        if (!strcmp(h->best[i].group, "1f1b"))
            one = &h->best[i];
    assert_non_null(one);
    if (!(h->best[0].mfu >= 1.10 * one->mfu))
        fail_msg("%s %.2f%% against 1f1b %.2f%%: less than +10%%", w, 100 * h->best[0].mfu,
                 100 * one->mfu);
    assert_string_equal(h->best[h->n_best - 1].group, "1f1b-r");
    assert_string_equal(h->versus.family, "1f1b");
    assert_true(h->versus.step_time_s > h->best[0].step_time_s);
    vp_hybrid_free(h);
}

/* The value after flag in flags, or -1 without it. */
static int flag_value(const char *flags, const char *flag) {
    const char *at = strstr(flags, flag);
    return at ? atoi(at + strlen(flag)) : -1;
}

/* The text after flag in flags up to any character of stop, into out (size bytes, the test
 * fails when it does not fit); false without the flag. */
static bool flag_text(const char *flags, const char *flag, const char *stop, char *out,
                      size_t size) {
    const char *at = strstr(flags, flag);
    if (!at)
        return false;
    at += strlen(flag);
    size_t len = strcspn(at, stop);
    assert_true(len < size);
    memcpy(out, at, len);
    out[len] = 0;
    return true;
}

/* The exports name the configuration's degrees and split. */
static void test_exports(void **state) {
    (void)state;
    small_grid grid;
    small_setup(&grid);
    vp_hybrid_request q = grid.q;
    vp_hybrid_config c = {.family = "1f1b", .dp = 2, .tp = 2, .pp = 4, .mbs = 2, .m = 16};
    vp_hybrid_priced pr;
    vp_error err = {0};
    assert_int_equal(vp_hybrid_price(&q, &c, &pr, &err), VP_OK);
    char *flags = NULL, *toml = NULL;
    assert_int_equal(vp_hybrid_megatron(&q, &pr, &flags, &err), VP_OK);
    const char *want[] = {"--tensor-model-parallel-size 2",
                          "--pipeline-model-parallel-size 4",
                          "--micro-batch-size 2",
                          "--global-batch-size 64",
                          "--seq-length 4096",
                          "--sequence-parallel",
                          "--use-distributed-optimizer"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(flags, want[i]))
            fail_msg("'%s' lacks %s", flags, want[i]);
    assert_int_equal(vp_hybrid_torchtitan(&q, &pr, "s.csv", &toml, &err), VP_OK);
    assert_non_null(strstr(toml, "pipeline_parallel_degree = 4\n"));
    assert_non_null(strstr(toml, "data_parallel_shard_degree = 2\n"));
    assert_non_null(strstr(toml, "local_batch_size = 32\n"));
    assert_non_null(strstr(toml, "\"tok_embeddings\", \"layers.0\""));
    free(flags);
    free(toml);
    vp_hybrid_priced_release(&pr);
    c = (vp_hybrid_config){.family = "dualpipe", .dp = 2, .tp = 2, .pp = 4, .mbs = 2, .m = 16};
    assert_int_equal(vp_hybrid_price(&q, &c, &pr, &err), VP_OK);
    assert_int_equal(vp_hybrid_torchtitan(&q, &pr, "s.csv", &toml, &err), VP_EUNSUPPORTED);
    assert_int_equal(vp_hybrid_megatron(&q, &pr, &flags, &err), VP_EUNSUPPORTED);
    vp_hybrid_priced_release(&pr);
    /* Megatron-LM interleaves only over a pipeline (megatron/training/arguments.py asserts
       it), its sends overlapped by default: vpipe priced them blocking, and says so */
    for (int pp = 1; pp <= 4; pp *= 2) {
        c = (vp_hybrid_config){
            .family = "interleaved", .dp = 16 / (2 * pp), .tp = 2, .pp = pp, .v = 2, .mbs = 1};
        c.m = 64 / c.dp;
        assert_int_equal(vp_hybrid_price(&q, &c, &pr, &err), VP_OK);
        vp_status rc = vp_hybrid_megatron(&q, &pr, &flags, &err);
        assert_int_equal(rc, pp == 1 ? VP_EUNSUPPORTED : VP_OK);
        if (pp == 1)
            assert_non_null(strstr(err.message, "only over a pipeline"));
        else
            assert_non_null(strstr(flags, "overlaps its pipeline sends (its default)"));
        free(flags);
        flags = NULL;
        vp_hybrid_priced_release(&pr);
    }
    /* its microbatch groups: PP by default, vpipe's m / (m div PP) said, fewer than PP refused */
    for (int m = 3; m <= 8; m++) {
        c = (vp_hybrid_config){
            .family = "interleaved", .dp = 2, .tp = 2, .pp = 4, .v = 2, .mbs = 1, .m = m};
        q.global_batch = 2 * m;
        if (vp_hybrid_price(&q, &c, &pr, &err) != VP_OK)
            continue; /* m not in equal rounds */
        vp_status rc = vp_hybrid_megatron(&q, &pr, &flags, &err);
        assert_int_equal(rc, m < 4 ? VP_EUNSUPPORTED : VP_OK);
        int group = rc == VP_OK
                        ? flag_value(flags, "--microbatch-group-size-per-virtual-pipeline-stage ")
                        : -1;
        assert_true(m < 4 || (m % 4 == 0) == (group < 0));
        assert_true(group < 0 || group == m);
        free(flags);
        flags = NULL;
        vp_hybrid_priced_release(&pr);
    }
}

/* The Megatron-LM export writes the split as priced: with an even split nothing (1F1B) or
 * the layers of each virtual stage (interleaved), else Megatron-Core's
 * --pipeline-model-parallel-layout, whose stages (rank k mod PP's chunk k div PP) hold
 * exactly vpipe's layers, the embedding first and the loss last. Over 1F1B and interleaved
 * at PP 2 to 8 with 32 layers. */
static void test_megatron_splits(void **state) {
    (void)state;
    small_grid grid;
    small_setup(&grid);
    vp_hybrid_request q = grid.q;
    int layers = grid.a.layers, laid = 0;
    for (int pp = 2; pp <= 8; pp++)
        for (int v = 0; v <= 3; v++) {
            if (v == 1)
                continue;
            q.gpus = 4 * 2 * pp;
            vp_hybrid_config c = {.dp = 4, .tp = 2, .pp = pp, .v = v, .mbs = 1, .m = 16};
            snprintf(c.family, sizeof c.family, "%s", v ? "interleaved" : "1f1b");
            vp_hybrid_priced pr;
            vp_error err = {0};
            if (vp_hybrid_price(&q, &c, &pr, &err) != VP_OK)
                continue; /* more chunks than layers */
            char *flags = NULL;
            assert_int_equal(vp_hybrid_megatron(&q, &pr, &flags, &err), VP_OK);
            int chunks = v ? v : 1,
                per = flag_value(flags, "--num-layers-per-virtual-pipeline-stage ");
            char layout[512];
            if (flag_text(flags, "--pipeline-model-parallel-layout '", "'", layout,
                          sizeof layout)) {
                size_t len = strlen(layout);
                assert_true(len > 0 && layout[0] == 'E' && layout[len - 1] == 'L');
                int k = 0, sum = 0;
                for (char *stage = strtok(layout, "|"); stage; stage = strtok(NULL, "|"), k++) {
                    char *t = stage + (k == 0); /* past E */
                    int here = *t != 't' ? 0 : t[1] == '*' ? atoi(t + 2) : 1;
                    assert_true(k < pr.result->route_len);
                    assert_int_equal(here, pr.result->layers_per_stage[k]);
                    sum += here;
                }
                assert_int_equal(k, pp * chunks);
                assert_int_equal(sum, layers);
                laid++;
            } else if (per >= 0) {
                assert_int_equal(per * pp * chunks, layers);
            } else {
                assert_int_equal(v, 0);
                for (int s2 = 0; s2 < pp; s2++)
                    assert_int_equal(pr.result->layers_per_stage[s2] * pp, layers);
            }
            free(flags);
            vp_hybrid_priced_release(&pr);
        }
    assert_true(laid > 0);
}

/* The offload export names Megatron-Core's modules, never attn_proj without core_attn (its
 * TransformerConfig refuses that: attn_proj's input is core_attn's output), over shares
 * from 5% to all of a layer's saved bytes. */
static void test_megatron_offload_modules(void **state) {
    (void)state;
    small_grid grid;
    small_setup(&grid);
    vp_hybrid_request q = grid.q;
    const char *allowed = " attn_norm qkv_linear core_attn attn_proj mlp_norm ";
    int attn_core = 0;
    for (int k = 1; k <= 20; k++) {
        vp_hybrid_config c = {.family = "1f1b", .dp = 2, .tp = 2, .pp = 4, .mbs = 2, .m = 16};
        c.offload = k / 20.0;
        vp_hybrid_priced pr;
        vp_error err = {0};
        assert_int_equal(vp_hybrid_price(&q, &c, &pr, &err), VP_OK);
        char *flags = NULL;
        assert_int_equal(vp_hybrid_megatron(&q, &pr, &flags, &err), VP_OK);
        char modules[256]; /* up to the next flag or the line's end */
        assert_true(flag_text(flags, "--offload-modules ", "-\n", modules, sizeof modules));
        assert_true(modules[0] != 0);
        const char *at = strstr(flags, "--offload-modules ");
        for (char *word = strtok(modules, " "); word; word = strtok(NULL, " ")) {
            char padded[64];
            snprintf(padded, sizeof padded, " %s ", word);
            if (!strstr(allowed, padded))
                fail_msg("share %.2f: offload module '%s' in '%s'", c.offload, word, flags);
        }
        bool proj = strstr(at, " attn_proj") != NULL, core = strstr(at, " core_attn") != NULL;
        assert_true(!proj || core);
        attn_core += core;
        free(flags);
        vp_hybrid_priced_release(&pr);
    }
    assert_true(attn_core > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pruning_is_exact),
        cmocka_unit_test(test_threads_do_not_matter),
        cmocka_unit_test(test_odd_sequence),
        cmocka_unit_test(test_margin),
        cmocka_unit_test(test_offload_lever),
        cmocka_unit_test(test_reported_configurations_fit),
        cmocka_unit_test(test_nothing_fits),
        cmocka_unit_test(test_time_limit_stops_enumeration),
        cmocka_unit_test(test_paper_experiment),
        cmocka_unit_test(test_exports),
        cmocka_unit_test(test_megatron_splits),
        cmocka_unit_test(test_megatron_offload_modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
