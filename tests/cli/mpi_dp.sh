# Data parallelism under MPI: for every family at p = 2 and 4, `mpirun -np 2p` with --dp 2
# (with and without --zero 1) gives the digest and losses of the threads transport, and of
# the single-rank reference summing the same two groups wherever the family is bit-exact;
# a checkpoint of (p = 4, v-half, threads) resumes under MPI at (p = 2, 1f1b) to the
# uninterrupted run's bits, and at (p = 2, 1f1b, dp = 2, ZeRO-1) to the grouped
# reference's bits. With VP_TEST_QUICK=1 (sanitizer builds, where a launch is slow) the
# grid is p = 2 only, each family with or without ZeRO-1 in turn.
# Usage: mpi_dp.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model="--steps 2 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --clip 0.5 --eval-batches 2 --data /usr/share/common-licenses/GPL-3 --json"
digest() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["param_digest"], d["train_loss"], d["val_loss"])'; }
exact() { python3 -c 'import json,sys; print(json.load(sys.stdin)["bit_exact_expected"])'; }
families=$("$vp" list --json | python3 -c 'import json,sys; print(" ".join(f["name"] for f in json.load(sys.stdin)))')

shapes="2 4" zeros="0 1" want=56
[ -n "${VP_TEST_QUICK:-}" ] && shapes=2 want=14
runs=0
for p in $shapes; do
    m=$((4 * p)) # two replicas of 2p microbatches each: every family takes them
    ref=$("$vp" train -m $m --dp 2 $model 2>/dev/null | digest)
    for family in $families; do
        [ -n "${VP_TEST_QUICK:-}" ] && zeros=$((runs % 2))
        for zero in $zeros; do
            args="--schedule $family -p $p -m $m --dp 2 --zero $zero $model"
            threads=$("$vp" train $args 2>/dev/null | tee "$tmp/threads.json" | digest)
            mpi=$(result_of timeout 900 mpirun -np $((2 * p)) "$vp" train --transport mpi $args | digest)
            [ -n "$threads" ] || bad "no threads result for $family p=$p zero=$zero"
            expect 0 "$threads" -- echo "$mpi"
            if [ "$(exact <"$tmp/threads.json")" = True ]; then
                expect 0 "$ref" -- echo "$threads"
            fi
            runs=$((runs + 1))
        done
    done
done
expect 0 "" -- test "$runs" -ge "$want"

# K = 3 steps at (p = 4, v-half, threads), dying in step 5; then resumed under MPI.
long="${model/--steps 2/--steps 6}"
full=$("$vp" train -p 4 --schedule v-half -m 8 $long 2>/dev/null | digest)
"$vp" train -p 4 --schedule v-half -m 8 $long --checkpoint "$tmp/ck" --checkpoint-every 3 --fail-at 1:4:0 >/dev/null 2>&1
got=$(timeout 900 mpirun -np 2 "$vp" train --transport mpi -p 2 --schedule 1f1b -m 8 $long --resume "$tmp/ck" 2>"$tmp/mpi.progress" | digest)
expect 0 "$full" -- echo "$got"
expect 0 "resuming a checkpoint of p=4 v-half threads at p=2 1f1b mpi (step 3)" -- cat "$tmp/mpi.progress"
grouped=$("$vp" train -m 8 --dp 2 $long --resume "$tmp/ck" 2>/dev/null | digest)
got=$(result_of timeout 900 mpirun -np 4 "$vp" train --transport mpi -p 2 --schedule 1f1b -m 8 --dp 2 --zero 1 $long --resume "$tmp/ck" | digest)
expect 0 "$grouped" -- echo "$got"

# A checkpoint written under MPI with ZeRO-1 shards resumes on threads without them.
timeout 900 mpirun -np 4 "$vp" train --transport mpi -p 2 --schedule 1f1b -m 8 --dp 2 --zero 1 $long --checkpoint "$tmp/z" --checkpoint-every 3 --fail-at 0:4:0 >/dev/null 2>&1
want=$("$vp" train -p 2 --schedule 1f1b -m 8 --dp 2 --zero 1 $long 2>/dev/null | digest)
got=$("$vp" train -p 2 --schedule 1f1b -m 8 --dp 2 $long --resume "$tmp/z" 2>/dev/null | digest)
expect 0 "$want" -- echo "$got"

# Wrong process count for p * dp ranks: a clear error, exit 2.
expect 2 "the run has 4 ranks (p times dp) but MPI started 2 processes" -- timeout 900 mpirun -np 2 "$vp" train --transport mpi -p 2 --schedule 1f1b -m 8 --dp 2 $model
finish
