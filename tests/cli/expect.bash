# Helpers sourced by the CLI test scripts: `expect CODE NEEDLE -- command...` runs the
# command, checks its exit code, and that NEEDLE (if not empty) occurs in its output.
# Counts failures in $fails; `finish` prints the summary and exits non-zero on failure.
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
