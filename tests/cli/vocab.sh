# Vocabulary parallelism on the command line: `train --vocab-parallel` is bit-identical to
# the single-rank reference with as many vocabulary shards (`-p 1 --vocab-shards K`) and
# within float rounding of the unsplit run; the schedule commands take --vocab-parallel;
# bad requests get a clear message. Usage: vocab.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"
model="-m 8 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --clip 0.5 --data /usr/share/common-licenses/GPL-3"
steps="--steps 3"
digest() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["param_digest"], d["train_loss"], d["val_loss"])'; }

ref=$("$vp" train -p 1 --vocab-shards 4 $model $steps --json 2>/dev/null | digest)
[ -n "$ref" ] || bad "no reference result"
for family in v-half v-min 1f1b zb-v; do
    got=$("$vp" train -p 4 --schedule $family --vocab-parallel $model $steps --json 2>/dev/null | digest)
    expect 0 "$ref" -- echo "$got"
done
plain=$("$vp" train -p 1 $model $steps --json 2>/dev/null | digest)
python3 - "$ref" "$plain" <<'PY' || bad "4 shards are not within float rounding of the unsplit run: $ref vs $plain"
import sys
a, b = sys.argv[1].split(), sys.argv[2].split()
assert a[0] != b[0]  # the rounding differs ...
for x, y in zip(a[1:], b[1:]):  # ... by little
    assert abs(float(x) - float(y)) < 1e-5 * abs(float(y)), (x, y)
PY
one=$("$vp" train -p 1 --vocab-shards 1 $model $steps --json 2>/dev/null | digest)
expect 0 "$plain" -- echo "$one" # one shard: the unsplit arithmetic, bit for bit

# the report says so; the schedule commands carry the passes
expect 0 '"vocab_shards": 4' -- "$vp" train -p 4 --schedule v-half --vocab-parallel $model --steps 1 --json
expect 0 "S0.0 T0.0" -- "$vp" schedule v-half -p 4 -m 8 --vocab-parallel --format text
expect 0 '"vocab_parallel": true' -- "$vp" simulate v-min -p 4 -m 8 --vocab-parallel --cost S=0.2,T=0.3,E=0.05 --json
"$vp" schedule zb-v -p 2 -m 4 --vocab-parallel -o "$tmp/v.json" >/dev/null 2>&1
expect 0 "valid" -- "$vp" validate "$tmp/v.json"
expect 0 "" -- "$vp" train --schedule-file "$tmp/v.json" -m 4 --layers 8 --width 32 --heads 2 --seq 16 --microbatch 2 --data /usr/share/common-licenses/GPL-3 --steps 1

# bad requests
"$vp" schedule zb-v -p 2 -m 4 -o "$tmp/plain.json" >/dev/null 2>&1
expect 3 "has no vocabulary passes" -- "$vp" simulate --vocab-parallel "$tmp/plain.json"
expect 3 "has no vocabulary passes" -- "$vp" train --schedule-file "$tmp/plain.json" --vocab-parallel $model
expect 2 "--vocab-parallel" -- "$vp" train -p 4 --schedule v-half --vocab-shards 4 $model
expect 2 "not --vocab-shards 2" -- "$vp" train -p 4 --schedule v-half --vocab-parallel --vocab-shards 2 $model
expect 2 "planner does not weigh" -- "$vp" train -p 4 --schedule auto --memory 0.5 --vocab-parallel $model
expect 2 "not supported yet" -- "$vp" train -p 4 --schedule v-half --vocab-parallel --checkpoint "$tmp/ck" $model
expect 2 "not supported yet" -- "$vp" train -p 2 --schedule 1f1b --vocab-parallel --dp 2 $model
expect 2 "no vocabulary passes" -- "$vp" schedule 1f1b -p 2 -m 2 --vocab-parallel --format torch-csv
expect 2 "needs a vocabulary of at least 257 entries" -- "$vp" simulate 1f1b -p 257 -m 1 --model vpipe:257,8,1,8 --vocab-parallel
expect 2 "--vocab-shards expects an integer in [1, 256]" -- "$vp" train -p 1 --vocab-shards 300 $model
expect 2 "first and the last stage hold at least one layer" -- "$vp" train -p 2 --schedule 1f1b --vocab-parallel --layers-per-stage 0,8 $model
finish
