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
expect 2 "--recompute is one of none, selective, full, got 'half'" -- "$vp" simulate 1f1b -p 4 -m 8 --recompute half
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

# one --recompute on every command; with --model it is priced once: Megatron-style models
# recompute inside B (no R passes), vpipe's own model in R passes, and a schedule that has
# R passes prices the same whether the workload also says full
for cmd in schedule simulate compare render plan train model; do
    n=$("$vp" $cmd --help | grep -c -- '^  --recompute ')
    [ "$n" = 1 ] || bad "vpipe $cmd --help lists --recompute $n times"
done
real="--model zb-1.5b --gpu a100-80gb --seq 1024 -p 4 -m 8 --json"
inside=$("$vp" simulate 1f1b --recompute full $real)
[ "$(echo "$inside" | field 'd["recompute"]')" = none ] || bad "--model zb-1.5b --recompute full built R passes"
plain=$("$vp" simulate 1f1b $real | field 'd["memory_max_bytes"]')
[ "$(echo "$inside" | field 'd["memory_max_bytes"] < '"$plain")" = True ] ||
    bad "--model zb-1.5b --recompute full saved no memory inside B"
a=$("$vp" simulate 1f1b-r $real | field '(d["makespan_s"], d["memory_max_bytes"])')
b=$("$vp" simulate 1f1b-r --recompute full $real | field '(d["makespan_s"], d["memory_max_bytes"])')
[ -n "$a" ] && [ "$a" = "$b" ] || bad "1f1b-r priced $a with workload none, $b with full"
expect 2 "priced once" -- "$vp" simulate 1f1b-r --recompute selective $real
own=$("$vp" simulate 1f1b --model vpipe:8,32,2,16 --mbs 2 -p 4 -m 8 --recompute full --json)
[ "$(echo "$own" | field 'd["recompute"]')" = full ] || bad "vpipe:... --recompute full: no R passes"
expect 2 "only in a schedule's R passes" -- "$vp" model show vpipe:8,32,2,16 --recompute full
finish
