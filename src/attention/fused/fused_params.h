// The fused kernels' own view of one attention call: what crosses into the
// kernels as a by-value parameter (flash-attention's Flash_fwd_params idea).
// It is derived in one place, from the project-wide AttentionParams, next to
// the launch (attention_fn.cpp); nothing else builds one. CUDA-free.
#pragma once

#include <cstdint>

#include "attention/params.h"

namespace attnprof::fused {

struct Params {
  const void* q = nullptr;  // [batch, heads, q_len, head_dim] through the q strides
  const void* k = nullptr;  // [batch, kv_heads, kv_len, head_dim] through the k strides
  const void* v = nullptr;  // like k
  void* out = nullptr;      // like q, same dtype
  float* lse = nullptr;     // [batch, heads, q_len] contiguous, natural log; -inf where a row sees no key

  int batch = 0;
  int heads = 0;     // query heads
  int kv_heads = 0;  // divides heads: kv_heads == heads is MHA, 1 is MQA, else GQA
  int q_len = 0;
  int kv_len = 0;
  int head_dim = 0;  // 64 or 128

  bool causal = false;                              // top-left (PyTorch is_causal=True): query i sees keys j <= i
  float scale = 0.f;                                // softmax scale, as AttentionParams gives it (never 0)
  attention::DType dtype = attention::DType::BF16;  // bf16 or fp16

  // Strides in elements; the head_dim stride is always 1.
  int64_t q_batch_stride = 0, q_head_stride = 0, q_seq_stride = 0;
  int64_t k_batch_stride = 0, k_head_stride = 0, k_seq_stride = 0;
  int64_t v_batch_stride = 0, v_head_stride = 0, v_seq_stride = 0;
  int64_t o_batch_stride = 0, o_head_stride = 0, o_seq_stride = 0;

  // The lab's per-tile timers (tile_timers.h): written only by launch_hopper_timed, which needs it.
  uint64_t* timers = nullptr;
};

}  // namespace attnprof::fused
