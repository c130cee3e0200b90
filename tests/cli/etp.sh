#!/usr/bin/env bash
# plan --model searches ETP (1 or TP, where TP divides the expert FFN width) beside EP: more
# configurations than with --etp 1, the same counts and answer for every --threads, a fixed
# --etp kept; the Megatron-LM export carries ETP, the EP overlap (where Megatron-LM runs it)
# and DeepEP's dispatcher.
# Usage: etp.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

q=(--model qwen3-30b-a3b --seq 4096 --flash --zero --gpus 16 --global-batch 64)
"$vp" plan "${q[@]}" --json >"$tmp/free.json"
"$vp" plan "${q[@]}" --threads 2 --json >"$tmp/free2.json"
"$vp" plan "${q[@]}" --etp 1 --json >"$tmp/one.json"
"$vp" plan "${q[@]}" --tp 4 --etp 4 --json >"$tmp/four.json"
expect 0 "" -- python3 - "$tmp" <<'PY'
import json, sys
free, free2, one, four = (json.load(open(f"{sys.argv[1]}/{k}.json")) for k in ("free", "free2", "one", "four"))
assert free["evaluated"] == free2["evaluated"] and free["pruned"] == free2["pruned"], (free["pruned"], free2["pruned"])
assert free["best"] == free2["best"]
assert free["candidates"] > one["candidates"], (free["candidates"], one["candidates"])
assert free["best"]["step_time_s"] <= one["best"]["step_time_s"]
for c in [free["best"], *free["top"]]:
    assert c["etp"] in (1, c["tp"]) and 768 % c["etp"] == 0, c
    assert (c["tp"] * c["dp"]) % (c["ep"] * c["etp"]) == 0, c
for c in [four["best"], *four["top"]]:
    assert c["etp"] == 4 and c["tp"] == 4, c
PY
expect 0 "--expert-tensor-parallel-size 4" -- "$vp" plan "${q[@]}" --tp 4 --etp 4 --emit megatron
expect 0 "--overlap-moe-expert-parallel-comm" -- \
    "$vp" plan "${q[@]}" --ep 8 --ep-overlap --emit megatron
# interleaved: Megatron-LM overlaps its sends by default, vpipe priced them blocking: said
expect 0 "overlaps its pipeline sends (its default)" -- \
    "$vp" plan "${q[@]}" --ep 8 --ep-overlap --emit megatron
# Megatron-LM overlaps the all-to-all only without a pipeline or interleaved, and never with
# full recomputation: the export takes the fastest configuration it runs, or says why none
expect 0 "--pipeline-model-parallel-size 1" -- \
    "$vp" plan "${q[@]}" --ep 8 --ep-overlap --max-chunks 1 --emit megatron
expect 2 "only without a pipeline or interleaved: 1f1b at PP 2" -- \
    "$vp" plan "${q[@]}" --ep 8 --ep-overlap --max-chunks 1 --pp 2 --emit megatron
expect 2 "only without full recomputation" -- \
    "$vp" plan "${q[@]}" --ep 8 --ep-overlap --recompute full --emit megatron
# and expert parallelism with TP > 1 only with sequence parallelism: set, and said
expect 0 "--sequence-parallel, set" -- "$vp" plan "${q[@]}" --ep 8 --tp 2 --emit megatron
expect 0 "--sequence-parallel --use-distributed-optimizer" -- \
    "$vp" plan "${q[@]}" --ep 8 --tp 2 --emit megatron
expect 0 "--recompute-granularity full" -- \
    "$vp" plan "${q[@]}" --ep 8 --recompute full --emit megatron
expect 0 "--moe-token-dispatcher-type flex --moe-enable-deepep" -- \
    "$vp" plan "${q[@]}" --ep 16 --ep-dispatch deepep --emit megatron
# every flag these exports write is one of Megatron-LM's options
n=0
for extra in "--tp 4 --etp 4" "--ep 8 --ep-overlap" "--ep 16 --ep-dispatch deepep" \
    "--ep 8 --tp 2" "--ep 8 --ep-overlap --max-chunks 1" "--ep 8 --recompute full"; do
    # shellcheck disable=SC2086
    "$vp" plan "${q[@]}" $extra --emit megatron >"$tmp/megatron-$n.txt"
    n=$((n + 1))
done
expect 0 "" -- python3 - "$src/tests/cli/megatron_options.txt" "$tmp"/megatron-*.txt <<'PY'
import sys
known = {w for w in open(sys.argv[1]).read().split() if w.startswith("--")}
for path in sys.argv[2:]:
    line = [l for l in open(path).read().splitlines() if l.startswith("--")][0]
    flags = {w for w in line.split() if w.startswith("--")}
    assert flags <= known, (path, flags - known)
PY
finish
