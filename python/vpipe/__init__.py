"""vpipe: pipeline-parallel training schedules with controllable activation memory.

Pure Python over vpipe's shared library (ctypes). A schedule is a value: build one
(`schedule`), read one (`load`) or let the planner choose one under a memory budget
(`plan`); then simulate it, draw it, price it for a real model (`price`) and write it as
vpipe JSON or as PyTorch's pipelining CSV for torchtitan. Every answer is the one the
`vpipe` command line gives for the same request, byte for byte.

    >>> import vpipe
    >>> s = vpipe.schedule("v-half", p=8, m=32, costs=dict(F=1, B=1, W=1, c=0))
    >>> s.simulate().peak_memory_max
    5.0
    >>> [str(op) for op in s.ops[0][:3]]
    ['F0.0', 'F0.1', 'F0.2']

Reports are dataclasses whose fields are the JSON's keys (SimulationReport, PlanReport,
PriceResult); they also read like the JSON (report["bubble"], report.to_dict()), and a
notebook shows a schedule as its picture and a report as a table.

Costs are per microbatch of one device's whole slice of layers: F (forward), B (input
backward), W (weight backward), c (one hop between devices), optionally FB (an overlapped
F&B) and R (a recomputation); as a dict or as the command line's text "F=2,B=2,W=2,c=0".
Numbers may be Python's or numpy's. Failures raise a subclass of `vpipe.Error` with the
library's message, which is also the built-in exception to expect: InvalidArgument,
ParseError, ValidationError, UnsupportedError and LimitError are ValueErrors, FileError an
OSError.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import weakref
from typing import IO, Any, List, Optional, Union

from . import _lib
from ._errors import (DeadlockError, Error, FileError, InvalidArgument, LibraryNotFound,
                      LimitError, OutOfMemory, ParseError, RuntimeFailure, UnsupportedError,
                      ValidationError)
from ._options import Costs as CostsLike
from ._options import encode as _options
from ._results import (Candidate, Costs, Op, PlanReport, PriceResult, RankMemory,
                       SimulationReport, StageCost)

__version__ = "0.1.0"

__all__ = [
    "Candidate",
    "Costs",
    "DeadlockError",
    "Error",
    "FileError",
    "InvalidArgument",
    "LibraryNotFound",
    "LimitError",
    "Op",
    "OutOfMemory",
    "ParseError",
    "Plan",
    "PlanReport",
    "PriceResult",
    "RankMemory",
    "RuntimeFailure",
    "Schedule",
    "SimulationReport",
    "StageCost",
    "UnsupportedError",
    "ValidationError",
    "families",
    "gpus",
    "library_path",
    "library_version",
    "load",
    "loads",
    "models",
    "plan",
    "price",
    "schedule",
]

_CSV_COMPUTE_ONLY, _CSV_COMPUTE_COMMS = 1, 2


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


class Schedule:
    """A validated schedule held by the library, with the costs and memory model it is
    simulated and drawn under.

    Attributes:
        family: the generator's name, or "custom" for a schedule read from a file.
        p, m, stages: devices, microbatches and stages.
        placement: "single", "loop", "v", "bidir" or "custom".
        costs, memory_model: as given (None: F=B=W=1, c=0 and release-at-W).
    """

    def __init__(self, handle: ctypes.c_void_p, costs: CostsLike = None,
                 memory_model: Optional[str] = None):
        self._handle = handle
        self._free = weakref.finalize(self, _lib.lib().vp_schedule_free, handle)
        head = ctypes.cast(handle, ctypes.POINTER(_lib._ScheduleHead)).contents
        self.family: str = head.family.decode()
        self.p: int = head.p
        self.m: int = head.m
        self.stages: int = head.S
        self.placement: str = _lib.lib().vp_placement_name(head.placement).decode()
        self.costs = costs
        self.memory_model = memory_model

    def __repr__(self) -> str:
        return (f"<vpipe.Schedule {self.family} p={self.p} m={self.m} stages={self.stages} "
                f"placement={self.placement}>")

    def _opts(self, **extra: Any) -> bytes:
        return _options(costs=self.costs, memory_model=self.memory_model, **extra)

    def simulate_json(self) -> str:
        """The simulation report as JSON text: `vpipe simulate --json`'s bytes."""
        return _lib.text_of(lambda out, err: _lib.lib().vp_request_simulate(
            self._handle, self._opts(), out, err))

    def simulate(self) -> SimulationReport:
        """Simulates the schedule: makespan, bubble (1 - busy / longest device span),
        bubble_makespan, peak_memory per device and its max (units of one microbatch's
        activation of one device's slice), busy time per device, costs, shape."""
        return SimulationReport.from_dict(json.loads(self.simulate_json()))

    def to_json(self) -> str:
        """The schedule as vpipe JSON (`vpipe schedule --format json`), which `loads`
        reads."""
        return _lib.text_of(lambda out, err: _lib.lib().vp_json_write(self._handle, out, err))

    @functools.cached_property
    def _layout(self) -> dict:
        return json.loads(self.to_json())

    @property
    def ops(self) -> List[List[Op]]:
        """Each device's ops in the order it runs them: ops[d][k] is device d's k-th Op
        (kind, stage, microbatch; an overlapped F&B holds its backward). A new list on
        each call."""
        return [[Op.from_json(item) for item in device] for device in self._layout["devices"]]

    @property
    def stage_device(self) -> List[int]:
        """The device of each stage: stage_device[stage] (stages from 0)."""
        return list(self._layout["stage_device"])

    def to_torch_csv(self, comms: bool = False) -> str:
        """The schedule as PyTorch's pipelining CSV (torchtitan's
        `pipeline_parallel_schedule_csv`): compute only, or with SEND/RECV when comms.
        Pair it with `torchtitan_schedule`. Raises Error when PyTorch cannot express it
        (the bidirectional placement, custom routes)."""
        fmt = _CSV_COMPUTE_COMMS if comms else _CSV_COMPUTE_ONLY
        return _lib.text_of(
            lambda out, err: _lib.lib().vp_torch_csv_write(self._handle, fmt, out, err))

    @property
    def torchtitan_schedule(self) -> Optional[str]:
        """torchtitan's `pipeline_parallel_schedule` for this placement
        ("PipelineScheduleSingle", "PipelineScheduleMulti", "ZBVZeroBubble", "DualPipeV"),
        or None when none fits."""
        name = _lib.lib().vp_torch_schedule_name(self._handle)
        return name.decode() if name else None

    @property
    def torch_notes(self) -> str:
        """What to know when exporting to PyTorch: the torchtitan schedule to pair the CSV
        with, and what PyTorch will not see as vpipe does (one note per line)."""
        buf = ctypes.create_string_buffer(4096)
        _lib.lib().vp_torch_csv_notes(self._handle, buf, len(buf))
        return buf.value.decode()

    def _render(self, fmt: str, **opts: Any) -> str:
        return _lib.text_of(lambda out, err: _lib.lib().vp_request_render(
            self._handle, fmt.encode(), self._opts(**opts), out, err))

    def svg(self, width: Optional[int] = None, title: Optional[str] = None) -> str:
        """The SVG picture (`vpipe render --svg`): one lane per device, memory curves.
        width: plot width in pixels (default: wide enough for every op's number)."""
        return self._render("svg", width=width, title=title)

    def ascii(self, width: Optional[int] = None, fit: bool = False, color: bool = False,
              title: Optional[str] = None) -> str:
        """The terminal timeline (`vpipe render --ascii`): width columns (default 100),
        fit squeezes time into one band, color adds ANSI colours."""
        return self._render("ascii", width=width, fit=fit, color=color, title=title)

    def trace(self) -> str:
        """The Chrome trace JSON (`vpipe render --trace`) for Perfetto / chrome://tracing."""
        return self._render("trace")

    def _repr_svg_(self) -> str:
        """A notebook shows the schedule as its picture."""
        return self.svg()

    def price(self, model: str, gpu: str, **setup: Any) -> PriceResult:
        """Prices this schedule for a real model on an accelerator; see `price` for the
        setup's keywords and the result."""
        return _price(self._handle, model=model, gpu=gpu, **setup)


def schedule(family: str, p: int, m: int, costs: CostsLike = None,
             memory_model: Optional[str] = None, v: Optional[int] = None,
             memory_limit: Optional[float] = None, max_ops: Optional[int] = None,
             vocab_parallel: bool = False) -> Schedule:
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
        vocab_parallel: split the embedding and the output layer by vocabulary over the p
            devices, with their passes ("EF", "EB", "S", "T") placed into the schedule.
    """
    out = ctypes.c_void_p()
    opts = _options(family=family, p=p, m=m, costs=costs, memory_model=memory_model, v=v,
                    memory_limit=memory_limit, max_ops=max_ops, vocab_parallel=vocab_parallel)
    _lib.check(lambda err: _lib.lib().vp_request_schedule(opts, ctypes.byref(out), err))
    return Schedule(out, costs, memory_model)


def load(file: Union[str, bytes, "os.PathLike[str]", IO[Any]], costs: CostsLike = None,
         memory_model: Optional[str] = None) -> Schedule:
    """Reads and validates a schedule file: vpipe JSON or a PyTorch pipelining CSV,
    detected by content.

    file: the file's path (str, bytes or a path object), or an open file, whose read() is
    the text. Text itself goes to `loads`: a str is always a path here. A file that
    cannot be read raises FileError (an OSError) with its filename.
    """
    if hasattr(file, "read"):
        return loads(file.read(), costs, memory_model)
    if not isinstance(file, (str, bytes, os.PathLike)):
        raise InvalidArgument(f"load() takes a path or an open file, not {file!r}")
    out = ctypes.c_void_p()
    path = os.fsencode(file)
    try:
        _lib.check(lambda err: _lib.lib().vp_schedule_load(path, ctypes.byref(out), err))
    except FileError as e:
        e.filename = os.fsdecode(path)
        raise
    return Schedule(out, costs, memory_model)


def loads(text: Union[str, bytes], costs: CostsLike = None,
          memory_model: Optional[str] = None) -> Schedule:
    """Reads and validates a schedule from its text (str or bytes): vpipe JSON or a PyTorch
    pipelining CSV, detected by content. ParseError (line and column) for malformed text,
    ValidationError for a schedule that is not valid."""
    if isinstance(text, str):
        data = text.encode()
    elif isinstance(text, (bytes, bytearray, memoryview)):
        data = bytes(text)
    else:
        raise InvalidArgument(f"loads() takes a str or bytes, not {text!r}")
    out = ctypes.c_void_p()
    _lib.check(lambda err: _lib.lib().vp_schedule_parse(data, len(data), ctypes.byref(out),
                                                        err))
    return Schedule(out, costs, memory_model)


class Plan:
    """The planner's answer: the chosen schedule, why, and the memory -> makespan
    frontier it found. A notebook shows the chosen schedule's picture and the report.

    Attributes:
        schedule: the chosen Schedule.
        report: the whole report (`vpipe plan --json`) as a PlanReport; json: as text.
        choice: its family, and for a V block its parameters ("v-block f1=... ...").
        reason: why it won.
        frontier: the Pareto points by increasing memory, each a Candidate (family,
            params, memory in units, bubble, makespan, fits).
    """

    def __init__(self, report: str, chosen: Schedule):
        self.json = report
        self.report = PlanReport.from_dict(json.loads(report))
        self.schedule = chosen
        params = self.report.params
        self.choice: str = self.report.family + (" " + params if params else "")
        self.reason: str = self.report.reason
        self.frontier: List[Candidate] = self.report.frontier

    def __repr__(self) -> str:
        return f"<vpipe.Plan {self.choice}: {self.reason}>"

    def _repr_html_(self) -> str:
        """The chosen schedule's picture (inline SVG, without its XML declaration) and the
        report's tables."""
        svg = self.schedule.svg()
        if svg.startswith("<?xml"):
            svg = svg.split("?>", 1)[1].lstrip()
        return svg + self.report._repr_html_()


def plan(p: int, m: int, memory: Union[float, str], costs: CostsLike = None,
         memory_model: Optional[str] = None, v: Optional[int] = None,
         threads: Optional[int] = None, max_ops: Optional[int] = None) -> Plan:
    """The fastest schedule whose peak activation memory fits the budget (`vpipe plan`).

    memory: a fraction of 1F1B's peak (0.5), or the command line's text: "0.5", "4u"
        (units), "123456b" (bytes, when the memory model knows them).
    threads: worker threads for the search (results never depend on it).
    Raises Error when no schedule fits (the message names the smallest peak reached),
    InvalidArgument for a budget it cannot read.
    """
    report, chosen = ctypes.c_void_p(), ctypes.c_void_p()
    opts = _options(p=p, m=m, memory=memory, costs=costs, memory_model=memory_model, v=v,
                    threads=threads, max_ops=max_ops)
    _lib.check(lambda err: _lib.lib().vp_request_plan(opts, ctypes.byref(report),
                                                      ctypes.byref(chosen), err))
    text = _lib.take_text(report)
    return Plan(text, Schedule(chosen, costs, memory_model))


def _price(handle: Optional[ctypes.c_void_p], **options: Any) -> PriceResult:
    """The one place that passes a pricing request to the library (vp_request_price):
    prices the schedule handle, or with handle None builds options' family."""
    report = ctypes.c_void_p()
    opts = _options(**options)
    _lib.check(lambda err: _lib.lib().vp_request_price(handle, opts, ctypes.byref(report),
                                                       None, err))
    return PriceResult.from_dict(json.loads(_lib.take_text(report)))


def price(family: str, p: int, m: int, model: str, gpu: str, seq: Optional[int] = None,
          mbs: Optional[int] = None, tp: Optional[int] = None, dp: Optional[int] = None,
          sp: Optional[bool] = None, zero1: Optional[bool] = None,
          flash: Optional[bool] = None, recompute: Optional[str] = None,
          split: Optional[str] = None, layers_per_stage: Optional[List[int]] = None,
          v: Optional[int] = None, vocab_parallel: bool = False) -> PriceResult:
    """Prices a family for a real model on a real accelerator: bytes per rank and seconds
    per step. The family is built with the priced per-stage costs.

    Args:
        model: a preset from `models()` (e.g. "llama2-7b") or a Hugging Face config.json
            (a path).
        gpu: a preset from `gpus()` (e.g. "h100-80gb") or an accelerator JSON file.
        seq, mbs: tokens per sequence, sequences per microbatch.
        tp, dp: tensor- and data-parallel degrees; sp: sequence parallelism; zero1:
            distributed optimizer; flash: FlashAttention.
        recompute: "none", "selective" or "full".
        split: how layers are split over stages, "time", "memory" or "even"; or the
            layers of each stage in layers_per_stage.
        vocab_parallel: every rank holds a p-th of the vocabulary (token table and head)
            and runs a p-th of its passes.

    Returns a PriceResult: step_time_s, bubble, mfu, tokens_per_s, memory_per_rank
    (a RankMemory of itemised bytes per rank), memory_max_bytes, fits, per_stage, ...
    """
    return _price(None, family=family, p=p, m=m, v=v, model=model, gpu=gpu, seq=seq, mbs=mbs,
                  tp=tp, dp=dp, sp=sp, zero1=zero1, flash=flash, recompute=recompute,
                  split=split, layers_per_stage=layers_per_stage, vocab_parallel=vocab_parallel)
