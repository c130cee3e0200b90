#!/usr/bin/env bash
# vpipe train checkpoints with the real binary: a run killed with SIGKILL between
# checkpoints and resumed gives the same per-step losses, final losses and parameter
# digest as an uninterrupted run; truncated, bit-flipped and foreign checkpoints are
# refused with a clear message (exit 3, or 2 for another run's) while the good one still
# loads; a failed write keeps the previous checkpoint; the NaN guard stops or skips.
# usage: checkpoint.sh <vpipe binary> <repo root>
set -u
vpipe="$1"
. "$2/tests/cli/expect.bash"
text=/usr/share/common-licenses/GPL-3
N=300
K=10
base=(--data "$text" --layers 2 --heads 2 --seq 32 --microbatch 4 -m 2 --eval-batches 2
    --eval-every 50)
model=("${base[@]}" --width 64 --steps "$N")
# the deterministic part of the progress lines of steps after $2 in file $1
steps_after() {
    grep '^step ' "$1" | cut -d'|' -f1-4 | awk -v s="$2" '{split($2, a, "/"); if (a[1] > s) print}'
}
json_field() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}
meta_step() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["step"])' "$1/meta.json"
}
ckpt_file() {
    echo "$1/part-0.step-$(meta_step "$1").ckpt"
}

# 1. uninterrupted
"$vpipe" train "${model[@]}" --json >"$tmp/full.json" 2>"$tmp/full.progress" ||
    bad "uninterrupted run failed: $(tail -3 "$tmp/full.progress")"

# 2. killed with SIGKILL after a checkpoint, while a later step runs: the kill follows the
# first step line printed after a "checkpoint saved" line
ck="$tmp/ck"
saw_save=0
after_save() {
    if [ "$saw_save" = 1 ] && [ -n "$(step_of "$1")" ]; then
        return 0
    fi
    case $1 in *"checkpoint saved"*) saw_save=1 ;; esac
    return 1
}
if kill_on_line "$tmp/killed.progress" after_save -- \
    "$vpipe" train "${model[@]}" --checkpoint "$ck" --checkpoint-every "$K"; then
    S=$(meta_step "$ck")
    last=$(grep '^step ' "$tmp/killed.progress" | tail -1 | sed 's|^step \([0-9]*\)/.*|\1|')
    echo "killed after step $last; the checkpoint holds step $S"
    { [ "$S" -ge "$K" ] && [ "$S" -lt "$N" ] && [ $((S % K)) = 0 ] && [ "$last" -gt "$S" ]; } ||
        bad "checkpoint step $S after a kill at step $last"
    [ "$(ls "$ck" | grep -c '\.ckpt$')" -le 2 ] || bad "stale checkpoint files: $(ls "$ck")"
else
    bad "the run ended before it could be killed: $(tail -2 "$tmp/killed.progress")"
    S=0
fi
cp -r "$ck" "$tmp/good"

# 3. damaged copies are refused with exit 3, naming the file and the problem
cp -r "$tmp/good" "$tmp/trunc"
f=$(ckpt_file "$tmp/trunc")
truncate -s $(($(stat -c %s "$f") / 2)) "$f"
expect 3 "$(basename "$f"): truncated" -- "$vpipe" train "${model[@]}" --resume "$tmp/trunc"
cp -r "$tmp/good" "$tmp/flip"
f=$(ckpt_file "$tmp/flip")
python3 - "$f" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 3] ^= 0x04
open(p, "wb").write(b)
PY
expect 3 "checksum mismatch" -- "$vpipe" train "${model[@]}" --resume "$tmp/flip"
cp -r "$tmp/good" "$tmp/magic"
f=$(ckpt_file "$tmp/magic")
printf 'XXXX' | dd of="$f" bs=1 conv=notrunc status=none
expect 3 "not a vpipe checkpoint" -- "$vpipe" train "${model[@]}" --resume "$tmp/magic"
cp -r "$tmp/good" "$tmp/meta"
echo '{"format": "vpipe-checkpoint", "version": 9}' >"$tmp/meta/meta.json"
expect 3 "unsupported version 9" -- "$vpipe" train "${model[@]}" --resume "$tmp/meta"
printf '{\n' >"$tmp/meta/meta.json"
expect 3 "error: checkpoint record $tmp/meta/meta.json:2:0: string or '}' expected" -- \
    "$vpipe" train "${model[@]}" --resume "$tmp/meta"
expect 3 "no checkpoint in" -- "$vpipe" train "${model[@]}" --resume "$tmp/nowhere"
# another run's checkpoint: exit 2, naming what differs
expect 2 "seed is 1 there, 7 here" -- "$vpipe" train "${model[@]}" --seed 7 --resume "$tmp/good"
expect 2 "width is 64 there, 32 here" -- "$vpipe" train "${base[@]}" --steps "$N" --width 32 \
    --resume "$tmp/good"
expect 2 "another run: lr decay steps" -- "$vpipe" train "${base[@]}" --width 64 --lr-decay-steps 400 \
    --resume "$tmp/good"

# 4. a write that fails (the part file's name is taken by a directory) keeps the previous
# checkpoint, which still loads
cp -r "$tmp/good" "$tmp/blocked"
next=$((S + K))
mkdir "$tmp/blocked/part-0.step-$next.ckpt"
expect 3 "cannot write checkpoint" -- "$vpipe" train "${model[@]}" --resume "$tmp/blocked" \
    --checkpoint "$tmp/blocked" --checkpoint-every "$K"
cmp -s "$tmp/good/meta.json" "$tmp/blocked/meta.json" || bad "a failed write changed meta.json"
[ -d "$tmp/blocked/part-0.step-$next.ckpt" ] || bad "a failed write replaced part-0.step-$next.ckpt"
ls "$tmp/blocked" | grep -q tmp && bad "a failed write left a temporary file: $(ls "$tmp/blocked")"
rmdir "$tmp/blocked/part-0.step-$next.ckpt"
"$vpipe" train "${model[@]}" --resume "$tmp/blocked" --json >"$tmp/blocked.json" 2>/dev/null ||
    bad "the checkpoint kept after a failed write does not load"
[ "$(json_field "$tmp/blocked.json" param_digest)" = "$(json_field "$tmp/full.json" param_digest)" ] ||
    bad "resuming from the checkpoint kept after a failed write changed the parameters"

# 5. the resumed run (from the killed run's own directory, still checkpointing) matches
if ! "$vpipe" train "${model[@]}" --resume "$ck" --checkpoint "$ck" --checkpoint-every "$K" \
    --json >"$tmp/resumed.json" 2>"$tmp/resumed.progress"; then
    bad "resume failed: $(tail -3 "$tmp/resumed.progress")"
fi
grep -q "resumed from step $S" "$tmp/resumed.progress" || bad "no 'resumed from step $S' line"
for k in param_digest train_loss val_loss steps; do
    a=$(json_field "$tmp/full.json" $k)
    b=$(json_field "$tmp/resumed.json" $k)
    [ "$a" = "$b" ] || bad "$k: uninterrupted $a, resumed $b"
done
steps_after "$tmp/full.progress" "$S" >"$tmp/full.steps"
steps_after "$tmp/resumed.progress" "$S" >"$tmp/resumed.steps"
[ "$(wc -l <"$tmp/resumed.steps")" = $((N - S)) ] || bad "resumed run printed the wrong steps"
cmp -s "$tmp/full.steps" "$tmp/resumed.steps" ||
    bad "per-step losses differ: $(diff "$tmp/full.steps" "$tmp/resumed.steps" | head -4)"
[ "$(meta_step "$ck")" = "$N" ] || bad "the final checkpoint is not step $N"
[ "$(ls "$ck")" = "meta.json
part-0.step-$N.ckpt" ] || bad "old checkpoints not pruned: $(ls "$ck")"
# a finished run resumed: nothing left to run, exit 0 and the final summary
expect 0 "param digest $(json_field "$tmp/full.json" param_digest)" -- "$vpipe" train \
    "${model[@]}" --resume "$ck"

# 6. killed three times at arbitrary moments (possibly while saving: a kill right after
# the line of step 9, 23 or 38 lands in the next step, which may be saving), resumed each
# time
chain="$tmp/chain"
for target in 9 23 38; do
    resume=()
    [ -f "$chain/meta.json" ] && resume=(--resume "$chain")
    at_target() {
        local k
        k=$(step_of "$1")
        [ -n "$k" ] && [ "$k" -ge "$target" ]
    }
    kill_on_line "$tmp/chain.progress" at_target -- "$vpipe" train "${model[@]}" \
        "${resume[@]}" --checkpoint "$chain" --checkpoint-every "$K" ||
        bad "the run ended before step $target: $(tail -2 "$tmp/chain.progress")"
done
[ -f "$chain/meta.json" ] || bad "no checkpoint after three interrupted runs"
echo "after three kills the checkpoint holds step $(meta_step "$chain")"
"$vpipe" train "${model[@]}" --resume "$chain" --json >"$tmp/chain.json" 2>/dev/null ||
    bad "resume after three kills failed"
[ "$(json_field "$tmp/chain.json" param_digest)" = "$(json_field "$tmp/full.json" param_digest)" ] ||
    bad "three kills and resumes changed the parameters"

# 7. the NaN/Inf guard
small=(--data "$text" --layers 2 --width 32 --heads 2 --seq 16 --microbatch 2 --eval-batches 2
    --steps 6)
expect 1 "step 3: loss" -- "$vpipe" train "${small[@]}" --inject-nan 3 --checkpoint "$tmp/nan" \
    --checkpoint-every 1
[ "$(meta_step "$tmp/nan")" = 2 ] || bad "a failed step was checkpointed"
expect 0 "skipped 1 non-finite steps" -- "$vpipe" train "${small[@]}" --inject-nan 3 \
    --skip-nonfinite --checkpoint "$tmp/nan2" --checkpoint-every 1
"$vpipe" train "${small[@]}" --inject-nan 3 --skip-nonfinite --json 2>&1 >/dev/null |
    grep '^step 3/6 ' | grep -q 'skipped (not finite)' || bad "the skipped step is not reported"
[ "$(meta_step "$tmp/nan2")" = 6 ] || bad "the run with a skipped step did not finish"

# 8. usage
expect 2 "--checkpoint-every needs --checkpoint" -- "$vpipe" train "${small[@]}" \
    --checkpoint-every 2
expect 2 "another run: width is 64 there, 32 here" -- "$vpipe" train "${small[@]}" -p 2 --schedule 1f1b --resume "$ck"
"$vpipe" train --help | grep -q -- '--resume DIR' || bad "--help does not document --resume"

finish
