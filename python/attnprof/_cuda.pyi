"""attnprof's fused attention kernel on CUDA tensors; use attnprof.attention.

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
) -> None:
    """Writes out and lse on the given CUDA stream; raises attnprof.InputError for a call it refuses."""

def workspace_bytes(batch: int, q_heads: int, kv_heads: int, q_len: int, kv_len: int, head_dim: int,
                    causal: bool) -> int:
    """The scratch a call of these sizes may use beyond out and lse (0 for most calls)."""
