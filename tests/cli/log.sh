#!/usr/bin/env bash
# Issue 27 item 9: a training loop people can use. --log writes one JSON line per step
# (its losses those of the progress lines, its last peak_bytes the summary's measured bytes
# per rank), --plot draws them and equals `vpipe plot` of the log byte for byte, the start
# banner's figures agree with what else computes them (the parameter count with the GPT's
# formula, the data size with the file's, the bubble with `vpipe simulate`, the peak bytes
# with the summary's prediction), a log of a run and of its extension plots as one, and a
# resumed run continues its own log.
# Usage: log.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
data=/usr/share/common-licenses/GPL-3
model=(--data "$data" --layers 4 --width 32 --heads 2 --seq 16 --microbatch 2 --eval-batches 1)
cd "$tmp" || exit 1

# 1. a pipelined run with --log, --plot and --json; the text run's banner and step lines
"$vp" train "${model[@]}" --schedule 1f1b -p 2 -m 4 --dp 2 --steps 5 --eval-every 2 \
    --log run.log --plot loss.svg --json >run.json 2>run.err || bad "the logged run failed"
python3 - run.log run.json <<'PY' || bad "the log does not match the run"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
run = json.load(open(sys.argv[2]))
assert [l["step"] for l in lines] == [1, 2, 3, 4, 5], lines
for l in lines:
    assert l["steps"] == 5 and l["loss"] > 0 and l["lr"] > 0 and l["grad_norm"] > 0
    assert l["tokens_per_s"] > 0 and l["step_ms"] > 0 and len(l["peak_bytes"]) == 4
    assert (l["val_loss"] is not None) == (l["step"] in (2, 4, 5)), l
close = lambda a, b: abs(a - b) <= 1e-9 * abs(b)  # the summary's reals have 10 digits
assert close(lines[-1]["loss"], run["train_loss"]) and close(lines[-1]["val_loss"], run["val_loss"])
for d, m in enumerate(run["memory_per_rank"]):
    total = sum(v for k, v in m.items() if k not in ("rank", "host"))
    assert lines[-1]["peak_bytes"][d] == total, (d, lines[-1]["peak_bytes"], total)
PY
expect 0 "" -- "$vp" plot run.log -o again.svg
cmp -s loss.svg again.svg || bad "--plot and vpipe plot of its log differ"
expect 0 "run.log: loss and validation loss, steps 1 to 5" -- cat loss.svg
[ "$(grep -c '<circle' loss.svg)" = 4 ] || bad "not one dot per validation (3) and the legend's"

# 2. the banner: parameters, tokens per step, data size, predicted bubble and bytes per rank
out=$("$vp" train "${model[@]}" --schedule 1f1b -p 2 -m 4 --steps 1 --json 2>&1 >run2.json)
python3 - "$data" run2.json <<PY || bad "the banner's figures are wrong: $out"
import json, os, re, sys
out = """$out"""
L, C, V, T = 4, 32, 256, 16
params = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C + C * V  # GPT, untied head
m = re.search(r"model: 4 layers, width 32, 2 heads, seq 16: (\d+) parameters \| (\d+) tokens "
              r"per step \(4 microbatches of 2 x 16\) \| data (\S+): ([0-9.]+) MiB", out)
assert m and int(m[1]) == params and int(m[2]) == 4 * 2 * 16, (m and m.groups(), params)
assert m[3] == sys.argv[1] and m[4] == "%.2f" % (os.path.getsize(sys.argv[1]) / 2**20), m[4]
f = re.search(r"predicted: bubble ([0-9.]+)% \(passes of equal time\) \| peak MiB per rank: "
              r"([0-9.]+) ([0-9.]+)\n", out)
assert f and f[1] == "20.0", f and f.groups()
run = json.load(open(sys.argv[2]))
for d, m in enumerate(run["predicted_memory_per_rank"]):
    total = sum(v for k, v in m.items() if k not in ("rank", "host"))
    assert f[2 + d] == "%.2f" % (total / 2**20), (f.groups(), total)
PY
expect 0 "bubble 20.00%" -- "$vp" simulate 1f1b -p 2 -m 4
expect 0 "peak activation MiB: " -- "$vp" train "${model[@]}" -m 2 --steps 1

# 3. a run and its extension: their logs concatenated plot as one; the steps must grow
"$vp" train "${model[@]}" -m 2 --steps 3 --checkpoint ck --log a.log >/dev/null 2>&1
"$vp" train "${model[@]}" -m 2 --steps 5 --resume ck --log b.log >/dev/null 2>&1
[ "$(wc -l <a.log) $(wc -l <b.log)" = "3 2" ] || bad "logs of 3 and 2 steps expected"
expect 0 "stdin: loss and validation loss, steps 1 to 5" -- bash -c "cat a.log b.log | '$vp' plot -"
expect 3 "stdin:6: step 1 after step 5 (the steps must grow)" -- \
    bash -c "cat a.log b.log a.log | '$vp' plot -"

# 3b. the same --log continued by the resumed run: a run that failed in step 8 (0-based 7)
# past its checkpoint (step 4) logged steps 5 to 7; resumed with that log, they go and 5 to
# 8 follow; --plot draws steps 1 to 8; a file that is not a log is refused, left as it was
"$vp" train "${model[@]}" -p 2 -m 2 --steps 8 --checkpoint ck2 --checkpoint-every 4 \
    --log c.log --fail-at 0:7:0 >/dev/null 2>&1
[ "$(grep -c '"step"' c.log)" = 7 ] || bad "the failed run should have logged steps 1 to 7"
cp c.log c7.log # a resumed run that fails in its first step leaves the log as it was
"$vp" train "${model[@]}" -p 2 -m 2 --steps 8 --resume ck2 --log c.log --fail-at 0:4:0 \
    >/dev/null 2>&1 && bad "the run should have failed in step 5"
cmp -s c.log c7.log || bad "a resumed run that logged no step changed the log"
expect 0 "log: c.log continues after step 4 (its 3 lines of later steps, from a run past the \
checkpoint, are replaced at the first step)" -- "$vp" train "${model[@]}" -p 2 -m 2 \
    --steps 8 --resume ck2 --checkpoint ck2 --log c.log --plot c.svg
python3 - c.log <<'PY' || bad "the continued log is not steps 1 to 8"
import json, sys
assert [json.loads(l)["step"] for l in open(sys.argv[1])] == list(range(1, 9))
PY
expect 0 "c.log: loss and validation loss, steps 1 to 8" -- cat c.svg
printf 'not a log\n' >notes.txt
expect 3 "cannot continue --log: notes.txt:1: not a JSON object" -- "$vp" train "${model[@]}" \
    -p 2 -m 2 --steps 8 --resume ck2 --checkpoint ck3 --log notes.txt
[ "$(cat notes.txt)" = "not a log" ] || bad "the refused log was changed"
truncate -s 1100M big.log # one it cannot read whole (sparse: no disk) is refused, not emptied
expect 3 "cannot continue --log: big.log: is larger than 1073741824 bytes" -- "$vp" train \
    "${model[@]}" -p 2 -m 2 --steps 8 --resume ck2 --checkpoint ck3 --log big.log
[ "$(stat -c %s big.log)" = 1153433600 ] || bad "the unread log was changed"
rm -f big.log

# 3c. a run holds its --log: a second run on it (here flock(1) holds it), or on a link to
# it, is refused and the log left as it was; a run that logs no step removes the log it created
cp c.log held.log
expect 3 "--log held.log is being written by another run (two runs in one log would mix their \
lines)" -- flock held.log "$vp" train "${model[@]}" -p 2 -m 2 --steps 2 --log held.log
ln -s held.log link.log # through a link: its target is what is held
expect 3 "--log link.log is being written by another run" -- flock held.log "$vp" train \
    "${model[@]}" -p 2 -m 2 --steps 2 --log link.log
cmp -s held.log c.log || bad "a log another run holds was changed"
"$vp" train "${model[@]}" -p 2 -m 2 --steps 2 --log new.log --fail-at 0:0:0 >/dev/null 2>&1 &&
    bad "the run should have failed in step 1"
[ ! -e new.log ] || bad "a run that logged no step left the log it created"
"$vp" train "${model[@]}" -p 2 -m 2 --steps 9 --resume ck2 --log new.log >out.txt 2>&1 ||
    bad "the resumed run with a new log failed"
! grep -q "continues" out.txt || bad "a resumed run said it continues a log it created"
[ "$(grep -c '"step"' new.log)" = 1 ] || bad "the new log should hold step 9 alone"

# 4. refusals: what is not a log, an output that cannot be written
printf '{"step":1,"loss":"high"}\n' >bad.log
expect 3 'bad.log:1: "loss" is not a number' -- "$vp" plot bad.log
printf '{"step":1}\n' >none.log
expect 3 "none.log: no losses to plot (1 steps)" -- "$vp" plot none.log
expect 3 "nowhere.log" -- "$vp" plot nowhere.log
expect 2 "plot needs a log" -- "$vp" plot
expect 3 "cannot write $tmp/no/dir/x.log" -- "$vp" train "${model[@]}" --steps 1 \
    --log "$tmp/no/dir/x.log"
expect 2 "--log and --plot need a file" -- "$vp" train "${model[@]}" --steps 1 --log -
expect 2 "--log and --plot need a file" -- "$vp" train "${model[@]}" --steps 1 --plot -
expect 2 "--log and --plot name the same file both.log: each writes its own" -- "$vp" train \
    "${model[@]}" --steps 1 --log both.log --plot both.log
[ ! -e both.log ] || bad "a refused run wrote its log"
cp "$data" text.txt # an output over an input: refused, the input kept
expect 2 "--plot text.txt would write over --data: name another file" -- "$vp" train \
    --data text.txt --layers 4 --width 32 --heads 2 --seq 16 --steps 1 --plot text.txt
cmp -s text.txt "$data" || bad "a refused run wrote over its data"
cp c.log keep.log
expect 2 "-o keep.log is the log it draws: name another file" -- "$vp" plot keep.log -o keep.log
cmp -s keep.log c.log || bad "plot wrote over the log it draws"
finish
