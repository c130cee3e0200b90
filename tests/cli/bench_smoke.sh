#!/usr/bin/env bash
# bench/run --quick (the results report on a small subset) writes results.md with every
# section (issue 25's kinds in 7, today's models in 10) and the paper comparison (the 1F1B-I
# column replayed with the authors' links meets the printed rates, with every link vpipe's),
# and its SVG plots (issue 25's runs' among them) well-formed XML and in results.md.
# usage: bench_smoke.sh <vpipe-binary> <repo-root>
vpipe=$1 root=$2
. "$root/tests/cli/expect.bash"
run=("$root/bench/run" --quick --no-build --build "$(dirname "$vpipe")" --data "$tmp/data")

expect 0 "usage: bench/run" -- "$root/bench/run" --help
expect 2 "unknown option" -- "$root/bench/run" --bogus
expect 1 "is missing" -- "$root/bench/run" --quick --no-build --build "$tmp/none" --out "$tmp/x"

expect 0 "wrote" -- "${run[@]}" --out "$tmp/out"
md=$tmp/out/results.md
if [ ! -f "$md" ]; then # the run failed, and said why above
    finish
    exit 1
fi
for needle in "## 1. Schedule tables" "## 2. Memory" "## 3. Runtime" "## 4. Speed" \
    "## 7. How far to trust" "## 8. Vocabulary parallelism" "| 4 | \`v-half\` + VP |" \
    "| \`v-half\` | 17.24% · 3 | 9.43% · 3 |" "| 1.5B | 8 | 24 | 24.31 / 24.31 |" \
    "| 5 | \`v-half\` | 209 | 8.13% | 17 | 17 | meets |" "OpenBLAS core type:" \
    "**Where vpipe misses the paper.**" "every link gives vpipe's rate in 3 of 3 rows" \
    "### 1.6 The greedy V search and the compacted V pattern against the V block search" "| \`v-min\` | 60 |" \
    "with the authors' links, the paper's printed rate in 3 of 3 rows" \
    "## 10. Today's models and clusters" "| kind | runs | tokens/s: mean / worst |" \
    "### 10.3 DualPipe's overlap"; do
    expect 0 "" -- grep -qF -- "$needle" "$md"
done
for plot in paper frontier runtime speed accuracy accuracy-today; do
    svg=$tmp/out/results-$plot.svg
    expect 0 "" -- xmllint --noout "$svg"
    expect 0 "" -- grep -qF "](results-$plot.svg)" "$md"
done
finish
