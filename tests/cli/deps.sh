#!/usr/bin/env bash
# The module dependency check: the tree passes; a planted upward include, a private header
# of another module, and a folder without its header each fail, naming the problem.
# Usage: deps.sh VPIPE SOURCE_DIR
src=$2
. "$src/tests/cli/expect.bash"
expect 0 "every dependency points down" -- python3 "$src/scripts/check-deps"
plant() { # copies the tree's src/, include/ and scripts/ into $tmp/t (fresh each time)
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t"
    cp -r "$src/src" "$src/include" "$src/scripts" "$tmp/t/"
}
plant
sed -i '0,/#include "vpipe\/sim.h"/s//#include "vpipe\/sim.h"\n#include "vpipe\/plan.h"/' "$tmp/t/src/sim/cost.c"
expect 1 'src/sim/cost.c includes "vpipe/plan.h": sim -> plan is not allowed' -- \
    python3 "$tmp/t/scripts/check-deps"
plant
echo '#include "block/block_internal.h"' >>"$tmp/t/src/families/gpipe.c"
expect 1 "private header of another module" -- python3 "$tmp/t/scripts/check-deps"
plant
mkdir "$tmp/t/src/extra" && touch "$tmp/t/src/extra/x.c"
expect 1 "src/extra/ has no public header" -- python3 "$tmp/t/scripts/check-deps"
finish
