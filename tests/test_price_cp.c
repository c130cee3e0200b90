/* Context parallelism priced: each rank's tokens, saved bytes and attention FLOPs 1/cp of
 * the sequence's, the key-value exchange of ring attention (p2p) hidden under each block's
 * attention or not, the all-gather's exposed time and its buffers, the data-parallel
 * reduction and the distributed optimizer over DP x CP, and the CP degrees refused. Every
 * figure is checked against its formula written out here. */
#include <math.h>
#include <string.h>

#include "price/price_internal.h"
#include "price_util.h"

/* llama3-8b at seq tokens with FlashAttention and SP at TP tp, CP cp, DP dp. */
typedef struct cfg {
    vp_arch a;
    vp_gpu g;
    vp_workload t;
    vp_price_setup su;
} cfg;

static void make(cfg *c, int seq, int tp, int cp, int dp) {
    c->a = tp_preset("llama3-8b");
    c->a.max_positions = seq > c->a.max_positions ? seq : c->a.max_positions;
    c->g = tp_gpu("h100-80gb");
    c->t = vp_workload_default(&c->a);
    c->t.seq = seq;
    c->t.tp = tp;
    c->t.sp = tp > 1;
    c->t.cp = cp;
    c->t.dp = dp;
    c->t.flash = true;
    c->su = (vp_price_setup){.arch = &c->a, .gpu = &c->g, .work = &c->t, .split = VP_SPLIT_EVEN};
}

/* A rank holds seq / cp tokens: its saved bytes, its linears' FLOPs and its attention core
 * (queries seq / cp against all seq keys) are 1/cp of CP 1's, with or without
 * FlashAttention (without it the s x s scores shrink to seq / cp x seq). */
static void test_per_rank_share(void **state) {
    (void)state;
    for (int flash = 0; flash < 2; flash++) {
        cfg one, four;
        make(&one, 8192, 2, 1, 1);
        make(&four, 8192, 2, 4, 1);
        one.t.flash = four.t.flash = flash;
        vp_price_facts f1, f4;
        assert_int_equal(vp_price_part_facts(&one.a, &one.t, VP_PRICE_LAYER, &f1, NULL), VP_OK);
        assert_int_equal(vp_price_part_facts(&four.a, &four.t, VP_PRICE_LAYER, &f4, NULL), VP_OK);
        TU_NEAR(f4.act_bytes, f1.act_bytes / 4);
        TU_NEAR(f4.keep_bytes, f1.keep_bytes / 4);
        TU_NEAR(f4.flops_f, f1.flops_f / 4);
        TU_NEAR(f4.flops_w, f1.flops_w / 4);
        TU_NEAR(f4.params, f1.params); /* CP ranks hold the same weights */
        double d = 4096.0 / 32;        /* head dim */
        TU_NEAR(vp__attention_flops(&four.a, &four.t, 0), 2 * (8192.0 / 4) * 8192 * 32 * 2 * d / 2);
    }
    assert_true(vp__tokens(&(vp_workload){.mbs = 2, .seq = 8192, .cp = 4}) == 4096);
}

/* Ring attention: a ring step sends the rank's keys and values, kv bytes (KV heads / tp x
 * head dim x seq / cp x 2 bytes x 2, KV_BYTES); F shows (cp - 1) x max(0, send - attention /
 * cp), B (cp - 1) x max(0, 2 send - attention_b / cp) plus the last dK, dV home. */
static void ring(const cfg *c, double *f, double *b, double *send, double kv) {
    const vp_gpu *g = &c->g;
    int cp = c->t.cp, tp = c->t.tp;
    assert_true(fabs(vp__cp_kv_bytes(&c->a, &c->t) - kv) < 1e-6 * kv);
    bool inter = (cp - 1) * tp >= g->gpus_per_node;
    double bw = inter ? fmin(g->p2p_bw, g->inter_bw * g->comm_efficiency) : g->p2p_bw;
    *send = kv / bw + (inter ? g->inter_latency : g->intra_latency);
    double af, ab;
    vp__attention_seconds(&c->su, 0, &af, &ab);
    *f = (cp - 1) * fmax(0, *send - af / cp);
    *b = (cp - 1) * fmax(0, 2 * *send - ab / cp) + *send;
}

#define KV_BYTES(c) (8.0 / (c).t.tp * 128 * ((double)(c).t.seq / (c).t.cp) * 2 * 2)

static void test_p2p_hidden_and_not(void **state) {
    (void)state;
    /* 131072 tokens over 8 ranks of a node: every send hides under its block's attention */
    cfg hid;
    make(&hid, 131072, 1, 8, 1);
    double f, b, want_f, want_b, send;
    vp__cp_exposed(&hid.su, 0, &f, &b);
    ring(&hid, &want_f, &want_b, &send, KV_BYTES(hid));
    assert_true(want_f == 0 && f == 0);
    TU_NEAR(b, send); /* only the last dK, dV going home shows */
    /* 4096 tokens over 8 ranks spaced TP 8 apart (8 nodes): the sends outlast the blocks */
    cfg bare;
    make(&bare, 4096, 8, 8, 1);
    vp__cp_exposed(&bare.su, 0, &f, &b);
    ring(&bare, &want_f, &want_b, &send, KV_BYTES(bare));
    assert_true(want_f > 0 && f > 0);
    TU_NEAR(f, want_f);
    TU_NEAR(b, want_b);
    /* the exposure is in the layer's passes: the same layer exchanging by all-gather
       differs by exactly the two exchanges' difference (its compute is the same) */
    vp__piece_price ring_p[VP__PIECES], gather_p[VP__PIECES];
    vp__price_pieces(&bare.su, ring_p);
    bare.t.cp_comm = VP_CP_ALLGATHER;
    vp__price_pieces(&bare.su, gather_p);
    double gf, gb;
    vp__cp_exposed(&bare.su, 0, &gf, &gb);
    TU_NEAR(gather_p[0].f_ms - ring_p[0].f_ms, (gf - f) * 1e3);
    TU_NEAR(gather_p[0].b_ms - ring_p[0].b_ms, (gb - b) * 1e3);
    assert_true(vp__cp_buffer_bytes(&hid.a, &hid.t) == 3 * vp__cp_kv_bytes(&hid.a, &hid.t));
}

/* The all-gather: F gathers the whole sequence's K, V over the CP group (cp ranks tp
 * apart) before the attention, B gathers again and reduce-scatters dK, dV: all exposed;
 * while a layer's attention runs the rank holds the gathered K, V and in B the whole dK, dV
 * (2 cp x its own K, V), in the gathers item of its memory. */
static void test_allgather(void **state) {
    (void)state;
    cfg c;
    make(&c, 65536, 4, 4, 1);
    c.t.cp_comm = VP_CP_ALLGATHER;
    double kv = vp__cp_kv_bytes(&c.a, &c.t), f, b;
    vp__cp_exposed(&c.su, 0, &f, &b);
    double gather = vp__collective_seconds(&c.g, VP__GATHER, &(vp__group){0, 4, 4}, 4 * kv);
    TU_NEAR(f, gather);
    TU_NEAR(b, 2 * gather);
    TU_NEAR(vp__cp_buffer_bytes(&c.a, &c.t), 2 * 4 * kv);
    vp_schedule *s = NULL;
    vp_spec spec = vp_spec_make(1, 1);
    assert_int_equal(vp_family_build("1f1b", &spec, &s, NULL), VP_OK);
    vp_price_layout *ag = NULL, *p2p = NULL;
    assert_int_equal(vp_price_layout_new(&c.su, s, &ag, NULL), VP_OK);
    c.t.cp_comm = VP_CP_P2P;
    assert_int_equal(vp_price_layout_new(&c.su, s, &p2p, NULL), VP_OK);
    TU_NEAR(ag->fixed[0].gathers - p2p->fixed[0].gathers, 8 * kv - 3 * kv);
    vp_price_layout_free(ag);
    vp_price_layout_free(p2p);
    vp_schedule_free(s);
}

/* torchtitan: its Llama repeats the keys and values to the query heads (32, not 8 for
 * llama3-8b), and PyTorch's ring attention all-gathers them beside the first block's
 * attention (1/cp of the rank's) and passes the fp32 dK, dV around the ring in B, a block
 * beside each step and the last exposed; it holds the gathered K, V and three fp32 dK, dV
 * blocks. Across nodes (TP 8, CP 8 at 32768 tokens) the gather outlasts the first block. */
static void test_torchtitan(void **state) {
    (void)state;
    cfg c;
    make(&c, 32768, 8, 8, 1);
    double gqa = vp__cp_kv_bytes(&c.a, &c.t);
    c.t.framework = VP_FRAMEWORK_TORCHTITAN;
    double kv = vp__cp_kv_bytes(&c.a, &c.t);
    TU_NEAR(kv, 4 * gqa);
    TU_NEAR(kv, 32.0 / 8 * 128 * (32768.0 / 8) * 2 * 2);
    double f, b;
    vp__cp_exposed(&c.su, 0, &f, &b);
    double ring_f, ring_b, send; /* p2p is the same ring, wider blocks */
    ring(&c, &ring_f, &ring_b, &send, kv);
    TU_NEAR(f, ring_f);
    TU_NEAR(b, ring_b);
    c.t.cp_comm = VP_CP_ALLGATHER;
    vp__cp_exposed(&c.su, 0, &f, &b);
    double gather = vp__collective_seconds(&c.g, VP__GATHER, &(vp__group){0, 8, 8}, 8 * kv);
    double dkv = 2 * send - c.g.inter_latency; /* an fp32 block: twice the bytes, one latency */
    double af, ab;
    vp__attention_seconds(&c.su, 0, &af, &ab);
    assert_true(gather > af / 8 && f > 0);
    TU_NEAR(f, gather - af / 8);
    TU_NEAR(b, fmax(0, gather - ab / 8) + 7 * fmax(0, dkv - ab / 8) + dkv);
    TU_NEAR(vp__cp_buffer_bytes(&c.a, &c.t), 8 * kv + 3 * 2 * kv);
    c.t.framework = VP_FRAMEWORK_MEGATRON;
    vp__cp_exposed(&c.su, 0, &f, &b);
    TU_NEAR(f, vp__collective_seconds(&c.g, VP__GATHER, &(vp__group){0, 8, 8}, 8 * gqa));
}

/* CP ranks hold the same weights: gradients reduce over the DP x CP ranks (a group of dp x
 * cp ranks tp apart), the distributed optimizer shards over them, and a step counts tp x cp
 * x dp x p GPUs for dp x m x mbs sequences. */
static void test_dp_over_dp_cp(void **state) {
    (void)state;
    cfg two, four, plain;
    make(&two, 8192, 2, 2, 2);
    make(&four, 8192, 2, 1, 4);
    make(&plain, 8192, 2, 1, 2);
    two.t.zero = four.t.zero = plain.t.zero = 1;
    vp_rank_memory m = {.params = 1e9 * 2, .grads = 1e9 * 4};
    vp__dp_cost c2, c4, cp1;
    vp__dp_cost_of(&two.su, 1, &m, 0, 0, 0, &c2);
    vp__dp_cost_of(&four.su, 1, &m, 0, 0, 0, &c4);
    vp__dp_cost_of(&plain.su, 1, &m, 0, 0, 0, &cp1);
    vp__group grp = {1L * 2 * 4, 2, 4};
    double want = vp__collective_seconds(&two.g, VP__GATHER, &grp, m.grads) +
                  vp__collective_seconds(&two.g, VP__GATHER, &grp, m.params);
    TU_NEAR(c2.reduce_s, want);
    TU_NEAR(c2.reduce_s, c4.reduce_s);
    assert_true(cp1.reduce_s < c2.reduce_s); /* 2 ranks move less per rank than 4 */
    assert_int_equal(vp__weight_dp(&two.t), 4);
    vp_price_result *r2 = tp_price(&two.su, "1f1b", 2, 4), *r4 = tp_price(&four.su, "1f1b", 2, 4);
    TU_NEAR(r2->memory[0].optimizer, r4->memory[0].optimizer); /* sharded over 4 both */
    assert_int_equal(r2->gpus, 2 * 2 * 2 * 2);
    assert_int_equal(r2->cp, 2);
    TU_NEAR(r2->tokens_per_s_per_gpu, 2.0 * 4 * 8192 / r2->step_time_s / 16);
    vp_price_result_free(r2);
    vp_price_result_free(r4);
}

/* CP must leave every rank 2 chunks (2 cp dividing the sequence); vpipe's own model has no
 * context parallelism. */
static void test_refusals(void **state) {
    (void)state;
    cfg c;
    make(&c, 8192, 1, 3, 1);
    tp_check_refused(&c.a, &c.t, "CP 3 must divide sequence 8192");
    c.t.seq = 8190;
    c.t.cp = 2; /* 4095 tokens each: odd, no 2 chunks */
    tp_check_refused(&c.a, &c.t, "2 x CP must divide the sequence");
    c.t.seq = 8192;
    c.t.cp = 8192; /* one token each */
    tp_check_refused(&c.a, &c.t, "CP 8192 must divide");
    c.t.cp = 4096;
    assert_int_equal(vp_price_check(&c.su, NULL), VP_OK);
    vp_arch own = vp_arch_vpipe(2, 64, 2, 64);
    vp_workload w = vp_workload_default(&own);
    w.seq = 64;
    w.cp = 2;
    tp_check_refused(&own, &w, "vpipe's own model cannot split its attention over CP 2");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_per_rank_share), cmocka_unit_test(test_p2p_hidden_and_not),
        cmocka_unit_test(test_allgather),      cmocka_unit_test(test_torchtitan),
        cmocka_unit_test(test_dp_over_dp_cp),  cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
