#!/usr/bin/env bash
# vpipe plan --model: the DP x TP x PP x microbatch x schedule x recompute search on the
# command line: its report, its JSON, threads that change nothing, exports that parse by
# their formats' own rules (TOML through Python's tomllib, the CSV through vpipe's
# importer), vpipe's own model run as planned, and every bad request. Usage: hybrid.sh
# VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

l70=(--model llama3-70b --gpu h100-80gb --gpus 64 --seq 8192 --global-batch 512 --flash --sp --zero)
cm=(--model cm-98.5b --gpu a100-80gb --gpus 40 --seq 1024 --global-batch 160 --flash --sp --zero)

expect 0 "--global-batch B" -- "$vp" plan --help
expect 0 "best of every family" -- "$vp" plan "${cm[@]}"
expect 0 "why: " -- "$vp" plan "${cm[@]}"
expect 0 "memory per rank, GiB:" -- "$vp" plan "${cm[@]}" --top 3

# --json: the fields scripts read; deterministic whatever the threads.
"$vp" plan "${l70[@]}" --json >"$tmp/one.json"
"$vp" plan "${l70[@]}" --json --threads 2 >"$tmp/two.json"
expect 0 "" -- python3 - "$tmp/one.json" "$tmp/two.json" <<'PY'
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:])
for d in (one, two):
    d.pop("elapsed_s")
assert one == two, "threads changed the answer"
keys = {"dp", "tp", "pp", "mbs", "m", "recompute", "step_time_s", "mfu", "memory_max_bytes"}
for k in ("best", "best_per_family", "evaluated", "pruned", "candidates", "top", "reason"):
    assert k in one, k
assert keys <= set(one["best"]) and "memory_per_rank" in one["best"]
for fam, c in one["best_per_family"].items():
    assert keys <= set(c), (fam, c)
    assert c["fits"] and c["memory_max_bytes"] <= 80 * 2 ** 30, (fam, c)
    assert c["dp"] * c["tp"] * c["pp"] == 64 and c["dp"] * c["mbs"] * c["m"] == 512, (fam, c)
best = min(one["best_per_family"].values(), key=lambda c: c["step_time_s"])
assert best["step_time_s"] == one["best"]["step_time_s"]
assert one["evaluated"] + one["pruned"] + one["refused"] == one["candidates"], one
assert max(m["total"] for m in one["best"]["memory_per_rank"]) == one["best"]["memory_max_bytes"]
PY

# --emit torchtitan DIR: a TOML that tomllib reads with the winner's degrees, and a CSV that
# vpipe's importer (PyTorch's loader rules) accepts with the winner's p and m; the plan as
# priced (Megatron-LM's way unless --framework torchtitan, and the TOML says so).
"$vp" plan "${cm[@]}" --json >"$tmp/cm.json"
expect 0 "wrote" -- "$vp" plan "${cm[@]}" --emit torchtitan "$tmp/tt"
expect 0 "plan with --framework torchtitan prices torchtitan's" -- cat "$tmp/tt/job.toml"
expect 0 "" -- "$vp" validate "$tmp/tt/schedule.csv"
expect 0 "" -- python3 - "$tmp/tt/job.toml" "$tmp/cm.json" "$tmp/tt/schedule.csv" <<'PY'
import json, sys, tomllib
job = tomllib.load(open(sys.argv[1], "rb"))
best = json.load(open(sys.argv[2]))["best"]
par, train = job["parallelism"], job["training"]
assert par["pipeline_parallel_degree"] == best["pp"]
assert par["tensor_parallel_degree"] == best["tp"]
assert par["data_parallel_replicate_degree"] * par["data_parallel_shard_degree"] == best["dp"]
assert par["pipeline_parallel_microbatch_size"] == best["mbs"]
assert par["pipeline_parallel_schedule_csv"] == sys.argv[3]
assert train["global_batch_size"] == 160 and train["seq_len"] == 1024
assert train["local_batch_size"] == best["mbs"] * best["m"]
parts = par["module_fqns_per_model_part"]
layers = [name for part in parts for name in part if name.startswith("layers.")]
assert layers == [f"layers.{i}" for i in range(78)], layers
assert [len([n for n in p if n.startswith("layers.")]) for p in parts] == best["layers_per_stage"]
assert parts[0][0] == "tok_embeddings" and parts[-1][-2:] == ["norm", "output"]
assert job["activation_checkpoint"]["mode"] == best["recompute"]
text = open(sys.argv[1]).read()  # priced compiled: torchtitan runs eager unless told
assert "as torch.compile runs them" in text and "[compile] enable" in text, text
assert ("selective_ac_option" in job["activation_checkpoint"]) == (best["recompute"] == "selective")
rows = open(sys.argv[3]).read().splitlines()
assert len(rows) == best["pp"], len(rows)
PY
expect 0 "--pipeline-model-parallel-size" -- "$vp" plan "${cm[@]}" --emit megatron
"$vp" plan "${cm[@]}" --emit megatron >"$tmp/megatron.txt"
expect 0 "" -- python3 - "$tmp/megatron.txt" "$tmp/cm.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
flags = [l for l in lines if l.startswith("--")]
assert len(flags) == 1, lines
words = flags[0].split()
arg = lambda name: int(words[words.index(name) + 1])
per = json.load(open(sys.argv[2]))["best_per_family"]
ours = sorted((c for f, c in per.items() if f in ("1f1b", "interleaved")), key=lambda c: c["step_time_s"])
# the fastest configuration Megatron-LM runs; a faster one it refuses would be said
family = lines[0].split()[2].rstrip(",")
pick = per[family]
assert (pick is ours[0]) == (not any(l.startswith("# a faster one is refused: ") for l in lines)), lines
assert arg("--pipeline-model-parallel-size") == pick["pp"]
assert arg("--tensor-model-parallel-size") == pick["tp"]
assert arg("--micro-batch-size") == pick["mbs"] and arg("--global-batch-size") == 160
assert "--sequence-parallel" in words
assert ("--use-distributed-optimizer" in words) == (pick["dp"] > 1)  # nothing to shard at DP 1
PY

# -o writes the winner's schedule: it validates and simulates to the winner's p and m.
"$vp" plan "${cm[@]}" -o "$tmp/winner.json" --json >/dev/null
expect 0 "" -- "$vp" validate "$tmp/winner.json"

# vpipe's own model, planned for a small byte budget with DP 1: every configuration reported
# fits it, and the winner runs on the runtime with the activations predicted, byte for byte.
echo '{"base": "a100-80gb", "name": "tiny", "memory_gib": 0.0025}' >"$tmp/tiny.json"
"$vp" plan --model vpipe:8,32,2,16 --gpu "$tmp/tiny.json" --gpus 4 --global-batch 16 --dp 1 \
    -o "$tmp/own.json" --json >"$tmp/own_plan.json"
mbs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['best']['mbs'])" "$tmp/own_plan.json")
"$vp" train --schedule-file "$tmp/own.json" -p 4 --steps 1 --layers 8 --width 32 --heads 2 \
    --seq 16 --microbatch "$mbs" --json >"$tmp/own_train.json" 2>/dev/null
expect 0 "" -- python3 - "$tmp/own_plan.json" "$tmp/own_train.json" <<'PY'
import json, sys
plan, train = (json.load(open(p)) for p in sys.argv[1:])
cap = 0.0025 * 2 ** 30
for c in [plan["best"], *plan["best_per_family"].values(), *plan["top"]]:
    assert c["memory_max_bytes"] <= cap, c
assert plan["over_memory"] + plan["pruned_by_memory"] > 0, "the budget should rule some out"
predicted = [m["activations"] for m in plan["best"]["memory_per_rank"]]
assert predicted == train["peak_activation_bytes"], (predicted, train["peak_activation_bytes"])
PY

# Every configuration a plan reports prices the same through simulate, as its user would run
# it: step time and memory, torchtitan's pipeline (whose buffers and kept logits grow with
# m, where the planner's layout is built for 2 x PP), expert parallelism with the overlap,
# and CP with ZeRO-3 among them (v-block is plan's own build, not a simulate family).
tt=(--model llama3-8b --gpu h100-80gb --gpus 16 --seq 8192 --global-batch 128 --flash
    --framework torchtitan --pp 2)
moe=(--model qwen3-30b-a3b --gpu h100-80gb --gpus 16 --seq 4096 --global-batch 64 --flash
     --ep 8 --ep-overlap)
cpz=(--model llama3-8b --gpu h100-80gb --gpus 16 --seq 8192 --global-batch 32 --flash --sp
     --cp 2 --zero 3)
for req in tt moe cpz; do
    declare -n args=$req
    "$vp" plan "${args[@]}" --top 5 --json >"$tmp/agree_$req.json"
    expect 0 "priced alike" -- python3 - "$vp" "$tmp/agree_$req.json" "${args[@]}" <<'PY'
import json, subprocess, sys
vp, plan, request = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3:]
search_only = {"--gpus", "--global-batch", "--pp", "--ep", "--cp", "--zero"}
shared, i = [], 0
while i < len(request):
    if request[i] in search_only:
        i += 2
        continue
    shared.append(request[i])
    i += 1
n = 0
for c in [plan["best"]] + plan["top"] + list(plan["best_per_family"].values()):
    if c["family"] == "v-block":
        continue
    cmd = [vp, "simulate", c["family"], "-p", str(c["pp"]), "-m", str(c["m"]), "--tp",
           str(c["tp"]), "--dp", str(c["dp"]), "--mbs", str(c["mbs"]), "--recompute",
           c["recompute"], "--zero", str(c["zero"]), "--json"] + shared
    cmd += ["--ep", str(c["ep"])] if c["ep"] > 1 else []
    cmd += ["--cp", str(c["cp"])] if c["cp"] > 1 else []
    cmd += ["-v", str(c["v"])] if c["family"] == "interleaved" else []
    cmd += ["--layers-per-stage", ",".join(map(str, c["layers_per_stage"]))] \
        if "layers_per_stage" in c else []
    got = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    for k in ("step_time_s", "memory_max_bytes"):
        assert abs(got[k] - c[k]) <= 1e-9 * c[k], (k, c[k], got[k], " ".join(cmd[1:]))
    n += 1
assert n >= 5, n
print(f"priced alike: {n} configurations")
PY
done

# The margin: the default is the accelerator's measured memory error (A100: 5.58% of 80 GiB),
# a configuration with less room is tight and ranks after those with room; --margin 0 none.
"$vp" plan --model llama2-7b --gpu a100-80gb --gpus 8 --seq 4096 --global-batch 32 --flash --sp \
    --json >"$tmp/margin_default.json"
"$vp" plan --model llama2-7b --gpu a100-80gb --gpus 8 --seq 4096 --global-batch 32 --flash --sp \
    --margin 60 --top 1000 --json >"$tmp/margin_50.json"
expect 0 "" -- python3 - "$tmp/margin_default.json" "$tmp/margin_50.json" <<'PY'
import json, sys
d, big = (json.load(open(p)) for p in sys.argv[1:])
assert abs(d["margin_bytes"] - 0.0558 * 80 * 2 ** 30) < 1e6, d["margin_bytes"]
assert d["expected_error"]["runs"] > 0 and d["best"]["expected_error"]["runs"] > 0
assert big["margin_bytes"] == 60 * 2 ** 30
for plan in (d, big):
    tight = [c["tight"] for c in plan["top"]]
    assert tight == sorted(tight), tight  # room first
    for c in plan["top"]:
        assert c["tight"] == (c["headroom_bytes"] < plan["margin_bytes"]), c
assert any(c["tight"] for c in big["top"]) and not big["top"][0]["tight"]
PY
expect 0 "room GiB" -- "$vp" plan --model llama2-7b --gpu a100-80gb --gpus 8 --seq 4096 \
    --global-batch 32 --flash --sp --margin 50
expect 2 "--margin" -- "$vp" plan --model llama2-7b --gpus 8 --global-batch 32 --margin -1

# Bad requests: a clear message and exit 2.
expect 2 "smallest needs" -- "$vp" plan --model llama3-405b --gpu h100-80gb --gpus 8 --seq 8192 \
    --global-batch 64 --flash --sp
expect 2 "needs --gpus N and --global-batch B" -- "$vp" plan --model llama3-8b --gpus 8
expect 2 "-p, -m, --memory and --cost do not apply" -- "$vp" plan "${cm[@]}" -p 4
expect 2 "search with --model" -- "$vp" plan -p 4 -m 8 --memory 0.5 --gpus 8
expect 2 "--emit torchtitan takes a directory" -- "$vp" plan "${cm[@]}" --emit torchtitan
expect 2 "--emit torchtitan takes a directory" -- "$vp" plan "${cm[@]}" "$tmp/dir"
expect 2 "no legal configuration" -- "$vp" plan "${cm[@]}" --pp 3
expect 2 "must be divisible by TP 3" -- "$vp" plan "${cm[@]}" --tp 3
expect 2 "--layers-per-stage does not apply" -- "$vp" plan "${cm[@]}" --layers-per-stage 1,2
expect 3 "cannot create directory" -- "$vp" plan "${cm[@]}" --emit torchtitan "$tmp/no/such/dir"
finish
