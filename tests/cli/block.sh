# vpipe block: user-defined building blocks from JSON, the lifespan report, the example
# block, and clear errors (exit 3) for malformed or colliding blocks.
# Usage: block.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

expect 0 "usage: vpipe block" -- "$vp" block --help
expect 0 '"format": "vpipe-block"' -- "$vp" block --help
expect 2 "needs a block file" -- "$vp" block
expect 2 "come from the block file" -- "$vp" block x.json -p 4

# The example is the 1F1B block: repeating it gives 1F1B's figures (schedules.md §6).
"$vp" block --example -p 8 --cost F=2,B=2,W=2,c=0 >"$tmp/1f1b.json"
expect 0 "interval T=6" -- "$vp" block "$tmp/1f1b.json" -m 32
expect 0 "makespan 234" -- "$vp" block "$tmp/1f1b.json" -m 32
"$vp" block "$tmp/1f1b.json" -m 32 --json >"$tmp/r.json"
expect 0 "" -- python3 - "$tmp/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s, l = d["simulation"], d["lifespan"]
assert s["makespan"] == 234 and abs(s["bubble"] - 0.1795) < 5e-5, s
assert s["peak_memory"] == [8, 7, 6, 5, 4, 3, 2, 1], s["peak_memory"]
assert l["interval"] == 6
for dev in l["devices"]:
    assert dev["bound"] == dev["steady"] == dev["peak"] == 8 - dev["device"], dev
assert [x["lifespan"] for x in l["stages"]] == [6 * (8 - i) for i in range(8)]
assert d["reorder_moves"] == -1
PY

# The block's schedule equals the 1f1b family's, through -o and the validator.
expect 0 "" -- "$vp" block "$tmp/1f1b.json" -m 12 -o "$tmp/blk.json"
"$vp" schedule 1f1b -p 8 -m 12 -o "$tmp/ref.json"
expect 0 "" -- python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["devices"] == b["devices"]' "$tmp/blk.json" "$tmp/ref.json"
expect 0 "valid" -- "$vp" validate "$tmp/blk.json"
expect 0 "makespan" -- sh -c "'$vp' block - -m 4 < '$tmp/1f1b.json'"

# A hand-written V-Min block (p=2): chunk passes of 1, T=6; the file's costs make every
# chunk pass 1; peak 1 unit, bound 1.5 on device 0 (the stages' worst moments differ).
cat >"$tmp/vmin.json" <<'EOF'
{"format": "vpipe-block", "version": 1, "p": 2, "placement": "v", "interval": 6,
 "costs": "F=2,B=2,W=2",
 "passes": [["F", 0, 0], ["F", 3, 3], ["B", 3, 4], ["B", 0, 7], ["W", 3, 5], ["W", 0, 8],
            ["F", 1, 1], ["F", 2, 2], ["B", 2, 5], ["B", 1, 6], ["W", 2, 9], ["W", 1, 10]]}
EOF
"$vp" block "$tmp/vmin.json" -m 8 --json >"$tmp/v.json"
expect 0 "" -- python3 - "$tmp/v.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
dev = d["lifespan"]["devices"]
assert dev[0]["peak"] == 1 and dev[0]["steady"] == 1 and dev[0]["bound"] == 1.5, dev
assert all(x["bound"] >= x["steady"] >= x["peak"] for x in dev), dev
assert d["simulation"]["placement"] == "v"
PY
expect 0 "reorder moves" -- "$vp" block "$tmp/vmin.json" -m 8 --reorder
expect 0 "" -- "$vp" block "$tmp/vmin.json" -m 8 --memory-model zb:0.366 --json

# Errors: bad JSON (line/column), bad fields (path), incomplete and colliding blocks.
printf '{"format": "vpipe-block", "p": 2,\n "passes": [["F", 0, 0],' >"$tmp/bad1.json"
expect 3 "line 2" -- "$vp" block "$tmp/bad1.json"
cp "$tmp/vmin.json" "$tmp/keep.json" # an output over its input: refused, the input kept
expect 2 "-o $tmp/./keep.json would write over the input $tmp/keep.json: name another file" -- \
    "$vp" block "$tmp/keep.json" -m 8 -o "$tmp/./keep.json"
cmp -s "$tmp/vmin.json" "$tmp/keep.json" || bad "block wrote over its input"
printf '{"format": "vpipe-block", "p": 2, "passes": [["F", 0, 0], ["F", 9, 1]]}' >"$tmp/bad2.json"
expect 3 "passes[1]: stage must be an integer in [0, 2)" -- "$vp" block "$tmp/bad2.json"
printf '{"format": "vpipe-block", "p": 2, "passes": [["F",0,0], ["F",1,1], ["BW",1,2]]}' \
    >"$tmp/bad3.json"
expect 3 "stage 0 of microbatch class 0 needs exactly one F" -- "$vp" block "$tmp/bad3.json"
printf '{"format": "vpipe-block", "p": 2, "interval": 2,
 "passes": [["F",0,0], ["F",1,1], ["BW",1,2], ["BW",0,4]]}' >"$tmp/col.json"
expect 3 "blocks collide on device 0 at interval T=2: BW0.0 [4, 6) overlaps F0.2" -- \
    "$vp" block "$tmp/col.json"
printf '{"format": "vpipe-block", "p": 1, "passes": [["F",0,0], ["BW",0,-5]]}' >"$tmp/dep.json"
expect 3 "breaks a dependency" -- "$vp" block "$tmp/dep.json"
printf '{"format": "vpipe-schedule", "p": 1}' >"$tmp/fmt.json"
expect 3 'format: must be "vpipe-block"' -- "$vp" block "$tmp/fmt.json"
expect 3 "missing.json: No such file or directory" -- "$vp" block "$tmp/missing.json"
expect 2 "--cost" -- "$vp" block "$tmp/vmin.json" --cost F=x

finish
