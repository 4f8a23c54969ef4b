"""The MCP server of `attnprof mcp` on the MCP SDK (python/attnprof/mcp.py imports it only when the
server starts, so that without the SDK `attnprof mcp` says what to install). The tools' work is
mcp.Session's; this module gives it typed inputs and outputs and the client's roots.

Each tool answers with a CallToolResult: its text is what a model reads first (the report's Markdown
where there is one, else compact JSON), its structured content the typed answer (the output schema).

No `from __future__ import annotations` here: the SDK reads the tools' annotations at runtime.
"""

import json
from typing import Annotated, Any, Callable, Dict, List, Literal, Optional, Type

from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ListRootsResult, TextContent
from pydantic import BaseModel, Field

from . import _core
from .mcp import Roots, Session, ToolInputError, bench_args

_COST = "Reads the trace once per session (a 300 MB trace: under a second); later questions on it answer from memory."


class DoctorAnswer(BaseModel):
    markdown: str = Field(description="The report as `attnprof doctor --markdown` prints it (brief: the first screen)")
    report: Dict[str, Any] = Field(
        description="The `attnprof doctor --json` document (docs/schema/attnprof.schema.json), its per-instance rows "
        "(regions, step.steps) cut to the first `instances` and its kernel table to the first `top_kernels`"
    )
    instances_left_out: int = Field(description="Per-instance rows left out of report (ask with a larger instances)")
    kernels_left_out: int = Field(description="Kernels left out of report's kernel table (the kernels tool has all)")


class CheckAnswer(BaseModel):
    passed: bool = Field(description="True when no finding matches the gate and the trace was diagnosed")
    caught: List[Dict[str, Any]] = Field(description="The findings the gate caught: id, scope, severity, time_ms, title")
    not_checked: Optional[str] = Field(description="Why nothing was checked (not diagnosed, no GPU kernels), else null")


class DiffAnswer(BaseModel):
    markdown: str = Field(description="The comparison as `attnprof diff --markdown` prints it")
    regression: Optional[bool] = Field(description="The gate's verdict; null without fail_on")
    report: Dict[str, Any] = Field(description="The `attnprof diff --json` document")


class AttentionAnswer(BaseModel):
    trace: str
    step: Optional[Dict[str, Any]] = Field(description="The median step: span, GPU busy, idle split, bound")
    calls: List[Dict[str, Any]] = Field(description="Attention by implementation, pass and phase, over the trace")
    per_region: List[Dict[str, Any]] = Field(description="The same per instance (step) of each region group")


class KernelsAnswer(BaseModel):
    trace: str
    categories: List[str] = Field(description="The kernel categories present in the trace")
    kernels: List[Dict[str, Any]] = Field(
        description="Kernels by GPU time: name, category, unit, precision, op, count, total_ms"
    )
    more: int = Field(description="Kernels matching but left out by limit")


class RunAnswer(BaseModel):
    ran: bool = Field(description="False where this machine has no GPU: run the command the text gives where there is one")
    text: str
    report: Optional[Dict[str, Any]] = None
    command: Optional[str] = None


def client_roots(ctx: Context) -> Optional[ListRoots]:
    """The client's roots, where it declares the capability."""
    caps = ctx.client_capabilities
    return ListRoots() if caps is not None and caps.roots is not None else None


ClientRoots = Annotated[Optional[ListRootsResult], Resolve(client_roots)]
Region = Annotated[Optional[str], Field(description="Analyse this range only (a record_function / NVTX name), as --region")]
Path = Annotated[str, Field(description="A trace (.json, .json.gz from torch.profiler or attnprof record)")]
Timeout = Annotated[float, Field(description="Seconds before the GPU run is stopped", gt=0)]


def folders(roots: Optional[ListRootsResult]) -> Optional[List[str]]:
    """The client's root folders ([] when it declares roots but no local folder), None without roots."""
    return None if roots is None else Roots.client_folders([str(r.uri) for r in roots.roots])


def answer(model: Type[BaseModel], work: Callable[[], Dict[str, Any]], text_key: Optional[str] = None) -> CallToolResult:
    """The tool's result: `work`'s answer as `model`, its text the answer's `text_key` field (else compact JSON)."""
    try:
        data = model(**work()).model_dump(mode="json")
    except (ToolInputError, _core.InputError) as e:
        raise ToolError(str(e)) from None
    except (OSError, ValueError) as e:  # a path the system refuses: one line, not a crash
        raise ToolError(str(e)) from None
    text = data[text_key] if text_key else json.dumps(data, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def build_server(session: Session) -> MCPServer:
    """The MCPServer exposing the session's tools."""
    app = MCPServer(
        "attnprof",
        version=_core.__version__,
        instructions=(
            "attnprof diagnoses PyTorch attention in GPU traces (torch.profiler, attnprof record): which "
            "kernels each attention call ran, why it is slow, and what each fix saves in step time. Ask "
            "doctor first (its markdown is the answer to show; report has every figure), then attention_calls "
            "or kernels for follow-ups; do not parse traces yourself."
        ),
    )

    @app.tool(
        description="Diagnose a trace: the step time and what bounds it, each attention call's implementation and "
        "kernels, the findings and the fixes by step time saved. A folder of rank traces gives the report across "
        "the ranks of one job. brief: the first screen only. " + _COST
    )
    def doctor(
        path: Annotated[str, Field(description="A trace (.json, .json.gz), or a folder of one job's rank traces")],
        roots: ClientRoots,
        region: Region = None,
        brief: bool = False,
        instances: Annotated[int, Field(description="Per-instance rows (steps, ranges) kept in report", ge=0)] = 20,
        top_kernels: Annotated[int, Field(description="Kernels kept in report's kernel table", ge=0)] = 20,
    ) -> Annotated[CallToolResult, DoctorAnswer]:
        return answer(
            DoctorAnswer,
            lambda: session.doctor(path, region, brief, folders(roots), instances, top_kernels),
            "markdown",
        )

    @app.tool(
        description="A CI gate on one trace, as `attnprof doctor --fail-on`: passed is false when a finding matches "
        "fail_on (finding ids such as fp32-upcast, scopes attention/model, severities high/medium/low/info or any). "
        + _COST
    )
    def check(
        path: Path, fail_on: List[str], roots: ClientRoots, region: Region = None
    ) -> Annotated[CallToolResult, CheckAnswer]:
        return answer(CheckAnswer, lambda: session.check(path, fail_on, region, folders(roots)))

    @app.tool(
        description="Compare two traces of one program (before and after a change), per step: step time, attention, "
        "findings, kernels; two folders of rank traces: two runs of a job, rank by rank. fail_on: regression[:PCT], step-regression[:PCT] or attention-regression[:PCT] as "
        "`attnprof diff --fail-on`. " + _COST
    )
    def diff(
        before: Path, after: Path, roots: ClientRoots, fail_on: Optional[str] = None, region: Region = None
    ) -> Annotated[CallToolResult, DiffAnswer]:
        return answer(DiffAnswer, lambda: session.diff(before, after, fail_on, region, folders(roots)), "markdown")

    @app.tool(
        description="The trace's attention calls: per implementation (fused, sdpa-math, unfused), pass and phase "
        "(prefill/decode/mixed), with calls, kernels per call, time, shape, precision and the fused estimate; per step "
        "and over the trace. Cheap after doctor on the same trace."
    )
    def attention_calls(
        path: Path, roots: ClientRoots, region: Region = None
    ) -> Annotated[CallToolResult, AttentionAnswer]:
        return answer(AttentionAnswer, lambda: session.attention_calls(path, region, folders(roots)))

    @app.tool(
        description="The trace's GPU kernels by total time, each with its category, math unit (tensor-core or "
        "cuda-core), precision and op; category filters (" + ", ".join(_core.kernel_categories) + "). Cheap "
        "after doctor on the same trace."
    )
    def kernels(
        path: Path,
        roots: ClientRoots,
        category: Optional[str] = None,
        limit: Annotated[int, Field(description="At most this many kernels", ge=1)] = 50,
        region: Region = None,
    ) -> Annotated[CallToolResult, KernelsAnswer]:
        return answer(KernelsAnswer, lambda: session.kernels(path, category, limit, region, folders(roots)))

    @app.tool(
        description="Replay the trace's attention shapes on this machine's GPU (`attnprof doctor --replay`): the "
        "measured time of each fix. Without a GPU: ran is false and the text gives the commands to run where "
        "there is one. Costs seconds to minutes of GPU time; one GPU run at a time."
    )
    def replay(
        path: Path,
        roots: ClientRoots,
        shape: Annotated[
            Optional[str], Field(description="B,H[/H_KV],S[/S_KV],D for calls whose trace has no shapes")
        ] = None,
        causal: Optional[bool] = None,
        region: Region = None,
        timeout_s: Timeout = 600,
    ) -> Annotated[CallToolResult, RunAnswer]:
        return answer(
            RunAnswer, lambda: session.replay(path, shape, causal, region, folders(roots), timeout_s), "text"
        )

    @app.tool(
        description="Run and time attention implementations on one shape on this machine's GPU (`attnprof bench`): "
        "fp64-checked, the ladder of causes from SDPA math to the fused kernel. Without a GPU: ran is false and "
        "command is what to run where there is one. Costs seconds of GPU time; one GPU run at a time."
    )
    def bench(
        batch: Annotated[int, Field(ge=1)],
        heads: Annotated[int, Field(ge=1)],
        seq: Annotated[int, Field(ge=1)],
        head_dim: Annotated[int, Field(ge=1)],
        kv_heads: Annotated[Optional[int], Field(ge=1)] = None,
        kv_seq: Annotated[Optional[int], Field(ge=1)] = None,
        dtype: Literal["bf16", "fp16", "fp32"] = "bf16",
        causal: bool = True,
        bottom_right: bool = False,
        timed_pass: Annotated[
            Literal["forward", "backward", "both"], Field(description="What one timed call is (--pass)")
        ] = "forward",
        impl: Optional[List[str]] = None,
        timeout_s: Timeout = 600,
    ) -> Annotated[CallToolResult, RunAnswer]:
        args = bench_args(batch, heads, seq, head_dim, kv_heads, kv_seq, dtype, causal, bottom_right, timed_pass, impl)
        return answer(RunAnswer, lambda: session.bench(args, timeout_s), "text")

    return app
