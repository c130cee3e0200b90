#!/usr/bin/env bash
# Real-model pricing on the command line: --model/--gpu and the workload options on
# simulate, compare, render and schedule, `vpipe model list|show`, the JSON fields scripts
# read, every bad input's message and exit code, and vpipe's own model priced byte for
# byte as its runtime measures its activations. Usage: models.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

l70=(--model llama3-70b --gpu h100-80gb --seq 8192 --tp 8 --sp --flash)

# ---- the help and the listing -------------------------------------------------------------
for cmd in simulate compare render schedule; do
    expect 0 "--model NAME|FILE" -- "$vp" "$cmd" --help
    expect 0 "--layers-per-stage" -- "$vp" "$cmd" --help
done
expect 0 "model" -- "$vp" --help
expect 0 "llama3-405b" -- "$vp" model list
expect 0 "h200-141gb" -- "$vp" model list
"$vp" model list --json >"$tmp/list.json"
expect 0 "" -- python3 - "$tmp/list.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = {m["name"] for m in d["models"]}
assert {"gpt2-124m", "llama3-70b", "llama3-405b", "gpt3-175b", "cm-98.5b", "zb-1.5b"} <= names
m = {x["name"]: x for x in d["models"]}
assert abs(m["llama3-70b"]["params"] / 1e9 - 70.55) < 0.01, m["llama3-70b"]["params"]
assert m["llama3-70b"]["kv_heads"] == 8 and m["llama3-70b"]["ffn_kind"] == "swiglu"
assert {g["name"] for g in d["gpus"]} == {"a100-80gb", "h100-80gb", "h200-141gb", "h800-80gb",
                                         "gh200-96gb", "b200", "gb200", "mi300x", "mi325x",
                                         "mi355x"}
assert all(g["host_gb_s"] > 0 and g["host_memory_gib"] > 0 for g in d["gpus"])
PY
# An accelerator printed by the listing reads back as a --gpu file, to the same answer.
python3 -c "
import json, sys
g = [g for g in json.load(open(sys.argv[1]))['gpus'] if g['name'] == 'a100-80gb'][0]
json.dump(g, open(sys.argv[2], 'w'))" "$tmp/list.json" "$tmp/a100.json"
a=$("$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --gpu a100-80gb --json | grep step_time_s)
b=$("$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --gpu "$tmp/a100.json" --json | grep step_time_s)
[ -n "$a" ] && [ "$a" = "$b" ] || bad "a100 preset and its JSON file price differently: $a / $b"
echo '{"base": "a100-80gb", "efficiency": 0.25}' >"$tmp/slow.json"
c=$("$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --gpu "$tmp/slow.json" --json | grep step_time_s)
[ "$c" != "$a" ] || bad "a slower accelerator file did not change the step time"

# model show: dimensions, parameters, per-part bytes and FLOPs; --json from the library.
expect 0 "70.55 B" -- "$vp" model show llama3-70b
expect 0 "SwiGLU gate input" -- "$vp" model show llama3-70b --seq 8192 --tp 8 --sp
expect 0 "softmax output" -- "$vp" model show gpt2-124m --seq 1024 --mbs 4 --flash 0
# FlashAttention unless given (every framework a preset names runs it): no s x s matrix;
# vpipe's own GPT has none, and the flag is refused there
expect 0 "seq 1024, mbs 4, FlashAttention, recompute none" -- \
    "$vp" model show gpt2-124m --seq 1024 --mbs 4
"$vp" model show gpt2-124m --seq 1024 --mbs 4 >"$tmp/show-flash.txt"
grep -q "softmax output" "$tmp/show-flash.txt" && bad "FlashAttention, on unless given, kept the softmax"
expect 0 "seq 1024, mbs 4, FlashAttention, recompute none" -- \
    "$vp" model show gpt2-124m --seq 1024 --mbs 4 --flash
expect 0 "seq 32, mbs 1, recompute none" -- "$vp" model show vpipe:4,64,4,32
expect 2 "vpipe's own model has no tensor parallelism, FlashAttention or recomputation" -- \
    "$vp" model show vpipe:4,64,4,32 --flash 1
expect 2 "--flash expects an integer in [0, 1], got '2'" -- \
    "$vp" model show gpt2-124m --flash 2
"$vp" model show gpt2-124m --seq 1024 --mbs 2 --tp 2 --flash 0 --json >"$tmp/show.json"
expect 0 "" -- python3 - "$tmp/show.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s, b, h, a, t = 1024, 2, 768, 12, 2
layer = d["parts"]["layer"]
# Korthikanti et al., TP without sequence parallelism: sbh(10 + 24/t + 5as/(ht)).
want = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
assert abs(layer["act_bytes"] - want) < 1e-6 * want, (layer["act_bytes"], want)
assert abs(sum(x["bytes"] for x in layer["saved"] if x["keep"] != "B-W") - want) < 1e-6 * want
# Zero Bubble Table 1 at TP t: F = sbh(24h + 4s)/t.
f = s * b * h * (24 * h + 4 * s) / t
assert abs(layer["flops_f"] - f) < 1e-9 * f, (layer["flops_f"], f)
assert d["workload"] == {"seq": 1024, "mbs": 2, "tp": 2, "cp": 1, "ep": 1, "etp": 1,
                         "sp": False, "flash": False, "recompute": "none",
                         "fp8": "off"}, d["workload"]
PY

# ---- simulate --model: the JSON scripts read -------------------------------------------
"$vp" simulate v-half -p 8 -m 32 "${l70[@]}" --json >"$tmp/vhalf.json"
expect 0 "" -- python3 - "$tmp/vhalf.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("step_time_s", "samples_per_s_per_gpu", "tokens_per_s", "mfu", "memory_per_rank",
          "memory_max_bytes", "fits", "layers_per_stage", "makespan", "stages", "bubble"):
    assert k in d, k
assert d["family"] == "v-half" and d["p"] == 8 and d["tp"] == 8 and d["gpus"] == 64
assert len(d["memory_per_rank"]) == 8 and len(d["layers_per_stage"]) == 16
assert sum(d["layers_per_stage"]) == 80
items = ("params", "grads", "optimizer", "activations", "buffers", "workspace", "logits",
         "gathers")
beside = ("fragmentation", "context", "comm", "reserve")
for m in d["memory_per_rank"]:
    assert abs(sum(m[k] for k in items) - m["allocated"]) <= 8, m
    assert abs(m["allocated"] + m["fragmentation"] - m["reserved"]) <= 2, m
    assert abs(m["allocated"] + sum(m[k] for k in beside) - m["total"]) <= 8, m
    assert m["grads"] == 2 * m["params"] and m["optimizer"] == 6 * m["params"], m
assert d["memory_max_bytes"] == max(m["total"] for m in d["memory_per_rank"])
assert d["fits"] == (d["memory_max_bytes"] <= d["capacity_bytes"])
assert abs(d["makespan"] / 1e3 - d["makespan_s"]) < 1e-9 * d["makespan"]
assert abs(d["step_time_s"] - d["makespan_s"] - d["optimizer_s"] - d["dp_exposed_s"]) < 1e-9
assert abs(d["tokens_per_s"] - 32 * 8192 / d["step_time_s"]) < 1e-6 * d["tokens_per_s"]
assert 0.05 < d["mfu"] < 1
assert all(abs(a - m["activations"]) <= 1e-9 * a
           for a, m in zip(d["peak_memory_bytes"], d["memory_per_rank"]))
PY
expect 0 "memory per rank, GiB:" -- "$vp" simulate v-half -p 8 -m 32 "${l70[@]}"
# How far to trust it: the accuracy measured on the accelerator, or that none was.
expect 0 "expected error on h100-80gb: throughput 3.1% on average" -- \
    "$vp" simulate v-half -p 8 -m 32 "${l70[@]}"
expect 0 "expected error on b200: not measured" -- "$vp" compare -p 4 -m 8 --model llama3-8b --gpu b200
expect 0 "" -- python3 -c "
import json, sys
e = json.load(open(sys.argv[1]))['expected_error']
assert e['runs'] == 9 and 0 < e['step_time'] < e['step_time_worst'] < 0.2 and e['memory'] is None, e
assert e['kind'] is None, e  # a dense BF16 run: the accelerator's figure alone
" "$tmp/vhalf.json"
# a run of issue 25's kinds says what the published runs of its kinds measure too: the worst
# of them on average (FSDP's 12.4% above MoE's 10.8%), in the text and in the JSON
moe=(simulate 1f1b -p 1 -m 4 --model qwen3-30b-a3b --dp 8 --ep 8 --zero 3 --flash --seq 4096)
expect 0 "expected error of runs of its kind: throughput 12.4% on average, 34.9% at worst over 16 runs" -- \
    "$vp" "${moe[@]}"
expect 0 "(accuracy report: published FSDP runs, the worst of this run's kinds: MoE, FSDP)" -- \
    "$vp" "${moe[@]}"
expect 0 "expected error of runs of its kind: throughput 10.8%" -- \
    "$vp" compare -p 1 -m 4 --model qwen3-30b-a3b --dp 8 --ep 8 --zero 1 --flash --seq 4096
"$vp" "${moe[@]}" --json >"$tmp/moe-kind.json"
expect 0 "" -- python3 -c "
import json, sys
e = json.load(open(sys.argv[1]))['expected_error']
k = e['kind']
assert e['runs'] == 9 and k['runs'] == 16 and k['memory_runs'] == 8, e
assert e['step_time'] < k['step_time'] < k['step_time_worst'] and 'FSDP' in k['basis'], k
" "$tmp/moe-kind.json"
expect 0 "fits" -- "$vp" simulate v-half -p 8 -m 32 "${l70[@]}"
expect 0 "does NOT fit" -- "$vp" simulate 1f1b -p 8 -m 32 --model llama3-70b --seq 8192
# A run that fits with less room than the margin plan keeps (the memory error measured on
# the accelerator) says so: in the text, in the JSON, in compare's table.
tight=(-p 4 -m 16 --model llama2-13b --gpu a100-80gb --seq 3072 --flash --recompute selective)
expect 0 "fits, but tight: " -- "$vp" simulate 1f1b "${tight[@]}"
expect 0 "mean memory error measured on a100-80gb)" -- "$vp" simulate 1f1b "${tight[@]}"
"$vp" simulate 1f1b "${tight[@]}" --json >"$tmp/tight.json"
expect 0 "" -- python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
room = d['capacity_bytes'] - d['memory_max_bytes']
assert d['fits'] and d['tight'] and 0 < room < d['margin_bytes'], d
assert abs(d['margin_bytes'] - d['capacity_bytes'] * d['expected_error']['memory']) < 2, d
" "$tmp/tight.json"
expect 0 "  tight " -- "$vp" compare "${tight[@]}"

# With --model, --cost is measured ms per pass of a device's slice: 1F1B at p = 4, m = 8,
# F = B = W = 10 ms and no hop takes (m + p - 1) * 30 ms.
"$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --cost F=10,B=10,W=10,c=0 --json >"$tmp/cost.json"
expect 0 "" -- python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d['makespan_s'] - 0.33) < 1e-9, d['makespan_s']
assert all(st['f_ms'] == 10 for st in d['per_stage']), d['per_stage']" "$tmp/cost.json"

# --layers-per-stage is taken as given and printed; the options change what they should.
expect 0 "layers per stage: 2,10,10,10" -- \
    "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --layers-per-stage 2,10,10,10
tot() { "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --seq 4096 "$@" --json |
    python3 -c "import json,sys; d=json.load(sys.stdin); print(d['memory_max_bytes'])"; }
base=$(tot --flash 0)
[ "$(tot)" -lt "$base" ] || bad "FlashAttention, on unless given, does not lower the bytes"
base=$(tot)
for opt in "--recompute full" "--tp 2" "--tp 2 --sp" "--dp 4 --zero"; do
    # shellcheck disable=SC2086
    less=$(tot $opt)
    [ "$less" -lt "$base" ] || bad "$opt does not lower the largest rank's bytes ($less >= $base)"
done
[ "$(tot --mbs 2)" -gt "$base" ] || bad "--mbs 2 does not raise the largest rank's bytes"

# ---- compare, render, schedule with --model ---------------------------------------------
"$vp" compare -p 8 -m 32 "${l70[@]}" >"$tmp/compare.txt"
for f in $("$vp" list | awk '/^[a-z]/ {print $1}'); do
    grep -q "^$f " "$tmp/compare.txt" || bad "compare --model misses $f"
done
expect 0 "GiB per rank" -- cat "$tmp/compare.txt"
# a row lists 8 ranks each (all of them), 32 ranks as the first 8 and the last
expect 0 "" -- awk '$1 == "1f1b" && NF == 6 + 8 {ok = 1} END {exit !ok}' "$tmp/compare.txt"
"$vp" compare -p 32 -m 64 --model llama3-70b --tp 8 >"$tmp/compare32.txt"
expect 0 "" -- awk '$1 == "1f1b" && NF == 6 + 8 + 2 && $(NF - 1) == "..." {ok = 1}
    END {exit !ok}' "$tmp/compare32.txt"
"$vp" compare -p 8 -m 32 "${l70[@]}" --json >"$tmp/compare.json"
expect 0 "" -- python3 - "$tmp/compare.json" "$tmp/vhalf.json" <<'PY'
import json, sys
rows = {r["family"]: r for r in json.load(open(sys.argv[1]))}
one = json.load(open(sys.argv[2]))
assert rows["v-half"]["step_time_s"] == one["step_time_s"]
assert rows["v-half"]["memory_per_rank"] == one["memory_per_rank"]
# V-Half holds less than 1F1B's largest rank, V-Min less than V-Half.
act = {f: max(m["activations"] for m in r["memory_per_rank"]) for f, r in rows.items()}
assert act["v-min"] < act["v-half"] < act["1f1b"], act
PY
expect 0 "d0 |" -- "$vp" render v-half -p 4 -m 8 --model llama3-8b --seq 4096 --ascii --no-color
expect 0 "" -- "$vp" render zb-v -p 4 -m 8 --model llama3-8b --svg "$tmp/zbv.svg"
expect 0 "<svg" -- head -c 400 "$tmp/zbv.svg"
expect 0 "" -- "$vp" compare -p 4 -m 8 --model llama3-8b --svg "$tmp/gallery.svg"
expect 0 "layers per stage:" -- \
    "$vp" schedule zb-v -p 4 -m 8 --model llama3-8b --format torch-csv -o "$tmp/zbv.csv"
expect 0 "" -- "$vp" validate "$tmp/zbv.csv"
# A schedule file is priced too (its p and m come from the file).
"$vp" schedule v-min -p 4 -m 8 -o "$tmp/vmin.json"
expect 0 '"family": "v-min"' -- "$vp" simulate "$tmp/vmin.json" --model llama3-8b --json

# ---- bad input ------------------------------------------------------------------------
printf '{"hidden_size": 64,' >"$tmp/broken.json"
printf '{"hidden_size": 64, "num_hidden_layers": 2}' >"$tmp/incomplete.json"
printf '{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 5, "intermediate_size": 256, "vocab_size": 100, "max_position_embeddings": 64, "hidden_act": "silu"}' >"$tmp/heads.json"
expect 2 "unknown model 'nope' (known: gpt2-124m" -- "$vp" simulate 1f1b -p 4 -m 8 --model nope
expect 2 "unknown model 'qwen3-30b-a3' (did you mean 'qwen3-30b-a3b'? known: gpt2-124m" -- \
    "$vp" plan --model qwen3-30b-a3 --gpu h100-80gb --gpus 64 --global-batch 64
expect 2 "unknown accelerator 'h200' (did you mean 'h200-141gb'? known: a100-80gb" -- \
    "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --gpu h200
expect 3 "broken.json:1:" -- "$vp" simulate 1f1b -p 4 -m 8 --model "$tmp/broken.json"
expect 3 'missing key "num_attention_heads"' -- \
    "$vp" simulate 1f1b -p 4 -m 8 --model "$tmp/incomplete.json"
expect 3 "5 heads do not divide hidden_size 64" -- "$vp" simulate 1f1b -p 4 -m 8 --model "$tmp/heads.json"
expect 3 "No such file" -- "$vp" simulate 1f1b -p 4 -m 8 --model "$tmp/missing.json"
expect 2 "must be divisible by TP 3" -- "$vp" simulate 1f1b -p 4 -m 8 --model llama3-70b --tp 3
expect 2 "12 layers cannot fill 16 stages" -- \
    "$vp" simulate 1f1b -p 16 -m 32 --model gpt2-124m
expect 2 "longer than model llama3-70b's 8192 positions" -- \
    "$vp" simulate 1f1b -p 4 -m 8 --model llama3-70b --seq 9000
expect 2 "unknown accelerator 'nope'" -- "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --gpu nope
expect 3 'unknown key "peak"' -- bash -c "echo '{\"base\": \"a100-80gb\", \"peak\": 1}' >$tmp/g.json;
    $vp simulate 1f1b -p 4 -m 8 --model llama3-8b --gpu $tmp/g.json"
expect 2 "--tp needs --model" -- "$vp" simulate 1f1b -p 4 -m 8 --tp 2
expect 2 "--gpu needs --model" -- "$vp" compare -p 4 -m 8 --gpu a100-80gb
expect 2 "--memory-model does not apply" -- \
    "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --memory-model zb:0.3
expect 2 "2 values for 4 stages" -- \
    "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --layers-per-stage 16,16
expect 2 "add up to 31" -- "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --layers-per-stage 1,10,10,10
expect 2 "expects counts like" -- "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --layers-per-stage 1,,2
expect 2 "expected vpipe:LAYERS,WIDTH,HEADS,SEQ" -- "$vp" simulate 1f1b -p 4 -m 8 --model vpipe:2,32
expect 2 "recompute is one of" -- "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --recompute some
expect 2 "no tensor parallelism" -- "$vp" simulate 1f1b -p 2 -m 4 --model vpipe:4,32,2,16 --tp 2
expect 2 "usage: vpipe model list" -- "$vp" model
expect 2 "usage: vpipe model list" -- "$vp" model list extra
expect 2 "unexpected argument" -- "$vp" model show a b
expect 2 "unknown model 'nope'" -- "$vp" model show nope

# ---- vpipe's own model: priced activations = what its runtime measures -----------------
. "$src/tests/cli/own_model.bash"
own_model_check '
import json, sys
t, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
got = [m["activations"] for m in p["memory_per_rank"]]
assert got == t["peak_activation_bytes"], (sys.argv[3:], got, t["peak_activation_bytes"])
starts = t["layer_start"]
routes = [b - a for a, b in zip(starts, starts[1:])]
assert p["layers_per_stage"] == routes[:len(p["layers_per_stage"])], (p["layers_per_stage"], starts)
'
# FlashAttention's kernels: FlashAttention-2 slower than the fused kernels on Hopper, the
# same on Ampere (its rates are FlashAttention-2's), refused with FlashAttention off
for g in h100-80gb a100-80gb; do
    for k in fused fa2; do
        "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --seq 8192 --gpu "$g" --flash \
            --attn-kernel "$k" --json >"$tmp/attn-$g-$k.json"
    done
done
expect 0 "" -- python3 - "$tmp" <<'PY'
import json, sys
t = {(g, k): json.load(open(f"{sys.argv[1]}/attn-{g}-{k}.json"))["step_time_s"]
     for g in ("h100-80gb", "a100-80gb") for k in ("fused", "fa2")}
assert t["h100-80gb", "fa2"] > 1.05 * t["h100-80gb", "fused"], t
assert t["a100-80gb", "fa2"] == t["a100-80gb", "fused"], t
PY
expect 0 "FlashAttention-2" -- "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --flash \
    --attn-kernel fa2
# --framework torchtitan: its per-op selective recomputation, where it is priced
expect 0 "FC2 output (the per-op policy's)" -- \
    "$vp" model show llama3-8b --seq 8192 --recompute selective --framework torchtitan
expect 0 '"framework": "torchtitan"' -- \
    "$vp" model show llama3-8b --seq 8192 --recompute selective --framework torchtitan --json
expect 0 "wrote" -- "$vp" plan --model llama3-8b --gpus 8 --global-batch 16 --seq 8192 --flash \
    --framework torchtitan --recompute selective --emit torchtitan "$tmp/tt-op"
expect 0 'selective_ac_option = "op"' -- cat "$tmp/tt-op/job.toml"
grep -q "Megatron-LM's way" "$tmp/tt-op/job.toml" && bad "a torchtitan-priced plan says it was priced Megatron-LM's way"
expect 2 "model qwen3-30b-a3b has mixture-of-experts layers: use --recompute full or none" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model qwen3-30b-a3b --recompute selective --framework torchtitan
expect 2 "--framework is one of megatron, torchtitan, got 'pytorch'" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --framework pytorch
expect 2 "--emit megatron writes Megatron-LM's options: it prices --framework megatron" -- \
    "$vp" plan --model llama3-8b --gpus 8 --global-batch 16 --framework torchtitan --emit megatron
# --eager: torchtitan without torch.compile, slower than the fused kernels it prices by default,
# said in the report and in the exported job; refused where its kernels are not torchtitan's
tt=(simulate 1f1b -p 1 -m 1 --model llama3-8b --gpu h100-80gb --seq 8192 --mbs 2 --dp 8 --zero 3
    --flash --recompute selective --framework torchtitan --json)
"$vp" "${tt[@]}" >"$tmp/tt-fused.json" && "$vp" "${tt[@]}" --eager >"$tmp/tt-eager.json" ||
    bad "simulate --framework torchtitan [--eager] failed"
expect 0 "" -- python3 -c "
import json, sys
fused, eager = (json.load(open(p)) for p in sys.argv[1:3])
assert eager['step_time_s'] > 1.1 * fused['step_time_s'], (fused['step_time_s'], eager['step_time_s'])
assert eager['memory_max_bytes'] == fused['memory_max_bytes']
" "$tmp/tt-fused.json" "$tmp/tt-eager.json"
expect 0 "recompute selective (torchtitan, eager)" -- "$vp" "${tt[@]::${#tt[@]}-1}" --eager
expect 0 "wrote" -- "$vp" plan --model llama3-8b --gpus 8 --global-batch 16 --seq 8192 --flash \
    --framework torchtitan --eager --emit torchtitan "$tmp/tt-eager"
expect 0 "vpipe priced eager kernels (torch.compile off, torchtitan's default)" -- \
    cat "$tmp/tt-eager/job.toml"
expect 2 "eager kernels are torchtitan's without torch.compile (framework torchtitan); megatron runs" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --eager
expect 2 "torchtitan's eager kernels are priced for its Llama layers" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model qwen3-30b-a3b --framework torchtitan --eager
expect 2 "--eager does not change what model show prints" -- \
    "$vp" model show llama3-8b --framework torchtitan --eager
# --recompute-modules: Megatron-LM's selective recomputation, module by module
expect 0 "recompute selective (layernorm,mla_up_proj)" -- \
    "$vp" model show deepseek-v3 --seq 4096 --recompute selective --recompute-modules layernorm,mla_up_proj
expect 2 "--recompute-modules chooses what selective recomputation reruns: it needs --recompute selective" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --recompute-modules layernorm
expect 2 "--recompute-modules: unknown recompute module 'norm'" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --recompute selective --recompute-modules norm
expect 2 "recompute module mla_up_proj: model llama3-8b has no latent attention" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --recompute selective --recompute-modules mla_up_proj
expect 2 "they need recompute selective under Megatron-LM (got selective under torchtitan)" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --recompute selective --recompute-modules layernorm \
    --framework torchtitan
# the README's DeepSeek-V3 line: its published layout, its own recompute modules
expect 0 "why: v-half at DP 128, TP 1, PP 16, EP 64, ETP 1, FP8 blockwise, recompute modules layernorm,mla_up_proj,moe_act, mbs 1 (m 120, recompute selective)" -- \
    "$vp" plan --model deepseek-v3 --gpu h100-80gb --gpus 2048 --pp 16 --ep 64 --tp 1 --seq 4096 \
    --global-batch 15360 --fp8 blockwise --flash --zero 1 --recompute selective \
    --recompute-modules layernorm,mla_up_proj,moe_act
expect 0 '"recompute_modules": "layernorm,moe_act"' -- \
    "$vp" plan --model qwen3-30b-a3b --gpus 16 --global-batch 64 --ep 8 --flash --recompute selective \
    --recompute-modules layernorm,moe_act --json
expect 0 "--recompute-granularity selective --recompute-modules layernorm moe_act" -- \
    "$vp" plan --model qwen3-30b-a3b --gpus 16 --global-batch 64 --ep 8 --flash --recompute selective \
    --recompute-modules layernorm,moe_act --emit megatron
# --optimizer-dtype bf16: the 16-bit weights are the master, the moments bf16 (2 + 4 bytes a
# parameter of the shard where fp32 keeps 4 + 8)
"$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --dp 8 --zero 1 --json >"$tmp/opt32.json"
"$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --dp 8 --zero 1 --optimizer-dtype bf16 --json \
    >"$tmp/opt16.json"
# --optimizer-dtype bf16-moments: fp32 master weights, bf16 moments (4 + 4 bytes), Megatron-LM's
# precision-aware optimizer
"$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --dp 8 --zero 1 --optimizer-dtype bf16-moments \
    --json >"$tmp/optm.json"
expect 0 "" -- python3 - "$tmp/opt32.json" "$tmp/opt16.json" "$tmp/optm.json" <<'PY'
import json, sys
a, b, c = (json.load(open(p))["memory_per_rank"][0] for p in sys.argv[1:])
assert abs(b["optimizer"] / a["optimizer"] - 4 / 12) < 1e-9, (a["optimizer"], b["optimizer"])
assert abs(c["optimizer"] / a["optimizer"] - 8 / 12) < 1e-9, (a["optimizer"], c["optimizer"])
assert a["params"] == b["params"] == c["params"] and a["grads"] == b["grads"] == c["grads"]
PY
expect 0 ", bf16 moments  (8 GPUs)" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --dp 8 --zero 1 --optimizer-dtype bf16-moments
expect 2 "--optimizer-dtype bf16 keeps bf16 optimizer states: vpipe:4,64,4,32 trains in fp32" -- \
    "$vp" simulate 1f1b -p 2 -m 4 --model vpipe:4,64,4,32 --optimizer-dtype bf16
expect 2 "--optimizer-dtype bf16-moments keeps bf16 optimizer states: vpipe:4,64,4,32 trains" -- \
    "$vp" simulate 1f1b -p 2 -m 4 --model vpipe:4,64,4,32 --optimizer-dtype bf16-moments
# Megatron-LM's options (megatron/training/arguments.py: --exp-avg-dtype and --exp-avg-sq-dtype
# take fp32, fp16, bf16 or fp8 with --use-precision-aware-optimizer); torchtitan keeps fp32 moments
expect 0 "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16" -- \
    "$vp" plan --model llama3-8b --gpus 8 --global-batch 16 --optimizer-dtype bf16-moments \
    --emit megatron
"$vp" plan --model llama3-8b --gpus 8 --global-batch 16 --optimizer-dtype bf16-moments \
    --emit torchtitan "$tmp/tt-moments" >/dev/null
# the plan's first line names the precision and the framework it priced
expect 0 "global batch 16, FlashAttention, the ZeRO stage searched, 16-bit gradients, bf16 moments, as torchtitan runs it" -- \
    "$vp" plan --model llama3-8b --gpus 8 --global-batch 16 --optimizer-dtype bf16-moments \
    --grad-bytes 2 --framework torchtitan
expect 0 "# vpipe priced bf16 moments; torchtitan's FSDP2 keeps them fp32" -- \
    cat "$tmp/tt-moments/job.toml"
# vpipe's own model trains in fp32 (no master copy, fp32 moments): no bf16 note in its export
"$vp" plan --model vpipe:4,64,4,32 --gpus 2 --global-batch 4 --emit megatron >"$tmp/own-meg.txt"
grep -q "bf16" "$tmp/own-meg.txt" && bad "vpipe's fp32 model exported with a bf16 optimizer note"
expect 0 "# vpipe priced bf16 optimizer states (the 16-bit weights as the master)" -- \
    "$vp" plan --model llama3-8b --gpus 8 --global-batch 16 --optimizer-dtype bf16 --emit megatron
expect 2 "--attn-kernel picks FlashAttention's kernels, and FlashAttention is off here (--flash 0, or vpipe's own GPT)" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --flash 0 --attn-kernel fa2
expect 2 "--attn-kernel picks FlashAttention's kernels, and FlashAttention is off here" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model vpipe:4,64,4,32 --attn-kernel fa2
expect 0 "FlashAttention-2" -- "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --attn-kernel fa2
# --emit megatron names the attention kernels priced (Megatron-LM's --attention-backend:
# Transformer Engine's cuDNN fused attention, its FlashAttention backend, or unfused)
for pair in ":fused" "--attn-kernel fa2:flash" "--flash 0:unfused"; do
    # shellcheck disable=SC2086
    expect 0 " --attention-backend ${pair#*:}" -- "$vp" plan --model llama3-8b --gpus 8 \
        --global-batch 16 ${pair%%:*} --emit megatron
done
expect 2 "--attn-kernel is one of fused, fa2, got 'fa3'" -- \
    "$vp" simulate 1f1b -p 1 -m 2 --model llama3-8b --flash --attn-kernel fa3
finish
