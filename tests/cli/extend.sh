#!/usr/bin/env bash
# Issue 27 item 10: a finished run extends. `--resume D --steps N` with a larger N continues
# the run D holds, its learning-rate schedule kept (the cosine over the first run's steps,
# then --min-lr): the result equals bit for bit one run of N steps with that schedule
# (--lr-decay-steps), on any p; a run started with the longer schedule and extended equals
# the plain longer run; --resume alone continues an interrupted run to its own steps.
# Another schedule, or fewer steps than the checkpoint holds, is refused.
# Usage: extend.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model=(--data /usr/share/common-licenses/GPL-3 --layers 4 --width 32 --heads 2 --seq 16
    --microbatch 2 -m 4 --eval-batches 1 --lr 3e-3)
digest() { "$vp" train "${model[@]}" "$@" --json 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["param_digest"], d["val_loss"])'; }

# a finished 6-step run, extended to 12 on two ranks: one 12-step run of the 6-step schedule
"$vp" train "${model[@]}" --steps 6 --checkpoint "$tmp/a" >/dev/null 2>&1 || bad "the first run failed"
want=$(digest --steps 12 --lr-decay-steps 6)
plain=$(digest --steps 12)
[ "$want" != "$plain" ] || bad "the cosine's length changes nothing: the test cannot tell"
expect 0 "learning rate keeps its 6-step schedule and stays at --min-lr past it" -- \
    "$vp" train "${model[@]}" --schedule 1f1b -p 2 --steps 12 --resume "$tmp/a" \
    --checkpoint "$tmp/a"
expect 0 "nothing left to run: the checkpoint in $tmp/a holds all 12 steps | param digest ${want%% *}" \
    -- "$vp" train "${model[@]}" --resume "$tmp/a"
expect 0 "$want" -- digest --steps 12 --lr-decay-steps 6 --schedule v-half -p 2

# planned ahead: a 6-step run on a 12-step schedule, extended, is the plain 12-step run
"$vp" train "${model[@]}" --steps 6 --lr-decay-steps 12 --checkpoint "$tmp/b" >/dev/null 2>&1
expect 0 "$plain" -- digest --steps 12 --resume "$tmp/b"

# an interrupted run resumes to its own steps without --steps
"$vp" train "${model[@]}" --schedule 1f1b -p 2 --steps 12 --checkpoint "$tmp/c" \
    --checkpoint-every 4 --fail-at 1:6:0 >/dev/null 2>&1
expect 0 "$plain" -- digest --resume "$tmp/c"

# a constant rate extends to the plain longer run
"$vp" train "${model[@]}" --lr-schedule constant --steps 6 --checkpoint "$tmp/d" >/dev/null 2>&1
expect 0 "$(digest --lr-schedule constant --steps 12)" -- digest --lr-schedule constant \
    --steps 12 --resume "$tmp/d"

# refusals: another schedule, or stopping before the checkpoint
expect 2 "lr decay steps (the learning-rate schedule's length, which a resumed run keeps" -- \
    "$vp" train "${model[@]}" --steps 14 --lr-decay-steps 14 --resume "$tmp/a"
expect 2 "holds step 12, past the 8 steps of the run resuming it: give it 12 steps or more" -- \
    "$vp" train "${model[@]}" --steps 8 --resume "$tmp/a"
expect 2 "holds step 12, past the 8 steps of the run" -- \
    "$vp" train "${model[@]}" --steps 8 --schedule 1f1b -p 2 --resume "$tmp/a"
finish
