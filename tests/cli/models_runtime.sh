#!/usr/bin/env bash
# Issue 15's acceptance, exact on vpipe's own model: for every family at p = 2 and 4, the
# per-rank bytes `vpipe simulate FILE --model vpipe:L,W,H,S --json` predicts (parameters,
# gradients, AdamW states, activations) equal what `vpipe train --json` measures for the
# same schedule file, byte for byte. The runtime reports them as
#   "memory_per_rank": [{"params": B, "grads": B, "optimizer": B, "activations": B, ...}]
# (one object per pipeline rank, bytes); 1f1b-r's R passes are priced as the runtime runs
# them. Usage: models_runtime.sh VPIPE SOURCE_DIR
vp=$1
src=$2
. "$src/tests/cli/expect.bash"

. "$src/tests/cli/own_model.bash"
own_model_check '
import json, sys
measured = json.load(open(sys.argv[1]))["memory_per_rank"]
predicted = json.load(open(sys.argv[2]))["memory_per_rank"]
assert len(measured) == len(predicted), (len(measured), len(predicted))
for rank, (got, want) in enumerate(zip(measured, predicted)):
    for key in ("params", "grads", "optimizer", "activations"):
        assert got[key] == want[key], (sys.argv[3:], rank, key, got[key], want[key])
'
finish
