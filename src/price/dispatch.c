/* The expert-parallel dispatch and combine as DeepEP and NVIDIA's HybridEP run them
 * (vp_workload.ep_dispatch = VP_EP_DEEPEP; DeepSeek-V3's report, arXiv 2412.19437, §3.2.2:
 * a token goes over the network once to each node holding one of its experts, to the GPU of
 * the same in-node index, and is forwarded over NVLink from there).
 *
 * A rank's tokens each make k rows (top_k, times the capacity factor): `bytes` in all. The
 * EP group spans N nodes of `per` ranks, each node holding E/N of the E experts; under
 * balanced routing a token's k experts miss a given node with probability
 * C(E - E/N, k) / C(E, k), so it crosses the network to (N - 1) q nodes on average, q = 1 -
 * that. The network then carries bytes / k x (N - 1) q per rank (an all-to-all:
 * bytes (N - 1) / N), NVLink the rows that stay in the node, bytes (per - 1) / n, plus the
 * rows forwarded from the GPU that received them, bytes (N - 1) / N x (per - 1) / per; the
 * slower link decides, at comm_efficiency, plus one network latency. Inside one node it is
 * the all-to-all. */
#include <math.h>

#include "base/internal.h"
#include "price/price_internal.h"

const char *vp_ep_dispatch_name(vp_ep_dispatch d) {
    return d == VP_EP_ALLTOALL ? "alltoall" : d == VP_EP_DEEPEP ? "deepep" : NULL;
}

/* The probability that none of a token's k experts (of E) is among the `local` of a node. */
static double misses(double E, double local, int k) {
    double p = 1;
    for (int i = 0; i < k && p > 0; i++)
        p *= E - local - i > 0 ? (E - local - i) / (E - i) : 0;
    return p;
}

double vp__dispatch_seconds(const vp_gpu *gpu, const vp_arch *a, const vp_workload *t,
                            const vp__group *g, double bytes) {
    double n = g->n, node = gpu->gpus_per_node;
    double per = g->stride >= node ? 1 : fmin(floor(node / g->stride), n);
    per = per < 1 ? 1 : per;
    double N = ceil(n / per);
    if (t->ep_dispatch != VP_EP_DEEPEP || N <= 1 || a->top_k < 1)
        return vp__alltoall_seconds(gpu, g, bytes);
    double q = 1 - misses(a->experts, a->experts / N, a->top_k), eff = gpu->comm_efficiency;
    double network = bytes / a->top_k * (N - 1) * q;
    double nvlink = bytes * ((per - 1) / n + (N - 1) / N * (per - 1) / per);
    return fmax(network / (gpu->inter_bw * eff), nvlink / (gpu->intra_bw * eff)) +
           gpu->inter_latency;
}
