"""replay(): `attnprof doctor --replay` from Python: the trace's attention shapes run on this
machine's GPU through the bench, with the measured saving of each fix.

It runs the CLI bundled in the package (the bench and its CUDA half live there), so a
trace from torch.profiler and one from `attnprof record` replay alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, fields
from typing import Optional, Sequence, Union

from . import _core
from ._cli import binary
from ._report import Source

Shape = Union[str, Sequence[int]]  # "2,32/8,4096,128" or (B, H, S, D) / (B, H, H_KV, S, S_KV, D)


@dataclass(frozen=True)
class ReplayRow:
    implementation: str  # bench name: "math", "eager", "eager-fp32-softmax", "cudnn", "fused"
    dtype: str
    own: bool  # stands in for what the trace ran
    ms_per_call: Optional[float]
    saving_ms_per_call: Optional[float]  # forward, vs the stand-in (or the traced time without one)
    backward_ms_per_call: Optional[float]  # training traces: the backward of one call
    backward_saving_ms_per_call: Optional[float]
    saving_ms_per_step: Optional[float]  # both passes of a training trace (None unless both were measured)
    not_run: Optional[str]  # why it did not run
    backward_not_run: Optional[str]
    # A decode shape (memory-bound): the bytes a call moves in this row's dtype (q, K, V and the output
    # once), its TB/s and that as a share of the replay GPU's peak; None for other shapes.
    bytes_per_call: Optional[float]
    tb_per_s: Optional[float]
    bandwidth_share: Optional[float]


@dataclass(frozen=True)
class ReplayShape:
    shape: str  # "B=2 H=8 H_kv=2 S=512 S_kv=512 D=64 bf16 causal", "?" when not known
    dims: Optional[dict]  # batch, q_heads, kv_heads, q_len, kv_len, head_dim, causal, bottom_right
    dtype: str
    source: str  # where the shape came from, and what was assumed
    calls: int
    traced_ms_per_call: float
    backward_calls: int  # the backward calls of these forwards (training), 0 for inference
    traced_backward_ms_per_call: float
    stand_in: str
    backward_stand_in: str
    own_vs_traced: Optional[float]  # replayed stand-in / traced
    carries_over: str
    own_backward_vs_traced: Optional[float]
    backward_carries_over: str
    fix: str
    command: str  # the attnprof bench command(s) for this shape
    problem: Optional[str]  # not replayed, why
    rows: tuple


_DIMS = ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "head_dim", "causal", "bottom_right")


def _from_json(cls, doc: dict, **derived):
    """A dataclass from the `doctor --replay --json` object whose keys are its field names; `derived`
    gives the fields that are not keys."""
    return cls(**{f.name: derived[f.name] if f.name in derived else doc[f.name] for f in fields(cls)})


class Replay:
    """The measured savings of one trace: .shapes (ReplayShape), .device, .peak_tb_per_s, .not_run (why not,
    without a GPU)."""

    def __init__(self, document: dict, text: str):
        self.document = document
        r = document["replay"]
        self.device: Optional[str] = r["device"]
        self.not_run: Optional[str] = r["not_run"]
        self.peak_tb_per_s: Optional[float] = r["peak_tb_per_s"]  # the replay GPU's, by its name
        self.shapes = tuple(
            _from_json(
                ReplayShape,
                s,
                dims={k: s[k] for k in _DIMS} if "batch" in s else None,
                rows=tuple(_from_json(ReplayRow, w) for w in s["rows"]),
            )
            for s in r["shapes"]
        )
        self._text = text

    def to_json(self) -> str:
        return json.dumps(self.document["replay"], indent=2)

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        where = self.device or f"not run: {self.not_run}"
        return f"<attnprof.Replay {self.document['trace']!r}: {len(self.shapes)} shape(s), {where}>"


def _shape_arg(shape: Shape) -> str:
    if isinstance(shape, str):
        return shape
    v = [int(x) for x in shape]
    if len(v) == 4:
        return ",".join(str(x) for x in v)
    if len(v) == 6:
        return f"{v[0]},{v[1]}/{v[2]},{v[3]}/{v[4]},{v[5]}"
    raise _core.InputError(f"attnprof.replay: shape {tuple(v)} is not (B, H, S, D) or (B, H, H_KV, S, S_KV, D)")


def _run(args: Sequence[str], timeout: Optional[float] = None) -> str:
    exe = binary()
    if not exe.is_file():
        raise _core.InputError(f"attnprof: the CLI is missing from the installed package ({exe}); reinstall attnprof")
    try:
        out = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise _core.InputError(f"attnprof {' '.join(args)}: stopped after {timeout:g} s") from None
    if out.returncode != 0:
        raise _core.InputError(out.stderr.strip().removeprefix("attnprof: ") or f"attnprof exited {out.returncode}")
    return out.stdout


def replay(
    source: Source,
    shape: Optional[Shape] = None,
    causal: Optional[bool] = None,
    region: Optional[str] = None,
    timeout: Optional[float] = None,
) -> Replay:
    """Replays a trace's attention shapes on this machine's GPU (`attnprof doctor --replay`).

    shape: for calls whose trace does not say it (no record_shapes); causal: for calls whose trace
    does not say whether they are causal; timeout: seconds before the run is stopped (InputError). Without a GPU the result says so (.not_run) and each
    shape carries the `attnprof bench` command to run where there is one.
    """
    with tempfile.TemporaryDirectory(prefix="attnprof-") as tmp:
        if hasattr(source, "export_chrome_trace"):  # a finished torch.profiler.profile
            path = os.path.join(tmp, "trace.json")
            source.export_chrome_trace(path)
        elif isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
        else:
            raise TypeError(
                f"attnprof: a trace path (.json / .json.gz) or a finished torch.profiler.profile, not "
                f"{type(source).__name__}"
            )
        args = ["doctor", "--replay", "--json", path]
        if shape is not None:
            args += ["--shape", _shape_arg(shape)]
        if causal is not None:
            args.append("--causal" if causal else "--no-causal")
        if region:
            args += ["--region", region]
        document = json.loads(_run(args, timeout))
    return Replay(document, _replay_text(document))


def _replay_text(document: dict) -> str:
    r = document["replay"]
    lines = [f"attnprof replay: {document['trace']}"]
    lines.append(f"GPU: {r['device']}" if r["device"] else f"Not run: {r['not_run']}")
    for s in r["shapes"]:
        lines.append(f"{s['shape']}: {s['calls']} calls ({s['implementations']}), {s['traced_ms_per_call']:.3f} ms/call traced")
        if s["problem"]:
            lines.append(f"  not replayed: {s['problem']}")
            continue
        for w in s["rows"]:
            name = w["implementation"] + (" (stand-in)" if w["own"] else "")
            if w["not_run"]:
                lines.append(f"  {name:<30} {w['dtype']:<5} -  {w['not_run']}")
            else:
                saving = "" if w["saving_ms_per_call"] is None else f"  saves {w['saving_ms_per_call']:.3f} ms/call"
                if w["tb_per_s"] is not None:  # a decode shape: the bandwidth its bytes a call make
                    share = "" if w["bandwidth_share"] is None else f", {100 * w['bandwidth_share']:.0f}% of peak"
                    saving += f"  {w['bytes_per_call'] / 1e6:.2f} MB at {w['tb_per_s']:.2f} TB/s{share}"
                lines.append(f"  {name:<30} {w['dtype']:<5} {w['ms_per_call']:.3f} ms/call{saving}")
        if s["carries_over"]:
            lines.append(f"  {s['carries_over']}")
        if not r["device"] and s["command"]:
            lines += [f"  {c}" for c in s["command"].splitlines()]
    return "\n".join(lines) + "\n"
