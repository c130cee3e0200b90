/* Shared by the files of src/price (not part of the public API). */
#ifndef VPIPE_PRICE_INTERNAL_H
#define VPIPE_PRICE_INTERNAL_H

#include "vpipe/price.h"

/* Parameters of one part on one rank of a tp-way tensor-parallel group. The head part
 * counts its matrix even when tied (the last stage holds a copy). */
double vp__part_params(const vp_arch *arch, int tp, vp_price_part part);

/* Seconds to move bytes over one link (inside a node or between nodes): bytes over the
 * bandwidth plus one latency. */
double vp__link_seconds(const vp_gpu *gpu, bool inter_node, double bytes);

/* Seconds of a ring all-gather (or reduce-scatter) of a tensor of `bytes` over n ranks:
 * (n-1)/n of it over the link plus n-1 latencies. 0 when n == 1. */
double vp__ring_gather_seconds(const vp_gpu *gpu, bool inter_node, int n, double bytes);

/* Whether a group of n ranks spaced `stride` apart, starting at rank `first`, spans more
 * than one node. */
bool vp__spans_nodes(const vp_gpu *gpu, long first, long stride, int n);

/* Facts of a part without checking the setup (vp_price_part checks first). */
void vp__part_facts(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                    vp_price_facts *out);

/* Vocabulary parallelism over `shards` devices (schedule.h): what the first stage keeps of
 * the embedding part (its position table and what its gradient needs) and the last of the
 * head part (the final norm), as facts (params, act_bytes, keep_bytes; no FLOPs), and what
 * each shard holds: its rows of the token table and the head (one table when tied), and
 * per microbatch its bytes from EF until EB and from S until T (the last stage's output,
 * its share of the softmax, the targets, the statistics). */
typedef struct vp__vocab_split {
    vp_price_facts first, last;
    double params;
    double embed_bytes, output_bytes;
} vp__vocab_split;
void vp__vocab_split_of(const vp_arch *arch, const vp_workload *work, int shards,
                        vp__vocab_split *out);

/* Seconds one pass of a part computes on one rank under the setup's accelerator (its
 * speed model; collectives aside): sec[0] F, sec[1] B without recomputation, sec[2] W,
 * sec[3] what recomputation adds to B. The setup must pass vp_price_check with a gpu. */
void vp__part_seconds(const vp_price_setup *su, vp_price_part part, double sec[4]);

/* Chooses layers per route position (counts[route_len]) for the shape s: every layer
 * goes where the largest load grows least. A stage's position is stage % route_len. */
typedef struct vp__split_costs {
    const double *layer; /* [route_len] load one layer adds at each position */
    const double *ends;  /* [route_len] fixed load of each position (embedding, head) */
    bool per_device;     /* balance the devices' loads (else the positions' own loads) */
} vp__split_costs;
vp_status vp__split_layers(const vp_schedule *shape, int layers, const vp__split_costs *costs,
                           int *counts, vp_error *err);

/* Checks an explicit split: route_len entries summing to layers, none negative, middle
 * positions not empty. */
vp_status vp__split_check(const int *counts, int n, int route_len, int layers, vp_error *err);

/* Most microbatches of each stage alive at once in s's op lists (from F until the pass
 * that frees its activation), into live[S]; zeros for a schedule without ops.
 * VP_ENOMEM. */
vp_status vp__stage_live_max(const vp_schedule *s, double *live, vp_error *err);

/* The optimizer step and the DP gradient reduction of a step, seconds, from every rank's
 * model states (memory[p]): the slowest rank's of each. */
void vp__price_overheads(const vp_price_setup *su, const vp_rank_memory *memory, int p,
                         double *optimizer_s, double *dp_reduce_s);

/* Whether s has the shape lay was priced for: devices, stages, route, stage placement,
 * recomputation (its R passes) and vocabulary parallelism. */
bool vp__price_same_shape(const vp_price_layout *lay, const vp_schedule *s);

#endif
