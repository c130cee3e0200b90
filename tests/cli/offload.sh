# Offload on the command line: --offload and --offload-policy on the schedule commands and
# train, O and L in JSON and pictures, the validator's refusals, the PyTorch CSV's refusal,
# the planners' lever, real-model reports with host memory and the copy engine, and an
# offloading run that trains bit-identically to the same run without, its device and host
# bytes as predicted. Usage: offload.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

expect 0 "c0 |" -- "$vp" render 1f1b -p 4 -m 8 --offload 1 --cost O=0.5 --ascii --width 120
expect 0 "host peak per device: d0 4 d1 3 d2 1 d3 0" -- "$vp" render 1f1b -p 4 -m 8 --offload 1 --cost O=0.5 --ascii
expect 0 '"offload_stall"' -- "$vp" simulate v-half -p 4 -m 8 --offload 0.5 --json
expect 0 '"O": 0.5' -- "$vp" simulate 1f1b -p 4 -m 8 --offload 1 --cost O=0.5 --json
expect 0 "copy engine" -- "$vp" render zb-h1 -p 4 -m 8 --offload 0.5 --trace -
expect 0 "copy to host" -- "$vp" render v-half -p 4 -m 8 --offload 0.5 --svg -
expect 2 "--offload '1.5': column 1: expected a share in [0, 1]" -- "$vp" simulate 1f1b -p 4 -m 8 --offload 1.5
expect 2 "4 stages" -- "$vp" simulate 1f1b -p 4 -m 8 --offload 0,1
expect 2 "--offload-policy needs --offload" -- "$vp" simulate 1f1b -p 4 -m 8 --offload-policy selective
expect 2 "no activation offload" -- "$vp" schedule 1f1b -p 4 -m 8 --offload 1 --format torch-csv

# the schedule file carries O, L and the shares; the validator refuses what cannot run
"$vp" schedule 1f1b -p 4 -m 8 --offload 1 -o "$tmp/off.json"
expect 0 "" -- "$vp" validate "$tmp/off.json"
expect 0 '"offload": [' -- cat "$tmp/off.json"
python3 - "$tmp/off.json" "$tmp/late.json" "$tmp/freed.json" "$tmp/host.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ops = d["devices"][0]
late = json.loads(json.dumps(d))
o = late["devices"][0]
i, j = o.index(["L", 0, 0]), o.index(["BW", 0, 0])
o[i], o[j] = o[j], o[i]
json.dump(late, open(sys.argv[2], "w"))
freed = json.loads(json.dumps(d))
o = freed["devices"][0]
o.remove(["O", 0, 1])
o.remove(["L", 0, 1])
o.insert(o.index(["BW", 0, 1]) + 1, ["O", 0, 1])
json.dump(freed, open(sys.argv[3], "w"))
d["host_limit"] = 2
json.dump(d, open(sys.argv[4], "w"))
PY
expect 3 "backward comes before its reload" -- "$vp" validate "$tmp/late.json"
expect 3 "offload of an activation its backward already freed" -- "$vp" validate "$tmp/freed.json"
expect 3 "over the limit 2" -- "$vp" validate "$tmp/host.json"
expect 0 "peak memory 4 units" -- "$vp" simulate "$tmp/off.json" --offload none
expect 0 "peak memory 2 units" -- "$vp" simulate "$tmp/off.json"

# the planners pull the lever where it buys time
expect 0 "chosen: v-half offload 1 uniform" -- "$vp" plan -p 4 -m 16 --memory 0.5 --cost O=0.5 --offload auto
expect 0 "chosen: v-min" -- "$vp" plan -p 4 -m 16 --memory 0.5 --cost O=0.5
expect 2 "auto (the search offloads" -- "$vp" plan --model llama3-8b --gpus 8 --global-batch 8 --offload 0.5

# real models: host memory per rank, the copy engine's occupancy, the host link
out=$("$vp" simulate 1f1b -p 8 -m 16 --model llama3-70b --seq 8192 --tp 8 --sp --flash --offload 1)
grep -q "busiest copy engine" <<<"$out" || bad "no copy engine line: $out"
grep -q " host$" <<<"$(grep '^rank' <<<"$out")" || bad "no host column: $out"
json=$("$vp" simulate 1f1b -p 8 -m 16 --model llama3-70b --seq 8192 --tp 8 --sp --flash --offload 1 --json)
plain=$("$vp" simulate 1f1b -p 8 -m 16 --model llama3-70b --seq 8192 --tp 8 --sp --flash --json)
[ "$(echo "$json" | field 'd["memory_per_rank"][0]["activations"] < '"$(echo "$plain" | field 'd["memory_per_rank"][0]["activations"]')")" = True ] ||
    bad "offloading 1 did not lower rank 0's activations"
[ "$(echo "$json" | field 'd["step_time_s"]')" = "$(echo "$plain" | field 'd["step_time_s"]')" ] ||
    bad "offloading what hides changed the step time"
expect 0 "host GB/s" -- "$vp" model list
echo '{"base": "h100-80gb", "host_gb_s": 0}' >"$tmp/nolink.json"
expect 2 "no host link" -- "$vp" simulate 1f1b -p 4 -m 8 --model llama3-8b --gpu "$tmp/nolink.json" --offload 1

# training: the same bits with and without offload, device and host bytes as predicted
run="-p 4 -m 8 --steps 2 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --data /usr/share/common-licenses/GPL-3 --json"
# the largest rank's activation bytes, measured and predicted
acts='" ".join(str(max(r["activations"] for r in d[k])) for k in ("memory_per_rank", "predicted_memory_per_rank"))'
for family in 1f1b v-half; do
    base=$("$vp" train --schedule $family $run 2>/dev/null)
    plain=$(echo "$base" | field 'd["param_digest"]')
    for off in 1 0.5; do
        out=$("$vp" train --schedule $family --offload $off $run 2>/dev/null)
        [ -n "$plain" ] && [ "$(echo "$out" | field 'd["param_digest"]')" = "$plain" ] ||
            bad "$family --offload $off: digest differs from $plain"
        read -r m0 p0 <<<"$(echo "$base" | field "$acts")"
        read -r m1 p1 <<<"$(echo "$out" | field "$acts")"
        # the activation peak drops, by the predicted amount
        python3 -c "import sys; m0, p0, m1, p1 = map(float, sys.argv[1:]); sys.exit(not (m1 < m0 and m0 - m1 == p0 - p1))" "$m0" "$p0" "$m1" "$p1" ||
            bad "$family --offload $off: activation peak $m0 -> $m1, predicted $p0 -> $p1"
        [ "$(echo "$out" | field 'd["memory_per_rank"] == d["predicted_memory_per_rank"]')" = True ] ||
            bad "$family --offload $off: measured bytes differ from predicted"
        [ "$(echo "$out" | field 'd["memory_per_rank"][0]["host"] > 0')" = True ] ||
            bad "$family --offload $off: nothing on rank 0's host"
    done
done
# with vocabulary parallelism (the shards' passes beside O and L): the same bits, bytes as
# predicted (a vocabulary-parallel last stage keeps no logits or targets to offload)
plain=$("$vp" train --schedule 1f1b --vocab-parallel $run 2>/dev/null | field 'd["param_digest"]')
out=$("$vp" train --schedule 1f1b --vocab-parallel --offload 1 $run 2>/dev/null)
[ -n "$plain" ] && [ "$(echo "$out" | field 'd["param_digest"]')" = "$plain" ] ||
    bad "1f1b --vocab-parallel --offload 1: digest differs from $plain"
[ "$(echo "$out" | field 'd["memory_per_rank"] == d["predicted_memory_per_rank"] and max(r["host"] for r in d["memory_per_rank"]) > 0')" = True ] ||
    bad "1f1b --vocab-parallel --offload 1: bytes not as predicted, or nothing on the host"
expect 2 "single-rank reference" -- "$vp" train -p 1 --steps 1 --offload 1
for cmd in schedule simulate compare render plan train; do
    n=$("$vp" $cmd --help | grep -c -- '^  --offload ')
    [ "$n" = 1 ] || bad "vpipe $cmd --help lists --offload $n times"
done
finish
