"""vpipe: pipeline-parallel training schedules with controllable activation memory.

Pure Python over vpipe's shared library (ctypes). Every command of the `vpipe` command
line is a call here, answered through the library's front door (vp_request_call) with the
command line's bytes: build a schedule (`schedule`) or read one (`load`), simulate it,
draw it, compare every family (`compare`), plan under a memory budget or plan a whole
DP x TP x PP configuration of a real model (`plan`), price a schedule for a model
(`price`), look at models (`model`), build from a building block (`block`), and write
schedules as vpipe JSON or PyTorch's pipelining CSV for torchtitan.

    >>> import vpipe
    >>> s = vpipe.schedule("v-half", p=8, m=32, costs=dict(F=1, B=1, W=1, c=0))
    >>> s.simulate().peak_memory_max
    5.0
    >>> round(vpipe.simulate("1f1b", p=4, m=8, recompute="full").peak_memory_max, 4)
    1.0687
    >>> vpipe.compare(p=4, m=8)["zb-v"].bubble
    0.0

Options are the command line's flags as keywords: the long flag with '_' for '-'
(memory_model="zb:0.3", global_batch=64), p, m, v, output for -o, flags as True; any
keyword is passed on, so an option the library learns needs nothing new here. Reports are
dataclasses whose fields are the `--json` output's keys (SimulationReport, PriceResult,
Comparison, PlanReport, ClusterPlan, ModelInfo, BlockReport, ...); they also read like
the JSON (report["bubble"], report.to_dict()), keep the command line's text (.text) and
the files the command would write (.files, written only by .reply.write()), and a
notebook shows them as tables. `call` runs any command and answers its Reply.

Costs are per microbatch of one device's whole slice of layers: F (forward), B (input
backward), W (weight backward), c (one hop between devices), optionally FB (an overlapped
F&B) and R (a recomputation); as a dict or as the command line's text "F=2,B=2,W=2,c=0".
Numbers may be Python's or numpy's. Failures raise a subclass of `vpipe.Error` with the
command line's message (each flag spelled as its option: "option 'cost': ...") and exit
code (`Error.exit_code`), which is also the built-in exception to expect:
InvalidArgument, ParseError, ValidationError, UnsupportedError and LimitError are
ValueErrors, FileError an OSError.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Union

from . import _door, _lib
from ._door import Reply, call
from ._errors import (DeadlockError, Error, FileError, InvalidArgument, LibraryNotFound,
                      LimitError, OutOfMemory, ParseError, RuntimeFailure, UnsupportedError,
                      ValidationError)
from ._options import Costs as CostsLike
from ._results import (Accelerator, BlockReport, Candidate, ClusterPlan, Comparison,
                       Configuration, Costs, DeviceBound, Families, Family, Lifespan,
                       ModelCatalog, ModelInfo, ModelPart, ModelParts, Op, PlanReport,
                       PriceResult, RankMemory, SavedTensor, SimulationReport, StageCost,
                       StageLifespan, Workload)
from ._schedule import Schedule, load, loads, simulation

__version__ = "0.1.0"

__all__ = [
    "Accelerator", "BlockReport", "Candidate", "ClusterPlan", "Comparison", "Configuration",
    "Costs", "DeadlockError", "DeviceBound", "Error", "Families", "Family", "FileError",
    "InvalidArgument", "LibraryNotFound", "Lifespan", "LimitError", "ModelCatalog",
    "ModelInfo", "ModelPart", "ModelParts", "Op", "OutOfMemory", "ParseError", "Plan",
    "PlanReport", "PriceResult", "RankMemory", "Reply", "RuntimeFailure", "SavedTensor",
    "Schedule", "SimulationReport", "StageCost", "StageLifespan", "UnsupportedError",
    "ValidationError", "Workload", "block", "block_example", "call", "compare", "families",
    "gpus", "library_path", "library_version", "list_families", "load", "loads", "model",
    "models", "plan", "price", "render", "schedule", "simulate", "validate",
]

# Where a call that answers a schedule asks the door to put it (-o): a name of its own,
# taken out of the reply's files again (the door writes nothing; the caller does).
_CHOSEN = ".vpipe-chosen-schedule.json"


def library_version() -> str:
    """The loaded library's version (vp_version()); equal to __version__."""
    return _lib.lib().vp_version().decode()


def library_path() -> str:
    """Where the library was loaded from: $VPIPE_LIBRARY, the soname the system's loader
    found ("libvpipe.so.0"), or the path beside the installed `vpipe` binary."""
    return _lib.lib()._name


def families() -> list[str]:
    """The schedule families the library builds, in `vpipe list` order."""
    lib = _lib.lib()
    return [lib.vp_family_at(i).contents.name.decode() for i in range(lib.vp_family_count())]


def models() -> list[str]:
    """The model presets `price` accepts as model= (a config.json path works too)."""
    lib = _lib.lib()
    return [lib.vp_arch_preset_name(i).decode() for i in range(lib.vp_arch_preset_count())]


def gpus() -> list[str]:
    """The accelerator presets `price` accepts as gpu= (an accelerator JSON path works too)."""
    lib = _lib.lib()
    return [lib.vp_gpu_preset_name(i).decode() for i in range(lib.vp_gpu_preset_count())]


def list_families() -> Families:
    """`vpipe list`: the schedule families (Family rows: name, summary, needs), by index or
    by name (list_families()["zb-v"]); .text is the command line's list."""
    return _answer("list", {}, Families.from_list)


def _answer(command: str, options: Dict[str, Any], build: Callable[[Any], Any]) -> Any:
    """The record build makes of command's --json answer, keeping the request (.text)."""
    data, request, reply = _door.report(command, None, options)
    return build(data)._keep(request, reply)


def _with_schedule(command: str, options: Dict[str, Any], build: Callable[[Any], Any],
                   costs: Callable[[Any], Any] = lambda answer: None) -> Any:
    """_answer for a command that also writes a schedule (-o): the schedule comes back in
    the reply as a file (the caller's output, or one of the package's own that the reply
    then drops) and becomes the answer's `schedule` (None when the answer has none),
    simulated under costs(answer) (a Costs record) and the request's memory model.
    InvalidArgument for output="-", which would put the schedule where the report goes."""
    output = options.get("output")
    if output == "-":
        raise InvalidArgument(f"option 'output': '-' would print the schedule instead of the "
                              f"report; vpipe's {command} answers it as .schedule "
                              "(.schedule.to_json() is that text)")
    data, request, reply = _door.report(command, None, options, output=output or _CHOSEN)
    files = dict(reply.files)
    text = files.get(output or _CHOSEN)
    if output is None:
        files.pop(_CHOSEN, None)
        reply = Reply(reply.stdout, files, reply.notes, reply.exit)
    result = build(data)._keep(request, reply)
    used = costs(result)
    chosen = loads(text, used.to_dict() if used else None,
                   options.get("memory_model")) if text is not None else None
    object.__setattr__(result, "schedule", chosen)
    return result


def schedule(family: str, p: Optional[int] = None, m: Optional[int] = None,
             costs: CostsLike = None, memory_model: Optional[str] = None,
             v: Optional[int] = None, memory_limit: Optional[float] = None,
             max_ops: Optional[int] = None, **options: Any) -> Schedule:
    """Builds a family's schedule (`vpipe schedule`).

    Args:
        family: a name from `families()`, e.g. "1f1b", "zb-h1", "v-half", "dualpipev".
        p, m: devices and microbatches.
        costs: per-slice costs (cost-aware families build with them; every family is
            simulated and drawn with them).
        memory_model: "at-w" (release at W, the default) or "zb:R" (B keeps a share R).
        v: chunks per device for "interleaved".
        memory_limit: units, for "zb-1p"/"zb-2p".
        max_ops: refuse a schedule that may hold more ops (default 10^8).
        options: schedule's others, e.g. recompute="full" (an R pass before each
            backward), model=... (cost-aware families built with the priced costs), or
            vocab_parallel=True (the embedding and the output layer split by vocabulary
            over the p devices, their passes "EF", "EB", "S", "T" placed into the schedule).
    """
    if options.get("output") is not None or options.get("format") is not None:
        raise InvalidArgument("vpipe.schedule answers a Schedule: write it with its to_json(), "
                              "to_text() or to_torch_csv()")
    reply = call("schedule", family, p=p, m=m, costs=costs, memory_model=memory_model, v=v,
                 memory_limit=memory_limit, max_ops=max_ops, **options)
    return loads(reply.stdout, costs, memory_model)


def simulate(operand: Union[str, Schedule, None] = None, **options: Any) -> SimulationReport:
    """Simulates a family, a schedule file or a Schedule (`vpipe simulate ... --json`):
    its SimulationReport, or with model=... its PriceResult; .text is the command line's
    report. options: simulate's (p, m, v, cost, cost_file, memory_model, memory_limit,
    max_ops, recompute, and the real model's: model, gpu, seq, mbs, tp, sp, dp, ep, etp,
    cp, cp_comm, zero, flash, reserve, dp_overlap, split, layers_per_stage).

        >>> vpipe.simulate("1f1b", p=4, m=8, recompute="full").peak_memory_max  # 1.0687
    """
    if isinstance(operand, Schedule):
        return operand.simulate(**options)
    return _answer("simulate", dict(options, operand=operand), simulation)


def compare(p: Optional[int] = None, m: Optional[int] = None, **options: Any) -> Comparison:
    """Simulates every family side by side (`vpipe compare --json`): a Comparison, one row
    per family that builds (its SimulationReport, or with model=... its PriceResult);
    comparison["v-half"] is one family's; .text is the command line's table. options:
    compare's (cost, memory_model, recompute, model, gpu, seq, tp, ..., threads, svg=PATH
    for the gallery, which lands in .files)."""
    return _answer("compare", dict(options, p=p, m=m), Comparison.from_list)


class Plan(_door.Answer):
    """The planner's answer: the chosen schedule, why, and the memory -> makespan
    frontier it found. A notebook shows the chosen schedule's picture and the report.

    Attributes:
        schedule: the chosen Schedule.
        report: the whole report (`vpipe plan --json`) as a PlanReport; json: as text;
            text: the command line's report (the search runs again); files: what the
            request would write (its output, when it gave one).
        choice: its family, and for a V block its parameters ("v-block f1=... ...").
        reason: why it won.
        frontier: the Pareto points by increasing memory, each a Candidate (family,
            params, memory in units, bubble, makespan, fits).
    """

    def __init__(self, report: PlanReport):
        self.report = report
        self.schedule: Optional[Schedule] = None
        params = report.params
        self.choice: str = report.family + (" " + params if params else "")
        self.reason: str = report.reason
        self.frontier: List[Candidate] = report.frontier

    def __repr__(self) -> str:
        return f"<vpipe.Plan {self.choice}: {self.reason}>"

    def _repr_html_(self) -> str:
        """The chosen schedule's picture (inline SVG, without its XML declaration) and the
        report's tables."""
        svg = self.schedule.svg()
        if svg.startswith("<?xml"):
            svg = svg.split("?>", 1)[1].lstrip()
        return svg + self.report._repr_html_()


def plan(p: Optional[int] = None, m: Optional[int] = None,
         memory: Union[float, str, None] = None, costs: CostsLike = None,
         memory_model: Optional[str] = None, v: Optional[int] = None,
         threads: Optional[int] = None, max_ops: Optional[int] = None,
         **options: Any) -> Union[Plan, ClusterPlan]:
    """The planners (`vpipe plan`): with memory, the fastest schedule that fits a budget;
    with model, the fastest whole configuration of a real model on a cluster.

    The budget planner (p, m, memory): memory is a fraction of 1F1B's peak (0.5), or the
    command line's text: "0.5", "4u" (units), "123456b", "64MiB" or "2GB" (bytes, when
    the memory model knows them). Answers a Plan (the chosen schedule, its report, reason
    and frontier). Raises Error when no schedule fits (the message names the smallest peak
    reached).

    The whole-configuration planner (model=..., gpus=..., global_batch=..., and gpu, seq,
    flash, sp, zero (the ZeRO stage, searched 0-3 unless given), cp_comm,
    tp/dp/pp/ep/etp/cp/mbs/recompute to fix a dimension, top, max_chunks, time_limit, ...):
    searches every DP x TP x PP x EP x CP, microbatch size, family and
    recomputation, and answers a ClusterPlan: the winner (best, and its schedule), the top
    configurations, the best of every family, the reason and the search's counts; its
    torchtitan() and megatron() give the exports (emit="torchtitan" with operand=DIR puts
    torchtitan's files in .files as well). Raises Error when nothing fits.

    threads: worker threads for either search (results never depend on it). Both answers
    keep the command line's text (.text) and the files a given output would write (.files).
    """
    opts = dict(options, p=p, m=m, memory=memory, costs=costs, memory_model=memory_model, v=v,
                threads=threads, max_ops=max_ops)
    if options.get("model") is not None:
        if options.get("emit") == "megatron":
            raise InvalidArgument("option 'emit': megatron would print the flags instead of "
                                  "the report: a ClusterPlan gives them as megatron()")
        return _with_schedule("plan", opts, ClusterPlan.from_dict)
    return _with_schedule("plan", opts, lambda data: Plan(PlanReport.from_dict(data)),
                          lambda plan: plan.report.costs)


def price(family: str, p: int, m: int, model: str, gpu: Optional[str] = None,
          seq: Optional[int] = None, mbs: Optional[int] = None, tp: Optional[int] = None,
          dp: Optional[int] = None, sp: Optional[bool] = None, zero1: Optional[bool] = None,
          flash: Optional[bool] = None, recompute: Optional[str] = None,
          split: Optional[str] = None, layers_per_stage: Optional[List[int]] = None,
          v: Optional[int] = None, **options: Any) -> PriceResult:
    """Prices a family for a real model on a real accelerator (`vpipe simulate FAMILY
    --model ... --json`): bytes per rank and seconds per step. The family is built with
    the priced per-stage costs.

    Args:
        model: a preset from `models()` (e.g. "llama2-7b"), a Hugging Face config.json (a
            path), or "vpipe:L,W,H,S" (vpipe's own GPT).
        gpu: a preset from `gpus()` (default "h100-80gb") or an accelerator JSON file.
        seq, mbs: tokens per sequence, sequences per microbatch.
        tp, dp: tensor- and data-parallel degrees; sp: sequence parallelism; zero: the
            ZeRO stage 0-3 over DP (1 the distributed optimizer, 2 the gradients too, 3
            FSDP; zero1=True, the older name, is 1); flash: FlashAttention (on
            unless False, for a model other than vpipe's own).
        recompute: "none", "selective" or "full".
        split: how layers are split over stages, "time", "memory" or "even"; or the
            layers of each stage in layers_per_stage.
        options: simulate's others (ep and etp for a mixture of experts' expert and
            expert-tensor parallelism, cp and cp_comm for context parallelism, reserve,
            dp_overlap, cost for measured ms,
            vocab_parallel=True: every rank holds a p-th of the vocabulary, token table and
            head, and runs a p-th of its passes, ...).

    Returns a PriceResult: the simulation's fields, then step_time_s, bubble, mfu,
    tokens_per_s, memory_per_rank (a RankMemory of itemised bytes per rank),
    memory_max_bytes, fits, per_stage, ...; .text is the command line's report.
    """
    return simulate(family, p=p, m=m, v=v, model=model, gpu=gpu, seq=seq, mbs=mbs, tp=tp,
                    dp=dp, sp=sp, zero1=zero1, flash=flash, recompute=recompute, split=split,
                    layers_per_stage=layers_per_stage, **options)


def model(*operand: str, **options: Any) -> Union[ModelInfo, ModelCatalog]:
    """`vpipe model`: model("list") answers a ModelCatalog (the model presets and the
    accelerator presets); model("show", NAME, seq=..., mbs=..., tp=..., sp=..., flash=...,
    recompute=...) a ModelInfo (the model's shape, parameters, and each part's bytes and
    FLOPs per microbatch on one rank). NAME: a preset, a config.json or "vpipe:L,W,H,S".
    .text is the command line's table."""
    if operand:
        options["operand"] = operand[0] if len(operand) == 1 else list(operand)
    return _answer("model", options, lambda data: (
        ModelCatalog if "models" in data else ModelInfo).from_dict(data))


def render(operand: Union[str, Schedule, None] = None, **options: Any) -> Reply:
    """`vpipe render`: draws a family, a schedule file or a Schedule. ascii=True (the
    terminal timeline, the default), svg=PATH or "-", trace=PATH or "-", width, fit,
    color, title, and the schedule's options. Answers the Reply: stdout what the command
    line prints, files what it would write (Reply.write writes them)."""
    return call("render", *([] if operand is None else [operand]), **options)


def validate(operand: Union[str, Schedule, None] = None, **options: Any) -> Reply:
    """`vpipe validate`: checks a schedule file (or a family built for p and m, or a
    Schedule); the Reply's stdout says what it found. A schedule that is not valid raises
    ValidationError (or ParseError, FileError) with the command line's message."""
    return call("validate", *([] if operand is None else [operand]), **options)


def block(operand: Optional[str] = None, **options: Any) -> BlockReport:
    """`vpipe block FILE --json`: builds a schedule from a building block (a vpipe-block
    file) for m microbatches, simulates it and reports each stage's lifespan and each
    device's bounds; reorder=True reorders ops to lower the peak. Answers a BlockReport
    whose schedule is the built vpipe.Schedule; .text is the command line's report."""
    return _with_schedule("block", dict(options, operand=operand), BlockReport.from_dict,
                          lambda block: block.simulation.costs)


def block_example(**options: Any) -> str:
    """`vpipe block --example`: a building block to start from, as vpipe-block text (p and
    cost shape it)."""
    return call("block", example=True, **options).stdout
