#!/usr/bin/env bash
# The command line's side of the hardening issue: every output through one checked writer
# (a full device or a file size limit exits 3 and keeps the previous file), outputs and
# the checkpoint directory checked before step 1, cheap checks before expensive ones, the
# op limit on every path that builds schedules, and the small things a careful user
# meets (--emulate, fault flags, costs in headers, messages, progress, -h).
# Usage: hardening.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
text=/usr/share/common-licenses/GPL-3
model=(--layers 2 --width 32 --heads 2 --seq 16 --microbatch 2)

# ---- 1. every writer: /dev/full and a file size limit exit 3, the previous file stays ----
# `writer ARGS...` runs vpipe ARGS with @OUT@ standing for the output path.
writer() {
    local full=() limited=() plain=() a size limit
    for a in "$@"; do
        full+=("${a//@OUT@//dev/full}")
        limited+=("${a//@OUT@/$tmp/w/prev.out}")
        plain+=("${a//@OUT@/$tmp/w/plain.out}")
    done
    rm -rf "$tmp/w" && mkdir "$tmp/w"
    "$vp" "${plain[@]}" >/dev/null 2>&1 || bad "$* does not run"
    size=$(stat -c %s "$tmp/w/plain.out" 2>/dev/null || echo 0)
    [ "$size" -gt 0 ] || bad "$* wrote nothing"
    limit=$((size > 2048 ? 1 : 0)) # KiB: a partial write when the output is larger
    expect 3 "cannot write /dev/full: No space left on device" -- "$vp" "${full[@]}"
    echo previous >"$tmp/w/prev.out"
    expect 3 "cannot write $tmp/w/prev.out: File too large" -- \
        bash -c "ulimit -f $limit; trap '' XFSZ; exec \"\$@\"" sh "$vp" "${limited[@]}"
    [ "$(cat "$tmp/w/prev.out")" = previous ] || bad "$*: the previous file changed"
    [ "$(ls "$tmp/w")" = "plain.out
prev.out" ] || bad "$*: left $(ls "$tmp/w" | tr '\n' ' ')"
}
# `stdout_writer ARGS...`: the same for what vpipe ARGS prints on stdout.
stdout_writer() {
    local size limit
    size=$("$vp" "$@" 2>/dev/null | wc -c)
    [ "$size" -gt 0 ] || bad "$* printed nothing"
    limit=$((size > 2048 ? 1 : 0))
    expect 3 "cannot write standard output: No space left on device" -- \
        bash -c 'exec "$@" >/dev/full' sh "$vp" "$@"
    expect 3 "cannot write standard output: File too large" -- \
        bash -c "ulimit -f $limit; trap '' XFSZ; exec \"\$@\" >'$tmp/stdout'" sh "$vp" "$@"
}
"$vp" schedule 1f1b -p 4 -m 32 -o "$tmp/1f1b.json"
"$vp" block --example -p 4 --cost F=2,B=2,W=2 >"$tmp/block.json"
writer schedule v-half -p 8 -m 32 -o @OUT@
writer schedule zb-v -p 4 -m 8 --format torch-csv -o @OUT@
writer plan -p 4 -m 8 --memory 1 -o @OUT@
writer block "$tmp/block.json" -m 8 -o @OUT@
writer profile "${model[@]}" --reps 1 -o @OUT@
writer render 1f1b -p 4 -m 8 --svg @OUT@
writer render 1f1b -p 4 -m 8 --trace @OUT@
writer compare -p 4 -m 8 --svg @OUT@
run=(train --data "$text" "${model[@]}" --schedule 1f1b -p 2 -m 4 --steps 1)
writer "${run[@]}" --trace @OUT@
writer "${run[@]}" --svg @OUT@
stdout_writer list
stdout_writer list --json
stdout_writer validate "$tmp/1f1b.json"
stdout_writer simulate 1f1b -p 8 -m 32
stdout_writer simulate 1f1b -p 8 -m 32 --json
stdout_writer compare -p 4 -m 8
stdout_writer compare -p 4 -m 8 --json
stdout_writer plan -p 4 -m 8 --memory 1
stdout_writer plan -p 4 -m 8 --memory 1 --json
stdout_writer block "$tmp/block.json" -m 8
stdout_writer render 1f1b -p 4 -m 8 --ascii
stdout_writer schedule 1f1b -p 8 -m 32
stdout_writer "${run[@]}"
stdout_writer "${run[@]}" --json
stdout_writer train --data "$text" "${model[@]}" --steps 2
stdout_writer simulate --help

# ---- 2. outputs and the checkpoint directory are checked before step 1 ----------------
# `early CODE NEEDLE -- command`: fails with CODE and NEEDLE before any step ran.
early() {
    expect "$@"
    shift 3
    "$@" 2>&1 | grep -q '^step ' && bad "$* ran a step before failing"
}
train=("$vp" train --data "$text" "${model[@]}" -m 2 --steps 20)
touch "$tmp/file"
early 3 "cannot create directory $tmp/file/ck: Not a directory" -- \
    "${train[@]}" -p 1 --checkpoint "$tmp/file/ck"
early 3 "cannot write in $tmp/file: Not a directory" -- "${train[@]}" -p 1 --checkpoint "$tmp/file"
if [ "$(id -u)" = 0 ]; then
    ro=/sys # root writes through permissions: a file system that refuses new entries
else
    mkdir "$tmp/ro" && chmod 555 "$tmp/ro" && ro=$tmp/ro
fi
early 3 "cannot create directory $ro/ck" -- "${train[@]}" -p 1 --checkpoint "$ro/ck"
[ -e "$ro/ck" ] && bad "a refused checkpoint directory exists"
"$vp" train --data "$text" "${model[@]}" --steps 1 --checkpoint "$tmp/made" >/dev/null ||
    bad "--checkpoint DIR failed"
[ "$(ls -A "$tmp/made")" = "meta.json
part-0.step-1.ckpt" ] || bad "the probe left something in the checkpoint directory: $(ls -A "$tmp/made")"
for out in --svg --trace; do
    early 3 "cannot write $tmp/missing/x: No such file or directory" -- \
        "${train[@]}" --schedule 1f1b -p 2 "$out" "$tmp/missing/x"
    early 3 "cannot write $tmp: is a directory" -- "${train[@]}" --schedule 1f1b -p 2 "$out" "$tmp"
done
expect 3 "cannot write $tmp/missing/x: No such file or directory" -- \
    "$vp" compare -p 4 -m 8 --svg "$tmp/missing/x"
expect 3 "cannot write $tmp/missing/x: No such file or directory" -- \
    "$vp" plan -p 4 -m 8 --memory 1 -o "$tmp/missing/x"
expect 3 "cannot write $tmp/missing/x: No such file or directory" -- \
    "$vp" profile "${model[@]}" -o "$tmp/missing/x"

# ---- 3. cheap checks first ------------------------------------------------------------
# The layers cannot fill 40000 stages: said before the schedule (which would also be far
# over the op limit at this m) is built.
expect 2 "4 layers cannot fill 40000 stages" -- "$vp" train --schedule 1f1b -p 40000 -m 100000
expect 2 "4 layers cannot fill 40000 stages" -- "$vp" train --schedule 1f1b -p 40000

# ---- 4. the op limit on every path that builds schedules --------------------------------
limit="p=100000, m=100000 may need up to 6e+10 ops, over the limit of 100000000"
expect 2 "$limit" -- "$vp" schedule 1f1b -p 100000 -m 100000
expect 2 "$limit" -- "$vp" simulate 1f1b -p 100000 -m 100000
expect 2 "$limit" -- "$vp" compare -p 100000 -m 100000
expect 2 "$limit" -- "$vp" render 1f1b -p 100000 -m 100000
expect 2 "$limit" -- "$vp" plan -p 100000 -m 100000 --memory 0.5
expect 2 "$limit" -- "$vp" validate 1f1b -p 100000 -m 100000
expect 2 "p=6000, m=100000 may need up to 3.6e+09 ops" -- \
    "$vp" train --schedule 1f1b -p 6000 --layers 6000 -m 100000
expect 2 "block: m=1000000 makes about 8e+06 ops of 8 passes per copy, over the limit of 1000000" \
    -- "$vp" block "$tmp/block.json" -m 1000000 --max-ops 1e6
# --max-ops moves the limit: 1f1b at p=4, m=4 may need 3 * 4 * 4 * 2 = 96 ops
expect 0 "makespan" -- "$vp" simulate 1f1b -p 4 -m 4 --max-ops 96
expect 2 "over the limit of 95" -- "$vp" simulate 1f1b -p 4 -m 4 --max-ops 95
expect 2 "over the limit of 1" -- "$vp" train --data "$text" --schedule 1f1b -p 2 --max-ops 1
expect 2 "over the limit of 7" -- "$vp" block "$tmp/block.json" -m 1 --max-ops 7
expect 0 "makespan" -- "$vp" block "$tmp/block.json" -m 1 --max-ops 8
expect 2 "--max-ops expects a whole number of ops, got '1.5'" -- \
    "$vp" simulate 1f1b -p 4 -m 4 --max-ops 1.5

# ---- 5. what a careful user meets ---------------------------------------------------------
# --emulate: step times and the prediction; what an emulated run has not is n/a / null
"$vp" profile "${model[@]}" --reps 1 -o "$tmp/prof.json" 2>/dev/null
emu=("$vp" train --data "$text" "${model[@]}" --emulate --schedule 1f1b -p 2 -m 4 --steps 2
    --cost-file "$tmp/prof.json")
expect 0 "step 2/2 | loss n/a | lr n/a | norm n/a |" -- "${emu[@]}"
expect 0 "train loss n/a | val loss n/a" -- "${emu[@]}"
expect 0 "param digest n/a" -- "${emu[@]}"
expect 0 "step time: measured" -- "${emu[@]}"
"${emu[@]}" --json >"$tmp/emu.json" 2>/dev/null
expect 0 "" -- python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["emulated"] is True
for k in ("train_loss", "val_loss", "peak_activation_bytes", "param_digest"):
    assert d[k] is None, (k, d[k])
assert d["step_ms"] > 0 and d["predicted_step_ms"] > 0
assert all(x > 0 for x in d["predicted_peak_activation_bytes"])' "$tmp/emu.json"
expect 2 "--emulate emulates the ranks of a pipelined run" -- \
    "$vp" train --data "$text" --emulate -p 1 --cost-file "$tmp/prof.json" "${model[@]}"
expect 2 "--emulate emulates the ranks of a pipelined run" -- \
    "$vp" train --data "$text" --emulate --schedule 1f1b -p 1 --cost-file "$tmp/prof.json" "${model[@]}"

# --fail-at / --stall-at / --inject-nan outside the run
ft=("$vp" train --data "$text" "${model[@]}" --schedule 1f1b -p 2 -m 2 --steps 3)
expect 2 "--fail-at 2:0:0: rank 2 is not one of the 2 ranks" -- "${ft[@]}" --fail-at 2:0:0
expect 2 "--stall-at 0:3:0: step 3 is past the run's 3 steps" -- "${ft[@]}" --stall-at 0:3:0
expect 2 "--fail-at: op 4 is past rank 1's 4 ops per step" -- "${ft[@]}" --fail-at 1:0:4
expect 2 "--fail-at injects into a pipelined run" -- \
    "$vp" train --data "$text" "${model[@]}" -p 1 --steps 3 --fail-at 0:0:0
expect 2 "give --fail-at or --stall-at, not both" -- "${ft[@]}" --fail-at 0:0:0 --stall-at 1:0:0
expect 2 "--inject-nan 4 is past the last step (3)" -- "${ft[@]}" --inject-nan 4
expect 1 "injected failure" -- "${ft[@]}" --fail-at 1:2:3

# FB is echoed with the other costs, in text and JSON
expect 0 "costs F=1 B=2 W=1 c=0 FB=2.5" -- "$vp" simulate 1f1b -p 2 -m 2 --cost B=2,FB=2.5
expect 0 "costs F=1 B=2 W=1 c=0 FB=2.5" -- "$vp" compare -p 2 -m 4 --cost B=2,FB=2.5
expect 0 "costs F=1 B=2 W=1 c=0 FB=2.5" -- "$vp" plan -p 2 -m 4 --memory 1 --cost B=2,FB=2.5
expect 0 '"FB": 2.5' -- "$vp" simulate 1f1b -p 2 -m 2 --cost B=2,FB=2.5 --json
# costs whose sums could not be finite: refused as any bad --cost value (exit 2) rather
# than a makespan of inf
expect 2 "overflow the simulated times" -- \
    "$vp" simulate 1f1b -p 8 -m 32 --cost F=1e307,B=1e307,W=1e307
expect 2 "overflow the simulated times" -- "$vp" compare -p 8 -m 32 --cost F=1e307,B=1e307,W=1e307

# messages: the path once, a directory's reason
once() { # once NEEDLE -- command: the command fails naming NEEDLE exactly once
    local needle=$1 out
    shift 2
    out=$("$@" 2>&1)
    [ "$(grep -o -F -- "$needle" <<<"$out" | wc -l)" = 1 ] || bad "$* names $needle not once: $out"
}
mkdir "$tmp/dir"
: >"$tmp/empty.json"
expect 3 "vpipe: error: $tmp/dir: is a directory" -- "$vp" validate "$tmp/dir"
expect 3 "vpipe: error: $tmp/dir: is a directory" -- "$vp" simulate "$tmp/dir"
expect 3 "--cost-file $tmp/dir: is a directory" -- "$vp" simulate 1f1b -p 2 -m 2 --cost-file "$tmp/dir"
expect 3 "$tmp/dir: is a directory" -- "$vp" block "$tmp/dir"
expect 3 "$tmp/empty.json: is empty" -- "$vp" validate "$tmp/empty.json"
expect 3 "/dev/zero: is not a regular file" -- "$vp" validate /dev/zero
for f in "$tmp/dir" "$tmp/empty.json" "$tmp/nonexist.json"; do
    once "$f" -- "$vp" validate "$f"
    once "$f" -- "$vp" simulate 1f1b -p 2 -m 2 --cost-file "$f"
done

# train --svg: measured and simulated memory on one scale (MiB), equal peaks per rank
"$vp" train --data "$text" --layers 4 --width 32 --heads 2 --seq 16 --microbatch 2 \
    --schedule v-half -p 2 -m 4 --steps 1 --svg "$tmp/train.svg" >/dev/null
expect 0 "" -- python3 -c '
import re, sys
svg = open(sys.argv[1]).read()
assert "memory (MiB)" in svg and "memory (units)" not in svg
peaks = [float(x) for x in re.findall(r">peak ([0-9.e+-]+)</text>", svg)]
assert len(peaks) == 4, peaks  # two ranks measured, two simulated
assert peaks[:2] == peaks[2:] and min(peaks) > 0.1, peaks' "$tmp/train.svg"

# progress: nothing when stderr is not a terminal; one updating line when it is
"$vp" compare -p 8 -m 32 >/dev/null 2>"$tmp/err"
"$vp" plan -p 4 -m 8 --memory 1 >/dev/null 2>>"$tmp/err"
"$vp" train --data "$text" "${model[@]}" --steps 2 >/dev/null 2>>"$tmp/err"
[ -s "$tmp/err" ] && bad "progress printed on a stderr that is no terminal: $(head -3 "$tmp/err")"
if command -v script >/dev/null; then
    script -qec "'$vp' compare -p 4 -m 8 >/dev/null" /dev/null >"$tmp/tty" </dev/null
    expect 0 $'\r\033[Kcompare: ' -- cat "$tmp/tty" # which families it names: the workers' race
    [ "$(tail -c 4 "$tmp/tty")" = $'\r\033[K' ] || bad "compare leaves its progress line on the terminal"
    script -qec "'$vp' train --data '$text' ${model[*]} --steps 2 >/dev/null" /dev/null \
        >"$tmp/tty" </dev/null
    expect 0 $'\r\033[Ktrain: step 2/2 running...\r\033[K' -- cat "$tmp/tty"
fi

# every subcommand answers -h and --help alike
for cmd in list schedule simulate compare validate train profile render block plan; do
    expect 0 "usage: vpipe $cmd" -- "$vp" "$cmd" -h
    [ "$("$vp" "$cmd" -h)" = "$("$vp" "$cmd" --help)" ] || bad "$cmd: -h and --help differ"
done
finish
