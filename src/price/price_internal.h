/* Shared by the files of src/price (not part of the public API). */
#ifndef VPIPE_PRICE_INTERNAL_H
#define VPIPE_PRICE_INTERNAL_H

#include "vpipe/price.h"

/* JSON helpers of the readers (readers.c). vp__json_object loads text as one object
 * (VP_EPARSE with line and column, naming what); vp__json_number reads a number in [lo, hi]
 * under the first of names (NULL-terminated) present, vp__json_count a whole number in
 * [1, hi], vp__json_string a string (NULL when absent): absent and required is VP_EPARSE
 * "missing key", absent otherwise leaves *out; vp__as_parse_error turns the error a check
 * filled into a parse error; vp__is_path: text names a file (a '/' or ".json" at the end). */
struct json_t;
/* The expected error as a JSON object (price.c; vp_price_result_json's "expected_error"). */
struct json_t *vp__expected_json(const vp_expected_error *e);
vp_status vp__json_object(const char *text, size_t len, const char *what, struct json_t **out,
                          vp_error *err);
vp_status vp__json_number(struct json_t *obj, const char *const *names, double lo, double hi,
                          bool required, double *out, vp_error *err);
vp_status vp__json_count(struct json_t *obj, const char *const *names, int hi, bool required,
                         int *out, vp_error *err);
vp_status vp__json_string(struct json_t *obj, const char *const *names, const char **out,
                          vp_error *err);
vp_status vp__as_parse_error(vp_error *err);
bool vp__is_path(const char *text);

/* Parameters of one part on one rank of a tp-way tensor-parallel group. The head part
 * counts its matrix even when tied (the last stage holds a copy). */
double vp__part_params(const vp_arch *arch, int tp, vp_price_part part);

/* Communication (comm.c): a group of n ranks spaced stride apart from rank first, the
 * seconds of a collective over it (VP__GATHER: a ring all-gather or reduce-scatter of a
 * tensor of `bytes`; VP__ALL_REDUCE: ring or tree, the faster), whether two ranks sit in
 * different nodes, and the seconds of one pipeline send of an activation from pipeline
 * rank `from` to `to` (at the send bandwidth inside a node, the network's across, each TP
 * rank sending its 1/t; without sequence parallelism the receivers all-gather it). */
typedef struct vp__group {
    long first, stride;
    int n;
} vp__group;
typedef enum { VP__GATHER, VP__ALL_REDUCE } vp__collective;
double vp__collective_seconds(const vp_gpu *gpu, vp__collective kind, const vp__group *g,
                              double bytes);
bool vp__crosses_nodes(const vp_gpu *gpu, long a, long b);
double vp__send_seconds(const vp_price_setup *su, int from, int to);

/* The data-parallel reduction of pipeline rank d holding m's model states (comm.c): its
 * whole time, the part left after the device's last op and the part before the next
 * step's first op, given the device's backward (window_b) and forward (window_f) of one
 * microbatch in seconds. */
typedef struct vp__dp_cost {
    double reduce_s, after_s, before_s;
} vp__dp_cost;
void vp__dp_cost_of(const vp_price_setup *su, int d, const vp_rank_memory *m, double window_b,
                    double window_f, vp__dp_cost *out);

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
 * sec[3] what recomputation adds to B; linear[0..2] the share of F, B and W that its
 * linears' matrix multiplies take (what tensor-parallel communication can hide behind).
 * The setup must pass vp_price_check with a gpu. */
void vp__part_seconds(const vp_price_setup *su, vp_price_part part, double sec[4],
                      double linear[3]);

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

/* What a step adds to its schedule (price.c), given when each device's last op ends
 * (dev_end[p], seconds): the optimizer step (the slowest rank's, memory-bound), the
 * data-parallel reduction (the slowest rank's whole time), what of it shows (after the
 * latest device end, and the next step's parameter gather) and the step time: the latest
 * end, the optimizer and what shows. memory[p] the ranks' model states. */
typedef struct vp__step_tail {
    double optimizer_s, dp_reduce_s, exposed_s, step_s;
} vp__step_tail;
void vp__step_tail_of(const vp_price_setup *su, const vp_price_layout *lay,
                      const vp_rank_memory *memory, const double *dev_end, vp__step_tail *out);

/* Completes m once its activations are set: allocated, fragmentation (frag_fraction of
 * allocated), reserved and total from the other items (price.c). */
void vp__memory_close(double frag_fraction, vp_rank_memory *m);

/* Whether s has the shape lay was priced for: devices, stages, route, stage placement,
 * recomputation (its R passes) and vocabulary parallelism. */
bool vp__price_same_shape(const vp_price_layout *lay, const vp_schedule *s);

#endif
