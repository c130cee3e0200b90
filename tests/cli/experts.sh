#!/usr/bin/env bash
# Expert parallelism on the command line: --ep and --etp on simulate, compare, model show and
# plan --model; the per-rank memory of a mixture of experts falling as EP splits its experts;
# the all-to-all crossing nodes costing more than inside one; plan searching EP among the
# experts' divisors (and keeping a fixed one) and exporting it; every refusal with its message
# and exit code. Usage: experts.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

q=(--model qwen3-30b-a3b --seq 4096 --flash --zero)

# ---- the help ----------------------------------------------------------------------------
for cmd in simulate compare render schedule plan model; do
    expect 0 "--ep N" -- "$vp" "$cmd" --help
    expect 0 "--etp N" -- "$vp" "$cmd" --help
done

# ---- pricing -----------------------------------------------------------------------------
expect 0 "DP 16 + ZeRO-1, EP 8, ETP 1, expert-DP 2" -- \
    "$vp" simulate 1f1b -p 2 -m 8 "${q[@]}" --dp 16 --ep 8
for ep in 1 2 8 16; do
    "$vp" simulate 1f1b -p 2 -m 8 "${q[@]}" --dp 16 --ep "$ep" --split even --json >"$tmp/ep$ep.json"
done
expect 0 "" -- python3 - "$tmp" <<'PY'
import json, sys
r = {ep: json.load(open(f"{sys.argv[1]}/ep{ep}.json")) for ep in (1, 2, 8, 16)}
for ep, x in r.items():
    assert x["ep"] == ep and x["etp"] == 1 and x["gpus"] == 2 * 16, x
    st = x["per_stage"][0]
    # the routed experts split over EP: 128 experts of 3 x 2048 x 768 per MoE layer
    assert abs(st["expert_params"] - st["layers"] * 128 / ep * 3 * 2048 * 768) < 1, st
    assert (st["a2a_f_ms"] > 0) == (ep > 1) and st["a2a_f_ms"] < st["f_ms"], st
# params and gradients fall as EP grows; with the distributed optimizer the experts' states
# split over EP x expert-DP = DP 16 whatever EP is; activations do not change
mem = {ep: x["memory_per_rank"][0] for ep, x in r.items()}
for item in ("params", "grads"):
    assert mem[1][item] > mem[2][item] > mem[8][item] > mem[16][item], item
assert max(m["optimizer"] for m in mem.values()) - min(m["optimizer"] for m in mem.values()) < 64
assert len({m["activations"] for m in mem.values()}) == 1
# EP 16 crosses two nodes of 8: each all-to-all leaves the node, slower than EP 8's
a2a = {ep: x["per_stage"][0]["a2a_f_ms"] / x["per_stage"][0]["layers"] for ep, x in r.items()}
assert a2a[16] > 2 * a2a[8], a2a
PY

# without the distributed optimizer every rank holds its experts' states whole: EP splits them
for ep in 1 8; do
    "$vp" simulate 1f1b -p 2 -m 8 --model qwen3-30b-a3b --seq 4096 --flash --dp 16 --ep "$ep" \
        --split even --json >"$tmp/plain$ep.json"
done
expect 0 "" -- python3 - "$tmp/plain1.json" "$tmp/plain8.json" <<'PY'
import json, sys
one, eight = (json.load(open(p)) for p in sys.argv[1:])
st1, st8 = one["per_stage"][0], eight["per_stage"][0]
# fp32 master weights and Adam's two moments (12 bytes a parameter), fp32 gradients (4)
for x, st in ((one, st1), (eight, st8)):
    m = x["memory_per_rank"][0]
    assert abs(m["optimizer"] - 12 * st["params"]) < 64 and abs(m["grads"] - 4 * st["params"]) < 64
assert abs((st1["expert_params"] - st8["expert_params"]) - st1["expert_params"] * 7 / 8) < 1
PY

# model show and compare take them too
expect 0 "EP 8, ETP 2, expert-DP 1" -- "$vp" model show qwen3-30b-a3b --tp 2 --dp 8 --ep 8 --etp 2
expect 0 "v-half" -- "$vp" compare -p 2 -m 8 "${q[@]}" --dp 16 --ep 16

# ---- plan --model --------------------------------------------------------------------------
"$vp" plan "${q[@]}" --gpus 16 --global-batch 64 --json >"$tmp/plan.json"
"$vp" plan "${q[@]}" --gpus 16 --global-batch 64 --ep 4 --json >"$tmp/plan4.json"
expect 0 "" -- python3 - "$tmp/plan.json" "$tmp/plan4.json" <<'PY'
import json, sys
free, fixed = (json.load(open(p)) for p in sys.argv[1:])
seen = set()
for c in [free["best"], *free["top"], *free["best_per_family"].values()]:
    assert 128 % c["ep"] == 0 and (c["tp"] * c["dp"]) % (c["ep"] * c["etp"]) == 0, c
    seen.add(c["ep"])
assert free["best"]["ep"] > 1, free["best"]  # splitting the experts wins on 16 GPUs
for c in [fixed["best"], *fixed["top"]]:
    assert c["ep"] == 4 and c["etp"] == 1, c
# the free search found a configuration at least as fast as the one with EP fixed
assert free["best"]["step_time_s"] <= fixed["best"]["step_time_s"]
PY
expect 0 "--expert-model-parallel-size 4 --expert-tensor-parallel-size 1" -- \
    "$vp" plan "${q[@]}" --gpus 16 --global-batch 64 --ep 4 --emit megatron
expect 0 "EP 4, ETP 1" -- "$vp" plan "${q[@]}" --gpus 16 --global-batch 64 --ep 4
"$vp" plan "${q[@]}" --gpus 16 --global-batch 64 --ep 4 --emit torchtitan "$tmp/tt" >/dev/null
expect 0 "" -- python3 - "$tmp/tt/job.toml" <<'PY'
import sys, tomllib
par = tomllib.load(open(sys.argv[1], "rb"))["parallelism"]
assert par["expert_parallel_degree"] == 4 and par["expert_tensor_parallel_degree"] == 1, par
PY
# EP 2 under TP 4 is Megatron-LM's fold, not torchtitan's (EP a multiple of TP): said so
"$vp" plan "${q[@]}" --gpus 16 --global-batch 64 --ep 2 --tp 4 --emit torchtitan "$tmp/tt2" >/dev/null
expect 0 "this configuration is Megatron-LM's fold" -- cat "$tmp/tt2/job.toml"
expect 1 "" -- grep -q "Megatron-LM's fold" "$tmp/tt/job.toml"

# ---- refusals ------------------------------------------------------------------------------
expect 2 "128 experts must be divisible by EP 3" -- \
    "$vp" simulate 1f1b -p 2 -m 8 "${q[@]}" --dp 6 --ep 3
expect 2 "EP x ETP (16) must divide TP x CP x DP (8)" -- \
    "$vp" simulate 1f1b -p 2 -m 8 "${q[@]}" --dp 8 --ep 16
expect 2 "width 768 by ETP 5" -- "$vp" simulate 1f1b -p 2 -m 8 "${q[@]}" --dp 10 --ep 2 --etp 5
expect 2 "model llama3-8b has no experts" -- "$vp" simulate 1f1b -p 2 -m 8 --model llama3-8b --ep 2 --dp 2
expect 2 "model llama3-8b has no experts" -- "$vp" plan --model llama3-8b --gpus 8 --global-batch 64 --ep 2
expect 2 "128 experts must be divisible by EP 3" -- \
    "$vp" plan "${q[@]}" --gpus 16 --global-batch 64 --ep 3
expect 2 "--ep needs --model" -- "$vp" simulate 1f1b -p 2 -m 8 --ep 2
expect 2 "--ep" -- "$vp" simulate 1f1b -p 2 -m 8 "${q[@]}" --ep 0
finish
