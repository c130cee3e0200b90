"""Tests of the package's calls over the front door beyond the parity grid: the results
of compare, plan (both planners), model, block and list as dataclasses with the JSON's
field names, their notebook tables, the exports of the whole-configuration planner, the
Reply and its files, numpy inputs, options the package never names, and the errors.

Run by ctest (label python) with VPIPE_LIBRARY, VPIPE_CLI and VP_SOURCE_DIR set.
"""

import dataclasses
import json
import os
import pickle
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import vpipe

CLI = os.environ.get("VPIPE_CLI", "")
SOURCE = os.environ.get("VP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(os.path.abspath(SOURCE), "tests", "parity")
needs_cli = pytest.mark.skipif(not CLI, reason="VPIPE_CLI (the vpipe binary) is not set")
GPT2 = dict(model="gpt2-124m", gpus=8, global_batch=32)  # a whole-configuration plan in ms


def cli_out(*args, cwd=None):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return r.stdout


def fields(cls):
    return {f.name for f in dataclasses.fields(cls)}


def keys(records):
    return set().union(*(r.keys() for r in records))


def parse_html(text):
    return ET.fromstring(f"<div>{text}</div>")


def masked(text):
    return re.sub(r'( refused; |"elapsed_s": )[^ ,\n]*', r"\1X", text)


# ---- compare ------------------------------------------------------------------------------


def test_a_comparison_is_one_report_per_family():
    c = vpipe.compare(p=4, m=8, cost=dict(F=1, B=2, W=1))
    data = json.loads(c.json)
    assert dataclasses.is_dataclass(c) and len(c) == len(data) == len(vpipe.families())
    assert c.families == [row["family"] for row in data] == vpipe.families()
    assert c.to_list() == data and [r.to_dict() for r in c] == data
    assert all(type(row) is vpipe.SimulationReport for row in c)
    assert fields(vpipe.SimulationReport) >= keys(data)
    assert c["zb-v"] is c[c.families.index("zb-v")] and c["zb-v"].costs.B == 2
    assert c[-1] is c.rows[-1] and c[1:3] == c.rows[1:3]
    with pytest.raises(KeyError):
        c["no-such-family"]
    assert c["1f1b"] == vpipe.schedule("1f1b", 4, 8, costs="F=1,B=2,W=1").simulate()


def test_a_comparison_shows_its_table():
    c = vpipe.compare(p=4, m=8)
    table = parse_html(c._repr_html_()).find("table")
    assert table.find("caption").text == "Comparison"
    head = [th.text for th in table.find("tr")]
    assert head == ["family", "makespan", "bubble", "bubble_makespan", "peak_memory_max"]
    rows = table.findall("tr")[1:]
    assert [tr[0].text for tr in rows] == c.families
    assert [float(tr[1].text) for tr in rows] == [row.makespan for row in c]
    priced = vpipe.compare(p=4, m=8, model="llama3-8b")
    assert all(type(row) is vpipe.PriceResult for row in priced)
    head = [th.text for th in parse_html(priced._repr_html_()).find("table").find("tr")]
    assert head[:3] == ["family", "step_time_s", "mfu"] and "fits" in head


@needs_cli
def test_compare_keeps_the_command_lines_text_and_gallery(tmp_path):
    c = vpipe.compare(p=4, m=8, svg="gallery.svg")
    assert c.text == cli_out("compare", "-p", 4, "-m", 8, "--svg", "gallery.svg", cwd=tmp_path)
    assert list(c.files) == ["gallery.svg"] and not os.path.exists("gallery.svg")
    assert c.files["gallery.svg"] == (tmp_path / "gallery.svg").read_text()
    assert c.reply.write(tmp_path / "again") == [str(tmp_path / "again" / "gallery.svg")]
    assert (tmp_path / "again" / "gallery.svg").read_text() == c.files["gallery.svg"]


# ---- plan: both planners ------------------------------------------------------------------


def test_plan_with_a_budget_is_the_budget_planner():
    plan = vpipe.plan(p=4, m=8, memory=0.5)
    assert isinstance(plan, vpipe.Plan) and isinstance(plan.report, vpipe.PlanReport)
    assert plan.files == {} and plan.text.startswith("plan p=4 m=8")
    given = vpipe.plan(p=4, m=8, memory=0.5, output="chosen.json")
    assert given.files == {"chosen.json": given.schedule.to_json()}
    assert given.schedule.to_json() == plan.schedule.to_json() and not os.path.exists(
        "chosen.json")


def test_a_cluster_plan_has_the_jsons_fields():
    cp = vpipe.plan(**GPT2)
    data = json.loads(cp.json)
    assert isinstance(cp, vpipe.ClusterPlan) and dataclasses.is_dataclass(cp)
    assert fields(vpipe.ClusterPlan) == set(data) and cp.to_dict() == data
    assert fields(vpipe.Configuration) == keys(data["top"] + [data["best"]]) | {"params"}
    assert isinstance(cp.best, vpipe.Configuration)
    assert (cp.best.family, cp.best.step_time_s) == (cp.top[0].family, cp.top[0].step_time_s)
    assert all(isinstance(r, vpipe.RankMemory) for r in cp.best.memory_per_rank)
    assert len(cp.best.memory_per_rank) == cp.best.pp and cp.top[0].memory_per_rank is None
    assert set(cp.best_per_family) == set(data["best_per_family"])
    assert all(isinstance(c, vpipe.Configuration) and c.family.startswith(name.split("-r")[0])
               for name, c in cp.best_per_family.items())
    steps = [c.step_time_s for c in cp.top]
    assert steps == sorted(steps) and cp.best.step_time_s == steps[0]
    assert cp.best.dp * cp.best.tp * cp.best.pp == cp.gpus == 8
    assert cp.evaluated + cp.pruned + cp.refused >= cp.evaluated > 0
    s = cp.schedule
    assert isinstance(s, vpipe.Schedule) and (s.family, s.p) == (cp.best.family, cp.best.pp)


@needs_cli
def test_a_cluster_plan_is_the_command_lines(tmp_path):
    flags = ["--model", "gpt2-124m", "--gpus", 8, "--global-batch", 32]
    cp = vpipe.plan(**GPT2)
    assert masked(cp.json) == masked(cli_out("plan", *flags, "--json"))
    assert masked(cp.text) == masked(cli_out("plan", *flags))
    assert cp.schedule.to_json() == cli_out("plan", *flags, "-o", "-")
    assert cp.megatron() == cli_out("plan", *flags, "--emit", "megatron")
    cli_out("plan", *flags, "--emit", "torchtitan", "tt", cwd=tmp_path)
    files = cp.torchtitan()
    assert sorted(files) == ["job.toml", "schedule.csv"] and not os.path.exists("torchtitan")
    for name, text in files.items():
        assert text == (tmp_path / "tt" / name).read_text()
    out = tmp_path / "mine"
    assert cp.torchtitan(str(out)) == files
    assert sorted(os.listdir(out)) == ["job.toml", "schedule.csv"]
    assert (out / "job.toml").read_text() == files["job.toml"]


def test_a_cluster_plan_shows_its_tables():
    cp = vpipe.plan(**GPT2, top=3)
    page = parse_html(cp._repr_html_())
    assert page.find("p").text == cp.reason
    tables = page.findall("table")
    assert [t.find("caption").text for t in tables] == [
        "ClusterPlan", "top", "best_per_family", "the winner's memory_per_rank"]
    top = tables[1].findall("tr")[1:]
    assert len(top) == len(cp.top) == 3 and [tr[0].text for tr in top] == [
        c.family for c in cp.top]
    assert len(tables[3].findall("tr")) == 1 + len(cp.best.memory_per_rank)


def test_plan_fixes_dimensions_and_threads_change_nothing():
    fixed = vpipe.plan(**GPT2, pp=2, recompute="full")
    assert fixed.best.pp == 2 and fixed.best.recompute == "full"
    assert all(c.pp == 2 for c in fixed.top)
    again = vpipe.plan(**GPT2, pp=2, recompute="full", threads=2)
    assert again.to_dict() == dict(fixed.to_dict(), elapsed_s=again.elapsed_s)
    budget = vpipe.plan(p=8, m=32, memory="4u")
    assert vpipe.plan(p=8, m=32, memory="4u", threads=3).json == budget.json


def test_context_parallelism_reaches_pricing_and_the_planner():
    r = vpipe.simulate("1f1b", p=2, m=4, model="llama3-8b", seq=8192, dp=2, cp=2,
                       cp_comm="allgather", flash=True)
    assert r.cp == 2 and r.cp_comm == "allgather" and r.gpus == 2 * 2 * 2
    plain = vpipe.simulate("1f1b", p=2, m=4, model="llama3-8b", seq=8192, dp=2, flash=True)
    assert plain.cp == 1 and plain.cp_comm == "p2p"
    ram = [m.activations for m in r.memory_per_rank], [m.activations for m in plain.memory_per_rank]
    assert all(abs(a / b - 0.5) < 1e-9 for a, b in zip(*ram))  # each rank holds half the tokens
    fixed = vpipe.plan(model="llama3-8b", gpus=8, global_batch=16, seq=8192, flash=True, cp=2)
    assert fixed.best.cp == 2 and all(c.cp == 2 for c in fixed.top)
    assert "--context-parallel-size 2 --cp-comm-type p2p" in fixed.megatron()


# ---- model, list, block -------------------------------------------------------------------


def test_model_show_is_a_model_info():
    info = vpipe.model("show", "llama3-8b", seq=4096, tp=2, sp=True)
    data = json.loads(info.json)
    variants = {"head_dim", "mla", "window", "moe", "layer_kinds"}  # a plain model has none
    assert isinstance(info, vpipe.ModelInfo) and fields(vpipe.ModelInfo) - variants == set(data)
    assert info.to_dict() == data and info.workload == vpipe.Workload(
        seq=4096, mbs=1, tp=2, cp=1, ep=1, etp=1, sp=True, flash=True, recompute="none",
        fp8="off")
    # FlashAttention unless the call turns it off, as on the command line and in the browser
    plain = vpipe.model("show", "llama3-8b", seq=4096, tp=2, sp=True, flash=False)
    assert not plain.workload.flash and plain.parts.layer.act_bytes > info.parts.layer.act_bytes
    layer = info.parts.layer
    assert isinstance(layer, vpipe.ModelPart) and fields(vpipe.ModelPart) == set(
        data["parts"]["layer"])
    assert all(isinstance(t, vpipe.SavedTensor) for t in layer.saved)
    assert fields(vpipe.SavedTensor) == keys(data["parts"]["layer"]["saved"])
    assert info.layers == 32 and info.kv_heads == 8 and info.text.startswith("llama3-8b: 32")
    assert vpipe.model("show", model="llama3-8b", seq=4096, tp=2, sp=True) == info


def test_model_show_mixture_of_experts():
    info = vpipe.model("show", "deepseek-v3", seq=4096, tp=2, sp=True, flash=True)
    data = json.loads(info.json)
    assert fields(vpipe.ModelInfo) - {"head_dim", "window"} == set(data)
    assert info.moe["experts"] == 256 and info.moe["top_k"] == 8 and info.mla["kv_lora"] == 512
    assert 37e9 < info.moe["active_params"] < 38e9 and 670e9 < info.params < 672e9
    kinds = {(k["mlp"], k["attention"]): k["layers"] for k in info.layer_kinds}
    assert kinds == {("dense", "full"): 3, ("moe", "full"): 58}
    assert all(isinstance(k, vpipe.ModelPart) for k in info.layer_kinds)


def test_model_list_is_the_catalog():
    catalog = vpipe.model("list")
    data = json.loads(catalog.json)
    assert isinstance(catalog, vpipe.ModelCatalog) and catalog.to_dict() == data
    assert [m.name for m in catalog.models] == vpipe.models()
    assert [g.name for g in catalog.gpus] == vpipe.gpus()
    assert fields(vpipe.Accelerator) == keys(data["gpus"])
    assert all(m.parts is None and m.workload is None for m in catalog.models)


def test_list_families_is_vpipe_list():
    listed = vpipe.list_families()
    assert [f.name for f in listed] == vpipe.families()
    assert listed["zb-v"].needs and listed.to_list() == json.loads(listed.json)
    assert listed.text.startswith("gpipe ")
    assert [tr[0].text for tr in parse_html(listed._repr_html_()).find("table").findall(
        "tr")[1:]] == vpipe.families()


def test_block_is_a_block_report():
    block = vpipe.block(os.path.join(DATA, "block.json"), m=8, reorder=True)
    data = json.loads(block.json)
    assert isinstance(block, vpipe.BlockReport) and block.to_dict() == data
    assert isinstance(block.simulation, vpipe.SimulationReport)
    assert isinstance(block.lifespan, vpipe.Lifespan) and block.reorder_moves >= 0
    assert [d.device for d in block.lifespan.devices] == list(range(block.simulation.p))
    assert all(d.peak <= d.bound + 1e-9 for d in block.lifespan.devices)
    assert block.schedule.simulate().makespan == block.simulation.makespan
    example = vpipe.block_example(p=8)
    assert json.loads(example)["p"] == 8


# ---- the Reply, operands, schedules held here ---------------------------------------------


def test_call_answers_any_command_and_writes_nothing(tmp_path):
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        reply = vpipe.call("render", "1f1b", p=4, m=8, svg="a.svg", trace="t.json")
        assert os.listdir(tmp_path) == [] and sorted(reply.files) == ["a.svg", "t.json"]
        assert reply.write() == ["a.svg", "t.json"]
        assert (tmp_path / "a.svg").read_text() == reply.files["a.svg"]
    finally:
        os.chdir(here)
    assert str(reply) == reply.stdout == "" and reply.exit == 0 and reply.notes == []
    shown = vpipe.call("model", "show", "gpt2-124m")
    assert shown == vpipe.call("model", operand=["show", "gpt2-124m"])
    held = vpipe.schedule("zb-h1", 4, 8)
    assert vpipe.call("simulate", held, json=True).stdout == held.simulate().json
    assert vpipe.validate(held).stdout.startswith("the schedule: valid (zb-h1")
    assert vpipe.render(held, ascii=True).stdout == held.ascii()
    with pytest.raises(vpipe.InvalidArgument, match="not both"):
        vpipe.call("simulate", held, "1f1b")


def test_a_schedule_says_what_the_command_line_says():
    s = vpipe.schedule("zb-v", 4, 8, costs=dict(F=2, B=2, W=1))
    assert s.to_text().splitlines()[0] == "# zb-v p=4 stages=8 m=8 placement=v"
    assert [line.split(":")[0] for line in s.to_text().splitlines()[1:]] == [
        f"device {d}" for d in range(4)]
    assert s.simulate().costs.F == 2
    assert s.simulate(cost="F=3").costs.F == 3  # a call's own costs win
    assert s.render(ascii=True, width=60).stdout == s.ascii(width=60)
    priced = s.price("llama3-8b")
    assert isinstance(priced, vpipe.PriceResult) and priced.gpu == "h100-80gb"
    assert priced.costs.F != 2  # the model prices it, not the schedule's costs
    assert vpipe.simulate(s, model="llama3-8b") == priced


def test_an_offloading_schedule_has_its_copies_and_host_bytes():
    s = vpipe.schedule("1f1b", 4, 8, offload=1)
    kinds = {op.kind for device in s.ops for op in device}
    assert {"O", "L"} <= kinds and "OO" not in kinds
    plain = vpipe.simulate("1f1b", p=4, m=8)
    sent = s.simulate()
    assert sent.peak_memory_max < plain.peak_memory_max
    priced = vpipe.price("1f1b", p=8, m=16, model="llama3-70b", seq=8192, tp=8, sp=True,
                         flash=True, offload=0.5)
    assert priced["host_max_bytes"] > 0 and 0 < priced["copy_occupancy_max"] <= 1
    assert all(r["host"] >= 0 for r in priced.to_dict()["memory_per_rank"])
    chosen = vpipe.plan(p=4, m=16, memory=0.5, cost="O=0.5", offload="auto")
    assert chosen.report.params == "offload 1 uniform"
    staged = vpipe.simulate("1f1b", p=4, m=8, offload=[0, 0.5, 1, 0], cost=dict(O=0.5))
    assert staged == vpipe.simulate("1f1b", p=4, m=8, offload="0,0.5,1,0", cost="O=0.5")
    assert staged.costs["O"] == 0.5


def test_an_option_the_package_never_names_reaches_the_library():
    # reserve and dp_overlap appear nowhere in the package: they go through as given
    base = dict(p=4, m=8, model="llama2-7b", dp=2)
    plain = vpipe.price("1f1b", **base)
    more = vpipe.price("1f1b", reserve=3, dp_overlap=1.0, **base)
    assert [r.reserve for r in more.memory_per_rank] == [3 * 2 ** 30] * 4
    assert more.dp_exposed_s == 0 < plain.dp_exposed_s
    with pytest.raises(vpipe.InvalidArgument, match="unknown option 'reservation'"):
        vpipe.price("1f1b", reservation=3, **base)


def test_results_and_schedules_pickle():
    c = vpipe.compare(p=2, m=4)
    again = pickle.loads(pickle.dumps(c))
    assert again == c and again.json == c.json and again.text == c.text
    plan = vpipe.plan(**GPT2)
    back = pickle.loads(pickle.dumps(plan))
    assert back == plan and back.reply == plan.reply
    assert back.schedule.to_json() == plan.schedule.to_json()
    s = vpipe.schedule("zb-v", 4, 8, costs=dict(F=2, B=1, W=1), memory_model="zb:0.5")
    t = pickle.loads(pickle.dumps(s))
    assert (t.family, t.costs, t.memory_model) == ("zb-v", s.costs, "zb:0.5")
    assert t.simulate() == s.simulate() and t._handle.value != s._handle.value
    budget = pickle.loads(pickle.dumps(vpipe.plan(p=4, m=8, memory=0.5)))
    assert budget.schedule.simulate().makespan == budget.report.makespan


# ---- numbers of any kind ------------------------------------------------------------------


def test_numpy_inputs_to_the_new_calls():
    np = pytest.importorskip("numpy", reason="Debian's python3-numpy is not installed")
    c = vpipe.compare(p=np.int64(4), m=np.int32(8),
                      cost=dict(F=np.float32(1), B=np.float64(2), W=np.float16(1)),
                      threads=np.uint8(2))
    assert c.json == vpipe.compare(p=4, m=8, cost="F=1,B=2,W=1").json
    cp = vpipe.plan(model="gpt2-124m", gpus=np.int64(8), global_batch=np.int32(32),
                    pp=np.int16(2), flash=np.bool_(True))
    plain = vpipe.plan(model="gpt2-124m", gpus=8, global_batch=32, pp=2, flash=True)
    assert masked(cp.json) == masked(plain.json)
    info = vpipe.model("show", "gpt2-124m", seq=np.int64(512), mbs=np.int8(2))
    assert (info.workload.seq, info.workload.mbs) == (512, 2)
    r = vpipe.simulate("1f1b", p=np.int64(4), m=np.int64(8), model="llama2-7b",
                       layers_per_stage=np.array([5, 9, 9, 9]), dp_overlap=np.float64(0.5))
    assert r.layers_per_stage == [5, 9, 9, 9]
    b = vpipe.block(os.path.join(DATA, "block.json"), m=np.int64(8))
    assert b.simulation.m == 8


# ---- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("call, cls, exit_code, message", [
    (lambda: vpipe.compare(p=4), vpipe.InvalidArgument, 2, "compare needs option 'p' and"),
    (lambda: vpipe.compare(p=4, m=8, json=True), vpipe.InvalidArgument, 2,
     "option 'json': vpipe's compare answers the --json report"),
    (lambda: vpipe.compare(p=4, m=8, zork=1), vpipe.InvalidArgument, 2, "unknown option 'zork'"),
    (lambda: vpipe.plan(model="llama3-8b", gpus=8, global_bach=64), vpipe.InvalidArgument, 2,
     "unknown option 'global_bach' (did you mean 'global_batch'?)"),
    (lambda: vpipe.simulate("1fb1", p=4, m=8), vpipe.InvalidArgument, 2,
     "'1fb1' is neither a family nor a file (did you mean '1f1b'? vpipe list)"),
    (lambda: vpipe.compare(p=4, m=8, cost="F=1", costs="F=2"), vpipe.InvalidArgument, 2,
     "option 'cost' given twice"),
    (lambda: vpipe.render("1f1b", p=2, m=2, svg="one.out", trace="one.out"),
     vpipe.InvalidArgument, 2,
     "option 'svg' and option 'trace' name the same file one.out: each writes its own"),
    (lambda: vpipe.plan(p=4, m=8, memory=0.5, output="-"), vpipe.InvalidArgument, 2,
     "option 'output': '-' would print the schedule"),
    (lambda: vpipe.plan(**GPT2, emit="megatron"), vpipe.InvalidArgument, 2,
     "option 'emit': megatron would print the flags"),
    (lambda: vpipe.plan(model="llama3-8b", gpus=8), vpipe.InvalidArgument, 2,
     "plan option 'model' needs option 'gpus' N and option 'global_batch' B"),
    (lambda: vpipe.plan(model="llama3-405b", gpus=8, seq=8192, global_batch=64),
     vpipe.InvalidArgument, 2, "no configuration of llama3-405b fits 8 h100-80gb"),
    (lambda: vpipe.plan(p=4, m=8, memory=0.5, gpus=8), vpipe.InvalidArgument, 2,
     "option 'gpus', option 'global_batch'"),
    (lambda: vpipe.model("show", "nope"), vpipe.InvalidArgument, 2, "option 'model' nope:"),
    (lambda: vpipe.model("show", os.path.join(DATA, "missing.json")), vpipe.FileError, 3, ""),
    (lambda: vpipe.block(os.path.join(DATA, "broken.json")), vpipe.Error, 3, ""),
    (lambda: vpipe.validate(os.path.join(DATA, "bad.csv")), vpipe.ParseError, 3,
     os.path.join(DATA, "bad.csv") + ":2:2: torch csv: unknown action type"),
    (lambda: vpipe.simulate("1f1b", p=4, m=8, max_ops=10), vpipe.LimitError, 2, "p=4, m=8"),
    (lambda: vpipe.schedule("1f1b", 4, 8, output="x.json"), vpipe.InvalidArgument, 2,
     "vpipe.schedule answers a Schedule"),
])
def test_errors_are_the_command_lines(call, cls, exit_code, message):
    with pytest.raises(cls) as e:
        call()
    assert e.value.exit_code == exit_code and e.value.message.startswith(message), e.value.message


def test_cost_file_needs_the_runtime_library():
    prof = os.path.join(DATA, "prof.json")
    r = vpipe.simulate("1f1b", p=4, m=8, cost_file=prof)
    assert r.makespan > 0 and r.costs.F != 1
    code = ("import vpipe\ntry:\n    vpipe.simulate('1f1b', p=4, m=8, cost_file=%r)\n"
            "except vpipe.UnsupportedError as e:\n    print(e.exit_code, e)") % prof
    env = dict(os.environ, VPIPE_RUNTIME_LIBRARY="/nonexistent/libvpipe-runtime.so",
               PYTHONPATH=os.path.dirname(os.path.dirname(vpipe.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env).stdout
    assert out.startswith("2 option 'cost_file' needs libvpipe-runtime to read the profile, "
                          "and it could not be loaded"), out
    assert "/nonexistent/libvpipe-runtime.so" in out
