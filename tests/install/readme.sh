#!/usr/bin/env bash
# Keeps the README's "Install" and "Use from Python" sections true: in a scratch home with
# the machine's first python3 on PATH (pyenv's here, not Debian's) and no package index
# (offline), runs the Install section's blocks as written: the installation into
# ~/.local with `pip install ./python` into a fresh virtual environment; the pkg-config
# consumer, built and run (it must print the installed vpipe's report with no
# LD_LIBRARY_PATH); the wheel target and `pip install` of its wheel into another
# environment. Then the Python example as written with each environment's Python: the
# first with ~/.local/bin on PATH (it must find the library beside the installed vpipe),
# the wheel's with nothing pointing at any library (it must load the one it carries); and
# the section's inline calls with literal arguments.
# Usage: readme.sh BUILD_DIR SOURCE_DIR
build=$1
src=$2
. "$src/tests/cli/expect.bash"
. "$src/tests/install/readme.bash"
readme=$src/README.md
install=$(readme_block "$readme" Install sh 1)
consumer=$(readme_block "$readme" Install sh 2)
wheel=$(readme_block "$readme" Install sh 3)
example=$(readme_block "$readme" "Use from Python" python 1)
for block in install consumer wheel; do
    [ -n "${!block}" ] || bad "no $block block (a \`\`\`sh block) under ## Install"
done
[ -n "$example" ] || bad "no python block under ## Use from Python"
expect 0 "" -- test "$(grep -c . <<<"$example")" -le 5

home=$tmp/home
work=$tmp/work
mkdir -p "$home" "$work/tests/install"
ln -s "$(cd "$build" && pwd)" "$work/build"
cp -r "$src/python" "$work/python"
cp -r "$src/tests/install/consumer" "$work/tests/install/consumer"
pydir=$(dirname "$(first_python)")
echo "python3: $pydir/python3 ($("$pydir/python3" --version))"
run() { # a clean environment: the first python3 on PATH, no pointer to the build
    env -i HOME="$home" PATH="$home/.local/bin:$pydir:/usr/bin:/bin" LANG=C.UTF-8 PIP_NO_INDEX=1 \
        PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 "$@"
}
run_block() { # run_block NAME TEXT: runs a README block as written in the work folder
    (cd "$work" && run bash -euo pipefail -c "$2") >"$tmp/$1.log" 2>&1 ||
        { bad "the $1 block failed:"; tail -20 "$tmp/$1.log"; }
}
run_block install "$install"
vp=$home/.local/bin/vpipe
run_block consumer "$consumer"
expect 0 "" -- cmp "$tmp/consumer.log" <("$vp" simulate v-half -p 4 -m 8 --json)
run_block wheel "$wheel"

venv=$home/.venvs/vpipe
expect 0 "" -- test "$(run "$venv/bin/python3" -c 'import sys; print(sys.base_prefix)')" = \
    "$("$pydir/python3" -c 'import sys; print(sys.base_prefix)')"
check_example "pip install ./python" "$vp" run "$venv/bin/python3"
where=$(run "$venv/bin/python3" -c 'import vpipe; print(vpipe.__file__, vpipe.library_path(), vpipe.__version__)')
read -r module library version <<<"$where"
[[ $module == "$venv/lib/"*"/site-packages/vpipe/__init__.py" ]] ||
    bad "vpipe was imported from $module, not the environment"
[ "$(realpath "$library")" = "$(realpath "$home/.local/lib/libvpipe.so.0")" ] ||
    bad "the library was loaded from $library, not beside the installed vpipe"
expect 0 "" -- test "vpipe $version" = "$("$vp" --version)"
# The section's inline calls whose arguments are all literals, e.g. `vpipe.plan(p=8, m=32,
# memory=0.5)`, run as written too.
calls='
import ast, re, sys, vpipe
text = re.sub(r"\n\s*", " ", sys.stdin.read())
ran = []
for code in re.findall(r"`(vpipe\.\w+\([^`]*\))`", text):
    call = ast.parse(code, mode="eval").body
    if all(isinstance(a, ast.Constant) and a.value is not Ellipsis
           for a in call.args + [k.value for k in call.keywords]):
        eval(code)
        ran.append(code.split("(")[0])
print(" ".join(ran))
'
section=$(awk '$0 == "## Use from Python" {on = 1; next} on && /^## / {exit} on' "$readme")
expect 0 "vpipe.simulate vpipe.compare vpipe.plan vpipe.model vpipe.price" -- \
    run "$venv/bin/python3" -c "$calls" <<<"$section"

# The section's second example as written, in a scratch folder: it must print the family
# the installed vpipe's compare ranks fastest and its planner's winner and reason, and
# write the torchtitan files `vpipe plan --emit torchtitan` writes.
cluster=$(readme_block "$readme" "Use from Python" python 2)
[ -n "$cluster" ] || bad "no second python block under ## Use from Python"
dir=$(mktemp -d "$tmp/cluster.XXXXXX")
(cd "$dir" && run "$venv/bin/python3" -c "$cluster") >"$tmp/cluster.out" 2>&1 ||
    { bad "the second Python example failed:"; tail -20 "$tmp/cluster.out"; }
plan=(plan --model llama3-8b --gpus 16 --global-batch 64)
"$vp" compare -p 8 -m 32 --model llama3-8b --json >"$tmp/compare.json"
"$vp" "${plan[@]}" --json >"$tmp/plan.json"
(cd "$tmp" && "$vp" "${plan[@]}" --emit torchtitan llama3-job >/dev/null 2>&1)
expect 0 "" -- run python3 -c '
import json, sys
out, compare, plan = sys.argv[1:]
rows, plan = json.load(open(compare)), json.load(open(plan))
best = plan["best"]
want = [min(rows, key=lambda row: row["step_time_s"])["family"],
        " ".join(str(best[k]) for k in ("family", "dp", "tp", "pp")) + " " + plan["reason"]]
got = open(out).read().splitlines()
assert got == want, (got, want)' "$tmp/cluster.out" "$tmp/compare.json" "$tmp/plan.json"
for name in job.toml schedule.csv; do
    expect 0 "" -- cmp "$dir/llama3-job/$name" "$tmp/llama3-job/$name"
done

# The wheel's environment: no ~/.local/bin on PATH, no VPIPE_LIBRARY.
bare() {
    env -i HOME="$home" PATH="$pydir:/usr/bin:/bin" LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 "$@"
}
wenv=$home/.venvs/vpipe-wheel
check_example "pip install of the wheel" "$vp" bare "$wenv/bin/python3"
library=$(bare "$wenv/bin/python3" -c 'import vpipe; print(vpipe.library_path())')
[[ $library == "$wenv/lib/"*"/site-packages/vpipe/libvpipe.so.0" ]] ||
    bad "the wheel's vpipe loaded $library, not the library it carries"
expect 0 "" -- cmp "$library" "$build/libvpipe.so"
finish
