#!/usr/bin/env bash
# Issue 27 item 11: vpipe sample continues a prompt from a checkpoint with the training
# forward pass. The bytes and the digest of every probability row are the same for every
# -p, and for the checkpoints of a pipelined and of a single-rank run of the same training
# (bit-identical, so their models are); greedy decoding (--temperature 0) is the seed's
# no matter; another seed draws other bytes; bad options and checkpoints are refused.
# Usage: sample.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model=(--data /usr/share/common-licenses/GPL-3 --layers 4 --width 32 --heads 2 --seq 16
    --microbatch 2 -m 4 --eval-batches 1 --steps 20 --lr 3e-3)
"$vp" train "${model[@]}" --checkpoint "$tmp/one" >/dev/null 2>&1 || bad "training failed"
"$vp" train "${model[@]}" --schedule 1f1b -p 2 --checkpoint "$tmp/two" >/dev/null 2>&1 ||
    bad "pipelined training failed"
# sample OUT ARGS...: the text into OUT, the summary line into OUT.note
sample() {
    local out=$1
    shift
    "$vp" sample --prompt "This License" --tokens 60 "$@" >"$out" 2>"$out.note"
}
sample "$tmp/want" --resume "$tmp/one" || bad "sampling failed: $(cat "$tmp/want.note")"
[ "$(head -c 12 "$tmp/want")" = "This License" ] || bad "the prompt does not start the text"
[ "$(wc -c <"$tmp/want")" = 73 ] || bad "not the prompt, 60 bytes and a newline"
grep -q "^sample: 60 bytes from the checkpoint of step 20 in $tmp/one (p=1, temperature 0.8" \
    "$tmp/want.note" || bad "no summary line: $(cat "$tmp/want.note")"
digest=$(grep -o 'digest [0-9a-f]*' "$tmp/want.note")
for p in 2 3 4 5; do
    sample "$tmp/got" --resume "$tmp/one" -p "$p"
    cmp -s "$tmp/got" "$tmp/want" || bad "-p $p samples other bytes"
    [ "$(grep -o 'digest [0-9a-f]*' "$tmp/got.note")" = "$digest" ] || bad "-p $p: another digest"
done
sample "$tmp/got" --resume "$tmp/two" -p 2
cmp -s "$tmp/got" "$tmp/want" || bad "the pipelined run's checkpoint samples other bytes"
[ "$(grep -o 'digest [0-9a-f]*' "$tmp/got.note")" = "$digest" ] || bad "two: another digest"
sample "$tmp/g1" --resume "$tmp/one" --temperature 0
sample "$tmp/g2" --resume "$tmp/one" --temperature 0 --seed 9
cmp -s "$tmp/g1" "$tmp/g2" || bad "greedy decoding depends on the seed"
cmp -s "$tmp/g1" "$tmp/want" && bad "greedy decoding draws as temperature 0.8 does"
sample "$tmp/s2" --resume "$tmp/one" --seed 2
cmp -s "$tmp/s2" "$tmp/want" && bad "another seed draws the same bytes"

expect 2 "sample needs a prompt of one byte or more" -- "$vp" sample --resume "$tmp/one" --prompt ""
expect 2 "sample needs a checkpoint" -- "$vp" sample --prompt x
expect 2 "4 layers cannot fill 7 stages" -- "$vp" sample --resume "$tmp/one" --prompt x -p 7
expect 2 "--tokens" -- "$vp" sample --resume "$tmp/one" --prompt x --tokens 0
expect 3 "no checkpoint in" -- "$vp" sample --resume "$tmp/none" --prompt x
: >"$tmp/one/meta.json"
expect 3 "meta.json" -- "$vp" sample --resume "$tmp/one" --prompt x
finish
