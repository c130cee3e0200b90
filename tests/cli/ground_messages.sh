#!/usr/bin/env bash
# Issue 27 "Solid ground", item 8: no silent wrong answer and no wrong message. A schedule
# whose declared placement contradicts its stage map is refused; a trailing blank line of
# a PyTorch CSV adds no idle rank; a profile's out-of-range integer is refused, not
# truncated; an absurdly large model's byte counts stay positive; --emit torchtitan
# writes valid TOML whatever the directory's name; names and text from input files reach
# the terminal without escape sequences; an out-of-range --cost exits 2 as any bad
# --cost; an out-of-memory is not blamed on a block's timing; -o keeps a symbolic link
# and a file's permissions. Usage: ground_messages.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
esc=$(printf '\033')

# ---- a declared placement is a promise about the stage map ----
"$vp" schedule interleaved -p 4 -m 8 -o "$tmp/loop.json"
sed 's/"placement": "loop"/"placement": "v"/' "$tmp/loop.json" >"$tmp/lie.json"
grep -q '"placement": "v"' "$tmp/lie.json" || bad "the placement was not edited"
expect 3 'placement "v" puts stage 4 on device 3, the stage map on device 0' -- \
    "$vp" validate "$tmp/lie.json"
expect 3 'placement "v" puts stage 4' -- "$vp" render "$tmp/lie.json" --ascii

# ---- a trailing blank line is no idle rank ----
"$vp" schedule 1f1b -p 4 -m 8 --format torch-csv -o "$tmp/a.csv"
"$vp" simulate "$tmp/a.csv" -m 8 --json >"$tmp/a.sim"
printf '\n\r\n' >>"$tmp/a.csv"
"$vp" simulate "$tmp/a.csv" -m 8 --json >"$tmp/b.sim"
cmp -s "$tmp/a.sim" "$tmp/b.sim" || bad "a trailing blank line changed the simulation: $(diff "$tmp/a.sim" "$tmp/b.sim" | head -4)"
expect 0 '"p": 4' -- cat "$tmp/b.sim"
printf '0F0,0B0\n\n1F0,1B0\n' >"$tmp/gap.csv"
expect 3 "rank 1 has no action" -- "$vp" validate "$tmp/gap.csv"

# ---- integers of a profile are never truncated; its size is capped ----
"$vp" profile --layers 2 --width 32 --heads 2 --seq 16 --microbatch 2 --reps 1 \
    -o "$tmp/p.json" 2>/dev/null
python3 - "$tmp/p.json" "$tmp/huge.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["model"]["layers"] = 4294967298  # 2 once truncated to 32 bits
json.dump(p, open(sys.argv[2], "w"))
PY
expect 3 "model.layers must be an integer in [1, 2147483647]" -- "$vp" simulate 1f1b -p 2 -m 2 \
    --cost-file "$tmp/huge.json"
head -c 2000000 /dev/zero | tr '\0' ' ' >"$tmp/pad.json"
expect 3 "is larger than 1048576 bytes" -- "$vp" simulate 1f1b -p 2 -m 2 --cost-file "$tmp/pad.json"

# ---- an absurdly large model: byte counts stay positive numbers ----
"$vp" simulate 1f1b -p 2 -m 2 --model vpipe:65536,65536,65536,65536 --gpu h100-80gb \
    --mbs 1000 --json >"$tmp/big.json" || bad "pricing a huge model failed"
expect 0 "" -- python3 - "$tmp/big.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["memory_max_bytes"] > 1e19, r["memory_max_bytes"]
for rank in r["memory_per_rank"]:
    for k, v in rank.items():
        assert v >= 0, (k, v)
PY

# ---- --emit torchtitan: valid TOML whatever the directory's name ----
odd="$tmp/a$(printf '\001')\"b\\c"
expect 0 "wrote" -- "$vp" plan --model llama3-8b --gpu h100-80gb --gpus 8 --seq 4096 \
    --global-batch 16 --pp 2 --emit torchtitan "$odd"
expect 0 "" -- python3 - "$odd/job.toml" "$odd/schedule.csv" <<'PY'
import sys, tomllib
job = tomllib.load(open(sys.argv[1], "rb"))
assert job["parallelism"]["pipeline_parallel_schedule_csv"] == sys.argv[2]
PY

# ---- no escape sequence from a file reaches the terminal ----
python3 - "$tmp/loop.json" "$tmp/red.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["family"] = "\x1b[31mred\x1b]0;title\x07"
json.dump(s, open(sys.argv[2], "w"))
PY
"$vp" simulate "$tmp/red.json" >"$tmp/red.out" 2>&1 || bad "the schedule with a strange family failed"
grep -q "$esc" "$tmp/red.out" && bad "an escape sequence from a schedule file reached the output"
expect 0 '\x1b[31mred' -- cat "$tmp/red.out"
cat >"$tmp/cfg.json" <<'EOF2'
{"_name_or_path": "\u001b]0;pwned\u0007x", "hidden_size": 256, "num_hidden_layers": 4,
 "num_attention_heads": 4, "intermediate_size": 1024, "vocab_size": 1000,
 "max_position_embeddings": 2048, "hidden_act": "silu"}
EOF2
cat >"$tmp/gpu.json" <<'EOF2'
{"base": "h100-80gb", "name": "\u001b[2Jgpu"}
EOF2
"$vp" simulate 1f1b -p 2 -m 4 --model "$tmp/cfg.json" --gpu "$tmp/gpu.json" >"$tmp/m.out" 2>&1 ||
    bad "pricing with strange names failed: $(head -2 "$tmp/m.out")"
grep -q "$esc" "$tmp/m.out" && bad "an escape sequence from a model or accelerator file reached the output"
expect 0 '\x1b]0;pwned\x07x' -- cat "$tmp/m.out"
echo '{"base": "\u001b[2Jx"}' >"$tmp/base.json"
expect 3 "unknown accelerator '\x1b[2Jx'" -- "$vp" simulate 1f1b -p 2 -m 4 --model llama2-7b \
    --gpu "$tmp/base.json"
"$vp" simulate 1f1b -p 2 -m 4 --model llama2-7b --gpu "$tmp/base.json" 2>&1 | grep -q "$esc" &&
    bad "an escape sequence from a file reached an error message"

# ---- --cost: any bad value exits 2 ----
expect 2 "over 1e+12" -- "$vp" simulate 1f1b -p 4 -m 8 --cost F=1e308
expect 2 "needs a number" -- "$vp" simulate 1f1b -p 4 -m 8 --cost F=x

# ---- an out-of-memory is not a block's timing ----
"$vp" block --example -p 4 >"$tmp/block.json"
for mib in 300 350 400 450 500 550 600 650; do
    out=$(prlimit --as=$((mib * 1048576)) "$vp" block "$tmp/block.json" -m 1000000 2>&1 >/dev/null)
    grep -q "breaks a dependency" <<<"$out" && bad "under $mib MiB an out-of-memory is blamed on the block: $out"
done

# ---- -o keeps a symbolic link and a file's permissions ----
"$vp" schedule 1f1b -p 2 -m 2 -o "$tmp/target.json"
ln -s target.json "$tmp/link.json"
expect 0 "" -- "$vp" schedule gpipe -p 2 -m 2 -o "$tmp/link.json"
[ -L "$tmp/link.json" ] || bad "-o replaced the symbolic link"
grep -q '"family": "gpipe"' "$tmp/target.json" || bad "-o did not write the link's target"
chmod 600 "$tmp/target.json"
expect 0 "" -- "$vp" schedule 1f1b -p 2 -m 2 -o "$tmp/target.json"
[ "$(stat -c %a "$tmp/target.json")" = 600 ] || bad "-o loosened 0600 to $(stat -c %a "$tmp/target.json")"
finish
