/* The memory-budget planner: the fastest schedule whose peak activation memory fits a
 * budget, and the memory -> makespan frontier.
 *
 * Module `plan` (src/plan/). It weighs every registered family (families.h), the V block
 * space (the V block search of families.h: 60 phase patterns x δ⁰ in 1..5 x one change
 * point to a smaller δ⁰, δ¹ = 1) and the greedy V search under the budget (families.h).
 * Depends on families, block, sim.
 */
#ifndef VPIPE_PLAN_H
#define VPIPE_PLAN_H

#include "vpipe/block.h"
#include "vpipe/families.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A memory budget as a user states it. */
typedef enum {
    VP_BUDGET_FRACTION = 0, /* a fraction of 1F1B's peak ("0.5") */
    VP_BUDGET_UNITS = 1,    /* units, one microbatch's activation of a whole slice ("4u") */
    VP_BUDGET_BYTES = 2     /* bytes ("123456b", "64MiB", "2GB"), needs the memory model's
                               unit_bytes */
} vp_budget_kind;

typedef struct vp_budget {
    vp_budget_kind kind;
    double value; /* > 0, finite */
} vp_budget;

/* Parses "0.5", "4u" or bytes: "123456b", or with KiB, MiB, GiB, TiB (powers of 1024), kB
 * (or KB), MB, GB, TB (of 1000) (a number, then an optional suffix). VP_EPARSE with the
 * column of the problem. */
VP_API vp_status vp_budget_parse(const char *text, vp_budget *out, vp_error *err);

/* One schedule the planner considered: a registered family, the best V block it found at
 * one peak level, or the greedy V schedule under the budget. */
typedef struct vp_plan_candidate {
    char family[32];   /* family name, "v-block" or "v-greedy" */
    char params[96];   /* block parameters (vp_vblock_format) for "v-block", the memory limit
                          for "v-greedy" ("limit=4u"), else "" */
    double peak;       /* max over devices, units */
    double peak_bytes; /* max over devices, bytes (0 when unit_bytes is unknown) */
    double makespan;   /* simulated, with the spec's costs */
    double bubble;     /* 1 - busy / longest device span (vp_sim.bubble) */
    int fits;          /* peak within the budget */
    int is_vblock;     /* 1 for a V block (vblock is set) */
    vp_vblock vblock;
    vp_offload_policy offload_policy; /* how it offloads (VP_OFFLOAD_NONE: as the spec says) */
    double offload;                   /* its share when the planner chose to offload, else 0;
                                         params then reads "offload SHARE POLICY" */
    double limit; /* "v-greedy": its memory limit in units (vp_vgreedy_run), else 0 */
} vp_plan_candidate;

/* Result of vp_plan_run. Owned by the caller (vp_plan_free). */
typedef struct vp_plan {
    vp_schedule *schedule;         /* the chosen schedule (owned) */
    int chosen;                    /* its index in candidates */
    double budget;                 /* the budget resolved to units, or bytes for a byte budget */
    int budget_in_bytes;           /* 1 when budget and fits compare bytes */
    double ref_peak;               /* 1F1B's peak in units (what a fraction refers to) */
    vp_plan_candidate *candidates; /* [n_candidates]: families in registry order, V levels by
                                      increasing peak, then the greedy V schedule */
    int n_candidates;
    int *frontier; /* [n_frontier] candidate indices: the memory -> makespan
                      Pareto points by increasing peak */
    int n_frontier;
    long blocks_tried, blocks_built; /* V blocks in the space / built and measured */
    long blocks_seen;                /* V blocks gone through (< tried when timed out) */
    int families;                    /* families built and measured */
    int timed_out;     /* 1 when spec->time_limit_s ended the search: the best found so far */
    char reason[1024]; /* why the chosen schedule won, a few clauses (and "time limit
                          reached" when it did) */
} vp_plan;

/* Searches every registered family (built from spec), the V block space and the greedy V
 * search (vp_vgreedy_run under the budget) for the schedule with the smallest makespan
 * (ties: smaller bubble, then less memory) whose peak fits the budget; fills the
 * candidates (every family that builds, the fastest V block of each peak level within the
 * budget, ties going to the block first in the search's enumeration, and the greedy V
 * schedule when it is strictly faster than every other candidate that fits, or, for a
 * budget below the least it runs under, the greedy under that least limit, which does not
 * fit), the memory -> makespan frontier and a reason. A fraction refers to 1F1B's peak
 * under spec's memory model; a byte budget needs spec->mem.unit_bytes > 0. V blocks
 * whose memory is sure to exceed the budget are not built (under release-at-W with
 * m >= 2p, a block's peak is half its repeated block's chunk activations), nor blocks a
 * lower bound on their makespan shows cannot be the fastest of their level. Uses up to
 * spec->threads threads; the answer and blocks_tried / blocks_built do not depend on
 * their number. With spec->time_limit_s (vp_spec_make: VP_PLAN_TIME_LIMIT_S), once that
 * many seconds have passed no more family is built (but 1F1B, which a fraction refers to),
 * the V search stops between batches and the greedy V search does not start: the answer is
 * the best found so far, with timed_out set and the reason saying so (only then does the
 * answer depend on the machine's speed). VP_EINVAL when the budget is malformed, bytes are
 * not known, or no schedule fits (the message names the smallest peak reached and by what,
 * and the time limit when it ended the search first); VP_ELIMIT as vp_spec_check_size.
 * Cost: one build and simulation per family, one build and replay (vp_vgrid_measure) per V
 * block built, and the greedy V search's runs (none when the V search's lower bound shows
 * it cannot be faster). */
VP_API vp_status vp_plan_run(const vp_spec *spec, const vp_budget *budget, vp_plan **out,
                             vp_error *err);

/* Memory levers the planner may pull beyond the choice of schedule. */
typedef struct vp_plan_levers {
    int offload; /* 1: a family whose peak misses the budget, and that is faster than every
                    schedule that fits, is tried offloading (uniform and selective, each at
                    the smallest of the shares 1/4, 1/2, 3/4, 1 that fits); offload never
                    makes a schedule faster (pairs whose copies would make an op wait are
                    not offloaded), so a tie goes to the smaller share */
} vp_plan_levers;

/* vp_plan_run with the levers (NULL: none). Offloaded candidates join the candidates and
 * the frontier; the chosen one comes back offloading. */
VP_API vp_status vp_plan_run_levers(const vp_spec *spec, const vp_budget *budget,
                                    const vp_plan_levers *levers, vp_plan **out, vp_error *err);

/* The planner's report as JSON text, what `vpipe plan --json` prints: the chosen
 * schedule's simulation report (vp_sim_json of plan->schedule, simulated under costs), then
 * "budget", "budget_unit" ("units" or "bytes"), "ref_peak_1f1b", "params" (the V block's,
 * or ""), "reason", "blocks_tried", "blocks_built", "timed_out", "frontier" and
 * "candidates" (arrays of {"family", "params", "memory"[, "memory_bytes"], "bubble",
 * "makespan", "fits"[, "offload", "offload_policy" when the planner offloaded it]}). Same
 * format as vp_sim_json. New string in *text (caller frees with free(); NULL on failure).
 * VP_ENOMEM. */
VP_API vp_status vp_plan_json(const vp_plan *plan, const vp_sim *sim, const vp_costs *costs,
                              char **text, vp_error *err);

/* Releases a plan; NULL is a no-op. */
VP_API void vp_plan_free(vp_plan *plan);

#ifdef __cplusplus
}
#endif

#endif
