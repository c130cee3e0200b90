"""The library's JSON reports as dataclasses whose fields are the JSON's keys.

Each record reads like the JSON too: `report["bubble"]`, `report.get(...)`, `dict(report)`
and `report.to_dict()` (the parsed JSON again). A notebook shows a record as an HTML
table (`_repr_html_`). A key a newer library adds is kept and readable by `[]`, so an
older package never fails on a newer report.
"""

from __future__ import annotations

import dataclasses
import html
from typing import Any, ClassVar, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from ._door import Answer

_ROWS_SHOWN = 50  # rows of a nested table a notebook shows before "... N more"


def _plain(value: Any) -> Any:
    if isinstance(value, _Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
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

    # field -> record class of its value (or of each item of its list, or of each value
    # of its object)
    _nested: ClassVar[Dict[str, type]] = {}
    _keyed: ClassVar[Tuple[str, ...]] = ()  # those of _nested that are objects of records
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
            if kind is not None and name in cls._keyed and isinstance(value, dict):
                value = {k: kind.from_dict(v) for k, v in value.items()}
            elif kind is not None and isinstance(value, list):
                value = [kind.from_dict(item) for item in value]
            elif kind is not None and value is not None:
                value = kind.from_dict(value)
            values[name] = value
        record = cls(**values)
        object.__setattr__(record, "_extra", {k: v for k, v in data.items() if k not in names})
        object.__setattr__(record, "_given", frozenset(n for n in names if n in data))
        return record

    def _fields(self) -> Dict[str, Any]:
        """The fields the JSON has (a null it gives stays None), or without JSON the fields
        not None."""
        found = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        given = getattr(self, "_given", frozenset())
        found = {k: v for k, v in found.items() if v is not None or k in given}
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
class SimulationReport(_Record, Answer):
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
    and reason, the V blocks tried and built, whether the time limit ended the search
    (timed_out: the best found so far), the Pareto frontier by increasing memory and every
    candidate."""

    budget: float
    budget_unit: str
    ref_peak_1f1b: float
    params: str
    reason: str
    blocks_tried: int
    blocks_built: int
    timed_out: bool
    frontier: List[Candidate]
    candidates: List[Candidate]

    _nested: ClassVar[Dict[str, type]] = {"costs": Costs, "frontier": Candidate,
                                          "candidates": Candidate}


@dataclasses.dataclass(frozen=True)
class RankMemory(_Record):
    """One pipeline rank's memory in bytes, by category, and their total (with fp8, also
    ["fp8_weights"]: the FP8 weight copies in the total; with offload ["host"])."""

    rank: int
    params: int
    grads: int
    optimizer: int
    activations: int
    buffers: int
    workspace: int
    logits: int
    gathers: int
    allocated: int
    fragmentation: int
    reserved: int
    context: int
    comm: int
    reserve: int
    total: int


@dataclasses.dataclass(frozen=True)
class StageCost(_Record):
    """One stage priced: its layers and device, parameters (expert_params of them the
    routed experts'), activation bytes (act_bytes per microbatch, keep_bytes kept through
    recomputation; under torchtitan's pipeline ["tail_bytes"], what each B leaves until the
    step ends), and pass times in ms (a2a_f_ms and a2a_b_ms: of f_ms and b_ms, the
    expert-parallel all-to-alls; a2a_hidden_ms of them what overlapped F&B pairs hide per
    microbatch, a2a_exposed_ms the rest)."""

    layers: int
    device: int
    params: int
    expert_params: int
    act_bytes: int
    keep_bytes: int
    f_ms: float
    b_ms: float
    w_ms: float
    r_ms: float
    a2a_f_ms: float
    a2a_b_ms: float
    a2a_hidden_ms: float
    a2a_exposed_ms: float


@dataclasses.dataclass(frozen=True)
class PriceResult(SimulationReport):
    """A schedule priced for a model on an accelerator (`vpipe simulate --model ... --json`):
    the simulation's fields (times in the priced units), then the setup, seconds per step
    and their parts, throughput, bytes per rank, whether the largest fits the accelerator
    and whether tightly (tight: less room than margin_bytes, the margin `plan` keeps), the
    layers of each stage and each stage's costs. mean_costs: the family was built with
    mean per-stage costs (it cannot take them per device). a2a_overlap: the all-to-all per
    microbatch summed over the stages (a2a_ms), what overlapped F&B pairs hid (hidden_ms,
    of `pairs` pairs), what stays exposed (exposed_ms), and a sentence (note)."""

    family: str
    model: str
    gpu: str
    p: int
    m: int
    tp: int
    dp: int
    ep: int
    etp: int
    cp: int
    gpus: int
    seq: int
    mbs: int
    cp_comm: str
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
    margin_bytes: int
    tight: bool
    mean_costs: bool
    layers_per_stage: List[int]
    hop_ms: float
    per_stage: List[StageCost]
    a2a_overlap: Dict[str, Any]
    expected_error: Dict[str, Any]

    _nested: ClassVar[Dict[str, type]] = {"costs": Costs, "memory_per_rank": RankMemory,
                                          "per_stage": StageCost}


@dataclasses.dataclass(frozen=True)
class Op(_Record):
    """One op of a schedule: kind "F", "B", "W", "BW" (B and W fused), "R" (a
    recomputation), "O" and "L" (an activation's copy to host memory and back, on the
    device's copy engine), "F&B" (a forward overlapped with a backward, given in backward),
    or a vocabulary pass "EF", "EB", "S", "T" (vocabulary parallelism: `stage` is then the
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


# ---- answers of other commands ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Rows(Answer):
    """A command whose --json answer is a list of records: a sequence of them (by index,
    or by the name of their family), shown in a notebook as one table of _columns."""

    rows: List[Any]

    _row: ClassVar[type] = _Record
    _key: ClassVar[str] = "family"  # what row[NAME] matches
    _columns: ClassVar[Tuple[str, ...]] = ()

    @classmethod
    def from_list(cls, data: List[Mapping[str, Any]]):
        return cls([cls._row.from_dict(item) for item in data])

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)

    def __getitem__(self, at: Union[int, slice, str]) -> Any:
        """A row by position, or the row whose family (name) is at (KeyError if none)."""
        if isinstance(at, str):
            for row in self.rows:
                if row.get(self._key) == at:
                    return row
            raise KeyError(at)
        return self.rows[at]

    def to_list(self) -> List[Dict[str, Any]]:
        """The parsed JSON again: one dict per row."""
        return [row.to_dict() for row in self.rows]

    def _heads(self) -> List[str]:
        return [c for c in self._columns if any(c in row for row in self.rows)]

    def _repr_html_(self) -> str:
        heads = self._heads()
        return _table([[row.get(h, "") for h in heads] for row in self.rows], heads,
                      type(self).__name__)


@dataclasses.dataclass(frozen=True)
class Family(_Record):
    """A schedule family (`vpipe list --json`): its name, what it is, what it needs."""

    name: str
    summary: str
    needs: str


@dataclasses.dataclass(frozen=True)
class Families(_Rows):
    """`vpipe list`: the families the library builds (rows of Family), by name too."""

    _row: ClassVar[type] = Family
    _key: ClassVar[str] = "name"
    _columns: ClassVar[Tuple[str, ...]] = ("name", "summary", "needs")


@dataclasses.dataclass(frozen=True)
class Comparison(_Rows):
    """`vpipe compare`: one row per family that builds for the request, in `vpipe list`
    order: its SimulationReport, or with a model its PriceResult (the JSON's fields).
    comparison["zb-v"] is a family's row; .text is the command line's table; a notebook
    shows the table's columns."""

    _row: ClassVar[type] = SimulationReport
    _columns: ClassVar[Tuple[str, ...]] = (
        "family", "step_time_s", "mfu", "makespan", "bubble", "bubble_makespan",
        "peak_memory_max", "memory_max_bytes", "fits")

    @classmethod
    def from_list(cls, data: List[Mapping[str, Any]]):
        return cls([(PriceResult if "step_time_s" in item else SimulationReport).from_dict(item)
                    for item in data])

    @property
    def families(self) -> List[str]:
        """The families compared, in order."""
        return [row.family for row in self.rows]


@dataclasses.dataclass(frozen=True)
class Configuration(_Record):
    """One configuration the whole-configuration planner priced: family (params: a V
    block's), data-, tensor-, pipeline-, expert-, expert-tensor- and context-parallel
    degrees (ep, etp: 1 for a dense model; cp: 1 without CP), the ZeRO stage (zero, 0-3),
    chunks per device (v, 0 when
    the family has none), microbatch size and count, recomputation, seconds per step, MFU,
    bubble, the largest rank's bytes, whether every rank fits, the room left below the
    capacity (headroom_bytes) and whether that is under the plan's margin (tight); the
    winner also has its bytes per rank, layers per stage and expected error (else None)."""

    family: str
    params: Optional[str]
    dp: int
    tp: int
    pp: int
    ep: int
    etp: int
    cp: int
    zero: int
    v: int
    mbs: int
    m: int
    recompute: str
    step_time_s: float
    mfu: float
    bubble: float
    memory_max_bytes: int
    fits: bool
    headroom_bytes: int
    tight: bool
    memory_per_rank: Optional[List[RankMemory]]
    layers_per_stage: Optional[List[int]]
    expected_error: Optional[Dict[str, Any]]

    _nested: ClassVar[Dict[str, type]] = {"memory_per_rank": RankMemory}


_CONFIG_HEAD = ["family", "params", "dp", "tp", "pp", "v", "mbs", "m", "recompute",
                "step_time_s", "mfu", "bubble", "memory_max_bytes", "fits"]


@dataclasses.dataclass(frozen=True)
class ClusterPlan(_Record, Answer):
    """`vpipe plan --model ... --json`: the whole DP x TP x PP x schedule configuration
    of a model on gpus accelerators for a global batch.

    Fields (the JSON's): model, gpu, gpus, global_batch, seq; best (the winner, a
    Configuration with its memory per rank and layers per stage); best_per_family
    ({family: Configuration}); top (the fastest that fit, fastest first); versus_1f1b
    (1F1B at the winner's point, None when it has none); margin_bytes (the room kept below
    each accelerator's capacity); expected_error (the accelerator's measured accuracy);
    reason (why the winner wins); the search's counts: candidates, evaluated, pruned
    (pruned_by_bound, pruned_by_memory), over_memory, refused, timed_out (time_limit cut
    it) and elapsed_s.

    Also: schedule (the winner as a vpipe.Schedule); torchtitan() and megatron() (the
    exports, each another search); .text the command line's report (another search).
    """

    model: str
    gpu: str
    gpus: int
    global_batch: int
    seq: int
    best: Configuration
    best_per_family: Dict[str, Configuration]
    top: List[Configuration]
    versus_1f1b: Optional[Configuration]
    margin_bytes: int
    expected_error: Dict[str, Any]
    reason: str
    candidates: int
    evaluated: int
    pruned: int
    pruned_by_bound: int
    pruned_by_memory: int
    over_memory: int
    refused: int
    timed_out: bool
    elapsed_s: float

    _nested: ClassVar[Dict[str, type]] = {"best": Configuration, "best_per_family": Configuration,
                                          "top": Configuration, "versus_1f1b": Configuration}
    _keyed: ClassVar[Tuple[str, ...]] = ("best_per_family",)

    def torchtitan(self, directory: Optional[str] = None) -> Dict[str, str]:
        """torchtitan's files for the winner (`--emit torchtitan DIR`): {"job.toml": the
        TOML job's parallelism part, "schedule.csv": the schedule}; written into
        directory when one is given (made if missing), else only returned. The TOML
        names the CSV as DIR/schedule.csv, DIR the directory (or "torchtitan")."""
        reply = self._again(emit="torchtitan", operand=directory or "torchtitan")
        if directory is not None:
            reply.write()
        return {path.rsplit("/", 1)[-1]: text for path, text in reply.files.items()}

    def megatron(self) -> str:
        """Megatron-LM's flags for the best 1F1B or interleaved configuration
        (`--emit megatron`), with the comments the command line prints."""
        return self._again(emit="megatron").stdout

    def _repr_html_(self) -> str:
        """The reason, the search's counts, the top configurations, the best of every
        family and the winner's memory per rank."""
        counts = [[k, self[k]] for k in ("model", "gpu", "gpus", "global_batch", "seq",
                                         "candidates", "evaluated", "pruned", "refused",
                                         "timed_out") if k in self]
        per_family = list(self.best_per_family.values())
        ranks = self.best.memory_per_rank or []
        return (f"<p>{html.escape(self.reason)}</p>"
                + _table(counts, ["key", "value"], type(self).__name__)
                + _table([[c.get(h, "") for h in _CONFIG_HEAD] for c in self.top], _CONFIG_HEAD,
                         "top")
                + _table([[c.get(h, "") for h in _CONFIG_HEAD] for c in per_family],
                         _CONFIG_HEAD, "best_per_family")
                + (_table([list(r.to_dict().values()) for r in ranks], ranks[0].keys(),
                          "the winner's memory_per_rank") if ranks else ""))


@dataclasses.dataclass(frozen=True)
class Workload(_Record):
    """What a model is shown for: tokens per sequence, sequences per microbatch, the
    tensor-, context-, expert- and expert-tensor-parallel degrees, sequence parallelism,
    FlashAttention, recomputation and the FP8 recipe."""

    seq: int
    mbs: int
    tp: int
    cp: int
    ep: int
    etp: int
    sp: bool
    flash: bool
    recompute: str
    fp8: str


@dataclasses.dataclass(frozen=True)
class SavedTensor(_Record):
    """A tensor one layer keeps for its backward: its name, bytes, and from which pass
    until which ("F-B": from F until B, "F-W", "B-W")."""

    name: str
    bytes: float
    keep: str


@dataclasses.dataclass(frozen=True)
class ModelPart(_Record):
    """One part of a model per microbatch on one rank: parameters, bytes F saves
    (act_bytes) and B leaves for W (keep_bytes), FLOPs of F, B, W and a recomputation, and
    the tensors it saves."""

    params: float
    act_bytes: float
    keep_bytes: float
    flops_f: float
    flops_b: float
    flops_w: float
    flops_r: float
    saved: List[SavedTensor]

    _nested: ClassVar[Dict[str, type]] = {"saved": SavedTensor}


@dataclasses.dataclass(frozen=True)
class ModelParts(_Record):
    """A model's parts: one transformer layer, the embedding and the head."""

    layer: ModelPart
    embedding: ModelPart
    head: ModelPart

    _nested: ClassVar[Dict[str, type]] = {"layer": ModelPart, "embedding": ModelPart,
                                          "head": ModelPart}


@dataclasses.dataclass(frozen=True)
class ModelInfo(_Record, Answer):
    """A model as `vpipe model show NAME --json` shows it: its shape (layers, hidden,
    heads, kv_heads, ffn, vocab, ...; head_dim, mla, window and moe when it has them), its
    parameter count, and for the workload it is shown for (workload) its parts per
    microbatch on one rank (parts; layer_kinds when its layers differ). A row of `vpipe
    model list` has the shape only (workload and parts None)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    max_positions: int
    dtype_bytes: int
    vocab: int
    ffn_kind: str
    norm: str
    tied: bool
    bias: bool
    dropout: bool
    learned_positions: bool
    impl: str
    params: float
    workload: Optional[Workload]
    parts: Optional[ModelParts]
    head_dim: Optional[int] = None  # when not hidden / heads
    mla: Optional[Dict[str, int]] = None  # latent attention: q_lora, kv_lora, qk_nope, ...
    window: Optional[Dict[str, int]] = None  # sliding window: tokens, period, layers
    moe: Optional[Dict[str, Any]] = None  # experts, top_k, expert_ffn, ..., active_params
    layer_kinds: Optional[List[ModelPart]] = None  # each kind of layer, with mlp, attention

    _nested: ClassVar[Dict[str, type]] = {"workload": Workload, "parts": ModelParts,
                                          "layer_kinds": ModelPart}


@dataclasses.dataclass(frozen=True)
class Accelerator(_Record):
    """An accelerator pricing knows: peak TFLOP/s, memory, HBM, links within and between
    nodes (GB/s, latency), point-to-point bandwidth, GEMM efficiency, activation traffic,
    the attention kernels' efficiency (and FlashAttention-2's relative to it), per-layer and per-chunk overheads, communication
    and HBM efficiency, memory beyond the tensors (context, communicator buffers,
    fragmentation), the host link and host memory per GPU (offload; 0: unknown), the dense
    FP8 and MXFP8 TFLOP/s (0: none), the accuracy measured for it (expected_*: 0 and 0 runs when none was), GPUs per node."""

    name: str
    peak_tflops: float
    memory_gib: float
    hbm_tb_s: float
    intra_node_gb_s: float
    inter_node_gb_s: float
    intra_node_latency_us: float
    inter_node_latency_us: float
    p2p_gb_s: float
    gemm_efficiency: float
    gemm_edge: float
    act_traffic_f: float
    act_traffic_b: float
    attn_efficiency_f: float
    attn_efficiency_b: float
    attn_fa2_f: float
    attn_fa2_b: float
    layer_overhead_us: float
    chunk_overhead_us: float
    comm_efficiency: float
    hbm_efficiency: float
    context_gib: float
    comm_buffer_gib: float
    frag_fraction: float
    host_gb_s: float
    host_memory_gib: float
    fp8_peak_tflops: float
    mxfp8_peak_tflops: float
    expected_step_error: float
    expected_step_worst: float
    expected_memory_error: float
    expected_memory_worst: float
    gpus_per_node: int
    expected_runs: int
    expected_memory_runs: int
    expected_basis: str


@dataclasses.dataclass(frozen=True)
class ModelCatalog(_Record, Answer):
    """`vpipe model list --json`: the model presets (ModelInfo rows, shape only) and the
    accelerator presets (Accelerator rows)."""

    models: List[ModelInfo]
    gpus: List[Accelerator]

    _nested: ClassVar[Dict[str, type]] = {"models": ModelInfo, "gpus": Accelerator}


@dataclasses.dataclass(frozen=True)
class StageLifespan(_Record):
    """A block's stage: its device and how long one microbatch's activation lives."""

    stage: int
    device: int
    lifespan: float


@dataclasses.dataclass(frozen=True)
class DeviceBound(_Record):
    """A block's device: the lifespan bound on its peak, its steady-state peak and the
    simulated peak (units)."""

    device: int
    bound: float
    steady: float
    peak: float


@dataclasses.dataclass(frozen=True)
class Lifespan(_Record):
    """A block's lifespan report: the interval between microbatches, each stage's lifespan
    and each device's bounds."""

    interval: float
    stages: List[StageLifespan]
    devices: List[DeviceBound]

    _nested: ClassVar[Dict[str, type]] = {"stages": StageLifespan, "devices": DeviceBound}


@dataclasses.dataclass(frozen=True)
class BlockReport(_Record, Answer):
    """`vpipe block FILE --json`: the schedule built from a building block, simulated
    (simulation), its lifespan report, and how many ops the reorder moved (reorder_moves,
    -1 without reorder). Also schedule: the built schedule as a vpipe.Schedule."""

    simulation: SimulationReport
    lifespan: Lifespan
    reorder_moves: int

    _nested: ClassVar[Dict[str, type]] = {"simulation": SimulationReport, "lifespan": Lifespan}
