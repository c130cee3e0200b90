# vpipe plan, and the V / DualPipe families in list, schedule, simulate and compare.
# Usage: plan.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

expect 0 "usage: vpipe plan" -- "$vp" plan --help
expect 0 "plan" -- "$vp" --help
for f in v-min v-half v-zb 1f1b-v dualpipe dualpipev; do
    expect 0 "$f" -- "$vp" list
    expect 0 "\"family\": \"$f\"" -- "$vp" simulate "$f" -p 4 -m 8 --json
    expect 0 "" -- "$vp" schedule "$f" -p 4 -m 8 -o "$tmp/$f.json"
    expect 0 "" -- "$vp" validate "$tmp/$f.json"
done
expect 0 "dualpipev" -- "$vp" compare -p 4 -m 8
expect 2 "even m" -- "$vp" schedule dualpipe -p 4 -m 9
expect 2 "m >= 2p = 8" -- "$vp" simulate dualpipev -p 4 -m 7
expect 2 "p >= 2" -- "$vp" simulate v-half -p 1 -m 4

# Text report: the choice, the reason, the frontier.
expect 0 "chosen:" -- "$vp" plan -p 8 -m 32 --memory 0.5
expect 0 "frontier (memory -> makespan)" -- "$vp" plan -p 8 -m 32 --memory 4u
expect 0 "why:" -- "$vp" plan -p 8 -m 32 --memory 0.75 --cost F=1,B=2,W=1

# --threads: the V blocks' search on worker threads; the answer never depends on how many.
for fmt in "" --json; do
    "$vp" plan -p 8 -m 32 --memory 0.5 $fmt >"$tmp/threads1"
    expect 0 "" -- "$vp" plan -p 8 -m 32 --memory 0.5 --threads 3 $fmt -o "$tmp/chosen3.json"
    "$vp" plan -p 8 -m 32 --memory 0.5 --threads 3 $fmt >"$tmp/threads3"
    expect 0 "" -- cmp "$tmp/threads1" "$tmp/threads3"
done

# --json: the simulate fields plus frontier and candidates; the answer fits the budget and
# the acceptance bound holds at p = 8 for every k from V-Min's memory to V-ZB's.
for k in 8 9 10 11 12 13 14 15 16; do
    "$vp" plan -p 8 -m 32 --memory "$(python3 -c "print($k/2)")u" --cost F=2,B=2,W=2 --json \
        >"$tmp/plan$k.json"
    expect 0 "" -- python3 - "$tmp/plan$k.json" "$k" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); k = int(sys.argv[2]); p, m = 8, 32
for key in ("family", "makespan", "bubble", "bubble_makespan", "peak_memory", "peak_memory_max",
            "frontier", "candidates", "reason", "budget", "param_copies"):
    assert key in d, key
assert d["peak_memory_max"] <= k / 2 + 1e-9, (d["peak_memory_max"], k)
idle = d["longest_span"] - 6 * m
assert idle <= max(0, 6 * p - 1 - 3 * k) + 1 + 1e-9, (k, idle)
fr = d["frontier"]
assert all(a["memory"] < b["memory"] and a["makespan"] > b["makespan"] for a, b in zip(fr, fr[1:]))
assert any(c["family"] == "v-min" for c in d["candidates"])
assert all({"family", "params", "memory", "bubble", "makespan", "fits"} <= set(c) for c in d["candidates"])
PY
done

# Unequal costs: V-Min fits but loses, and the reason says why.
"$vp" plan -p 8 -m 32 --memory 5u --cost F=1,B=2,W=1 --json >"$tmp/skew.json"
expect 0 "" -- python3 - "$tmp/skew.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = {x["family"]: x for x in d["candidates"]}
assert c["v-min"]["fits"] and c["v-half"]["fits"]
assert d["makespan"] <= c["v-half"]["makespan"] < c["v-min"]["makespan"]
assert "v-min" in d["reason"] and "6*max(F,B,W)" in d["reason"], d["reason"]
PY

# -o writes the chosen schedule, which validates and simulates to the same makespan.
"$vp" plan -p 4 -m 12 --memory 0.6 -o "$tmp/chosen.json" --json >"$tmp/chosen_report.json"
expect 0 "" -- "$vp" validate "$tmp/chosen.json"
"$vp" simulate "$tmp/chosen.json" --json >"$tmp/chosen_sim.json"
expect 0 "" -- python3 -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert a["makespan"] == b["makespan"] and a["peak_memory"] == b["peak_memory"]' \
    "$tmp/chosen_report.json" "$tmp/chosen_sim.json"
expect 0 "\"format\": \"vpipe-schedule\"" -- "$vp" plan -p 4 -m 8 --memory 1 -o -

# Errors: a budget below every schedule names the minimum (the greedy V search holds one
# microbatch's two chunks, 1 unit); bad budgets are usage errors.
expect 2 "smallest peak is 1 units (v-greedy limit=1u)" -- "$vp" plan -p 8 -m 32 --memory 0.9u
expect 2 "smallest peak" -- "$vp" plan -p 8 -m 32 --memory 0.1
expect 2 "needs the size of one activation unit" -- "$vp" plan -p 8 -m 32 --memory 123456b
expect 2 "--memory 'half'" -- "$vp" plan -p 8 -m 32 --memory half
expect 2 "--memory" -- "$vp" plan -p 8 -m 32 --memory 4x
expect 2 "needs --memory" -- "$vp" plan -p 8 -m 32
expect 2 "needs -p and -m" -- "$vp" plan --memory 0.5
expect 2 "plan: unknown option '--frobnicate'" -- "$vp" plan -p 4 -m 8 --memory 1 --frobnicate

# --time-limit (issue 27, item 7; default 60 s): a limit far below the work stops the
# search with the best found so far and says so; 1F1B is always weighed, so a budget of
# its memory is answered; one that nothing weighed meets names the limit.
expect 0 "time limit reached (0.001 s): the best found so far" -- "$vp" plan -p 256 -m 1024 \
    --memory 1 --time-limit 0.001
expect 0 '"timed_out": true' -- "$vp" plan -p 256 -m 1024 --memory 1 --time-limit 0.001 --json
expect 2 "the time limit (0.001 s) ended the search" -- "$vp" plan -p 256 -m 1024 --memory 0.5 \
    --time-limit 0.001
expect 0 '"timed_out": false' -- "$vp" plan -p 8 -m 32 --memory 0.5 --json
"$vp" plan -p 8 -m 32 --memory 0.5 | grep -q "time limit" && bad "a small plan says it timed out"
"$vp" plan --help | grep -q -- "--time-limit" || bad "plan --help does not document --time-limit"
# with --model, the configurations counted are those reached before the limit; how far the
# search got depends on the machine, so each possible answer is checked for its own words
out=$("$vp" plan --model llama3-8b --gpus 16 --global-batch 64 --time-limit 0.001 2>&1)
code=$?
if [ $code -eq 2 ]; then
    expect 0 "the time limit (0.001 s) ended the search" -- echo "$out"
elif [ $code -ne 0 ]; then
    bad "plan --model --time-limit 0.001 exits $code: $out"
elif grep -q "TIME LIMIT reached" <<<"$out"; then
    expect 0 "configurations reached before the time limit:" -- echo "$out"
else
    grep -q "reached before the time limit" <<<"$out" && bad "a finished search says it was cut"
fi
finish
