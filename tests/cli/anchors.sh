#!/usr/bin/env bash
# Every published run of design/anchors.md is a row of data/anchors/*.csv, and every row
# vpipe prices is one command line with the options of the command line (--cp, --ep, --etp,
# --zero N, --fp8, --fp8-params, --grad-bytes, --attn-kernel, --framework, --eager,
# --ep-overlap, ...): this test writes that command for each priced row, runs it, and checks
# it prices the run exactly as the accuracy report does. A row kept unpriced says why
# (others.csv). Usage: anchors.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

acc="$(dirname "$vp")/bench/bench_accuracy"
"$acc" "$src"/data/anchors/*.csv >"$tmp/accuracy.json" || bad "bench_accuracy failed"

expect 0 "commands agree" -- python3 - "$vp" "$tmp/accuracy.json" <<'PY'
import json, subprocess, sys

vp, path = sys.argv[1:3]  # model and accelerator files: paths as the reader rewrote them
rows = json.load(open(path))["rows"]
ids = {r["id"] for r in rows}
# anchors.md section 2's 50 runs (its list in 2.9), SC21's and the Megatron-LM 2024 table's
section2 = """MB1 MB3a MB3b MB5 MB7 MB9 MB10 MB11 MB15 MS1 MS2 MS3 MS4 AM2 AM3 AM5 N1 N2 N3 N4 N5
N7 N9 N11 N12 ML1 ML2 ML3 LH1 LH3 LH5 LH7 LH9 T1a T1b T1c T2a T2c T4a T4b T5a T5b T6b T6d""".split()
section2 += [f"TA{k}-{v}" for k in range(1, 7) for v in ("vanilla", "async")]
missing = [i for i in section2 if i not in ids]
assert not missing, f"anchors.md rows without a CSV row: {missing}"
assert sum(r["source"] == "SC21" for r in rows) >= 10 and len(rows) >= 95, len(rows)


def command(r):
    m = r["gbs"] // (r["dp"] * r["chosen_mbs"])
    c = [vp, "simulate", r["family"], "-p", str(r["pp"]), "-m", str(m), "--split", "even",
         "--model", r["model"], "--gpu", r["gpu"] or "h100-80gb",
         "--tp", str(r["tp"]), "--dp", str(r["dp"]), "--seq", str(r["seq"]),
         "--mbs", str(r["chosen_mbs"]), "--recompute", r["chosen_recompute"],
         "--zero", str(r["zero"]), "--json"]
    if r["v"]:
        c += ["-v", str(r["v"])]
    for key in ("cp", "ep"):
        if r[key] > 1:
            c += [f"--{key}", str(r[key])]
    c += ["--flash", "1" if r["flash"] else "0"]  # on unless given: the rows say which
    for key in ("sp", "tp_overlap", "pp_overlap", "ep_overlap"):
        if r[key] and (key != "sp" or r["tp"] > 1):
            c.append("--" + key.replace("_", "-"))
    if r["fp8"] != "off":
        c += ["--fp8", r["fp8"]]
    if r["ep_dispatch"] != "alltoall":
        c += ["--ep-dispatch", r["ep_dispatch"]]
    if r["ep_routing"] != "random":
        c += ["--ep-routing", r["ep_routing"]]
    if "dp_overlap" in r:
        c += ["--dp-overlap", repr(r["dp_overlap"])]
    if r["fp8_params"]:
        c.append("--fp8-params")
    if r["attn_kernel"] != "fused":
        c += ["--attn-kernel", r["attn_kernel"]]
    if r["grad_bytes"]:
        c += ["--grad-bytes", str(r["grad_bytes"])]
    if r["framework"] != "megatron":
        c += ["--framework", r["framework"]]
    if r["eager"]:
        c.append("--eager")
    if r["optimizer_dtype"] != "fp32":
        c += ["--optimizer-dtype", r["optimizer_dtype"]]
    if r["cp_comm"] != "p2p":
        c += ["--cp-comm", r["cp_comm"]]
    if r["recompute_modules"]:
        c += ["--recompute-modules", r["recompute_modules"]]
    return c


ran = 0
for r in rows:
    if not r["priced"]:
        assert r["why"], r["id"]  # unpriced rows say why
        continue
    c = command(r)
    out = subprocess.run(c, capture_output=True, text=True)
    assert out.returncode == 0, (r["id"], " ".join(c[1:]), out.stderr)
    got = json.loads(out.stdout)["tokens_per_s_per_gpu"]
    want = r["tokens_per_s_per_gpu"]
    assert abs(got - want) <= 1e-6 * want, (r["id"], " ".join(c[1:]), got, want)
    ran += 1
assert ran >= 70, ran
print(f"commands agree: {ran} runs")
PY
finish
