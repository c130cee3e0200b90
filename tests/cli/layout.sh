#!/usr/bin/env bash
# The README's Layout section names every source folder, and every folder it names
# exists; every public header opens with a paragraph naming its module and what it
# depends on. Usage: layout.sh VPIPE SOURCE_DIR
src=$2
. "$src/tests/cli/expect.bash"
named=$(sed -n '/^## Layout/,/^## /p' "$src/README.md" | grep -oE '^(src/[a-z_]+|cli|tests|fuzz|bench|docs|scripts)/' | sort -u)
for d in $named; do
    expect 0 "" -- test -d "$src/$d"
done
for d in "$src"/src/*/; do
    name="src/$(basename "$d")/"
    expect 0 "$name" -- echo "$named"
done
for h in "$src"/include/vpipe/*.h; do
    m=$(basename "$h" .h)
    [ "$m" = vpipe ] && continue
    expect 0 "Module \`$m\` (src/$m/" -- head -12 "$h"
    expect 0 "Depends on" -- head -14 "$h"
done
finish
