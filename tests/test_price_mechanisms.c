/* The mechanisms real runs show, each on its own: collectives priced by where the group's
 * ranks sit (ring or tree, latency and bandwidth), the data-parallel reduction overlapped
 * bucket by bucket with the last backward, tensor-parallel communication pipelined with
 * the linears, blocking pipeline sends, the per-layer and per-chunk overheads, and the
 * memory a process holds beyond its tensors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "price/price_internal.h"
#include "price_util.h"

#define GIB 1073741824.0

/* A collective over a group that fills nodes runs at min(NVLink, members x NIC); with one
 * member per node at the NIC's rate; inside a node at NVLink's; latencies per ring step;
 * across many nodes a small all-reduce takes the tree (log2 nodes network latencies). */
static void test_collectives_by_placement(void **state) {
    (void)state;
    vp_gpu g = tp_gpu("a100-80gb");
    double S = 1e9, eff = g.comm_efficiency;
    vp__group dp8 = {0, 1, 32}, dp1 = {0, 8, 32}, node = {0, 1, 8};
    double ring8 = 31.0 / 32 * S / (fmin(g.intra_bw, 8 * g.inter_bw) * eff) + 31 * g.inter_latency;
    double ring1 = 31.0 / 32 * S / (g.inter_bw * eff) + 31 * g.inter_latency;
    double inside = 7.0 / 8 * S / (g.intra_bw * eff) + 7 * g.intra_latency;
    TU_NEAR(vp__collective_seconds(&g, VP__GATHER, &dp8, S), ring8);
    TU_NEAR(vp__collective_seconds(&g, VP__GATHER, &dp1, S), ring1);
    TU_NEAR(vp__collective_seconds(&g, VP__GATHER, &node, S), inside);
    TU_NEAR(vp__collective_seconds(&g, VP__ALL_REDUCE, &node, S), 2 * inside);
    assert_true(vp__collective_seconds(&g, VP__ALL_REDUCE, &dp1, S) == 2 * ring1); /* ring */
    vp__group wide = {0, 8, 1024};
    double small = 1e4, tree = 2 * small / (g.inter_bw * eff) + 2 * 10 * g.inter_latency;
    TU_NEAR(vp__collective_seconds(&g, VP__ALL_REDUCE, &wide, small), tree); /* tree */
    assert_true(vp__collective_seconds(&g, VP__GATHER, &(vp__group){0, 1, 1}, S) == 0);
}

/* The DP reduction: hidden behind the last backward but for its last bucket when the
 * window is long enough, the rest exposed when not; the distributed optimizer's gather
 * goes before the next step's first forward; a share hides that share of all of it. */
static void test_dp_overlap(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.dp = 64;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t};
    vp_rank_memory m = {.params = 16e9, .grads = 32e9}; /* 8B parameters */
    vp__group grp = {0, 1, 64};
    double all = vp__collective_seconds(&g, VP__ALL_REDUCE, &grp, m.grads);
    double bucket = vp__collective_seconds(&g, VP__ALL_REDUCE, &grp, 64e6 * 4);
    vp__dp_cost c;
    vp__dp_cost_of(&su, 0, &m, 0, 100, 100, &c); /* a long backward hides all but a bucket */
    TU_NEAR(c.reduce_s, all);
    TU_NEAR(c.after_s, bucket);
    assert_true(c.before_s == 0);
    vp__dp_cost_of(&su, 0, &m, 0, 0.01, 0.01, &c); /* a short one leaves the rest exposed */
    TU_NEAR(c.after_s, all - 0.01);
    t.zero = 1;
    vp__dp_cost_of(&su, 0, &m, 0, 0.01, 0.01, &c);
    double rs = vp__collective_seconds(&g, VP__GATHER, &grp, m.grads);
    double ag = vp__collective_seconds(&g, VP__GATHER, &grp, m.params);
    TU_NEAR(c.reduce_s, rs + ag);
    TU_NEAR(c.after_s, rs - 0.01);
    TU_NEAR(c.before_s, ag - 0.01);
    t.dp_overlap = 0.25;
    vp__dp_cost_of(&su, 0, &m, 0, 100, 100, &c);
    TU_NEAR(c.after_s, 0.75 * (rs + ag));
    t.dp = 1;
    vp__dp_cost_of(&su, 0, &m, 0, 0, 0, &c);
    assert_true(c.reduce_s == 0 && c.after_s == 0);
}

/* In a pipeline the last stage's reduction hides behind the flush of the earlier ones:
 * with the modelled overlap the step is no longer than the makespan plus what the first
 * device leaves exposed, and shorter than with no overlap at all. */
static void test_dp_overlap_in_pipeline(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("a100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 4096;
    t.dp = 16;
    t.tp = 2;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    vp_price_result *modelled = tp_price(&su, "1f1b", 4, 8);
    t.dp_overlap = 0;
    vp_price_result *none = tp_price(&su, "1f1b", 4, 8);
    assert_true(modelled->step_time_s < none->step_time_s);
    TU_NEAR(none->step_time_s, none->makespan_s + none->optimizer_s + none->dp_reduce_s);
    assert_true(modelled->dp_exposed_s >= 0 && modelled->dp_exposed_s < modelled->dp_reduce_s);
    vp_price_result_free(modelled);
    vp_price_result_free(none);
}

/* Blocking sends are in the passes (F sends its output on, B its input gradient back) and
 * the hop is the link's latency; overlapped sends leave the passes and become the hop.
 * The per-chunk overhead shows only with blocking sends; the per-layer overhead is in
 * every pass of every layer. */
static void test_sends_and_overheads(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("a100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 2048;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    vp_price_result *block = tp_price(&su, "1f1b", 4, 8);
    t.pp_overlap = true;
    vp_price_result *over = tp_price(&su, "1f1b", 4, 8);
    g.layer_overhead += 1e-3;
    vp_price_result *slow = tp_price(&su, "1f1b", 4, 8);
    double send = vp__send_seconds(&su, 1, 2) * 1e3, chunk = g.chunk_overhead * 1e3;
    const vp_price_stage *b = &block->stage[1], *o = &over->stage[1], *s = &slow->stage[1];
    TU_NEAR(b->f_ms, o->f_ms + send + chunk);
    TU_NEAR(b->b_ms, o->b_ms + vp__send_seconds(&su, 1, 0) * 1e3 + chunk);
    TU_NEAR(b->w_ms, o->w_ms + chunk);
    TU_NEAR(block->hop_ms, g.intra_latency * 1e3);
    TU_NEAR(over->hop_ms, send);
    int n = s->l1 - s->l0; /* one more ms per layer and pass */
    TU_NEAR(s->f_ms, o->f_ms + n);
    TU_NEAR(s->b_ms, o->b_ms + n);
    TU_NEAR(s->w_ms, o->w_ms + n);
    vp_price_result_free(block);
    vp_price_result_free(over);
    vp_price_result_free(slow);
}

/* --tp-comm-overlap: what shows of a pass's TP collectives is the first of tp chunks, or
 * what the linears cannot cover; never more than without it. */
static void test_tp_overlap(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-70b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 4096;
    t.tp = 8;
    t.sp = t.pp_overlap = true;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    vp_price_result *plain = tp_price(&su, "1f1b", 4, 8);
    t.tp_overlap = true;
    vp_price_result *over = tp_price(&su, "1f1b", 4, 8);
    double tensor = 4096.0 * a.hidden * 2;
    double gather = vp__collective_seconds(&g, VP__GATHER, &(vp__group){0, 1, 8}, tensor) * 1e3;
    int n = plain->stage[1].l1 - plain->stage[1].l0;
    /* per layer, F runs two gathers and two scatters: 4 gathers' time, of which a layer's
       linears (longer than the collectives here) hide all but an eighth */
    TU_NEAR(plain->stage[1].f_ms - over->stage[1].f_ms, n * 4 * gather * 7 / 8);
    assert_true(over->step_time_s < plain->step_time_s);
    vp_price_result_free(plain);
    vp_price_result_free(over);
}

/* What a process holds beyond the model's tensors: the head's 16-bit logits on the rank
 * with the head, the all-gather buffers of sequence parallelism (and TP overlap), the
 * allocator's cached blocks as a share of the allocated bytes, the context, and a
 * communicator's buffers per group the rank joins; `fits` checks the whole process, and
 * `tight` whether it leaves the room a plan keeps. */
static void test_process_memory(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 8192;
    t.mbs = 2;
    t.tp = 2;
    t.dp = 4;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    vp_price_result *r = tp_price(&su, "1f1b", 4, 8);
    for (int d = 0; d < 4; d++) {
        const vp_rank_memory *m = &r->memory[d];
        double logits = d == 3 ? 2.0 * 8192 * 2 * a.vocab / 2 : 0;
        int groups = 2 + (d == 0 || d == 3 ? 1 : 2); /* TP, DP, pipeline neighbours */
        TU_NEAR(m->logits, logits);
        TU_NEAR(m->gathers, 0); /* TP without sequence parallelism reduces in place */
        TU_NEAR(m->context, g.context_bytes);
        TU_NEAR(m->comm, groups * g.comm_buffer_bytes);
        TU_NEAR(m->fragmentation, g.frag_fraction * m->allocated);
        TU_NEAR(m->total, m->reserved + m->context + m->comm + m->reserve);
    }
    assert_true(r->fits == (r->memory_max_bytes <= g.memory_bytes));
    /* tight: it fits with less room than the margin a plan keeps, 10% of the capacity where
       no peak was measured on the accelerator, else the mean memory error measured there */
    double peak = r->memory_max_bytes;
    vp_price_result_free(r);
    const struct {
        double capacity, measured;
        bool fits, tight;
    } cases[] = {{peak / 0.95, 0, true, true},
                 {peak / 0.85, 0, true, false},
                 {peak * 0.99, 0, false, false},
                 {peak / 0.85, 0.2, true, true}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        g.memory_bytes = cases[k].capacity;
        g.expected.memory_runs = cases[k].measured > 0 ? 3 : 0;
        g.expected.memory_mean = cases[k].measured;
        r = tp_price(&su, "1f1b", 4, 8);
        TU_NEAR(r->memory_max_bytes, peak);
        TU_NEAR(r->margin_bytes,
                (cases[k].measured > 0 ? cases[k].measured : 0.1) * cases[k].capacity);
        TU_NEAR(vp_price_margin_default(&g), r->margin_bytes);
        assert_true(r->fits == cases[k].fits && r->tight == cases[k].tight);
        vp_price_result_free(r);
    }
    g = tp_gpu("h100-80gb");
    t.sp = true; /* gathers each linear's input into one buffer of the whole sequence */
    r = tp_price(&su, "1f1b", 4, 8);
    TU_NEAR(r->memory[1].gathers, 8192.0 * 2 * a.hidden * 2);
    vp_price_result_free(r);
    t.tp_overlap = true; /* and Transformer Engine's communication buffer beside it */
    r = tp_price(&su, "1f1b", 4, 8);
    TU_NEAR(r->memory[1].gathers, 2 * 8192.0 * 2 * a.hidden * 2);
    vp_price_result_free(r);
}

/* The optimizer step at the HBM's achieved bandwidth: per parameter of the shard, three
 * reads of the gradient, the fp32 weights and moments read and written, the 16-bit copy
 * written. */
static void test_optimizer(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("a100-80gb");
    vp_workload t = vp_workload_default(&a);
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    vp_price_result *r = tp_price(&su, "1f1b", 2, 4);
    double most = 0;
    for (int d = 0; d < 2; d++) {
        double params = r->memory[d].params / 2;
        double s = params * (3 * 4 + 2 * (4 + 8) + 2) / (g.hbm_bandwidth * g.hbm_efficiency);
        most = s > most ? s : most;
    }
    TU_NEAR(r->optimizer_s, most);
    vp_price_result_free(r);
}

/* FlashAttention-2's kernels (attn_kernel fa2) run the attention core at attn_fa2_f and
 * attn_fa2_b of the accelerator's fused rates: on Hopper FlashAttention-3's paper's ratios
 * (forward 335 / 616, backward 322 / 561), on Ampere, where FlashAttention-2 is what its
 * rates measure, no change; without --flash the kernel choice does nothing; an accelerator
 * file may give its own ratios. */
static void test_attention_kernels(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_workload t = vp_workload_default(&a);
    t.seq = 8192;
    t.flash = true;
    struct {
        const char *gpu;
        double f, b;
    } cases[] = {{"h100-80gb", 335.0 / 616, 322.0 / 561}, {"a100-80gb", 1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vp_gpu g = tp_gpu(cases[i].gpu);
        vp_workload fa2 = t;
        fa2.attn_kernel = VP_ATTN_FA2;
        vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t};
        vp_price_setup su2 = {.arch = &a, .gpu = &g, .work = &fa2};
        double f, b, f2, b2;
        vp__attention_seconds(&su, 0, &f, &b);
        vp__attention_seconds(&su2, 0, &f2, &b2);
        TU_NEAR(f2, f / cases[i].f);
        TU_NEAR(b2, b / cases[i].b);
        t.flash = fa2.flash = false; /* the s x s matrix's multiplies: no FlashAttention */
        vp__attention_seconds(&su, 0, &f, &b);
        vp__attention_seconds(&su2, 0, &f2, &b2);
        assert_true(f2 == f && b2 == b);
        t.flash = true;
    }
    vp_gpu g;
    vp_error err = {0};
    const char *file = "{\"base\": \"h100-80gb\", \"name\": \"x\", \"attn_fa2_f\": 0.5}";
    assert_int_equal(vp_gpu_parse_json(file, strlen(file), &g, &err), VP_OK);
    assert_true(g.attn_fa2_f == 0.5 && g.attn_fa2_b == 322.0 / 561);
    const char *bad = "{\"base\": \"h100-80gb\", \"name\": \"x\", \"attn_fa2_b\": 1.5}";
    assert_int_equal(vp_gpu_parse_json(bad, strlen(bad), &g, &err), VP_EPARSE);
}

/* torchtitan (vp_workload.framework): its selective recomputation is the per-op policy
 * (each layer keeps its input, the query, value, attention and gate outputs and the FC2
 * output; B reruns the key, output and up projections), priced for dense GQA SwiGLU layers
 * only; its loss holds 8 bytes a logit beside the fp32 softmax where Megatron-LM's holds
 * the 16-bit logits (and its pipeline keeps every microbatch's output, the 16-bit logits,
 * to the step's end); its FP8 keeps no weight copies and saves the linears' inputs at 16
 * bits, casting each weight in F and again in B. */
static void test_torchtitan(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 8192;
    t.flash = true;
    t.recompute = VP_RECOMPUTE_SELECTIVE;
    vp_workload tt = t, none = t, full = t;
    tt.framework = VP_FRAMEWORK_TORCHTITAN;
    none.recompute = VP_RECOMPUTE_NONE;
    full.recompute = VP_RECOMPUTE_FULL;
    vp_price_facts mg, op, all, in;
    vp_error err = {0};
    assert_int_equal(vp_price_part_facts(&a, &t, VP_PRICE_LAYER, &mg, &err), VP_OK);
    assert_int_equal(vp_price_part_facts(&a, &tt, VP_PRICE_LAYER, &op, &err), VP_OK);
    assert_int_equal(vp_price_part_facts(&a, &none, VP_PRICE_LAYER, &all, &err), VP_OK);
    assert_int_equal(vp_price_part_facts(&a, &full, VP_PRICE_LAYER, &in, &err), VP_OK);
    double T = 8192, h = a.hidden, kv = 8 * 128, f = a.ffn;
    /* kept from F: input, query, value, attention output, gate, FC2 output (2 bytes); the
       log-sum-exp (4 bytes a head) */
    TU_NEAR(op.act_bytes, T * (2 * (h + h + kv + h + f + h) + 4 * a.heads));
    assert_true(mg.act_bytes == all.act_bytes && op.act_bytes < all.act_bytes / 2 &&
                op.act_bytes > in.act_bytes);
    TU_NEAR(op.flops_r, 2 * T * h * (kv + h + f));
    assert_true(mg.flops_r == 0 && vp_price_selective_differs(&a, &tt) &&
                !vp_price_selective_differs(&a, &t));
    /* the loss and the FP8 copies, on the last stage of a pipeline */
    t.recompute = tt.recompute = VP_RECOMPUTE_NONE;
    t.fp8 = tt.fp8 = VP_FP8_TENSORWISE;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    vp_price_setup st = {.arch = &a, .gpu = &g, .work = &tt, .split = VP_SPLIT_EVEN};
    vp_price_result *rm = tp_price(&su, "1f1b", 2, 4), *rt = tp_price(&st, "1f1b", 2, 4);
    TU_NEAR(rm->memory[1].logits, T * a.vocab * 2);
    /* beside them torchtitan's pipeline keeps the other 3 microbatches' 16-bit logits */
    TU_NEAR(rt->memory[1].logits, T * a.vocab * 8 + 3 * T * a.vocab * 2);
    assert_true(rm->memory[0].fp8_weights > 0 && rt->memory[0].fp8_weights == 0);
    assert_true(rt->memory[0].activations > rm->memory[0].activations); /* 16-bit inputs */
    vp_price_result_free(rm);
    vp_price_result_free(rt);
    vp__gemm gm[VP__MAX_GEMMS];
    int n = vp__piece_gemms(&a, &t, VP_PRICE_LAYER, 0, gm);
    double f8, b8, f16, b16, weights = 0;
    vp__fp8_cast_seconds(&st, gm, n, &f16, &b16);
    vp__fp8_cast_seconds(&su, gm, n, &f8, &b8);
    for (int i = 0; i < n; i++)
        weights += gm[i].n * gm[i].k;
    double per_element = 6 / (g.hbm_bandwidth * g.hbm_efficiency); /* tensorwise's bytes */
    TU_NEAR(f16 - f8, weights * per_element);
    TU_NEAR(b16 - b8, weights * per_element);
    assert_true(vp__fp8_step_seconds(&st, 1e9) == 0 && vp__fp8_step_seconds(&su, 1e9) > 0);
    /* refused where the per-op policy is not priced, and for vpipe's own model */
    vp_arch moe = tp_preset("qwen3-30b-a3b");
    vp_workload tm = vp_workload_default(&moe);
    tm.framework = VP_FRAMEWORK_TORCHTITAN;
    tm.recompute = VP_RECOMPUTE_SELECTIVE;
    tp_check_refused(&moe, &tm, "mixture-of-experts layers");
    assert_false(vp_price_selective_differs(&moe, &tm));
    vp_arch own = vp_arch_vpipe(2, 64, 2, 64);
    vp_workload to = vp_workload_default(&own);
    to.framework = VP_FRAMEWORK_TORCHTITAN;
    tp_check_refused(&own, &to, "not on torchtitan");
}

/* torchtitan's pipeline (torch.distributed.pipelining's PipelineStage) allocates a receive
 * buffer per microbatch each way and keeps them; a stage's input is its buffer, its output
 * stays until its B, its input gradient (the buffer's .grad) until the step ends. Against
 * Megatron-LM's one buffer per remote neighbour, 1F1B on p ranks with m microbatches peaks
 * p outputs higher on rank 0 and m - p + d gradients higher on a middle rank d (at the
 * last steady F, when m - p + d B have run); the last rank's peak is its F's bytes and the
 * m - 1 gradients of the B before its last F. */
static void test_torchtitan_pipeline_buffers(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload t = vp_workload_default(&a);
    t.seq = 4096;
    t.flash = t.sp = true;
    t.tp = 2;
    t.recompute = VP_RECOMPUTE_FULL;
    vp_workload tt = t;
    tt.framework = VP_FRAMEWORK_TORCHTITAN;
    vp_price_setup su = {.arch = &a, .gpu = &g, .work = &t, .split = VP_SPLIT_EVEN};
    vp_price_setup st = {.arch = &a, .gpu = &g, .work = &tt, .split = VP_SPLIT_EVEN};
    double io = 4096.0 * a.hidden * 2 / 2; /* one boundary tensor, sequence-parallel */
    const char *families[] = {"1f1b", "interleaved"};
    for (int f = 0; f < 2; f++) {
        int p = 4, m = 8;
        vp_price_result *rm = tp_price(&su, families[f], p, m);
        vp_price_result *rt = tp_price(&st, families[f], p, m);
        for (int d = 0; d < p; d++) {
            double want = 0;
            for (int k = 0; k < rt->S; k++)
                if (rt->stage[k].device == d)
                    want += io * m * (!rt->stage[k].first + !rt->stage[k].last);
            TU_NEAR(rt->memory[d].buffers, want);
            assert_true(rm->memory[d].buffers <= 2 * io * rm->S / p + 1);
        }
        if (f == 0) {
            TU_NEAR(rt->memory[0].activations - rm->memory[0].activations, p * io);
            for (int d = 1; d < p - 1; d++)
                TU_NEAR(rt->memory[d].activations - rm->memory[d].activations, (m - p + d) * io);
            TU_NEAR(rt->memory[p - 1].activations, rt->stage[p - 1].act_bytes + (m - 1) * io);
            TU_NEAR(rm->memory[p - 1].activations, rm->stage[p - 1].act_bytes);
            assert_true(rt->stage[0].tail_bytes == 0 && rt->stage[1].tail_bytes == io);
        }
        vp_price_result_free(rm);
        vp_price_result_free(rt);
    }
    /* zb-v on 2 ranks: stages 1 and 2 share rank 1, which hands stage 1's output to stage
       2 as its input and stage 2's input gradient back: stage 1 keeps no output of its own
       (its F bytes one input less), stage 2 no gradient (its F bytes one output more, one
       input less) */
    t.tp = tt.tp = 1; /* the head's input whole either way */
    t.sp = tt.sp = false;
    io *= 2;
    vp_price_result *vm = tp_price(&su, "zb-v", 2, 4), *vt = tp_price(&st, "zb-v", 2, 4);
    const double delta[4] = {io, -io, 0, -io}, tail[4] = {0, io, 0, io};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(vt->stage[k].device, k == 1 || k == 2);
        TU_NEAR(vt->stage[k].act_bytes - vm->stage[k].act_bytes, delta[k]);
        TU_NEAR(vt->stage[k].tail_bytes, tail[k]);
    }
    TU_NEAR(vt->memory[0].buffers, 2 * 4 * io);
    TU_NEAR(vt->memory[1].buffers, 4 * 4 * io);
    vp_price_result_free(vm);
    vp_price_result_free(vt);
}

/* A saved tensor's bytes by name (0 when the part does not save it). */
static double saved_in(const vp_arch *a, const vp_workload *t, vp_price_part part,
                       const char *name) {
    vp_saved_tensor out[64];
    int n = vp_price_tensors(a, t, part, out, 64);
    assert_true(n > 0 && n <= 64);
    for (int i = 0; i < n; i++)
        if (strcmp(out[i].name, name) == 0)
            return out[i].bytes;
    return 0;
}

static double saved(const vp_arch *a, const vp_workload *t, const char *name) {
    return saved_in(a, t, VP_PRICE_LAYER, name);
}

/* The inputs of the column-parallel linears under TP 8 with SP: Megatron-LM saves their
 * sequence shard (and gathers it again in B), torchtitan the gathered tensor whole, in FP8
 * when Float8 gathers it (a layer's; the head's stays 16-bit); the layer's time stays what
 * its kernels move. */
static void test_gathered_inputs(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-70b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload mg = vp_workload_default(&a);
    mg.seq = 8192;
    mg.flash = mg.sp = true;
    mg.tp = 8;
    vp_workload tt = mg, t8 = mg, one = mg;
    tt.framework = t8.framework = one.framework = VP_FRAMEWORK_TORCHTITAN;
    t8.fp8 = VP_FP8_TENSORWISE;
    one.tp = 1;
    double T = 8192, h = a.hidden;
    const char *in[] = {"QKV input (norm 1 output)", "FC1 input (norm 2 output)"};
    for (int i = 0; i < 2; i++) {
        TU_NEAR(saved(&a, &mg, in[i]), T * h * 2 / 8);
        TU_NEAR(saved(&a, &tt, in[i]), T * h * 2);
        TU_NEAR(saved(&a, &t8, in[i]), T * h);
        TU_NEAR(saved(&a, &one, in[i]), T * h * 2);
    }
    assert_true(saved(&a, &tt, "norm 1 input") == saved(&a, &mg, "norm 1 input"));
    const char *head = "head input (final norm output)";
    TU_NEAR(saved_in(&a, &mg, VP_PRICE_HEAD, head), T * h * 2 / 8);
    TU_NEAR(saved_in(&a, &t8, VP_PRICE_HEAD, head), T * h * 2);
    vp_price_setup sm = {.arch = &a, .gpu = &g, .work = &mg, .split = VP_SPLIT_EVEN};
    vp_price_setup st = {.arch = &a, .gpu = &g, .work = &tt, .split = VP_SPLIT_EVEN};
    double secm[4], sect[4], lin[3];
    vp__piece_seconds(&sm, VP_PRICE_LAYER, 0, secm, lin);
    vp__piece_seconds(&st, VP_PRICE_LAYER, 0, sect, lin);
    for (int i = 0; i < 4; i++)
        TU_NEAR(sect[i], secm[i]);
}

/* torchtitan without torch.compile (vp_workload.eager): each layer's F and B, and the
 * recomputation of its per-op policy, take the bytes its eager elementwise ops move beyond the
 * fused kernels at the HBM's rate, counted per token here from the ops: the two RMSNorms
 * (F 32, B 70 bytes more per element, on the sequence shard), the rotary embedding of the
 * queries and keys (16 and 16) and SwiGLU's gate (4 and 8), on the rank's heads and MLP
 * slice; W is untouched. With FP8 its casts are the eager ones, 19 bytes per element where
 * the fused per-tensor cast moves 6. Megatron-LM, and models other than its Llama layers,
 * are refused. */
static void test_torchtitan_eager(void **state) {
    (void)state;
    vp_arch a = tp_preset("llama3-8b");
    vp_gpu g = tp_gpu("h100-80gb");
    vp_workload fused = vp_workload_default(&a);
    fused.seq = 8192;
    fused.mbs = 2;
    fused.tp = 2;
    fused.flash = fused.sp = true;
    fused.framework = VP_FRAMEWORK_TORCHTITAN;
    fused.recompute = VP_RECOMPUTE_SELECTIVE;
    vp_workload eager = fused;
    eager.eager = true;
    double T = 2 * 8192, h = 4096, rope = (4096 + 1024) / 2.0, gate = 14336 / 2.0;
    double rate = g.hbm_bandwidth * g.hbm_efficiency;
    double f = (T / 2 * 2 * h * 32 + T * (rope * 16 + gate * 4)) / rate;
    double b = (T / 2 * 2 * h * 70 + T * (rope * 16 + gate * 8)) / rate;
    vp_price_setup sf = {.arch = &a, .gpu = &g, .work = &fused, .split = VP_SPLIT_EVEN};
    vp_price_setup se = {.arch = &a, .gpu = &g, .work = &eager, .split = VP_SPLIT_EVEN};
    double secf[4], sece[4], lin[3];
    vp__piece_seconds(&sf, VP_PRICE_LAYER, 0, secf, lin);
    vp__piece_seconds(&se, VP_PRICE_LAYER, 0, sece, lin);
    TU_NEAR(sece[0] - secf[0], f);
    TU_NEAR(sece[1] - secf[1], b);
    TU_NEAR(sece[2], secf[2]);
    TU_NEAR(sece[3] - secf[3], f); /* the per-op policy reruns the elementwise ops */
    vp__piece_seconds(&se, VP_PRICE_HEAD, 0, sece, lin);
    vp__piece_seconds(&sf, VP_PRICE_HEAD, 0, secf, lin);
    TU_NEAR(sece[0], secf[0]);
    fused.recompute = eager.recompute = VP_RECOMPUTE_FULL; /* R is the whole F again */
    vp__piece_seconds(&sf, VP_PRICE_LAYER, 0, secf, lin);
    vp__piece_seconds(&se, VP_PRICE_LAYER, 0, sece, lin);
    TU_NEAR(sece[3] - secf[3], f);
    /* FP8: torchao's casts of the inputs, gradients and weights at 19 bytes, not 6 */
    fused.fp8 = eager.fp8 = VP_FP8_TENSORWISE;
    vp__gemm gm[VP__MAX_GEMMS];
    int n = vp__piece_gemms(&a, &fused, VP_PRICE_LAYER, 0, gm);
    double cf, cb, ef, eb;
    vp__fp8_cast_seconds(&sf, gm, n, &cf, &cb);
    vp__fp8_cast_seconds(&se, gm, n, &ef, &eb);
    assert_true(cf > 0 && cb > 0);
    TU_NEAR(ef, cf * 19 / 6);
    TU_NEAR(eb, cb * 19 / 6);
    /* refused: Megatron-LM's kernels are fused; a mixture of experts is not its Llama */
    vp_error err = {0};
    eager.framework = VP_FRAMEWORK_MEGATRON;
    assert_int_equal(vp_price_check(&se, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "torchtitan's without torch.compile"));
    vp_arch moe = tp_preset("qwen3-30b-a3b");
    vp_workload tm = vp_workload_default(&moe);
    tm.framework = VP_FRAMEWORK_TORCHTITAN;
    tm.eager = true;
    vp_price_setup sm = {.arch = &moe, .gpu = &g, .work = &tm, .split = VP_SPLIT_EVEN};
    assert_int_equal(vp_price_check(&sm, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "mixture-of-experts layers"));
}

/* Megatron-LM's recompute modules (vp_workload.recompute_modules): none named is core_attn
 * (with FlashAttention: nothing rerun); layernorm leaves the two norm outputs to B (kept
 * from B until W); mla_up_proj drops latent attention's queries, keys and values and reruns
 * its two up-projections; mlp a dense layer's MLP, its linears rerun; moe_act the routed
 * experts' FC2 inputs; a module the model lacks, modules without selective, and unknown
 * names are refused. */
static void test_recompute_modules(void **state) {
    (void)state;
    vp_arch a = tp_preset("deepseek-v3");
    vp_workload t = vp_workload_default(&a);
    t.seq = 4096;
    t.flash = true;
    t.ep = t.dp = 8;
    vp_workload sel = t, norm, up, act, mlp;
    sel.recompute = VP_RECOMPUTE_SELECTIVE;
    norm = up = act = mlp = sel;
    norm.recompute_modules = VP_RECOMPUTE_LAYERNORM;
    up.recompute_modules = VP_RECOMPUTE_MLA_UP_PROJ;
    act.recompute_modules = VP_RECOMPUTE_MOE_ACT;
    mlp.recompute_modules = VP_RECOMPUTE_MLP;
    unsigned moe = vp__layer_kind(&a, a.layers - 1), dense = vp__layer_kind(&a, 0);
    vp_price_facts none, f0, fn, fu, fa, fm, fm0;
    vp__piece_facts(&a, &t, VP_PRICE_LAYER, moe, &none);
    vp__piece_facts(&a, &sel, VP_PRICE_LAYER, moe, &f0);
    vp__piece_facts(&a, &norm, VP_PRICE_LAYER, moe, &fn);
    vp__piece_facts(&a, &up, VP_PRICE_LAYER, moe, &fu);
    vp__piece_facts(&a, &act, VP_PRICE_LAYER, moe, &fa);
    vp__piece_facts(&a, &mlp, VP_PRICE_LAYER, dense, &fm);
    vp__piece_facts(&a, &sel, VP_PRICE_LAYER, dense, &fm0);
    double T = 4096, h = a.hidden, H = a.heads;
    assert_true(f0.act_bytes == none.act_bytes && f0.flops_r == 0); /* core_attn, flash */
    TU_NEAR(none.act_bytes - fn.act_bytes, 2 * T * h * 2);
    TU_NEAR(fn.keep_bytes, none.keep_bytes); /* what W reads is rebuilt, still kept for W */
    assert_true(fn.flops_r == 0);
    double q = H * (a.qk_nope + a.qk_rope), k = q, v = H * a.v_head;
    TU_NEAR(none.act_bytes - fu.act_bytes, T * (q + k + v) * 2);
    TU_NEAR(fu.flops_r, 2 * T * (q * a.q_lora + H * (a.qk_nope + a.v_head) * a.kv_lora));
    double rows = vp__expert_rows(&a, &t) * t.etp;
    TU_NEAR(none.act_bytes - fa.act_bytes, rows * a.expert_ffn * 2);
    TU_NEAR(fm.flops_r, 2 * T * 3 * h * a.ffn); /* SwiGLU's gate and up, then down */
    TU_NEAR(fm0.act_bytes - fm.act_bytes, T * 3 * a.ffn * 2);
    /* refusals */
    vp_arch l = tp_preset("llama3-8b");
    vp_workload lw = vp_workload_default(&l);
    lw.recompute = VP_RECOMPUTE_SELECTIVE;
    lw.recompute_modules = VP_RECOMPUTE_MLA_UP_PROJ;
    tp_check_refused(&l, &lw, "recompute module mla_up_proj: model llama3-8b has no latent");
    lw.recompute_modules = VP_RECOMPUTE_MOE_ACT;
    tp_check_refused(&l, &lw, "has no routed experts");
    lw.recompute = VP_RECOMPUTE_FULL;
    lw.recompute_modules = VP_RECOMPUTE_LAYERNORM;
    tp_check_refused(&l, &lw, "need recompute selective under Megatron-LM (got full)");
    unsigned set = 0;
    vp_error err = {0};
    assert_int_equal(
        vp_recompute_modules_parse("layernorm moe_act,mla_up_proj+core_attn", &set, &err), VP_OK);
    assert_int_equal(set, VP_RECOMPUTE_LAYERNORM | VP_RECOMPUTE_MOE_ACT | VP_RECOMPUTE_MLA_UP_PROJ |
                              VP_RECOMPUTE_CORE_ATTN);
    char buf[96];
    assert_string_equal(vp_recompute_modules_text(set, buf, sizeof buf),
                        "core_attn,layernorm,mla_up_proj,moe_act");
    assert_int_equal(vp_recompute_modules_parse("layernorm,mlps", &set, &err), VP_EINVAL);
    assert_non_null(strstr(err.message, "unknown recompute module 'mlps'"));
    assert_int_equal(vp_recompute_modules_parse(" ,", &set, &err), VP_EINVAL);
    assert_string_equal(vp_recompute_modules_text(63, buf, 12), "core_attn,l");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_by_placement),
        cmocka_unit_test(test_dp_overlap),
        cmocka_unit_test(test_dp_overlap_in_pipeline),
        cmocka_unit_test(test_sends_and_overheads),
        cmocka_unit_test(test_tp_overlap),
        cmocka_unit_test(test_process_memory),
        cmocka_unit_test(test_optimizer),
        cmocka_unit_test(test_attention_kernels),
        cmocka_unit_test(test_torchtitan),
        cmocka_unit_test(test_torchtitan_pipeline_buffers),
        cmocka_unit_test(test_gathered_inputs),
        cmocka_unit_test(test_torchtitan_eager),
        cmocka_unit_test(test_recompute_modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
