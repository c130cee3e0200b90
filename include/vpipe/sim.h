/* Cost model and simulator.
 *
 * Module `sim` (src/sim/): costs and their parser, the memory model, the per-stage cost
 * model, and the simulator (the eager replay of schedule.h with times and memory).
 * Depends on schedule.
 *
 * Costs a user states (vp_costs) are per microbatch for one device's whole slice of
 * layers; a schedule with v chunks per device charges each chunk pass 1/v of it. The
 * cost model (vp_cost_model) is those costs laid out per stage of one schedule, with the
 * per-pass memory deltas; it can also be filled stage by stage (e.g. from profiling).
 *
 * Memory is counted in units: one microbatch's activation on one device's whole slice
 * (so a V chunk holds 1/2 unit). F of stage s adds act[s]; B releases act[s] - keep[s];
 * W releases keep[s]; BW releases act[s]. Release-at-W sets keep = act; the ZB split
 * sets keep = R * act. In a schedule that recomputes, a stage holds only hold[s] of its
 * activation from F until R: F takes act[s] and releases act[s] - hold[s] when it ends,
 * and R takes act[s] - hold[s] back (hold is the stage input for a full recomputation,
 * everything but the attention core for a selective one). In a schedule that offloads,
 * an O of stage s releases off[s] (its share of what F keeps: of hold when recomputing,
 * else of act) and the L takes it back; the host holds it from the start of the copy to
 * host to the end of the copy back, on each device's copy engine (schedule.h).
 */
#ifndef VPIPE_SIM_H
#define VPIPE_SIM_H

#include "vpipe/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest cost of one pass or hop the library accepts (vp_costs_parse, vp_cost_model_new):
 * 1e12 time units (31,700 years in seconds). A simulated time is a sum of at most
 * (ops + hops) such costs, so even 2^63 ops stay below 1e32, far from overflow, and the
 * simulator's results are finite. */
#define VP_COST_MAX 1e12

/* Costs per device slice and microbatch. dev_f/dev_b/dev_w, when non-NULL, hold one value
 * per device and override f/b/w (heterogeneous stages). fb < 0 means an overlapped F&B
 * costs the sum of its halves; r < 0 means a recomputation R costs the forward's time
 * (a full recomputation; a selective one rebuilds less and may be given its own r). With
 * vocabulary parallelism (schedule.h) each shard's passes cost s (S), t (T) and e (EF, and
 * EB again): the unit model's layers have no vocabulary, so they cost nothing unless
 * given. o and l are the times of copying one whole unit of activation to host and back
 * (an offload of a share x of a chunk's 1/v unit takes x/v of it); o < 0 means as long as
 * the forward, l < 0 as long as o. */
typedef struct vp_costs {
    double f, b, w, c, fb, r;
    const double *dev_f, *dev_b, *dev_w;
    double s, t, e;
    double o, l;
} vp_costs;

/* F=B=W=1, c=0, F&B = F+B, R = F, S=T=E=0, O = L = F. */
VP_API vp_costs vp_costs_default(void);

/* Parses "F=2,B=2,W=2,c=0.5,FB=3,R=2,S=0.5,T=1,E=0.1,O=1,L=1" (any subset, any order, each
 * key at most once, keys case-insensitive) on top of *costs. Values are plain decimal numbers in
 * [0, VP_COST_MAX] (subnormal ones such as 1e-320 included; no sign, hex, inf or nan).
 * VP_EPARSE with the column of a malformed key or value, VP_EVALIDATION with the column of
 * a value over VP_COST_MAX (its results could not be finite); *costs unchanged on error. */
VP_API vp_status vp_costs_parse(const char *text, vp_costs *costs, vp_error *err);

typedef enum {
    VP_MEM_AT_W = 0, /* release-at-W: W frees the whole activation */
    VP_MEM_ZB = 1    /* ZB split: B frees (1-R) of it, W frees R */
} vp_mem_kind;

typedef struct vp_memcfg {
    vp_mem_kind kind;
    double zb_ratio;    /* R for VP_MEM_ZB, in [0, 1] */
    double unit_bytes;  /* bytes of one unit (0 when unknown) */
    double input_share; /* share of a stage's activation that is its input: what a full
                           recomputation holds from F until R, in [0, 1] */
    double core_share;  /* share that is the attention core's saved tensors: what a selective
                           recomputation drops from F until R, in [0, 1] */
} vp_memcfg;

/* The shares of vp_memcfg_default: a GPT layer of Korthikanti et al. (34sbh + 5as^2b bytes,
 * 2sbh of them its input, 5as^2b the attention core) at the Zero Bubble paper's 1.5B
 * model (h 2304, a 24, s 1024; 5as/h = 53.3), whose B/W split is zb:0.366. A model of
 * known sizes (the runtime, the price module) replaces them by exact bytes. */
#define VP_MEM_INPUT_SHARE (2.0 / (34.0 + 160.0 / 3.0))
#define VP_MEM_CORE_SHARE ((160.0 / 3.0) / (34.0 + 160.0 / 3.0))

/* Release-at-W, bytes unknown, the default recomputation shares. */
VP_API vp_memcfg vp_memcfg_default(void);

/* Parses "at-w" or "zb:R" (R a plain decimal number in [0, 1]) into *cfg (unit_bytes
 * unchanged). VP_EPARSE with the column on anything else; *cfg unchanged on error. */
VP_API vp_status vp_memcfg_parse(const char *text, vp_memcfg *cfg, vp_error *err);

/* Per-stage costs and memory deltas for one schedule. */
typedef struct vp_cost_model {
    int S;
    double *f, *b, *w, *r;  /* [S] time of each pass; BW costs b + w */
    double *fb;             /* [S] F&B time when the forward half is stage s; < 0: sum of halves */
    double *o, *l;          /* [S] time of the copy of an O (to host) and an L (back) */
    double c;               /* time of one hop between stages on different devices */
    double *act;            /* [S] units added by F */
    double *keep;           /* [S] units kept from B until W */
    double *hold;           /* [S] units held from F until R (when recomputing) */
    double *act_bytes;      /* [S] bytes added by F (0 until known) */
    double *keep_bytes;     /* [S] bytes kept from B until W (0 until known) */
    double *hold_bytes;     /* [S] bytes held from F until R (0 until known) */
    double *off;            /* [S] units an O moves to host (0: the stage offloads nothing) */
    double *off_bytes;      /* [S] bytes an O moves to host (0 until known) */
    vp_recompute recompute; /* the schedule's (vp_cost_model_new copies it) */
    int has_bytes;          /* 1 when the byte arrays are known: set by vp_cost_model_new
                               for unit_bytes > 0; a caller that fills them sets it */
    int bw_holds_keep;      /* 1: a BW runs the whole stage's B, then its W, holding keep in
                               between (vpipe's runtime); 0 (vp_cost_model_new): one layer's
                               backward at a time, keep never held whole */
    /* Vocabulary parallelism: one shard per device (allocated whatever the schedule). */
    int p;                   /* devices, and shards */
    double *vocab;           /* [4p] time of EF, EB, S and T of shard d at [k * p + d], k in
                                that order */
    double *vocab_act;       /* [2p] units shard d holds from EF until EB ([d]) and from S
                                until T ([p + d]) */
    double *vocab_act_bytes; /* [2p] the same in bytes (0 until known) */
    /* Communication an overlapped pair hides (DualPipe's F&B, Megatron-LM's combined 1F1B):
     * of each stage's f and of its b, the all-to-all time (xf, xb: [S], 0 until a caller
     * fills them, as the price module does). An F&B pair without fb runs its halves'
     * communication X beside their compute C, which goes at comm_rate of its speed while X
     * runs (the SMs the communication takes): it lasts max(X, C + X (1 - comm_rate)).
     * vp_cost_model_new sets comm_rate 1. */
    double *xf, *xb;
    double comm_rate;
    /* 1: an F&B pair runs layer by layer, each layer of its forward beside one of its
     * backward from the other end, so its memory moves steadily from its start to its end and
     * goes no higher than the larger of the two (Megatron-LM's combined 1F1B); 0
     * (vp_cost_model_new): the forward allocates before the backward frees. */
    int fb_layered;
    /* [S] bytes each B (or BW) of the stage leaves until the schedule ends (0 from
     * vp_cost_model_new; the price module fills them): an input gradient the framework
     * keeps, as torch.distributed.pipelining keeps each microbatch's in its receive
     * buffer's .grad. Bytes only: the unit arrays, which families build with, leave it out. */
    double *tail_bytes;
} vp_cost_model;

/* Lays costs and the memory model out per stage of schedule s into a new *out (chunk
 * passes charged 1/v, v = S/p; for the bidirectional placement each stage is a whole
 * slice). It recomputes as s does: every stage holds act times mem->input_share (full)
 * or 1 - mem->core_share (selective) from F until R. It offloads as s does: off is
 * s->offload times hold (recomputing) or act, its copies take costs->o and costs->l per
 * unit. The byte
 * arrays are always allocated; they are filled (and has_bytes set) when mem->unit_bytes >
 * 0, else left 0 for the caller to fill. VP_EINVAL (a cost, per-device cost or hop outside
 * [0, VP_COST_MAX], fb or r above it, unit_bytes negative or not finite, a ZB ratio or a
 * share outside [0, 1]), VP_ENOMEM; *out is NULL on failure. Caller frees with
 * vp_cost_model_free. */
VP_API vp_status vp_cost_model_new(const vp_schedule *s, const vp_costs *costs,
                                   const vp_memcfg *mem, vp_cost_model **out, vp_error *err);

/* Releases a cost model; NULL is a no-op. */
VP_API void vp_cost_model_free(vp_cost_model *cm);

/* Duration of one pass of stage under the model: kind F, B, W, R, BW (= B + W), the copy
 * of an O or an L, or a vocabulary pass (EF, EB, S, T) of shard `stage`. */
VP_API double vp_cost_model_pass_time(const vp_cost_model *cm, int kind, int stage);

/* Duration of op under the model (an F&B pair: fb, or its halves overlapped as xf, xb and
 * comm_rate say, which is their sum without communication; an O or L:
 * its copy, which runs on the copy engine: the op itself takes no compute time). */
VP_API double vp_cost_model_op_time(const vp_cost_model *cm, const vp_op *op);

/* Memory one pass of stage (kind F, B, W, BW, R, O or L) takes on the device when it
 * starts (*up) and releases when it ends (*down), in units, or in bytes when `bytes` is
 * non-zero (the model must have them: has_bytes, else the library aborts): F takes act
 * (and a recomputing stage's F releases act - hold); R takes act - hold; B releases act -
 * keep (takes keep - act when B keeps more than F took, e.g. a stage that only embeds:
 * the gradient it receives), W keep, BW act (with bw_holds_keep, first taking keep - act
 * when that is positive); in bytes B and BW release tail_bytes less; O releases off, L
 * takes it. A vocabulary pass of shard `stage`:
 * EF and S take vocab_act, EB and T release it. */
VP_API void vp_cost_model_pass_memory(const vp_cost_model *cm, int kind, int stage, int bytes,
                                      double *up, double *down);

/* The same for op; an F&B pair runs its forward, then its backward: *up is the highest
 * the count goes above its start, *down what it releases from there. */
VP_API void vp_cost_model_op_memory(const vp_cost_model *cm, const vp_op *op, int bytes, double *up,
                                    double *down);

/* Result of a simulation. Arrays indexed by device; per-op arrays by device then position
 * in that device's op list, parallel to schedule->dev[d].ops. */
typedef struct vp_sim {
    int p;
    double makespan;        /* end of the last op (the first op starts at 0) */
    double bubble;          /* 1 - mean busy / longest device span */
    double bubble_makespan; /* 1 - mean busy / makespan */
    double *dev_first;      /* [p] start of the device's first op */
    double *dev_last;       /* [p] end of the device's last op */
    double *dev_busy;       /* [p] time spent computing */
    double *peak;           /* [p] peak memory, units */
    double *peak_bytes;     /* [p] peak memory in bytes, NULL unless the model has_bytes */
    double peak_max;        /* max over devices of peak */
    double **start, **end;  /* [p][n_d] op times */
    double **mem_after;     /* [p][n_d] memory (units) after each op */
    /* offload: all NULL when the schedule offloads nothing */
    double **copy_start, **copy_end; /* [p][n_d] for an O or L op, its copy's times (O: the copy
                                        to host it waits for; L: the copy back it issues) */
    double *copy_busy;               /* [p] time each copy engine copies */
    double *stall;                   /* [p] how much later the compute ops started than they
                                        would have without waiting for copies (an offload not
                                        done, a late reload), summed */
    double *host_peak;               /* [p] peak host memory, units */
    double *offload_share;           /* [p] share of what the device's forwards keep that
                                        its O ops send to host (units: off over hold) */
    double *host_peak_bytes;         /* [p] in bytes, NULL unless the model has_bytes */
} vp_sim;

/* The vocabulary-parallel version of s (a valid schedule without vocabulary passes) into
 * a new *out (caller frees): s's ops in their order, with EF, EB, S and T of every shard
 * and microbatch placed by a replay of s under cm's times (cm must be s's: its vocabulary
 * times weigh the passes): EF just before the device of the route's first stage needs
 * the embedding, S when the last stage's F ends, T halfway to that stage's backward (so
 * the statistics' all-reduce and the gradient's sum each have half of that gap to hide
 * behind other passes), EB when the first stage's backward ends. Every device keeps s's
 * order, so it holds what it held in s plus the vocabulary passes' own; the result passes
 * vp_schedule_validate. VP_EINVAL when s already has vocabulary passes or cm is not s's,
 * VP_ENOMEM. */
VP_API vp_status vp_vocab_place(const vp_schedule *s, const vp_cost_model *cm, vp_schedule **out,
                                vp_error *err);

/* Replays the schedule eagerly: each device runs its ops in order, each op as soon as
 * the device is free and its dependencies have finished (plus c for a hop between
 * devices). Fills a new vp_sim. VP_EDEADLOCK (naming each blocked device's op and what
 * it waits for) when the replay cannot finish; VP_EINVAL when the model does not fit the
 * schedule or a time or memory level is not finite (a hand-filled model with an infinite,
 * NaN or overflowing cost): the results are always finite. The schedule should have
 * passed vp_schedule_validate. */
VP_API vp_status vp_simulate(const vp_schedule *s, const vp_cost_model *cm, vp_sim **out,
                             vp_error *err);
VP_API void vp_sim_free(vp_sim *sim);

/* Longest device span (last end - first start). */
VP_API double vp_sim_longest_span(const vp_sim *sim);

/* The report of a simulation of s under costs as JSON text, what `vpipe simulate --json`
 * prints: {"family", "p", "m", "stages", "placement", "recompute" (none, selective or
 * full)[, "vocab_parallel": true], "costs": {"F", "B", "W", "c"[, "FB"][, "R"][, "S", "T",
 * "E" with vocabulary parallelism][, "O"][, "L"]},
 * "makespan", "longest_span", "bubble", "bubble_makespan", "peak_memory": [p] units,
 * "peak_memory_max", "param_copies"[, "peak_memory_bytes": [p] when the model knew bytes],
 * "busy": [p][, and when s offloads: "offload": [S] shares, "offloaded": [p] pairs
 * offloaded, "offload_share": [p], "copy_busy": [p], "copy_occupancy": [p] (copy_busy /
 * makespan),
 * "offload_stall": [p], "host_peak_memory": [p] units[, "host_peak_memory_bytes": [p]]]},
 * indented by two spaces, reals to 10 significant digits, ending in a newline. New string
 * in *text (caller frees with free(); NULL on failure). VP_ENOMEM. */
VP_API vp_status vp_sim_json(const vp_schedule *s, const vp_sim *sim, const vp_costs *costs,
                             char **text, vp_error *err);

/* Peak memory of each device's op order into peak[p] (caller storage), in units, or in
 * bytes when `bytes` is non-zero (cm must have them: has_bytes, else the library aborts),
 * without timing: peaks depend only on the orders (the block lifespan report uses it). cm
 * must be s's (else the library aborts). Device memory only: the host's is
 * vp_schedule_host_peak's (units) or vp_simulate's. */
VP_API void vp_memory_peaks(const vp_schedule *s, const vp_cost_model *cm, int bytes, double *peak);

/* The host memory (units of cm, off) each device's offloads hold at most, from the
 * orders alone, into peak[p] (caller storage; 0 for a schedule that offloads nothing).
 * cm must be s's (else the library aborts). VP_ENOMEM (peak then all 0). */
VP_API vp_status vp_memory_host_peaks(const vp_schedule *s, const vp_cost_model *cm, double *peak,
                                      vp_error *err);

/* ---- offload: where O and L go (offload.c) --------------------------------------------
 *
 * A schedule offloads (schedule.h) when its stages have shares and its devices' lists
 * hold O and L ops. These functions put them there for a schedule built without them: a
 * pair (stage, mb) is offloaded only where it pays, when its forward and the first op that
 * reads its activation again (its R, else its backward) are at least two ops and the two
 * copies' time apart; its L is issued as late as lets the copy end before that op (reloads
 * packed back to back from the end), and its O where the copy to host has ended. */

/* How a schedule offloads. */
typedef enum {
    VP_OFFLOAD_NONE = 0,     /* nothing (the schedule without O and L) */
    VP_OFFLOAD_UNIFORM = 1,  /* every pair that pays sends its stage's share (Megatron's
                                per-stage offload fraction) */
    VP_OFFLOAD_SELECTIVE = 2 /* PipeOffload's selective offload: the pairs that live longest
                                send their whole activation, the longest first, until the share
                                of the activation of each device (one share) or of each stage
                                (one per stage) is offloaded */
} vp_offload_policy;

typedef struct vp_offload {
    vp_offload_policy policy;
    double share;         /* every stage's share in [0, 1] (when shares is NULL) */
    const double *shares; /* [n] each stage's share (borrowed), or NULL */
    int n;                /* entries of shares */
    double host_limit;    /* most host units a device may hold (0: none); see schedule.h */
} vp_offload;

/* Parses "none", a share "0.5" or one per stage "0,0.5,1" (plain decimal numbers in
 * [0, 1]) into *spec: policy uniform (none for "none" or every share 0), shares into a new
 * array *shares the spec borrows (caller frees with free(); NULL for one share). The
 * policy and host limit are the caller's to set after. VP_EPARSE with the column of what
 * is not such a number. */
VP_API vp_status vp_offload_parse(const char *text, vp_offload *spec, double **shares,
                                  vp_error *err);

/* "none", "uniform", "selective" ("?" otherwise). Static string. */
VP_API const char *vp_offload_policy_name(vp_offload_policy policy);
/* Parses those names. VP_EINVAL otherwise (*out unchanged). */
VP_API vp_status vp_offload_policy_parse(const char *text, vp_offload_policy *out, vp_error *err);

/* Step one: a copy of s without O and L ops, whose stages offload as spec says (each
 * stage's share; 1 on the stages with a share above 0 for the selective policy, which
 * sends whole activations; 0 everywhere for none) and whose host limit is spec's, into a
 * new *out. Build its cost model (vp_cost_model_new, or one filled with real bytes and
 * copy times) for step two. VP_EINVAL when spec gives shares other than 1 or S of them,
 * or a share outside [0, 1]; VP_ENOMEM. */
VP_API vp_status vp_schedule_offload_shares(const vp_schedule *s, const vp_offload *spec,
                                            vp_schedule **out, vp_error *err);

/* Step two: s (step one's, no O or L yet) with its O and L ops placed by spec's policy
 * under cm, s's cost model, into a new *out (valid; cm is also its cost model). The pairs
 * that pay are chosen on s simulated under cm: sim, when the caller has it (s, or s
 * without shares, simulated under a model of the same pass times: the shares change no
 * time of s), else simulated here (sim NULL). VP_EINVAL (cm or sim not s's, s already
 * holding O or L), the errors of vp_simulate, VP_ENOMEM. */
VP_API vp_status vp_schedule_offload_place(const vp_schedule *s, const vp_cost_model *cm,
                                           const vp_sim *sim, const vp_offload *spec,
                                           vp_schedule **out, vp_error *err);

/* Both steps with the cost model of costs and mem: s offloading as spec says, into a new
 * *out. Errors of both steps and of vp_cost_model_new. */
VP_API vp_status vp_schedule_offload(const vp_schedule *s, const vp_costs *costs,
                                     const vp_memcfg *mem, const vp_offload *spec,
                                     vp_schedule **out, vp_error *err);

#ifdef __cplusplus
}
#endif

#endif
