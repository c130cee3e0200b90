"""Tests of what makes the package feel like Python: reports as dataclasses with the JSON's
field names, a schedule's ops as data, the notebook pictures and tables, the exception
classes, numbers of any kind (numpy's when Debian's python3-numpy is installed), load
and loads, and costs given as a dict checked before they reach the library.

Run by ctest (label python) with VPIPE_LIBRARY (the built libvpipe.so) set.
"""

import dataclasses
import decimal
import fractions
import json
import os
import pickle
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import vpipe

PRICE = dict(model="llama2-7b", gpu="h100-80gb", seq=2048)


def json_keys(records):
    """Every key of every object in a list of parsed JSON objects."""
    return set().union(*(r.keys() for r in records))


def field_names(cls):
    return {f.name for f in dataclasses.fields(cls)}


# ---- reports are dataclasses whose fields are the JSON's keys -----------------------------


def test_the_simulation_report_has_the_jsons_fields():
    s = vpipe.schedule("zb-h1", 4, 8, costs="F=1,B=1.5,W=0.5,c=0.1,FB=2,R=0.7")
    r = s.simulate()
    data = json.loads(s.simulate_json())
    assert dataclasses.is_dataclass(r) and isinstance(r, vpipe.SimulationReport)
    assert field_names(vpipe.SimulationReport) == set(data) | {"peak_memory_bytes"}
    assert r.to_dict() == data and r.keys() == list(data)
    for key, value in data.items():
        assert r[key] is getattr(r, key)
        assert value == (r[key].to_dict() if key == "costs" else r[key])
    assert r.costs == vpipe.Costs(F=1, B=1.5, W=0.5, c=0.1, FB=2, R=0.7)
    assert r.costs.to_dict() == data["costs"] and r["costs"]["FB"] == 2
    assert r.peak_memory_bytes is None and "peak_memory_bytes" not in r
    with pytest.raises(KeyError):
        r["peak_memory_bytes"]
    assert r.get("peak_memory_bytes", "none") == "none"
    assert dict(r)["bubble"] == r.bubble
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.bubble = 0


def test_costs_left_out_are_none():
    r = vpipe.schedule("1f1b", 2, 4).simulate()
    assert (r.costs.FB, r.costs.R) == (None, None)
    assert r.costs.to_dict() == {"F": 1, "B": 1, "W": 1, "c": 0}


def test_the_plan_report_and_its_frontier():
    plan = vpipe.plan(p=4, m=8, memory=0.5, costs=dict(F=1, B=1, W=1))
    data = json.loads(plan.json)
    assert isinstance(plan.report, vpipe.PlanReport)
    assert isinstance(plan.report, vpipe.SimulationReport)  # the chosen one's simulation
    assert field_names(vpipe.PlanReport) == set(data) | {"peak_memory_bytes"}
    assert field_names(vpipe.Candidate) == json_keys(data["frontier"] + data["candidates"]) | {
        "memory_bytes"}
    assert plan.report.to_dict() == data
    assert plan.frontier == plan.report.frontier and len(plan.frontier) > 1
    assert all(isinstance(c, vpipe.Candidate) for c in plan.frontier + plan.report.candidates)
    assert [c.memory for c in plan.frontier] == [c["memory"] for c in data["frontier"]]
    assert plan.choice.split()[0] == plan.report.family and plan.reason == data["reason"]


def test_the_price_result_and_its_parts():
    result = vpipe.price("1f1b", 4, 8, tp=2, **PRICE)
    again = vpipe.schedule("1f1b", 4, 8).price(tp=2, **PRICE)
    data = result.to_dict()
    assert isinstance(result, vpipe.PriceResult) and result == again
    assert field_names(vpipe.PriceResult) == set(data)
    assert field_names(vpipe.RankMemory) == json_keys(data["memory_per_rank"])
    assert field_names(vpipe.StageCost) == json_keys(data["per_stage"])
    assert [m.rank for m in result.memory_per_rank] == [0, 1, 2, 3]
    for m in result.memory_per_rank:
        assert isinstance(m, vpipe.RankMemory)
        assert m.allocated == pytest.approx(sum([m.params, m.grads, m.optimizer, m.activations,
                                                 m.buffers, m.workspace, m.logits, m.gathers]),
                                            abs=8)
        assert m.reserved == pytest.approx(m.allocated + m.fragmentation, abs=2)
        assert m.total == pytest.approx(m.reserved + m.context + m.comm + m.reserve, abs=4)
    assert max(m.total for m in result.memory_per_rank) == result.memory_max_bytes
    assert sum(st.layers for st in result.per_stage) == 32 and result.tp == 2


def test_a_key_a_newer_library_adds_is_kept():
    data = json.loads(vpipe.schedule("1f1b", 2, 4).simulate_json())
    r = vpipe.SimulationReport.from_dict(dict(data, new_figure=[1, 2]))
    assert r["new_figure"] == [1, 2] and r.to_dict() == dict(data, new_figure=[1, 2])
    assert r == vpipe.schedule("1f1b", 2, 4).simulate()


def test_a_null_the_json_gives_stays_and_an_absent_key_stays_absent():
    data = json.loads(vpipe.schedule("1f1b", 2, 4).simulate_json())
    given = vpipe.SimulationReport.from_dict(dict(data, peak_memory_bytes=None))
    assert given.peak_memory_bytes is None and "peak_memory_bytes" in given
    assert given.to_dict() == dict(data, peak_memory_bytes=None)
    absent = vpipe.SimulationReport.from_dict({k: v for k, v in data.items() if k != "bubble"})
    assert absent.bubble is None and "bubble" not in absent and "bubble" not in absent.to_dict()


# ---- a schedule's ops ---------------------------------------------------------------------


@pytest.mark.parametrize("family, costs", [("1f1b", None), ("zb-v", None), ("1f1b-r", None),
                                           ("interleaved", None), ("dualpipe", "FB=1.5")])
def test_ops_are_the_schedules(family, costs):
    s = vpipe.schedule(family, 4, 8, costs=costs)
    layout = json.loads(s.to_json())
    ops = s.ops
    assert len(ops) == s.p and s.stage_device == layout["stage_device"]
    for d, device in enumerate(ops):
        assert all(isinstance(op, vpipe.Op) for op in device)
        assert all(s.stage_device[op.stage] == d for op in device)
        as_json = [[op.kind, op.stage, op.microbatch] + (
            [op.backward.kind, op.backward.stage, op.backward.microbatch] if op.backward else [])
            for op in device]
        assert as_json == layout["devices"][d]
    forwards = [(op.stage, op.microbatch) for device in ops for op in device
                if op.kind in ("F", "F&B")]
    route_len = layout["route_len"]  # each microbatch passes route_len stages
    assert len(forwards) == len(set(forwards)) == s.m * route_len
    if family == "dualpipe":
        fused = [op for device in ops for op in device if op.kind == "F&B"]
        assert fused and all(op.backward.kind in ("B", "BW") for op in fused)
        assert str(fused[0]).startswith(f"F{fused[0].stage}.{fused[0].microbatch}&")
    assert str(ops[0][0]) == "F0.0"


# ---- what a notebook shows ----------------------------------------------------------------


def parse_html(text):
    """The HTML as XML (the tables are well-formed, every text escaped)."""
    return ET.fromstring(f"<div>{text}</div>")


def test_a_schedule_shows_its_picture():
    s = vpipe.schedule("v-half", 4, 8)
    svg = s._repr_svg_()
    assert svg == s.svg() and ET.fromstring(svg).tag.endswith("svg")


def test_a_simulation_report_shows_a_table():
    r = vpipe.schedule("zb-h1", 4, 8).simulate()
    tables = parse_html(r._repr_html_()).findall("table")
    assert [t.find("caption").text for t in tables] == ["SimulationReport", "per device"]
    rows = {tr[0].text: tr[1].text for tr in tables[0].findall("tr")[1:]}
    assert rows["family"] == "zb-h1" and float(rows["makespan"]) == r.makespan
    assert rows["costs"] == "F=1, B=1, W=1, c=0"
    per_device = [[td.text for td in tr] for tr in tables[1].findall("tr")[1:]]
    assert [float(row[1]) for row in per_device] == r.peak_memory
    assert [row[0] for row in per_device] == ["0", "1", "2", "3"]


def test_a_plan_shows_its_schedule_and_report():
    plan = vpipe.plan(p=8, m=32, memory=0.5)
    html = plan._repr_html_()
    svg = plan.schedule.svg()
    assert svg.startswith("<?xml") and html.startswith(svg[svg.index("<svg"):])
    tables = parse_html(html[len(svg) - svg.index("<svg"):]).findall("table")
    captions = [t.find("caption").text for t in tables]
    assert captions == ["PlanReport", "per device", "frontier", "candidates"]
    reason = [tr[1].text for tr in tables[0].findall("tr") if tr[0].text == "reason"]
    assert reason == [plan.reason] and "<=" in plan.reason  # escaped, and read back
    frontier = tables[2].findall("tr")[1:]
    assert len(frontier) == min(len(plan.frontier), 50)
    assert [float(tr[2].text) for tr in frontier] == pytest.approx(
        [c.memory for c in plan.frontier[:50]], rel=1e-5)
    candidates = tables[3].findall("tr")[1:]
    if len(plan.report.candidates) > 50:
        assert candidates[-1][0].text == f"... {len(plan.report.candidates) - 50} more"


def test_a_price_result_shows_its_memory_per_rank():
    result = vpipe.price("1f1b", 4, 8, **PRICE)
    tables = parse_html(result._repr_html_()).findall("table")
    # the simulation's per-device figures first: a price is `simulate --model --json`
    assert [t.find("caption").text for t in tables] == ["PriceResult", "per device",
                                                        "memory_per_rank", "per_stage"]
    head = [th.text for th in tables[2].find("tr")]
    assert head == ["rank", "params", "grads", "optimizer", "activations", "buffers",
                    "workspace", "logits", "gathers", "allocated", "fragmentation", "reserved",
                    "context", "comm", "reserve", "total"]
    totals = [int(tr[-1].text) for tr in tables[2].findall("tr")[1:]]
    assert totals == [m.total for m in result.memory_per_rank]


# ---- errors ------------------------------------------------------------------------------

BIDIR = vpipe.schedule("dualpipe", 4, 8)
DEADLOCK = json.dumps({
    "format": "vpipe-schedule", "version": 1, "family": "x", "p": 2, "stages": 2,
    "microbatches": 2, "route_len": 2, "placement": "single", "stage_device": [0, 1],
    "devices": [[["F", 0, 0], ["B", 0, 0], ["W", 0, 0], ["F", 0, 1], ["B", 0, 1], ["W", 0, 1]],
                [["F", 1, 1], ["F", 1, 0], ["B", 1, 0], ["W", 1, 0], ["B", 1, 1], ["W", 1, 1]]]})


@pytest.mark.parametrize("call, cls, builtin, status", [
    (lambda: vpipe.schedule("nope", 4, 8), vpipe.InvalidArgument, ValueError, "VP_EINVAL"),
    (lambda: vpipe.loads("garbage\n"), vpipe.ParseError, ValueError, "VP_EPARSE"),
    (lambda: vpipe.loads("0F0,0I0,0W0\n1F0\n"), vpipe.ValidationError, ValueError,
     "VP_EVALIDATION"),
    (lambda: vpipe.loads(DEADLOCK), vpipe.DeadlockError, ValueError, "VP_EDEADLOCK"),
    (lambda: BIDIR.to_torch_csv(), vpipe.UnsupportedError, ValueError, "VP_EUNSUPPORTED"),
    (lambda: vpipe.schedule("1f1b", 4, 8, max_ops=10), vpipe.LimitError, ValueError,
     "VP_ELIMIT"),
    (lambda: vpipe.load("/nonexistent/s.json"), vpipe.FileError, OSError, "VP_EIO"),
    (lambda: vpipe.price("1f1b", 4, 8, model="/nonexistent/config.json", gpu="h100-80gb"),
     vpipe.FileError, OSError, "VP_EIO"),
])
def test_each_status_is_its_class_and_a_builtin(call, cls, builtin, status):
    with pytest.raises(cls) as e:
        call()
    assert type(e.value) is cls and isinstance(e.value, vpipe.Error)
    assert isinstance(e.value, builtin) and e.value.status == status


def test_deadlock_is_a_validation_error():
    assert issubclass(vpipe.DeadlockError, vpipe.ValidationError)
    with pytest.raises(vpipe.ValidationError, match="deadlocks"):
        vpipe.loads(DEADLOCK)


def test_a_file_error_names_the_file(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(OSError) as e:
        vpipe.load(missing)
    assert e.value.filename == str(missing) and str(missing) in str(e.value)
    assert str(e.value) == e.value.message  # the library's message, not OSError's format


def test_errors_pickle_and_keep_their_place():
    with pytest.raises(vpipe.ParseError) as e:
        vpipe.loads("garbage\n")
    again = pickle.loads(pickle.dumps(e.value))
    assert type(again) is vpipe.ParseError
    assert (again.status, again.line, again.column, str(again)) == (
        "VP_EPARSE", 1, 1, str(e.value))
    assert str(again).startswith("line 1, column 1: ")


def test_a_missing_library_is_an_oserror():
    code = ("import vpipe\ntry:\n    vpipe.families()\nexcept OSError as e:\n"
            "    print(type(e).__name__, isinstance(e, vpipe.FileError), e.status)")
    env = dict(os.environ, VPIPE_LIBRARY="/nonexistent/libvpipe.so",
               PYTHONPATH=os.path.dirname(os.path.dirname(vpipe.__file__)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.stdout.split() == ["LibraryNotFound", "True", "VP_EIO"], r.stderr


# ---- numbers of any kind -------------------------------------------------------------------


class Index:
    """An integer type of another library: only __index__."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def test_integers_and_reals_of_other_types():
    base = vpipe.schedule("zb-1p", 4, 8, costs=dict(F=1, B=2, W=0.5), memory_limit=3)
    other = vpipe.schedule("zb-1p", Index(4), Index(8),
                           costs=dict(F=fractions.Fraction(1), B=decimal.Decimal(2),
                                      W=fractions.Fraction(1, 2)),
                           memory_limit=decimal.Decimal(3))
    assert other.to_json() == base.to_json()
    assert other.simulate() == base.simulate()


def test_numpy_numbers_and_arrays():
    np = pytest.importorskip("numpy", reason="Debian's python3-numpy is not installed")
    s = vpipe.schedule("zb-h1", np.int64(4), np.int32(8),
                       costs=dict(F=np.float32(1), B=np.float64(1.5), W=np.float16(0.5)))
    assert s.to_json() == vpipe.schedule("zb-h1", 4, 8, costs="F=1,B=1.5,W=0.5").to_json()
    assert s.ascii(width=np.int16(60), fit=np.bool_(True)) == s.ascii(width=60, fit=True)
    plan = vpipe.plan(p=np.uint8(4), m=np.int64(8), memory=np.float64(0.5),
                      threads=np.int8(1))
    assert plan.json == vpipe.plan(p=4, m=8, memory=0.5).json
    setup = dict(PRICE, seq=np.int64(2048))
    given = vpipe.price("1f1b", 4, 8, layers_per_stage=np.array([5, 9, 9, 9]),
                        sp=np.bool_(True), tp=np.int64(2), **setup)
    assert given == vpipe.price("1f1b", 4, 8, layers_per_stage=[5, 9, 9, 9], sp=True, tp=2,
                                **PRICE)
    assert given.layers_per_stage == [5, 9, 9, 9]
    with pytest.raises(vpipe.InvalidArgument, match="finite"):
        vpipe.schedule("1f1b", 4, 8, costs=dict(F=np.float64("nan")))
    with pytest.raises(vpipe.InvalidArgument, match="option 'p' must be an integer"):
        vpipe.schedule("1f1b", np.float64(4.5), 8)


@pytest.mark.parametrize("kw, message", [
    (dict(p=4.5), "option 'p' must be an integer"),
    (dict(p="4"), "option 'p' must be an integer"),
    (dict(p=True), "option 'p' must be an integer"),
    (dict(p=object()), "option 'p' cannot be object"),
    (dict(memory_limit=float("inf")), "option 'memory_limit' must be a finite number"),
    (dict(memory_limit=complex(1, 1)), "option 'memory_limit' cannot be complex"),
])
def test_numbers_of_the_wrong_kind(kw, message):
    with pytest.raises(vpipe.InvalidArgument) as e:
        vpipe.schedule("zb-1p", **dict(dict(p=4, m=8), **kw))
    assert e.value.message.startswith(message), e.value.message


# ---- load reads files, loads reads text --------------------------------------------------


def test_load_never_takes_a_str_for_text(tmp_path):
    text = vpipe.schedule("1f1b", 2, 4).to_json()
    with pytest.raises(vpipe.FileError):
        vpipe.load(text)  # a str is a path here, however much it looks like JSON
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(vpipe.ParseError):
        vpipe.loads(str(path))  # and text there
    with open(path, "rb") as f:
        assert vpipe.load(f).to_json() == text
    assert vpipe.load(os.fsencode(path)).to_json() == text
    for bad in (lambda: vpipe.load(12), lambda: vpipe.loads(12)):
        with pytest.raises(vpipe.InvalidArgument):
            bad()


# ---- costs given as a dict -----------------------------------------------------------------


@pytest.mark.parametrize("costs, message", [
    ({"F=9,B": 1},
     "option 'costs': unknown cost key 'F=9,B' (known: F, B, W, c, FB, R, S, T, E, O, L)"),
    ({"f": 1}, "option 'costs': unknown cost key 'f'"),
    ({1: 2}, "option 'costs': unknown cost key 1"),
    ({"F": float("nan")}, "option 'costs': F must be a finite number"),
    ({"F": float("inf")}, "option 'costs': F must be a finite number"),
    ({"F": True}, "option 'costs': F must be a number"),
    ({"F": "2"}, "option 'costs': F must be a number"),
    ([("F", 1)], "option 'costs' must be a dict or a str"),
])
def test_cost_keys_and_values_are_checked(costs, message):
    # Before, the keys went into the cost text unchecked: {"F=9,B": 1} built 1F1B with F=9.
    with pytest.raises(vpipe.InvalidArgument) as e:
        vpipe.schedule("1f1b", 4, 8, costs=costs)
    assert e.value.message.startswith(message), e.value.message


def test_every_cost_key_reaches_the_library():
    costs = dict(F=1, B=2, W=3, c=0.25, FB=2.5, R=0.75)
    assert vpipe.schedule("1f1b", 2, 4, costs=costs).simulate().costs.to_dict() == costs
