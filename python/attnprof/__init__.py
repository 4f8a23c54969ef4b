"""attnprof: why your attention is slow on an NVIDIA GPU, and a faster one.

    import attnprof
    report = attnprof.doctor("trace.json.gz")        # or a finished torch.profiler.profile
    print(report)                                     # the same report as `attnprof doctor`
    report.step                                       # Step(span_ms, gpu_busy_ms, idle_ms, bound, idle_split_ms)
    report.fixes                                      # Fix(id, findings, step_ms, gpu_ms, basis), per step
    report.findings                                   # Finding(id, scope, severity, time_ms, message, fix)
    attnprof.check("trace.json.gz", fail_on=["attention"])   # raises AttentionCheckError: a CI gate
    attnprof.replay("trace.json.gz")                  # each shape run on this GPU: the measured saving
    attnprof.doctor_many("traces/", executor=client.get_executor())  # the ranks of a job, on a Dask cluster
    attnprof.diff_many("run1/", "run2/", regression_pct=10)        # two runs of a job, rank by rank

    with torch.profiler.profile(..., on_trace_ready=attnprof.trace_handler("./traces")) as prof: ...

    out = attnprof.attention(q, k, v, is_causal=True)  # the project's fused kernels (CUDA, bf16/fp16), with autograd
    attnprof.register_transformers()                  # then attn_implementation="attnprof" in transformers

The C++ core does the work (attnprof._core); this package is its Python face.
Bad input raises attnprof.InputError (a ValueError) with the CLI's one-line message.
"""

from ._core import InputError
from ._ranks import diff_many, doctor_many
from ._replay import Replay, ReplayRow, ReplayShape, replay
from ._report import AttentionCall, AttentionCheckError, Finding, Fix, Region, Report, Step, check, diff, doctor
from ._torch import attention, trace_handler
from ._transformers import register_transformers, transformers_attention

from ._core import __version__  # the VERSION file, through CMake

__all__ = [
    "AttentionCall",
    "AttentionCheckError",
    "Finding",
    "Fix",
    "InputError",
    "Region",
    "Replay",
    "ReplayRow",
    "ReplayShape",
    "Report",
    "Step",
    "attention",
    "check",
    "diff",
    "diff_many",
    "doctor_many",
    "doctor",
    "register_transformers",
    "replay",
    "trace_handler",
    "transformers_attention",
]
