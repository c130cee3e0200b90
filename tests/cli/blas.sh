#!/usr/bin/env bash
# Issue 27, item 12: when OpenBLAS falls back to a generic kernel on a CPU with AVX2 or
# AVX-512, `vpipe train` and `vpipe profile` run a fast kernel the CPU has (vpipe sets
# OPENBLAS_CORETYPE and starts again, once), say so (text and --json), keep a user's
# OPENBLAS_CORETYPE, keep the library's choice with VPIPE_BLAS_KERNEL=library, give the
# same bits as that kernel chosen by hand, and work under mpirun. The generic fallback is
# played by a preloaded stand-in ($VP_BLAS_GENERIC, tests/blas_generic.c), since this
# machine's OpenBLAS may well know its CPU. Usage: blas.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
[ -n "$VP_BLAS_GENERIC" ] && [ -f "$VP_BLAS_GENERIC" ] || { bad "no VP_BLAS_GENERIC stand-in"; finish; exit; }
text=(train --data /usr/share/common-licenses/GPL-3 --layers 2 --width 32 --heads 2 --seq 16
    --microbatch 2 --steps 3)
run=("${text[@]}" --json)
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, d))' "$1"; }
# the kernel vpipe must pick on this CPU (the flags the kernel reports)
flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
has() { [[ $flags == *" $1 "* ]]; }
want=
if has avx512f && has avx512cd && has avx512bw && has avx512dq && has avx512vl; then
    want=SkylakeX
    has avx512_bf16 && want=Cooperlake
elif has avx2 && has fma; then
    want=Haswell
fi
echo "this CPU: vpipe picks ${want:-nothing} over a generic kernel; OpenBLAS's own: $(
    "$vp" "${run[@]}" 2>/dev/null | field 'blas["kernel"]')"

generic() { env LD_PRELOAD="$VP_BLAS_GENERIC" "$@"; }
out=$(generic "$vp" "${run[@]}" 2>/dev/null)
if [ -n "$want" ]; then
    expect 0 "vpipe $want Prescott" -- echo "$(field 'blas["chosen_by"], blas["kernel"], blas["library_kernel"]' <<<"$out" | tr -d "(),'")"
    # the same bits as that kernel chosen by hand
    by_hand=$(OPENBLAS_CORETYPE=$want "$vp" "${run[@]}" 2>/dev/null | field 'param_digest')
    expect 0 "$by_hand" -- echo "$(field 'param_digest' <<<"$out")"
    expect 0 "kernel $want, chosen by vpipe: OpenBLAS picked the generic Prescott" -- \
        generic "$vp" "${text[@]}"
    expect 0 "kernel $want, chosen by vpipe" -- generic "$vp" profile --layers 2 --width 32 \
        --heads 2 --seq 16 --microbatch 2 --reps 1 -o /dev/null
    # one process per rank under mpirun: each starts again before MPI exists
    if command -v mpirun >/dev/null; then
        mpi=$(generic mpirun -np 2 "$vp" "${run[@]}" --transport mpi --schedule 1f1b -p 2 2>/dev/null)
        expect 0 "vpipe $want" -- echo "$(field 'blas["chosen_by"], blas["kernel"]' <<<"$mpi" | tr -d "(),'")"
        threads=$(OPENBLAS_CORETYPE=$want "$vp" "${run[@]}" --schedule 1f1b -p 2 2>/dev/null)
        expect 0 "$(field param_digest <<<"$threads")" -- echo "$(field param_digest <<<"$mpi")"
    fi
else
    expect 0 "library Prescott" -- echo "$(field 'blas["chosen_by"], blas["kernel"]' <<<"$out" | tr -d "(),'")"
fi
# the library's own choice on request, and a user's OPENBLAS_CORETYPE, are kept
expect 0 "library Prescott" -- echo "$(VPIPE_BLAS_KERNEL=library generic "$vp" "${run[@]}" \
    2>/dev/null | field 'blas["chosen_by"], blas["kernel"]' | tr -d "(),'")"
expect 0 "OPENBLAS_CORETYPE Prescott" -- echo "$(OPENBLAS_CORETYPE=Prescott generic "$vp" \
    "${run[@]}" 2>/dev/null | field 'blas["chosen_by"], blas["kernel"]' | tr -d "(),'")"
expect 0 "neither auto nor library" -- env VPIPE_BLAS_KERNEL=fast "$vp" "${run[@]}"
# without the stand-in the run reports whatever OpenBLAS runs
expect 0 '"chosen_by"' -- "$vp" "${run[@]}"
finish
