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
/* "a, b, c" of the first n names of a preset list into buf (arch.c); returns buf. */
const char *vp__join_names(const char *(*name_at)(int), int n, char *buf, size_t size);

/* ---- the model's shape (shape.c) ------------------------------------------------------ */

/* A layer's kind, bits: its MLP is a mixture of experts, its attention a sliding window. A
 * model has at most VP__KINDS kinds of layer. */
enum { VP__MOE = 1, VP__WINDOW = 2, VP__KINDS = 4 };

/* Attention widths per token over all heads (query, key, value, and the output the
 * projection reads), and the per-head query/key and value dimensions. */
typedef struct vp__attn {
    double q, k, v, d_qk, d_v;
} vp__attn;

/* One matrix multiply kind of a forward pass: count multiplies of m x n x k (2 m n k FLOPs
 * each, a weight of n x k and, with biases, a bias of n each); fp8 when an FP8 recipe runs
 * it in FP8 (the linears, not the router or the head); expert when it is a routed
 * expert's. */
typedef struct vp__gemm {
    double m, n, k, count;
    bool fp8, expert; /* expert: one of the routed experts' */
} vp__gemm;

/* Most multiply kinds of one piece (vp__piece_gemms). */
#define VP__MAX_GEMMS 12

int vp__head_dim(const vp_arch *a);
vp__attn vp__attention(const vp_arch *a);
/* The kind of layer l, of the model's last layer (what "a layer" means in the public
 * API), and how many layers of [l0, l1) are of each kind. */
unsigned vp__layer_kind(const vp_arch *a, int l);
unsigned vp__main_kind(const vp_arch *a);
void vp__kind_counts(const vp_arch *a, int l0, int l1, int counts[VP__KINDS]);
/* Tokens of one microbatch on one rank (mbs x seq / cp); the keys a query attends to on
 * average in the FLOP count's full-matrix convention (seq, or 2w - w^2/seq in a window w);
 * the capacity factor (1 when dropless); the expert token-rows a rank's tokens make
 * (tokens / tp x top_k x capacity); F's attention-core FLOPs on one rank. */
double vp__tokens(const vp_workload *t);
double vp__keys(const vp_arch *a, const vp_workload *t, unsigned kind);
double vp__capacity(const vp_arch *a);
double vp__expert_rows(const vp_arch *a, const vp_workload *t);
/* The expert-data-parallel degree: TP x CP x DP / (EP x ETP) (workload.c; the setup
 * checked). */
int vp__expert_dp(const vp_workload *t);
double vp__attention_flops(const vp_arch *a, const vp_workload *t, unsigned kind);
/* The matrix multiplies of one forward pass of a piece (part, and kind for a layer) on one
 * rank into g[VP__MAX_GEMMS]; returns how many kinds there are. B and W each repeat every
 * one (input and weight gradients); the attention core is apart (vp__attention_flops). */
int vp__piece_gemms(const vp_arch *a, const vp_workload *t, vp_price_part part, unsigned kind,
                    vp__gemm *g);
/* torchtitan's per-op selective recomputation (vp_framework): whether t asks for it;
 * whether it is priced for a's layers (dense, grouped-query attention, SwiGLU). */
bool vp__op_recompute(const vp_workload *t);
bool vp__op_priced(const vp_arch *a);
/* The recompute modules Megatron-LM's selective recomputation runs under t (their set:
 * core_attn when none is named; 0 without it). */
unsigned vp__selective_modules(const vp_workload *t);
/* The matrix multiplies selective recomputation reruns in B in a layer of kind on one rank
 * (torchtitan's per-op policy: key, output and up projections; Megatron-LM's modules:
 * mla_up_proj's up-projections, mlp's and shared_experts' linears) into g[VP__MAX_GEMMS];
 * returns how many; whether it reruns the attention core too (*core). */
int vp__recomputed_gemms(const vp_arch *a, const vp_workload *t, unsigned kind, vp__gemm *g,
                         bool *core);

/* Parameters of one piece on one rank (its experts over ep x etp); *experts (optional) the
 * experts' share of them. The head counts its matrix even when tied (the last stage holds
 * a copy). */
double vp__piece_params(const vp_arch *arch, const vp_workload *t, vp_price_part part,
                        unsigned kind, double *experts);

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
/* Seconds of an all-to-all over g in which each rank sends bytes in all (1/n to each
 * member, itself included). */
double vp__alltoall_seconds(const vp_gpu *gpu, const vp__group *g, double bytes);
/* Seconds of one dispatch or combine over the EP group g of a rank's token-expert rows,
 * `bytes` in all, under t->ep_dispatch (dispatch.c): vp__alltoall_seconds of all of them, or
 * DeepEP's exchange, once per token and rank inside a node and once per node across. */
double vp__dispatch_seconds(const vp_gpu *gpu, const vp_arch *a, const vp_workload *t,
                            const vp__group *g, double bytes);
double vp__send_seconds(const vp_price_setup *su, int from, int to);

/* The data-parallel reduction of pipeline rank d holding m's model states, experts of its
 * parameters the routed experts' (reduced over expert-DP, the rest over DP) (comm.c): its
 * whole time, the part left after the device's last op and the part before the next
 * step's first op, given the device's backward (window_b) and forward (window_f) of one
 * microbatch in seconds. */
typedef struct vp__dp_cost {
    double reduce_s, after_s, before_s;
} vp__dp_cost;
void vp__dp_cost_of(const vp_price_setup *su, int d, const vp_rank_memory *m, double experts,
                    double window_b, double window_f, vp__dp_cost *out);

/* ZeRO (zero.c). vp__shard_group: over how many ranks ZeRO shards a dense (DP x CP) or a
 * routed expert's (expert-DP) parameter. vp__zero_states: the weights, gradients and
 * optimizer states of params parameters on a rank under the workload's stage. */
typedef struct vp__zero_bytes {
    double params, grads, optimizer;
} vp__zero_bytes;
int vp__shard_group(const vp_workload *t, bool expert);
/* The ZeRO stage a pipeline of p devices runs t's at (2 and 3 as 1 when p > 1: zero.c). */
int vp__zero_effective(const vp_workload *t, int p);
void vp__zero_states(const vp_workload *t, double params, bool expert, vp__zero_bytes *out);
/* The dense (not routed-expert) parameters behind m's weights, unsharded, given the rank's
 * routed experts' parameters. */
double vp__zero_dense_params(const vp_workload *t, const vp_rank_memory *m, double experts);
/* One FSDP unit of params parameters (experts of them routed) on pipeline rank d: seconds of
 * its weights' all-gather (ZeRO-3) and its gradients' reduce-scatter (ZeRO-2 and 3) over its
 * groups; zero below those stages. */
typedef struct vp__zero_comm {
    double gather_s, scatter_s;
} vp__zero_comm;
void vp__zero_unit(const vp_price_setup *su, int d, double params, double experts,
                   vp__zero_comm *out);
/* What a layer's communication adds to a pass whose compute prefetches it: max(0, comm -
 * compute). */
double vp__zero_exposed(double comm_ms, double compute_ms);

/* Facts of a piece without checking the setup (vp_price_part_facts checks first). */
void vp__piece_facts(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                     unsigned kind, vp_price_facts *out);

/* The tensors a piece saves (vp_price_tensors of one kind of layer). */
int vp__piece_tensors(const vp_arch *arch, const vp_workload *work, vp_price_part part,
                      unsigned kind, vp_saved_tensor *out, int cap);

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

/* Seconds one pass of a piece computes on one rank under the setup's accelerator (its
 * speed model; collectives aside): sec[0] F, sec[1] B without recomputation, sec[2] W,
 * sec[3] what recomputation adds to B; linear[0..2] the share of F, B and W that its
 * linears' matrix multiplies take (what tensor-parallel communication can hide behind).
 * The setup must pass vp_price_check with a gpu. */
void vp__piece_seconds(const vp_price_setup *su, vp_price_part part, unsigned kind, double sec[4],
                       double linear[3]);

/* ---- FP8 training (fp8.c) ------------------------------------------------------------- */

/* The recipe's FP8 multiply efficiency relative to twice the 16-bit kernel's (0 off). */
double vp__fp8_efficiency(vp_fp8 f);
/* VP_EINVAL when the workload's recipe cannot run: FP8 on vpipe's own model, on an
 * accelerator without FP8 (or, for MXFP8, without MXFP8) tensor cores; gpu may be NULL. */
vp_status vp__fp8_check(const vp_arch *a, const vp_workload *t, const vp_gpu *g, vp_error *err);
/* What a 16-bit linear multiply's seconds are multiplied by under the setup's recipe (1
 * off). */
double vp__fp8_gemm_scale(const vp_price_setup *su);
/* Seconds F (*f) and B (*b) spend casting the FP8 multiplies' operands of gm[n]. */
void vp__fp8_cast_seconds(const vp_price_setup *su, const vp__gemm *gm, int n, double *f,
                          double *b);
/* Elements of the FP8 linears' weights a rank holds for layers [l0, l1) (0 off). */
double vp__fp8_weight_elements(const vp_price_setup *su, int l0, int l1);
/* Bytes of the FP8 weight copies a rank keeps for layers [l0, l1) beside its weights (0
 * off). */
double vp__fp8_copy_bytes(const vp_price_setup *su, int l0, int l1);
/* Seconds of casting `elements` weights to FP8 once per step (vp__fp8_weight_elements). */
double vp__fp8_step_seconds(const vp_price_setup *su, double elements);
/* What a layer's saved tensor kept `keep` weighs under the recipe relative to 16-bit: a
 * linear's input kept for W is saved in FP8 (1 / dtype bytes), the rest unchanged (1). */
double vp__fp8_saved_scale(const vp_arch *a, const vp_workload *t, vp_keep keep);
/* Seconds of the attention core of one layer of kind in F and in B on one rank (speed.c). */
void vp__attention_seconds(const vp_price_setup *su, unsigned kind, double *f, double *b);

/* Context parallelism (cp.c): the ranks holding the same weights, over which gradients are
 * reduced and the distributed optimizer shards (dp x cp); the keys and values one rank
 * holds of one layer for one microbatch, bytes (what a ring step sends); the seconds of the
 * key-value exchange that show in one layer of kind's F and B (0 without CP); the buffers
 * the exchange holds while one layer's attention runs, bytes. */
int vp__weight_dp(const vp_workload *t);
double vp__cp_kv_bytes(const vp_arch *a, const vp_workload *t);
void vp__cp_exposed(const vp_price_setup *su, unsigned kind, double *f, double *b);
double vp__cp_buffer_bytes(const vp_arch *a, const vp_workload *t);

/* ---- the pieces priced (pieces.c) -------------------------------------------------------- */

/* The pieces a stage is made of: a layer of each kind (0 .. VP__KINDS - 1), the embedding
 * and the head. */
enum { VP__PIECE_EMBEDDING = VP__KINDS, VP__PIECE_HEAD, VP__PIECES };

/* A piece priced on one rank: its facts, its experts' parameters, and its pass times in ms
 * (compute plus the communication each pass waits for; B includes the recomputation r_ms:
 * the attention core, or the whole F with its collectives). */
typedef struct vp__piece_price {
    vp_price_facts facts;
    double expert_params;
    double f_ms, b_ms, w_ms, r_ms;
    double a2a_f_ms, a2a_b_ms; /* of f_ms and b_ms, the expert-parallel exchange */
} vp__piece_price;

/* The part and the kind of layer a piece is. */
vp_price_part vp__piece_part(int piece);
unsigned vp__piece_kind(int piece);

/* Prices every piece of the setup's model (a kind no layer has is left zero) into
 * pieces[VP__PIECES]. The setup must pass vp_price_check with a gpu. */
void vp__price_pieces(const vp_price_setup *su, vp__piece_price *pieces);

/* How many of each piece a stage of layers [l0, l1) holds (first: the embedding, last: the
 * head) into weight[VP__PIECES]. */
void vp__piece_weights(const vp_arch *a, int l0, int l1, bool first, bool last,
                       double weight[VP__PIECES]);

/* ZeRO-2 and 3 in the passes of stage g, whose pieces are weight[k] of pp (zero.c): F, B
 * and W each grow by what their layers' gathers and reduce-scatters leave exposed, F and B
 * by the first layer's gather too. Nothing with measured costs or below ZeRO-2. */
void vp__zero_pass_ms(const vp_price_setup *su, const vp__piece_price *pp, const double *weight,
                      vp_price_stage *g);
/* ZeRO-3's working set on a stage of those pieces: the gathered largest layer and the
 * prefetched next, bytes (0 below ZeRO-3). */
double vp__zero_working_set(const vp_price_setup *su, const vp__piece_price *pp,
                            const double *weight);

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

/* Rank d's memory under lay for a step of m microbatches whose activations peak at
 * `activations` bytes: its fixed items, m times its per-microbatch ones, closed (price.c). */
void vp__rank_memory(const vp_price_layout *lay, int d, int m, double activations,
                     vp_rank_memory *out);

/* Whether s has the shape lay was priced for: devices, stages, route, stage placement,
 * recomputation (its R passes) and vocabulary parallelism. */
bool vp__price_same_shape(const vp_price_layout *lay, const vp_schedule *s);

/* The all-to-all overlap (overlap.c). vp__overlap_any: some stage of lay has an all-to-all;
 * vp__overlap_fill: the cost model's xf, xb and comm_rate from the stages (not with measured
 * costs) and lay->ep_pairs; vp__overlap_bound_rate: the share of each stage's all-to-all a
 * schedule of lay's shape
 * may hide (so a lower bound stays one; lay's stage devices tell a DualPipe shape), 0 when it pairs
 * nothing; vp__overlap_fuses: whether lay->ep_pairs fuses a schedule like s (the combined
 * 1F1B's families: whole backwards on one stage per device or the loop); vp__overlap_pair:
 * when it does, *s replaced by its forward-then-backward pairs fused (unchanged when they
 * would deadlock); vp__overlap_hidden: each stage's a2a_hidden_ms from
 * s's F&B ops under cm; vp__overlap_pairs: how many F&B ops s has. */
bool vp__overlap_any(const vp_price_layout *lay);
void vp__overlap_fill(const vp_price_setup *su, vp_price_layout *lay);
double vp__overlap_bound_rate(const vp_price_layout *lay);
bool vp__overlap_fuses(const vp_price_layout *lay, const vp_schedule *s);
vp_status vp__overlap_pair(const vp_price_layout *lay, vp_schedule **s, vp_error *err);
vp_status vp__overlap_hidden(const vp_cost_model *cm, const vp_schedule *s, vp_price_stage *stage,
                             vp_error *err);
long vp__overlap_pairs(const vp_schedule *s);
/* vp_price_result_json's "a2a_overlap" object. */
struct json_t *vp__overlap_json(const vp_price_result *r);

#endif
