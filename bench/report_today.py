"""The today's-models section of vpipe's results report (issue 25): per-rank GiB of
DeepSeek-V3 and Qwen3-235B-A22B under 1F1B, interleaved and DualPipeV, the all-to-all the
overlapped F&B pairs hide, the long-context and MoE planners, the H100 kernel
measurements beside the H100 preset's assumptions, and context parallelism's ring attention
measured on one rank.

report.py calls collect() and markdown(); alone it prints the section for a build:

    python3 bench/report_today.py --build build [--quick] > today.md
"""
import argparse
import csv
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (the Runner, table and log helpers)

SECTION = 10  # the section of docs/results.md (after offload, 9)
GIB = 1024.0 ** 3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "bench", "measured", "h100-sxm-kernels.json")
RING = os.path.join(ROOT, "bench", "measured", "h200-ring-attention.json")
# The layouts: DeepSeek-V3's as the README runs it (its paper's PP 16 x EP 64 on H800s),
# Qwen3-235B-A22B's as Megatron-Bridge's MB3 row (256 H100s: TP 2, PP 8, DP 16, EP 32).
MODELS = {
    "DeepSeek-V3": (["--model", "deepseek-v3", "--gpu", "h800-80gb", "-p", "16", "-m", "120",
                     "--seq", "4096", "--dp", "128", "--ep", "64", "--zero", "--flash",
                     "--recompute", "selective"], 2),
    "Qwen3-235B-A22B": (["--model", "qwen3-235b-a22b", "--gpu", "h100-80gb", "-p", "8",
                         "-m", "128", "--tp", "2", "--sp", "--dp", "16", "--ep", "32",
                         "--seq", "4096", "--flash", "--zero"], 4),
}
DENSE = ["--model", "llama3-70b", "--gpu", "h100-80gb", "-p", "8", "-m", "64", "--seq", "8192",
         "--tp", "8", "--sp", "--dp", "4", "--zero", "--flash"]
PLANS = [
    ("Llama 3.1 405B, sequence 131072, 16384 H100s",
     ["--model", "llama3.1-405b", "--gpu", "h100-80gb", "--gpus", "16384", "--seq", "131072",
      "--global-batch", "128"], 30),
    ("DeepSeek-V3, sequence 4096, 1024 H100s",
     ["--model", "deepseek-v3", "--gpu", "h100-80gb", "--gpus", "1024", "--seq", "4096",
      "--global-batch", "8192", "--flash", "--zero"], 10),
]


def command(args):
    return "vpipe " + " ".join(args)


def simulate(r, family, args, v=None):
    """simulate --json of one family, with its command line; interleaved's m rounded up
    to a multiple of p (its rounds of p microbatches)."""
    argv = ["simulate", family, *args] + (["-v", str(v)] if v else [])
    if family == "interleaved":
        p, m = int(argv[argv.index("-p") + 1]), int(argv[argv.index("-m") + 1])
        argv[argv.index("-m") + 1] = str(-(-m // p) * p)
    return r.json(*argv), command(argv + ["--json"])


def collect_ranks(r):
    out = {}
    for name, (args, v) in MODELS.items():
        log_name = name.lower()
        report.log(f"today: {log_name} under 1f1b, interleaved and dualpipev")
        out[name] = [simulate(r, "1f1b", args), simulate(r, "interleaved", args, v),
                     simulate(r, "dualpipev", args)]
    return out


def collect_overlap(r):
    args = MODELS["DeepSeek-V3"][0]
    moe = [simulate(r, "1f1b", args), simulate(r, "1f1b", args + ["--ep-overlap"]),
           simulate(r, "dualpipev", args), simulate(r, "dualpipe", args)]
    dense = [simulate(r, "1f1b", DENSE), simulate(r, "dualpipev", DENSE),
             simulate(r, "dualpipe", DENSE)]
    return moe, dense


def collect_plans(r, quick):
    """plan --model of PLANS, timed (none in quick mode: they take seconds each)."""
    out = []
    for title, args, target in [] if quick else PLANS:
        report.log(f"today: plan {title}")
        argv = ["plan", *args]
        t = time.time()
        d = r.json(*argv)
        out.append(dict(title=title, cmd=command(argv + ["--json"]), data=d,
                        wall=time.time() - t, target=target))
    return out


def collect_cp_pair(r):
    """T2a and T2c (data/anchors/cp.csv): vpipe's step time and the published tokens/s per
    GPU. Both rows run 32768 tokens per GPU a step, so the step times' ratio is the
    throughputs' inverse ratio."""
    anchors = os.path.join(ROOT, "data", "anchors")
    base = ["-p", "1", "-m", "1", "--model", os.path.join(anchors, "models", "llama3.1-8b.json"),
            "--gpu", os.path.join(anchors, "h100-96gb.json"), "--flash", "--zero", "3",
            "--recompute", "full", "--fp8", "tensorwise", "--framework", "torchtitan",
            "--attn-kernel", "fa2", "--cp-comm", "allgather"]
    rows = {"T2a": ["--seq", "32768", "--dp", "8", "--cp", "1"],
            "T2c": ["--seq", "131072", "--dp", "2", "--cp", "4"]}
    with open(os.path.join(anchors, "cp.csv")) as f:
        published = {x["id"]: x["tokens_per_s_per_gpu"] for x in
                     csv.DictReader(line for line in f if not line.startswith("#"))}
    out = {}
    for name, args in rows.items():
        d, cmd = simulate(r, "1f1b", base + args)
        out[name] = dict(step_s=d["step_time_s"], published=float(published[name]),
                         command=cmd.replace(ROOT + os.sep, ""))  # paths from the checkout
    return out


def collect(r, cfg):
    with open(KERNELS) as f:
        kernels = json.load(f)
    with open(RING) as f:
        ring = json.load(f)
    gpus = {g["name"]: g for g in r.json("model", "list")["gpus"]}
    return dict(quick=cfg["quick"], ranks=collect_ranks(r), overlap=collect_overlap(r),
                plans=collect_plans(r, cfg["quick"]), kernels=kernels, h100=gpus["h100-80gb"],
                ring=ring, cp_pair=collect_cp_pair(r))


# ---------------------------------------------------------------------------------------
# Markdown


def gib(x):
    return f"{x / GIB:.1f}"


def a2a(d):
    o = d.get("a2a_overlap") or {}
    return (f"{o.get('hidden_ms', 0):.0f}", f"{o.get('exposed_ms', 0):.0f}")


def picture(d, width=40):
    """One line per rank: its total GiB as a bar, '|' at the accelerator's capacity."""
    totals = [x["total"] for x in d["memory_per_rank"]]
    top = max(max(totals), d["capacity_bytes"])
    cap = round(width * d["capacity_bytes"] / top)
    lines = []
    for x in d["memory_per_rank"]:
        n = round(width * x["total"] / top)
        bar = ("#" * n).ljust(width)
        bar = bar[:cap] + "|" + bar[cap:] if cap < width else bar + "|"
        lines.append(f"rank {x['rank']:2d} {bar} {x['total'] / GIB:6.1f} GiB")
    return "\n".join(lines)


def md_ranks(out):
    parts = []
    for k, (name, runs) in enumerate(out["ranks"].items()):
        rows = []
        for d, _ in runs:
            hidden, exposed = a2a(d)
            label = d["family"] + (f" (v = {d['stages'] // d['p']})"
                                   if d["family"] == "interleaved" else "")
            rows.append([label, gib(d["memory_max_bytes"]), d["memory_max_rank"],
                         gib(min(x["total"] for x in d["memory_per_rank"])),
                         "yes" if d["fits"] else "**no**", f"{d['step_time_s']:.2f}",
                         f"{d['tokens_per_s_per_gpu']:.0f}", hidden, exposed])
        cap = runs[0][0]["capacity_bytes"]
        over = [f"{d['family']} by {gib(d['memory_max_bytes'] - cap)} GiB" for d, _ in runs
                if not d["fits"]]
        fit = ("every schedule fits" if not over else
               "over the capacity on its largest rank: " + ", ".join(over))
        one, dual = runs[0][0], runs[2][0]
        verdict = (f"{name} at this layout: {fit}. DualPipeV's step is "
                   f"{100 * (dual['step_time_s'] / one['step_time_s'] - 1):+.1f}% against "
                   "1F1B's, its largest rank "
                   f"{(dual['memory_max_bytes'] - one['memory_max_bytes']) / GIB:+.1f} GiB.\n")
        pics = "\n\n".join(f"{d['family']}:\n\n```\n{picture(d)}\n```" for d, _ in runs)
        cmds = "\n".join(f"- `{c}`" for _, c in runs)
        parts.append(
            f"### {SECTION}.{k + 1} {name}: GiB per rank\n\n" +
            report.table(["schedule", "largest rank GiB", "rank", "smallest rank GiB",
                          f"fits {gib(runs[0][0]['capacity_bytes'])} GiB", "step s",
                          "tokens/s/GPU", "all-to-all hidden ms", "exposed ms"], rows) +
            "\n" + verdict + "\nGiB: each rank's `total` of `memory_per_rank` (allocated tensors, the "
            "allocator's fragmentation, context, communication buffers); the all-to-all is "
            "per microbatch summed over the stages (`a2a_overlap`). Interleaved 1F1B runs "
            "its microbatches in rounds of p, so its m is rounded up to a multiple of p "
            "where needed (its command shows the m it ran). Commands:\n\n" + cmds +
            "\n\nEach rank's total ('|' marks the accelerator's capacity):\n\n" + pics + "\n")
    return "\n".join(parts)


def md_overlap(out):
    moe, dense = out["overlap"]
    labels = ["1f1b", "1f1b --ep-overlap", "dualpipev", "dualpipe"]

    def rows(runs, names):
        return [[n, f"{d['step_time_s']:.2f}", f"{d['tokens_per_s_per_gpu']:.0f}", *a2a(d)]
                for n, (d, _) in zip(names, runs)]
    head = ["schedule", "step s", "tokens/s/GPU", "all-to-all hidden ms", "exposed ms"]
    base, best = moe[0][0]["step_time_s"], min(d["step_time_s"] for d, _ in moe)
    dbase = dense[0][0]["step_time_s"]
    dbest = min(d["step_time_s"] for d, _ in dense)
    hidden = [float(a2a(d)[0]) for d, _ in dense]
    return (f"### {SECTION}.3 DualPipe's overlap: where the all-to-all hides\n\n"
            "DeepSeek-V3's layout above (PP 16, EP 64):\n\n" +
            report.table(head, rows(moe, labels)) + "\n" +
            "\n".join(f"- `{c}`" for _, c in moe) +
            f"\n\nThe fastest is {100 * (base / best - 1):.1f}% faster than plain 1F1B. "
            "A dense model (Llama-3-70B, EP 1: no all-to-all to hide):\n\n" +
            report.table(head, rows(dense, ["1f1b", "dualpipev", "dualpipe"])) + "\n" +
            "\n".join(f"- `{c}`" for _, c in dense) +
            f"\n\nWith EP = 1 the overlapped pairs hide {max(hidden):.0f} ms: the overlap "
            "buys nothing, and the step times differ only by the schedules' bubbles "
            f"(the best {100 * (dbase / dbest - 1):+.1f}% against 1F1B).\n")


def md_plans(out):
    if out["quick"]:
        return (f"### {SECTION}.4 The planner on long context and MoE\n\nQuick mode "
                "(`bench/run --quick`): the two searches are left out; the full report "
                "runs them.\n")
    rows, cmds = [], []
    for p in out["plans"]:
        best = p["data"].get("best") or {}
        rows.append([p["title"], *describe(best), "yes" if best.get("fits") else "**no**",
                     f"{p['wall']:.1f}", f"{p['data'].get('elapsed_s', 0):.1f}",
                     f"{p['target']}" + ("" if p["wall"] <= p["target"] else " (**missed**)")])
        cmds.append(f"- `{p['cmd']}`")
    return (f"### {SECTION}.4 The planner on long context and MoE\n\n" +
            report.table(["search", "schedule", "CP", "TP", "PP", "DP", "EP", "step s",
                          "largest rank GiB", "fits", "wall s", "search s", "target s"],
                         rows) + "\n" + "\n".join(cmds) +
            "\n\nWall: the whole command, timed by this script on the report's machine "
            "(shared, so a few seconds move between runs); search: the JSON's `elapsed_s`. "
            "The targets are issue 25's.\n")


def describe(b):
    """The chosen configuration's cells of a plan answer."""
    return [b.get("family", ""), b.get("cp", 1), b.get("tp", 1), b.get("p", b.get("pp", "")),
            b.get("dp", 1), b.get("ep", 1), f"{b.get('step_time_s', 0):.2f}",
            gib(b.get("memory_max_bytes", 0))]


def md_kernels(out):
    k, g = out["kernels"], out["h100"]
    peak, fp8 = g["peak_tflops"], g.get("fp8_peak_tflops", 2 * g["peak_tflops"])
    rows = []
    for x in k["gemm"]:
        bf = x["bf16_tflops"]
        rows.append([f"{x['m']} x {x['n']} x {x['k']}", f"{bf:.0f} ({bf / peak:.2f})"] +
                    [f"{x[f'fp8_{r}_tflops']:.0f} ({x[f'fp8_{r}_tflops'] / (2 * bf):.3f})"
                     for r in ("tensorwise", "rowwise", "blockwise")])
    mean = {r: sum(x[f"fp8_{r}_tflops"] / (2 * x["bf16_tflops"]) for x in k["gemm"]) /
            len(k["gemm"]) for r in ("tensorwise", "rowwise", "blockwise")}
    af, ab = g["attn_efficiency_f"] * peak, g["attn_efficiency_b"] * peak
    att = [[x["seq"], f"{x['f_tflops']:.0f}", f"{x['b_tflops']:.0f}",
            f"{100 * (af / x['f_tflops'] - 1):+.0f}%", f"{100 * (ab / x['b_tflops'] - 1):+.0f}%"]
           for x in k["attention"]]
    return (f"### {SECTION}.5 H100 kernels, measured, against the H100 preset\n\n"
            f"Measured on an {k['device']} (torch {k['torch']}, CUDA {k['cuda']}) with "
            "`bench/gpu_kernels.py`; data `bench/measured/h100-sxm-kernels.json`. Matrix "
            "multiplies (m x n x k), TFLOP/s; BF16's fraction of the preset's "
            f"{peak:.0f} TFLOP/s peak, FP8's of twice the BF16 kernel on the same shape:\n\n" +
            report.table(["shape", "BF16", "FP8 tensorwise", "FP8 rowwise", "FP8 blockwise"],
                         rows) +
            f"\nMean FP8 over twice BF16: tensorwise {mean['tensorwise']:.3f}, rowwise "
            f"{mean['rowwise']:.3f}, blockwise {mean['blockwise']:.3f}. The preset "
            "(src/price/fp8.c) takes 0.906 per-tensor and 0.799 blockwise: the mean over the "
            "nine layer shapes of the anchor runs, so these shapes agree within a few "
            "percent (rowwise has no recipe in vpipe). FP8 peak in the preset: "
            f"{fp8:.0f} TFLOP/s.\n\n"
            f"Attention (causal, {k['attention'][0]['heads']} heads, head dim "
            f"{k['attention'][0]['head_dim']}), TFLOP/s forward and backward, against the "
            f"preset's {g['attn_efficiency_f']:.2f} / {g['attn_efficiency_b']:.2f} of peak "
            f"({af:.0f} / {ab:.0f} TFLOP/s; positive: the preset is optimistic):\n\n" +
            report.table(["sequence", "F measured", "B measured", "preset F", "preset B"],
                         att) + "\n" + md_attention_verdict(k, af, ab))


def md_attention_verdict(k, af, ab):
    off = [x["seq"] for x in k["attention"]
           if abs(af / x["f_tflops"] - 1) > 0.1 or abs(ab / x["b_tflops"] - 1) > 0.1]
    if not off:
        return "The preset agrees with every measured length within 10%.\n"
    return ("The preset's constant attention rate disagrees by more than 10% at sequence " +
            ", ".join(str(s) for s in off) + ": the measured kernel speeds up with length "
            "(short sequences are slower than the preset assumes, long ones faster), which "
            "one efficiency per accelerator cannot follow.\n")


def md_ring(out):
    k = out["ring"]
    rows = []
    for c in k["cases"]:
        slow = max(c["ranks"], key=lambda x: x["f_s"] + x["b_s"])
        rows.append([c["case"], c["heads"], c["seq"], c["cp"],
                     f"{c['one_call_f_tflops']:.0f} / {c['one_call_b_tflops']:.0f}",
                     f"{c['ring_kernels_f_tflops']:.0f} / {c['ring_kernels_b_tflops']:.0f}",
                     f"{c['ring_f_tflops']:.0f} / {c['ring_b_tflops']:.0f}",
                     f"{c['ring_over_one_call']:.3f}",
                     f"{slow['f_extra_s'] * 1e3:.1f} / {slow['b_extra_s'] * 1e3:.1f}",
                     f"{slow['f_extra_over_op_count']:.2f} / {slow['b_extra_over_op_count']:.2f}"])
    ratios = [c["ring_over_one_call"] for c in k["cases"] if c["cp"] > 1]
    kernels = [(1 / c["ring_kernels_f_tflops"] + 2.5 / c["ring_kernels_b_tflops"]) /
               (1 / c["one_call_f_tflops"] + 2.5 / c["one_call_b_tflops"]) for c in k["cases"]
               if c["cp"] > 1]
    a, c = out["cp_pair"]["T2a"], out["cp_pair"]["T2c"]
    worst = max(abs(v) for d in k["check"].values() for v in d.values())
    return (f"### {SECTION}.6 Context parallelism's ring attention on one rank, measured\n\n"
            "vpipe prices a CP rank's attention as its FLOPs (the causal share / cp) at one "
            "kernel rate. torchtitan's CP rows (T2c, T6b, T6d) come out 15-35% optimistic, "
            "so `bench/gpu_ring_attention.py` runs what each rank of PyTorch's ring attention "
            "computes (its load-balanced steps, FlashAttention-2 forward and backward, and its "
            "eager bookkeeping: the fp32 merges of each step's output, the fp32 dQ, dK, dV "
            "accumulation and the copies around them; no communication) and times the "
            "slowest rank against one causal call of the same FLOPs. Measured on an "
            f"{k['device']} (torch {k['torch']}, CUDA {k['cuda']}; copy bandwidth "
            f"{k['copy_gb_s']:.0f} GB/s); data `bench/measured/h200-ring-attention.json`. "
            "Before timing, the emulation's output and gradients matched one causal call "
            f"on a 4096-token sequence over CP 2, 4 and 8 (largest difference {worst:.4f}, "
            "bfloat16's rounding). TFLOP/s forward / backward; bookkeeping: the slowest "
            "rank's time beyond its kernels (ms, F / B) and that time over its bytes counted "
            "op by op at the copy bandwidth:\n\n" +
            report.table(["row", "heads", "sequence", "CP", "one call", "ring kernels",
                          "ring", "ring / one call", "bookkeeping ms", "over op count"], rows) +
            f"\nWith CP > 1 the ring costs {min(ratios):.3f}-{max(ratios):.3f} times one "
            f"call of the same FLOPs: its kernels alone {min(kernels):.3f}-{max(kernels):.3f} "
            "times (F's time and B's, 2.5 F's FLOPs, together), and the eager "
            "bookkeeping adds the rest (T2a is the CP = 1 control: the same code with one "
            "step). So the kernels cannot explain those rows' error, and the bookkeeping "
            "explains at most about 5 of T2c's 35 points, less where torch.compile fuses "
            "the merges (the runs compiled; whether the ring was traced is not published): "
            "vpipe does not price it. Between T2a and T2c (the same 32768 tokens per GPU "
            "a step, each token's attention 4 times longer) vpipe's step grows "
            f"{c['step_s'] / a['step_s']:.2f} times and the runs' "
            f"{a['published'] / c['published']:.2f} times: what the rest is (the exchanges "
            "overlapping, the allocator near the 96 GB card's limit, or another mechanism) "
            "these measurements do not show. Commands:\n\n"
            f"- `{a['command']}` (T2a)\n- `{c['command']}` (T2c)\n")


def markdown(out):
    return "\n".join([
        f"## {SECTION}. Today's models and clusters\n",
        "Mixture-of-experts models with expert parallelism, context parallelism, FSDP and "
        "FP8 (issue 25), priced with the default presets by the built `vpipe`; every table "
        "gives its commands.\n",
        md_ranks(out), md_overlap(out), md_plans(out), md_kernels(out), md_ring(out)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="build directory (vpipe)")
    ap.add_argument("--data", help="raw outputs (default: BUILD/bench-data)")
    ap.add_argument("--quick", action="store_true", help="skip the 405B long-context plan")
    a = ap.parse_args()
    r = report.Runner(a.build, a.data or os.path.join(a.build, "bench-data"))
    print(markdown(collect(r, dict(quick=a.quick))))


if __name__ == "__main__":
    main()
