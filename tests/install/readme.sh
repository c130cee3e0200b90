#!/usr/bin/env bash
# Keeps the README's "Install" and "Use from Python" sections true: runs the Install block
# as written (install into ~/.local, a fresh virtual environment with Debian's Python, and
# `pip install` of the package, with no package index: offline) in a scratch home, then the
# Python example as written with the environment's Python, with ~/.local/bin on PATH and
# nothing else pointing at the library. Checks that the package is the installed one, that
# it found the library beside the installed vpipe, and that the CSV the example writes is
# the installed vpipe's. Usage: readme.sh BUILD_DIR SOURCE_DIR
build=$1
src=$2
. "$src/tests/cli/expect.bash"
readme=$src/README.md
section() { # the first ```LANG block after the heading "## NAME"
    awk -v name="## $1" -v lang="\`\`\`$2" '$0 == name {in_s = 1; next}
        in_s && /^## / {exit} in_s && $0 == lang {on = 1; next} on && /^```/ {exit} on' "$readme"
}
install=$(section Install sh)
example=$(section "Use from Python" python)
[ -n "$install" ] || bad "no sh block under ## Install"
[ -n "$example" ] || bad "no python block under ## Use from Python"
expect 0 "" -- test "$(grep -c . <<<"$example")" -le 5

home=$tmp/home
mkdir -p "$home" "$tmp/work" "$tmp/run"
ln -s "$(cd "$build" && pwd)" "$tmp/work/build"
cp -r "$src/python" "$tmp/work/python" # pip builds in the folder it installs from
rm -rf "$tmp/work/python/build" "$tmp/work/python"/*.egg-info
run() { # a clean environment: Debian's python3 first, no pointer to the build
    env -i HOME="$home" PATH="$home/.local/bin:/usr/bin:/bin" LANG=C.UTF-8 PIP_NO_INDEX=1 \
        PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 "$@"
}
(cd "$tmp/work" && run bash -euo pipefail -c "$install") >"$tmp/install.log" 2>&1 ||
    { bad "the Install block failed:"; tail -20 "$tmp/install.log"; }

py=$home/.venvs/vpipe/bin/python3
cd "$tmp/run" || exit 1
out=$(run "$py" -c "$example" 2>&1) || bad "the Python example failed: $out"
vp=$home/.local/bin/vpipe
expect 0 "" -- cmp v-half.csv <("$vp" schedule v-half -p 8 -m 32 --format torch-csv 2>/dev/null)
bubble=$(run "$vp" simulate v-half -p 8 -m 32 --json | grep '"bubble"' | grep -oE '[0-9.]+')
[ "$out" = "$bubble ZBVZeroBubble" ] || bad "the example printed '$out', not '$bubble ZBVZeroBubble'"
where=$(run "$py" -c 'import vpipe; print(vpipe.__file__, vpipe.library_path(), vpipe.__version__)')
read -r module library version <<<"$where"
[[ $module == "$home/.venvs/vpipe/lib/"*"/site-packages/vpipe/__init__.py" ]] ||
    bad "vpipe was imported from $module, not the environment"
[ "$(realpath "$library")" = "$(realpath "$home/.local/lib/libvpipe.so.0")" ] ||
    bad "the library was loaded from $library, not beside the installed vpipe"
expect 0 "" -- test "vpipe $version" = "$("$vp" --version)"
finish
