# Profile-driven planning: vpipe profile writes costs that simulate/compare/train take;
# --schedule auto --memory X picks a schedule whose measured peak activation bytes stay
# within X of 1F1B's; a budget nothing reaches and a profile of another model are refused;
# --emulate runs and reports its prediction. Usage: auto.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model="--layers 8 --width 64 --heads 2 --seq 32 --microbatch 2"
run="-p 4 -m 8 --steps 2 $model --data /usr/share/common-licenses/GPL-3 --json"
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

expect 0 "" -- "$vp" profile $model --reps 2 -o "$tmp/prof.json"
expect 0 "vpipe-profile" -- cat "$tmp/prof.json"
expect 0 "peak(bytes)" -- "$vp" simulate v-half -p 4 -m 8 --cost-file "$tmp/prof.json"
expect 0 "zb-v" -- "$vp" compare -p 4 -m 8 --cost-file "$tmp/prof.json"

ref=$("$vp" train --schedule 1f1b $run --cost-file "$tmp/prof.json" 2>/dev/null | field 'max(d["peak_activation_bytes"])')
# below V-Min's third of 1F1B (0.3) only 1F1B with full recomputation and the greedy V
# search under the budget fit (which is faster depends on the measured costs); below that
# nothing
for budget in 0.3 0.6 0.8; do
    out=$("$vp" train --schedule auto --memory $budget $run --cost-file "$tmp/prof.json" 2>/dev/null)
    peak=$(echo "$out" | field 'max(d["peak_activation_bytes"])')
    expect 0 "" -- python3 -c "import sys; sys.exit(not $peak <= $budget * $ref)"
    expect 0 "" -- python3 -c "import sys; sys.exit(not $peak > 0)"
    if [ $budget = 0.3 ]; then
        chosen=$(echo "$out" | field 'd["schedule"]')
        expect 0 "" -- python3 -c "import sys; sys.exit(sys.argv[1] not in ('1f1b-r', 'v-greedy'))" "$chosen"
    fi
done
expect 0 "auto: chose" -- "$vp" train --schedule auto --memory 0.6 $run --cost-file "$tmp/prof.json"
expect 2 "smallest peak is" -- "$vp" train --schedule auto --memory 0.1 $run --cost-file "$tmp/prof.json"
expect 2 "needs --memory" -- "$vp" train --schedule auto $run --cost-file "$tmp/prof.json"
"$vp" profile --layers 4 --width 64 --heads 2 --seq 32 --microbatch 2 --reps 1 -o "$tmp/other.json" 2>/dev/null
expect 2 "measured for another model" -- "$vp" train --schedule v-half $run --cost-file "$tmp/other.json"
expect 3 "" -- "$vp" simulate 1f1b -p 2 -m 2 --cost-file "$src/README.md"

# Emulation: no model, real schedule and transport, a prediction to compare with.
out=$("$vp" train --emulate --schedule v-half $run --cost-file "$tmp/prof.json" 2>/dev/null)
expect 0 "" -- python3 -c "import json,sys; d=json.loads(sys.argv[1]); sys.exit(not (d['predicted_step_ms'] > 0 and d['step_ms'] > 0))" "$out"
expect 0 "emulated" -- "$vp" train --emulate --schedule v-half ${run% --json} --cost-file "$tmp/prof.json"
expect 2 "no model state" -- "$vp" train --emulate --schedule v-half $run --cost-file "$tmp/prof.json" --checkpoint "$tmp/ck"
[ -e "$tmp/ck" ] && bad "a refused --emulate run created its checkpoint directory"
finish
