#!/usr/bin/env bash
# Context parallelism on the command line: --cp and --cp-comm on every pricing command and
# plan --model; a rank's activations falling as CP splits the sequence; the all-gather's
# buffers and exposed exchange against the ring's; plan searching CP where the sequence's
# activations need it and exporting it to Megatron-LM and torchtitan; every refusal with its
# message and exit code. Usage: cp.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

m8="$src/data/anchors/models/llama3.1-8b.json"
q=(--model "$m8" --seq 131072 --flash --zero)

# ---- the help ----------------------------------------------------------------------------
for cmd in simulate compare render schedule plan model; do
    expect 0 "--cp N" -- "$vp" "$cmd" --help
    expect 0 "--cp-comm p2p|allgather" -- "$vp" "$cmd" --help
done

# ---- pricing -----------------------------------------------------------------------------
expect 0 "TP 1, CP 8 (p2p), DP 1 + ZeRO-1" -- "$vp" simulate 1f1b -p 1 -m 2 "${q[@]}" --cp 8 --recompute full
for cp in 2 4 8; do
    for comm in p2p allgather; do
        "$vp" simulate 1f1b -p 1 -m 2 "${q[@]}" --cp "$cp" --cp-comm "$comm" --recompute full \
            --json >"$tmp/cp$cp$comm.json"
    done
done
expect 0 "" -- python3 - "$tmp" <<'PY'
import json, sys
r = {(cp, c): json.load(open(f"{sys.argv[1]}/cp{cp}{c}.json"))
     for cp in (2, 4, 8) for c in ("p2p", "allgather")}
for (cp, c), x in r.items():
    assert x["cp"] == cp and x["cp_comm"] == c and x["gpus"] == cp, x
# each rank holds seq / cp tokens: its activations halve as CP doubles
act = {cp: r[(cp, "p2p")]["memory_per_rank"][0]["activations"] for cp in (2, 4, 8)}
assert abs(act[2] / act[4] - 2) < 1e-6 and abs(act[4] / act[8] - 2) < 1e-6, act
# the all-gather holds the whole sequence's K, V and dK, dV (2 cp x a rank's own), the ring 3
# of its own blocks: at 131072 tokens, 8 KV heads x 128 x 2 (K, V) x 2 bytes a token
for cp in (2, 4, 8):
    kv = 8 * 128 * 2 * 2 * 131072 / cp
    g = {c: r[(cp, c)]["memory_per_rank"][0]["gathers"] for c in ("p2p", "allgather")}
    assert abs(g["allgather"] - g["p2p"] - (2 * cp - 3) * kv) < 1e-3 * kv, (cp, g)
# inside a node the ring's sends hide under 131072 tokens' attention; the all-gather's do not
for cp in (2, 4, 8):
    st = {c: r[(cp, c)]["per_stage"][0] for c in ("p2p", "allgather")}
    assert st["allgather"]["f_ms"] > st["p2p"]["f_ms"], (cp, st)
PY

# across nodes a ring of 2048-token blocks cannot hide its sends: CP 16 at TP 8 is slower than
# the same GPUs at CP 1 spread over DP (same tokens a rank, no exchange)
expect 0 "CP 16 (p2p)" -- "$vp" simulate 1f1b -p 1 -m 16 --model "$m8" --seq 32768 --flash --tp 8 --sp --cp 16 --recompute full
"$vp" simulate 1f1b -p 1 -m 16 --model "$m8" --seq 32768 --flash --tp 8 --sp --cp 16 --json >"$tmp/x16.json"
"$vp" simulate 1f1b -p 1 -m 16 --model "$m8" --seq 32768 --flash --tp 8 --sp --cp 16 --cp-comm allgather --json >"$tmp/g16.json"
expect 0 "" -- python3 - "$tmp/x16.json" "$tmp/g16.json" <<'PY'
import json, sys
ring, gather = (json.load(open(p)) for p in sys.argv[1:])
assert ring["gpus"] == 128 and ring["cp"] == 16, ring
assert ring["step_time_s"] != gather["step_time_s"]
PY

expect 0 "CP 2 (allgather)" -- "$vp" model show "$m8" --seq 131072 --cp 2 --cp-comm allgather
expect 0 "v-half" -- "$vp" compare -p 2 -m 8 "${q[@]}" --cp 4 --recompute full

# ---- plan --model --------------------------------------------------------------------------
p=(--model "$m8" --gpu h200-141gb --gpus 8 --seq 131072 --global-batch 8 --flash --zero --tp 1)
"$vp" plan "${p[@]}" --json >"$tmp/plan.json"
"$vp" plan "${p[@]}" --json --threads 2 >"$tmp/plan2.json"
"$vp" plan "${p[@]}" --cp 2 --json >"$tmp/plan_cp2.json"
expect 0 "" -- python3 - "$tmp/plan.json" "$tmp/plan2.json" "$tmp/plan_cp2.json" <<'PY'
import json, sys
free, two, fixed = (json.load(open(p)) for p in sys.argv[1:])
for k in ("best", "top", "candidates", "evaluated", "pruned"):
    assert free[k] == two[k], k  # threads change nothing
for c in [free["best"], *free["top"], *free["best_per_family"].values()]:
    assert c["dp"] * c["tp"] * c["pp"] * c["cp"] == 8 and c["fits"], c
    assert 131072 % (2 * c["cp"]) == 0 and c["dp"] * c["mbs"] * c["m"] == 8, c
assert free["best"]["cp"] > 1, free["best"]  # 131072 tokens need CP on one node
for c in [fixed["best"], *fixed["top"]]:
    assert c["cp"] == 2, c
assert free["best"]["step_time_s"] <= fixed["best"]["step_time_s"]
PY
expect 0 "--context-parallel-size 2 --cp-comm-type p2p" -- "$vp" plan "${p[@]}" --cp 2 --emit megatron
expect 0 "--cp-comm-type all_gather" -- "$vp" plan "${p[@]}" --cp 2 --cp-comm allgather --emit megatron
expect 0 "/ (TP 1 x CP 2 x PP" -- "$vp" plan "${p[@]}" --cp 2 --emit megatron
"$vp" plan "${p[@]}" --cp 4 --emit torchtitan "$tmp/tt" >/dev/null
"$vp" plan "${p[@]}" --cp 4 --cp-comm allgather --emit torchtitan "$tmp/tg" >/dev/null
expect 0 "" -- python3 - "$tmp/tt/job.toml" "$tmp/tg/job.toml" <<'PY'
import sys, tomllib
ring, gather = (tomllib.load(open(p, "rb"))["parallelism"] for p in sys.argv[1:])
assert ring["context_parallel_degree"] == 4 and ring["context_parallel_rotate_method"] == "alltoall"
assert gather["context_parallel_degree"] == 4 and gather["context_parallel_rotate_method"] == "allgather"
PY
expect 0 "CP 4" -- "$vp" plan "${p[@]}" --cp 4

# ---- refusals ------------------------------------------------------------------------------
expect 2 "CP 3 must divide sequence 131072" -- "$vp" simulate 1f1b -p 1 -m 2 "${q[@]}" --cp 3
expect 2 "2 x CP must divide the sequence" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model "$m8" --seq 8190 --cp 2
expect 2 "CP 3 must divide sequence" -- "$vp" plan "${p[@]}" --cp 3
expect 2 "vpipe's own model cannot split its attention over CP 2" -- \
    "$vp" simulate 1f1b -p 2 -m 4 --model vpipe:4,32,2,16 --cp 2
expect 2 "--cp needs --model" -- "$vp" simulate 1f1b -p 2 -m 8 --cp 2
expect 2 "--cp" -- "$vp" simulate 1f1b -p 2 -m 8 "${q[@]}" --cp 0
expect 2 "--cp-comm" -- "$vp" simulate 1f1b -p 2 -m 8 "${q[@]}" --cp 2 --cp-comm ring
finish
