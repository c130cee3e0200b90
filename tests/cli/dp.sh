# Data parallelism and checkpoints that change shape, on the threads transport: --dp 2
# with and without --zero 1 gives the digest of the single-rank reference summing the same
# two groups; a checkpoint of (p = 4, v-half) resumes at (p = 2, 1f1b) and (p = 4, zb-v)
# to the uninterrupted run's bits and says what changed; with the replicas changed it
# resumes to the grouped reference's bits from the same checkpoint; bad replica flags are
# refused with exit 2.
# Usage: dp.sh VPIPE SOURCE_DIR (the MPI variants are in mpi_dp.sh)
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model="--steps 6 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --clip 0.5 --eval-batches 2 --data /usr/share/common-licenses/GPL-3"
summary() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["param_digest"], d["train_loss"], d["val_loss"])'; }

# --dp 2 (with and without ZeRO-1) = the reference with the same grouping; another grouping
# is another sum.
ref=$("$vp" train -m 8 --dp 2 $model --json 2>/dev/null | summary)
ungrouped=$("$vp" train -m 8 $model --json 2>/dev/null | summary)
[ -n "$ref" ] && [ "$ref" != "$ungrouped" ] || bad "the grouping changes nothing: $ref / $ungrouped"
for zero in 0 1; do
    got=$("$vp" train -p 2 --schedule v-half -m 8 --dp 2 --zero $zero $model --json 2>/dev/null | summary)
    expect 0 "$ref" -- echo "$got"
done
expect 0 "on 4 ranks (2 replicas, ZeRO-1)" -- "$vp" train -p 2 --schedule 1f1b -m 8 --dp 2 --zero 1 $model

# Bad replica flags: a clear error, exit 2, before any step.
expect 2 "--dp 3 does not divide -m 8" -- "$vp" train -p 2 -m 8 --dp 3 $model
expect 2 "--dp 3 does not divide -m 8" -- "$vp" train -m 8 --dp 3 $model
expect 2 "give --dp 2 or more" -- "$vp" train -p 2 -m 8 --zero 1 $model
expect 2 "give a schedule" -- "$vp" train -m 8 --dp 2 --zero 1 $model
expect 2 "drop --dp" -- "$vp" train -p 2 -m 8 --dp 2 --emulate $model
expect 2 "rank 4 is not one of the 4 ranks" -- "$vp" train -p 2 -m 8 --dp 2 --fail-at 4:0:0 $model

# K = 3 steps at (p = 4, v-half): the run dies in step 5, its checkpoint holds step 3.
full=$("$vp" train -p 4 --schedule v-half -m 8 $model --json 2>/dev/null | summary)
expect 1 "injected failure" -- "$vp" train -p 4 --schedule v-half -m 8 $model --checkpoint "$tmp/ck" --checkpoint-every 3 --fail-at 1:4:0
for shape in "-p 2 --schedule 1f1b" "-p 4 --schedule zb-v"; do
    got=$("$vp" train $shape -m 8 $model --resume "$tmp/ck" --json 2>/dev/null | summary)
    expect 0 "$full" -- echo "$got"
done
expect 0 "resuming a checkpoint of p=4 v-half threads at p=2 1f1b threads (step 3)" -- \
    "$vp" train -p 2 --schedule 1f1b -m 8 $model --resume "$tmp/ck"

# Two replicas: another grouping, the grouped reference's bits from the same checkpoint.
grouped=$("$vp" train -m 8 --dp 2 $model --resume "$tmp/ck" --json 2>/dev/null | summary)
for zero in 0 1; do
    got=$("$vp" train -p 2 --schedule 1f1b -m 8 --dp 2 --zero $zero $model --resume "$tmp/ck" --json 2>/dev/null | summary)
    expect 0 "$grouped" -- echo "$got"
done
expect 0 "at p=2 dp=2 zero-1 1f1b threads (step 3); the replicas' reduction grouping changed" -- \
    "$vp" train -p 2 --schedule 1f1b -m 8 --dp 2 --zero 1 $model --resume "$tmp/ck"
finish
