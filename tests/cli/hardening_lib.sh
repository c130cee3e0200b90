#!/usr/bin/env bash
# The library side of the hardening issue, seen from the command line: behaviour other
# branches land (duplicate and non-finite costs in vp_costs_parse; a finished run's
# --resume; the data length checked up front in pipelined runs; the real op of an
# injected stall; --data of a device). Registered DISABLED in tests/CMakeLists.txt until
# they are merged; the lead enables it then.
# Usage: hardening_lib.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
text=/usr/share/common-licenses/GPL-3
model=(--layers 2 --width 32 --heads 2 --seq 16 --microbatch 2)

# --cost: a key given twice is refused (not the last one silently taken); costs whose
# results cannot be finite are refused as every other bad --cost value is (exit 2, issue
# 27 item 8), for simulate and for plan
expect 2 "--cost 'F=1,F=2'" -- "$vp" simulate 1f1b -p 4 -m 8 --cost F=1,F=2
expect 2 "over 1e+12" -- "$vp" simulate 1f1b -p 4 -m 8 --cost F=1e308
expect 2 "over 1e+12" -- "$vp" plan -p 4 -m 8 --memory 0.5 --cost F=1e308
# a tiny cost is accepted
expect 0 "makespan" -- "$vp" simulate 1f1b -p 4 -m 8 --cost F=1e-320

# --resume of a run whose last step is checkpointed: exit 0 and the final summary
"$vp" train --data "$text" "${model[@]}" --steps 3 --checkpoint "$tmp/ck" --json \
    >"$tmp/full.json" 2>/dev/null || bad "the run to resume failed"
digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["param_digest"])' \
    "$tmp/full.json")
expect 0 "$digest" -- "$vp" train --data "$text" "${model[@]}" --steps 3 --resume "$tmp/ck"

# a pipelined run checks the data length before step 1, as the single-rank run does
head -c 100 "$text" >"$tmp/small.txt"
expect 3 "" -- "$vp" train --schedule 1f1b -p 2 -m 2 --steps 3 --layers 2 --data "$tmp/small.txt"
"$vp" train --schedule 1f1b -p 2 -m 2 --steps 3 --layers 2 --data "$tmp/small.txt" 2>&1 |
    grep -q '^step ' && bad "a pipelined run with too little data ran a step"

# an injected stall names the op it stalls at
stall=$("$vp" train --data "$text" "${model[@]}" --schedule 1f1b -p 2 -m 2 --steps 2 \
    --stall-at 1:0:1 --watchdog 1 2>&1)
expect 0 "rank 1: op 1 (BW1.0)" -- echo "$stall"
grep -q "stage -1" <<<"$stall" && bad "the stall is reported as stage -1: $stall"

# --data of a device is refused at once
expect 3 "/dev/zero" -- "$vp" train --data /dev/zero --steps 1
finish
