# train --split and --layers-per-stage: the split is printed at start and used; every
# category of each rank's memory is printed beside its prediction, and --json carries
# memory_per_rank and predicted_memory_per_rank with equal values; bad splits are refused.
# Usage: split.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model="--layers 16 --width 64 --heads 2 --seq 32 --microbatch 2 --data /usr/share/common-licenses/GPL-3"
run="--schedule v-min -p 4 -m 8 --steps 1 $model"

expect 0 "split (memory): layers per stage 0 1 1 2 2 3 3 4" -- "$vp" train $run --split memory
expect 0 "split (even): layers per stage 2 2 2 2 2 2 2 2" -- "$vp" train $run
expect 0 "split (--layers-per-stage): layers per stage 1 1 3 3 2 2 2 2" -- \
    "$vp" train $run --layers-per-stage 1,1,3,3,2,2,2,2
expect 0 "peak MiB per rank, measured / predicted" -- "$vp" train $run --split time

# the JSON: every rank, every category, measured = predicted, with the split and recomputation
"$vp" train $run --split memory --recompute full --json >"$tmp/run.json" 2>"$tmp/err"
expect 0 "split (memory)" -- cat "$tmp/err"
expect 0 "ok" -- python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
got, want = d["memory_per_rank"], d["predicted_memory_per_rank"]
keys = ["params", "grads", "optimizer", "activations", "in_flight", "workspace"]
assert len(got) == len(want) == 4, (got, want)
for g, w in zip(got, want):
    for k in keys:
        assert g[k] == w[k], (k, g, w)
    assert g["params"] > 0 and g["activations"] > 0 and g["grads"] == g["params"]
    assert g["optimizer"] == 2 * g["params"]
assert d["layer_start"] == [0, 0, 1, 2, 4, 6, 9, 12, 16], d["layer_start"]
assert [r["activations"] for r in got] == d["peak_activation_bytes"]
print("ok")' "$tmp/run.json"

expect 2 "gives 3 stages, the schedule's routes have 8" -- "$vp" train $run --layers-per-stage 4,4,8
expect 2 "stage 1 of the layer split holds 0 layers" -- "$vp" train $run --layers-per-stage 2,0,2,2,2,2,2,4
expect 2 "add up" -- "$vp" train $run --layers-per-stage 2,2,2,2,2,2,2,3
expect 2 "not both" -- "$vp" train $run --split memory --layers-per-stage 2,2,2,2,2,2,2,2
expect 2 "expects counts like 3,4,4,3" -- "$vp" train $run --layers-per-stage 2,,2
expect 2 "pipelined run" -- "$vp" train -p 1 --steps 1 --split memory
expect 2 "--split" -- "$vp" train $run --split bytes
finish
