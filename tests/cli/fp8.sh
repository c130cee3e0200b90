#!/usr/bin/env bash
# FP8 training on the command line: --fp8 on every pricing command and plan --model; the
# multiplies faster, the FP8 weight copies in each rank's total; the refusals (an accelerator
# without FP8 or without MXFP8, auto outside plan) with their messages and exit codes; plan
# --fp8 auto searching FP8 and its exports (Megatron-LM's flags checked against its option
# names, torchtitan's TOML against its float8 keys); an accelerator file's fp8_peak_tflops;
# --fp8-params and --grad-bytes, their refusals and export flags.
# Usage: fp8.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

m=(--model llama3-8b --seq 4096 --flash)

# ---- the help ----------------------------------------------------------------------------
for cmd in simulate compare render schedule plan model; do
    expect 0 "--fp8 off|tensorwise|blockwise|mxfp8|delayed|auto" -- "$vp" "$cmd" --help
done

# ---- pricing -----------------------------------------------------------------------------
expect 0 "FP8 tensorwise" -- "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --dp 2 --fp8 tensorwise
expect 0 "totals include FP8 weight copies" -- \
    "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --fp8 blockwise
expect 0 "FP8 mxfp8" -- "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --gpu b200 --fp8 mxfp8
expect 0 "FP8 delayed" -- "$vp" model show llama3-8b --seq 4096 --fp8 delayed
for f in off tensorwise blockwise; do
    "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --fp8 "$f" --split even --json >"$tmp/$f.json"
done
expect 0 "" -- python3 - "$tmp" <<'PY'
import json, sys
d = {f: json.load(open(f"{sys.argv[1]}/{f}.json")) for f in ("off", "tensorwise", "blockwise")}
off, tw, bw = d["off"], d["tensorwise"], d["blockwise"]
# the multiplies at twice the rate: faster, tensorwise faster than blockwise (0.98 vs 0.74)
assert tw["step_time_s"] < bw["step_time_s"] < off["step_time_s"], [x["step_time_s"] for x in d.values()]
for a, b in zip(off["memory_per_rank"], tw["memory_per_rank"]):
    assert "fp8_weights" not in a and b["fp8_weights"] > 0, (a, b)
    assert a["params"] == b["params"] and a["optimizer"] == b["optimizer"]  # master, moments kept
    assert b["activations"] < a["activations"]  # linear inputs saved in FP8
    assert b["allocated"] == sum(b[k] for k in ("params", "grads", "optimizer", "activations",
        "buffers", "workspace", "logits", "gathers", "fp8_weights"))
PY
# compare and render take it too
expect 0 "FP8 tensorwise" -- "$vp" compare -p 4 -m 8 "${m[@]}" --fp8 tensorwise

# ---- refusals ------------------------------------------------------------------------------
expect 2 "accelerator a100-80gb has no FP8 tensor cores" -- \
    "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --gpu a100-80gb --fp8 tensorwise
expect 2 "accelerator h100-80gb has no MXFP8 tensor cores" -- \
    "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --fp8 mxfp8
expect 2 "accelerator a100-80gb has no FP8 tensor cores" -- \
    "$vp" plan "${m[@]}" --gpu a100-80gb --gpus 8 --global-batch 32 --fp8 blockwise
expect 2 "--fp8 auto searches FP8 as a lever of plan --model" -- \
    "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --fp8 auto
expect 2 "--fp8 is one of off, tensorwise, blockwise, mxfp8, delayed, auto, got 'fp4'" -- \
    "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --fp8 fp4
expect 2 "--fp8 needs --model" -- "$vp" simulate 1f1b -p 4 -m 8 --fp8 tensorwise
expect 2 "vpipe's own model trains in fp32" -- \
    "$vp" simulate 1f1b -p 2 -m 4 --model vpipe:4,64,4,32 --fp8 tensorwise

# FP8 weights and 16-bit gradients: the copies and half the gradients leave each total
"$vp" simulate 1f1b -p 1 -m 8 "${m[@]}" --dp 8 --zero --fp8 delayed --json >"$tmp/copies.json"
"$vp" simulate 1f1b -p 1 -m 8 "${m[@]}" --dp 8 --zero --fp8 delayed --fp8-params --grad-bytes 2 \
    --json >"$tmp/own.json"
expect 0 "" -- python3 - "$tmp/copies.json" "$tmp/own.json" <<'PY'
import json, sys
a, b = ([x["memory_per_rank"][0] for x in [json.load(open(p))]][0] for p in sys.argv[1:])
assert a["fp8_weights"] > 0 and "fp8_weights" not in b, (a, b)  # per-tensor: no scales
assert b["grads"] == a["grads"] / 2 and b["params"] == a["params"], (a, b)
assert abs(a["allocated"] - b["allocated"] - a["fp8_weights"] - b["grads"]) < 1e-6 * a["allocated"]
PY
expect 0 "FP8 delayed (FP8 weights), 16-bit gradients" -- \
    "$vp" simulate 1f1b -p 1 -m 8 "${m[@]}" --dp 8 --fp8 delayed --fp8-params --grad-bytes 2
expect 2 "--fp8-params makes the FP8 copies the weights: it needs --fp8 with a recipe" -- \
    "$vp" simulate 1f1b -p 1 -m 8 "${m[@]}" --fp8-params
expect 2 "--fp8-params makes the FP8 copies the weights" -- \
    "$vp" simulate 1f1b -p 1 -m 8 "${m[@]}" --fp8 off --fp8-params
expect 2 "--grad-bytes takes 2 (16-bit gradients) or 4 (fp32), got 3" -- \
    "$vp" simulate 1f1b -p 1 -m 8 "${m[@]}" --grad-bytes 3
expect 2 "--grad-bytes 2 is below the weights' 4 bytes: vpipe:4,64,4,32 trains in fp32" -- \
    "$vp" simulate 1f1b -p 2 -m 4 --model vpipe:4,64,4,32 --grad-bytes 2
expect 2 "--fp8-params does not change what model show prints" -- \
    "$vp" model show llama3-8b --fp8 tensorwise --fp8-params

# an accelerator file gives the FP8 peak: an A100 said to have one prices FP8
echo '{"base": "a100-80gb", "name": "a100-fp8", "fp8_peak_tflops": 624}' >"$tmp/a100fp8.json"
expect 0 "FP8 tensorwise" -- \
    "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --gpu "$tmp/a100fp8.json" --fp8 tensorwise
echo '{"base": "h100-80gb", "fp8_peak_tflops": "x"}' >"$tmp/bad.json"
expect 3 "fp8_peak_tflops" -- "$vp" simulate 1f1b -p 4 -m 8 "${m[@]}" --gpu "$tmp/bad.json"

# ---- plan ------------------------------------------------------------------------------------
p=(plan "${m[@]}" --gpus 8 --global-batch 32)
"$vp" "${p[@]}" --fp8 auto --json >"$tmp/auto.json"
"$vp" "${p[@]}" --json >"$tmp/plain.json"
"$vp" "${p[@]}" --fp8 auto --threads 3 --json >"$tmp/auto3.json"
expect 0 "" -- python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
auto, plain, auto3 = (json.load(open(f"{t}/{n}.json")) for n in ("auto", "plain", "auto3"))
assert auto["best"]["fp8"] == "tensorwise", auto["best"]  # H100: per-tensor FP8 wins
assert "fp8" not in plain["best"]  # not asked: not searched
assert auto["best"]["step_time_s"] < plain["best"]["step_time_s"]
assert auto["candidates"] == 2 * plain["candidates"], (auto["candidates"], plain["candidates"])
for k in ("candidates", "evaluated", "best", "top"):
    assert auto[k] == auto3[k], k  # the threads change nothing
PY
"$vp" "${p[@]}" --fp8 blockwise --json >"$tmp/fixed.json"
expect 0 "" -- python3 - "$tmp/fixed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert all(c["fp8"] == "blockwise" for c in [d["best"], *d["top"]]), d["best"]
PY

# Megatron-LM: every flag is one of its options (tests/cli/megatron_options.txt; --fp8-format
# takes e4m3 or hybrid, --fp8-recipe tensorwise, delayed, mxfp8 or blockwise)
"$vp" "${p[@]}" --fp8 blockwise --emit megatron >"$tmp/megatron.txt"
"$vp" "${p[@]}" --fp8 auto --emit megatron >"$tmp/megatron-auto.txt"
"$vp" "${p[@]}" --fp8 tensorwise --fp8-params --grad-bytes 2 --emit megatron >"$tmp/megatron-own.txt"
expect 0 "" -- python3 - "$tmp/megatron.txt" "$tmp/megatron-auto.txt" "$tmp/megatron-own.txt" \
    "$src/tests/cli/megatron_options.txt" <<'PY'
import sys
megatron = {l for l in open(sys.argv[4]).read().split() if l.startswith("--")}
for path, recipe in zip(sys.argv[1:3], ("blockwise", "tensorwise")):
    words = [l for l in open(path).read().splitlines() if l.startswith("--")][0].split()
    flags = [w for w in words if w.startswith("--")]
    assert set(flags) <= megatron, set(flags) - megatron
    arg = lambda name: words[words.index(name) + 1]
    assert arg("--fp8-format") == "hybrid" and arg("--fp8-recipe") == recipe, words
    assert "--fp8-param-gather" not in words and "--grad-reduce-in-bf16" not in words, words
words = [l for l in open(sys.argv[3]).read().splitlines() if l.startswith("--")][0].split()
flags = {w for w in words if w.startswith("--")}
assert {"--fp8-param-gather", "--grad-reduce-in-bf16"} <= flags <= megatron, words
PY

# torchtitan: tensorwise is its float8 recipe; blockwise is said, not carried
"$vp" "${p[@]}" --fp8 tensorwise --emit torchtitan "$tmp/tt" >/dev/null
"$vp" "${p[@]}" --fp8 blockwise --emit torchtitan "$tmp/ttb" >/dev/null
"$vp" "${p[@]}" --fp8 tensorwise --fp8-params --grad-bytes 2 --emit torchtitan "$tmp/tto" >/dev/null
expect 0 "" -- python3 - "$tmp/tt/job.toml" "$tmp/ttb/job.toml" "$tmp/tto/job.toml" <<'PY'
import sys, tomllib
job = tomllib.load(open(sys.argv[1], "rb"))
own = tomllib.load(open(sys.argv[3], "rb"))  # torchtitan's JobConfig: Float8, Training keys
assert own["float8"]["enable_fsdp_float8_all_gather"] is True, own
assert own["float8"]["precompute_float8_dynamic_scale_for_fsdp"] is True, own
assert own["training"]["mixed_precision_reduce"] == "bfloat16", own
assert "enable_fsdp_float8_all_gather" not in job["float8"], job
assert "mixed_precision_reduce" not in job["training"], job
assert job["model"]["converters"] == ["float8"], job
assert job["float8"]["recipe_name"] in ("tensorwise", "rowwise", "rowwise_with_gw_hp")
assert job["float8"]["recipe_name"] == "tensorwise"
text = open(sys.argv[2]).read()
block = tomllib.loads(text)
assert "float8" not in block and "model" not in block, block
assert "vpipe priced FP8 blockwise; torchtitan's float8 recipes" in text
PY

finish
