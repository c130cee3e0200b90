# vpipe render: every family draws as well-formed SVG that renders to PNG, as a Chrome
# trace and in the terminal; PyTorch CSV files render too; the pictures under docs/ are
# current. Needs xmllint (libxml2-utils) and rsvg-convert (librsvg2-bin).
# Usage: render.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

for tool in xmllint rsvg-convert python3; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is not installed"; exit 1; }
done

# An SVG is well-formed XML and rasterises to a PNG (written under $tmp, never beside it).
check_svg() {
    local png="$tmp/png-$(basename "$1").png"
    expect 0 "" -- xmllint --noout "$1"
    expect 0 "" -- rsvg-convert "$1" -o "$png"
    expect 0 "PNG" -- head -c 4 "$png"
}

expect 0 "usage: vpipe render" -- "$vp" render --help

# Every registered family, at the first (p, m) it accepts.
families=$("$vp" list --json | python3 -c 'import json,sys; print(" ".join(d["name"] for d in json.load(sys.stdin)))')
[ -n "$families" ] || { echo "FAIL: no families listed"; exit 1; }
for fam in $families; do
    built=
    for pm in "4 8" "4 16" "3 12" "2 8"; do
        set -- $pm
        "$vp" render "$fam" -p "$1" -m "$2" --svg "$tmp/$fam.svg" --trace "$tmp/$fam.json" \
            --ascii >"$tmp/$fam.txt" 2>"$tmp/$fam.err" || continue
        built=1
        check_svg "$tmp/$fam.svg"
        expect 0 "" -- python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
x = [e for e in t["traceEvents"] if e["ph"] == "X"]
assert x and all({"kind", "stage", "microbatch"} <= set(e["args"]) for e in x)
assert {e["pid"] for e in x} == set(range(int(sys.argv[2])))' "$tmp/$fam.json" "$1"
        expect 0 "d$(($1 - 1)) |" -- cat "$tmp/$fam.txt"
        expect 0 "bubble" -- cat "$tmp/$fam.txt"
        break
    done
    [ -n "$built" ] || { echo "FAIL: $fam did not build at any (p, m) tried"; cat "$tmp/$fam.err"; fails=$((fails + 1)); }
done

# The gallery and a wide p, m: one time scale, still well-formed.
expect 0 "" -- "$vp" render 1f1b -p 8 -m 32 --cost F=1,B=2,W=1,c=0.5 --svg "$tmp/big.svg"
check_svg "$tmp/big.svg"

# Colour only when asked (stdout here is a pipe); --fit keeps one band within the width.
out=$("$vp" render interleaved -p 4 -m 8 --ascii)
case $out in *$'\033'*) echo "FAIL: colour codes on a pipe"; fails=$((fails + 1)) ;; esac
expect 0 $'\033[' -- "$vp" render interleaved -p 4 -m 8 --color
expect 0 "lowercase = odd chunk" -- "$vp" render interleaved -p 4 -m 8 --width 60 --fit
lines=$("$vp" render 1f1b -p 4 -m 8 --width 60 --fit | grep -c '^d[0-9]')
[ "$lines" = 4 ] || { echo "FAIL: --fit made $lines device rows, want 4"; fails=$((fails + 1)); }
wide=$("$vp" render 1f1b -p 8 -m 32 --width 70 | awk 'length > 70' | wc -l)
[ "$wide" = 0 ] || { echo "FAIL: $wide lines wider than --width 70"; fails=$((fails + 1)); }

# A PyTorch CSV file renders like the schedule it came from.
"$vp" schedule interleaved -p 4 -m 8 --format torch-csv -o "$tmp/il.csv" 2>/dev/null
expect 0 "p=4 m=8 v=2" -- "$vp" render "$tmp/il.csv"
expect 0 "" -- "$vp" render "$tmp/il.csv" --svg "$tmp/il.svg"
check_svg "$tmp/il.svg"
printf '0F0,0X0\n' >"$tmp/bad.csv"
expect 3 "bad.csv:1:6: torch csv: unknown action type" -- "$vp" render "$tmp/bad.csv"

# Usage and failure exits.
expect 2 "needs a family or a file" -- "$vp" render
expect 2 "only one output" -- "$vp" render 1f1b -p 2 -m 2 --svg - --ascii
expect 2 "--width" -- "$vp" render 1f1b -p 2 -m 2 --width 5
expect 2 "render: unknown option '--bogus'" -- "$vp" render 1f1b -p 2 -m 2 --bogus
expect 3 "cannot write $tmp/no/such/dir/x.svg: No such file or directory" -- \
    "$vp" render 1f1b -p 2 -m 2 --svg "$tmp/no/such/dir/x.svg"
# two outputs in one file: the second would replace the first
expect 2 "--svg and --trace name the same file $tmp/one.out: each writes its own" -- \
    "$vp" render 1f1b -p 2 -m 2 --svg "$tmp/one.out" --trace "$tmp/one.out"
: >"$tmp/one.out" && ln -s one.out "$tmp/link.out"
expect 2 "--svg and --trace name the same file" -- \
    "$vp" render 1f1b -p 2 -m 2 --svg "$tmp/link.out" --trace "$tmp/one.out"
[ ! -s "$tmp/one.out" ] || bad "a refused render wrote its output"
"$vp" schedule 1f1b -p 2 -m 2 -o "$tmp/in.json"
cp "$tmp/in.json" "$tmp/in0.json"
expect 2 "--trace $tmp/in.json would write over the input $tmp/in.json: name another file" -- \
    "$vp" render "$tmp/in.json" --trace "$tmp/in.json"
cmp -s "$tmp/in.json" "$tmp/in0.json" || bad "render wrote over its input"

# docs/ pictures are well-formed and current. Regenerate with:
#   vpipe render 1f1b -p 4 -m 8 --svg docs/1f1b.svg
#   vpipe render v-half -p 4 -m 8 --svg docs/v-half.svg
for pic in "$src"/docs/*.svg; do
    [ -e "$pic" ] || continue
    check_svg "$pic"
    fam=$(basename "$pic" .svg)
    if "$vp" list | grep -q "^$fam "; then
        "$vp" render "$fam" -p 4 -m 8 --svg "$tmp/current.svg"
        cmp -s "$tmp/current.svg" "$pic" ||
            { echo "FAIL: $pic is stale: vpipe render $fam -p 4 -m 8 --svg $pic"; fails=$((fails + 1)); }
    fi
done

finish
