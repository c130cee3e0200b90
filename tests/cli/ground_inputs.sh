#!/usr/bin/env bash
# Issue 27 "Solid ground", items 5 and 6: no reader waits on a FIFO or a device, and no
# input is amplified. Every file reader refuses a named FIFO (without a writer) and
# /dev/zero at once with exit 3 ("not a regular file"); a checkpoint part grown to a 3 GiB
# sparse file, a commit record of 1 GiB and a 100 MB PyTorch CSV of commas are refused
# (or read) in little memory: peak resident memory is measured (getrusage of the child),
# no time is asserted (the ctest timeout guards against a hang).
# Usage: ground_inputs.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
text=/usr/share/common-licenses/GPL-3
model=(--layers 2 --width 32 --heads 2 --seq 16 --microbatch 2 --eval-batches 1)
# `peak_kib CMD...`: runs CMD (output to $tmp/peak.out) and prints its peak resident set in KiB
peak_kib() {
    python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$tmp/peak.out" "$@"
}
# `small LIMIT_KIB NEEDLE CMD...`: CMD fails, saying NEEDLE, with a peak under LIMIT_KIB
small() {
    local limit=$1 needle=$2 kib
    shift 2
    kib=$(peak_kib "$@")
    grep -qF -- "$needle" "$tmp/peak.out" || bad "$*: no '$needle' in: $(head -3 "$tmp/peak.out")"
    [ "$kib" -lt "$limit" ] || bad "$*: peak $kib KiB, over $limit KiB"
    echo "peak $kib KiB: $*"
}

# ---- 5. FIFOs and devices ----
mkfifo "$tmp/f.fifo"
"$vp" train --data "$text" "${model[@]}" --steps 2 --checkpoint "$tmp/ck" >/dev/null 2>&1 ||
    bad "the checkpoint to damage was not written"
"$vp" block --example -p 4 >"$tmp/block.json"
for f in "$tmp/f.fifo" /dev/zero; do
    expect 3 "$f: is not a regular file" -- "$vp" validate "$f"
    expect 3 "$f: is not a regular file" -- "$vp" simulate "$f"
    expect 3 "$f: is not a regular file" -- "$vp" train --schedule-file "$f" -p 2 --steps 1
    expect 3 "$f: is not a regular file" -- "$vp" simulate 1f1b -p 4 -m 8 --model "$f" \
        --gpu h100-80gb
    expect 3 "$f: is not a regular file" -- "$vp" simulate 1f1b -p 4 -m 8 --model llama2-7b \
        --gpu "$f"
    expect 3 "$f: is not a regular file" -- "$vp" simulate 1f1b -p 4 -m 8 --cost-file "$f"
    expect 3 "$f: is not a regular file" -- "$vp" train --data "$f" "${model[@]}" --steps 1
    expect 3 "$f: is not a regular file" -- "$vp" block "$f"
done
cp -r "$tmp/ck" "$tmp/fifo"
rm "$tmp/fifo/part-0.step-2.ckpt"
mkfifo "$tmp/fifo/part-0.step-2.ckpt"
expect 3 "part-0.step-2.ckpt: is not a regular file" -- "$vp" train --data "$text" \
    "${model[@]}" --steps 2 --resume "$tmp/fifo"
cp -r "$tmp/ck" "$tmp/fifo2"
rm "$tmp/fifo2/meta.json"
mkfifo "$tmp/fifo2/meta.json"
expect 3 "meta.json: is not a regular file" -- "$vp" train --data "$text" "${model[@]}" \
    --steps 2 --resume "$tmp/fifo2"

# ---- 6. amplification ----
# a checkpoint part grown to 3 GiB (sparse): refused before it is read
cp -r "$tmp/ck" "$tmp/big"
truncate -s 3G "$tmp/big/part-0.step-2.ckpt"
small 102400 "its header announces" "$vp" train --data "$text" "${model[@]}" --steps 2 \
    --resume "$tmp/big"
# ... whose header announces 3 GiB too: more than a part of this model holds
printf '\x00\x00\x00\xc0\x00\x00\x00\x00' |
    dd of="$tmp/big/part-0.step-2.ckpt" bs=1 seek=16 conv=notrunc status=none
small 102400 "more than any checkpoint of the run's model holds" "$vp" train --data "$text" \
    "${model[@]}" --steps 2 --resume "$tmp/big"
# a commit record of 1 GiB
cp -r "$tmp/ck" "$tmp/meta"
truncate -s 1G "$tmp/meta/meta.json"
small 102400 "is larger than" "$vp" train --data "$text" "${model[@]}" --steps 2 \
    --resume "$tmp/meta"
# a 100 MB PyTorch CSV of commas: no record per empty cell
head -c 100000000 /dev/zero | tr '\0' ',' >"$tmp/commas.csv"
small 204800 "no compute actions" "$vp" validate "$tmp/commas.csv"
rm -f "$tmp/commas.csv"
finish
