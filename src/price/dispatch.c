/* The expert-parallel dispatch and combine as DeepEP and NVIDIA's HybridEP run them
 * (vp_workload.ep_dispatch = VP_EP_DEEPEP; DeepSeek-V3's report, arXiv 2412.19437, §3.2.2:
 * a token goes over the network once to each node holding one of its experts, to the GPU of
 * the same in-node index, and is forwarded over NVLink from there).
 *
 * A rank's tokens each make k rows (top_k, times the capacity factor): `bytes` in all. DeepEP
 * sends a token once to each rank holding one of its experts (its dispatch layout's
 * is_token_in_rank; the receiver expands it to its local experts' rows), and the combine
 * returns one row per token and rank (the rank sums its experts' weighted outputs first).
 * The EP group spans N nodes of `per` ranks, n ranks in all, each node holding E/N of the E
 * experts; under random routing a token's k experts miss a given block of E/B experts (a
 * node's, B = N, or a rank's, B = n) with probability m_B = C(E - E/B, k) / C(E, k). So a
 * token reaches R = n (1 - m_n) ranks and crosses the network to (N - 1) q nodes, q = 1 -
 * m_N. The network then carries bytes / k x (N - 1) q per rank (an all-to-all:
 * bytes (N - 1) / N), NVLink the token-rank rows that stay in the node, r (per - 1) / n,
 * plus those forwarded from the GPU that received them, r (N - 1) / N x (per - 1) / per,
 * r = bytes / k x R; the slower link decides, at comm_efficiency, plus one network latency.
 * Inside one node it is the all-to-all of r.
 *
 * Group-limited routing (vp_arch.expert_groups G, group_top_k g; DeepSeek-V3's node-limited
 * routing, §2.1.2: a token's experts come from g of the G groups, so it reaches at most g
 * nodes when a group is a node) changes m_B. The experts lie on the EP ranks in order, so
 * when B divides G a block holds h = G / B whole groups, and when G divides B its E/B experts
 * lie in one group (h = 1). Under balanced routing a token picks its g groups at random and
 * its k experts among their g E/G; it misses the block when none of those lands there:
 * sum over j of P(j of the block's h groups picked) x C(gE/G - j E/(B h), k) / C(gE/G, k).
 * Groups that do not align with the blocks are priced as unlimited routing.
 *
 * Round-robin routing (vp_ep_routing: token t takes experts tk .. tk + k - 1 modulo E, the
 * same on every rank, groups aside) replaces R by S_n and (N - 1) q by S_N (N - 1) / N, S_B the
 * blocks a token's k consecutive experts reach, averaged over the starts tk modulo E; a rank's
 * tokens take every start alike, so a reached node is its own 1 / N of the time. */
#include <math.h>

#include "base/internal.h"
#include "price/price_internal.h"

const char *vp_ep_dispatch_name(vp_ep_dispatch d) {
    return d == VP_EP_ALLTOALL ? "alltoall" : d == VP_EP_DEEPEP ? "deepep" : NULL;
}

const char *vp_ep_routing_name(vp_ep_routing r) {
    return r == VP_ROUTING_RANDOM ? "random" : r == VP_ROUTING_ROUND_ROBIN ? "round-robin" : NULL;
}

/* The probability that none of a token's k experts (of E) is among the `local` of a node. */
static double misses(double E, double local, int k) {
    double p = 1;
    for (int i = 0; i < k && p > 0; i++)
        p *= E - local - i > 0 ? (E - local - i) / (E - i) : 0;
    return p;
}

/* log C(n, k). */
static double log_choose(double n, double k) {
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1);
}

/* The probability m_B that a token misses one of B equal blocks of the EP group's experts. */
static double block_misses(const vp_arch *a, double B) {
    double E = a->experts, G = a->expert_groups, g = a->group_top_k;
    bool aligned = G > 0 && (fmod(G, B) == 0 || fmod(B, G) == 0);
    if (!aligned)
        return misses(E, E / B, a->top_k);
    double h = fmax(1, G / B), pool = g * E / G, p = 0;
    for (double j = fmax(0, g - (G - h)); j <= h && j <= g; j++)
        p += exp(log_choose(h, j) + log_choose(G - h, g - j) - log_choose(G, g)) *
             misses(pool, j * E / B / h, a->top_k);
    return p;
}

/* S_B: the blocks of B (block b holding experts [bE/B, (b+1)E/B)) that k consecutive
 * experts from tk modulo E reach, the mean over the starts. */
static double blocks_reached(const vp_arch *a, double B) {
    long E = a->experts, k = a->top_k, blocks = (long)B;
    if (k >= E)
        return B;
    long starts = E, x = E, y = k; /* E / gcd(E, k) */
    while (y) {
        long r = x % y;
        x = y;
        y = r;
    }
    starts /= x;
    double sum = 0;
    for (long j = 0; j < starts; j++) {
        long first = j * k % E, last = first + k - 1; /* past E-1: wraps to the first block */
        long reach = last < E ? last * blocks / E - first * blocks / E + 1
                              : blocks - first * blocks / E + (last - E) * blocks / E + 1;
        sum += reach < blocks ? reach : blocks;
    }
    return sum / starts;
}

double vp__dispatch_seconds(const vp_gpu *gpu, const vp_arch *a, const vp_workload *t,
                            const vp__group *g, double bytes) {
    double n = g->n, node = gpu->gpus_per_node;
    double per = g->stride >= node ? 1 : fmin(floor(node / g->stride), n);
    per = per < 1 ? 1 : per;
    double N = ceil(n / per);
    if (t->ep_dispatch != VP_EP_DEEPEP || n <= 1 || a->top_k < 1)
        return vp__alltoall_seconds(gpu, g, bytes);
    bool rr = t->ep_routing == VP_ROUTING_ROUND_ROBIN;
    double ranks = rr ? blocks_reached(a, n) : n * (1 - block_misses(a, n));
    double rows = bytes / a->top_k * ranks; /* r: one per token and rank */
    if (N <= 1)
        return vp__alltoall_seconds(gpu, g, rows);
    double nodes = rr ? blocks_reached(a, N) * (N - 1) / N : (N - 1) * (1 - block_misses(a, N));
    double network = bytes / a->top_k * nodes, eff = gpu->comm_efficiency;
    double nvlink = rows * ((per - 1) / n + (N - 1) / N * (per - 1) / per);
    return fmax(network / (gpu->inter_bw * eff), nvlink / (gpu->intra_bw * eff)) +
           gpu->inter_latency;
}
