#!/usr/bin/env bash
# vpipe calibrate: fits an accelerator to measured runs and writes a --gpu file that every
# command takes (and that states its own accuracy); every bad RUNS.csv gets a message
# naming the line and column and exit 2 or 3. Usage: calibrate.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

runs="$src/data/anchors/sc21.csv"
expect 0 "--runs RUNS.csv" -- "$vp" calibrate --help
expect 0 "calibrate" -- "$vp" --help
expect 0 "leave-one-out" -- "$vp" calibrate --runs "$runs" -o "$tmp/a100.json"
expect 0 "" -- python3 - "$tmp/a100.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
assert g["name"] == "a100-80gb-calibrated", g["name"]
assert g["expected_runs"] == 10 and 0 < g["expected_step_error"] < 0.1, g
assert "calibration on 10 runs of sc21.csv" in g["expected_basis"], g["expected_basis"]
PY
# the calibrated file prices anything, as a --gpu
expect 0 "a100-80gb-calibrated" -- "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --gpu "$tmp/a100.json"
# --json: the fit as one object; --constants narrows the constants
"$vp" calibrate --runs "$runs" --constants gemm,layer --json -o "$tmp/b.json" >"$tmp/fit.json"
expect 0 "" -- python3 - "$tmp/fit.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
asked = {c["name"] for c in d["constants"] if c["asked"]}
assert asked == {"gemm", "layer"}, asked
assert len(d["runs"]) == 10 and d["loo_mean"] > 0 and d["gpu"]["name"].endswith("-calibrated")
PY

# bad input: usage (2) and bad data (3), naming the line and column
hdr="model,gpu,tp,pp,vp,dp,cp,ep,mbs,gbs,seq,schedule,recompute,flash,sp,zero,fp8,step_time_s,tokens_per_s_per_gpu,peak_mem_gib"
printf 'model,gpu,tp\nllama3-8b,a100-80gb,1\n' >"$tmp/cols.csv"
printf '%s\nllama3-8b,a100-80gb,x,,,,,,,,,,,,,,,1,,\n' "$hdr" >"$tmp/cell.csv"
printf '%s\nllama3-8b,a100-80gb,,,,4,3,,,8,8192,,,,,,,1,,\n' "$hdr" >"$tmp/cp.csv"
printf '%s\nllama3-8b,a100-80gb,,,,,,,,,,,,,,,,1,,\nllama3-8b,a100-80gb,2,,,,,,,,,,,,,,,1,,\n' "$hdr" >"$tmp/two.csv"
expect 2 "needs --runs" -- "$vp" calibrate -o "$tmp/x.json"
expect 3 "error: --runs $tmp/cols.csv:1: the header lacks column 'pp'" -- "$vp" calibrate --runs "$tmp/cols.csv" -o "$tmp/x.json"
expect 3 "cell.csv:2: column 'tp': expected an integer" -- "$vp" calibrate --runs "$tmp/cell.csv" -o "$tmp/x.json"
expect 2 "cp.csv:2: CP 3 must divide sequence 8192 into an even share" -- \
    "$vp" calibrate --runs "$tmp/cp.csv" -o "$tmp/x.json"
expect 2 "2 runs cannot fit 5 time constants" -- \
    "$vp" calibrate --runs "$tmp/two.csv" --constants gemm,memory,comm,layer,chunk -o "$tmp/x.json"
expect 2 "unknown constant 'speed'" -- "$vp" calibrate --runs "$tmp/two.csv" --constants speed -o "$tmp/x.json"
expect 2 "-o $tmp/two.csv would write over the input $tmp/two.csv" -- \
    "$vp" calibrate --runs "$tmp/two.csv" -o "$tmp/two.csv"
expect 2 "unknown constant 'gem' (did you mean 'gemm'? known: gemm, memory" -- "$vp" calibrate \
    --runs "$tmp/two.csv" --constants layer,gem -o "$tmp/x.json"
expect 2 "--gpu tpu" -- "$vp" calibrate --runs "$tmp/two.csv" --gpu tpu -o "$tmp/x.json"
expect 3 "nope.csv" -- "$vp" calibrate --runs "$tmp/nope.csv" -o "$tmp/x.json"
# a step faster than the accelerator's peak allows is a mistake in the run, not a fit
printf '%s\nllama3-8b,h100-80gb,,,,8,,,1,64,8192,,,1,,,,0.0001,,\n' "$hdr" >"$tmp/fast.csv"
expect 2 "fast.csv:2: 6.5536e+08 tokens/s per GPU would run llama3-8b's FLOPs at" -- \
    "$vp" calibrate --runs "$tmp/fast.csv" -o "$tmp/x.json"
[ ! -e "$tmp/x.json" ] || bad "a failed calibration wrote its output"

# one run: fitted, and its left-out figure is said to be the base's prediction
sed 's/,0.0001,/,5,/' "$tmp/fast.csv" >"$tmp/one.csv"
expect 0 "the base alone predicts it within" -- "$vp" calibrate --runs "$tmp/one.csv" -o "$tmp/one.json"
finish
