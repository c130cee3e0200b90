"""The offload section of vpipe's results report: memory and step time of each family
offloading 0 to 1 of its activations, measured on vpipe's own model and priced on real
models, beside the claims of PipeOffload (Wan, Qi, Huang, Lin, Li; ICML 2025).

report.py calls collect() and markdown(); alone it prints the section for a build:

    python3 bench/report_offload.py --build build [--quick] > offload.md
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (the Runner and log helpers)

GIB = 1024.0 ** 3
SHARES = [0, 0.25, 0.5, 0.75, 1]
OWN_FAMILIES = ["1f1b", "v-half", "zb-h1", "interleaved"]
OWN_MODEL = ["--layers", "8", "--width", "128", "--heads", "4", "--seq", "64",
             "--microbatch", "8"]
PRICED_FAMILIES = ["1f1b", "interleaved", "v-half", "zb-v"]
LLAMA = ["--model", "llama3-70b", "--gpu", "h100-80gb", "-p", "8", "-m", "32", "--seq", "8192",
         "--tp", "8", "--sp", "--flash"]
# PipeOffload's own setting (examples/pretrain_offload.sh of sail-sg/zero-bubble-pipeline-
# parallelism): hidden 4096, FFN 16384 (GELU), 32 heads with 8 KV groups, sequence 8192,
# 3p - 2 layers, microbatch 1, a global batch of 2p, FlashAttention, 16-bit; its A100
# experiments assumed 15 GB/s to the host (the authors, issue 66 of that repository).
PAPER_P = 8
SECTION = 9  # the section of docs/results.md (after vocabulary parallelism, 8)


def paper_config(path, p):
    with open(path, "w") as f:
        json.dump({"model_type": "pipeoffload", "hidden_size": 4096,
                   "num_hidden_layers": 3 * p - 2, "num_attention_heads": 32,
                   "num_key_value_heads": 8, "intermediate_size": 16384, "vocab_size": 32000,
                   "hidden_act": "gelu", "max_position_embeddings": 8192,
                   "tie_word_embeddings": False, "layer_norm_eps": 1e-5}, f)


def own(r, fam, share, steps, policy="uniform"):
    """One training run of vpipe's own model: its JSON report."""
    args = ["train", "--schedule", fam, "-p", "4", "-m", "8", "--steps", str(steps),
            *OWN_MODEL, "--json"]
    if share:
        args += ["--offload", str(share), "--offload-policy", policy]
    return json.loads(r.cli(*args))


def collect_own(r, cfg):
    steps, reps = (2, 1) if cfg["quick"] else (3, 3)
    fams = OWN_FAMILIES[:2] if cfg["quick"] else OWN_FAMILIES
    rows = []
    for fam in fams:
        for share in SHARES:
            runs = []
            for i in range(reps):
                report.log(f"train {fam} --offload {share}, run {i + 1}")
                runs.append(own(r, fam, share, steps))
            d = runs[0]
            rows.append(dict(
                family=fam, share=share,
                act=max(m["activations"] for m in d["memory_per_rank"]),
                host=max(m["host"] for m in d["memory_per_rank"]),
                exact=d["memory_per_rank"] == d["predicted_memory_per_rank"],
                digest=d["param_digest"],
                step_ms=statistics.median(x["step_ms"] for x in runs)))
    return dict(rows=rows, steps=steps, reps=reps, load=report.load_average())


def priced(r, args, fam, share, policy="uniform"):
    extra = ["--offload", str(share), "--offload-policy", policy] if share else []
    return r.json("simulate", fam, *args, *extra)


def collect_priced(r, cfg, name, args, fams):
    rows = []
    for fam in fams:
        for share in SHARES:
            report.log(f"price {name} {fam} --offload {share}")
            d = priced(r, args, fam, share)
            rows.append(dict(
                family=fam, share=share, step=d["step_time_s"],
                dev=d["memory_max_bytes"] / GIB,
                host=max(m.get("host", 0) for m in d["memory_per_rank"]) / GIB,
                sent=max(d.get("offload_share", [0])), occ=max(d.get("copy_occupancy", [0])),
                stall=max(d.get("offload_stall", [0]))))
    return rows


HYBRID = ["plan", "--model", "llama3-70b", "--gpus", "64", "--global-batch", "64", "--seq", "8192",
          "--flash", "--sp", "--reserve", "45"]
BUDGET = ["plan", "-p", "4", "-m", "16", "--memory", "0.5", "--cost", "O=0.5"]


def collect_planners(r):
    """The whole-configuration planner and the budget planner with and without the lever."""
    out = {}
    for name, args in (("hybrid", HYBRID), ("budget", BUDGET)):
        for off in ("none", "auto"):
            report.log(f"{' '.join(args)} --offload {off}")
            out[name, off] = r.json(*args, "--offload", off)
    return out


def collect(r, cfg):
    out = dict(own=collect_own(r, cfg))
    out["planners"] = collect_planners(r)
    fams = PRICED_FAMILIES[:2] if cfg["quick"] else PRICED_FAMILIES
    out["llama"] = collect_priced(r, cfg, "llama3-70b", LLAMA, fams)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "pipeoffload.json")
    paper_config(path, PAPER_P)
    base = ["--model", path, "-p", str(PAPER_P), "-m", str(2 * PAPER_P), "--seq", "8192",
            "--flash"]
    a100 = os.path.join(tmp, "a100-15.json")
    with open(a100, "w") as f:
        json.dump({"base": "a100-80gb", "name": "a100-80gb at 15 GB/s", "host_gb_s": 15}, f)
    out["paper_args"] = base
    out["paper_stage"] = r.json("simulate", "1f1b", *base, "--gpu", "h100-80gb", "--offload",
                                "1")["per_stage"][1]
    out["paper"] = {gpu: collect_priced(r, cfg, f"pipeoffload on {gpu}",
                                        base + ["--gpu", path_], ["1f1b", "interleaved"])
                    for gpu, path_ in [("a100-80gb, 15 GB/s", a100), ("h100-80gb", "h100-80gb")]}
    return out


def md_own(o):
    lines = [f"### {SECTION}.1 vpipe's own model, measured (p = 4, m = 8, {o['steps']} steps, "
             f"median of {o['reps']} runs)", "",
             f"`vpipe train --schedule FAMILY -p 4 -m 8 {' '.join(OWN_MODEL)} "
             "--offload SHARE` on the threads transport (one thread per rank and one copy "
             "thread per rank on 2 shared cores, load average about "
             f"{o.get('load', 0):.0f} while it ran: the step times are noise, the bytes are "
             "exact). Activation and host bytes are the largest rank's (ZB-H1's last rank "
             "keeps its p activations: its forwards meet their backwards at once, so nothing "
             "of it offloads); every run's measured bytes equal the predicted ones in every "
             "category (`exact`), and its parameters are those of the run without offload "
             "(`digest`).",
             "", "| family | share | activations | host | step ms | exact | digest |",
             "|---|---|---|---|---|---|---|"]
    first = {}
    for x in o["rows"]:
        first.setdefault(x["family"], x["digest"])
        lines.append(f"| {x['family']} | {x['share']:g} | {x['act'] / 1024:.0f} KiB | "
                     f"{x['host'] / 1024:.0f} KiB | {x['step_ms']:.1f} | "
                     f"{'yes' if x['exact'] else 'NO'} | "
                     f"{'same' if x['digest'] == first[x['family']] else 'DIFFERS'} |")
    return "\n".join(lines) + "\n"


def md_priced(title, cmd, rows):
    lines = [title, "", f"`vpipe simulate FAMILY {cmd} --offload SHARE`: the largest rank's "
             "device GiB (everything: states, activations, buffers, reserve), its host GiB, "
             "the share of what the forwards keep that went to host (`sent`, the busiest "
             "device's), the busiest copy engine's share of the step and the compute stall.",
             "", "| family | share | step s | device GiB | host GiB | sent | copy engine "
             "| stall s |", "|---|---|---|---|---|---|---|---|"]
    for x in rows:
        lines.append(f"| {x['family']} | {x['share']:g} | {x['step']:.4g} | {x['dev']:.1f} | "
                     f"{x['host']:.1f} | {x['sent']:.2f} | {100 * x['occ']:.0f}% | "
                     f"{x['stall']:.3g} |")
    return "\n".join(lines) + "\n"


def md_planners(pl):
    h0, h1 = pl["hybrid", "none"]["best"], pl["hybrid", "auto"]["best"]
    b0, b1 = pl["budget", "none"], pl["budget", "auto"]
    v = pl["hybrid", "none"].get("versus_1f1b") or {}

    def cfg(c):
        off = f", offloading {c['offload']:g}" if c.get("offload") else ""
        off += f", recomputation {c['recompute']}" if c.get("recompute", "none") != "none" else ""
        chunks = f" v={c['v']}" if c.get("v") else ""
        return (f"{c['family']}{chunks} at DP {c['dp']}, TP {c['tp']}, PP {c['pp']}, mbs "
                f"{c['mbs']}{off}: {c['step_time_s']:.4g} s a step, MFU {100 * c['mfu']:.1f}%")

    def chosen(b):
        params = f" {b['params']}" if b["params"] else ""
        return f"{b['family']}{params}, makespan {b['makespan']:g}"

    lines = [f"### {SECTION}.5 The planners with the offload lever", "",
             f"`vpipe {' '.join(HYBRID)} --offload none|auto` (80 GiB per GPU less a 45 GiB "
             f"reserve, and the plan keeps its default margin of "
             f"{pl['hybrid', 'none'].get('margin_bytes', 0) / GIB:.1f} GiB below that: a "
             "configuration with less room ranks after every one with room):", "",
             f"- without offload: {cfg(h0)};",
             f"- with `--offload auto`: {cfg(h1)}, the busiest copy engine "
             f"{100 * h1.get('copy_occupancy', 0):.0f}% of the step, "
             f"{h1.get('host_max_bytes', 0) / GIB:.1f} GiB on the host: "
             f"{100 * (1 - h1['step_time_s'] / h0['step_time_s']):.1f}% faster."]
    plain, offl = (pl["hybrid", k].get("best_per_family") or {} for k in ("none", "auto"))
    if "1f1b" not in plain:
        how = sorted({b["recompute"] for b in plain.values()})
        lines.append("- 1F1B without recomputation fits at no configuration under this budget "
                     f"(without offload every family that fits recomputes: {', '.join(how)})"
                     + (f"; with the lever it fits offloading {offl['1f1b']['offload']:g}: "
                        f"{offl['1f1b']['step_time_s']:.4g} s a step" if "1f1b" in offl else "")
                     + ".")
    if v:
        lines.append(f"- 1F1B at the first one's degrees (recomputation {v['recompute']}) needs "
                     f"{v['memory_max_bytes'] / GIB:.1f} GiB and takes {v['step_time_s']:.4g} s.")
    lines += ["", f"`vpipe {' '.join(BUDGET)} --offload none|auto`: without offload "
              f"{chosen(b0)}; with it {chosen(b1)} "
              f"({100 * (1 - b1['makespan'] / b0['makespan']):.1f}% faster)."]
    return "\n".join(lines) + "\n"


def headline(out):
    """The paper's headline against the H100 / PCIe Gen5 pricing: the step time at share
    1/2 against none, and the share actually sent."""
    rows = out["paper"]["h100-80gb"]
    res = []
    for fam in ("1f1b", "interleaved"):
        none = next(x for x in rows if x["family"] == fam and x["share"] == 0)
        half = next(x for x in rows if x["family"] == fam and x["share"] == 0.5)
        res.append((fam, 100 * (half["step"] / none["step"] - 1), half["sent"],
                    none["dev"] - half["dev"]))
    return res


def markdown(out):
    parts = [f"## {SECTION}. Offload: activations to host memory", "",
             "Offload is vpipe's fourth memory lever (README, *Offload*): O and L passes per "
             "(stage, microbatch) on each device's copy engine, placed only where both copies "
             "hide between the forward and the backward, so the step time does not grow; "
             "what does not hide is not offloaded. The simulator charges no HBM contention "
             "for the copies: on a GPU a copy engine shares memory bandwidth with compute.",
             "", md_own(out["own"]),
             md_priced(f"### {SECTION}.2 Llama-3-70B on 64 H100s (PCIe Gen5, 50 GB/s to the host)",
                       " ".join(LLAMA), out["llama"])]
    cmd = " ".join(a if not a.endswith(".json") else "pipeoffload.json"
                   for a in out["paper_args"])
    for k, (gpu, rows) in enumerate(out["paper"].items()):
        parts.append(md_priced(f"### {SECTION}.{3 + k} PipeOffload's setting on {gpu} (p = {PAPER_P})",
                               cmd + f" --gpu {gpu.split(',')[0]}", rows))
    parts.append(md_planners(out["planners"]))
    lines = [f"### {SECTION}.6 Against the paper's claims", "",
             "- *At least half, and potentially all, of the activations can be offloaded with "
             "negligible overhead* (PCIe Gen5 on H100, the paper's model at p = 8):"]
    for fam, slower, sent, saved in headline(out):
        lines.append(f"  {fam} at share 1/2: step time {slower:+.1f}%, {100 * sent:.0f}% of "
                     f"the busiest device's activations sent to host, {saved:.1f} GiB less on "
                     f"its largest rank.")
    g = out["paper_stage"]

    def row(gpu, share):
        return next(x for x in out["paper"][gpu] if x["family"] == "1f1b" and x["share"] == share)
    full_a100, full_h100, base_h100 = (row("a100-80gb, 15 GB/s", 1), row("h100-80gb", 1),
                                       row("h100-80gb", 0))
    work = g["f_ms"] + g["b_ms"] + g["w_ms"]
    lines += [f"  Half hides; all does not: a whole stage's activation ({g['layers']} layers, "
              f"{g['act_bytes'] / GIB:.2f} GiB) takes {g['copy_ms']:.0f} ms each way at 50 GB/s "
              f"against a {g['f_ms']:.0f} ms forward and {work:.0f} ms of F + B + W per "
              "microbatch, so a copy engine that must move every activation out and back runs "
              f"at about {100 * 2 * g['copy_ms'] / work:.0f}% of the compute time. vpipe never "
              "lets a copy make compute wait (a pair whose copies would not hide is not "
              "offloaded), so a share above what hides either sends less than asked "
              f"({full_a100['family']} on the A100 at 15 GB/s sends "
              f"{100 * full_a100['sent']:.0f}% at share 1) or sends it too late to lower the "
              f"peak ({full_h100['family']} on the H100 sends {100 * full_h100['sent']:.0f}% at "
              f"share 1 and its largest rank holds {full_h100['dev']:.1f} GiB, "
              f"{base_h100['dev']:.1f} without: the warm-up fills the device faster than the "
              "engine drains it). The paper's own estimate of the offload's "
              "time relative to the forward, 10 / (3 (6h + s)) x B_c / B_o (its authors' "
              "`--auto-offload-time`), is 1.0 at B_c = 500 TFLOP/s and B_o = 50 GB/s for "
              "h = 4096, s = 8192: the same regime. The gap to the paper's measured overheads "
              "is the model's: vpipe's copies cost no compute (on a GPU they share HBM "
              "bandwidth), and vpipe offloads within the families it has, not in the paper's "
              "own offload-shaped interleaved schedule.",
              "- *Selective offload lowers the peak better than linearly*: at unit costs "
              "(tests/test_offload.c), interleaved 1F1B at p = 4, m = 16 holds 5.5 units; "
              "half of them offloaded the selective way (the longest-lived whole) leaves 3, "
              "the uniform way (half of every pair) 3.5.",
              "- *Combined with the other levers, faster than spending the memory elsewhere* "
              f"(the paper: up to 19% over tensor parallelism): section {SECTION}.5."]
    parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True, help="build directory (vpipe)")
    ap.add_argument("--data", help="raw outputs (default: BUILD/bench-data)")
    ap.add_argument("--quick", action="store_true", help="a small subset")
    a = ap.parse_args()
    r = report.Runner(a.build, a.data or os.path.join(a.build, "bench-data"))
    print(markdown(collect(r, dict(quick=a.quick))))


if __name__ == "__main__":
    main()
