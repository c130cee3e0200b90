# MPI transport: `mpirun -np 4` training is bit-identical to the threads transport for
# V-Half and 1F1B, and a stalled rank makes the watchdog report every rank's blocked op
# and end the whole job with a non-zero exit. Usage: mpi.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model="-p 4 -m 8 --steps 3 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --clip 0.5 --data /usr/share/common-licenses/GPL-3"
digest() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["param_digest"], d["train_loss"], d["val_loss"])'; }

for family in v-half 1f1b; do
    threads=$("$vp" train --schedule $family $model --json 2>/dev/null | digest)
    mpi=$(timeout 900 mpirun -np 4 "$vp" train --transport mpi --schedule $family $model --json 2>/dev/null | digest)
    expect 0 "$threads" -- echo "$mpi"
    [ -n "$threads" ] || { echo "FAIL: no threads result for $family"; fails=$((fails + 1)); }
done

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
finish
