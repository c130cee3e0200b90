#!/usr/bin/env bash
# Builds and installs the Python package with pip as users do, offline (no package index),
# with every CPython >= 3.9 at hand: the machine's first python3 on PATH (pyenv's or
# conda's on many machines), Debian's /usr/bin/python3 and pyenv's other versions. With
# each, in a fresh virtual environment without setuptools: `pip install ./python`, then
# the README's Python example and a pass over the rest of the API (reports, notebook
# tables, ops, errors) against the built library. With the first: pip install of
# the sdist the package's backend makes, and an editable install (`pip install -e`). With
# the first and Debian's: the platform wheel carrying the built libvpipe, whose example
# runs with nothing pointing at any library, and whose `pip uninstall` leaves nothing.
# Usage: python.sh BUILD_DIR SOURCE_DIR
build=$(cd "$1" && pwd)
src=$2
. "$src/tests/cli/expect.bash"
. "$src/tests/install/readme.bash"
example=$(readme_block "$src/README.md" "Use from Python" python 1)
[ -n "$example" ] || bad "no python block under ## Use from Python"
vp=$build/vpipe
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
unset PYTHONPATH VPIPE_LIBRARY
cp -r "$src/python" "$tmp/python" # pip builds in the folder it installs from
find "$tmp/python" -name __pycache__ -prune -exec rm -rf {} +

first=$(first_python)
pythons=("$first")
add_python() { # adds an interpreter >= 3.9 not in the list yet
    local p
    for p in "${pythons[@]}"; do [ "$(realpath "$p")" = "$(realpath "$1")" ] && return; done
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null && pythons+=("$1")
}
[ -x /usr/bin/python3 ] && add_python /usr/bin/python3
for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin/python3; do
    [ -x "$p" ] && add_python "$p"
done

n=0
new_env() { # new_env PYTHON: a fresh virtual environment without setuptools, in $env
    n=$((n + 1))
    env=$tmp/env$n
    "$1" -m venv "$env" || bad "$1 -m venv failed"
    "$env/bin/python" -m pip uninstall -q -y setuptools >/dev/null 2>&1
    ! "$env/bin/python" -c 'import setuptools' 2>/dev/null || bad "setuptools is still in $env"
}
with_library() { env VPIPE_LIBRARY="$build/libvpipe.so" "$@"; }
api='
import pickle, vpipe
s = vpipe.schedule("zb-v", 4, 8, costs={"F": 1, "B": 1.5, "W": 0.5})
r = s.simulate()
assert r.to_dict()["bubble"] == r.bubble == r["bubble"] and r.costs.B == 1.5
assert vpipe.loads(s.to_json()).ops == s.ops and s.ops[0][0] == vpipe.Op("F", 0, 0)
plan = vpipe.plan(p=4, m=8, memory=0.5)
assert "<table>" in plan._repr_html_() and plan.frontier[0].memory > 0
assert vpipe.price("1f1b", 4, 8, model="llama2-7b", gpu="h100-80gb").memory_per_rank[3].rank == 3
for call, cls in [(lambda: vpipe.load(s.to_json()), OSError),
                  (lambda: s.price("nope", "h100-80gb"), ValueError)]:
    try:
        call()
        raise AssertionError("no error")
    except cls as e:
        assert type(pickle.loads(pickle.dumps(e))) is type(e)
print("api ok")
'

for py in "${pythons[@]}"; do
    what="$py ($("$py" --version 2>&1))"
    echo "pip install ./python with $what"
    new_env "$py"
    expect 0 "Successfully installed vpipe" -- "$env/bin/pip" install "$tmp/python"
    check_example "pip install ./python with $what" "$vp" with_library "$env/bin/python"
    expect 0 "api ok" -- with_library "$env/bin/python" -c "$api"
done

# The sdist, and an editable install, with the first python3.
expect 0 "" -- "$first" "$tmp/python/_build/backend.py" sdist "$tmp/sdist"
new_env "$first"
expect 0 "Successfully installed vpipe" -- "$env/bin/pip" install "$tmp/sdist/"vpipe-*.tar.gz
check_example "pip install of the sdist" "$vp" with_library "$env/bin/python"
new_env "$first"
expect 0 "Successfully installed vpipe" -- "$env/bin/pip" install -e "$tmp/python"
check_example "pip install -e" "$vp" with_library "$env/bin/python"
expect 0 "$tmp/python/vpipe/__init__.py" -- "$env/bin/python" -c 'import vpipe; print(vpipe.__file__)'

# The platform wheel carrying the library, with the first python3 and Debian's.
version=$("$vp" --version | cut -d' ' -f2)
expect 0 "" -- "$first" "$tmp/python/_build/backend.py" wheel "$tmp/wheel" \
    --library "$build/libvpipe.so" --version "$version"
wheel=$(echo "$tmp/wheel/"vpipe-*.whl)
[[ $wheel == */vpipe-$version-py3-none-linux_*.whl ]] || bad "the wheel is named $wheel"
for py in "${pythons[@]:0:2}"; do
    new_env "$py"
    expect 0 "Successfully installed vpipe" -- "$env/bin/pip" install "$wheel"
    bare=(env -i PATH=/usr/bin:/bin HOME="$tmp" LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1)
    check_example "the wheel with $py" "$vp" "${bare[@]}" "$env/bin/python"
    expect 0 "$env/lib/" -- "${bare[@]}" "$env/bin/python" -c 'import vpipe; print(vpipe.library_path())'
    site=$("$env/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
    expect 0 "" -- "$env/bin/pip" uninstall -y vpipe
    left=$(ls "$site" | grep -i vpipe)
    [ -z "$left" ] || bad "pip uninstall left $left in $site"
done
finish
