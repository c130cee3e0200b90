/* The stages of one schedule shape, priced: layer split, parameters, saved bytes and pass
 * times per stage, the pipeline hop, every memory item but the activations, and the cost
 * model the simulator replays. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "price/price_internal.h"

/* Bytes of model states per parameter held: weights, gradients and optimizer states. */
static double state_bytes_per_param(const vp_workload *t, bool expert) {
    vp__zero_bytes z;
    vp__zero_states(t, 1, expert, &z);
    return z.params + z.grads + z.optimizer;
}

/* Adds the model states of params parameters (experts of them routed) to m. */
static void add_states(const vp_workload *t, double params, double experts, vp_rank_memory *m) {
    vp__zero_bytes dense, expert;
    vp__zero_states(t, params - experts, false, &dense);
    vp__zero_states(t, experts, true, &expert);
    m->params += dense.params + expert.params;
    m->grads += dense.grads + expert.grads;
    m->optimizer += dense.optimizer + expert.optimizer;
}

/* ---- the split ---------------------------------------------------------------------- */

/* What a piece weighs in the split: its pass times, or its model states and the
 * activations of `alive` microbatches. */
static double piece_load(const vp_price_setup *su, const vp__piece_price *p, double alive) {
    if (su->split == VP_SPLIT_TIME)
        return p->f_ms + p->b_ms + p->w_ms;
    double experts = p->expert_params;
    return (p->facts.params - experts) * state_bytes_per_param(su->work, false) +
           experts * state_bytes_per_param(su->work, true) + p->facts.act_bytes * alive;
}

/* Loads the split balances under the setup's goal, per route position. A layer weighs the
 * mean over the model's layers (the split places layers as if all weighed that; each is
 * priced as it is). */
static vp_status split_loads(const vp_price_setup *su, const vp_schedule *s,
                             const vp__piece_price *pp, double *layer, double *ends,
                             vp_error *err) {
    int R = s->route_len, counts[VP__KINDS];
    double *live = vp__calloc((size_t)s->S, sizeof *live);
    if (!live)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    vp_status rc = su->split == VP_SPLIT_MEMORY ? vp__stage_live_max(s, live, err) : VP_OK;
    vp__kind_counts(su->arch, 0, su->arch->layers, counts);
    for (int k = 0; k < R && rc == VP_OK; k++) {
        double alive = 0; /* most microbatches alive on a stage at this position */
        for (int st = k; st < s->S; st += R)
            alive = live[st] > alive ? live[st] : alive;
        bool first = k == 0, last = k == R - 1;
        layer[k] = 1;
        ends[k] = 0;
        if (su->split == VP_SPLIT_EVEN)
            continue;
        layer[k] = 0;
        for (int kind = 0; kind < VP__KINDS; kind++)
            layer[k] += counts[kind] * piece_load(su, &pp[kind], alive) / su->arch->layers;
        ends[k] = (first ? piece_load(su, &pp[VP__PIECE_EMBEDDING], alive) : 0) +
                  (last ? piece_load(su, &pp[VP__PIECE_HEAD], alive) : 0);
    }
    free(live);
    return rc;
}

static vp_status choose_split(const vp_price_setup *su, const vp_schedule *s,
                              const vp__piece_price *pp, int *counts, vp_error *err) {
    int R = s->route_len;
    if (su->layers_per_stage) {
        vp_status rc =
            vp__split_check(su->layers_per_stage, su->n_layers_per_stage, R, su->arch->layers, err);
        if (rc == VP_OK)
            memcpy(counts, su->layers_per_stage, (size_t)R * sizeof *counts);
        return rc;
    }
    double *layer = vp__calloc((size_t)R, sizeof *layer),
           *ends = vp__calloc((size_t)R, sizeof *ends);
    vp_status rc = layer && ends ? split_loads(su, s, pp, layer, ends, err)
                                 : vp__fail(err, VP_ENOMEM, "out of memory");
    vp__split_costs c = {layer, ends, su->split != VP_SPLIT_EVEN};
    if (rc == VP_OK)
        rc = vp__split_layers(s, su->arch->layers, &c, counts, err);
    free(layer);
    free(ends);
    return rc;
}

/* ---- stages and ranks --------------------------------------------------------------- */

/* Bytes of one activation (or gradient) between stages on one rank. */
static double io_bytes(const vp_price_setup *su) {
    const vp_workload *t = su->work;
    return vp__tokens(t) * su->arch->hidden * su->arch->dtype_bytes / (t->sp ? t->tp : 1);
}

/* Whether s runs on torch.distributed.pipelining (torchtitan's pipeline, vp_framework),
 * whose PipelineStage holds its own tensors between passes (pipelining_stages). */
static bool pipelining(const vp_price_setup *su, const vp_schedule *s) {
    return su->work->framework == VP_FRAMEWORK_TORCHTITAN && s->p > 1 &&
           su->arch->impl != VP_IMPL_VPIPE;
}

/* torch.distributed.pipelining's PipelineStage around each stage's passes: it receives a
 * microbatch's input into a buffer it allocated for that microbatch at its first step and
 * keeps (fixed_memory counts them), so the input is not the stage's own activation; F's
 * output stays in its forward cache until B; B's input gradient stays in the receive
 * buffer's .grad until the next step clears it. A neighbour on the same device is handed
 * the tensors themselves: the output becomes its receive buffer, the gradient its gradient
 * buffer (counted there). */
static void pipelining_stages(const vp_price_setup *su, const vp_schedule *s,
                              vp_price_layout *lay) {
    if (!pipelining(su, s))
        return;
    double io = io_bytes(su);
    for (int st = 0; st < s->S; st++) {
        vp_price_stage *g = &lay->stage[st];
        bool from_other = !g->first && s->stage_device[st - 1] != g->device;
        bool to_other = !g->last && s->stage_device[st + 1] != g->device;
        double delta = (to_other ? io : 0) - (g->first ? 0 : io);
        g->act_bytes = fmax(0, g->act_bytes + delta);
        g->hold_bytes = fmax(0, g->hold_bytes + delta);
        g->tail_bytes = from_other ? io : 0;
    }
}

/* With vocabulary parallelism (vs non-NULL), the embedding and head parts of pp become what
 * the first and last stage keep of them: vs's facts, no time (the shards' passes take the
 * embedding's and the head's). */
static void vocab_ends(const vp__vocab_split *vs, vp__piece_price *pp) {
    if (!vs)
        return;
    pp[VP__PIECE_EMBEDDING] = (vp__piece_price){.facts = vs->first};
    pp[VP__PIECE_HEAD] = (vp__piece_price){.facts = vs->last};
}

/* A schedule with R passes (mode): each stage's R time and what its F keeps until R, from
 * the parts priced under the mode (vpipe's own model, whose runtime recomputes the whole
 * stage from its input: its forward's time, and the input, the tokens on the first stage,
 * with the targets on the last). The stages were filled without recomputation. */
static void fill_recompute(const vp_price_setup *su, vp_recompute mode, const vp__vocab_split *vs,
                           vp_price_layout *lay) {
    vp_workload work = *su->work;
    work.recompute = mode;
    vp_price_setup rsu = *su;
    rsu.work = &work;
    vp__piece_price rp[VP__PIECES];
    vp__price_pieces(&rsu, rp);
    vocab_ends(vs, rp);
    double tokens = (double)work.mbs * work.seq; /* vpipe's byte tokens and targets */
    bool own = su->arch->impl == VP_IMPL_VPIPE;
    for (int st = 0; st < lay->S; st++) {
        vp_price_stage *g = &lay->stage[st];
        double weight[VP__PIECES];
        vp__piece_weights(su->arch, g->l0, g->l1, g->first, g->last, weight);
        g->r_ms = g->hold_bytes = 0;
        for (int k = 0; k < VP__PIECES; k++) {
            g->r_ms += weight[k] * rp[k].r_ms;
            g->hold_bytes += weight[k] * rp[k].facts.act_bytes;
        }
        if (own && mode == VP_RECOMPUTE_FULL) { /* with vocabulary parallelism: the input */
            g->r_ms = g->f_ms;
            g->hold_bytes =
                vs ? io_bytes(su) : (g->first ? tokens : io_bytes(su)) + (g->last ? tokens : 0);
        }
    }
}

/* What a stage's passes cost beyond its parts when pipeline sends block both ends
 * (Megatron-LM's 1F1B; pp_overlap off): each send to a neighbour on another device (F
 * sends its output on, B its input gradient back), and, with the kernel model,
 * chunk_overhead per pass: the blocking exchange synchronises the host with the GPU
 * every chunk, so the framework's own work for the next step (scheduling, launching)
 * shows instead of running ahead. Overlapped sends hide both. */
static void add_step_costs(const vp_price_setup *su, const vp_schedule *s, int st,
                           vp_price_stage *g) {
    if (su->work->pp_overlap)
        return;
    double chunk = su->gpu->efficiency == 0 ? su->gpu->chunk_overhead * 1e3 : 0;
    g->f_ms += chunk;
    g->b_ms += chunk;
    g->w_ms += chunk;
    if (!g->last && s->stage_device[st + 1] != g->device)
        g->f_ms += vp__send_seconds(su, g->device, s->stage_device[st + 1]) * 1e3;
    if (!g->first && s->stage_device[st - 1] != g->device)
        g->b_ms += vp__send_seconds(su, g->device, s->stage_device[st - 1]) * 1e3;
}

/* Fills layout->stage from the split: each stage's layers plus its ends. A tied head
 * shares the embedding when its route's first stage sits on the same device. */
static void fill_stages(const vp_price_setup *su, const vp_schedule *s, const vp__piece_price *pp,
                        vp_price_layout *lay) {
    int R = s->route_len;
    for (int st = 0; st < s->S; st++) {
        int pos = st % R, n = lay->layers_per_stage[pos], l0 = 0;
        for (int k = 0; k < pos; k++)
            l0 += lay->layers_per_stage[k];
        vp_price_stage *g = &lay->stage[st];
        *g = (vp_price_stage){.l0 = l0,
                              .l1 = l0 + n,
                              .first = pos == 0,
                              .last = pos == R - 1,
                              .device = s->stage_device[st]};
        double weight[VP__PIECES];
        vp__piece_weights(su->arch, g->l0, g->l1, g->first, g->last, weight);
        for (int k = 0; k < VP__PIECES; k++) {
            g->params += weight[k] * pp[k].facts.params;
            g->expert_params += weight[k] * pp[k].expert_params;
            g->act_bytes += weight[k] * pp[k].facts.act_bytes;
            g->keep_bytes += weight[k] * pp[k].facts.keep_bytes;
            g->f_ms += weight[k] * pp[k].f_ms;
            g->a2a_f_ms += weight[k] * pp[k].a2a_f_ms;
            g->a2a_b_ms += weight[k] * pp[k].a2a_b_ms;
            g->b_ms += weight[k] * pp[k].b_ms;
            g->w_ms += weight[k] * pp[k].w_ms;
            g->r_ms += weight[k] * pp[k].r_ms;
        }
        vp__zero_pass_ms(su, pp, weight, g);
        g->hold_bytes = g->act_bytes;
        if (g->last && su->arch->tied && s->stage_device[st - pos] == g->device)
            g->params -= (double)su->arch->vocab * su->arch->hidden / su->work->tp;
        add_step_costs(su, s, st, g);
    }
}

/* Mean time of a hop between pipeline neighbours on different devices, in ms: the send,
 * or with blocking sends (their time is in the passes) the link's latency. A schedule's
 * critical path crosses every hop alike, so the mean keeps the path's total. */
static double mean_hop_ms(const vp_price_setup *su, const vp_schedule *s) {
    long ranks = (long)su->work->tp * su->work->cp * su->work->dp; /* per pipeline rank */
    const vp_gpu *g = su->gpu;
    double sum = 0;
    int hops = 0;
    for (int st = 0; st + 1 < s->S; st++) {
        int a = s->stage_device[st], b = s->stage_device[st + 1];
        if ((st + 1) % s->route_len == 0 || a == b)
            continue;
        bool inter = vp__crosses_nodes(g, a * ranks, b * ranks);
        sum += su->work->pp_overlap ? vp__send_seconds(su, a, b)
                                    : (inter ? g->inter_latency : g->intra_latency);
        hops++;
    }
    return hops ? sum / hops * 1e3 : 0;
}

/* vpipe's per-stage scratch for B (vp_stage_sizes.work_bytes): the block's work floats
 * when the stage has layers, at least one activation on the last stage. */
static double vpipe_scratch(const vp_price_setup *su, const vp_price_stage *g) {
    double T = su->work->seq, N = su->work->mbs * T, C = su->arch->hidden;
    double floats = g->l1 > g->l0 ? N * su->arch->ffn + T * T + 3 * T * (C / su->arch->heads) : 0;
    if (g->last && floats < N * C)
        floats = N * C;
    return floats * su->arch->dtype_bytes;
}

/* Communicators device d joins: its TP and DP groups, one per other device it sends to or
 * receives from, and the pair that reduces a tied embedding's gradient; with vocabulary
 * parallelism (vs) instead of that pair the group of all p devices that combines the
 * shards (every shard holds its rows of both the tied table and the head). */
static int communicators(const vp_price_setup *su, const vp_schedule *s, const vp__vocab_split *vs,
                         int d) {
    const vp_workload *t = su->work;
    int n = (t->tp > 1) + (vp__weight_dp(t) > 1) + (t->cp > 1), seen[8], n_seen = 0;
    if (su->arch->experts > 0) /* the expert layers' EP, ETP and expert-DP groups */
        n += (t->ep > 1) + (t->etp > 1) + (vp__expert_dp(t) > 1);
    int first = -1, last = -1;
    for (int st = 0; st < s->S; st++) {
        int pos = st % s->route_len;
        first = pos == 0 && first < 0 ? s->stage_device[st] : first;
        last = pos == s->route_len - 1 ? s->stage_device[st] : last;
        if (s->stage_device[st] != d)
            continue;
        int nb[2] = {pos > 0 ? s->stage_device[st - 1] : d,
                     pos < s->route_len - 1 ? s->stage_device[st + 1] : d};
        for (int k = 0; k < 2; k++) {
            bool known = nb[k] == d;
            for (int i = 0; i < n_seen && !known; i++)
                known = seen[i] == nb[k];
            if (!known && n_seen < 8)
                seen[n_seen++] = nb[k];
        }
    }
    bool pair = !vs && su->arch->tied && first != last && (d == first || d == last);
    return n + n_seen + pair + (vs && s->p > 1);
}

/* The activation bytes F saves of the model's largest kind of layer under work. */
static double largest_layer(const vp_arch *a, const vp_workload *work) {
    int counts[VP__KINDS];
    vp__kind_counts(a, 0, a->layers, counts);
    double most = 0;
    for (int k = 0; k < VP__KINDS; k++) {
        vp_price_facts f;
        if (!counts[k])
            continue;
        vp__piece_facts(a, work, VP_PRICE_LAYER, (unsigned)k, &f);
        most = f.act_bytes > most ? f.act_bytes : most;
    }
    return most;
}

/* Every item of each rank's memory but the activations (vp__memory_close totals them).
 * vpipe's own model is a CPU process whose tensors are all it measures: no head buffers,
 * context or communicators. With vocabulary parallelism (vs) each rank holds its shard's
 * model states and its shard's logits too. */
static void fixed_memory(const vp_price_setup *su, const vp_schedule *s, const vp__vocab_split *vs,
                         const vp__piece_price *pp, vp_price_layout *lay) {
    const vp_workload *t = su->work;
    const vp_arch *a = su->arch;
    vp_workload plain = *t;
    plain.recompute = VP_RECOMPUTE_NONE;
    double whole = largest_layer(a, &plain); /* what full recompute rebuilds at once */
    bool own = a->impl == VP_IMPL_VPIPE;
    /* what the loss holds beside its saved fp32 softmax: the 16-bit logits (Megatron-LM's
       fused cross-entropy), or their fp32 gradient and log_softmax's backward output
       (torchtitan's eager loss, vp_framework) */
    bool titan = t->framework == VP_FRAMEWORK_TORCHTITAN, piped = pipelining(su, s);
    double per_mb = own ? 0 : vp__tokens(t) * a->vocab / t->tp; /* one microbatch's logits */
    /* torchtitan's pipeline (torch.distributed.pipelining) keeps every microbatch's output,
       its 16-bit logits, on the last stage until the step ends (the stage's output chunks,
       which its schedule's step returns by default): the running one's among them */
    double kept = piped ? per_mb * a->dtype_bytes : 0;
    double logits = per_mb * (titan ? 8 : a->dtype_bytes) - kept;
    for (int st = 0; st < s->S; st++) {
        const vp_price_stage *g = &lay->stage[st];
        vp_rank_memory *m = &lay->fixed[g->device], *each = &lay->per_microbatch[g->device];
        add_states(t, g->params, g->expert_params, m);
        m->fp8_weights += vp__fp8_copy_bytes(su, g->l0, g->l1);
        double weight[VP__PIECES]; /* ZeRO-3: the rank's largest gathered layers */
        vp__piece_weights(a, g->l0, g->l1, g->first, g->last, weight);
        m->gathers = fmax(m->gathers, vp__zero_working_set(su, pp, weight));
        if (piped) /* a receive buffer per microbatch each way */
            each->buffers += io_bytes(su) * (!g->first + !g->last);
        else
            m->buffers += io_bytes(su) * ((!g->first && s->stage_device[st - 1] != g->device) +
                                          (!g->last && s->stage_device[st + 1] != g->device));
        m->logits += g->last && !vs ? logits : 0;
        each->logits += g->last && !vs ? kept : 0;
        if (own)
            m->workspace += vpipe_scratch(su, g);
        else if (t->recompute == VP_RECOMPUTE_FULL && g->l1 > g->l0)
            m->workspace = whole;
        else if (t->recompute == VP_RECOMPUTE_SELECTIVE && g->l1 > g->l0) /* what B rebuilds */
            m->workspace = whole - largest_layer(a, t);
    }
    /* the whole sequence's input of a linear, gathered over TP (with --tp-overlap twice:
       Transformer Engine's communication buffer beside it) */
    double gathered = vp__tokens(t) * a->hidden * a->dtype_bytes;
    double gathers = t->sp && t->tp > 1 && !own ? gathered * (t->tp_overlap ? 2 : 1) : 0;
    gathers += vp__cp_buffer_bytes(a, t); /* CP's key-value buffers (cp.c) */
    for (int d = 0; d < s->p; d++) {
        vp_rank_memory *m = &lay->fixed[d];
        double vocab_params = vs ? vs->params : 0;
        add_states(t, vocab_params, 0, m);
        m->logits += vs ? logits / s->p : 0;
        lay->per_microbatch[d].logits += vs ? kept / s->p : 0;
        m->gathers += gathers;
        m->context = own ? 0 : su->gpu->context_bytes;
        m->comm = own ? 0 : communicators(su, s, vs, d) * su->gpu->comm_buffer_bytes;
        m->reserve = t->reserve_bytes;
        vp__memory_close(lay->frag_fraction, m);
    }
}

/* ---- costs ---------------------------------------------------------------------------- */

/* What a cost-aware family is built with: per device, its stages' times as one slice
 * (the cost model charges each of v chunks 1/v of it), and the ZB memory split. */
static vp_status build_costs(const vp_price_setup *su, const vp_schedule *s, vp_price_layout *lay,
                             vp_error *err) {
    double act = 0, keep = 0;
    for (int st = 0; st < s->S; st++) {
        act += lay->stage[st].act_bytes;
        keep += lay->stage[st].keep_bytes;
    }
    lay->mem = vp_memcfg_default();
    lay->mem.kind = VP_MEM_ZB;
    lay->mem.zb_ratio = keep < act ? keep / act : 1.0;
    if (su->measured) {
        lay->costs = *su->measured;
        return VP_OK;
    }
    size_t p = (size_t)s->p;
    double *slice = vp__calloc(4 * p, sizeof *slice); /* f, b, w, stage count per device */
    if (!slice)
        return vp__fail(err, VP_ENOMEM, "out of memory");
    double *dev[3] = {slice, slice + p, slice + 2 * p}, *count = slice + 3 * p;
    for (int st = 0; st < s->S; st++) {
        const vp_price_stage *g = &lay->stage[st];
        dev[0][g->device] += g->f_ms;
        dev[1][g->device] += g->b_ms;
        dev[2][g->device] += g->w_ms;
        count[g->device] += 1;
    }
    double v = s->placement == VP_PLACE_BIDIR ? 1.0 : (double)s->S / s->p, mean[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        for (size_t d = 0; d < p; d++) {
            dev[k][d] *= count[d] ? v / count[d] : 0;
            mean[k] += dev[k][d] / (double)p;
        }
    lay->slice_ms = slice;
    lay->costs = vp_costs_default();
    lay->costs.f = mean[0]; /* for display: families read the per-device values */
    lay->costs.b = mean[1];
    lay->costs.w = mean[2];
    lay->costs.c = lay->hop_ms;
    lay->costs.dev_f = dev[0];
    lay->costs.dev_b = dev[1];
    lay->costs.dev_w = dev[2];
    return VP_OK;
}

/* Whether s's copies can be priced: it offloads nothing, or the accelerator has a host
 * link, or the copies were measured. */
static bool host_link_ok(const vp_price_setup *su, const vp_schedule *s) {
    return !vp_schedule_offloads(s) || su->gpu->host_bw > 0 ||
           (su->measured && su->measured->o >= 0);
}

static vp_status host_link_error(const vp_price_setup *su, const vp_schedule *s, vp_error *err) {
    return vp__fail(err, VP_EINVAL,
                    "%s offloads, but accelerator %s has no host link (host_gb_s) to price its "
                    "copies with",
                    s->family, su->gpu->name);
}

/* What each stage's O moves (its share of what F keeps until B) and how long each copy
 * takes: a measured O and L per unit as given, else the bytes over the host link. */
static void fill_offload(const vp_price_setup *su, const vp_schedule *s, vp_price_layout *lay) {
    vp_cost_model *cm = lay->cm;
    const vp_costs *m = su->measured;
    for (int st = 0; st < s->S; st++) {
        vp_price_stage *g = &lay->stage[st];
        g->off_bytes = s->offload[st] * g->hold_bytes;
        cm->off_bytes[st] = g->off_bytes;
        cm->off[st] = g->off_bytes / lay->unit_bytes;
        g->copy_ms = su->gpu->host_bw > 0 ? 1e3 * g->off_bytes / su->gpu->host_bw : 0;
        cm->o[st] = m && m->o >= 0 ? m->o * cm->off[st] : g->copy_ms;
        cm->l[st] =
            m && (m->l >= 0 || m->o >= 0) ? (m->l >= 0 ? m->l : m->o) * cm->off[st] : g->copy_ms;
        if (m && m->o >= 0)
            g->copy_ms = cm->o[st];
    }
}

/* The times of a vocabulary shard's passes EF, EB, S and T in ms: a p-th of the
 * embedding's F and of its B + W, of the head's F and of its B + W. */
static void vocab_ms(const vp__piece_price *pp, int p, double ms[4]) {
    const vp__piece_price *e = &pp[VP__PIECE_EMBEDDING], *h = &pp[VP__PIECE_HEAD];
    ms[0] = e->f_ms / p;
    ms[1] = (e->b_ms + e->w_ms) / p;
    ms[2] = h->f_ms / p;
    ms[3] = (h->b_ms + h->w_ms) / p;
}

/* The vocabulary shards' passes in the cost model: their times (measured S, T, E when
 * given, else ms) and their bytes (vs). */
static void fill_vocab(const vp_price_setup *su, const vp__vocab_split *vs, const double ms[4],
                       vp_price_layout *lay) {
    vp_cost_model *cm = lay->cm;
    for (int d = 0; vs && d < cm->p; d++) {
        for (int k = 0; k < 4 && !su->measured; k++)
            cm->vocab[k * cm->p + d] = ms[k];
        cm->vocab_act_bytes[d] = vs->embed_bytes;
        cm->vocab_act_bytes[cm->p + d] = vs->output_bytes;
        cm->vocab_act[d] = vs->embed_bytes / lay->unit_bytes;
        cm->vocab_act[cm->p + d] = vs->output_bytes / lay->unit_bytes;
    }
}

/* The simulator's cost model: measured costs laid out as given (their times become the
 * stages'), or the stages' own times; bytes and units from the stages. */
static vp_status fill_cost_model(const vp_price_setup *su, const vp_schedule *s,
                                 vp_price_layout *lay, vp_error *err) {
    vp_costs plain = vp_costs_default();
    vp_memcfg mem = vp_memcfg_default();
    vp_status rc = vp_cost_model_new(s, su->measured ? su->measured : &plain, &mem, &lay->cm, err);
    if (rc != VP_OK)
        return rc;
    vp_cost_model *cm = lay->cm;
    cm->has_bytes = 1;                                   /* filled below from the stages */
    cm->bw_holds_keep = su->arch->impl == VP_IMPL_VPIPE; /* its BW: B of the stage, then W */
    double unit = 0;
    for (int st = 0; st < s->S; st++)
        unit += lay->stage[st].act_bytes / s->p;
    lay->unit_bytes = unit;
    for (int st = 0; st < s->S; st++) {
        vp_price_stage *g = &lay->stage[st];
        if (su->measured) { /* a measured B includes whatever it recomputes, R is R */
            g->f_ms = cm->f[st];
            g->b_ms = cm->b[st];
            g->w_ms = cm->w[st];
            g->r_ms = s->recompute != VP_RECOMPUTE_NONE ? cm->r[st] : 0;
        } else {
            cm->f[st] = g->f_ms;
            cm->b[st] = g->b_ms;
            cm->w[st] = g->w_ms;
            cm->r[st] = g->r_ms; /* read for R passes only */
        }
        cm->act_bytes[st] = g->act_bytes;
        cm->keep_bytes[st] = g->keep_bytes;
        cm->hold_bytes[st] = g->hold_bytes;
        cm->tail_bytes[st] = g->tail_bytes;
        cm->act[st] = g->act_bytes / unit;
        cm->keep[st] = g->keep_bytes / unit;
        cm->hold[st] = g->hold_bytes / unit;
    }
    cm->c = lay->hop_ms;
    fill_offload(su, s, lay);
    vp__overlap_fill(su, lay);
    return VP_OK;
}

vp_status vp_price_layout_offload(vp_price_layout *lay, const vp_price_setup *su,
                                  const vp_schedule *s, vp_error *err) {
    if (lay->p != s->p || lay->S != s->S || lay->route_len != s->route_len)
        return vp__fail(err, VP_EINVAL, "the layout was priced for another shape than %s's",
                        s->family);
    if (!host_link_ok(su, s))
        return host_link_error(su, s, err);
    fill_offload(su, s, lay);
    return VP_OK;
}

void vp_price_layout_free(vp_price_layout *lay) {
    if (!lay)
        return;
    free(lay->slice_ms);
    vp_cost_model_free(lay->cm);
    free(lay->layers_per_stage);
    free(lay->stage);
    free(lay->fixed);
    free(lay->per_microbatch);
    free(lay);
}

vp_status vp_price_layout_new(const vp_price_setup *su, const vp_schedule *shape,
                              vp_price_layout **out, vp_error *err) {
    *out = NULL;
    vp_status rc = vp_price_check(su, err);
    if (rc != VP_OK)
        return rc;
    if (!su->gpu || !shape)
        return vp__fail(err, VP_EINVAL, "pricing a schedule needs an accelerator and a schedule");
    if (shape->recompute != VP_RECOMPUTE_NONE && su->work->recompute != VP_RECOMPUTE_NONE &&
        su->work->recompute != shape->recompute)
        return vp__fail(err, VP_EINVAL,
                        "%s recomputes (%s) in R passes, the workload asks %s recomputation "
                        "inside B: one recomputation, priced once",
                        shape->family, vp_recompute_name(shape->recompute),
                        vp_recompute_name(su->work->recompute));
    if (su->measured && !(su->measured->f >= 0 && su->measured->b >= 0 && su->measured->w >= 0 &&
                          su->measured->c >= 0))
        return vp__fail(err, VP_EINVAL, "measured costs must be >= 0");
    if (!host_link_ok(su, shape))
        return host_link_error(su, shape, err);
    if (shape->vocab_parallel && su->arch->vocab < shape->p)
        return vp__fail(err, VP_EINVAL,
                        "vocabulary parallelism over %d devices needs a vocabulary of at least %d "
                        "entries (one per device); %s has %d",
                        shape->p, shape->p, su->arch->name, su->arch->vocab);
    vp_price_layout *lay = vp__calloc(1, sizeof *lay);
    if (lay) {
        lay->layers_per_stage = vp__calloc((size_t)shape->route_len, sizeof(int));
        lay->stage = vp__calloc((size_t)shape->S, sizeof *lay->stage);
        lay->fixed = vp__calloc((size_t)shape->p, sizeof *lay->fixed);
        lay->per_microbatch = vp__calloc((size_t)shape->p, sizeof *lay->per_microbatch);
    }
    if (!lay || !lay->layers_per_stage || !lay->stage || !lay->fixed || !lay->per_microbatch) {
        vp_price_layout_free(lay);
        return vp__fail(err, VP_ENOMEM, "out of memory");
    }
    lay->p = shape->p;
    lay->S = shape->S;
    lay->frag_fraction = su->arch->impl == VP_IMPL_VPIPE ? 0 : su->gpu->frag_fraction;
    lay->route_len = shape->route_len;
    lay->vocab_parallel = shape->vocab_parallel;
    /* R passes: the stages priced without recomputation, then each R's part (vp_workload) */
    vp_workload plain = *su->work;
    vp_price_setup psu = *su;
    plain.zero = vp__zero_effective(su->work, shape->p); /* zero.c: FSDP under a pipeline */
    if (shape->recompute != VP_RECOMPUTE_NONE || plain.zero != su->work->zero) {
        plain.recompute =
            shape->recompute != VP_RECOMPUTE_NONE ? VP_RECOMPUTE_NONE : plain.recompute;
        psu.work = &plain;
    }
    vp__piece_price parts[VP__PIECES];
    vp__price_pieces(&psu, parts);
    vp__vocab_split vsplit, *vs = shape->vocab_parallel ? &vsplit : NULL;
    double vms[4] = {0, 0, 0, 0};
    if (vs) { /* the shards take the embedding's and the head's vocabulary */
        vp__vocab_split_of(su->arch, psu.work, shape->p, vs);
        vocab_ms(parts, shape->p, vms);
        vocab_ends(vs, parts);
    }
    rc = choose_split(&psu, shape, parts, lay->layers_per_stage, err);
    if (rc == VP_OK) {
        fill_stages(&psu, shape, parts, lay);
        if (shape->recompute != VP_RECOMPUTE_NONE)
            fill_recompute(su, shape->recompute, vs, lay);
        pipelining_stages(&psu, shape, lay);
        fixed_memory(&psu, shape, vs, parts, lay);
        lay->hop_ms = su->measured ? su->measured->c : mean_hop_ms(su, shape);
        rc = build_costs(su, shape, lay, err);
    }
    if (rc == VP_OK && vs && !su->measured) { /* what a family is built with */
        lay->costs.e = (vms[0] + vms[1]) / 2;
        lay->costs.s = vms[2];
        lay->costs.t = vms[3];
    }
    if (rc == VP_OK)
        rc = fill_cost_model(su, shape, lay, err);
    if (rc == VP_OK)
        fill_vocab(su, vs, vms, lay);
    if (rc != VP_OK) {
        vp_price_layout_free(lay);
        return rc;
    }
    *out = lay;
    return VP_OK;
}
