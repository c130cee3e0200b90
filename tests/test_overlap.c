/* The all-to-all hidden by overlapped F&B pairs (src/price/overlap.c) and the bubble
 * formulas of DeepSeek-V3's schedule table, each checked against its formula written out
 * here:
 * - an F&B pair of compute C and all-to-all X lasts max(X, C + X (1 - 112/132));
 * - a priced DualPipeV: every stage's hidden all-to-all is the mean over its microbatches of
 *   its share (its all-to-all over the pair's) of what each pair hides, C + X minus that;
 * - EP 1: nothing hidden, the same makespan as the halves run back to back;
 * - --ep-overlap without a pipeline (p 1): F, then m - 1 pairs, then BW, one microbatch's
 *   activations held (a pair runs layer by layer);
 * - --ep-dispatch deepep: each token once over the network to every other node holding one of
 *   its experts, then over NVLink once to each rank holding one; with --ep-routing
 *   round-robin, to the ranks and nodes its k consecutive experts lie on;
 * - idle time per device = makespan - busy equals (p-1)(F+B) for 1F1B and (p-1)(F+B-2W) for
 *   ZB1P (ZB-H1), B the full backward as DeepSeek writes it (vpipe's B + W), and
 *   (p/2-1)(F&B+B-3W) for DualPipe where F equals vpipe's B and F&B their sum (below). */
#include <math.h>
#include <stdlib.h>

#include "price/price_internal.h"
#include "price_util.h"

#define RATE (112.0 / 132.0)

static double pair_formula(double c, double x) {
    return fmax(x, c + x * (1 - RATE));
}

/* The simulator's F&B time from xf, xb and comm_rate, against the formula. */
static void test_pair_time(void **state) {
    (void)state;
    vp_costs c = tu_costs(2, 3, 1, 0);
    vp_schedule *s = tu_build("dualpipev", 2, 4, 0, c);
    vp_cost_model *cm = NULL;
    vp_memcfg mem = vp_memcfg_default();
    assert_int_equal(vp_cost_model_new(s, &c, &mem, &cm, NULL), VP_OK);
    vp_op op = {.kind = VP_OP_FB, .bkind = VP_OP_BW, .stage = 0, .mb = 1, .stage2 = 3, .mb2 = 0};
    double f = cm->f[0], bw = cm->b[3] + cm->w[3];
    TU_NEAR(vp_cost_model_op_time(cm, &op), f + bw); /* no communication: the sum */
    cm->comm_rate = RATE;
    const double xs[][2] = {{0.2, 0.3}, {0.5, 0.5}, {0.9, 1.4}, {0.0, 0.4}};
    for (int k = 0; k < 4; k++) {
        cm->xf[0] = xs[k][0];
        cm->xb[3] = xs[k][1];
        double x = xs[k][0] + xs[k][1];
        TU_NEAR(vp_cost_model_op_time(cm, &op), pair_formula(f + bw - x, x));
    }
    cm->xf[0] = 10, cm->xb[3] = 10; /* communication outlasts compute: all of it shows */
    TU_NEAR(vp_cost_model_op_time(cm, &op), 20);
    vp_cost_model_free(cm);
    vp_schedule_free(s);
}

/* price_util.h's Qwen3-30B-A3B at EP ep. */
static void qwen_at(qwen *q, int ep) {
    qwen_setup(q);
    q->t.ep = ep;
}

static vp_price_result *price(const vp_price_setup *su, const char *family, int p, int m,
                              vp_schedule **s) {
    vp_spec spec = vp_spec_make(p, m);
    vp_price_result *r = NULL;
    vp_error err = {0};
    if (vp_price_family(su, family, &spec, &r, s, &err) != VP_OK)
        fail_msg("%s p=%d m=%d: %s", family, p, m, err.message);
    return r;
}

/* DualPipeV at EP 8: each stage's hidden all-to-all from the pairs' formula. */
static void test_dualpipev_hidden(void **state) {
    (void)state;
    qwen q;
    qwen_at(&q, 8);
    vp_schedule *s = NULL;
    vp_price_result *r = price(&q.su, "dualpipev", 4, 16, &s);
    double *hidden = calloc((size_t)s->S, sizeof *hidden), *seen = calloc((size_t)s->S, 8);
    long pairs = 0;
    for (int d = 0; d < s->p; d++)
        for (int k = 0; k < s->dev[d].n; k++) {
            const vp_op *op = &s->dev[d].ops[k];
            if (op->kind == VP_OP_F || op->kind == VP_OP_FB)
                seen[op->stage]++;
            if (op->kind != VP_OP_FB)
                continue;
            pairs++;
            const vp_price_stage *a = &r->stage[op->stage], *b = &r->stage[op->stage2];
            double x = a->a2a_f_ms + b->a2a_b_ms;
            double sum = a->f_ms + b->b_ms + b->w_ms;
            double h = sum - pair_formula(sum - x, x);
            assert_true(h > 0 && h <= RATE * x + 1e-9);
            hidden[op->stage] += h * a->a2a_f_ms / x;
            hidden[op->stage2] += h * b->a2a_b_ms / x;
        }
    assert_int_equal(r->pairs, pairs);
    assert_true(pairs > 0);
    for (int st = 0; st < s->S; st++) {
        TU_NEAR(r->stage[st].a2a_hidden_ms, hidden[st] / seen[st]);
        assert_true(r->stage[st].a2a_f_ms > 0);
    }
    char *text = vp_price_overlap_text(r), *json = vp_price_result_json(r);
    assert_non_null(strstr(text, "hidden by"));
    assert_non_null(strstr(json, "\"a2a_exposed_ms\""));
    free(text);
    free(json);
    free(hidden);
    free(seen);
    vp_schedule_free(s);
    vp_price_result_free(r);
}

/* EP 1: no all-to-all, nothing hidden, the report says the overlap buys nothing, and the
 * makespan is the pairs run as the sum of their halves (xf, xb zeroed). */
static void test_ep1_buys_nothing(void **state) {
    (void)state;
    qwen q;
    qwen_at(&q, 1);
    vp_schedule *s = NULL;
    vp_price_result *r = price(&q.su, "dualpipev", 4, 16, &s);
    vp_price_layout *lay = NULL;
    assert_int_equal(vp_price_layout_new(&q.su, s, &lay, NULL), VP_OK);
    for (int st = 0; st < s->S; st++) {
        assert_true(r->stage[st].a2a_hidden_ms == 0 && r->stage[st].a2a_f_ms == 0);
        lay->cm->xf[st] = lay->cm->xb[st] = 0;
    }
    vp_sim *plain = NULL;
    assert_int_equal(vp_simulate(s, lay->cm, &plain, NULL), VP_OK);
    TU_NEAR(r->makespan_s * 1e3, plain->makespan);
    char *text = vp_price_overlap_text(r);
    assert_non_null(text);
    assert_non_null(strstr(text, "buys nothing"));
    free(text);
    vp_sim_free(plain);
    vp_price_layout_free(lay);
    vp_schedule_free(s);
    vp_price_result_free(r);
}

/* --ep-overlap without a pipeline (Megatron-LM's combined 1F1B with PP 1): F, m - 1 pairs,
 * BW; makespan f + (m - 1) pair + b + w; faster than without the overlap. */
static void test_ep_overlap_no_pipeline(void **state) {
    (void)state;
    qwen q;
    qwen_at(&q, 16);
    int m = 8;
    vp_price_result *plain = price(&q.su, "1f1b", 1, m, NULL);
    q.t.ep_overlap = true;
    vp_schedule *s = NULL;
    vp_price_result *r = price(&q.su, "1f1b", 1, m, &s);
    assert_int_equal(r->pairs, m - 1);
    const vp_price_stage *g = &r->stage[0];
    double x = g->a2a_f_ms + g->a2a_b_ms, sum = g->f_ms + g->b_ms + g->w_ms;
    TU_NEAR(r->makespan_s * 1e3, sum + (m - 1) * pair_formula(sum - x, x));
    assert_true(r->step_time_s < plain->step_time_s);
    TU_NEAR(plain->makespan_s * 1e3, m * sum);
    /* layer by layer, a pair's memory moves from its start to its end: one microbatch held */
    TU_NEAR(r->memory[0].activations, plain->memory[0].activations);
    vp_schedule_free(s);
    vp_price_result_free(r);
    vp_price_result_free(plain);
}

/* --ep-overlap on a pipeline: 1F1B rebuilt with 2(p-d-1)+1 forwards before the first pair on
 * device d; interleaved's forward-then-backward fused; both validate and hide all-to-all. */
static void test_ep_overlap_pipelines(void **state) {
    (void)state;
    qwen q;
    qwen_at(&q, 8);
    q.t.ep_overlap = true;
    const char *families[] = {"1f1b", "interleaved"};
    for (int k = 0; k < 2; k++) {
        vp_schedule *s = NULL;
        vp_price_result *r = price(&q.su, families[k], 4, 16, &s);
        assert_int_equal(vp_schedule_validate(s, NULL), VP_OK);
        assert_true(r->pairs > 0);
        for (int d = 0; k == 0 && d < 4; d++) {
            int lead = 0;
            while (s->dev[d].ops[lead].kind == VP_OP_F)
                lead++;
            assert_int_equal(lead, 2 * (4 - d - 1) + 1);
        }
        double hidden = 0;
        for (int st = 0; st < r->S; st++)
            hidden += r->stage[st].a2a_hidden_ms;
        assert_true(hidden > 0);
        vp_schedule_free(s);
        vp_price_result_free(r);
    }
}

/* --ep-overlap where the combined 1F1B does not pair: the zero-bubble families (B apart from
 * W), 1F1B with R passes, the V placement, and DualPipe's families (their own pairs) price
 * exactly as without it, and the note names the family. */
static void test_ep_overlap_unpaired(void **state) {
    (void)state;
    qwen q;
    qwen_at(&q, 8);
    const char *families[] = {"zb-h1", "zb-2p",     "1f1b-r",  "v-half",
                              "zb-v",  "dualpipev", "dualpipe"};
    for (int k = 0; k < 7; k++) {
        q.t.ep_overlap = false;
        vp_price_result *plain = price(&q.su, families[k], 4, 16, NULL);
        q.t.ep_overlap = true;
        vp_price_result *r = price(&q.su, families[k], 4, 16, NULL);
        assert_int_equal(r->pairs, plain->pairs);
        assert_true(r->makespan_s == plain->makespan_s);
        assert_true(r->memory[0].activations == plain->memory[0].activations);
        char *text = vp_price_overlap_text(r);
        assert_non_null(text);
        if (plain->pairs == 0)
            assert_non_null(strstr(text, families[k]));
        else /* DualPipe's pairs hide what they hide */
            assert_non_null(strstr(text, "hidden by"));
        free(text);
        vp_price_result_free(r);
        vp_price_result_free(plain);
    }
}

/* A token's k of E experts miss a block of `local` of them with probability
 * C(E - local, k) / C(E, k). */
static double misses(double E, double local, int k) {
    double p = 1;
    for (int i = 0; i < k; i++)
        p *= E - local - i > 0 ? (E - local - i) / (E - i) : 0;
    return p;
}

/* DeepEP's dispatch (--ep-dispatch deepep) at EP 16 over two nodes of 8: a token's 8 of 128
 * experts miss the other node with probability C(64, 8) / C(128, 8), so it crosses the network
 * q = 1 - that times, one copy instead of the all-to-all's half of its 8 rows; NVLink carries
 * a row per token and rank (a rank's 8 experts are missed with probability C(120, 8) /
 * C(128, 8)) staying in the node, plus those forwarded from the receiving GPU. Inside one
 * node it is the all-to-all of those rows, fewer than the 8 the plain all-to-all sends. Per
 * MoE layer, F has a dispatch and a combine. */
static void test_deepep_dispatch(void **state) {
    (void)state;
    qwen q;
    qwen_at(&q, 16);
    q.t.ep_dispatch = VP_EP_DEEPEP;
    vp_price_result *r = price(&q.su, "1f1b", 1, 2, NULL);
    double bytes = 4096.0 * 8 * 2048 * 2, eff = q.g.comm_efficiency;
    double ranks = 16 * (1 - misses(128, 8, 8)); /* a token's ranks, of its 8 rows */
    double network = bytes / 8 * (1 - misses(128, 64, 8));
    double nvlink = bytes / 8 * ranks * (7.0 / 16 + 0.5 * 7.0 / 8);
    double one =
        fmax(network / (q.g.inter_bw * eff), nvlink / (q.g.intra_bw * eff)) + q.g.inter_latency;
    TU_NEAR(r->stage[0].a2a_f_ms / 48, 2 * one * 1e3);
    q.t.ep_dispatch = VP_EP_ALLTOALL; /* every row: half of them leave the node */
    vp_price_result *a = price(&q.su, "1f1b", 1, 2, NULL);
    double all =
        fmax(bytes * 8 / 16 / (q.g.inter_bw * eff), bytes * 7 / 16 / (q.g.intra_bw * eff)) +
        q.g.inter_latency;
    TU_NEAR(a->stage[0].a2a_f_ms / 48, 2 * all * 1e3);
    assert_true(r->stage[0].a2a_f_ms < a->stage[0].a2a_f_ms / 3);
    qwen_at(&q, 8); /* inside one node: 16 experts a rank */
    q.t.ep_dispatch = VP_EP_DEEPEP;
    vp_price_result *in = price(&q.su, "1f1b", 1, 2, NULL);
    q.t.ep_dispatch = VP_EP_ALLTOALL;
    vp_price_result *in2 = price(&q.su, "1f1b", 1, 2, NULL);
    double to_ranks = bytes / 8 * 8 * (1 - misses(128, 16, 8)) * 7 / 8;
    TU_NEAR(in->stage[0].a2a_f_ms / 48,
            2 * (to_ranks / (q.g.intra_bw * eff) + q.g.intra_latency) * 1e3);
    TU_NEAR(in2->stage[0].a2a_f_ms / 48,
            2 * (bytes * 7 / 8 / (q.g.intra_bw * eff) + q.g.intra_latency) * 1e3);
    assert_true(in->stage[0].a2a_f_ms < 0.7 * in2->stage[0].a2a_f_ms);
    vp_price_result_free(r);
    vp_price_result_free(a);
    vp_price_result_free(in);
    vp_price_result_free(in2);
}

/* log C(n, k). */
static double log_choose(double n, double k) {
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1);
}

/* Group-limited routing (vp_arch.expert_groups, group_top_k) at EP 16 over two nodes: with
 * 2 groups and 1 a token, a group is a node and a token reaches the other node half the
 * time; with 8 groups and 4 a token, a node holds 4 groups and a token misses it when none
 * of its 8 experts, drawn from its 4 groups' 64, lands in the j of them the node holds; a
 * rank's 8 experts lie in one group of 16, picked half the time. */
static void test_group_limited_routing(void **state) {
    (void)state;
    qwen q;
    qwen_at(&q, 16);
    q.t.ep_dispatch = VP_EP_DEEPEP;
    double bytes = 4096.0 * 8 * 2048 * 2, eff = q.g.comm_efficiency;
    const struct {
        int groups, per_token;
        double reach; /* the probability a token reaches the other node */
        double ranks; /* the ranks a token reaches (the 8 of its group with 2 groups) */
    } cases[] = {{2, 1, 0.5, 8 * (1 - misses(64, 8, 8))}, {8, 4, -1, -1}};
    double miss = 0; /* 8 groups, 4 a token, 4 on the node: j of them picked */
    for (int j = 0; j <= 4; j++) {
        double hyp = exp(log_choose(4, j) + log_choose(4, 4 - j) - log_choose(8, 4));
        miss += hyp * misses(64, 16 * j, 8);
    }
    /* a rank holds 8 experts of one group: the token picked it (1/2) and missed its 8 */
    double rank_miss = 0.5 + 0.5 * misses(64, 8, 8);
    for (int c = 0; c < 2; c++) {
        q.a.expert_groups = cases[c].groups;
        q.a.group_top_k = cases[c].per_token;
        double reach = cases[c].reach >= 0 ? cases[c].reach : 1 - miss;
        double ranks = cases[c].ranks >= 0 ? cases[c].ranks : 16 * (1 - rank_miss);
        double nvlink = bytes / 8 * ranks * (7.0 / 16 + 0.5 * 7.0 / 8);
        vp_price_result *r = price(&q.su, "1f1b", 1, 2, NULL);
        double one = fmax(bytes / 8 * reach / (q.g.inter_bw * eff), nvlink / (q.g.intra_bw * eff)) +
                     q.g.inter_latency;
        TU_NEAR(r->stage[0].a2a_f_ms / 48, 2 * one * 1e3);
        vp_price_result_free(r);
    }
    /* fewer nodes reached than without groups (a node's 64 of the 128 experts missed) */
    assert_true(miss > misses(128, 64, 8));
    q.a.group_top_k = 0; /* refused: a group a token at least */
    tp_check_refused(&q.a, &q.t, "group_top_k in [1, 8]");
}

/* The mean number of blocks of E / B experts that token t's experts tk .. tk + k - 1 (modulo
 * E) reach, over tokens 0 .. E - 1: counted one token at a time. */
static double reached(int E, int k, int B) {
    double sum = 0;
    for (int t = 0; t < E; t++) {
        bool hit[64] = {false};
        for (int i = 0; i < k; i++)
            hit[((t * k + i) % E) / (E / B)] = true;
        for (int b = 0; b < B; b++)
            sum += hit[b];
    }
    return sum / E;
}

/* Round-robin routing (--ep-routing round-robin, NeMo AutoModel's fake balanced gate) under
 * DeepEP: a token's k consecutive experts reach S ranks and S' nodes, counted token by token.
 * At EP 16 over two nodes with 8 of 128 experts a token sits on one rank (8 experts a rank)
 * and crosses the network half the time; with 6 a token some straddle two ranks (and
 * wrap past expert 127). Inside one node (EP 8) it is the all-to-all of one row a token. The
 * plain all-to-all sends every row either way. */
static void test_round_robin_routing(void **state) {
    (void)state;
    qwen q;
    const int ks[] = {8, 6};
    for (int c = 0; c < 2; c++) {
        qwen_at(&q, 16);
        q.a.top_k = ks[c];
        q.t.ep_dispatch = VP_EP_DEEPEP;
        q.t.ep_routing = VP_ROUTING_ROUND_ROBIN;
        double bytes = 4096.0 * ks[c] * 2048 * 2, eff = q.g.comm_efficiency;
        double ranks = reached(128, ks[c], 16), nodes = reached(128, ks[c], 2);
        if (c == 0)
            assert_true(ranks == 1 && nodes == 1);
        else
            assert_true(ranks > 1 && ranks < 2 && nodes > 1 && nodes < 2);
        double network = bytes / ks[c] * nodes / 2;
        double nvlink = bytes / ks[c] * ranks * (7.0 / 16 + 0.5 * 7.0 / 8);
        double one =
            fmax(network / (q.g.inter_bw * eff), nvlink / (q.g.intra_bw * eff)) + q.g.inter_latency;
        vp_price_result *r = price(&q.su, "1f1b", 1, 2, NULL);
        TU_NEAR(r->stage[0].a2a_f_ms / 48, 2 * one * 1e3);
        q.t.ep_routing = VP_ROUTING_RANDOM;
        vp_price_result *random = price(&q.su, "1f1b", 1, 2, NULL);
        assert_true(r->stage[0].a2a_f_ms < random->stage[0].a2a_f_ms);
        vp_price_result_free(r);
        vp_price_result_free(random);
    }
    qwen_at(&q, 8);
    q.t.ep_dispatch = VP_EP_DEEPEP;
    q.t.ep_routing = VP_ROUTING_ROUND_ROBIN;
    double bytes = 4096.0 * 8 * 2048 * 2, eff = q.g.comm_efficiency;
    vp_price_result *in = price(&q.su, "1f1b", 1, 2, NULL);
    TU_NEAR(in->stage[0].a2a_f_ms / 48,
            2 * (bytes / 8 * 7 / 8 / (q.g.intra_bw * eff) + q.g.intra_latency) * 1e3);
    q.t.ep_dispatch = VP_EP_ALLTOALL;
    vp_price_result *all = price(&q.su, "1f1b", 1, 2, NULL);
    TU_NEAR(all->stage[0].a2a_f_ms / 48,
            2 * (bytes * 7 / 8 / (q.g.intra_bw * eff) + q.g.intra_latency) * 1e3);
    vp_price_result_free(in);
    vp_price_result_free(all);
}

/* Idle time per device (makespan - busy) of family at (p, m = 8p) under F, B, W, FB. */
static void idle_equals(const char *family, int p, double f, double b, double w, double fb,
                        double want) {
    vp_costs c = tu_costs(f, b, w, 0);
    c.fb = fb;
    vp_schedule *s = tu_build(family, p, 8 * p, 0, c);
    vp_sim *sim = tu_sim(s, c, NULL);
    for (int d = 0; d < p; d++)
        if (fabs(sim->makespan - sim->dev_busy[d] - want) > 1e-9)
            fail_msg("%s p=%d F=%g B=%g W=%g F&B=%g device %d: idle %g, formula %g", family, p, f,
                     b, w, fb, d, sim->makespan - sim->dev_busy[d], want);
    vp_sim_free(sim);
    vp_schedule_free(s);
}

/* DeepSeek-V3's table (B its full backward, vpipe's B + W): 1F1B (PP-1)(F+B), ZB1P
 * (PP-1)(F+B-2W), DualPipe (PP/2-1)(F&B+B-3W). 1F1B and ZB1P (vpipe's ZB-H1) hold for any
 * costs. DualPipe's holds exactly where the table's accounting does: a forward as long as an
 * input backward (F = vpipe's B) and F&B the sum of its halves F + B + W; elsewhere its idle
 * depends on which chain is critical (e.g. p 8, F = B = W = 1, F&B = 2: 1 to 3 per device
 * against the formula's 3). */
static void test_bubble_formulas(void **state) {
    (void)state;
    const double any[][3] = {{1, 1, 1}, {1, 2, 1}, {2, 3, 1}, {1.5, 2.5, 0.5}, {3, 1, 0.25}};
    const double even[][2] = {{1, 1}, {1, 0.5}, {2, 2}, {2, 0.5}, {1, 0.25}, {3, 1}};
    for (int p = 4; p <= 8; p *= 2) {
        for (int k = 0; k < 5; k++) {
            double F = any[k][0], B = any[k][1], W = any[k][2], full = B + W;
            idle_equals("1f1b", p, F, B, W, -1, (p - 1) * (F + full));
            idle_equals("zb-h1", p, F, B, W, -1, (p - 1) * (F + full - 2 * W));
        }
        for (int k = 0; k < 6; k++) {
            double F = even[k][0], B = F, W = even[k][1], full = B + W, fb = F + full;
            idle_equals("dualpipe", p, F, B, W, fb, (p / 2 - 1) * (fb + full - 3 * W));
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair_time),
        cmocka_unit_test(test_dualpipev_hidden),
        cmocka_unit_test(test_ep1_buys_nothing),
        cmocka_unit_test(test_ep_overlap_no_pipeline),
        cmocka_unit_test(test_ep_overlap_pipelines),
        cmocka_unit_test(test_ep_overlap_unpaired),
        cmocka_unit_test(test_deepep_dispatch),
        cmocka_unit_test(test_round_robin_routing),
        cmocka_unit_test(test_group_limited_routing),
        cmocka_unit_test(test_bubble_formulas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
