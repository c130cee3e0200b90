# Helpers sourced by the CLI test scripts: `expect CODE NEEDLE -- command...` runs the
# command, checks its exit code, and that NEEDLE (if not empty) occurs in its output.
# Counts failures in $fails (`bad MESSAGE` adds one); `finish` prints the summary and
# exits non-zero on failure.
# Also gives each script a scratch directory $tmp, removed on exit (a script that sets its
# own EXIT trap removes it there), and lets mpirun run as root and oversubscribe cores.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fails=0
passes=0
expect() {
    local want=$1 needle=$2
    shift 3
    local out code
    out=$("$@" 2>&1)
    code=$?
    if [ "$code" != "$want" ] || { [ -n "$needle" ] && ! grep -qF -- "$needle" <<<"$out"; }; then
        echo "FAIL: $* -> exit $code (want $want), output:"
        show_output "$out"
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
}
# `show_output TEXT`: the first 10 lines of a failed command's output and, when it is
# longer, its last 30 (where an error that ends a long run says why).
show_output() {
    local n
    n=$(printf '%s\n' "$1" | wc -l)
    if [ "$n" -le 40 ]; then
        printf '%s\n' "$1"
    else
        printf '%s\n' "$1" | head -10
        echo "... ($((n - 40)) lines left out) ..."
        printf '%s\n' "$1" | tail -30
    fi
}
# `result_of COMMAND...`: the command's standard output; when it exits non-zero or prints
# nothing, its exit code and the last lines of its standard error go to this script's
# output, so a comparison that then fails says why.
result_of() {
    local out code
    out=$("$@" 2>"$tmp/result_of.err")
    code=$?
    if [ "$code" != 0 ] || [ -z "$out" ]; then
        echo "$* -> exit $code, the last lines of its standard error:"
        tail -n 20 "$tmp/result_of.err"
    fi >&2
    printf '%s\n' "$out"
}
# `bad MESSAGE`: counts a failure the script found itself.
bad() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
finish() {
    echo "$passes passed, $fails failed"
    [ "$fails" = 0 ]
}
# `kill_on_line LOG WHEN -- command...` runs the command in the background, its output
# (stdout and stderr) read line by line through a FIFO and copied to LOG, and SIGKILLs it
# as soon as the shell function WHEN succeeds on a line. An event, not a delay: however
# slow the machine, the kill lands right after the line the test waits for. Returns 0
# after a kill, 1 when the command ended without printing such a line.
kill_on_line() {
    local log=$1 when=$2 line killed=1 pid
    shift 3
    rm -f "$tmp/kill.fifo"
    mkfifo "$tmp/kill.fifo"
    : >"$log"
    "$@" >"$tmp/kill.fifo" 2>&1 &
    pid=$!
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$log"
        if "$when" "$line"; then
            kill -9 "$pid" 2>/dev/null
            killed=0
            break
        fi
    done <"$tmp/kill.fifo"
    wait "$pid" 2>/dev/null
    rm -f "$tmp/kill.fifo"
    return $killed
}
# The step number of a progress line ("step 12/300 | ..."), or nothing.
step_of() {
    [[ $1 =~ ^step\ ([0-9]+)/ ]] && echo "${BASH_REMATCH[1]}"
}
