"""doctor(), check() and diff(): the Python face of `attnprof doctor` and `attnprof diff`."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence, Union

from . import _core

Source = Union[str, "os.PathLike[str]", Any]  # a trace path, or a finished torch.profiler.profile
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Finding:
    """One diagnosis: what is slow, what it costs, the fix. Times are per region instance."""

    id: str
    scope: str  # "attention" or "model"
    severity: str  # "high", "medium", "low", "info"
    region: str
    time_ms: float  # the time it costs, per instance of its region: GPU time, or wall time where clock is "wall"
    share: float  # of the region's GPU time (clock "wall": of its steps' wall time)
    message: str  # one line, with numbers
    detail: str
    fix: str
    after_fix_ms: Optional[float]  # the same work after the fix, per instance; None when unknown
    evidence: tuple = ()
    part_of: Optional[int] = None  # index of the finding whose GPU work holds this one's (inside unfused-attention)
    clock: str = "gpu"  # what time_ms and share count: "gpu" or "wall" (gpu-idle, attention-host)

    def __str__(self) -> str:
        return f"[{self.severity}] {self.id} ({self.scope}): {self.message}"


@dataclass(frozen=True)
class AttentionCall:
    """Attention of one implementation and pass in the analysed regions."""

    implementation: str  # "fused", "sdpa-math", "unfused"
    pass_: str  # "forward", "backward"
    calls: int  # over the analysed regions (Region.attention: over its instances)
    kernels_per_call: float
    total_ms: float  # over all calls
    precision: Optional[str]
    kernel: Optional[str]  # fused kernel family
    fused_estimate_total_ms: Optional[float]
    shape: Optional[dict]
    # SDPA math only: (calls, why) for each reason the calls' inputs show for the fallback
    math_causes: tuple = ()
    # In a Region's attention: per instance of the region (a step); None in Report.attention.
    time_ms: Optional[float] = None
    fused_estimate_ms: Optional[float] = None
    calls_per_instance: Optional[float] = None
    # In an inference trace that generates: "prefill", "decode" or "mixed" (a packed forward of several requests
    # with more than 16 query rows that reads cached keys); None: training, encoders, a plain forward;
    # decode: the bytes a call must move and the achieved share of the GPU's peak memory bandwidth.
    phase: Optional[str] = None
    bytes_per_call: Optional[float] = None
    bandwidth_share: Optional[float] = None
    # Serving engines' kernels on a paged KV cache: how many calls, the page size in tokens (None: not said).
    paged_calls: int = 0
    page_size: Optional[int] = None
    # Calls run by CUDA graph replays, and of them those whose shape is their ops' at the graph's capture
    # (the trace holds it; shape["source"] says so).
    graph_calls: int = 0
    capture_shape_calls: int = 0


@dataclass(frozen=True)
class Region:
    name: str
    source: str
    instances: int
    kernels_per_instance: float
    gpu_time_ms: float  # per instance (a step)
    attention_time_ms: float  # per instance
    gpu_time_total_ms: float  # over all instances
    attention_time_total_ms: float
    tensor_core_share: Optional[float]
    attention: tuple = field(default=())


@dataclass(frozen=True)
class Step:
    """The median step of the region group doctor reports on, on the wall clock (all per step, in ms)."""

    region: str
    instances: int
    span_ms: float
    gpu_busy_ms: float
    idle_ms: float
    bound: str  # "gpu", "launch", "cpu", "sync", "copy", "comm"
    idle_split_ms: dict  # cause -> ms: launch, cpu, sync, copy, comm, other
    launches: int
    host_syncs: int
    unknowns: tuple = ()  # what the trace could not tell


@dataclass(frozen=True)
class Fix:
    """One fix and what it is worth per step: step time first, then GPU time (ms saved; positive is faster)."""

    id: str
    title: str
    findings: tuple  # ids of the findings it resolves
    step_ms: float
    step_ms_range: tuple  # (low, high) where the trace cannot tell
    gpu_ms: float
    basis: str

    def __str__(self) -> str:
        return f"{self.id}: step -{self.step_ms:.3f} ms, GPU -{self.gpu_ms:.3f} ms ({self.title})"



def _attention(entries: Iterable[dict]) -> tuple:
    return tuple(
        AttentionCall(
            implementation=a["implementation"],
            pass_=a["pass"],
            calls=a["calls"],
            kernels_per_call=a["kernels_per_call"],
            total_ms=a["total_ms"],
            precision=a["precision"],
            kernel=a["kernel"],
            fused_estimate_total_ms=a["fused_estimate_total_ms"],
            shape=a["shape"],
            math_causes=tuple((m["calls"], m["cause"]) for m in a.get("math_causes", ())),
            time_ms=a.get("time_ms"),
            fused_estimate_ms=a.get("fused_estimate_ms"),
            calls_per_instance=a.get("calls_per_instance"),
            phase=a.get("phase"),
            bytes_per_call=a.get("bytes_per_call"),
            bandwidth_share=a.get("bandwidth_share"),
            paged_calls=a.get("paged_calls", 0),
            page_size=a.get("page_size"),
            graph_calls=a.get("graph_calls", 0),
            capture_shape_calls=a.get("capture_shape_calls", 0),
        )
        for a in entries
    )


class Report:
    """What `attnprof doctor` says about one trace.

    str(report) is the terminal report, report.to_json() the `doctor --json`
    document, report.to_markdown() the `doctor --markdown` report, report.brief()
    its first screen, and in Jupyter the report shows as the `doctor --html` page.
    """

    def __init__(self, engine: "_core.Doctor"):
        self._engine = engine
        self._json = engine.json()
        doc = json.loads(self._json)
        self.document: dict = doc
        self.trace: str = doc["trace"]
        self.device: dict = doc["device"]
        self.unsupported: Optional[str] = doc["unsupported"]
        self.attention = _attention(doc["attention"])
        self.regions = tuple(
            Region(
                name=g["name"],
                source=g["source"],
                instances=g["instances"],
                kernels_per_instance=g["kernels_per_instance"],
                gpu_time_ms=g["gpu_time_ms"],
                attention_time_ms=g["attention_time_ms"],
                gpu_time_total_ms=g["gpu_time_total_ms"],
                attention_time_total_ms=g["attention_time_total_ms"],
                tensor_core_share=g["tensor_core_share"],
                attention=_attention(g["attention"]),
            )
            for g in doc["groups"]
        )
        st = doc["step"]
        self.step: Optional[Step] = (
            None
            if st is None
            else Step(
                region=st["region"],
                instances=st["instances"],
                span_ms=st["span_ms"],
                gpu_busy_ms=st["gpu_busy_ms"],
                idle_ms=st["idle_ms"],
                bound=st["bound"],
                idle_split_ms=dict(st["idle_split_ms"]),
                launches=st["launches"],
                host_syncs=st["host_syncs"],
                unknowns=tuple(st["unknowns"]),
            )
        )
        self.fixes = tuple(
            Fix(
                id=f["id"],
                title=f["title"],
                findings=tuple(f["findings"]),
                step_ms=f["step_ms"],
                step_ms_range=tuple(f["step_ms_range"]),
                gpu_ms=f["gpu_ms"],
                basis=f["basis"],
            )
            for f in doc["fixes"]
        )
        self.findings = tuple(
            Finding(
                id=f["id"],
                scope=f["scope"],
                severity=f["severity"],
                region=f["region"],
                time_ms=f["time_ms"],
                share=f["share"],
                message=f["title"],
                detail=f["detail"],
                fix=f["fix"],
                after_fix_ms=f["after_fix_ms"],
                evidence=tuple(f["evidence"]),
                part_of=f["part_of"],
                clock=f.get("clock", "gpu"),
            )
            for f in doc["findings"]
        )

    def to_json(self) -> str:
        """The `attnprof doctor --json` document."""
        return self._json

    def to_html(self) -> str:
        """The `attnprof doctor --html` page (self-contained)."""
        return self._engine.html()

    def annotated_trace(self) -> str:
        """The `attnprof doctor --annotate` trace (Chrome JSON for the Perfetto UI)."""
        return self._engine.annotated_trace()

    def to_markdown(self) -> str:
        """The `attnprof doctor --markdown` report (a pull-request or issue comment)."""
        return self._engine.markdown()

    def brief(self) -> str:
        """The `attnprof doctor --brief` first screen: the step, the fixes with what each is worth."""
        return self._engine.brief()

    def _repr_html_(self) -> str:
        return self.to_html()

    def __str__(self) -> str:
        return self._engine.text()

    def __repr__(self) -> str:
        return f"<attnprof.Report {self.trace!r}: {len(self.findings)} findings>"


class AttentionCheckError(AssertionError):
    """Raised by attnprof.check when findings match its gate (or the trace could not be diagnosed):
    .findings lists them, .report has the rest."""

    def __init__(self, report: Report, findings: Sequence[Finding], reason: Optional[str] = None):
        self.report = report
        self.findings = tuple(findings)
        if reason is not None:
            super().__init__(f"{report.trace}: nothing checked: {reason}")
            return
        listed = "; ".join(str(f) for f in self.findings)
        super().__init__(f"{report.trace}: {len(self.findings)} finding(s) caught by the gate: {listed}")


def _engine(source: Source, region: Optional[str], capture_trace: Optional[PathLike] = None) -> "_core.Doctor":
    capture = os.fspath(capture_trace) if capture_trace is not None else ""
    if hasattr(source, "export_chrome_trace"):  # a torch.profiler.profile, finished
        with tempfile.TemporaryDirectory(prefix="attnprof-") as tmp:
            path = os.path.join(tmp, "trace.json")
            source.export_chrome_trace(path)
            return _core.Doctor(path, region or "", "<torch.profiler.profile>", capture)
    if isinstance(source, (str, os.PathLike)):
        return _core.Doctor(os.fspath(source), region or "", "", capture)
    raise TypeError(
        f"attnprof: a trace path (.json / .json.gz) or a finished torch.profiler.profile, not {type(source).__name__}"
    )


def doctor(source: Source, region: Optional[str] = None, capture_trace: Optional[PathLike] = None) -> Report:
    """Diagnoses a trace (a path, or a finished torch.profiler.profile) as `attnprof doctor` does.

    capture_trace: a second trace that holds the capture of the CUDA graphs this one replays (the
    warm-up profiled apart), as `doctor --capture-trace`: replays that ran alike take their calls'
    shapes from it."""
    return Report(_engine(source, region, capture_trace))


def check(
    source: Union[Source, Report],
    fail_on: Sequence[str] = ("attention",),
    region: Optional[str] = None,
    capture_trace: Optional[PathLike] = None,
) -> Report:
    """A CI gate: raises AttentionCheckError when a finding matches `fail_on`, else returns the report.

    Items of fail_on are finding ids ("fp32-upcast"), scopes ("attention": any finding about the
    attention calls; "model"), severities ("high", "medium", "low", "info": that or above) or "any",
    as for `attnprof doctor --fail-on`.
    """
    if isinstance(fail_on, str):
        fail_on = [fail_on]
    items = [part for item in fail_on for part in item.split(",") if part]  # "attention,high" as the CLI takes it
    report = source if isinstance(source, Report) else doctor(source, region, capture_trace)
    caught = report._engine.caught(items)  # validates the items first
    if report.unsupported:
        raise AttentionCheckError(report, [], reason=f"the trace was not diagnosed: {report.unsupported}")
    if report.document["gpu_kernels"] == 0:
        raise AttentionCheckError(report, [], reason="the trace has no GPU kernels")
    found = [report.findings[i] for i in caught]
    if found:
        raise AttentionCheckError(report, found)
    return report


class Diff:
    """What changed between two traces, per step (`attnprof diff`)."""

    def __init__(
        self, before: "_core.Doctor", after: "_core.Doctor", regression_pct: Optional[float], gate_on: str = "auto"
    ):
        self._args = (before, after, regression_pct)
        self._gate_on = gate_on
        self.document: dict = json.loads(_core.diff(before, after, regression_pct, "json", gate_on))
        gate = self.document["gate"]
        self.regression: Optional[bool] = None if gate is None else gate["regression"]
        self.reasons: tuple = () if gate is None else tuple(gate["reasons"])

    def to_json(self) -> str:
        return _core.diff(*self._args, "json", self._gate_on)

    def to_markdown(self) -> str:
        return _core.diff(*self._args, "markdown", self._gate_on)

    def to_html(self) -> str:
        return _core.diff(*self._args, "html", self._gate_on)

    def _repr_html_(self) -> str:
        return self.to_html()

    def __str__(self) -> str:
        return _core.diff(*self._args, "text", self._gate_on)


def diff(
    before: Source,
    after: Source,
    region: Optional[str] = None,
    regression_pct: Optional[float] = None,
    gate_on: str = "auto",
) -> Diff:
    """Compares two traces as `attnprof diff` does; with regression_pct, .regression says whether the gate failed.

    gate_on: "step" (the median step's span), "attention" (attention time per step), or "auto": the step where
    both traces have steps with a CPU side, else attention, as `attnprof diff --fail-on regression` does.
    """
    if regression_pct is not None and not (0 <= regression_pct < 1e6):  # also refuses NaN
        raise _core.InputError(
            f"regression_pct {regression_pct}: expected a number >= 0 (the growth per step allowed)"
        )
    return Diff(_engine(before, region), _engine(after, region), regression_pct, gate_on)
