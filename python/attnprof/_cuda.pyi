"""attnprof's fused attention kernels on CUDA tensors; use attnprof.attention.

Type stubs for the compiled module (python/bindings/cuda.cpp), built only with a CUDA toolkit;
python/tests/test_stubs.py checks them against it where it is.
"""

from typing import Tuple

# A 4-d tensor as attnprof._torch passes it: (data pointer, shape, strides in elements). q [B, Hq, Sq, D],
# k and v [B, Hkv, Skv, D], out like q: bfloat16 or float16 (dtype code 0 or 1), the last dimension
# contiguous, all on the current CUDA device. The caller keeps the tensors alive through the call.
_View = Tuple[int, Tuple[int, int, int, int], Tuple[int, int, int, int]]
# A contiguous int32 tensor of up to 2 dimensions: (data pointer, shape padded with 0); pointer 0: none.
_Flat = Tuple[int, Tuple[int, int]]

def forward(
    dtype: int,
    q: _View,
    k: _View,
    v: _View,
    out: _View,
    lse: int,
    causal: bool,
    scale: float,
    stream: int,
    bottom_right: bool,
    workspace: int,
    workspace_size: int,
    block_table: _Flat,
    seq_lens: _Flat,
) -> None:
    """Writes out and lse (the pointer of a contiguous float32 [B, Hq, Sq]) on the given CUDA stream of the
    current device; raises attnprof.InputError for a call it refuses. workspace: workspace_bytes() bytes of
    CUDA memory, or 0. With block_table (int32 [B, pages a sequence]) and seq_lens (int32 [B]), k and v are
    page pools [pages, page_size, Hkv, D]; with seq_lens alone, sequence b has its first seq_lens[b] keys."""

def workspace_bytes(batch: int, q_heads: int, kv_heads: int, q_len: int, kv_len: int, head_dim: int,
                    causal: bool, ragged: bool = False) -> int:
    """The scratch a call of these sizes may use beyond out and lse (0 for many calls); ragged: the keys
    are paged or per sequence (kv_len their capacity)."""

def backward(
    dtype: int,
    q: _View,
    k: _View,
    v: _View,
    out: _View,
    lse: int,
    d_out: _View,
    dq: _View,
    dk: _View,
    dv: _View,
    causal: bool,
    scale: float,
    stream: int,
    bottom_right: bool,
    workspace: int,
    workspace_size: int,
) -> None:
    """Writes dq, dk and dv (the shapes and strides of q, k and v; d_out those of out) of forward()'s
    call, whose out and lse these are, on the given CUDA stream of the current device; dense K/V only.
    workspace: backward_workspace_bytes() bytes of CUDA memory."""

def backward_workspace_bytes(batch: int, q_heads: int, kv_heads: int, q_len: int, kv_len: int, head_dim: int,
                             causal: bool) -> int:
    """The scratch backward() needs for a call of these sizes."""
