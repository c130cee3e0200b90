# Keeps the README true: runs the set-up block's lines after the build (with build/ the
# directory of the built binary) and checks the figures the README quotes from it, then
# every `$ ` line of its ```console blocks exactly as written, in that shell's PATH, in a
# scratch directory (with the repository's data/), expecting each to exit 0. Open MPI's permissive variables that the
# test environment exports are removed, so the MPI line must carry what it needs itself.
# Usage: readme.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
readme="$(cd "$src" && pwd)/README.md"
ln -s "$(cd "$(dirname "$vp")" && pwd)" "$tmp/build"
ln -s "$(cd "$src" && pwd)/data" "$tmp/data" # the repository's data/, which commands may read
cd "$tmp" || exit 1

# The set-up block: install and build, then lines that need only the built binary.
setup=$(awk '/^```sh/{n++; on=(n==1); next} /^```/{on=0} on' "$readme")
[[ $setup == "scripts/install-deps && cmake -B build && cmake --build build -j2"$'\n'* ]] ||
    { echo "FAIL: the set-up block does not start by building into build/: $setup"; exit 1; }
grep -qxF 'export PATH="$PWD/build:$PATH"' <<<"$setup" ||
    { echo "FAIL: the set-up block does not put build/ on PATH: $setup"; exit 1; }
after=$(sed 1d <<<"$setup")
eval "$(grep '^export ' <<<"$after")"
[ "$(command -v vpipe)" = "$tmp/build/vpipe" ] || echo "FAIL: vpipe is $(command -v vpipe)"
demo=$(bash -c "$after" 2>&1)
expect 0 "" -- bash -c "$after"
# "(1F1B: makespan 234, bubble 17.95%, peak 8)" as the demo prints it
quoted=$(grep -oE '1F1B: makespan [0-9]+, bubble [0-9.]+%, peak [0-9]+' "$readme" | head -1)
read -r makespan bubble peak < <(sed -E 's/1F1B: makespan ([0-9]+), bubble ([0-9.]+%), peak ([0-9]+)/\1 \2 \3/' <<<"$quoted")
[ -n "$quoted" ] || echo "FAIL: the README quotes no 1F1B figures after the set-up"
expect 0 "" -- grep -qE "^1f1b +$makespan +$bubble +[0-9.]+% +$peak " <<<"$demo"

commands=$(awk '/^```console/{on=1; next} /^```/{on=0} on && /^\$ /{sub(/^\$ /, ""); print}' "$readme")
[ -n "$commands" ] || { echo "FAIL: no console commands found in README.md"; exit 1; }
while IFS= read -r cmd; do
    asan=${ASAN_OPTIONS:-}
    case "$cmd" in
    *mpirun*)
        command -v mpirun >/dev/null || continue
        # Open MPI itself leaks at exit (libmpi and its components), which LeakSanitizer
        # would report in sanitizer builds; vpipe's executor is leak-checked on threads.
        asan=${asan:+$asan:}detect_leaks=0
        ;;
    esac
    expect 0 "" -- env ASAN_OPTIONS="$asan" bash -c "$cmd >/dev/null"
done <<<"$commands"
echo "$(grep -c . <<<"$commands") README commands"
finish
