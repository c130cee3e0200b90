/* The whole configuration: a data x tensor x pipeline parallel x microbatch x schedule x
 * recomputation search for a real model on a real cluster, and exports that launch it.
 *
 * Module `hybrid` (src/hybrid/). Depends on price (every configuration is priced with the
 * same memory and time model as `simulate --model`), plan (the V building-block levels of
 * the memory-budget planner), families, block, sim, io (the PyTorch CSV of an export),
 * schedule and base.
 *
 * What it searches. Given N GPUs and a global batch of B sequences: every tensor-parallel
 * degree TP within a node that divides the heads and the KV heads, every pipeline degree
 * PP and data-parallel degree DP with DP x TP x PP = N, every microbatch size mbs with
 * DP x mbs dividing B (m = B / (DP x mbs) microbatches per step and DP rank), every
 * recomputation (none, selective unless FlashAttention makes it the same as none, full),
 * and every family (vpipe list; `interleaved` with 2..max_chunks chunks per device) plus
 * "v-block": the V building blocks on the memory-budget planner's frontier (vp_plan_run at
 * unit costs, pipeline degrees up to vblock_max_pp), of which the fastest that fits is
 * taken. A configuration is legal when its
 * family builds the shape and the layers fill its stages.
 *
 * How it stays fast. Every candidate is bounded from its layout alone (vp_price_layout_
 * bound: the busiest device's passes with the chains before them, model states and one
 * microbatch's activations). Candidates whose memory bound exceeds the capacity are pruned;
 * the rest are visited in increasing order of their step-time bound, in batches of fixed
 * size. A candidate is pruned when its bound is at least the K-th best step time found
 * and at least the best of every group it competes in (its family, and "1f1b-r" for 1F1B
 * with full recomputation). A candidate that is evaluated is built with its real costs,
 * its memory checked from its op order (over the capacity: not simulated), and simulated.
 * Pruning decisions use only the results of earlier batches, so the answer, the counts and
 * the order never depend on the number of threads; only elapsed_s and a time limit do.
 */
#ifndef VPIPE_HYBRID_H
#define VPIPE_HYBRID_H

#include "vpipe/plan.h"
#include "vpipe/price.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One configuration and what it prices at. */
typedef struct vp_hybrid_config {
    char family[32]; /* a registered family, or "v-block" */
    char group[32];  /* what it competes as: its family, or "1f1b-r" for 1F1B with full
                        recomputation (the papers' 1F1B-R baseline; "1f1b" is then
                        1F1B without it) */
    char params[96]; /* "v-block": the block (vp_vblock_format); else "" */
    vp_vblock vblock;
    int dp, tp, pp;
    int ep, etp; /* expert and expert-tensor parallelism (1, 1 for a dense model; 0 as 1) */
    int cp;      /* context parallelism (0 as 1), exchanging as the request's work.cp_comm */
    int zero;    /* the ZeRO stage (vp_workload.zero; read when the request searches it) */
    int v;       /* chunks per device of `interleaved`; 0 for other families */
    int mbs, m;  /* microbatch size; microbatches per step on each DP rank */
    vp_recompute recompute;
    unsigned recompute_modules; /* with selective: Megatron-LM's modules it reruns (a set of
                                   vp_recompute_module; 0: core_attn, its default) */
    vp_fp8 fp8; /* the FP8 recipe it runs (the search's: the request's, or searched) */
    double step_time_s, mfu, bubble; /* bubble: 1 - busy / longest device span */
    double memory_max_bytes;         /* the largest rank's total */
    bool fits;
    double offload;        /* the share of activations it offloads (uniform policy,
                              vp_schedule_offload), 0: none */
    double host_max_bytes; /* with offload: the largest rank's host bytes */
    double copy_occupancy; /* ... and the busiest copy engine's share of the step */
    double headroom_bytes; /* capacity - memory_max_bytes */
    bool tight;            /* fits, but with less headroom than the request's margin */
} vp_hybrid_config;

/* Called between batches from the calling thread: candidates visited and to visit. */
typedef void (*vp_hybrid_progress)(void *arg, long done, long total);

/* What is searched. Everything pointed to is borrowed. */
typedef struct vp_hybrid_request {
    const vp_arch *arch;
    const vp_gpu *gpu;
    vp_workload work;    /* seq, sp (applied where TP > 1), zero, flash, precision,
                            dp_overlap and reserve_bytes as given; tp, dp, mbs,
                            recompute and ep are searched unless fixed below (its ep
                            and etp are not read); its fp8 is every configuration's
                            unless fp8_search */
    vp_split_goal split; /* how every candidate's layers split (VP_SPLIT_TIME default) */
    int gpus;            /* N */
    int global_batch;    /* B, sequences per step */
    int tp, pp, dp, mbs; /* > 0 fixes the degree or size; 0 searches it */
    int ep;              /* > 0 fixes EP; 0 searches the divisors of the experts that
                            divide TP x DP / ETP (a dense model: 1) */
    int etp;             /* > 0 fixes ETP; 0: 1 (not searched) */
    int cp;              /* > 0 fixes CP; 0 searches the CP degrees that leave every rank 2
                            chunks of the sequence (2 CP dividing it), CP > 1 only when the
                            sequence's activations need it: see vp__hy_cp_wanted */
    int zero_search;     /* 1: the ZeRO stage searched, 0..3 (one stage where DP and
                            expert-DP are 1: the stages shard nothing there); 0: work.zero
                            for every configuration */
    int recompute;       /* -1 searches; a vp_recompute fixes it */
    int offload;         /* 1: a configuration whose op order leaves less than the margin
                            below the capacity is tried offloading (the uniform policy at
                            the smallest of the shares 1, 1/2, 3/4, 1/4 found by bisection
                            that leaves the margin, or else that fits, on the device and the
                            host memory); offload never speeds a schedule up, so it only
                            makes configurations fit */
    int max_chunks;      /* `interleaved` with 2..max_chunks chunks (0: 4; 1: none) */
    int vblock_max_pp;   /* "v-block" at pipeline degrees up to this (0: 32): finding the
                            levels takes the budget planner seconds at 32, tens at 64 */
    int top;             /* configurations ranked (0: 10) */
    int threads;         /* worker threads (0 or 1: the calling thread only) */
    double time_limit_s; /* stop after this many seconds with the best so far (0: none); checked
                            while enumerating and between batches, after one batch at least */
    double margin_bytes; /* room a configuration should leave below the capacity: one with
                            less is tight, ranked after every one that fits with room (0:
                            none; < 0, the default: vp_price_margin_default) */
    vp_hybrid_progress progress; /* NULL: none */
    void *progress_arg;
    int vocab_parallel; /* 1: every configuration vocabulary-parallel (schedule.h) */
    int fp8_search;     /* 1: FP8 searched, off and vp_price_fp8_best's recipe; 0: every
                           configuration runs work.fp8 */
} vp_hybrid_request;

/* A request for a model and accelerator with the workload's defaults (vp_workload_default),
 * every dimension searched, recompute -1, split VP_SPLIT_TIME, margin -1 (the default), the
 * rest zero. */
VP_API vp_hybrid_request vp_hybrid_request_make(const vp_arch *arch, const vp_gpu *gpu, int gpus,
                                                int global_batch);

/* A configuration priced in full: the workload it ran under, its result and schedule
 * (owned). */
typedef struct vp_hybrid_priced {
    vp_hybrid_config config;
    vp_workload work;
    vp_price_result *result;
    vp_schedule *schedule;
} vp_hybrid_priced;

/* Prices config under req exactly as the search does (the workload with the config's
 * degrees and FP8 recipe, its family built with the real costs, or its V block), into *out
 * (release with vp_hybrid_priced_release); config's figures are refreshed in out->config,
 * whether it fits or not. VP_EINVAL when the configuration is not legal for req, errors of
 * pricing. */
VP_API vp_status vp_hybrid_price(const vp_hybrid_request *req, const vp_hybrid_config *config,
                                 vp_hybrid_priced *out, vp_error *err);
VP_API void vp_hybrid_priced_release(vp_hybrid_priced *priced);

/* Result of vp_hybrid_run. Owned by the caller (vp_hybrid_free). */
typedef struct vp_hybrid {
    vp_hybrid_config *top; /* [n_top] the fastest configurations that fit, fastest first
                              (those with room before the tight ones) */
    int n_top;
    vp_hybrid_config *best; /* [n_best] the fastest that fits of every group (family, and
                               "1f1b-r"), fastest first (room before tight) */
    double margin_bytes;    /* the margin the search kept */
    int n_best;
    vp_hybrid_priced winner; /* top[0] priced: memory per rank, split, schedule */
    vp_hybrid_config versus; /* 1F1B at the winner's DP, TP, PP, mbs and recomputation,
                                priced whether it fits or not (family "" when the winner is
                                1F1B or 1F1B does not build there) */
    long candidates;         /* legal configurations (a v-block point counts once) */
    long evaluated;          /* simulated */
    long pruned_bound;       /* skipped: their step-time bound could not win */
    long pruned_memory;      /* skipped: their memory bound exceeds the capacity */
    long over_memory;        /* built, over the capacity in their op order, not simulated */
    long refused;            /* the family refused the microbatch count */
    bool timed_out;          /* the time limit stopped the search: the best found so far */
    double elapsed_s;
    char reason[1024]; /* why the winner won: what it buys over the runner-up family and
                          over the best 1F1B */
} vp_hybrid;

/* Searches as the header comment says. VP_EINVAL for a malformed request (missing model,
 * accelerator, GPUs or batch, a fixed degree that is not legal), when no configuration
 * fits (the message names the smallest memory any needs and that configuration), or
 * when the time limit stops the search before one fits; VP_ENOMEM. */
VP_API vp_status vp_hybrid_run(const vp_hybrid_request *req, vp_hybrid **out, vp_error *err);

/* Releases a result; NULL is a no-op. */
VP_API void vp_hybrid_free(vp_hybrid *h);

/* The result as one JSON object (new string, caller frees with free(); NULL when memory
 * runs out): model, gpu, gpus, global_batch, seq; best (the winner's configuration with
 * its memory_per_rank, layers_per_stage and expected_error); best_per_family (an object
 * keyed by group: family, dp, tp, pp, v, mbs, m, recompute, step_time_s, mfu, bubble,
 * memory_max_bytes, fits, headroom_bytes, tight, and params for a V block); top (an array of such
 * configurations); versus_1f1b (or null); margin_bytes; expected_error (the accelerator's, with the
 * winner); reason; candidates, evaluated, pruned (every kind), pruned_by_bound, pruned_by_memory,
 * over_memory, refused, timed_out, elapsed_s. Deterministic but for elapsed_s. */
VP_API char *vp_hybrid_json(const vp_hybrid *h, const vp_hybrid_request *req);

/* The parallelism part of a torchtitan TOML job configuration for priced (torchtitan's
 * JobConfig of torchtitan/config/job_config.py, the version with
 * module_fqns_per_model_part): [training] seq_len, local_batch_size, global_batch_size;
 * [parallelism] data_parallel_replicate_degree and data_parallel_shard_degree (shard with
 * the distributed optimizer), tensor_parallel_degree, pipeline_parallel_degree,
 * pipeline_parallel_microbatch_size, context_parallel_degree and
 * context_parallel_rotate_method ("alltoall": the ring of --cp-comm p2p; "allgather")
 * with CP > 1, pipeline_parallel_schedule (the class the CSV
 * needs), pipeline_parallel_schedule_csv = csv_path (a TOML string: quotes, backslashes
 * and control characters escaped), module_fqns_per_model_part (Llama's
 * module names: tok_embeddings, layers.N, norm, output); [activation_checkpoint] mode; a
 * comment on the offload torchtitan cannot run when priced offloads (its CSV is then the
 * schedule without O and L). New string in *toml (caller frees). VP_EUNSUPPORTED when
 * torchtitan cannot run the schedule's placement (DualPipe's two directions), VP_ENOMEM. */
VP_API vp_status vp_hybrid_torchtitan(const vp_hybrid_request *req, const vp_hybrid_priced *priced,
                                      const char *csv_path, char **toml, vp_error *err);

/* Megatron-LM flags for priced when its family is one Megatron runs (1F1B, interleaved):
 * --tensor-model-parallel-size, --pipeline-model-parallel-size, --micro-batch-size,
 * --global-batch-size, --seq-length; the split as priced: --num-layers-per-virtual-pipeline-
 * stage (interleaved, even), or Megatron-Core's --pipeline-model-parallel-layout stage by
 * stage when it is not even; interleaved's
 * --microbatch-group-size-per-virtual-pipeline-stage where PP does not divide the
 * microbatches (its sends overlap, Megatron-LM's default: a comment unless pp_overlap
 * priced them so); --context-parallel-size and --cp-comm-type (p2p or all_gather) with
 * CP > 1; --sequence-parallel (also for EP > 1 with TP > 1, which Megatron-LM runs only so:
 * a comment when vpipe priced it without); --use-distributed-optimizer;
 * --recompute-granularity (with --recompute-method uniform --recompute-num-layers 1 for
 * full); --attention-backend flash; with offload --fine-grained-activation-offloading
 * --offload-modules (the modules of a layer whose saved bytes come nearest the share). One
 * line, then comment lines ('#') for what the flags cannot say. New string in *flags
 * (caller frees). VP_EUNSUPPORTED for other families and for what Megatron-LM refuses:
 * vocabulary parallelism, interleaving without a pipeline or with fewer microbatches than
 * PP, and the all-to-all overlap (--ep-overlap, its
 * --overlap-moe-expert-parallel-comm) on 1F1B with a pipeline or with full recomputation;
 * VP_ENOMEM. */
VP_API vp_status vp_hybrid_megatron(const vp_hybrid_request *req, const vp_hybrid_priced *priced,
                                    char **flags, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
