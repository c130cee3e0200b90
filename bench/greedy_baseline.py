#!/usr/bin/env python3
"""The baseline rows of bench_greedy from any release's `vpipe` binary: reads the cases
(`bench_greedy --grid` on stdin), runs `vpipe compare` and `vpipe plan` of that binary on
each, and prints, per case, v-min's and v-half's bubble and the planner's at their memory:

    base  P  M  F  B  W  C  WHAT  BUBBLE  MAKESPAN
                                    (WHAT: v-min, v-half, plan@v-min, plan@v-half)

bench/greedy_baseline.txt holds these rows for the code before the greedy V search (the V
block search alone), made with

    build/bench/bench_greedy --grid | python3 bench/greedy_baseline.py OLD/vpipe

python3 standard library only.
"""
import json
import subprocess
import sys


def run_json(vpipe, args):
    res = subprocess.run([vpipe, *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    vpipe = sys.argv[1]
    print(f"# baseline of bench_greedy: {vpipe}", flush=True)
    for line in sys.stdin:
        f = line.rstrip("\n").split("\t")
        if f[0] != "case":
            continue
        p, m, cost = f[1], f[2], f"F={f[3]},B={f[4]},W={f[5]},c={f[6]}"
        key = "\t".join(f[1:7])
        rows = {x["family"]: x for x in run_json(vpipe, ["compare", "-p", p, "-m", m,
                                                          "--cost", cost])}
        for fam, limit in (("v-min", f[7]), ("v-half", f[8])):
            plan = run_json(vpipe, ["plan", "-p", p, "-m", m, "--cost", cost,
                                    "--memory", f"{limit}u"])
            for what, x in ((fam, rows[fam]), (f"plan@{fam}", plan)):
                print(f"base\t{key}\t{what}\t{x['bubble']:.9f}\t{x['makespan']:.9g}", flush=True)


if __name__ == "__main__":
    main()
