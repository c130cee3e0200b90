# Pipelined checkpoints: a run that dies between checkpoints (an injected rank failure,
# and a SIGKILL) resumes to the same losses and parameters, bit for bit, as an
# uninterrupted run, on threads and under MPI, and so does a resume with another schedule; --skip-nonfinite skips a poisoned step
# exactly as the single-rank run does. Usage: resume.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
run="--schedule v-half -p 4 -m 8 --steps 12 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --clip 0.5 --data /usr/share/common-licenses/GPL-3 --json"
summary() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["param_digest"], d["train_loss"], d["val_loss"], d["resumed_step"], d["skipped_steps"])'; }
want=$("$vp" train $run 2>/dev/null | summary)
want_tail=${want% * *} # digest and losses

# Threads: rank 2 fails in step 7 (after the checkpoint of step 4), then resume.
expect 1 "injected failure" -- "$vp" train $run --checkpoint "$tmp/a" --checkpoint-every 4 --fail-at 2:6:3
got=$("$vp" train $run --resume "$tmp/a" --checkpoint "$tmp/a" --checkpoint-every 4 2>/dev/null | summary)
expect 0 "$want_tail 4 0" -- echo "$got"

# Threads: SIGKILL once the checkpoint of step 8 is committed, then resume (a longer
# run, so that the kill lands mid-run).
long="${run/--steps 12/--steps 200}"
want_long=$("$vp" train $long 2>/dev/null | summary)
saved8() {
    local k
    k=$(step_of "$1")
    [ -n "$k" ] && [ "$k" -ge 8 ] && [[ $1 == *"checkpoint saved"* ]]
}
kill_on_line "$tmp/b.progress" saved8 -- "$vp" train $long --checkpoint "$tmp/b" --checkpoint-every 4
step=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$tmp/b/meta.json")
expect 0 "" -- test "$step" -lt 200
got=$("$vp" train $long --resume "$tmp/b" 2>/dev/null | summary)
expect 0 "${want_long% * *} $step 0" -- echo "$got"

# A checkpoint of another schedule and split resumes there, bit for bit (the grouping of
# the sums is the same); a corrupt one is refused.
"$vp" train $run --checkpoint "$tmp/c" --checkpoint-every 4 --fail-at 0:5:0 >/dev/null 2>&1
got=$("$vp" train ${run/v-half/1f1b} --resume "$tmp/c" 2>/dev/null | summary)
expect 0 "$want_tail 4 0" -- echo "$got"
f=$(ls "$tmp/c"/part-1.*.ckpt | head -1)
printf 'garbage' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null
expect 3 "part-1" -- "$vp" train $run --resume "$tmp/c"

# --skip-nonfinite: a poisoned step is skipped on every rank, as on one rank.
one=$("$vp" train ${run/--schedule v-half -p 4/-p 1} --inject-nan 3 --skip-nonfinite 2>/dev/null | summary)
got=$("$vp" train $run --inject-nan 3 --skip-nonfinite 2>/dev/null | summary)
expect 0 "$one" -- echo "$got"
expect 0 " 1" -- echo "$got"
expect 1 "not finite" -- "$vp" train $run --inject-nan 3

# MPI: a rank fails after the checkpoint of step 4; the job resumes under mpirun.
if command -v mpirun >/dev/null && "$vp" train $run --transport mpi 2>&1 | grep -q "MPI started 1"; then
    timeout 900 mpirun -np 4 "$vp" train --transport mpi $run --checkpoint "$tmp/m" --checkpoint-every 4 --fail-at 1:6:2 >/dev/null 2>&1
    got=$(timeout 900 mpirun -np 4 "$vp" train --transport mpi $run --resume "$tmp/m" 2>/dev/null | summary)
    expect 0 "$want_tail 4 0" -- echo "$got"
fi
finish
