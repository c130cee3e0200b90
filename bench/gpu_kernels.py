#!/usr/bin/env python3
"""The kernel rates the real-model pricing assumes, measured on a CUDA device with PyTorch:
matrix multiplies in BF16 and FP8 (per-tensor, per-row and, where this PyTorch has it,
128-element blockwise scaling) at the shapes of the anchor runs' layers, the cast an FP8
recipe adds per input, FlashAttention's causal forward and backward from 4k to 128k tokens
(what context parallelism divides), and the HBM copy bandwidth. One JSON object on stdout.

usage: python3 bench/gpu_kernels.py [--quick]      (needs torch with CUDA; not run by CI)
"""
import json
import sys

import torch
import torch.nn.functional as F

QUICK = "--quick" in sys.argv
ITERS = 5 if QUICK else 20


def seconds(fn, iters=ITERS, warm=3):
    """Mean seconds of fn over iters calls, timed with CUDA events after warm calls."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000 / iters


def attempt(fn):
    """fn()'s value, or the error's first line (a recipe this PyTorch or GPU lacks)."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - any failure is reported, not fatal
        return "unavailable: " + str(e).splitlines()[0][:160]


# (M tokens, N, K): Llama-3-8B qkv/o/up/down at 8k tokens, Llama-3-70B at TP 4, DeepSeek-V3's
# expert (width 2048 of 7168) at 4k tokens, and a large square one (the kernel's best).
SHAPES = [
    (8192, 6144, 4096),
    (8192, 4096, 4096),
    (8192, 28672, 4096),
    (8192, 4096, 14336),
    (8192, 2560, 8192),
    (8192, 14336, 8192),
    (8192, 8192, 7168),
    (4096, 4096, 7168),
    (4096, 7168, 2048),
    (16384, 16384, 16384),
]
E4M3 = torch.float8_e4m3fn


def gemms():
    rows = []
    for m, n, k in SHAPES[:4] if QUICK else SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        a8, b8 = a.to(E4M3), b.to(E4M3).t()  # b8: K x N, column-major as _scaled_mm wants
        one = torch.ones((), device="cuda")
        flops = 2.0 * m * n * k
        row = {"m": m, "n": n, "k": k}

        def tf(s):
            return round(flops / s / 1e12, 1) if isinstance(s, float) else s

        row["bf16_tflops"] = tf(seconds(lambda: a @ b.t()))
        row["fp8_tensorwise_tflops"] = tf(attempt(lambda: seconds(
            lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))))
        sa = torch.ones(m, 1, device="cuda")
        sb = torch.ones(1, n, device="cuda")
        row["fp8_rowwise_tflops"] = tf(attempt(lambda: seconds(
            lambda: torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16))))
        # 1 x 128 blocks of the input, 128 x 128 of the weight (DeepSeek-V3's): the scales
        # outer-dimension-major, the layout cuBLAS's blockwise kernels take.
        ba = torch.ones(k // 128, m, device="cuda").t()
        bb = torch.ones(n // 128, k // 128, device="cuda").t()
        row["fp8_blockwise_tflops"] = tf(attempt(lambda: seconds(
            lambda: torch._scaled_mm(a8, b8, scale_a=ba, scale_b=bb, out_dtype=torch.bfloat16))))
        # The per-tensor cast of the input (amax, scale, convert) as eager kernels: the
        # bytes it moves over the HBM per input byte.
        cast = seconds(lambda: (a * (448.0 / a.abs().amax())).to(E4M3))
        row["cast_us"] = round(cast * 1e6, 1)
        rows.append(row)
        del a, b, a8, b8
    return rows


def attention():
    rows = []
    heads, dim = 8, 128
    for s in [4096, 8192, 16384] if QUICK else [4096, 8192, 16384, 32768, 65536, 131072]:
        q, k, v = (torch.randn(1, heads, s, dim, device="cuda", dtype=torch.bfloat16,
                               requires_grad=True) for _ in range(3))
        causal_f = 4.0 * s * s * dim * heads / 2  # QK^T and AV, the causal half

        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        out = fwd()
        grad = torch.randn_like(out)
        f = seconds(fwd, iters=max(2, ITERS // 4))
        fb = seconds(lambda: torch.autograd.grad(fwd(), (q, k, v), grad), iters=max(2, ITERS // 4))
        rows.append({"seq": s, "heads": heads, "head_dim": dim,
                     "f_tflops": round(causal_f / f / 1e12, 1),
                     "b_tflops": round(2.5 * causal_f / max(fb - f, 1e-9) / 1e12, 1)})
        del q, k, v, out, grad
    return rows


def hbm():
    x = torch.empty(1 << 28, device="cuda", dtype=torch.bfloat16)  # 512 MiB
    y = torch.empty_like(x)
    s = seconds(lambda: y.copy_(x))
    return round(2 * x.numel() * 2 / s / 1e9, 1)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    out = {
        "device": props.name,
        "sms": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2**30, 1),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hbm_copy_gb_s": hbm(),
        "gemm": gemms(),
        "attention": attention(),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
