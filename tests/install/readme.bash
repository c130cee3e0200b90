# Helpers of the installed-use tests that run the README's blocks and its Python example.
# Sourced after tests/cli/expect.bash (bad, passes, $tmp).

# readme_block FILE HEADING LANG N: the N-th ```LANG block under the heading "## HEADING",
# as written (a block indented in a list item comes out without its indentation).
readme_block() {
    awk -v name="## $2" -v lang="$3" -v want="$4" '
        $0 == name {in_s = 1; next}
        in_s && /^## / {exit}
        in_s && !on && match($0, /^ *```/) && substr($0, RLENGTH + 1) == lang {
            if (++n == want) {on = 1; indent = RLENGTH - 3}
            next
        }
        on && /^ *```/ {exit}
        on {print substr($0, indent + 1)}' "$1"
}

# The interpreter behind the machine's first python3 on PATH (a launcher such as pyenv's
# shim, which needs the caller's environment, resolved to the interpreter it runs).
first_python() {
    python3 -c 'import sys; print(sys.executable)'
}

# check_example WHAT VPIPE COMMAND...: runs the README's Python example ($example) with
# COMMAND (an interpreter, maybe under env) in a new scratch folder. It must print the
# bubble VPIPE reports and ZBVZeroBubble, and write VPIPE's CSV.
check_example() {
    local what=$1 vp=$2 dir out bubble
    shift 2
    dir=$(mktemp -d "$tmp/example.XXXXXX")
    if ! out=$(cd "$dir" && "$@" -c "$example" 2>&1); then
        bad "$what: the Python example failed: $out"
        return
    fi
    bubble=$("$vp" simulate v-half -p 8 -m 32 --json | grep '"bubble"' | grep -oE '[0-9.]+')
    [ "$out" = "$bubble ZBVZeroBubble" ] ||
        bad "$what: the example printed '$out', not '$bubble ZBVZeroBubble'"
    cmp -s "$dir/v-half.csv" <("$vp" schedule v-half -p 8 -m 32 --format torch-csv 2>/dev/null) ||
        bad "$what: the example's CSV is not vpipe's"
    passes=$((passes + 1))
}
