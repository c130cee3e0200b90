#!/usr/bin/env bash
# ZeRO 0-3 on the command line: --zero N on every pricing command and plan --model (a bare
# --zero from old scripts is --zero 1, byte for byte; the JSON door reads true as 1), the
# states falling stage by stage, the note where DP 1 shards nothing, train's --zero refusing
# what its runtime does not do, plan searching the stage and its exports naming it, and every
# refusal with its message and exit code. Usage: zero.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

l8=(--model llama3-8b --seq 8192 --flash)

# ---- the help and the spellings -----------------------------------------------------------
for cmd in simulate compare render schedule plan model; do
    expect 0 "--zero [N]" -- "$vp" "$cmd" --help
done
a=$("$vp" simulate 1f1b -p 2 -m 8 "${l8[@]}" --dp 4 --zero --json)
b=$("$vp" simulate 1f1b -p 2 -m 8 "${l8[@]}" --dp 4 --zero 1 --json)
c=$("$vp" simulate 1f1b -p 2 -m 8 "${l8[@]}" --zero --dp 4 --json)
[ "$a" = "$b" ] && [ "$a" = "$c" ] || bad "a bare --zero is not --zero 1"
expect 0 "DP 4 + ZeRO-1" -- "$vp" simulate 1f1b -p 2 -m 8 "${l8[@]}" --dp 4 --zero
expect 0 "DP 8 + ZeRO-3" -- "$vp" simulate 1f1b -p 1 -m 4 "${l8[@]}" --dp 8 --zero 3
expect 2 "--zero expects an integer in [0, 3], got '4'" -- \
    "$vp" simulate 1f1b -p 1 -m 4 "${l8[@]}" --dp 8 --zero 4
expect 2 "--zero expects an integer in [0, 3], got '-1'" -- \
    "$vp" simulate 1f1b -p 1 -m 4 "${l8[@]}" --dp 8 --zero -1
expect 2 "needs --model" -- "$vp" simulate 1f1b -p 2 -m 4 --zero 2
expect 0 "shards nothing" -- "$vp" simulate 1f1b -p 1 -m 4 "${l8[@]}" --zero 3

# ---- pricing: each stage shards more, the passes carry ZeRO-3's gathers -------------------
for z in 0 1 2 3; do
    "$vp" simulate 1f1b -p 1 -m 4 "${l8[@]}" --dp 8 --zero "$z" --json >"$tmp/z$z.json"
done
"$vp" simulate 1f1b -p 4 -m 8 "${l8[@]}" --dp 2 --zero 1 --json >"$tmp/pp1.json"
"$vp" simulate 1f1b -p 4 -m 8 "${l8[@]}" --dp 2 --zero 3 --json >"$tmp/pp3.json"
expect 0 "" -- python3 - "$tmp" <<'PY'
import json, sys
r = [json.load(open(f"{sys.argv[1]}/z{z}.json"))["memory_per_rank"][0] for z in range(4)]
assert r[1]["optimizer"] * 8 == r[0]["optimizer"], r
assert r[2]["grads"] * 8 == r[1]["grads"] and r[2]["params"] == r[1]["params"], r
assert r[3]["params"] * 8 == r[2]["params"] and r[3]["gathers"] > r[2]["gathers"], r
assert r[3]["total"] < r[2]["total"] < r[1]["total"] < r[0]["total"], r
s = [json.load(open(f"{sys.argv[1]}/z{z}.json"))["per_stage"][0] for z in range(4)]
assert s[3]["f_ms"] > s[1]["f_ms"] and s[3]["b_ms"] > s[2]["b_ms"] >= s[1]["b_ms"], s
one, three = (json.load(open(f"{sys.argv[1]}/pp{z}.json")) for z in (1, 3))
assert one["step_time_s"] == three["step_time_s"], "under a pipeline ZeRO-3 prices as 1"
PY

# ---- train: the runtime shards the optimizer only ------------------------------------------
expect 0 "--zero N" -- "$vp" train --help
expect 2 "ZeRO-2 and 3 (gradients, weights) are priced, not run" -- \
    "$vp" train -p 2 --schedule 1f1b -m 8 --dp 2 --zero 2 --layers 4
expect 2 "--zero 3: vpipe's runtime shards the optimiser only" -- \
    "$vp" train -p 2 --schedule 1f1b -m 8 --dp 2 --zero 3 --layers 4
expect 2 "--zero expects an integer in [0, 3]" -- \
    "$vp" train -p 2 --schedule 1f1b -m 8 --dp 2 --zero 5 --layers 4

# ---- plan: the stage searched unless given, the exports naming it --------------------------
p8=(--model llama3-8b --gpu h100-80gb --gpus 8 --seq 8192 --global-batch 16 --flash)
expect 0 "the ZeRO stage searched" -- "$vp" plan "${p8[@]}" --top 3
expect 0 ", distributed optimizer" -- "$vp" plan "${p8[@]}" --zero --top 3
"$vp" plan "${p8[@]}" --pp 1 --json >"$tmp/plan.json"
"$vp" plan "${p8[@]}" --pp 1 --json --threads 2 >"$tmp/plan2.json"
"$vp" plan "${p8[@]}" --pp 1 --zero 0 --json >"$tmp/plan0.json"
"$vp" plan "${p8[@]}" --pp 1 --emit megatron >"$tmp/megatron.txt"
"$vp" plan "${p8[@]}" --pp 1 --emit torchtitan "$tmp/tt" >/dev/null
expect 0 "" -- python3 - "$tmp" <<'PY'
import json, sys, tomllib
d = sys.argv[1]
one, two, zero0 = (json.load(open(f"{d}/{n}.json")) for n in ("plan", "plan2", "plan0"))
for x in (one, two):
    x.pop("elapsed_s")
assert one == two, "threads changed the answer"
assert one["candidates"] > zero0["candidates"], (one["candidates"], zero0["candidates"])
assert all(c["zero"] == 0 for c in zero0["top"]), zero0["top"]
assert {c["zero"] for c in one["top"]} <= {0, 1, 2, 3}
best = one["best"]
words = [l for l in open(f"{d}/megatron.txt").read().splitlines() if l.startswith("--")][0].split()
flag = {1: "--use-distributed-optimizer", 2: "--use-megatron-fsdp", 3: "--use-megatron-fsdp"}
if best["zero"] and best["dp"] > 1:
    assert flag[best["zero"]] in words, (best["zero"], words)
if best["zero"] >= 2:
    strategy = words[words.index("--data-parallel-sharding-strategy") + 1]
    assert strategy == {2: "optim_grads", 3: "optim_grads_params"}[best["zero"]], strategy
par = tomllib.load(open(f"{d}/tt/job.toml", "rb"))["parallelism"]
shard = best["zero"] > 0 and best["dp"] > 1
assert par["data_parallel_shard_degree"] == (best["dp"] if shard else 1), par
assert par["data_parallel_replicate_degree"] == (1 if shard else best["dp"]), par
PY
expect 0 "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params" -- \
    "$vp" plan "${p8[@]}" --pp 1 --dp 8 --zero 3 --emit megatron
expect 0 "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads " -- \
    "$vp" plan "${p8[@]}" --pp 1 --dp 8 --zero 2 --emit megatron
finish
