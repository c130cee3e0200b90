"""Tests of the Python package: every call, its errors, and agreement with the command line
(the same JSON, CSV, SVG, terminal and trace bytes, the same error messages) over a grid of
families, shapes and costs.

Run by ctest (label python) with VPIPE_LIBRARY (the built libvpipe.so), VPIPE_CLI (the built
vpipe binary) and VP_SOURCE_DIR set, PYTHONPATH the package's folder.
"""

import json
import os
import re
import subprocess
import sys

import pytest

import vpipe

CLI = os.environ.get("VPIPE_CLI", "")
SOURCE = os.environ.get("VP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
needs_cli = pytest.mark.skipif(not CLI, reason="VPIPE_CLI (the vpipe binary) is not set")


def cli(*args):
    """Runs the vpipe binary: (exit code, stdout, the error message without its prefix)."""
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr.strip().removeprefix("vpipe: error: ")


def cli_out(*args):
    rc, out, err = cli(*args)
    assert rc == 0, err
    return out


# ---- the library, its version, its lists -------------------------------------------------


def test_version_is_the_librarys_and_the_projects():
    text = open(os.path.join(SOURCE, "CMakeLists.txt")).read()
    project = re.search(r"project\(vpipe VERSION ([0-9.]+)", text).group(1)
    assert vpipe.library_version() == vpipe.__version__ == project


def test_library_path_is_the_one_asked_for():
    assert os.environ.get("VPIPE_LIBRARY")
    assert vpipe.library_path() == os.environ["VPIPE_LIBRARY"]


def run_python(code, **env):
    """Runs code in a fresh interpreter with the package importable and env applied
    (a value None removes the variable)."""
    e = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(vpipe.__file__)))
    for k, v in env.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)


def test_a_missing_library_is_an_error_naming_what_to_do():
    r = run_python("import vpipe\ntry:\n    vpipe.families()\nexcept vpipe.Error as e:\n"
                   "    print(e.status, e)", VPIPE_LIBRARY="/nonexistent/libvpipe.so")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("VP_EIO cannot load libvpipe: set VPIPE_LIBRARY")
    assert "/nonexistent/libvpipe.so" in r.stdout


def test_the_system_loader_finds_the_library():
    lib_dir = os.path.dirname(os.environ["VPIPE_LIBRARY"])
    r = run_python("import vpipe; print(vpipe.library_path(), vpipe.library_version())",
                   VPIPE_LIBRARY=None, PATH="/usr/bin:/bin", LD_LIBRARY_PATH=lib_dir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["libvpipe.so.0", vpipe.__version__]


@needs_cli
def test_families_are_the_command_lines():
    listed = [line.split()[0] for line in cli_out("list").splitlines()
              if line and not line[0].isspace()]
    assert vpipe.families() == listed


def test_model_and_gpu_presets():
    assert "llama2-7b" in vpipe.models() and "h100-80gb" in vpipe.gpus()
    assert len(set(vpipe.models())) == len(vpipe.models())


def test_every_public_name_is_documented():
    for name in vpipe.__all__:
        assert getattr(vpipe, name).__doc__, name
    for name in ["simulate", "simulate_json", "to_json", "to_torch_csv", "svg", "ascii",
                 "trace", "price"]:
        assert getattr(vpipe.Schedule, name).__doc__, name


# ---- schedules: every output agrees with the command line ---------------------------------

SHAPES = [(4, 8), (3, 6)]
COSTS = [None, "F=2,B=3,W=1,c=0.5"]
GRID = [(f, p, m, c) for f in vpipe.families() for p, m in SHAPES for c in COSTS]


def grid_id(case):
    f, p, m, c = case
    return f"{f}-p{p}-m{m}-{'unit' if c is None else 'costs'}"


@needs_cli
@pytest.mark.parametrize("case", GRID, ids=[grid_id(c) for c in GRID])
def test_agrees_with_the_command_line(case):
    family, p, m, costs = case
    flags = [family, "-p", p, "-m", m] + ([] if costs is None else ["--cost", costs])
    rc, out, err = cli("schedule", *flags)
    if rc != 0:  # the family refuses this shape: the same message, the same kind of error
        with pytest.raises(vpipe.Error) as e:
            vpipe.schedule(family, p, m, costs=costs)
        assert e.value.message == err and e.value.status in ("VP_EINVAL", "VP_EUNSUPPORTED")
        return
    s = vpipe.schedule(family, p, m, costs=costs)
    assert (s.family, s.p, s.m) == (family, p, m)
    assert s.to_json() == out
    assert s.simulate_json() == cli_out("simulate", *flags, "--json")
    assert s.svg() == cli_out("render", *flags, "--svg", "-")
    assert s.ascii() == cli_out("render", *flags, "--ascii", "--no-color")
    assert s.trace() == cli_out("render", *flags, "--trace", "-")
    rc, csv, err = cli("schedule", *flags, "--format", "torch-csv")
    if rc == 0:
        assert s.to_torch_csv() == csv
        assert s.to_torch_csv(comms=True) == cli_out("schedule", *flags, "--format",
                                                      "torch-csv-comms")
    else:
        with pytest.raises(vpipe.Error) as e:
            s.to_torch_csv()
        assert e.value.message == err and e.value.status == "VP_EUNSUPPORTED"


@needs_cli
def test_drawing_options_agree_with_the_command_line():
    s = vpipe.schedule("zb-h1", 4, 8, costs=dict(F=1, B=1.5, W=0.5))
    flags = ["zb-h1", "-p", 4, "-m", 8, "--cost", "F=1,B=1.5,W=0.5"]
    assert s.ascii(width=60, fit=True, title="T") == cli_out(
        "render", *flags, "--ascii", "--width", 60, "--fit", "--title", "T", "--no-color")
    assert s.ascii(color=True) == cli_out("render", *flags, "--ascii", "--color")
    assert s.svg(width=900) == cli_out("render", *flags, "--svg", "-", "--width", 900)


def test_simulate_is_the_report():
    s = vpipe.schedule("1f1b", p=8, m=32, costs=dict(F=2, B=2, W=2, c=0))
    r = s.simulate()
    assert r.to_dict() == json.loads(s.simulate_json())
    assert (r.makespan, r.peak_memory_max) == (234, 8)  # the paper's 1F1B
    assert r.costs == vpipe.Costs(F=2, B=2, W=2, c=0, FB=None, R=None)
    assert len(r.peak_memory) == s.p == 8 and s.stages == 8 and s.placement == "single"


def test_memory_model_and_interleaved_options():
    at_w = vpipe.schedule("zb-2p", 4, 8).simulate()["peak_memory_max"]
    zb = vpipe.schedule("zb-2p", 4, 8, memory_model="zb:0.2").simulate()["peak_memory_max"]
    assert zb < at_w
    s = vpipe.schedule("interleaved", 4, 8, v=3)
    assert s.stages == 12 and s.placement == "loop"
    assert s.torchtitan_schedule == "PipelineScheduleMulti"


def test_torch_export_advice():
    s = vpipe.schedule("v-half", 4, 8)
    assert s.torchtitan_schedule == "ZBVZeroBubble"
    assert "ZBVZeroBubble" in s.torch_notes
    assert vpipe.schedule("dualpipe", 4, 8).torchtitan_schedule is None


# ---- reading schedules -------------------------------------------------------------------


@needs_cli
def test_load_and_loads_agree_with_the_command_line(tmp_path):
    s = vpipe.schedule("zb-v", 4, 8)
    csv, js = tmp_path / "zbv.csv", tmp_path / "zbv.json"
    csv.write_text(s.to_torch_csv())
    js.write_text(s.to_json())
    report = cli_out("simulate", csv, "--json", "--cost", "F=2,B=2,W=1")
    with open(csv) as f:
        loaded = [vpipe.load(path, costs="F=2,B=2,W=1") for path in [csv, str(csv), f]]
    loaded += [vpipe.loads(text, costs="F=2,B=2,W=1") for text in [csv.read_text(),
                                                                   csv.read_bytes()]]
    for t in loaded:
        assert t.simulate_json() == report
        assert t.to_torch_csv() == csv.read_text()
        assert (t.family, t.p, t.m) == ("custom", 4, 8)
    back = vpipe.loads(js.read_text())
    assert back.to_json() == s.to_json() and back.family == "zb-v"
    assert vpipe.load(str(js)).svg() == cli_out("render", js, "--svg", "-")


@needs_cli
def test_load_errors_are_the_command_lines(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("0F0,0I0,0W0\n1F0\n")  # rank 1's stage 1 has no backward
    rc, _, err = cli("validate", bad)
    assert rc == 3
    with pytest.raises(vpipe.Error) as e:
        vpipe.load(bad)
    where = f"{bad}:{e.value.line}:{e.value.column}: " if e.value.line else ""
    assert where + e.value.message == err
    assert e.value.status == "VP_EVALIDATION"
    with pytest.raises(vpipe.Error) as e:
        vpipe.loads("garbage\n")
    assert (e.value.status, e.value.line, e.value.column) == ("VP_EPARSE", 1, 1)
    assert str(e.value) == "line 1, column 1: " + e.value.message
    with pytest.raises(vpipe.Error) as e:
        vpipe.load(tmp_path / "missing.csv")
    assert e.value.status == "VP_EIO"
    assert e.value.message == cli("validate", tmp_path / "missing.csv")[2]
    with pytest.raises(vpipe.Error) as e:
        vpipe.loads(b"  \n")
    assert e.value.status == "VP_EPARSE"


# ---- planning ------------------------------------------------------------------------------

PLANS = [
    dict(p=8, m=32, memory=0.5, costs=dict(F=2, B=2, W=2)),
    dict(p=4, m=8, memory="3u"),
    dict(p=6, m=12, memory="0.7", memory_model="zb:0.3", costs="F=1,B=1.2,W=0.8,c=0.1"),
]


def plan_flags(kw):
    flags = ["-p", kw["p"], "-m", kw["m"], "--memory", kw["memory"]]
    costs = kw.get("costs")
    if costs is not None:
        text = costs if isinstance(costs, str) else ",".join(f"{k}={v}" for k, v in costs.items())
        flags += ["--cost", text]
    if "memory_model" in kw:
        flags += ["--memory-model", kw["memory_model"]]
    return flags


@needs_cli
@pytest.mark.parametrize("kw", PLANS, ids=["fraction", "units", "zb-model"])
def test_plan_agrees_with_the_command_line(kw):
    plan = vpipe.plan(**kw)
    assert plan.json == cli_out("plan", *plan_flags(kw), "--json")
    assert plan.schedule.to_json() == cli_out("plan", *plan_flags(kw), "-o", "-")
    assert plan.report["reason"] == plan.reason
    assert plan.choice.split()[0] == plan.schedule.family or plan.choice.startswith("v-block")
    memories = [f["memory"] for f in plan.frontier]
    assert memories == sorted(memories) and any(f["fits"] for f in plan.frontier)


def test_plan_answers_the_papers_budget():
    plan = vpipe.plan(p=8, m=32, memory=0.5, costs=dict(F=2, B=2, W=2), threads=2)
    assert plan.report["peak_memory_max"] <= 4
    assert plan.schedule.simulate()["makespan"] == plan.report["makespan"]


@needs_cli
def test_plan_errors_are_the_command_lines():
    rc, _, err = cli("plan", "-p", 4, "-m", 8, "--memory", "0.01")
    with pytest.raises(vpipe.Error) as e:
        vpipe.plan(p=4, m=8, memory=0.01)
    assert rc == 2 and e.value.message == err
    with pytest.raises(vpipe.Error) as e:
        vpipe.plan(p=4, m=8, memory="half")
    assert e.value.message.startswith("option 'memory' 'half': column 1:")


# ---- request errors ------------------------------------------------------------------------


@pytest.mark.parametrize("call, status, message", [
    (lambda: vpipe.schedule("nope", 4, 8), "VP_EINVAL", "unknown family 'nope' (vpipe list)"),
    (lambda: vpipe.schedule("1f1b", 0, 8), "VP_EINVAL", "option 'p' must be an integer in [1,"),
    # a bad option's text is a bad request (the command line's exit 2), named as the door
    # names options ('cost', whichever keyword the package was given)
    (lambda: vpipe.schedule("1f1b", 4, 8, costs="F=1,Q=2"), "VP_EINVAL",
     "option 'cost' 'F=1,Q=2': column 5: unknown cost key 'Q'"),
    (lambda: vpipe.schedule("1f1b", 4, 8, costs=dict(F=-1)), "VP_EINVAL", "option 'cost' "),
    (lambda: vpipe.schedule("1f1b", 4, 8, costs=dict(F="x")), "VP_EINVAL",
     "option 'costs': F must be a number"),
    (lambda: vpipe.schedule("1f1b", 4, 8, memory_model="zb:2"), "VP_EINVAL",
     "option 'memory_model' 'zb:2':"),
    (lambda: vpipe.schedule("1f1b", 4, 8, max_ops=10), "VP_ELIMIT", ""),
    (lambda: vpipe.schedule("1f1b", 4, 8).ascii(width=5), "VP_EINVAL",
     "option 'width' must be an integer in [20, 100000]"),
    (lambda: vpipe.price("1f1b", 4, 8, model="nope", gpu="h100-80gb"), "VP_EINVAL",
     "option 'model' nope: unknown model 'nope'"),
    (lambda: vpipe.price("1f1b", 4, 8, model="llama2-7b", gpu="h100-80gb", recompute="some"),
     "VP_EINVAL", "option 'recompute': unknown recomputation 'some'"),
    (lambda: vpipe.price("1f1b", 4, 8, model="llama2-7b", gpu="h100-80gb", split="odd"),
     "VP_EINVAL", "option 'split': unknown split 'odd'"),
    (lambda: vpipe.price("1f1b", 4, 8, model="llama2-7b", gpu="h100-80gb", tp=3), "VP_EINVAL",
     ""),
])
def test_errors(call, status, message):
    with pytest.raises(vpipe.Error) as e:
        call()
    assert e.value.status == status
    assert e.value.message.startswith(message), e.value.message


@needs_cli
def test_the_limit_message_is_the_command_lines():
    rc, _, err = cli("schedule", "1f1b", "-p", 4, "-m", 8, "--max-ops", 10)
    with pytest.raises(vpipe.Error) as e:
        vpipe.schedule("1f1b", 4, 8, max_ops=10)
    assert rc == 2 and e.value.message == err


# ---- pricing -------------------------------------------------------------------------------


def test_price_of_a_family_is_the_price_of_its_schedule():
    setup = dict(model="llama2-7b", gpu="h100-80gb", seq=4096, tp=2, dp=2, sp=True)
    report = vpipe.price("1f1b", 4, 8, **setup)
    assert report == vpipe.schedule("1f1b", 4, 8).price(**setup)
    assert (report["family"], report["p"], report["tp"], report["gpus"]) == ("1f1b", 4, 2, 16)
    assert report["step_time_s"] > report["makespan_s"] > 0


def test_price_setup_reaches_the_library():
    base = dict(model="llama2-7b", gpu="a100-80gb", seq=2048)
    plain = vpipe.price("v-half", 4, 8, **base)
    full = vpipe.price("v-half", 4, 8, recompute="full", **base)
    act = [r["activations"] for r in plain["memory_per_rank"]]
    assert all(f["activations"] < a for f, a in zip(full["memory_per_rank"], act))
    even = vpipe.price("1f1b", 4, 8, split="even", **base)
    assert even["layers_per_stage"] == [8, 8, 8, 8]
    given = vpipe.price("1f1b", 4, 8, layers_per_stage=[5, 9, 9, 9], **base)
    assert given["layers_per_stage"] == [5, 9, 9, 9]


def test_zero_stages_shard_the_states():
    base = dict(model="llama3-8b", gpu="h100-80gb", seq=4096, dp=8, flash=True)
    rank = [vpipe.price("1f1b", 1, 4, zero=z, **base)["memory_per_rank"][0] for z in range(4)]
    assert rank[0]["optimizer"] == 8 * rank[1]["optimizer"]
    assert rank[1]["grads"] == 8 * rank[2]["grads"]
    assert rank[2]["params"] == 8 * rank[3]["params"]
    old = vpipe.price("1f1b", 1, 4, zero1=True, **base)  # the older boolean is stage 1
    assert old == vpipe.price("1f1b", 1, 4, zero=1, **base)
    with pytest.raises(vpipe.Error) as e:
        vpipe.price("1f1b", 1, 4, zero=4, **base)
    assert "option 'zero' must be an integer in [0, 3]" in str(e.value)


@needs_cli
def test_vocabulary_parallelism_agrees_with_the_command_line():
    flags = ["v-half", "-p", 4, "-m", 8, "--cost", "S=0.5,T=0.5,E=0.1", "--vocab-parallel"]
    s = vpipe.schedule("v-half", 4, 8, costs=dict(S=0.5, T=0.5, E=0.1), vocab_parallel=True)
    assert s.to_json() == cli_out("schedule", *flags)
    assert s.simulate_json() == cli_out("simulate", *flags, "--json")
    assert s.simulate()["vocab_parallel"] is True
    kinds = {op.kind for ops in s.ops for op in ops}
    assert {"EF", "EB", "S", "T"} <= kinds
    assert all(op.stage == d for d, ops in enumerate(s.ops) for op in ops
               if op.kind in ("EF", "EB", "S", "T"))
    plain = vpipe.price("v-half", 8, 32, model="llama3-8b", gpu="h100-80gb", seq=2048)
    vocab = vpipe.price("v-half", 8, 32, model="llama3-8b", gpu="h100-80gb", seq=2048,
                        vocab_parallel=True)
    spread = lambda r: (max(m.total for m in r.memory_per_rank) -
                        min(m.total for m in r.memory_per_rank))
    assert vocab.step_time_s <= plain.step_time_s and spread(vocab) < spread(plain) / 4
