#!/usr/bin/env python3
"""What one context-parallel rank's attention costs under PyTorch's ring attention, against
the same FLOPs in one causal kernel: the question behind torchtitan's CP rows (T2c, T6b,
T6d), which vpipe prices from the attention's FLOPs / cp at one kernel rate.

Each rank of a CP group of cp holds chunks r and 2cp-1-r of the sequence (causal load
balancing). PyTorch's ring attention (torch.distributed.tensor.experimental: the steps and
the bookkeeping of its _templated_ring_attention and its backward, redone here op for op)
runs cp steps on rank r: step 0 the causal attention of its own block; step i <= r its
queries against the first half of the block of rank r-i (not causal); step i > r the second
half of its queries against the whole block of rank r-i+cp (not causal). F merges each
step's output and log-sum-exp into fp32 (out - sigmoid(lse_i - lse) * (out - out_i), a
half's update rebuilding the whole tensor) and copies each key-value block it passes on; B
runs each step's FlashAttention backward with the merged output and accumulates dQ, dK, dV
in fp32 the same way. This script runs each rank's kernels and bookkeeping on one GPU (no
communication) and times the slowest rank against one causal FlashAttention call with the
rank's FLOPs (the whole sequence, heads / cp), with and without the bookkeeping; it counts
the bookkeeping's bytes op by op and sets its time against them at the measured copy
bandwidth. Before timing, the emulation is checked against a causal call on a small
sequence: outputs and gradients must agree.

usage: python3 bench/gpu_ring_attention.py     (needs torch with CUDA; not run by CI)
"""
import json
import sys

import torch

from gpu_kernels import seconds

FLASH = torch.ops.aten._scaled_dot_product_flash_attention
FLASH_B = torch.ops.aten._scaled_dot_product_flash_attention_backward
DIM = 128


def timed(fn):
    """Mean seconds of fn over 3 calls after one warm-up (gpu_kernels.seconds)."""
    return seconds(fn, iters=3, warm=1)


def flash(q, k, v, causal):
    """FlashAttention's forward: (out, lse, the tensors its backward needs)."""
    r = FLASH(q, k, v, 0.0, causal)
    return r[0], r[1], tuple(r[2:8])  # a dense call's offsets are None (undefined): kept


def flash_backward(dout, q, k, v, out, lse, saved, causal):
    """FlashAttention's backward of one forward call: dQ, dK, dV."""
    cum_q, cum_k, max_q, max_k, seed, offset = saved
    return FLASH_B(dout, q, k, v, out, lse.contiguous(), cum_q, cum_k, max_q, max_k, 0.0, causal,
                   seed, offset)


def half(x, i):
    """Half i of x along the sequence (dimension 2)."""
    return x.chunk(2, dim=2)[i]


def partial_update(whole, new, i, add):
    """whole with its half i replaced by (or increased by) new, rebuilt as a new tensor."""
    parts = list(whole.chunk(2, dim=2))
    if add:
        parts[i] += new
    else:
        parts[i] = new
    return torch.cat(parts, dim=2)


def steps_of(rank, i):
    """Step i of rank's ring: (causal, which half of the block's keys or None, partial)."""
    if i == 0:
        return True, None, False
    if i <= rank:
        return False, 0, False
    return False, None, True


def block(gathered, rank, i, cp, shape):
    """The keys and values of the block rank holds at step i, from the all-gathered buffer."""
    buf = gathered.chunk(cp)[(rank - i) % cp]
    n = buf.numel() // 2
    return buf[:n].reshape(shape), buf[n:].reshape(shape)


def ring_forward(rank, cp, q, k, v, gathered, merge=True):
    """PyTorch's ring attention forward on rank: (output, log-sum-exp, each step's saved
    tensors). q, k, v are transposed views, as torchtitan's attention passes them;
    gathered is the group's keys and values, as the all-gather rotater holds them."""
    if merge:  # without it: the attention kernels alone
        k, v = k.contiguous(), v.contiguous()
    out = lse = None
    steps = []
    for i in range(cp):
        if i > 0:
            k, v = block(gathered, rank, i, cp, k.shape)
        if merge and i < cp - 1:
            torch.cat([k.flatten(), v.flatten()])  # the block the rotater would send on
        causal, kv_half, partial = steps_of(rank, i)
        sq = half(q, 1) if partial else q
        sk, sv = (half(k, kv_half), half(v, kv_half)) if kv_half is not None else (k, v)
        o, l, saved = flash(sq, sk, sv, causal)
        steps.append(saved)
        if not merge:
            continue
        o, l = o.to(torch.float32), l.to(torch.float32).unsqueeze(-1)
        if out is None:
            out, lse = o, l
            continue
        a, b = (half(out, 1), half(lse, 1)) if partial else (out, lse)
        a = a - torch.sigmoid(l - b) * (a - o)
        b = b - torch.nn.functional.logsigmoid(b - l)
        if partial:
            out, lse = partial_update(out, a, 1, False), partial_update(lse, b, 1, False)
        else:
            out, lse = a, b
    if not merge:
        return None, None, steps
    return out.to(q.dtype), lse.squeeze(-1), steps


def ring_backward(rank, cp, q, k, v, gathered, out, lse, dout, steps, accumulate=True,
                  received=None, collect=None):
    """PyTorch's ring attention backward on rank: dQ, dK, dV (16-bit). received stands for
    the fp32 dK, dV each step receives from the previous rank (zeros if None); collect, if
    given, gathers each step's dK per source block (fp32) for the check."""
    if accumulate:  # without it: the attention kernels alone
        dq = torch.zeros_like(q, dtype=torch.float32)
        dk = torch.zeros_like(k, dtype=torch.float32)
        dv = torch.zeros_like(v, dtype=torch.float32)
        if received is None:
            received = torch.zeros(2 * k.numel(), device=q.device, dtype=torch.float32)
        k, v = k.contiguous(), v.contiguous()
    for i in range(cp):
        if i > 0:
            k, v = block(gathered, rank, i, cp, k.shape)
        if accumulate and i != cp - 1:
            torch.cat([k.flatten(), v.flatten()])
        causal, kv_half, partial = steps_of(rank, i)
        sq = half(q, 1) if partial else q
        sk, sv = (half(k, kv_half), half(v, kv_half)) if kv_half is not None else (k, v)
        o, l, g = ((half(out, 1), half(lse, 1).contiguous(), half(dout, 1)) if partial
                   else (out, lse, dout))
        gq, gk, gv = flash_backward(g, sq, sk, sv, o, l, steps[i], causal)
        if collect is not None:
            src = (rank - i) % cp
            full = torch.zeros_like(k, dtype=torch.float32)
            if kv_half == 0:
                full = partial_update(full, gk.float(), 0, True)
            else:
                full += gk.float()
            collect[src] = collect.get(src, 0) + full
        if not accumulate:
            continue
        if i == 0:
            dk += gk
            dv += gv
        else:
            dk = received[: dk.numel()].reshape(dk.shape)
            dv = received[dk.numel():].reshape(dv.shape)
            if kv_half == 0:
                dk, dv = partial_update(dk, gk, 0, True), partial_update(dv, gv, 0, True)
            else:
                dk += gk
                dv += gv
        torch.cat([dk.flatten(), dv.flatten()])  # sent on to the next rank
        if partial:
            dq = partial_update(dq, gq, 1, True)
        else:
            dq += gq
    if not accumulate:
        return None
    return dq.to(q.dtype), received.to(k.dtype)


def transposed(x):
    """x ([batch, heads, seq, dim]) as the transposed view torchtitan's attention passes."""
    return x.transpose(1, 2).contiguous().transpose(1, 2)


def blocks(x, cp):
    """x (sequence on dimension 2) split into the cp ranks' balanced blocks."""
    c = x.chunk(2 * cp, dim=2)
    return [torch.cat([c[r], c[2 * cp - 1 - r]], dim=2) for r in range(cp)]


def gather(kb, vb):
    """The all-gathered buffer: each rank's keys then values, flattened, rank by rank."""
    return torch.cat([torch.cat([k.flatten(), v.flatten()]) for k, v in zip(kb, vb)])


def mk(seq, heads):
    """A random [1, heads, seq, head dim] bfloat16 tensor on the GPU."""
    return torch.randn(1, heads, seq, DIM, device="cuda", dtype=torch.bfloat16)


def check(cp, heads=4, seq=4096):
    """Largest difference between the emulated ring and one causal call (output, dQ, dK)."""
    torch.manual_seed(0)
    q, k, v, dout = (mk(seq, heads) for _ in range(4))
    out, lse, saved = flash(q, k, v, True)
    gq, gk, _ = flash_backward(dout, q, k, v, out, lse, saved, True)
    qb, kb, vb, db, ob = (blocks(x, cp) for x in (q, k, v, dout, out))
    gqb, gkb = blocks(gq, cp), blocks(gk, cp)
    gathered = gather(kb, vb)
    worst = {"out": 0.0, "dq": 0.0, "dk": 0.0}
    dk_sum = {}
    for r in range(cp):
        o, l, steps = ring_forward(r, cp, transposed(qb[r]), transposed(kb[r]),
                                   transposed(vb[r]), gathered)
        worst["out"] = max(worst["out"], (o.float() - ob[r].float()).abs().max().item())
        dq, _ = ring_backward(r, cp, transposed(qb[r]), transposed(kb[r]), transposed(vb[r]),
                              gathered, o, l, db[r], steps, collect=dk_sum)
        worst["dq"] = max(worst["dq"], (dq.float() - gqb[r].float()).abs().max().item())
    for r in range(cp):
        worst["dk"] = max(worst["dk"], (dk_sum[r] - gkb[r].float()).abs().max().item())
    return {k: round(v, 4) for k, v in worst.items()}


def op_bytes(rank, cp):
    """Bytes per element of the rank's output that the bookkeeping above moves (every tensor
    op reads its inputs and writes its output; fp32 4 bytes, bf16 2; keys and values one
    element each per output element, as repeat_kv makes them): F and B."""
    full, halves = rank, cp - 1 - rank  # merging steps over the whole output, over half
    f = 8 + 8 * (cp - 1) + 6 + 38 * full + 27 * halves + 6
    b = 12 + 8 + 8 * (cp - 1) + 46 + 52 * full + 49 * halves + 18
    return f, b


def copy_bandwidth():
    x = torch.empty(1 << 28, device="cuda", dtype=torch.bfloat16)  # 512 MiB
    y = torch.empty_like(x)
    return 2 * x.numel() * 2 / seconds(lambda: y.copy_(x), iters=10, warm=3)


def one_call(seq, heads):
    """Seconds of one causal FlashAttention call's F and B over seq tokens and heads."""
    q, k, v, d = mk(seq, heads), mk(seq, heads), mk(seq, heads), mk(seq, heads)
    out, lse, saved = flash(q, k, v, True)
    return (timed(lambda: flash(q, k, v, True)),
            timed(lambda: flash_backward(d, q, k, v, out, lse, saved, True)))


def case(name, heads, seq, cp, bandwidth):
    """Slowest rank's F and B (with and without the bookkeeping) against one causal call of
    its FLOPs (the whole sequence, heads / cp), and the bookkeeping's time against its op
    count at the copy bandwidth."""
    local = seq // cp
    flops_f = 4.0 * seq * seq * DIM * heads / 2 / cp  # one rank's causal share
    mono_f, mono_b = one_call(seq, heads // cp)
    q, k, v = (transposed(mk(local, heads)) for _ in range(3))
    gathered = gather([mk(local, heads) for _ in range(cp)], [mk(local, heads) for _ in range(cp)])
    received = torch.randn(2 * k.numel(), device="cuda", dtype=torch.float32)
    dout = mk(local, heads)
    elements = float(local * heads * DIM)
    ranks = []
    for r in range(cp):
        out, lse, steps = ring_forward(r, cp, q, k, v, gathered)
        row = {
            "rank": r,
            "f_s": timed(lambda: ring_forward(r, cp, q, k, v, gathered)),
            "f_kernels_s": timed(lambda: ring_forward(r, cp, q, k, v, gathered, merge=False)),
            "b_s": timed(lambda: ring_backward(r, cp, q, k, v, gathered, out, lse, dout, steps,
                                                 received=received)),
            "b_kernels_s": timed(lambda: ring_backward(r, cp, q, k, v, gathered, out, lse,
                                                         dout, steps, accumulate=False)),
        }
        fb, bb = op_bytes(r, cp)
        row["f_op_bytes"], row["b_op_bytes"] = fb, bb
        row["f_extra_s"] = row["f_s"] - row["f_kernels_s"]
        row["b_extra_s"] = row["b_s"] - row["b_kernels_s"]
        row["f_extra_over_op_count"] = row["f_extra_s"] / (fb * elements / bandwidth)
        row["b_extra_over_op_count"] = row["b_extra_s"] / (bb * elements / bandwidth)
        ranks.append(row)
    slow = max(ranks, key=lambda x: x["f_s"] + x["b_s"])
    row = {
        "case": name, "heads": heads, "seq": seq, "cp": cp,
        "one_call_f_tflops": round(flops_f / mono_f / 1e12, 1),
        "one_call_b_tflops": round(2.5 * flops_f / mono_b / 1e12, 1),
        "ring_f_tflops": round(flops_f / slow["f_s"] / 1e12, 1),
        "ring_b_tflops": round(2.5 * flops_f / slow["b_s"] / 1e12, 1),
        "ring_kernels_f_tflops": round(flops_f / slow["f_kernels_s"] / 1e12, 1),
        "ring_kernels_b_tflops": round(2.5 * flops_f / slow["b_kernels_s"] / 1e12, 1),
        "ring_over_one_call": round((slow["f_s"] + slow["b_s"]) / (mono_f + mono_b), 3),
        "ranks": [{k: round(v, 5) if isinstance(v, float) else v for k, v in x.items()}
                  for x in ranks],
    }
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def main():
    props = torch.cuda.get_device_properties(0)
    out = {"device": props.name, "sms": props.multi_processor_count,
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "check": {cp: check(cp) for cp in (2, 4, 8)},
           "copy_gb_s": round(copy_bandwidth() / 1e9, 1)}
    print(json.dumps(out["check"]), file=sys.stderr, flush=True)
    # torchtitan's rows: Llama 3.1 8B (32 query heads; repeat_kv makes keys as many) and
    # 405B at TP 8 (16 per rank); the CP = 1 control T2a; 8B at 131072 over cp 2, 4, 8.
    cases = [("T2a", 32, 32768, 1), ("T2c", 32, 131072, 4), ("T6b", 16, 65536, 2),
             ("T6d", 16, 262144, 8), ("8B cp2", 32, 131072, 2), ("8B cp8", 32, 131072, 8)]
    out["cases"] = [case(*c, out["copy_gb_s"] * 1e9) for c in cases]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
