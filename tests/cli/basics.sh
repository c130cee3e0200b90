# vpipe's core subcommands: list, schedule, simulate, compare, validate; exit codes and
# error messages for bad input. Usage: basics.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

expect 0 "1f1b" -- "$vp" list
expect 0 '"name": "interleaved"' -- "$vp" list --json
for cmd in list schedule simulate compare validate; do
    expect 0 "usage: vpipe $cmd" -- "$vp" "$cmd" --help
done
expect 0 "usage: vpipe <command>" -- "$vp" --help
# every command's help states an option's default once
for cmd in list schedule simulate compare validate train profile render block plan model \
    calibrate plot sample; do
    "$vp" "$cmd" --help >"$tmp/help" 2>&1
    expect 1 "" -- grep "(default.*(default" "$tmp/help"
done
expect 2 "unknown command" -- "$vp" frobnicate
# a likely misspelling is named (one or two letters off, or two swapped), nothing else is
expect 2 "unknown command 'simualte' (did you mean simulate?" -- "$vp" simualte
expect 2 "unknown option '--mdoel' (did you mean --model?" -- "$vp" simulate 1f1b --mdoel x
expect 2 "(did you mean --global-batch?" -- "$vp" plan --global_batch 8
expect 2 "unknown option '--frobnicate' (vpipe simulate --help)" -- "$vp" simulate --frobnicate
expect 2 "unknown command 'xyz' (try vpipe --help)" -- "$vp" xyz
expect 2 "usage" -- "$vp"

# The foundation issue's acceptance line, checked field by field.
"$vp" simulate 1f1b -p 8 -m 32 --cost F=2,B=2,W=2,c=0 --json >"$tmp/sim.json"
expect 0 "" -- python3 - "$tmp/sim.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["makespan"] == 234, d["makespan"]
assert abs(d["bubble"] - 0.1795) < 5e-5, d["bubble"]
assert d["peak_memory_max"] == 8
assert d["peak_memory"] == [8, 7, 6, 5, 4, 3, 2, 1], d["peak_memory"]
for k in ("family", "p", "m", "bubble_makespan"):
    assert k in d, k
PY

# compare --json is an array with one object per family it could build.
"$vp" compare -p 4 -m 8 --cost F=2,B=2,W=2 --json >"$tmp/cmp.json"
expect 0 "" -- python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
fams = {d["family"]: d for d in a}
assert fams["1f1b"]["makespan"] == 66 and fams["interleaved"]["makespan"] == 57, fams
assert fams["gpipe"]["peak_memory_max"] == 8' "$tmp/cmp.json"
expect 0 "interleaved" -- "$vp" compare -p 8 -m 32

# compare builds the families on worker threads; what it prints never depends on how many.
for n in 1 5; do
    "$vp" compare -p 6 -m 13 --cost F=1,B=2,W=1,c=0.5 --threads $n >"$tmp/table$n"
    "$vp" compare -p 6 -m 13 --cost F=1,B=2,W=1,c=0.5 --threads $n --json >"$tmp/json$n"
    "$vp" compare -p 6 -m 13 --cost F=1,B=2,W=1,c=0.5 --threads $n --svg "$tmp/gallery$n"
done
for out in table json gallery; do
    expect 0 "" -- cmp "$tmp/${out}1" "$tmp/${out}5"
done
expect 2 "--threads expects an integer" -- "$vp" compare -p 4 -m 8 --threads 0

# schedule -> file -> validate / simulate round trip; text format.
expect 0 "" -- "$vp" schedule interleaved -p 4 -m 8 -v 2 -o "$tmp/il.json"
expect 0 "valid (interleaved, p=4, stages=8, m=8" -- "$vp" validate "$tmp/il.json"
expect 0 "makespan 57" -- "$vp" simulate "$tmp/il.json" --cost F=2,B=2,W=2
expect 0 "device 0: F0.0" -- "$vp" schedule 1f1b -p 2 -m 2 --format text
expect 0 "valid" -- sh -c "'$vp' schedule 1f1b -p 3 -m 5 | '$vp' validate -"
expect 3 "not the -p/-m given" -- "$vp" simulate "$tmp/il.json" -p 3

# PyTorch CSV out and back in through the same commands.
expect 0 "" -- "$vp" schedule interleaved -p 2 -m 4 --format torch-csv -o "$tmp/il.csv"
expect 0 "PipelineScheduleMulti" -- "$vp" schedule interleaved -p 2 -m 4 --format torch-csv -o "$tmp/il2.csv"
expect 0 "valid (custom, p=2, stages=4, m=4, 32 ops)" -- "$vp" validate "$tmp/il.csv"
expect 0 "makespan 27" -- "$vp" simulate "$tmp/il.csv" -m 4 --cost F=2,B=2,W=2
expect 3 "not the -p/-m given" -- "$vp" simulate "$tmp/il.csv" -m 5
expect 0 "SEND_F" -- "$vp" schedule 1f1b -p 2 -m 2 --format torch-csv-comms
"$vp" schedule 1f1b -p 3 -m 3 --format torch-csv-comms -o "$tmp/comms.csv" 2>/dev/null
expect 0 "valid" -- "$vp" validate "$tmp/comms.csv"
printf '0F0,0B0\n1X0\n' >"$tmp/bad.csv"
expect 3 "bad.csv:2:" -- "$vp" validate "$tmp/bad.csv"

# Bad command-line input: exit 2 with a clear message.
expect 2 "-p expects an integer" -- "$vp" simulate 1f1b -p 0 -m 4
expect 2 "-m expects an integer" -- "$vp" simulate 1f1b -p 4 -m -3
expect 2 "-p expects an integer" -- "$vp" simulate 1f1b -p 4x -m 4
expect 2 "-m needs a value" -- "$vp" simulate 1f1b -p 4 -m
expect 2 "neither a family" -- "$vp" simulate nosuchfamily -p 4 -m 4
expect 2 "unknown family" -- "$vp" schedule nosuchfamily -p 4 -m 4
# a mistyped family, model or accelerator: the library names the one meant
expect 2 "'1fb1' is neither a family nor a file (did you mean '1f1b'? vpipe list)" -- "$vp" simulate 1fb1 -p 4 -m 4
expect 2 "unknown family 'zb1pp' (did you mean 'zb-1p'? vpipe list)" -- "$vp" schedule zb1pp -p 4 -m 4
expect 2 "unknown cost key 'Q'" -- "$vp" simulate 1f1b -p 4 -m 4 --cost Q=1
expect 2 "needs a number >= 0" -- "$vp" simulate 1f1b -p 4 -m 4 --cost F=-2
expect 2 "column 5" -- "$vp" simulate 1f1b -p 4 -m 4 --cost F=2,Bx
expect 2 "zb:R needs R" -- "$vp" simulate 1f1b -p 4 -m 4 --memory-model zb:7
expect 2 "needs -p and -m" -- "$vp" simulate 1f1b -p 4
expect 2 "equal rounds" -- "$vp" simulate interleaved -p 4 -m 9
expect 2 "--format is one of json, text, torch-csv, torch-csv-comms, got 'yaml'" -- "$vp" schedule 1f1b -p 2 -m 2 --format yaml
expect 2 "needs -p and -m" -- "$vp" compare -p 4

# Bad files: exit 3, never a crash.
expect 3 "nonexistent.json: No such file or directory" -- "$vp" validate "$tmp/nonexistent.json"
printf '' >"$tmp/empty.json"
expect 3 "is empty" -- "$vp" validate "$tmp/empty.json"
head -c 200 "$tmp/il.json" >"$tmp/trunc.json"
expect 3 "trunc.json:" -- "$vp" validate "$tmp/trunc.json"
echo '{"format": "vpipe-schedule", "version": 1, "p": 2' >"$tmp/bad.json"
expect 3 "bad.json:2:" -- "$vp" simulate "$tmp/bad.json"
for f in "$src"/fuzz/corpus/json/*.json; do
    "$vp" validate "$f" >/dev/null 2>&1
    code=$?
    if [ "$code" != 0 ] && [ "$code" != 3 ]; then
        echo "FAIL: validate $f exited $code"
        fails=$((fails + 1))
    fi
done

# The validator's messages for broken schedules, each its own.
"$vp" schedule 1f1b -p 3 -m 4 -o "$tmp/good.json"
mutate() { # mutate NAME PYTHON-EXPRESSION-ON-d
    python3 - "$tmp/good.json" "$tmp/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
}
mutate missing 'd["devices"][1].pop()'
mutate duplicate 'd["devices"][0].append(d["devices"][0][0])'
mutate wrongdev 'd["devices"][0][0][1] = 1'
mutate wbeforeb 'd["devices"][2] = [["F",2,j] for j in range(4)] + [x for j in range(4) for x in (["W",2,j],["B",2,j])]'
expect 3 "missing backward (B or BW) of stage 1, microbatch 3" -- "$vp" validate "$tmp/missing.json"
expect 3 "duplicate forward" -- "$vp" validate "$tmp/duplicate.json"
expect 3 "stage 1 belongs on device 1" -- "$vp" validate "$tmp/wrongdev.json"
expect 3 "W comes before its B" -- "$vp" validate "$tmp/wbeforeb.json"
expect 3 "replay deadlocks" -- "$vp" validate "$src/fuzz/corpus/json/cycle.json"

finish
