# Vocabulary parallelism under MPI: `mpirun -np 4 ... --vocab-parallel` is bit-identical to
# the threads transport and to the single-rank reference with 4 vocabulary shards.
# Usage: mpi_vocab.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model="-m 8 --steps 3 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --clip 0.5 --data /usr/share/common-licenses/GPL-3"
digest() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["param_digest"], d["train_loss"], d["val_loss"])'; }

ref=$(result_of "$vp" train -p 1 --vocab-shards 4 $model --json | digest)
[ -n "$ref" ] || bad "no reference result"
for family in v-half 1f1b; do
    threads=$(result_of "$vp" train -p 4 --schedule $family --vocab-parallel $model --json | digest)
    mpi=$(result_of timeout 900 mpirun -np 4 "$vp" train -p 4 --transport mpi --schedule $family --vocab-parallel $model --json | digest)
    expect 0 "$ref" -- echo "$threads"
    expect 0 "$ref" -- echo "$mpi"
done
finish
