// Hugging Face transformers' eager attention (eager_attention_forward), kernel
// for kernel, as the stand-in for an "unfused" call of a traced model:
//   scores = q @ k^T           cuBLAS, input dtype (tensor cores for 16-bit)
//   scores * scaling           one pass (out of place in PyTorch; in place here)
//   scores + causal_mask       the additive mask, built once per shape (causal only)
//   softmax(scores)            in the input dtype (GPT-2, BERT), or with
//                              dtype=float32 (Llama, Mistral, Qwen2): an upcast
//                              copy (bf16; ATen folds it into the softmax for
//                              fp16), a fp32 softmax and a downcast copy
//   dropout(probs, p)          training with attention dropout only (the keep mask written too)
//   out = probs @ v            cuBLAS, straight into out
// K and V are read by stride for GQA: the repeat_kv copies before the call are
// not part of the attention call in a trace and are not timed here either.
// 5 kernels causal (4 not), 7 (6) with the fp32 softmax.
//
// The backward is autograd's through the same ops, kernel for kernel:
//   dP = dO @ v^T, dV = probs^T @ dO           cuBLAS (per query head)
//   dP * keep / (1 - p)                        with dropout only
//   softmax backward                           dP * P, then dS = dP P - P rowsum(dP P) (2 kernels);
//                                              with the fp32 softmax the copies' backward around it
//                                              (bf16: 2, fp16: 1)
//   dS * scaling                               the scale's backward (the mask's add has none)
//   dQ = dS @ k, dK = dS^T @ q                 cuBLAS (per query head)
// 7 kernels (9 bf16 with the fp32 softmax, 8 fp16; one more with dropout), as a PyTorch 2.11 trace
// of Llama's and GPT-2's eager training steps has them; with GQA one more pass sums dK and dV over
// the query heads of each kv head (repeat_kv's backward, outside the call in a trace).
#include <type_traits>

#include <fmt/core.h>

#include "attention/cuda/aten_ops.cuh"
#include "attention/cuda/batched_gemm.h"
#include "attention/cuda/cuda_attention.h"
#include "attention/cuda/mask_cache.h"
#include "attention/cuda/softmax.cuh"
#include "attention/cuda/workspace.h"

namespace attnprof::attention::cuda {

namespace {

// The one workspace carving of the forward and the backward (the backward's buffers after the
// forward's, so the forward's saved weights are where the backward reads them).
template <typename T>
struct Buffers {
  T* scores = nullptr;    // the weights after the softmax (in T)
  float* wide = nullptr;  // fp32 softmax of a 16-bit input: its fp32 weights (what autograd saves)
  bool* keep = nullptr;   // dropout's keep mask
  T* dropped = nullptr;   // dropout's output (F.dropout is out of place): what PV reads
  T* dp = nullptr;        // backward: dP, then dS in place
  float* dp32 = nullptr;  // backward, fp32 softmax: dP and dS in fp32
  T* dk_heads = nullptr;  // backward with GQA: dK and dV per query head before their sum
  T* dv_heads = nullptr;
  std::size_t bytes = 0;
};

template <typename T>
Buffers<T> carve(const AttentionParams& p, bool fp32_softmax, void* base, bool backward) {
  WorkspaceCarver w(base);
  const std::int64_t n = static_cast<std::int64_t>(p.batch) * p.q_heads * p.q_len * p.kv_len;
  const bool wide = fp32_softmax && !std::is_same_v<T, float>;
  Buffers<T> b;
  b.scores = w.take<T>(n);
  if (wide) b.wide = w.take<float>(n);
  if (p.dropout > 0.0f) {
    b.keep = w.take<bool>(n);
    b.dropped = w.take<T>(n);
  }
  if (backward) {
    b.dp = w.take<T>(n);
    if (wide) b.dp32 = w.take<float>(n);
    if (p.kv_heads != p.q_heads) {
      const std::int64_t per_head = static_cast<std::int64_t>(p.batch) * p.q_heads * p.kv_len * p.head_dim;
      b.dk_heads = w.take<T>(per_head);
      b.dv_heads = w.take<T>(per_head);
    }
  }
  b.bytes = w.used();
  return b;
}

// x.to(torch.float32) of a 16-bit tensor: ATen's dynamic-casting copy, the unrolled loop (a PyTorch
// 2.11 trace shows unrolled_elementwise_kernel<direct_copy_kernel_cuda ...> for it, not the
// vectorized kernel its fp32 -> bf16 copy gets; 0.76 ms against ~0.4 on 268M elements on an H200).
template <typename T>
void upcast(std::int64_t n, const T* in, float* out, cudaStream_t stream) {
  launch_elementwise<4>(n, MapAt<Convert<T, float>>{{{in, out}}}, stream);
}

template <typename T>
void eager_forward(const AttentionParams& p, const ExecContext& ctx, bool fp32_softmax) {
  validate(p);
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  const Buffers<T> buf = carve<T>(p, fp32_softmax, ctx.workspace, false);
  require_workspace(ctx, buf.bytes, "eager");
  const int B = p.batch, H = p.q_heads, S = p.q_len, Skv = p.kv_len;
  const std::int64_t nm = static_cast<std::int64_t>(S) * Skv;
  const std::int64_t ns = static_cast<std::int64_t>(B) * H * nm;
  const std::int64_t rows = static_cast<std::int64_t>(B) * H * S;
  T* scores = buf.scores;

  run_batched_gemm(
      scores_gemm(p, p.dtype, strided_operand(p.q, p.q_strides), strided_operand(p.k, p.k_strides), scores), stream);
  launch_map(ns, Scale<T, T>{{scores, scores}, p.scale}, stream);
  if (p.causal) {
    const T* mask = static_cast<const T*>(cached_additive_mask(p, p.dtype, stream));
    launch_elementwise<kBroadcastVT>(ns, AddBroadcast<T>{scores, mask, nm}, stream);
  }
  if (buf.wide != nullptr) {
    if constexpr (std::is_same_v<T, __half>) {
      launch_softmax(scores, buf.wide, rows, Skv, stream);  // ATen folds fp16 -> fp32 into the softmax
    } else {
      upcast(ns, scores, buf.wide, stream);  // bf16: an upcast copy first
      launch_softmax(buf.wide, buf.wide, rows, Skv, stream);
    }
    launch_map(ns, Convert<float, T>{{buf.wide, scores}}, stream);
  } else {
    launch_softmax(scores, scores, rows, Skv, stream);
  }
  const T* probs = scores;
  if (p.dropout > 0.0f) {  // nn.functional.dropout(attn_weights, p, training=True)
    launch_dropout(scores, buf.dropped, buf.keep, ns, p.dropout, 0x5eedu, stream);
    probs = buf.dropped;
  }
  run_batched_gemm(
      output_gemm(p, p.dtype, dense_operand(probs, H, S, Skv), strided_operand(p.v, p.v_strides), p.out, p.out_strides),
      stream);
}

// A^T . B per query head, A dense [B, H, k, m]: dV = P^T dO and dK = dS^T Q. Written straight
// into the gradient (strided as dst) without GQA, else per query head into `heads` (dense).
template <typename T>
void transposed_gemm(const AttentionParams& p, const T* a, const void* b, const TensorStrides& b_strides, void* dst,
                     const TensorStrides& dst_strides, T* heads, cudaStream_t stream) {
  BatchedGemm g;
  g.dtype = p.dtype;
  g.b_transposed = false;
  g.a_transposed = true;
  g.batch = p.batch;
  g.heads = g.kv_heads = p.q_heads;  // both operands per query head
  g.m = p.kv_len;
  g.n = p.head_dim;
  g.k = p.q_len;
  g.a = dense_operand(a, p.q_heads, p.q_len, p.kv_len);
  g.a.ld = p.kv_len;
  g.b = strided_operand(b, b_strides);
  if (heads == nullptr) {
    g.c = dst;
    g.ldc = dst_strides.row;
    g.c_head_stride = dst_strides.head;
    g.c_batch_stride = dst_strides.batch;
  } else {
    g.c = heads;
    g.ldc = p.head_dim;
    g.c_head_stride = static_cast<std::int64_t>(p.kv_len) * p.head_dim;
    g.c_batch_stride = g.c_head_stride * p.q_heads;
  }
  run_batched_gemm(g, stream);
}

template <typename T>
void sum_head_groups(const AttentionParams& p, const T* heads, void* dst, const TensorStrides& dst_strides,
                     cudaStream_t stream) {
  const std::int64_t n = static_cast<std::int64_t>(p.batch) * p.kv_heads * p.kv_len * p.head_dim;
  launch_elementwise<kBroadcastVT>(n,
                                   SumHeadGroups<T>{heads, static_cast<T*>(dst), dst_strides, p.kv_heads,
                                                    p.q_heads / p.kv_heads, p.kv_len, p.head_dim},
                                   stream);
}

template <typename T>
void backward_pass(const AttentionParams& p, const AttentionGrads& grads, const ExecContext& ctx, bool fp32_softmax) {
  validate(p);
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  const Buffers<T> buf = carve<T>(p, fp32_softmax, ctx.workspace, true);
  require_workspace(ctx, buf.bytes, "eager backward");
  const int H = p.q_heads, S = p.q_len, Skv = p.kv_len;
  const std::int64_t ns = static_cast<std::int64_t>(p.batch) * H * S * Skv;
  const std::int64_t rows = static_cast<std::int64_t>(p.batch) * H * S;
  const T* probs = p.dropout > 0.0f ? buf.dropped : buf.scores;  // what PV read

  run_batched_gemm(
      scores_gemm(p, p.dtype, strided_operand(grads.d_out, p.out_strides), strided_operand(p.v, p.v_strides), buf.dp),
      stream);
  transposed_gemm<T>(p, probs, grads.d_out, p.out_strides, grads.dv, p.v_strides, buf.dv_heads, stream);
  if (p.dropout > 0.0f) launch_update(ns, DropoutBackward<T>{buf.dp, buf.keep, 1.0f / (1.0f - p.dropout)}, stream);
  if (buf.wide != nullptr) {
    upcast(ns, buf.dp, buf.dp32, stream);  // the downcast's backward
    if constexpr (std::is_same_v<T, __half>) {
      launch_softmax_backward(buf.wide, buf.dp32, buf.dp, rows, Skv, stream);  // half_to_float: writes fp16
    } else {
      launch_softmax_backward(buf.wide, buf.dp32, buf.dp32, rows, Skv, stream);
      launch_map(ns, Convert<float, T>{{buf.dp32, buf.dp}}, stream);  // the upcast's backward
    }
  } else {
    launch_softmax_backward(buf.scores, buf.dp, buf.dp, rows, Skv, stream);
  }
  launch_map(ns, Scale<T, T>{{buf.dp, buf.dp}, p.scale}, stream);
  run_batched_gemm(output_gemm(p, p.dtype, dense_operand(buf.dp, H, S, Skv), strided_operand(p.k, p.k_strides),
                               grads.dq, p.q_strides),
                   stream);
  transposed_gemm<T>(p, buf.dp, p.q, p.q_strides, grads.dk, p.k_strides, buf.dk_heads, stream);
  if (buf.dk_heads != nullptr) {
    sum_head_groups<T>(p, buf.dk_heads, grads.dk, p.k_strides, stream);
    sum_head_groups<T>(p, buf.dv_heads, grads.dv, p.v_strides, stream);
  }
}

template <template <typename> class Fn, typename... Args>
void by_dtype(DType d, Args&&... args) {
  switch (d) {
    case DType::BF16:
      return Fn<__nv_bfloat16>::run(args...);
    case DType::FP16:
      return Fn<__half>::run(args...);
    case DType::FP32:
      return Fn<float>::run(args...);
  }
}

template <typename T>
struct Forward {
  static void run(const AttentionParams& p, const ExecContext& ctx, bool wide) { eager_forward<T>(p, ctx, wide); }
};
template <typename T>
struct Backward {
  static void run(const AttentionParams& p, const AttentionGrads& g, const ExecContext& ctx, bool wide) {
    backward_pass<T>(p, g, ctx, wide);
  }
};
template <typename T>
struct Bytes {
  static void run(const AttentionParams& p, bool wide, bool backward, std::size_t* out) {
    *out = carve<T>(p, wide, nullptr, backward).bytes;
  }
};

std::size_t bytes_of(const AttentionParams& p, bool wide, bool backward) {
  std::size_t out = 0;
  by_dtype<Bytes>(p.dtype, p, wide, backward, &out);
  return out;
}

}  // namespace

void eager(const AttentionParams& p, const ExecContext& ctx) { by_dtype<Forward>(p.dtype, p, ctx, false); }
void eager_fp32_softmax(const AttentionParams& p, const ExecContext& ctx) { by_dtype<Forward>(p.dtype, p, ctx, true); }
std::size_t eager_workspace(const AttentionParams& p) { return bytes_of(p, false, false); }
std::size_t eager_fp32_softmax_workspace(const AttentionParams& p) { return bytes_of(p, true, false); }

void eager_backward(const AttentionParams& p, const AttentionGrads& g, const ExecContext& ctx) {
  by_dtype<Backward>(p.dtype, p, g, ctx, false);
}
void eager_fp32_softmax_backward(const AttentionParams& p, const AttentionGrads& g, const ExecContext& ctx) {
  by_dtype<Backward>(p.dtype, p, g, ctx, true);
}
std::size_t eager_backward_workspace(const AttentionParams& p) { return bytes_of(p, false, true); }
std::size_t eager_fp32_softmax_backward_workspace(const AttentionParams& p) { return bytes_of(p, true, true); }

}  // namespace attnprof::attention::cuda
