# Offload under MPI: `mpirun -np 4` training with --offload gives the threads transport's
# bits (and those of the run without offload) for V-Half and 1F1B, each rank's device and
# host bytes as predicted. Usage: mpi_offload.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model="-p 4 -m 8 --steps 3 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --clip 0.5 --data /usr/share/common-licenses/GPL-3 --json"
digest() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["param_digest"], d["train_loss"], d["val_loss"], d["memory_per_rank"] == d["predicted_memory_per_rank"])'; }

for family in v-half 1f1b; do
    plain=$("$vp" train --schedule $family $model 2>/dev/null | digest)
    for off in 1 0.5; do
        threads=$("$vp" train --schedule $family --offload $off $model 2>/dev/null | digest)
        mpi=$(result_of timeout 900 mpirun -np 4 "$vp" train --transport mpi --schedule $family --offload $off $model | digest)
        if [ -n "$plain" ] && [ "$threads" = "$plain" ] && [ "$mpi" = "$plain" ]; then
            passes=$((passes + 1))
        else
            bad "$family --offload $off: without '$plain', threads '$threads', mpi '$mpi'"
        fi
        [ "${mpi##* }" = True ] || bad "$family --offload $off under MPI: bytes not as predicted"
    done
done
finish
