"""PyTorch integration: trace_handler for torch.profiler, and attention(), the fused kernel as a custom op.

torch is imported only when these are used: the rest of attnprof works without it.
"""


import os
import socket
import sys
import time
from typing import Callable, Optional, Sequence, Tuple

from ._core import InputError
from ._report import Report, check, doctor


def _summary(path: str, report: Report) -> str:
    parts = []
    for r in report.regions:
        impls = ", ".join(sorted({a.implementation for a in r.attention})) or "none found"
        share = f" ({100 * r.attention_time_ms / r.gpu_time_ms:.0f}%)" if r.gpu_time_ms > 0 else ""
        parts.append(f"attention {r.attention_time_ms:.3f} ms per {r.name}{share}, {impls}")
    ids = ", ".join(f"{f.id} ({f.scope})" for f in report.findings)
    found = f"{len(report.findings)} finding(s): {ids}" if report.findings else "no findings"
    return f"attnprof: {path}: {'; '.join(parts) or 'no regions'}; {found}"


def trace_handler(
    dir_name: str,
    worker_name: Optional[str] = None,
    use_gzip: bool = True,
    fail_on: Optional[Sequence[str]] = None,
) -> Callable:
    """An on_trace_ready handler for torch.profiler.profile, like torch.profiler.tensorboard_trace_handler.

    Writes DIR/WORKER.TIME.pt.trace.json[.gz] (Perfetto and HTA open it as ever), the doctor report
    beside it (.attnprof.txt and .attnprof.json), and prints one summary line. With fail_on (as for
    attnprof.check) a caught finding raises AttentionCheckError.
    """
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        stamp = time.time_ns() // 1_000_000  # milliseconds, as tensorboard_trace_handler names them
        suffix = ".pt.trace.json" + (".gz" if use_gzip else "")

        def taken(stamp: int) -> bool:  # the trace, plain or gzip, or its reports
            base = os.path.join(dir_name, f"{worker}.{stamp}.pt.trace.json")
            return any(os.path.exists(base + end) for end in ("", ".gz", ".attnprof.txt", ".attnprof.json"))

        while taken(stamp):
            stamp += 1  # two traces in one millisecond: never overwrite one
        path = os.path.join(dir_name, f"{worker}.{stamp}{suffix}")
        prof.export_chrome_trace(path)
        report = doctor(path)
        base = path[: -len(".gz")] if path.endswith(".gz") else path
        with open(base + ".attnprof.txt", "w") as f:
            f.write(str(report))
        with open(base + ".attnprof.json", "w") as f:
            f.write(report.to_json())
        print(_summary(path, report), file=sys.stderr)
        if fail_on:
            check(report, fail_on)

    return handler


_op = None
_forward = None  # the op's body, set with _op
_function = None  # the eager autograd path (a torch.autograd.Function), set with _op


def _plain_eager(torch, q, k, v):
    """Whether calling the op's body directly (or through _function under autograd) is the same as calling
    the op: plain tensors (no subclass, fake tensor or dual tensor), nothing that records or intercepts ops
    (torch.compile, torch.jit.trace, make_fx and other dispatch or function modes, the profiler, which
    names the call attnprof::attention in its trace with its inputs' shapes).
    The op costs host work the body does not: 6-14 us a forward, and ~250 us a forward + backward through
    its autograd wrapper and backward op (H100 host, 2026-12-07, BENCHMARKS.md), longer than the kernels on
    short sequences. Where PyTorch lacks one of these probes, the op runs."""
    if not (type(q) is torch.Tensor and type(k) is torch.Tensor and type(v) is torch.Tensor):
        return False
    if torch.compiler.is_compiling() or torch.jit.is_tracing():
        return False
    probes = (getattr(torch.autograd, "_profiler_enabled", None), getattr(torch._C, "_len_torch_dispatch_stack", None),
              getattr(torch._C, "_is_torch_function_mode_enabled", None))
    if any(p is None for p in probes) or probes[0]() or probes[1]() > 0 or probes[2]():
        return False
    return getattr(torch.autograd.forward_ad, "_current_level", 0) < 0  # not inside forward-mode AD (or unknown)


def _strides_ready(t) -> bool:
    """Whether the kernels take t's strides: a contiguous last dimension, rows 16 bytes apart."""
    return t.stride(-1) == 1 and all(s % 8 == 0 for s in t.stride()[:-1])


def _kernel_ready(t) -> bool:
    """Whether the kernels take t as it is laid out: its strides, and a 16-byte aligned start."""
    return _strides_ready(t) and t.data_ptr() % 16 == 0


def _like(t, ref):
    """t's values laid out with ref's strides."""
    import torch

    dst = torch.empty_strided(ref.shape, ref.stride(), dtype=t.dtype, device=t.device)
    dst.copy_(t)
    return dst


def _view(t):
    """A 4-d tensor as _cuda takes it: its data pointer, shape and strides (plain integers: DLPack's
    import of each tensor cost several microseconds of host time)."""
    return (t.data_ptr(), t.shape, t.stride())


_NO_TABLE = (0, (0, 0))


def _flat(t):
    """A contiguous int32 tensor of 1 or 2 dimensions as _cuda takes it (pointer 0: none)."""
    if t is None:
        return _NO_TABLE
    return (t.data_ptr(), (t.shape[0], t.shape[1] if t.dim() == 2 else 0))


def _register():
    """Defines attnprof::attention once: a torch.library custom op (works under torch.compile), and the
    eager autograd path beside it."""
    global _op, _forward, _function
    if _op is not None:
        return _op
    import torch
    from torch.autograd.function import once_differentiable

    try:
        from . import _cuda  # built only with a CUDA toolkit
    except ImportError as e:
        raise ImportError(
            "attnprof.attention: this attnprof was built without CUDA (no attnprof._cuda); "
            "install it where nvcc is found"
        ) from e

    dtype_codes = {torch.bfloat16: 0, torch.float16: 1}
    # The current stream's cudaStream_t as an integer (what torch.compile's generated code asks for);
    # torch.cuda.current_stream() builds a Stream object first.
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
        lambda index: torch.cuda.current_stream(index).cuda_stream)

    def forward_with_lse(q, k, v, is_causal, scale, bottom_right, block_table=None, seq_lens=None):
        """The op's body: out and the rows' log-sum-exp (what the backward reads). out takes q's layout
        where q is dense (BSHD memory stays BSHD, so transformers' transpose back to [B, S, H, D] is a view
        and the backward's output gradient arrives with out's strides: no copy either way)."""
        index = q.device.index
        if index != torch.cuda.current_device():  # the scratch's size and the launch are the current device's
            with torch.cuda.device(index):
                return forward_with_lse(q, k, v, is_causal, scale, bottom_right, block_table, seq_lens)
        out = torch.empty_like(q)
        lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
        if not _kernel_ready(out):
            out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        if block_table is not None:  # page pools [pages, page_size, Hkv, D]: the table's capacity in keys
            kv_heads, kv_len = k.shape[2], k.shape[1] * block_table.shape[1]
        else:
            kv_heads, kv_len = k.shape[1], k.shape[2]
        # Scratch from PyTorch's allocator for the kernel's split tail (long full attention at head dim
        # 128) and the decode kernel's split partials (short queries, few sequences); many calls need none.
        nbytes = _cuda.workspace_bytes(q.shape[0], q.shape[1], kv_heads, q.shape[2], kv_len, q.shape[3], is_causal,
                                       block_table is not None or seq_lens is not None)
        workspace = torch.empty(nbytes, dtype=torch.uint8, device=q.device) if nbytes else None
        _cuda.forward(dtype_codes[q.dtype], _view(q), _view(k), _view(v), _view(out), lse.data_ptr(), is_causal,
                      scale, raw_stream(index), bottom_right, workspace.data_ptr() if nbytes else 0, nbytes,
                      _flat(block_table), _flat(seq_lens))
        return out, lse

    def forward(q, k, v, is_causal, scale, bottom_right, block_table=None, seq_lens=None):
        """What attention() calls directly where the op adds nothing."""
        return forward_with_lse(q, k, v, is_causal, scale, bottom_right, block_table, seq_lens)[0]

    def backward_body(d_out, q, k, v, out, lse, is_causal, scale, bottom_right):
        """dq, dk, dv: each strided as its input where the kernels take those strides."""
        index = q.device.index
        if index != torch.cuda.current_device():  # the scratch's size and the launch are the current device's
            with torch.cuda.device(index):
                return backward_body(d_out, q, k, v, out, lse, is_causal, scale, bottom_right)
        # The kernel reads dO with out's strides and writes each gradient with its input's: dense copies
        # where the tensors autograd hands over are not laid out so (an expanded gradient, a view).
        q, k, v, out = (t if _kernel_ready(t) else t.contiguous() for t in (q, k, v, out))
        if d_out.stride() != out.stride() or d_out.data_ptr() % 16 != 0:
            d_out = _like(d_out, out)
        dq, dk, dv = (torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device) for t in (q, k, v))
        nbytes = _cuda.backward_workspace_bytes(q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3],
                                                is_causal)
        workspace = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=q.device)
        _cuda.backward(dtype_codes[q.dtype], _view(q), _view(k), _view(v), _view(out), lse.data_ptr(), _view(d_out),
                       _view(dq), _view(dk), _view(dv), is_causal, scale, raw_stream(index), bottom_right,
                       workspace.data_ptr(), nbytes)
        return dq, dk, dv

    @torch.library.custom_op("attnprof::attention", mutates_args=(), device_types="cuda")
    def op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool, scale: float,
           bottom_right: bool = False, block_table: Optional[torch.Tensor] = None,
           seq_lens: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        return forward_with_lse(q, k, v, is_causal, scale, bottom_right, block_table, seq_lens)

    @op.register_fake
    def _(q, k, v, is_causal, scale, bottom_right=False, block_table=None, seq_lens=None):
        # The real op's layouts: out like q where the kernels take q's dense layout.
        out = torch.empty_like(q)
        if not _strides_ready(out):
            out = q.new_empty(q.shape)
        return out, q.new_empty(q.shape[:3], dtype=torch.float32)

    @torch.library.custom_op("attnprof::attention_backward", mutates_args=(), device_types="cuda")
    def backward_op(d_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                    lse: torch.Tensor, is_causal: bool, scale: float,
                    bottom_right: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # Anyone may call the op: what the kernel takes on trust from the autograd path is checked here.
        for name, t in (("d_out", d_out), ("out", out), ("lse", lse)):
            if t.device != q.device:
                raise ValueError(f"attnprof.attention_backward: {name} is on {t.device}, q on {q.device}")
        if d_out.dtype != q.dtype or out.dtype != q.dtype or d_out.shape != q.shape or out.shape != q.shape:
            raise ValueError("attnprof.attention_backward: d_out and out must have q's dtype and shape")
        if lse.dtype != torch.float32 or lse.shape != q.shape[:3] or not lse.is_contiguous():
            raise ValueError("attnprof.attention_backward: lse must be the forward's contiguous float32 [B, Hq, Sq]")
        return backward_body(d_out, q, k, v, out, lse, is_causal, scale, bottom_right)

    @backward_op.register_fake
    def _(d_out, q, k, v, out, lse, is_causal, scale, bottom_right):
        # The real op's layouts: each gradient strided as its input where the kernels take those strides.
        return tuple(torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device) if _strides_ready(t)
                     else torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in (q, k, v))

    def setup_context(ctx, inputs, output):
        q, k, v, is_causal, scale, *rest = inputs  # the schema's defaults may be left out
        bottom_right, block_table, seq_lens = (list(rest) + [False, None, None][len(rest):])[:3]
        out, lse = output
        ctx.paged = block_table is not None or seq_lens is not None
        ctx.args = (is_causal, scale, bottom_right)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.mark_non_differentiable(lse)

    def backward(ctx, grad, _grad_lse):
        if ctx.paged:
            raise RuntimeError("attnprof.attention has no backward on a paged or ragged cache (block_table, seq_lens): "
                               "those are inference's")
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = backward_op(grad, q, k, v, out, lse, *ctx.args)
        return dq, dk, dv, None, None, None, None, None

    op.register_autograd(backward, setup_context=setup_context)

    class Attention(torch.autograd.Function):
        """The eager training path: the op's forward and backward bodies under autograd, without the
        custom op's dispatch (dense K/V; attention() takes the op where the op adds something)."""

        @staticmethod
        def forward(ctx, q, k, v, is_causal, scale, bottom_right):
            out, lse = forward_with_lse(q, k, v, is_causal, scale, bottom_right)
            ctx.args = (is_causal, scale, bottom_right)
            ctx.save_for_backward(q, k, v, out, lse)
            return out

        @staticmethod
        @once_differentiable  # the kernels' gradients have no graph of their own: a double backward raises
        def backward(ctx, grad):
            q, k, v, out, lse = ctx.saved_tensors
            return (*backward_body(grad, q, k, v, out, lse, *ctx.args), None, None, None)

    _forward = forward  # before _op: a first call in another thread sees _op only once all are set
    _function = Attention
    _op = op
    return op


def _check_cache(torch, q, k, v, block_table, seq_lens):
    """The paged or ragged form's arguments (attention()'s block_table and seq_lens)."""
    b = q.shape[0]
    for name, t, dims in (("block_table", block_table, 2), ("seq_lens", seq_lens, 1)):
        if t is None:
            continue
        if not isinstance(t, torch.Tensor) or t.dtype != torch.int32 or t.dim() != dims:
            raise ValueError(f"attnprof.attention: {name} must be an int32 tensor of {dims} dimension(s)")
        if t.device != q.device:
            raise ValueError(f"attnprof.attention: {name} is on {t.device}, q on {q.device}")
        if t.shape[0] != b or not t.is_contiguous():
            raise ValueError(f"attnprof.attention: {name} must be contiguous with a row per sequence ({b})")
    if block_table is not None:
        if seq_lens is None:
            raise ValueError("attnprof.attention: a block_table needs seq_lens (each sequence's keys)")
        if k.shape != v.shape or k.shape[3] != q.shape[3]:
            raise ValueError(
                f"attnprof.attention: page pools k {tuple(k.shape)}, v {tuple(v.shape)} do not match q {tuple(q.shape)}"
                " (expected k and v [pages, page_size, Hkv, D])"
            )
        return k.shape[2]
    if k.shape != v.shape or k.shape[0] != q.shape[0] or k.shape[3] != q.shape[3]:
        raise ValueError(
            f"attnprof.attention: shapes do not match: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
            " (expected q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D])"
        )
    return k.shape[1]


def attention(q, k, v, is_causal: bool = False, scale: Optional[float] = None, *, bottom_right: bool = False,
              block_table=None, seq_lens=None):
    """The project's fused attention forward: softmax(q k^T * scale) v, as scaled_dot_product_attention.

    q: [B, Hq, Sq, D], k and v: [B, Hkv, Skv, D] (Hkv divides Hq: GQA/MQA), CUDA tensors in bfloat16
    or float16, any strides with a contiguous last dimension (BHSD memory, or BSHD memory seen as BHSD
    through .transpose(1, 2)). scale defaults to 1/sqrt(D); is_causal is top-left aligned (query i sees
    keys j <= i), as SDPA's is_causal. With bottom_right=True (needs is_causal) the diagonal sits at the
    bottom-right corner instead: query i sees keys j <= i + Skv - Sq, as FlashAttention's causal and
    torch.nn.attention.bias.causal_lower_right (KV-cache decode, chunked prefill); a query that sees
    no key gives zeros. Runs on the current CUDA stream; returns a new [B, Hq, Sq, D] tensor. Autograd
    gives q, k and v their gradients through the fused backward (dK and dV summed over the query heads
    of a KV head), also inside torch.compile graphs; there is no attention dropout. Unsupported inputs
    raise ValueError (attnprof.InputError for what only the kernel can tell, e.g. a head dim it lacks).

    A serving engine's KV cache (the decode kernel reads it in place): with block_table (int32 [B, pages a
    sequence]) and seq_lens (int32 [B]), k and v are page pools [pages, page_size, Hkv, D] (vLLM's and
    FlashInfer's layout) and key j of sequence b is token j % page_size of page block_table[b, j //
    page_size], for j < seq_lens[b]; with seq_lens alone, k and v are [B, Hkv, Skv, D] and sequence b has
    its first seq_lens[b] keys. bottom_right then aligns each sequence's own end. These have no backward.
    """
    if bottom_right and not is_causal:
        raise ValueError("attnprof.attention: bottom_right=True needs is_causal=True (it places the causal diagonal)")
    try:
        import torch
    except ImportError as e:
        raise ImportError("attnprof.attention needs PyTorch (import torch failed)") from e

    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"attnprof.attention: {name} must be a torch.Tensor, not {type(t).__name__}")
        if t.device.type != "cuda":
            raise ValueError(f"attnprof.attention: {name} is on {t.device}; the fused kernel needs CUDA tensors")
        if t.dtype not in (torch.bfloat16, torch.float16):
            raise ValueError(f"attnprof.attention: {name} is {t.dtype}; the fused kernel takes bfloat16 or float16")
        if t.dim() != 4:
            raise ValueError(f"attnprof.attention: {name} has {t.dim()} dimensions; expected [B, H, S, D]")
        if t.stride(-1) != 1 and t.shape[-1] > 1:
            raise ValueError(f"attnprof.attention: {name}'s last dimension is not contiguous (stride {t.stride(-1)})")
    if not (q.device == k.device == v.device):
        raise ValueError(f"attnprof.attention: q, k, v must be on one GPU (got {q.device}, {k.device}, {v.device})")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"attnprof.attention: q, k, v must have one dtype (got {q.dtype}, {k.dtype}, {v.dtype})")
    kv_heads = _check_cache(torch, q, k, v, block_table, seq_lens)
    if kv_heads == 0 or q.shape[1] % kv_heads != 0:
        raise ValueError(f"attnprof.attention: {kv_heads} key/value heads do not divide {q.shape[1]} query heads")
    if scale is None:
        scale = q.shape[-1] ** -0.5
    op = _register()
    is_causal, scale, bottom_right = bool(is_causal), float(scale), bool(bottom_right)
    if _plain_eager(torch, q, k, v):
        if not (torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)):
            return _forward(q, k, v, is_causal, scale, bottom_right, block_table, seq_lens)
        if block_table is None and seq_lens is None:  # a paged cache's call takes the op, whose backward refuses
            return _function.apply(q, k, v, is_causal, scale, bottom_right)
    return op(q, k, v, is_causal, scale, bottom_right, block_table, seq_lens)[0]


__all__ = ["attention", "trace_handler", "InputError"]
