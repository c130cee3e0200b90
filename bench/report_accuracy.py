"""The accuracy section of vpipe's results report (issue 29): every published run of
data/anchors/ priced with the default presets beside what it measured, the errors per
source and per accelerator, issue 25's MoE, FP8, CP and FSDP runs per source and per kind,
the runs vpipe cannot express yet, calibration on three of Megatron-LM's H100 runs, and the
speed of both. report.py calls collect() and markdown(); alone it prints the section for a
build (python3 standard library only):

    python3 bench/report_accuracy.py --build build [--quick] > accuracy.md
"""
import argparse
import csv
import io
import json
import math
import os

import report
from report import COLORS, SHAPES, Axis, Figure, Panel, log, table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANCHORS = os.path.join(ROOT, "data", "anchors")
# The dense runs: the presets' expected errors (vp_gpu.expected, test_accuracy) are
# measured over these files only, so the summary and per-accelerator tables read them alone.
FILES = ["sc21.csv", "megatron2024.csv", "zerobubble.csv", "controllable-memory.csv",
         "others.csv"]
# The runs of issue 25's kinds (MoE, FP8, CP, FSDP), reported apart per source and per kind.
KIND_FILES = ["moe.csv", "fp8.csv", "cp.csv", "fsdp.csv"]
KINDS = ["MoE", "FP8", "CP", "FSDP"]
# The rows of torchtitan's December 2024 tables that anchors.md does not list: priced the
# same way, counted in no figure above (no constant or mechanism came from them).
UNLISTED = "unlisted.csv"
TARGET = (0.10, 0.20)  # issue 25: tokens/s within 10% mean and 20% worst per kind
SOURCES = {
    "SC21": "Narayanan et al., SC21, Table 1: GPT 1.7B-1T on up to 3072 A100s",
    "Megatron-2024": "Megatron-LM README, 2024: GPT 1.7B-462B on up to 6144 H100s",
    "ZB": "Zero Bubble (ICLR 2024), Table 4: 1.5B and 6.2B on 8 A100s",
    "CM": "Controllable Memory (NeurIPS 2024), via a secondary source: 38.5B and 98.5B on "
          "A100s",
    "MB": "Megatron-Bridge's performance summary (26.02 and archive): MoE and FP8 on H100",
    "MS": "Megatron-Bridge's performance skills: Qwen3-30B-A3B on 16 H100s",
    "N24": "NeMo 24.07 performance summary: GPT-3 and Llama on H100, FP8",
    "ML": "Megatron-LM examples/llama: Llama 3 8B on 8 H100s, FP8",
    "LS": "NeMo's long-sequence performance: Llama 2 7B and Llama 3 on H100 with CP",
    "TT": "torchtitan's H100 benchmarks (2024-12): Llama 3 with FSDP",
    "TA": "torchtitan's async-TP benchmarks (2025-06): Llama 3 70B and 405B, FSDP x TP",
    "AM": "NeMo Automodel's performance summary: DeepSeek-V3 and MoE with FSDP2 and EP",
}
# The same report at the start of issue 29 (commit 4987d37, the data and bench_accuracy of
# this run, the model before): mean and worst absolute throughput error per source, and
# Zero Bubble's memory.
BEFORE = {"SC21": (0.104, 0.159), "Megatron-2024": (0.183, 0.316), "ZB": (0.058, 0.109),
          "CM": (0.290, 0.347)}
BEFORE_MEMORY = (0.052, 0.128)
# Calibration demonstration: three of Megatron-LM's H100 runs, fitted from the H100's
# datasheet with the A100's kernel constants carried over (what vpipe had before).
THREE = ("m24-7.1b", "m24-70b", "m24-314b")


def read_rows(path):
    """The runs of a RUNS.csv (comment lines dropped) as dicts, and the header."""
    with open(path) as f:
        text = "".join(line for line in f if not line.startswith("#"))
    reader = csv.DictReader(io.StringIO(text))
    return list(reader), reader.fieldnames


def write_rows(path, rows, header, gpu=None):
    """rows to path, relative model paths made absolute, gpu replaced when given."""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=header)
    w.writeheader()
    for r in rows:
        r = dict(r)
        if r["model"].startswith("models/"):
            r["model"] = os.path.join(ANCHORS, r["model"])
        if gpu:
            r["gpu"] = os.path.abspath(gpu)
        w.writerow(r)
    with open(path, "w") as f:
        f.write(out.getvalue())


def calibration_demo(r):
    """vpipe calibrate on THREE from an H100 carrying the A100's kernels; the other six
    priced with the calibrated file and with that start."""
    rows, header = read_rows(os.path.join(ANCHORS, "megatron2024.csv"))
    a100 = json.loads(r.cli("model", "list", "--json"))
    g = {x["name"]: x for x in a100["gpus"]}
    start = dict(g["a100-80gb"], name="h100-with-a100-kernels")
    for key in ("peak_tflops", "memory_gib", "hbm_tb_s", "intra_node_gb_s", "inter_node_gb_s",
                "p2p_gb_s"):
        start[key] = g["h100-80gb"][key]
    paths = {k: os.path.join(r.data, f"calib-{k}") for k in
             ("start.json", "three.csv", "six.csv", "fitted.json", "six-start.csv",
              "six-fitted.csv")}
    with open(paths["start.json"], "w") as f:
        json.dump(start, f)
    three = [x for x in rows if x["id"] in THREE]
    six = [x for x in rows if x["id"] not in THREE]
    write_rows(paths["three.csv"], three, header)
    fit = json.loads(r.cli("calibrate", "--runs", paths["three.csv"], "--gpu", paths["start.json"],
                           "-o", paths["fitted.json"], "--json"))
    out = {"fit": fit, "rows": []}
    for tag, gpu in (("start", paths["start.json"]), ("fitted", paths["fitted.json"])):
        write_rows(paths[f"six-{tag}.csv"], six, header, gpu)
        d = json.loads(r.run([os.path.join(r.bench, "bench_accuracy"), paths[f"six-{tag}.csv"]]))
        out[tag] = {x["id"]: x["error"] for x in d["rows"]}
    return out


def collect(r, cfg):
    quick = cfg["quick"]
    log("accuracy: every published run of data/anchors/ (bench_accuracy)")
    files = [os.path.join(ANCHORS, f) for f in FILES]
    acc = json.loads(r.run([os.path.join(r.bench, "bench_accuracy"), *files], "accuracy.json"))
    files = [os.path.join(ANCHORS, f) for f in KIND_FILES]
    kinds = json.loads(r.run([os.path.join(r.bench, "bench_accuracy"), *files],
                             "accuracy-kinds.json"))
    unlisted = json.loads(r.run([os.path.join(r.bench, "bench_accuracy"),
                                 os.path.join(ANCHORS, UNLISTED)], "accuracy-unlisted.json"))
    log("accuracy: vpipe calibrate on three H100 runs")
    demo = calibration_demo(r)
    log("accuracy: bench_calibrate (20 runs)")
    text = r.run([os.path.join(r.bench, "bench_calibrate"), "20", "1" if quick else "3",
                  os.path.join(ANCHORS, "sc21.csv"), os.path.join(ANCHORS, "zerobubble.csv")],
                 "bench_calibrate.txt")
    line = next(x for x in text.splitlines() if x.startswith("calibrate\t")).split("\t")
    machine = next(x for x in text.splitlines() if x.startswith("machine:"))
    origin = {x["id"]: f for f in FILES + KIND_FILES
              for x in read_rows(os.path.join(ANCHORS, f))[0]}
    return dict(acc=acc, kinds=kinds, unlisted=unlisted, origin=origin, demo=demo,
                calibrate=line, machine=machine)


# ---------------------------------------------------------------------------------------
# The plot


def plot(acc, path, title="vpipe's predicted throughput against published runs"):
    """Predicted against published tokens/s per GPU, one point per priced run of acc (a
    bench_accuracy answer), the diagonal and the +-10% band, one color per source."""
    rows = [x for x in acc["rows"] if x["priced"]]
    lo = min(min(x["measured_tokens_per_s_per_gpu"], x["tokens_per_s_per_gpu"]) for x in rows)
    hi = max(max(x["measured_tokens_per_s_per_gpu"], x["tokens_per_s_per_gpu"]) for x in rows)
    sources = list(dict.fromkeys(x["source"] for x in rows))
    lines = (len(sources) + 1 + 4) // 5  # legend lines, 5 entries each
    fig = Figure(620, 582 + 18 * lines, title)
    ax = Axis(lo / 1.5, hi * 1.5, True)
    pan = Panel(fig, (90, 60, 480, 440), ax, ax, "tokens/s per GPU, log scales",
                "published", "vpipe (default presets)")
    a, b = ax.lo, ax.hi
    pan.line([(a, a), (b, b)], "#666", 1.2)
    pan.line([(a, a * 1.1), (b / 1.1, b)], "#999", 1, "5,4")
    pan.line([(a * 1.1, a), (b, b / 1.1)], "#999", 1, "5,4")
    shape = lambda k: SHAPES[k % len(SHAPES)]
    for k, src in enumerate(sources):
        for x in rows:
            if x["source"] == src:
                pan.mark(x["measured_tokens_per_s_per_gpu"], x["tokens_per_s_per_gpu"],
                         COLORS[k % len(COLORS)], shape(k), hollow=not x["tuned"])
    fig.legend(90, 560, [(s, COLORS[k % len(COLORS)], shape(k), None)
                         for k, s in enumerate(sources)] +
               [("+-10%", "#999", None, "5,4")], columns=5, col_width=122)
    fig.text(90, 567 + 18 * lines, "filled: a run that set a preset's constant; hollow: held out",
             size=11)
    fig.save(path)


# ---------------------------------------------------------------------------------------
# Markdown


def kinds_of(x):
    """Issue 25's kinds a run carries, from its columns (a run can carry several)."""
    return [k for k, on in (("MoE", x.get("ep", 1) > 1),
                            ("FP8", x.get("fp8", "off") not in ("off", "", None)),
                            ("CP", x.get("cp", 1) > 1), ("FSDP", x.get("zero", 0) == 3)) if on]


def errors(rows):
    """Runs, mean / worst |throughput error| and the memory errors where published."""
    tok = [abs(x["error"]) for x in rows]
    mem = [abs(x["memory_error"]) for x in rows if "memory_error" in x]
    cell = (f"{100 * sum(mem) / len(mem):.1f}% / {100 * max(mem):.1f}% ({len(mem)})" if mem
            else "none published")
    return len(rows), sum(tok) / len(tok), max(tok), cell


def signed(x):
    return f"{100 * x:+.1f}%"


def configuration(x):
    chunks = f" v {x['v']}" if x.get("v") else ""
    more = "".join(f" {k} {x[key]}" for k, key in (("CP", "cp"), ("EP", "ep"))
                   if x.get(key, 1) > 1)
    more += f" ({x['cp_comm']})" if x.get("cp", 1) > 1 and x.get("cp_comm", "p2p") != "p2p" else ""
    more += (f" ({x['ep_routing']} routing)"
             if x.get("ep", 1) > 1 and x.get("ep_routing", "random") != "random" else "")
    more += f", ZeRO {x['zero']}" if x.get("zero", 0) >= 2 else ""
    more += f", FP8 {x['fp8']}" if "FP8" in kinds_of(x) else ""
    more += ", eager" if x.get("eager") else ""
    return (f"TP {x['tp']} PP {x['pp']} DP {x['dp']}{more}, gbs {x['gbs']}, "
            f"{x['family']}{chunks}, mbs {x['chosen_mbs']}, recompute {x['chosen_recompute']}")


def md_summary(acc):
    rows = []
    for g in acc["sources"]:
        if not g["priced"]:
            continue
        before = BEFORE.get(g["name"])
        memory = (f"{100 * g['memory_mean']:.1f}% / {100 * g['memory_worst']:.1f}% ({g['memory']})"
                  if g["memory"] else "")
        held = (f"{100 * g['held_out_mean']:.1f}% / {100 * g['held_out_worst']:.1f}%"
                if g["priced"] > g["tuned"] else "none held out")
        rows.append([SOURCES.get(g["name"], g["name"]), f"{g['priced']} of {g['rows']}",
                     f"**{100 * g['mean']:.1f}%** / {signed(g['worst_signed'])}",
                     f"{100 * before[0]:.1f}% / {100 * before[1]:.1f}%" if before else "",
                     held, f"{g['concordant']} of {g['pairs']}", memory])
    gpus = [[f"`{g['name']}`", g["priced"], f"**{100 * g['mean']:.1f}%** / "
             f"{100 * g['worst']:.1f}%",
             f"{100 * g['memory_mean']:.1f}% / {100 * g['memory_worst']:.1f}% ({g['memory']})"
             if g["memory"] else "none published"] for g in acc["gpus"]]
    return ("### 7.1 Summary\n\n" +
            table(["source", "runs priced", "mean / worst error", "before issue 29",
                   "held out: mean / worst", "pairs in published order", "memory: mean / worst"],
                  rows) +
            "\nPer accelerator (what every `--model` report states as its expected error; "
            "test_accuracy checks the presets carry these figures):\n\n" +
            table(["accelerator", "runs", "throughput: mean / worst", "memory: mean / worst"],
                  gpus) +
            f"\nEvery row is priced in {acc['elapsed_s']:.2f} s (bench_accuracy; the issue asks "
            "for under 10 s). The thresholds of issue 29 — SC21 within 6% on average and 12% at "
            "worst, Megatron-LM's 2024 H100 table within 8% and 15%, published peaks within 10% "
            "on average, no run that ran predicted not to fit — are `test_accuracy`.\n")


def md_kinds(kinds):
    rows = [x for x in kinds["rows"] if x["priced"]]
    by_source, by_kind = [], []
    for src in dict.fromkeys(x["source"] for x in rows):
        n, mean, worst, mem = errors([x for x in rows if x["source"] == src])
        total = sum(1 for x in kinds["rows"] if x["source"] == src)
        by_source.append([SOURCES.get(src, src), f"{n} of {total}",
                          f"**{100 * mean:.1f}%** / {100 * worst:.1f}%", mem])
    misses = []
    for kind in KINDS:
        mine = [x for x in rows if kind in kinds_of(x)]
        if not mine:
            continue
        n, mean, worst, mem = errors(mine)
        met = mean <= TARGET[0] and worst <= TARGET[1]
        if not met:
            misses.append(f"{kind} (mean {100 * mean:.1f}%, worst {100 * worst:.1f}%)")
        mems = [abs(x["memory_error"]) for x in mine if "memory_error" in x]
        mem_met = "" if not mems else "met" if sum(mems) / len(mems) <= TARGET[0] else "missed"
        by_kind.append([kind, n, f"**{100 * mean:.1f}%** / {100 * worst:.1f}%", mem,
                        "met" if met else "missed", mem_met])
    verdict = ("every kind meets it" if not misses else
               "missed by " + ", ".join(misses))
    return ("\nIssue 25's runs (`data/anchors/moe.csv`, `fp8.csv`, `cp.csv`, `fsdp.csv`; "
            "command: `bench_accuracy` on those four files), kept apart from the dense runs "
            "above so the presets' expected errors stay those of the dense runs. Per source "
            "(mean / worst |error| of tokens/s per GPU; memory where published, with its "
            "count):\n\n" +
            table(["source", "runs priced", "tokens/s: mean / worst", "memory: mean / worst"],
                  by_source) +
            "\nPer kind, from each run's columns (EP > 1: MoE; FP8 on: FP8; CP > 1: CP; "
            "ZeRO 3: FSDP; a run with several counts in each). A report priced with one of "
            "these kinds states, beside its accelerator's figure, the one of its kinds missed "
            "most on average (`expected_error.kind` in `--json`; test_accuracy checks that "
            "vp_price_expected_kind carries this table):\n\n" +
            table(["kind", "runs", "tokens/s: mean / worst", "memory: mean / worst",
                   "tokens/s: 10% / 20%", "memory: 10% mean"], by_kind) +
            f"\nIssue 25 asks for tokens/s within {100 * TARGET[0]:.0f}% mean and "
            f"{100 * TARGET[1]:.0f}% worst per kind, and peak memory within 10% mean where "
            f"published. Throughput: {verdict}; memory as the last column says.\n")


def md_unlisted(unlisted, kinds):
    rows = [x for x in unlisted["rows"] if x["priced"]]
    body = [[f"`{x['id']}`", configuration(x), f"{x['measured_tokens_per_s_per_gpu']:.5g}",
             f"{x['tokens_per_s_per_gpu']:.5g}", signed(x["error"]),
             f"{x['measured_memory_gib']:.1f} / {x['memory_gib']:.1f} "
             f"({signed(x['memory_error'])})", "yes" if x["fits"] else "**no**"] for x in rows]
    n, mean, worst, mem = errors(rows)
    # torchtitan's tables 2 and 6 by CP, listed and unlisted rows together
    by_id = {x["id"]: x for x in kinds["rows"] + rows if x["priced"]}
    trend, degrees = [], None
    for name, ids in (("Table 2 (8B, FSDP x CP on 8 GPUs)", ("T2a", "T2b", "T2c", "T2d")),
                      ("Table 6 (405B, TP 8 PP 8, FSDP x CP)", ("T6a", "T6b", "T6c", "T6d"))):
        got = [by_id[i] for i in ids if i in by_id]
        trend.append([name] + [f"{signed(x['error'])}, {x['measured_memory_gib']:.1f} / "
                               f"{x['memory_gib']:.1f} GiB" for x in got])
        degrees = degrees or [f"CP {x['cp']}" for x in got]  # the first table's columns
    return ("\nThe same benchmark's rows anchors.md does not list (`data/anchors/unlisted.csv`: "
            "torchtitan's December 2024 tables 2, 3 and 6), priced exactly as the listed rows "
            "of their tables and counted in none of the figures above; none set a constant or "
            "a mechanism, so they check both from outside (command: `bench_accuracy "
            "data/anchors/unlisted.csv`):\n\n" +
            table(["run", "configuration priced", "published", "vpipe", "error",
                   "peak GiB: published / vpipe", "fits"], body) +
            f"\n{n} runs: tokens/s {100 * mean:.1f}% mean and {100 * worst:.1f}% worst, "
            f"memory {mem}. With the listed rows, each table by CP degree (throughput error; "
            "peak GiB published / vpipe), the share of the sequence per rank fixed:\n\n" +
            table(["table"] + degrees, trend) +
            "\nThe eager run (T3a) priced with torchtitan's eager kernels (`--eager`) lands "
            "where T1a does. As in the listed rows, torchtitan's context parallelism runs "
            "slower than priced as CP rises, and Table 2's published peaks stay flat where "
            "vpipe's grow with the CP key-value buffers (a run vpipe predicts not to fit, and "
            "that ran, says **no** above).\n")


def md_rows(acc):
    s = ["### 7.2 Every run\n",
         "Published and predicted tokens/s per GPU, error = predicted / published − 1 "
         "(positive: vpipe is optimistic). Cells the source does not publish (`*` in "
         "data/anchors/) are the fastest configuration vpipe finds that fits at the "
         "published TP/PP/DP among Megatron-LM's schedules (the configuration column shows "
         "its pick). *tuned*: the run set a preset's constant (src/price/gpus.c says which).\n"]
    for src, title in SOURCES.items():
        rows = [x for x in acc["rows"] if x["source"] == src and x["priced"]]
        if not rows:
            continue
        body = []
        for x in rows:
            mem = (f"{x['measured_memory_gib']:.1f} / {x['memory_gib']:.1f} "
                   f"({signed(x['memory_error'])})" if "memory_error" in x else "")
            body.append([f"`{x['id']}`", configuration(x),
                         f"{x['measured_tokens_per_s_per_gpu']:.5g}",
                         f"{x['tokens_per_s_per_gpu']:.5g}", signed(x["error"]),
                         "tuned" if x["tuned"] else "held out", mem])
        s.append(f"**{title}**\n\n" + table(["run", "configuration priced", "published",
                                             "vpipe", "error", "", "peak GiB: published / "
                                             "vpipe"], body))
    s.append("![predicted against published](results-accuracy.svg)\n")
    s.append("Issue 25's runs (MoE, FP8, CP, FSDP) on their own:\n\n"
             "![issue 25's runs, predicted against published](results-accuracy-today.svg)\n")
    return "\n".join(s)


def md_refused(acc, origin):
    rows = [x for x in acc["rows"] if not x["priced"]]
    reasons = {}
    for x in rows:
        why = x["why"].split(": ", 1)[-1] if x["why"].startswith("column") else x["why"]
        key = why.replace(" (issue #25)", "")
        reasons.setdefault(key, []).append(x["id"])
    body = [[why, len(ids), ", ".join(ids)] for why, ids in sorted(reasons.items())]
    where = " and ".join(f"`data/anchors/{f}`" for f in FILES + KIND_FILES
                         if f in {origin.get(x["id"]) for x in rows})
    return ("### 7.3 Not expressible yet\n\n"
            f"{len(rows)} runs of design/anchors.md section 2 are data in {where} with their "
            "configuration and citation, but vpipe does not price them: what they ran has no "
            "option yet, or the source publishes no tokens/s or step time to compare. The "
            "reason the reader or the row gives:\n\n" +
            table(["reason", "runs", "ids"], body))


MECHANISMS = """### 7.4 What the model holds, and from which evidence

Each mechanism is a documented part of src/price/ with its own test
(`test_price_mechanisms`); the constants are per accelerator class, never per run
(src/price/gpus.c gives every figure's evidence):

- **Communication as frameworks run it** (src/price/comm.c): ranks in Megatron-LM's order
  (TP innermost, then DP, then PP), so a group's members per node decide its link — NVLink
  inside a node, min(NVLink, members × NIC) across; ring collectives with latency and
  bandwidth terms and NCCL's tree for an all-reduce across nodes; pipeline sends of each TP
  rank's 1/t; the DP reduction overlapped bucket by bucket with the last microbatch's
  backward (the exposed last bucket, or what the backward cannot cover, per device), the
  distributed optimizer's gather before the next forward; TP collectives pipelined with the
  linears (`--tp-overlap`); sends blocking both ends (Megatron-LM's 1F1B) unless overlapped
  (`--pp-overlap`).
- **Per-pass costs**: matrix multiplies at an efficiency by shape (gemm_edge: the tile,
  128 on A100, 256 on H100); FlashAttention's kernels on the causal half at their own
  rates (FlashAttention-2 on A100, FlashAttention-3/cuDNN on H100); memory-bound kernels
  at the HBM bandwidth; a fixed cost per layer and pass, and per chunk and pass where
  blocking sends synchronise the host with the GPU (so many small chunks cost what they
  cost); the optimizer at the HBM's achieved bandwidth. These are fused kernels (Transformer
  Engine's, or torch.compile's); torchtitan without compile (`--eager`, the `eager` column:
  T1a, T3a) adds what its eager elementwise ops move beyond them, counted op by op from its
  RMSNorm, rotary embedding and SwiGLU gate (per element of the hidden width, 32 bytes more
  per norm in F and 70 in B; 16 each way over the queries and keys; 4 and 8 over the MLP
  width), and its FP8 casts at the eager kernels' measured 19 bytes per element.
- **Memory a process holds** (`memory_per_rank`): the tensors (`allocated`: model states,
  activations, pipeline buffers, workspace, the head's 16-bit `logits` while the loss
  runs, the `gathers` of sequence parallelism and TP overlap), the caching allocator's
  `fragmentation`, the CUDA `context` and library workspaces, `comm` buffers per
  communicator, and a user `reserve`; `fits` checks the whole. Megatron-LM reduces and
  gathers the data-parallel gradients and parameters in place in its contiguous buffers
  (the gradients and parameters items); the buckets and gathered layers of ZeRO-2/3 and
  FSDP come with issue #25. torchtitan's pipeline (torch.distributed.pipelining's
  PipelineStage) allocates a receive buffer per microbatch each way and keeps them, keeps
  each microbatch's output until its backward, and each input gradient (the receive
  buffer's `.grad`) until the next step clears it.

Which runs set which constant: the A100's matrix-multiply and memory-bound constants come
from the Zero Bubble paper's Table 6 pass times (so every Zero Bubble row is marked
tuned), its communication efficiency and overheads from four SC21 runs (1.7B, 18B, 145B,
1T); the H100's matrix-multiply and memory-bound constants and layer overhead from four
Megatron-LM 2024 runs (1.7B, 16B, 70B, 314B); attention and communication rates from
published kernel and NCCL figures. The held-out columns above are the other runs. The
Controllable Memory runs, none of them used, come out 18–26% slower than predicted; they
are transcribed from a secondary source, and the same authors' Zero Bubble runs are within
11%, so the gap is stated, not fitted.
"""


def md_calibration(out):
    demo, fit = out["demo"], out["demo"]["fit"]
    rows = [[f"`{k}`", signed(demo["start"][k]), signed(v)] for k, v in demo["fitted"].items()]
    med = sorted(abs(v) for v in demo["fitted"].values())
    med0 = sorted(abs(v) for v in demo["start"].values())
    median = (med[2] + med[3]) / 2 if len(med) == 6 else med[len(med) // 2]
    median0 = (med0[2] + med0[3]) / 2 if len(med0) == 6 else med0[len(med0) // 2]
    consts = [[c["what"], f"{c['base']:.4g}", f"{c['fitted']:.4g}",
               "pinned" if c["pinned"] else "not pinned"] for c in fit["constants"] if c["asked"]]
    line = out["calibrate"]
    return ("### 7.5 Calibration: `vpipe calibrate`\n\n"
            "`vpipe calibrate --runs RUNS.csv [--gpu BASE] -o OUT.json` fits these constants "
            "to your own measured runs and writes an accelerator file for `--gpu`; it prints "
            "each run's fit and leave-one-out error and which constants the runs could not "
            "pin down. On three of Megatron-LM's 2024 H100 runs (" + ", ".join(THREE) +
            "), starting from the H100's datasheet with the A100 preset's constants carried "
            "over (as vpipe carried the A100's kernel constants to the H100 before issue "
            "29):\n\n" +
            table(["constant", "start", "fitted", ""], consts) +
            "\nThe other six runs, priced with the start and with the calibrated file:\n\n" +
            table(["run", "start", "calibrated"], rows) +
            f"\nMedian absolute error {100 * median0:.1f}% before, **{100 * median:.1f}%** "
            f"after (the issue asks for 10%); leave-one-out on the three: mean "
            f"{100 * fit['loo_mean']:.1f}%. On runs generated from a known accelerator with "
            "±0.5% noise, six fitted predict six others within 2% (`test_calibrate`).\n\n"
            f"Speed: `bench_calibrate` fits {line[1]} runs (SC21 and Zero Bubble) in "
            f"{float(line[2]):.2f} s ({line[3]} iterations; the issue asks for under 5 s; "
            f"{out['machine'].removeprefix('machine: ')}).\n")


def markdown(out):
    acc = out["acc"]
    every = {"rows": acc["rows"] + out["kinds"]["rows"]}
    return "\n".join([
        "## 7. How far to trust the figures: vpipe against published runs\n",
        "Every published training run of design/anchors.md and design/models.md that vpipe "
        "can express, and the rows of the same torchtitan benchmark anchors.md leaves out, "
        "is data in `data/anchors/*.csv` (RUNS.csv columns, one citation per row) and is "
        "priced here with the default presets, as a user would: its model, "
        "accelerator and configuration, nothing else. Command: `bench_accuracy "
        "data/anchors/*.csv`.\n",
        md_summary(acc) + md_kinds(out["kinds"]) + md_unlisted(out["unlisted"], out["kinds"]),
        md_rows(every), md_refused(every, out["origin"]),
        MECHANISMS, md_calibration(out)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="build directory (vpipe, bench/)")
    ap.add_argument("--data", help="raw outputs (default: BUILD/bench-data)")
    ap.add_argument("--quick", action="store_true", help="one calibration repetition")
    a = ap.parse_args()
    r = report.Runner(a.build, a.data or os.path.join(a.build, "bench-data"))
    print(markdown(collect(r, dict(quick=a.quick))))


if __name__ == "__main__":
    main()
