# Keeps the README true: runs every `$ ` line of its ```console blocks (with `vpipe` meaning
# the built binary) in a scratch directory and expects each to exit 0.
# Usage: readme.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
mkdir "$tmp/bin"
ln -s "$vp" "$tmp/bin/vpipe"
export PATH="$tmp/bin:$PATH"
commands=$(awk '/^```console/{on=1; next} /^```/{on=0} on && /^\$ /{sub(/^\$ /, ""); print}' "$src/README.md")
[ -n "$commands" ] || { echo "FAIL: no console commands found in README.md"; exit 1; }
cd "$tmp" || exit 1
while IFS= read -r cmd; do
    case "$cmd" in
    mpirun*)
        command -v mpirun >/dev/null || continue
        # Open MPI itself leaks at exit (libmpi and its components), which LeakSanitizer
        # would report in sanitizer builds; vpipe's executor is leak-checked on threads.
        cmd="ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0 $cmd"
        ;;
    esac
    expect 0 "" -- bash -c "$cmd >/dev/null"
done <<<"$commands"
echo "$(grep -c . <<<"$commands") README commands"
finish
