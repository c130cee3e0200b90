"""Real-model sections of vpipe's results report: every family's per-rank GiB on real
configurations and the published figures of design/models.md §6 beside vpipe's
predictions (issue 15), and the hybrid DP x TP x PP x microbatch x schedule x recompute
search (issue 19). report.py calls collect() and markdown(); python3 standard library only.
"""
import json
import os
import statistics
import time

from report import COLORS, Figure, log, pct, table

GIB = 2 ** 30

# ---------------------------------------------------------------------------------------
# Published figures (design/models.md §6): the only numbers here this run does not produce.

# Zero Bubble paper, A100 80 GB, p = 8, sequence 1024: Table 6 pass times per stage (ms,
# F / B / W / hop, at m = 24) and Table 4 samples/s per GPU at m = 24, 32, 64 and peak GB.
ZB_T6 = {"zb-1.5b": (6, (18.522, 18.086, 9.337, 0.601)),
         "zb-6.2b": (3, (29.718, 29.444, 19.927, 0.527))}
ZB_T4 = {"zb-1.5b": {"1f1b": ((11.8, 12.5, 13.6), 30), "zb-1p": ((12.9, 13.4, 14.2), 32),
                     "zb-2p": ((14.5, 14.8, 14.9), 59)},
         "zb-6.2b": {"1f1b": ((3.50, 3.70, 4.03), 39), "zb-1p": ((3.88, 4.00, 4.20), 42),
                     "zb-2p": ((4.32, 4.35, 4.39), 70)}}
ZB_MS = (24, 32, 64)
# Controllable Memory paper, pure PP at sequence 1024 (approximate, from a secondary source):
# activation GB per GPU of each schedule over its 9.6B / 21B / 38.5B models, and MFU at
# cm-38.5b, p = 32, m = 512.
CM_MODELS = (("cm-9.6b", 16, 4), ("cm-21b", 24, 2), ("cm-38.5b", 32, 1))
CM_ACT = (("v-min", "none", 14, 19), ("v-half", "none", 19, 28), ("1f1b", "none", 35, 56),
          ("v-zb", "none", 35, 56), ("1f1b", "full", 0.5, 1.5))
CM_MFU = (("v-zb", "none", 53.2), ("v-half", "none", 51.8), ("1f1b", "none", 47.1),
          ("v-min", "none", 43.7), ("1f1b", "full", 37.2))
# The Ultra-Scale Playbook's Llama-3-8B activations (b = 1, all 32 layers), GiB: 34·s·b·h·L.
PLAYBOOK = {1024: 4.25, 4096: 17, 16384: 68}

# Real configurations whose per-rank GiB the report draws: (label, file stem, arguments).
CONFIGS = [
    ("Llama-3-70B on 64 H100s: p = 8, TP 8 + SP, FlashAttention, sequence 8192, m = 32",
     "llama3-70b-p8", ["--model", "llama3-70b", "--gpu", "h100-80gb", "-p", "8", "-m", "32",
                       "--seq", "8192", "--tp", "8", "--sp", "--flash"]),
    ("Llama-3-70B on 64 H100s: p = 16, TP 4 + SP, FlashAttention, sequence 8192, m = 64",
     "llama3-70b-p16", ["--model", "llama3-70b", "--gpu", "h100-80gb", "-p", "16", "-m", "64",
                        "--seq", "8192", "--tp", "4", "--sp", "--flash"]),
    ("GPT-3 175B on 128 A100s: p = 16, TP 8 + SP, sequence 2048, selective recompute, m = 64",
     "gpt3-175b-p16", ["--model", "gpt3-175b", "--gpu", "a100-80gb", "-p", "16", "-m", "64",
                       "--seq", "2048", "--tp", "8", "--sp", "--recompute", "selective",
                       "--flash", "0"]),
]
SPEED_ARGS = ["compare", "--model", "llama3-70b", "--gpu", "h100-80gb", "-p", "16", "-m", "64",
              "--seq", "8192", "--mbs", "1", "--flash", "0"]


def cmd(args):
    return "vpipe " + " ".join(args)


# ---------------------------------------------------------------------------------------
# Collecting


def zb_table4(r, models):
    rows = []
    for model in models:
        mbs, (f, b, w, c) = ZB_T6[model]
        base = ["--model", model, "--gpu", "a100-80gb", "-p", "8", "--seq", "1024", "--mbs",
                str(mbs), "--split", "even", "--pp-overlap", "--flash", "0"]
        for fam, (rates, gb) in ZB_T4[model].items():
            for m, rate in zip(ZB_MS, rates):
                args = ["simulate", fam, *base, "-m", str(m), "--cost", f"F={f},B={b},W={w},c={c}"]
                d = r.json(*args)
                allocated = max(x["allocated"] for x in d["memory_per_rank"])
                rows.append(dict(model=model, family=fam, m=m, rate=d["samples_per_s_per_gpu"],
                                 paper_rate=rate, gb=allocated / 1e9, paper_gb=gb, cmd=cmd(args)))
        args = ["simulate", "1f1b", *base, "-m", "24"]
        d = r.json(*args)
        st = d["per_stage"][1]
        rows.append(dict(model=model, analytic=(st["f_ms"], st["b_ms"], st["w_ms"], d["hop_ms"]),
                         paper=(f, b, w, c), layers=st["layers"], cmd=cmd(args)))
    return rows


def cm_pure_pp(r, quick):
    act = []
    for model, p, mbs in CM_MODELS[-1:] if quick else CM_MODELS:
        base = ["--model", model, "--gpu", "a100-80gb", "-p", str(p), "-m", str(4 * p), "--seq",
                "1024", "--mbs", str(mbs), "--split", "even", "--pp-overlap", "--flash", "0"]
        row = dict(model=model, p=p, mbs=mbs, cells=[])
        for fam, rec, lo, hi in CM_ACT:
            args = ["simulate", fam, *base, "--recompute", rec]
            d = r.json(*args)
            row["cells"].append(max(x["activations"] for x in d["memory_per_rank"]) / 1e9)
        row["cmd"] = cmd(["simulate", "FAMILY", *base, "--recompute", "none|full"])
        act.append(row)
    base = ["--model", "cm-38.5b", "--gpu", "a100-80gb", "-p", "32", "-m", "512", "--seq", "1024",
            "--mbs", "1", "--split", "even", "--pp-overlap", "--flash", "0"]
    mfu = []
    for fam, rec, paper in CM_MFU:
        d = r.json("simulate", fam, *base, "--recompute", rec)
        mfu.append(dict(family=fam if rec == "none" else f"{fam} + full recompute", mfu=d["mfu"],
                        paper=paper, bubble=d["bubble"]))
    return act, mfu, cmd(["simulate", "FAMILY", *base, "--recompute", "none|full"])


# Llama-3.1-8B's config.json (Llama-3-8B's dimensions with 131072 positions): the
# Playbook's longest sequence is past Llama-3-8B's 8192.
LLAMA31_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
              "max_position_embeddings": 131072, "hidden_act": "silu", "rms_norm_eps": 1e-5,
              "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
              "attention_bias": False}


def playbook(r):
    path = os.path.join(r.data, "llama3.1-8b-config.json")
    with open(path, "w") as f:
        json.dump(LLAMA31_8B, f)
    rows = []
    for seq, gib in PLAYBOOK.items():
        got = {}
        for flash in (False, True):
            args = ["model", "show", path, "--seq", str(seq), "--flash", str(int(flash))]
            d = r.json(*args)
            got[flash] = d["parts"]["layer"]["act_bytes"] * d["layers"] / GIB
        rows.append(dict(seq=seq, paper=gib, plain=got[False], flash=got[True],
                         formula=34 * seq * 4096 * 32 / GIB))
    return rows


def compare_speed(r, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r.cli(*SPEED_ARGS)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), reps


def collect(r, cfg):
    quick = cfg["quick"]
    out = dict(configs=[])
    for label, stem, args in CONFIGS[:1] if quick else CONFIGS:
        log(f"real models: compare {' '.join(args)}")
        rows = r.json("compare", *args, save=f"models-{stem}.json")
        out["configs"].append(dict(label=label, stem=stem, args=args, rows=rows))
    log("real models: the Zero Bubble paper's Tables 4 and 6")
    out["zb"] = zb_table4(r, ["zb-1.5b"] if quick else list(ZB_T6))
    log("real models: the Controllable Memory paper, pure PP")
    out["cm_act"], out["cm_mfu"], out["cm_mfu_cmd"] = cm_pure_pp(r, quick)
    out["playbook"] = playbook(r)
    log("real models: compare --model speed")
    out["speed"] = compare_speed(r, 3 if quick else 11)
    return out


# ---------------------------------------------------------------------------------------
# Per-rank GiB bars


PARTS = (("model states", ("params", "grads", "optimizer"), COLORS[0]),
         ("activations", ("activations",), COLORS[1]),
         ("buffers, workspace, logits, gathers", ("buffers", "workspace", "logits", "gathers"),
          COLORS[2]),
         ("allocator, context, communication", ("fragmentation", "context", "comm", "reserve"),
          "#bab0ac"))


def plot_ranks(conf, path):
    """One small bar chart per family: every rank's GiB, stacked by part, against the
    accelerator's capacity (dashed)."""
    rows = conf["rows"]
    cols, pw, ph = 4, 250, 150
    nrows = (len(rows) + cols - 1) // cols
    fig = Figure(cols * (pw + 40) + 60, nrows * (ph + 50) + 100, conf["label"])
    cap = rows[0]["capacity_bytes"] / GIB
    top = max(cap, max(min(x["memory_max_bytes"] / GIB, 2 * cap) for x in rows)) * 1.05
    for i, d in enumerate(rows):
        x0, y0 = 60 + (i % cols) * (pw + 40), 60 + (i // cols) * (ph + 50)
        fig.out.append(f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="#fbfbfb" '
                       'stroke="#888"/>')
        fits = "fits" if d["fits"] else "does not fit"
        fig.text(x0 + pw / 2, y0 - 6, f"{d['family']}: max {d['memory_max_bytes'] / GIB:.1f} GiB,"
                 f" {fits}", anchor="middle", size=11, bold=True)
        ranks = d["memory_per_rank"]
        bw = pw / len(ranks)
        for k, m in enumerate(ranks):
            base = 0.0
            for _, keys, color in PARTS:
                v = sum(m[key] for key in keys) / GIB
                lo, hi = min(base, top), min(base + v, top)
                if hi > lo:
                    y = y0 + ph - hi / top * ph
                    fig.out.append(f'<rect x="{x0 + k * bw + 1:.1f}" y="{y:.1f}" '
                                   f'width="{max(bw - 2, 1):.1f}" height="{(hi - lo) / top * ph:.1f}" '
                                   f'fill="{color}"/>')
                base += v
        yc = y0 + ph - cap / top * ph
        fig.out.append(f'<line x1="{x0}" y1="{yc:.1f}" x2="{x0 + pw}" y2="{yc:.1f}" '
                       'stroke="#c00" stroke-dasharray="5,3"/>')
        for v in (0, cap):
            fig.text(x0 - 4, y0 + ph - v / top * ph + 4, f"{v:g}", anchor="end", size=10)
        fig.text(x0 + pw / 2, y0 + ph + 13, f"ranks 0..{len(ranks) - 1}", anchor="middle", size=10)
    fig.legend(60, fig.height - 18, [(name, color, "square", None) for name, _, color in PARTS] +
               [(f"capacity {cap:g} GiB", "#c00", None, "5,3")], columns=4, col_width=250)
    fig.save(path)


# ---------------------------------------------------------------------------------------
# Markdown


def off(got, want):
    return f"{100 * (got / want - 1):+.1f}%"


def md_configs(out, files):
    s = ["### 5.1 Every family's GiB per rank\n",
         "Each chart: one bar per pipeline rank, stacked into model states (bf16 weights, "
         "fp32 gradients, fp32 master weights and Adam moments: 18 bytes per parameter), the "
         "schedule's peak of live activations (the simulator's per-rank peak, each stage "
         "priced with its own tensors), pipeline buffers, workspace and the head's logits, and "
         "what the process holds beyond its tensors (the allocator's cached blocks, the CUDA "
         "context, communication buffers); the dashed line is the accelerator's capacity. "
         "The tables give the "
         "step time (the simulated makespan with per-stage pass times from the accelerator's "
         "kernel model, plus the optimizer step and the data-parallel reduction) and MFU.\n"]
    for conf, svg in zip(out["configs"], files):
        rows = []
        for d in conf["rows"]:
            worst = d["memory_max_bytes"] / GIB
            rows.append([f"`{d['family']}`", f"{d['step_time_s']:.3f}", pct(d["mfu"], 1),
                         pct(d["bubble"], 1), f"{worst:.1f} (rank {d['memory_max_rank']})",
                         f"{min(x['total'] for x in d['memory_per_rank']) / GIB:.1f}",
                         "yes" if d["fits"] else "**no**"])
        s.append(f"**{conf['label']}** — `{cmd(['compare', *conf['args']])}`\n\n" +
                 table(["family", "step s", "MFU", "bubble", "max GiB", "min GiB", "fits"], rows) +
                 f"\n![{conf['stem']}]({svg})\n")
    return "\n".join(s)


def md_zb(rows):
    t4 = [x for x in rows if "rate" in x]
    t6 = [x for x in rows if "analytic" in x]
    s = ["### 5.2 The Zero Bubble paper, Tables 4 and 6\n",
         "Samples per second per GPU and peak memory of 1F1B, ZB-1P and ZB-2P on 8 A100s "
         "(pure PP, sequence 1024, the papers' k·p − 2 layer split, sends overlapped as the "
         "paper's runtime overlaps them; peak memory: the largest rank's allocated bytes, "
         "PyTorch's peak allocation the paper reports), with the "
         "paper's own profiled pass times (Table 6) given as measured costs. The tests hold "
         "every rate within 10% and every peak within 15% (`test_price_time`, "
         "`test_price_memory`). Command for one cell: "
         f"`{t4[0]['cmd']}`.\n"]
    s.append(table(["model", "family", "m", "samples/s/GPU", "**paper**", "off", "peak GB",
                    "**paper**", "off"],
                   [[x["model"], f"`{x['family']}`", x["m"], f"{x['rate']:.2f}", x["paper_rate"],
                     off(x["rate"], x["paper_rate"]), f"{x['gb']:.1f}", x["paper_gb"],
                     off(x["gb"], x["paper_gb"])] for x in t4]))
    worst = max(abs(x["rate"] / x["paper_rate"] - 1) for x in t4)
    worst_gb = max(abs(x["gb"] / x["paper_gb"] - 1) for x in t4)
    s.append(f"\nLargest distance: {100 * worst:.1f}% in rate, {100 * worst_gb:.1f}% in peak "
             "memory.\n\nWithout the measured costs, from the A100 preset's kernel model, which "
             "was calibrated to these six pass times and the two hops (one middle stage, "
             "F / B / W / hop in ms; `test_price_time` holds the passes within 3%, the hops "
             "within 2%):\n")
    s.append(table(["model", "layers", "vpipe F / B / W / hop", "**paper** (Table 6)", "off"],
                   [[x["model"], x["layers"], " / ".join(f"{v:.2f}" for v in x["analytic"]),
                     " / ".join(f"{v:g}" for v in x["paper"]),
                     " ".join(off(a, b) for a, b in zip(x["analytic"], x["paper"]))] for x in t6]))
    worst = max(abs(a / b - 1) for x in t6 for a, b in zip(x["analytic"], x["paper"]))
    s.append(f"\nEvery pass and hop within {100 * worst:.1f}%. The model (src/price/speed.c): "
             "a matrix multiply of M x N x K runs at gemm_efficiency x M/(M+e) x N/(N+e) x "
             "K/(K+e) of peak (e = gemm_edge = 128, the A100 kernels' tile, not fitted: these "
             "anchors allow 0 to about 190), F's and B's other kernels move act_traffic_f and "
             "act_traffic_b bytes per byte of activation F saves at the HBM bandwidth (W is "
             "matrix multiplies only), every layer's pass costs 3 us more (the overhead fitted "
             "to SC21, section 7), and a pipeline send runs at the measured 47.5 GB/s; "
             "least squares gives gemm_efficiency 0.87, act_traffic_f 4.03, act_traffic_b "
             "2.77. "
             "Measured costs still win whenever a profile exists. Command: "
             f"`{t6[0]['cmd']}`.\n")
    return "\n".join(s)


def md_cm(out):
    s = ["### 5.3 The Controllable Memory paper, pure pipeline parallelism\n",
         "Activation GB of the largest rank (p = GPUs, sequence 1024, m = 4p, the k·p − 2 "
         "split) beside the ranges the paper reports over its three models (transcribed from "
         "a secondary source: approximate). Command: "
         f"`{out['cm_act'][0]['cmd']}`.\n"]
    header = ["model", "p", "mbs"] + [f"`{f}`{' + full recompute' if r == 'full' else ''}"
                                      for f, r, _, _ in CM_ACT]
    rows = [[x["model"], x["p"], x["mbs"]] + [f"{v:.1f}" for v in x["cells"]]
            for x in out["cm_act"]]
    rows.append(["**paper** range", "", ""] + [f"{lo:g}–{hi:g}" for _, _, lo, hi in CM_ACT])
    s.append(table(header, rows))
    dist = []
    for k, (fam, rec, lo, hi) in enumerate(CM_ACT):
        for x in out["cm_act"]:
            v = x["cells"][k]
            if not lo <= v <= hi:
                gap = lo - v if v < lo else v - hi
                dist.append(f"`{fam}`{' (full recompute)' if rec == 'full' else ''} at "
                            f"{x['model']}: {v:.1f} GB, {gap:.1f} GB outside")
    s.append("\n" + ("Every figure falls in its range.\n" if not dist else
                     "Outside the range: " + "; ".join(dist) + ".\n"))
    s.append("\nMFU at cm-38.5b, p = 32, m = 512 (analytic costs, the A100 preset's kernel "
             f"model): `{out['cm_mfu_cmd']}`\n")
    s.append(table(["schedule", "vpipe MFU", "**paper**", "vpipe bubble"],
                   [[f"`{x['family']}`", pct(x["mfu"], 1), f"{x['paper']}%", pct(x["bubble"], 1)]
                    for x in out["cm_mfu"]]))
    ours = [x["family"] for x in sorted(out["cm_mfu"], key=lambda x: -x["mfu"])]
    paper = [x["family"] for x in sorted(out["cm_mfu"], key=lambda x: -x["paper"])]
    s.append("\nThe schedules rank " + ("in the paper's order" if ours == paper else
             f"{' > '.join(ours)} (the paper: {' > '.join(paper)})") +
             f"; vpipe's MFU is {ratio_range(out['cm_mfu'])} the paper's: the kernel model, "
             "calibrated to the Zero Bubble paper's pass times, runs this wider model faster "
             "than the Controllable Memory paper measured (the same offset shows in section "
             "6.1).\n")
    return "\n".join(s)


def ratio_range(rows):
    """'1.12–1.19 times': the range of vpipe's MFU over the paper's."""
    r = [x["mfu"] * 100 / x["paper"] for x in rows]
    return f"{min(r):.2f}–{max(r):.2f} times"


def md_playbook(rows):
    s = ["### 5.4 Llama-3-8B activations (the Ultra-Scale Playbook)\n",
         "All 32 layers, one sequence: the Playbook charts 34·s·b·h·L bytes (the GPT layer's "
         "constant with dropout). vpipe derives Llama's own tensors (SwiGLU's wider MLP, "
         "grouped-query keys and values, no dropout masks), with and without the s × s "
         "attention matrix, read from Llama-3.1-8B's `config.json` (Llama-3-8B's dimensions, "
         "131072 positions). Command: `vpipe model show config.json --seq S [--flash] --json`.\n"]
    s.append(table(["sequence", "**Playbook** GiB", "34·s·b·h·L GiB", "vpipe, FlashAttention",
                    "vpipe, attention matrix kept"],
                   [[x["seq"], x["paper"], f"{x['formula']:.2f}", f"{x['flash']:.2f}",
                     f"{x['plain']:.2f}"] for x in rows]))
    return "\n".join(s)


def md_speed(out):
    sec, reps = out["speed"]
    return (f"### 5.5 Speed\n\n`{cmd(SPEED_ARGS)}` prices all 14 families (probe build, layer "
            f"split, build with the real costs, simulation, itemised memory) in {1e3 * sec:.0f} ms "
            f"of wall time (median of {reps} runs of the whole command; the issue asks for "
            "under 1 s). `bench/bench_price` times the library calls alone.\n")


def plots(out, outdir):
    files = []
    for conf in out["configs"]:
        name = f"results-{conf['stem']}.svg"
        plot_ranks(conf, f"{outdir}/{name}")
        files.append(name)
    return files


def markdown(out, files):
    return "\n".join([
        "## 5. Real models: GiB per rank and seconds per step\n",
        "`--model NAME|FILE --gpu NAME|FILE` with the workload (`--seq`, `--mbs`, `--tp`, "
        "`--sp`, `--dp`, `--zero`, `--flash`, `--recompute`) prices any schedule for a real "
        "transformer on a real accelerator (design: `models.md`). Memory is exact "
        "arithmetic of the tensors each layer saves; time comes from the accelerator's "
        "kernel model (matrix multiplies at an efficiency that grows with their sizes, the "
        "other kernels at the memory bandwidth; 5.2 gives its calibration) unless measured "
        "costs are given.\n",
        md_configs(out, files), md_zb(out["zb"]), md_cm(out), md_playbook(out["playbook"]),
        md_speed(out)])


# ---------------------------------------------------------------------------------------
# The hybrid search (issue 19)

# The Controllable Memory paper's hybrid grid search (cm-98.5b on 40 A100s, sequence 1024,
# global batch 160; FlashAttention, sequence parallelism, distributed optimizer): best MFU
# of each schedule, and the configuration where the paper names it.
CM_HYBRID = {"1f1b": (49.81, "DP 2, TP 4, PP 5, mbs 2"), "zb-1p": (54.52, ""),
             "v-half": (52.60, ""), "v-min": (48.02, ""), "v-zb": (57.58, ""),
             "1f1b-r": (37.15, "")}
HYBRID_ARGS = ["--flash", "--sp", "--zero"]
# The papers' runtime overlaps its pipeline sends (Zero Bubble Table 6 times them apart).
PAPER_ARGS = HYBRID_ARGS + ["--pp-overlap"]
# The A100 kernel model refitted to Zero Bubble Table 6 (least squares over its six pass
# times, as src/price/readers.c describes) at other matrix-multiply edges than the preset's
# 128: (gemm_edge, gemm_efficiency, act_traffic_f, act_traffic_b). How much the hybrid gain
# depends on the one parameter those anchors cannot pin down.
EDGE_REFITS = ((0, 0.80, 4.69, 4.07), (64, 0.83, 4.38, 3.46), (192, 0.91, 3.64, 2.00))
HYBRID_CONFIGS = [
    ("paper", "cm-98.5b on 40 A100s, sequence 1024, global batch 160 (the paper's experiment)",
     ["--model", "cm-98.5b", "--gpu", "a100-80gb", "--gpus", "40", "--seq", "1024",
      "--global-batch", "160"]),
    ("llama3-70b", "Llama-3-70B on 64 H100s, sequence 8192, global batch 512",
     ["--model", "llama3-70b", "--gpu", "h100-80gb", "--gpus", "64", "--seq", "8192",
      "--global-batch", "512"]),
    ("llama3-405b", "Llama-3-405B on 1024 H100s, sequence 8192, global batch 2048",
     ["--model", "llama3-405b", "--gpu", "h100-80gb", "--gpus", "1024", "--seq", "8192",
      "--global-batch", "2048"]),
]


def collect_hybrid(r, cfg):
    quick = cfg["quick"]
    out = dict(runs=[])
    for key, label, args in HYBRID_CONFIGS[:1] if quick else HYBRID_CONFIGS:
        log(f"hybrid search: {label}")
        full = ["plan", *args, *(PAPER_ARGS if key == "paper" else HYBRID_ARGS)]
        out["runs"].append(dict(key=key, label=label, cmd=cmd(full),
                                d=r.json(*full, save=f"hybrid-{key}.json")))
    paper = ["--model", "cm-98.5b", "--gpu", "a100-80gb", "-p", "5", "--seq", "1024", "--tp", "4",
             "--dp", "2", *PAPER_ARGS]
    out["paper_point"] = {}
    for fam in ("1f1b", "v-zb"):
        for mbs in (1, 2):
            d = r.json("simulate", fam, *paper, "-m", str(80 // mbs), "--mbs", str(mbs))
            out["paper_point"][fam, mbs] = d
    out["paper_point_cmd"] = cmd(["simulate", "FAMILY", *paper, "-m", "80/MBS", "--mbs", "MBS"])
    per = out["runs"][0]["d"]["best_per_family"]
    one, vz = per["1f1b"], best_v_or_zb(per)
    at_one = ["--model", "cm-98.5b", "--gpu", "a100-80gb", "-p", str(one["pp"]), "--seq", "1024",
              "--tp", str(one["tp"]), "--dp", str(one["dp"]), *PAPER_ARGS, "-m", str(one["m"]),
              "--mbs", str(one["mbs"])]
    out["swap"] = r.json("simulate", vz["family"], *at_one)
    out["swap_cmd"] = cmd(["simulate", vz["family"], *at_one])
    out["edges"] = []
    for edge, eff, tf, tb in () if quick else EDGE_REFITS:
        path = os.path.join(r.data, f"a100-edge{edge}.json")
        with open(path, "w") as f:
            json.dump({"base": "a100-80gb", "gemm_edge": edge, "gemm_efficiency": eff,
                       "act_traffic_f": tf, "act_traffic_b": tb}, f)
        args = [x if x != "a100-80gb" else path for x in HYBRID_CONFIGS[0][2]]
        per = r.json("plan", *args, *PAPER_ARGS)["best_per_family"]
        out["edges"].append(dict(edge=edge, gain=best_v_or_zb(per)["mfu"] / per["1f1b"]["mfu"] - 1,
                                 last=min(per, key=lambda f: per[f]["mfu"])))
    log("bench_hybrid (the search's speed)")
    text = r.run([os.path.join(r.bench, "bench_hybrid"), "1" if quick else "3"],
                 "bench_hybrid.txt")
    out["speed"] = [line.split("\t") for line in text.splitlines() if line.startswith("hybrid\t")]
    out["machine"] = next(line for line in text.splitlines() if line.startswith("machine:"))
    out["page"] = collect_page(r, cfg)
    return out


def collect_page(r, cfg):
    """bench_page.mjs's line for the Llama-3-70B plan in the browser page (fields: view to
    the report s, view to the whole answer s, one search in the page s, natively s, ratio),
    or None when no page is built."""
    if not cfg.get("web"):
        return None
    log("bench_page (the plan in the browser page, headless Chromium)")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_page.mjs")
    text = r.run(["node", script, cfg["web"], r.vpipe, "1" if cfg["quick"] else "3"],
                 "bench_page.txt")
    return next(line.split("\t") for line in text.splitlines() if line.startswith("page\t"))


def best_v_or_zb(per):
    """The best V or Zero Bubble family of a plan's best_per_family that `simulate` names
    (v-block, the building-block search, has no family name of its own)."""
    return max((c for f, c in per.items() if f.startswith(("v-", "zb-")) and f != "v-block"),
               key=lambda c: c["mfu"])


def hy_cfg(c):
    chunks = f", v {c['v']}" if c.get("v") else ""
    return f"DP {c['dp']}, TP {c['tp']}, PP {c['pp']}, mbs {c['mbs']}{chunks}"


def md_hybrid_paper(run, pp, pp_cmd, swap, swap_cmd, edges):
    d = run["d"]
    per = d["best_per_family"]
    s = [f"### 6.1 {run['label']}\n", f"`{run['cmd']}`\n"]
    rows = []
    for fam, c in sorted(per.items(), key=lambda x: x[1]["step_time_s"]):
        paper = CM_HYBRID.get(fam)
        rows.append([f"`{fam}`", hy_cfg(c), c["recompute"], pct(c["mfu"], 2), pct(c["bubble"], 1),
                     f"{c['memory_max_bytes'] / GIB:.1f}",
                     f"{paper[0]}%" if paper else "", paper[1] if paper else ""])
    s.append(table(["family", "vpipe's best", "recompute", "MFU", "bubble", "max GiB",
                    "**paper** MFU", "**paper** config"], rows))
    win = d["best"]
    one = per["1f1b"]
    vz = best_v_or_zb(per)
    gain = vz["mfu"] / one["mfu"] - 1
    order = sorted(per, key=lambda f: per[f]["step_time_s"])
    s.append(f"\nThe best V or Zero Bubble family (`{vz['family']}`, {hy_cfg(vz)}) beats the best "
             f"1F1B ({hy_cfg(one)}) by **{100 * gain:.1f}%** predicted MFU (the paper: +15.6%, "
             f"V-ZB 57.58% against 1F1B 49.81%); 1F1B with full recomputation (`1f1b-r`) "
             f"ranks {'last' if order[-1] == '1f1b-r' else str(order.index('1f1b-r') + 1)}"
             f" of {len(order)}. `test_hybrid` asserts the +10% and the last place.\n")
    s.append(md_hybrid_gain(d, vz, one, swap, swap_cmd, pp))
    rows = []
    for (fam, mbs), x in sorted(pp.items()):
        rows.append([f"`{fam}`", mbs, x["m"], pct(x["mfu"], 2), pct(x["bubble"], 1),
                     f"{x['memory_max_bytes'] / GIB:.1f}"])
    s.append("At the paper's own 1F1B point (DP 2, TP 4, PP 5), by microbatch size "
             f"(`{pp_cmd}`):\n")
    s.append(table(["family", "mbs", "m", "MFU", "bubble", "max GiB"], rows))
    s.append("\nThe absolute MFU is higher than the paper's (as in 5.3): the kernel model is "
             "calibrated to the Zero Bubble paper's pass times (5.2), and the Controllable "
             "Memory paper's runs were slower than those imply for models this wide. The ratios "
             "between schedules are what the search decides on. No constant was tuned to this "
             "experiment; the one parameter the anchors cannot pin down, the matrix-multiply "
             "edge, is the hardware's tile (128)" + (". Refitted to Table 6 at other edges (`--gpu` "
             "a JSON file such as `{\"base\": \"a100-80gb\", \"gemm_edge\": 0, "
             "\"gemm_efficiency\": 0.8, \"act_traffic_f\": 4.7, \"act_traffic_b\": 4.1}`), the "
             "gain would be " + ", ".join(
                 f"{100 * e['gain']:+.1f}% at edge {e['edge']}" +
                 ("" if e["last"] == "1f1b-r" else f" (`{e['last']}` last)") for e in edges) +
             " (edge 0: no size effect at all, the matrices run at one efficiency)" if edges
             else "") + ".\n")
    return "\n".join(s)


def md_hybrid_gain(d, vz, one, swap, swap_cmd, pp):
    """Where the gain of the best V/ZB family over the best 1F1B comes from: the bubble at
    1F1B's own point, the configuration the small bubble affords, memory, recomputation and
    the microbatch size."""
    at_one = swap["mfu"] / one["mfu"] - 1
    move = vz["mfu"] / swap["mfu"] - 1
    v = d.get("versus_1f1b")
    s = [f"Where the gain comes from. (1) The bubble: `{vz['family']}` at 1F1B's own best point "
         f"({hy_cfg(one)}) already runs {100 * at_one:+.1f}% faster, its bubble "
         f"{pct(swap['bubble'], 1)} against {pct(one['bubble'], 1)} (`{swap_cmd}`). (2) The "
         f"configuration that small bubble affords: moving to {hy_cfg(vz)} adds "
         f"{100 * move:+.1f}%"]
    if v:
        s.append(f"; 1F1B there would take {100 * (v['step_time_s'] / one['step_time_s'] - 1):.1f}% "
                 f"longer than at its own best (bubble {pct(v['bubble'], 1)}) and "
                 f"{'fits' if v['fits'] else 'does not fit'} ({v['memory_max_bytes'] / GIB:.1f} GiB), "
                 "so here the saved memory buys nothing: the deeper pipeline with a smaller TP "
                 "degree (fewer collectives per layer) is what V-ZB's bubble can afford and "
                 "1F1B's cannot")
    mb1, mb2 = pp.get(("1f1b", 1)), pp.get(("1f1b", 2))
    s.append(". (3) Recomputation avoided: 1F1B with full recomputation is "
             f"{100 * (d['best_per_family']['1f1b-r']['step_time_s'] / one['step_time_s'] - 1):.1f}% "
             "slower than 1F1B without, and no family needs it")
    if mb1 and mb2:
        s.append(f". (4) The microbatch: at the paper's point 1F1B at mbs 2 is "
                 f"{100 * (mb2['mfu'] / mb1['mfu'] - 1):+.1f}% against mbs 1 although its bubble "
                 f"grows from {pct(mb1['bubble'], 1)} to {pct(mb2['bubble'], 1)}: the larger "
                 "matrices run faster, which is why both vpipe and the paper pick mbs 2 for 1F1B")
    s.append(".\n")
    return "".join(s)


def md_hybrid_user(run):
    d = run["d"]
    rows = [[f"`{f}`", hy_cfg(c), c["recompute"], f"{c['step_time_s']:.2f}", pct(c["mfu"], 1),
             pct(c["bubble"], 1), f"{c['memory_max_bytes'] / GIB:.1f}"]
            for f, c in sorted(d["best_per_family"].items(), key=lambda x: x[1]["step_time_s"])]
    return (f"#### {run['label']}\n\n`{run['cmd']}`\n\n" +
            table(["family", "best configuration", "recompute", "step s", "MFU", "bubble",
                   "max GiB"], rows) +
            f"\n{d['reason']}\n\n{d['candidates']} configurations: {d['evaluated']} evaluated, "
            f"{d['pruned']} pruned.\n")


def md_hybrid_speed(out):
    rows = [[f"`{x[1]}`", x[2], f"{float(x[3]):.2f}", x[4], x[5], x[6], x[7], x[8], x[9]]
            for x in out["speed"]]
    return ("### 6.3 Speed of the search\n\n"
            f"`bench_hybrid` ({out['machine'].removeprefix('machine: ')}): the whole grid, median "
            "of repeated runs (one for the largest). The issue asks for the Llama-3-70B grid "
            "under 10 s. Pruning decisions use only earlier batches' results, so every count "
            "is the same on one thread or two.\n\n" +
            table(["grid", "threads", "seconds", "candidates", "evaluated", "pruned by bound",
                   "pruned by memory", "over memory", "refused"], rows) +
            md_page_speed(out["page"]))


def md_page_speed(page):
    """bench_page.mjs's measurement as a paragraph (None: that it was not measured)."""
    if page is None:
        return ("\nThe browser page was not timed here (`bench/run --web build-web` times the "
                "page `web/build.sh build-web` built).\n")
    first, whole, wasm, native, ratio = page[2:7]
    return (f"\nIn the browser page (`bench/bench_page.mjs`: the playground's cluster view in "
            f"headless Chromium, median of repeats), the Llama-3-70B plan shows its report "
            f"{float(first):.1f} s after the request and its whole answer (the text report and "
            f"Megatron-LM's flags: two more searches, at once) after {float(whole):.1f} s. One "
            f"search takes {float(wasm):.2f} s in the page's WebAssembly against "
            f"{float(native):.2f} s natively on one thread ({float(ratio):.2f}x).\n")


def markdown_hybrid(out):
    runs = {x["key"]: x for x in out["runs"]}
    s = ["## 6. The whole configuration: DP x TP x PP x microbatch x schedule x recompute\n",
         "`vpipe plan --model M --gpu G --gpus N --seq S --global-batch B` searches every "
         "legal configuration, priced with the same memory and time as section 5, and keeps "
         "the fastest that fit (FlashAttention, sequence parallelism and the distributed "
         "optimizer on below).\n",
         md_hybrid_paper(runs["paper"], out["paper_point"], out["paper_point_cmd"], out["swap"],
                         out["swap_cmd"], out["edges"])]
    users = [md_hybrid_user(runs[k]) for k in ("llama3-70b", "llama3-405b") if k in runs]
    if users:
        s.append("### 6.2 Configurations users run today\n")
        s.extend(users)
    s.append(md_hybrid_speed(out))
    return "\n".join(s)
