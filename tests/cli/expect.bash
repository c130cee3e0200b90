# Helpers sourced by the CLI test scripts: `expect CODE NEEDLE -- command...` runs the
# command, checks its exit code, and that NEEDLE (if not empty) occurs in its output.
# Counts failures in $fails; `finish` prints the summary and exits non-zero on failure.
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
        echo "$out" | head -20
        fails=$((fails + 1))
    else
        passes=$((passes + 1))
    fi
}
finish() {
    echo "$passes passed, $fails failed"
    [ "$fails" = 0 ]
}
