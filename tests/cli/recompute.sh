# Recomputation on the command line: --recompute on the schedule commands and train, the
# 1f1b-r family, R in JSON and pictures, the PyTorch CSV's refusal, and a recomputing run
# that trains bit-identically to the same run without. Usage: recompute.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

expect 0 "1f1b-r" -- "$vp" list
expect 0 "recompute full" -- "$vp" simulate 1f1b -p 4 -m 8 --recompute full
expect 0 "peak memory 1.0687 units" -- "$vp" simulate 1f1b-r -p 4 -m 8
expect 0 '"recompute": "selective"' -- "$vp" simulate v-half -p 4 -m 8 --recompute selective --json
expect 0 '"R": 0.5' -- "$vp" simulate 1f1b -p 4 -m 8 --recompute full --cost R=0.5 --json
expect 2 "unknown recomputation 'half'" -- "$vp" simulate 1f1b -p 4 -m 8 --recompute half
expect 0 "1f1b-r" -- "$vp" compare -p 4 -m 8
expect 0 "chosen: 1f1b-r" -- "$vp" plan -p 8 -m 32 --memory 0.2
expect 0 "R recompute" -- "$vp" render 1f1b -p 2 -m 2 --ascii --recompute full
expect 0 '"recompute": "full"' -- "$vp" schedule zb-h1 -p 4 -m 8 --recompute full
"$vp" schedule v-min -p 4 -m 8 --recompute selective -o "$tmp/vmin-r.json"
expect 0 "" -- "$vp" validate "$tmp/vmin-r.json"
expect 0 "recompute selective" -- "$vp" simulate "$tmp/vmin-r.json"
expect 2 "activation_checkpoint.mode" -- "$vp" schedule 1f1b-r -p 4 -m 8 --format torch-csv
"$vp" schedule v-min -p 4 -m 8 -o "$tmp/vmin.json"
expect 0 "R recompute" -- "$vp" render "$tmp/vmin.json" --ascii --recompute full

# a recomputing run gives the same bits as the run without; bad combinations are refused
run="-p 2 -m 4 --steps 2 --layers 4 --width 32 --heads 2 --seq 16 --microbatch 2 --data /usr/share/common-licenses/GPL-3 --json"
plain=$("$vp" train --schedule zb-h1 $run 2>/dev/null | field 'd["param_digest"]')
for mode in full selective; do
    out=$("$vp" train --schedule zb-h1 --recompute $mode $run 2>/dev/null)
    got=$(echo "$out" | field 'd["param_digest"]')
    [ -n "$plain" ] && [ "$got" = "$plain" ] || bad "zb-h1 --recompute $mode: digest $got, without $plain"
    [ "$(echo "$out" | field 'd["recompute"]')" = "$mode" ] || bad "--recompute $mode not reported"
done
expect 2 "single-rank reference" -- "$vp" train -p 1 --steps 1 --recompute full
expect 2 "1f1b-r" -- "$vp" train --schedule auto --memory 0.5 -p 2 --recompute full
finish
