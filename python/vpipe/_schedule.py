"""A schedule held by the library (vpipe.Schedule), and reading one (load, loads).

Everything a schedule answers goes through the front door with the schedule as the
request's operand (vp_request_call_with), so each answer is what the command line gives
for the schedule's file: `simulate`, `render`, `schedule --format ...`.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import weakref
from typing import IO, Any, Dict, List, Optional, Union

from . import _door, _lib
from ._errors import FileError, InvalidArgument
from ._options import Costs as CostsLike
from ._results import Op, PriceResult, SimulationReport

_CSV_FORMATS = {False: "torch-csv", True: "torch-csv-comms"}


def simulation(data: Dict[str, Any]) -> SimulationReport:
    """The record of `simulate --json`: a PriceResult when a model priced it."""
    return (PriceResult if "step_time_s" in data else SimulationReport).from_dict(data)


class Schedule:
    """A validated schedule held by the library, with the costs and memory model it is
    simulated and drawn under.

    Attributes:
        family: the generator's name, or "custom" for a schedule read from a file.
        p, m, stages: devices, microbatches and stages.
        placement: "single", "loop", "v", "bidir" or "custom".
        costs, memory_model: as given (None: F=B=W=1, c=0 and release-at-W); every
            simulation and picture of the schedule uses them unless the call gives its
            own, or a model prices the schedule instead.
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

    def __reduce__(self):
        """A schedule pickles as its vpipe JSON, its costs and memory model."""
        return loads, (self.to_json(), self.costs, self.memory_model)

    def __repr__(self) -> str:
        return (f"<vpipe.Schedule {self.family} p={self.p} m={self.m} stages={self.stages} "
                f"placement={self.placement}>")

    def _costed(self, options: Dict[str, Any]) -> Dict[str, Any]:
        """options with the schedule's costs and memory model where they give none (and
        none when a model prices the schedule)."""
        given = dict(options)
        if given.get("model") is None:
            if given.get("cost") is None and given.get("costs") is None:
                given["cost"] = self.costs
            if given.get("memory_model") is None:
                given["memory_model"] = self.memory_model
        return given

    def _ask(self, command: str, **options: Any) -> str:
        return _door._call(command, self, **options).stdout

    def simulate(self, **options: Any) -> SimulationReport:
        """Simulates the schedule (`vpipe simulate FILE --json`): makespan, bubble (1 -
        busy / longest device span), bubble_makespan, peak_memory per device and its max
        (units of one microbatch's activation of one device's slice), busy time per
        device, costs, shape; .text is the command line's report. options: simulate's,
        e.g. recompute="full" (an R pass before each backward), cost=..., or model=...
        (then a PriceResult: see `price`)."""
        data, request, reply = _door.report("simulate", self, self._costed(options))
        return simulation(data)._keep(request, reply)

    def simulate_json(self, **options: Any) -> str:
        """The simulation report as JSON text: `vpipe simulate --json`'s bytes."""
        return self.simulate(**options).json

    def price(self, model: str, gpu: Optional[str] = None, **setup: Any) -> PriceResult:
        """Prices this schedule for a real model on an accelerator (`vpipe simulate FILE
        --model ... --json`); see `vpipe.price` for the setup's keywords and the result."""
        return self.simulate(model=model, gpu=gpu, **setup)

    def to_json(self) -> str:
        """The schedule as vpipe JSON (`vpipe schedule --format json`), which `loads`
        reads."""
        return self._ask("schedule")

    def to_text(self) -> str:
        """Each device's ops in order, one line per device (`--format text`)."""
        return self._ask("schedule", format="text")

    def to_torch_csv(self, comms: bool = False) -> str:
        """The schedule as PyTorch's pipelining CSV (torchtitan's
        `pipeline_parallel_schedule_csv`, `--format torch-csv`): compute only, or with
        SEND/RECV when comms. Pair it with `torchtitan_schedule`. Raises Error when
        PyTorch cannot express it (the bidirectional placement, custom routes)."""
        return self._ask("schedule", format=_CSV_FORMATS[bool(comms)])

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

    def render(self, **options: Any) -> _door.Reply:
        """`vpipe render FILE` with render's options (ascii=True, svg=PATH or "-",
        trace=..., width=, fit=, color=, title=, recompute=, ...): the Reply, with the
        files it would write (not written: Reply.write)."""
        return _door._call("render", self, **self._costed(options))

    def svg(self, width: Optional[int] = None, title: Optional[str] = None) -> str:
        """The SVG picture (`vpipe render --svg -`): one lane per device, memory curves.
        width: plot width in pixels (default: wide enough for every op's number)."""
        return self.render(svg="-", width=width, title=title).stdout

    def ascii(self, width: Optional[int] = None, fit: bool = False, color: bool = False,
              title: Optional[str] = None) -> str:
        """The terminal timeline (`vpipe render --ascii`): width columns (default 100),
        fit squeezes time into one band, color adds ANSI colours."""
        return self.render(ascii=True, width=width, fit=fit, color=color, title=title).stdout

    def trace(self) -> str:
        """The Chrome trace JSON (`vpipe render --trace -`) for Perfetto /
        chrome://tracing."""
        return self.render(trace="-").stdout

    def _repr_svg_(self) -> str:
        """A notebook shows the schedule as its picture."""
        return self.svg()


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
