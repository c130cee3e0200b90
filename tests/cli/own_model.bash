# Sourced by the CLI scripts that hold vpipe's own model's priced bytes against what its
# runtime measures: `own_model_check PYTHON` trains one step of every family at p = 2 and
# 4 from a schedule file and prices the same file with `simulate FILE --model
# vpipe:8,32,2,16`, then runs the PYTHON check with sys.argv[1:] = train JSON, price JSON,
# family, p. The same file on both sides: a cost-aware family built from flags would get
# unit costs in train and the model's costs in simulate --model. Needs $vp, $tmp, expect.
own_model_check() {
    local check=$1 p f
    local own=(--layers 8 --width 32 --heads 2 --seq 16 --microbatch 2)
    for p in 2 4; do
        for f in $("$vp" list | awk '/^[a-z]/ {print $1}'); do
            "$vp" schedule "$f" -p "$p" -m $((2 * p)) -o "$tmp/own.json"
            if ! "$vp" train --schedule-file "$tmp/own.json" -p "$p" --steps 1 "${own[@]}" \
                --json >"$tmp/train.json" 2>"$tmp/train.err"; then
                bad "train $f p=$p failed: $(cat "$tmp/train.err")"
                continue
            fi
            "$vp" simulate "$tmp/own.json" --model vpipe:8,32,2,16 --mbs 2 --json >"$tmp/price.json"
            expect 0 "" -- python3 -c "$check" "$tmp/train.json" "$tmp/price.json" "$f" "$p"
        done
    done
}
