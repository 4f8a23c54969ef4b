"""attnprof's fused attention kernels on CUDA tensors; use attnprof.attention.

Type stubs for the compiled module (python/bindings/cuda.cpp), built only with a CUDA toolkit;
python/tests/test_stubs.py checks them against it where it is.
"""

from typing import Any, Optional

# A CUDA tensor passed through DLPack (a torch.Tensor): q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D],
# out like q (bfloat16 or float16, last dimension contiguous), lse [B, Hq, Sq] contiguous float32,
# workspace a contiguous uint8 vector of workspace_bytes() bytes.
_CudaTensor = Any

def forward(
    q: _CudaTensor,
    k: _CudaTensor,
    v: _CudaTensor,
    out: _CudaTensor,
    lse: _CudaTensor,
    causal: bool,
    scale: float,
    stream: int,
    bottom_right: bool = False,
    workspace: Optional[_CudaTensor] = None,
    block_table: Optional[_CudaTensor] = None,
    seq_lens: Optional[_CudaTensor] = None,
) -> None:
    """Writes out and lse on the given CUDA stream; raises attnprof.InputError for a call it refuses.
    With block_table (int32 [B, pages a sequence]) and seq_lens (int32 [B]), k and v are page pools
    [pages, page_size, Hkv, D]; with seq_lens alone, sequence b has its first seq_lens[b] keys."""

def workspace_bytes(batch: int, q_heads: int, kv_heads: int, q_len: int, kv_len: int, head_dim: int,
                    causal: bool, ragged: bool = False) -> int:
    """The scratch a call of these sizes may use beyond out and lse (0 for many calls); ragged: the keys
    are paged or per sequence (kv_len their capacity)."""

def backward(
    q: _CudaTensor,
    k: _CudaTensor,
    v: _CudaTensor,
    out: _CudaTensor,
    lse: _CudaTensor,
    d_out: _CudaTensor,
    dq: _CudaTensor,
    dk: _CudaTensor,
    dv: _CudaTensor,
    causal: bool,
    scale: float,
    stream: int,
    bottom_right: bool,
    workspace: _CudaTensor,
) -> None:
    """Writes dq, dk and dv (the shapes and strides of q, k and v; d_out those of out) of forward()'s
    call, whose out and lse these are, on the given CUDA stream; dense K/V only."""

def backward_workspace_bytes(batch: int, q_heads: int, kv_heads: int, q_len: int, kv_len: int, head_dim: int,
                             causal: bool) -> int:
    """The scratch backward() needs for a call of these sizes."""
