#!/usr/bin/env bash
# vpipe train: bad input gives a clear error and exit 2 (usage) or 3 (data); a tiny
# --json run prints one JSON object with the summary keys.
# usage: train.sh <vpipe binary> <repo root>
set -u
vpipe="$1"
. "$2/tests/cli/expect.bash"
text=/usr/share/common-licenses/GPL-3
fail=0

# expect CODE ARGS...: the command exits with CODE and prints "vpipe: error:" on stderr
expect() {
    local want=$1
    shift
    "$vpipe" train "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [ "$got" -ne "$want" ] || ! grep -q '^vpipe: error: ' "$tmp/err"; then
        echo "FAIL: vpipe train $* -> exit $got (want $want):" >&2
        cat "$tmp/err" >&2
        fail=1
    fi
}

: >"$tmp/empty"
expect 3 --data /nonexistent/corpus.txt --steps 1
expect 3 --data "$tmp/empty" --steps 1
expect 3 --data "$tmp" --steps 1
expect 3 --data "$text" --seq 4000 --steps 1
expect 2 --data "$text" --width 30 --heads 4
expect 2 --data "$text" --width 0
expect 2 --data "$text" --layers -1
expect 2 --data "$text" --microbatch 0
expect 2 --data "$text" --seq 0
expect 2 --data "$text" --steps 0
expect 2 --data "$text" -m 0
expect 2 --data "$text" --lr 0
expect 2 --data "$text" --lr-schedule linear
expect 2 --data "$text" --lr 0.01 --min-lr 0.02 --steps 1
grep -q "floor (--min-lr 0.02) is above its peak (--lr 0.01)" "$tmp/err" || {
    echo "FAIL: --min-lr above --lr: $(cat "$tmp/err")" >&2
    fail=1
}
expect 2 --data "$text" -p 2 --schedule single
expect 2 --data "$text" --schedule nosuch -p 2
expect 2 --data "$text" --schedule v-half -p 4 --layers 4 --steps 1
expect 2 --data "$text" --schedule 1f1b --schedule-file x.json
expect 2 --data "$text" -p 1 --svg "$tmp/x.svg"
expect 3 --data "$text" --schedule-file /nonexistent/plan.json

# a schedule file brings its p and m: -p and -m that differ are refused, as simulate
# refuses them (issue 27 item 3), and the matching ones (-m over --dp) train it
"$vpipe" schedule v-half -p 4 -m 8 -o "$tmp/vh.json"
small=(--data "$text" --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --steps 1
    --eval-batches 1)
for shape in "-p 2 -m 4" "-p 2" "-m 4" "-m 8 --dp 2"; do
    # shellcheck disable=SC2086
    expect 3 --schedule-file "$tmp/vh.json" $shape "${small[@]}"
    grep -q "vh.json has p=4, m=8 .*not the -p/-m given" "$tmp/err" || {
        echo "FAIL: --schedule-file with $shape: $(cat "$tmp/err")" >&2
        fail=1
    }
done
for shape in "" "-p 4 -m 8" "-m 16 --dp 2"; do
    # shellcheck disable=SC2086
    "$vpipe" train --schedule-file "$tmp/vh.json" $shape "${small[@]}" --json >"$tmp/f.json" \
        2>"$tmp/err" && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["schedule"] == "v-half" and d["p"] == 4 * d["dp"] and d["m"] == 8 * d["dp"], d' \
        "$tmp/f.json" || {
        echo "FAIL: --schedule-file with '$shape' does not train the file: $(cat "$tmp/err")" >&2
        fail=1
    }
done

# --min-lr's default is a tenth of --lr: a cosine without warm-up ends there
"$vpipe" train --data "$text" --layers 1 --width 16 --heads 1 --seq 8 --microbatch 1 --steps 3 \
    --warmup 0 --lr 0.004 --eval-batches 1 --log "$tmp/lr.jsonl" >/dev/null 2>"$tmp/err" &&
    python3 -c 'import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [1, 2, 3] and abs(rows[-1]["lr"] - 0.0004) < 1e-12, rows' \
        "$tmp/lr.jsonl" || {
    echo "FAIL: --min-lr's default is not a tenth of --lr: $(cat "$tmp/err")" >&2
    fail=1
}

"$vpipe" train --help | grep -q 'usage: vpipe train' || {
    echo "FAIL: --help" >&2
    fail=1
}

# a tiny run: JSON on stdout, progress on stderr
if ! "$vpipe" train --data "$text" --layers 2 --width 32 --heads 2 --seq 16 --microbatch 2 \
    -m 2 --steps 3 --eval-batches 2 --json >"$tmp/json" 2>"$tmp/progress"; then
    echo "FAIL: tiny --json run" >&2
    cat "$tmp/progress" >&2
    fail=1
fi
python3 - "$tmp/json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
need = ["schedule", "p", "m", "steps", "train_loss", "val_loss", "peak_activation_bytes",
        "step_ms", "tokens_per_s", "param_digest"]
missing = [k for k in need if k not in d]
assert not missing, f"missing keys {missing}"
assert d["p"] == 1 and d["m"] == 2 and d["steps"] == 3, d
assert isinstance(d["peak_activation_bytes"], list) and len(d["peak_activation_bytes"]) == 1
assert d["peak_activation_bytes"][0] > 0 and 0 < d["train_loss"] < 10, d
assert len(d["param_digest"]) == 16 and int(d["param_digest"], 16) >= 0, d
PY
[ "$(grep -c '^step ' "$tmp/progress")" -eq 3 ] || {
    echo "FAIL: expected 3 progress lines on stderr" >&2
    fail=1
}

# same seed, same bits
"$vpipe" train --data "$text" --layers 2 --width 32 --heads 2 --seq 16 --microbatch 2 \
    -m 2 --steps 3 --eval-batches 2 --json 2>/dev/null >"$tmp/json2"
d1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["param_digest"])' "$tmp/json")
d2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["param_digest"])' "$tmp/json2")
[ "$d1" = "$d2" ] || {
    echo "FAIL: two runs with one seed differ: $d1 $d2" >&2
    fail=1
}

[ $fail -eq 0 ] && echo "cli train: all checks passed"
exit $fail
