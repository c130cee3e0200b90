# MPI transport: `mpirun -np 4` training is bit-identical to the threads transport for
# V-Half and 1F1B, and a stalled rank makes the watchdog report every rank's blocked op
# and end the whole job with a non-zero exit; so does a rank whose process is stopped
# (SIGSTOP: it never answers again), without waiting for it (issue 27, item 7: the job
# ends within the watchdog's time plus a few seconds; measured and printed, not
# asserted). Usage: mpi.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model="-p 4 -m 8 --steps 3 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --clip 0.5 --data /usr/share/common-licenses/GPL-3"
digest() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["param_digest"], d["train_loss"], d["val_loss"])'; }

for family in v-half 1f1b; do
    threads=$("$vp" train --schedule $family $model --json 2>/dev/null | digest)
    mpi=$(result_of timeout 900 mpirun -np 4 "$vp" train --transport mpi --schedule $family $model --json | digest)
    expect 0 "$threads" -- echo "$mpi"
    [ -n "$threads" ] || { echo "FAIL: no threads result for $family"; fails=$((fails + 1)); }
done

# Every process prepares the same run; rank 0's says it (the banner and the summary once).
out=$(result_of timeout 900 mpirun -np 4 "$vp" train --transport mpi --schedule 1f1b $model)
expect 0 "" -- test "$(grep -c '^model: ' <<<"$out")" -eq 1 -a "$(grep -c '^done: ' <<<"$out")" -eq 1
expect 0 "" -- test "$(grep -c '^predicted: bubble' <<<"$out")" -eq 1

# Wrong process count: a clear error, exit 2, no hang.
expect 2 "MPI started 2 processes" -- timeout 900 mpirun -np 2 "$vp" train --transport mpi --schedule 1f1b $model

# A stalled rank: every rank reports its op and the job ends by itself, non-zero (timeout
# only guards against a hang; no time window is asserted).
timeout 900 mpirun -np 4 "$vp" train --transport mpi --schedule 1f1b $model --stall-at 2:1:3 --watchdog 2 >/dev/null 2>"${TMPDIR:-/tmp}/vp-mpi-wd.$$"
code=$?
report=$(cat "${TMPDIR:-/tmp}/vp-mpi-wd.$$")
rm -f "${TMPDIR:-/tmp}/vp-mpi-wd.$$"
expect 0 "" -- test "$code" -ne 0 -a "$code" -ne 124
for r in 0 1 2 3; do
    expect 0 "rank $r: op" -- echo "$report"
done
expect 0 "rank 2: op 3 (F2.2) blocked" -- echo "$report"
expect 0 "waited 2 s" -- echo "$report" # whichever rank's limit expired first

# A process stopped by SIGSTOP after step 2 (found by its rank in its environment): the
# others' watchdog ends the job by itself, reporting once, with no MPI error of its own.
mkfifo "$tmp/job.fifo"
mpirun -np 4 "$vp" train --transport mpi --schedule 1f1b ${model/--steps 3/--steps 100000} \
    --watchdog 2 >"$tmp/job.fifo" 2>"$tmp/job.err" &
job=$!
exec 3<"$tmp/job.fifo"
while IFS= read -r line <&3; do
    [[ $line == step\ 2/* ]] && break
done
stopped=
for p in $(pgrep -P "$job"); do
    tr '\0' '\n' <"/proc/$p/environ" | grep -qx OMPI_COMM_WORLD_RANK=2 && stopped=$p
done
[ -n "$stopped" ] || bad "no process of rank 2 among the children of mpirun"
t0=$(date +%s.%N)
kill -STOP "$stopped"
cat <&3 >/dev/null
wait "$job"
code=$?
t1=$(date +%s.%N)
exec 3<&-
kill -CONT "$stopped" 2>/dev/null
echo "a stopped rank ended the job in $(python3 -c "print(round($t1 - $t0, 2))") s (watchdog 2 s)"
stopped_report=$(cat "$tmp/job.err")
expect 0 "" -- test "$code" -ne 0 -a "$code" -ne 124
expect 0 "vpipe: error: watchdog: rank" -- echo "$stopped_report"
expect 0 "a process did not answer" -- echo "$stopped_report"
grep -q "An error occurred in MPI_" <<<"$stopped_report" && bad "an MPI error ended the job: $stopped_report"
[ "$(grep -c '^vpipe: error:' <<<"$stopped_report")" -le 2 ] ||
    bad "every process reported the failure: $stopped_report"
finish
