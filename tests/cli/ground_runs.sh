#!/usr/bin/env bash
# Issue 27 "Solid ground", items 1 and 2: runs are never lost or mixed. A second run on a
# checkpoint directory another run holds is refused ("in use by pid N") and changes
# nothing, and the first run's checkpoint stays whole (it resumes to the parameters of an
# uninterrupted run); a fresh run never deletes the checkpoint a directory holds unless
# told to (--overwrite); a checkpoint trained on other data is refused on resume (item
# 8: an old checkpoint file that cannot be removed is a warning, not the end of the run).
# Usage: ground_runs.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
text=/usr/share/common-licenses/GPL-3
model=(--layers 2 --width 32 --heads 2 --seq 16 --microbatch 2 --eval-batches 1)
run=(--data "$text" "${model[@]}" --steps 30)
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
meta_step() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$1/meta.json"; }
"$vp" train "${run[@]}" --json >"$tmp/alone.json" 2>/dev/null || bad "the reference run failed"

# ---- 1. two runs on one directory ----
# A (two ranks) saves the checkpoint of step 5, then stalls in step 6 (--stall-at: it
# holds the directory and waits, an event rather than a delay); B on the same directory
# must be refused and leave it untouched; A is then killed, and its checkpoint resumes
# to the parameters of an uninterrupted run.
mkfifo "$tmp/a.fifo"
"$vp" train "${run[@]}" --schedule 1f1b -p 2 --checkpoint "$tmp/d" --checkpoint-every 5 \
    --stall-at 1:5:0 --watchdog 3600 >"$tmp/a.fifo" 2>&1 &
a=$!
exec 3<"$tmp/a.fifo"
while IFS= read -r line <&3; do
    [[ $line == "step 5/"*"checkpoint saved"* ]] && break
done
ls -a "$tmp/d" >"$tmp/d.before"
cp "$tmp/d/meta.json" "$tmp/meta.before"
expect 3 "checkpoint directory $tmp/d is in use by pid $a on " -- "$vp" train "${run[@]}" \
    --seed 2 --checkpoint "$tmp/d" --checkpoint-every 5
expect 3 "is in use by pid $a" -- "$vp" train "${run[@]}" --checkpoint "$tmp/d" --overwrite
expect 3 "is in use by pid $a" -- "$vp" train "${run[@]}" --resume "$tmp/d" --checkpoint "$tmp/d"
ls -a "$tmp/d" | cmp -s - "$tmp/d.before" || bad "a refused run changed the directory: $(ls -a "$tmp/d")"
cmp -s "$tmp/d/meta.json" "$tmp/meta.before" || bad "a refused run changed meta.json"
kill -9 "$a"
wait "$a" 2>/dev/null
exec 3<&-
[ "$(meta_step "$tmp/d")" = 5 ] || bad "the first run's checkpoint is not of step 5"
# the directory is free again once its run is gone (the lock ends with the process), and
# the first run's checkpoint continues it to the uninterrupted run's parameters
"$vp" train "${run[@]}" --resume "$tmp/d" --checkpoint "$tmp/d" --json >"$tmp/a.json" \
    2>/dev/null || bad "the first run's checkpoint does not resume"
[ "$(field "$tmp/a.json" param_digest)" = "$(field "$tmp/alone.json" param_digest)" ] ||
    bad "the first run's checkpoint resumes to other parameters than an uninterrupted run's"
[ "$(meta_step "$tmp/d")" = 30 ] || bad "the resumed run's last checkpoint is not of step 30"

# ---- 2. a fresh run never deletes a checkpoint it does not resume from ----
cp "$tmp/d/meta.json" "$tmp/meta.before"
expect 2 "checkpoint directory $tmp/d already holds a checkpoint (step 30)" -- \
    "$vp" train "${run[@]}" --checkpoint "$tmp/d"
expect 2 "already holds a checkpoint" -- "$vp" train "${run[@]}" --schedule 1f1b -p 2 \
    --checkpoint "$tmp/d"
cmp -s "$tmp/d/meta.json" "$tmp/meta.before" || bad "a refused fresh run changed meta.json"
[ -f "$tmp/d/part-0.step-30.ckpt" ] || bad "a refused fresh run removed the checkpoint"
# resuming from another directory into this one is a fresh start for it too
cp -r "$tmp/d" "$tmp/e"
expect 2 "already holds a checkpoint" -- "$vp" train "${run[@]}" --resume "$tmp/e" \
    --checkpoint "$tmp/d"
# --overwrite replaces it, once the new run's checkpoint is complete
expect 0 "" -- "$vp" train --data "$text" "${model[@]}" --steps 4 --checkpoint "$tmp/d" --overwrite
[ "$(meta_step "$tmp/d")" = 4 ] || bad "--overwrite did not replace the checkpoint"
[ -f "$tmp/d/part-0.step-30.ckpt" ] && bad "--overwrite left the old checkpoint's part"
expect 2 "--overwrite needs --checkpoint" -- "$vp" train "${run[@]}" --overwrite
"$vp" train --help | grep -q -- '--overwrite' || bad "--help does not document --overwrite"

# ---- 2. a checkpoint of the same options on other data is another run's ----
head -c 20000 "$text" >"$tmp/other.txt"
other=(--data "$tmp/other.txt" "${model[@]}" --steps 30)
expect 2 "belongs to another run: it was trained on other data" -- "$vp" train "${other[@]}" \
    --resume "$tmp/e"
expect 2 "trained on other data" -- "$vp" train "${other[@]}" --schedule 1f1b -p 2 \
    --resume "$tmp/e"

# ---- 8. a failed prune of an old checkpoint does not stop training ----
mkdir -p "$tmp/p/part-0.step-999.ckpt" && touch "$tmp/p/part-0.step-999.ckpt/x"
expect 0 "warning: checkpoint of step 2 saved, but cannot remove old checkpoint" -- \
    "$vp" train --data "$text" "${model[@]}" --steps 4 --checkpoint "$tmp/p" --checkpoint-every 2
[ "$(meta_step "$tmp/p")" = 4 ] || bad "the run did not go on to its last checkpoint"
expect 0 "nothing left to run" -- "$vp" train --data "$text" "${model[@]}" --steps 4 \
    --resume "$tmp/p"
expect 0 "warning: checkpoint of step 2 saved, but cannot remove" -- "$vp" train \
    --data "$text" "${model[@]}" --steps 4 --schedule 1f1b -p 2 --checkpoint "$tmp/p" \
    --overwrite --checkpoint-every 2
finish
