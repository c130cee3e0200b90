"""The library's JSON reports as dataclasses whose fields are the JSON's keys.

Each record reads like the JSON too: `report["bubble"]`, `report.get(...)`, `dict(report)`
and `report.to_dict()` (the parsed JSON again). A notebook shows a record as an HTML
table (`_repr_html_`). A key a newer library adds is kept and readable by `[]`, so an
older package never fails on a newer report.
"""

from __future__ import annotations

import dataclasses
import html
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Tuple

_ROWS_SHOWN = 50  # rows of a nested table a notebook shows before "... N more"


def _plain(value: Any) -> Any:
    if isinstance(value, _Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _cell(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, _Record):
        text = ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        text = ", ".join(_cell(v) for v in value)
    else:
        text = str(value)
    return html.escape(text)


def _table(rows: List[List[Any]], head: List[str], caption: str) -> str:
    shown = rows[:_ROWS_SHOWN]
    more = len(rows) - len(shown)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
                   for row in shown)
    if more:
        body += f'<tr><td colspan="{len(head)}">... {more} more</td></tr>'
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return (f"<table><caption>{html.escape(caption)}</caption><tr>{header}</tr>{body}"
            "</table>")


class _Record:
    """What every report record shares: construction from parsed JSON, dict-style reading,
    to_dict and the notebook table."""

    # field -> record class of its value (or of each item of its list)
    _nested: ClassVar[Dict[str, type]] = {}
    # fields holding one number per device, shown as one table
    _per_device: ClassVar[Tuple[str, ...]] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        """The record of parsed JSON; a key the JSON lacks is None, a key the record does
        not know is kept for `[]` and to_dict."""
        names = [f.name for f in dataclasses.fields(cls)]
        values = {}
        for name in names:
            value, kind = data.get(name), cls._nested.get(name)
            if kind is not None and isinstance(value, list):
                value = [kind.from_dict(item) for item in value]
            elif kind is not None and value is not None:
                value = kind.from_dict(value)
            values[name] = value
        record = cls(**values)
        object.__setattr__(record, "_extra", {k: v for k, v in data.items() if k not in names})
        return record

    def _fields(self) -> Dict[str, Any]:
        found = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        found = {k: v for k, v in found.items() if v is not None}
        found.update(getattr(self, "_extra", {}))
        return found

    def keys(self) -> List[str]:
        """The JSON's keys this record holds."""
        return list(self._fields())

    def items(self) -> List[Tuple[str, Any]]:
        return list(self._fields().items())

    def __getitem__(self, key: str) -> Any:
        found = self._fields()
        if key not in found:
            raise KeyError(key)
        return found[key]

    def __contains__(self, key: object) -> bool:
        return key in self._fields()

    def get(self, key: str, default: Any = None) -> Any:
        return self._fields().get(key, default)

    def to_dict(self) -> Dict[str, Any]:
        """The record as the parsed JSON it came from (nested records as dicts)."""
        return {k: _plain(v) for k, v in self._fields().items()}

    def _repr_html_(self) -> str:
        scalars, tables = [], []
        per_device = [k for k in self._per_device if k in self]
        for key, value in self.items():
            if key in per_device:
                continue
            if isinstance(value, list) and value and isinstance(value[0], _Record):
                head = value[0].keys()
                rows = [[item.get(h, "") for h in head] for item in value]
                tables.append(_table(rows, head, key))
            else:
                scalars.append([key, value])
        if per_device:
            rows = [[d] + [self[k][d] for k in per_device] for d in range(len(self[per_device[0]]))]
            tables.insert(0, _table(rows, ["device"] + per_device, "per device"))
        return _table(scalars, ["key", "value"], type(self).__name__) + "".join(tables)


@dataclasses.dataclass(frozen=True)
class Costs(_Record):
    """Per-microbatch costs of one device's slice: F, B, W, c (a hop), and FB (an overlapped
    F&B) and R (a recomputation) when given (else None)."""

    F: float
    B: float
    W: float
    c: float
    FB: Optional[float]
    R: Optional[float]


@dataclasses.dataclass(frozen=True)
class SimulationReport(_Record):
    """`vpipe simulate --json`: the schedule's shape, its costs, and what the simulator
    measured. Times are in cost units, memory in units of one microbatch's activations of
    one device's slice (bytes in peak_memory_bytes when the memory model knows them, else
    None); bubble = 1 - busy / longest device span, bubble_makespan = 1 - busy / makespan;
    peak_memory and busy have one entry per device."""

    family: str
    p: int
    m: int
    stages: int
    placement: str
    recompute: str
    costs: Costs
    makespan: float
    longest_span: float
    bubble: float
    bubble_makespan: float
    peak_memory: List[float]
    peak_memory_max: float
    param_copies: int
    peak_memory_bytes: Optional[List[float]]
    busy: List[float]

    _nested: ClassVar[Dict[str, type]] = {"costs": Costs}
    _per_device: ClassVar[Tuple[str, ...]] = ("peak_memory", "peak_memory_bytes", "busy")


@dataclasses.dataclass(frozen=True)
class Candidate(_Record):
    """A schedule the planner measured: family and V-block params, peak memory (units, and
    bytes when known, else None), bubble, makespan, and whether it fits the budget."""

    family: str
    params: str
    memory: float
    memory_bytes: Optional[float]
    bubble: float
    makespan: float
    fits: bool


@dataclasses.dataclass(frozen=True)
class PlanReport(SimulationReport):
    """`vpipe plan --json`: the chosen schedule's simulation report, and the budget (in
    budget_unit, "units" or "bytes"), 1F1B's peak it is a fraction of, the choice's params
    and reason, the V blocks tried and built, the Pareto frontier by increasing memory and
    every candidate."""

    budget: float
    budget_unit: str
    ref_peak_1f1b: float
    params: str
    reason: str
    blocks_tried: int
    blocks_built: int
    frontier: List[Candidate]
    candidates: List[Candidate]

    _nested: ClassVar[Dict[str, type]] = {"costs": Costs, "frontier": Candidate,
                                          "candidates": Candidate}


@dataclasses.dataclass(frozen=True)
class RankMemory(_Record):
    """One pipeline rank's memory in bytes, by category, and their total."""

    rank: int
    params: int
    grads: int
    optimizer: int
    activations: int
    buffers: int
    workspace: int
    reserve: int
    total: int


@dataclasses.dataclass(frozen=True)
class StageCost(_Record):
    """One stage priced: its layers and device, parameter and activation bytes (act_bytes
    per microbatch, keep_bytes kept through recomputation), and pass times in ms."""

    layers: int
    device: int
    params: int
    act_bytes: int
    keep_bytes: int
    f_ms: float
    b_ms: float
    w_ms: float
    r_ms: float


@dataclasses.dataclass(frozen=True)
class PriceResult(_Record):
    """A schedule priced for a model on an accelerator (`vpipe price --json`): the setup,
    seconds per step and their parts, throughput, bytes per rank, whether the largest fits
    the accelerator, the layers of each stage and each stage's costs. mean_costs: the
    family was built with mean per-stage costs (it cannot take them per device)."""

    family: str
    model: str
    gpu: str
    p: int
    m: int
    tp: int
    dp: int
    gpus: int
    seq: int
    mbs: int
    step_time_s: float
    makespan_s: float
    optimizer_s: float
    dp_reduce_s: float
    dp_exposed_s: float
    bubble: float
    mfu: float
    samples_per_s_per_gpu: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    memory_per_rank: List[RankMemory]
    memory_max_bytes: int
    memory_max_rank: int
    capacity_bytes: int
    fits: bool
    mean_costs: bool
    layers_per_stage: List[int]
    hop_ms: float
    per_stage: List[StageCost]

    _nested: ClassVar[Dict[str, type]] = {"memory_per_rank": RankMemory,
                                          "per_stage": StageCost}


@dataclasses.dataclass(frozen=True)
class Op(_Record):
    """One op of a schedule: kind "F", "B", "W", "BW" (B and W fused), "R" (a
    recomputation), "F&B" (a forward overlapped with a backward, given in backward), or a
    vocabulary pass "EF", "EB", "S", "T" (vocabulary parallelism: `stage` is then the
    vocabulary shard, which runs on the device of that number), the stage it runs and its
    microbatch, both from 0."""

    kind: str
    stage: int
    microbatch: int
    backward: Optional["Op"] = None

    @classmethod
    def from_json(cls, item: List[Any]) -> "Op":
        """An op of vpipe JSON: ["F", stage, mb] or ["F&B", stage, mb, kind, stage2, mb2]."""
        if item[0] == "F&B":
            return cls("F&B", item[1], item[2], cls(item[3], item[4], item[5]))
        return cls(item[0], item[1], item[2])

    def __str__(self) -> str:
        text = f"{self.kind}{self.stage}.{self.microbatch}"
        return f"F{self.stage}.{self.microbatch}&{self.backward}" if self.backward else text
