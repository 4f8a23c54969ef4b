// PyTorch's _scaled_dot_product_attention_math, kernel for kernel, and the
// ablation ladder that removes one cause at a time (see cuda_attention.h).
//
// The sequence, as aten/src/ATen/native/transformers/attention.cpp runs it for
// a bf16 causal forward (20 kernels):
//   q.to(float), k.to(float), v.to(float)                       3  upcast
//   q * sqrt(scale)                                             1
//   ones(L,S,bool).tril(); where(mask, scalar_tensor(0),
//     scalar_tensor(-inf))                                      5  mask rebuilt every call
//   k^T * sqrt(scale)                                           1
//   matmul(q, k^T)  fp32 on CUDA cores                          1
//   attn.add_(mask)                                             1
//   _safe_softmax: softmax, eq(-inf), all(dim=-1),
//     scalar_tensor(0), where                                   5
//   dropout(attn, p) (training with dropout_p > 0 only)          1
//   attn.to(bf16) (the weights nobody reads)                    1
//   matmul(attn, v)  fp32, then .to(bf16)                       2
// (The order is PyTorch 2.11's on an H200, read off its trace in
// examples/traces/sdpa_math.json: make_tuple evaluates the weights' cast first.)
#include <cmath>
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

struct MathVariant {
  bool upcast = true;        // compute in fp32 after casting q, k, v up
  bool cached_mask = false;  // additive mask built once instead of every call
  bool safe_softmax = true;  // _safe_softmax's eq/all/where after the softmax
};

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::FP32;
}
template <>
constexpr DType dtype_of<__nv_bfloat16>() {
  return DType::BF16;
}
template <>
constexpr DType dtype_of<__half>() {
  return DType::FP16;
}

// Every intermediate tensor of one forward, carved from the workspace.
template <typename Tin, typename T>
struct MathBuffers {
  T *q_up, *k_up, *v_up;  // upcast copies (only when upcasting)
  T *q_scaled, *k_scaled;
  bool *ones, *tril;
  T *mask_zero, *mask_neg_inf, *mask;
  T *attn, *softmax_out, *probs;
  bool *is_neg_inf, *row_all;
  T* probs_zero;
  bool* drop_keep;  // dropout's keep mask (dropout > 0 only)
  T* out_up;        // fp32 output before the cast back
  Tin* probs_low;   // attn.to(bf16): written, never read

  MathBuffers(void* base, const AttentionParams& p, bool upcast, WorkspaceCarver& w) {
    (void)base;
    const std::int64_t nq = static_cast<std::int64_t>(p.batch) * p.q_heads * p.q_len * p.head_dim;
    const std::int64_t nk = static_cast<std::int64_t>(p.batch) * p.kv_heads * p.kv_len * p.head_dim;
    const std::int64_t nm = static_cast<std::int64_t>(p.q_len) * p.kv_len;
    const std::int64_t ns = static_cast<std::int64_t>(p.batch) * p.q_heads * nm;
    const std::int64_t rows = static_cast<std::int64_t>(p.batch) * p.q_heads * p.q_len;
    q_up = upcast ? w.take<T>(nq) : nullptr;
    k_up = upcast ? w.take<T>(nk) : nullptr;
    v_up = upcast ? w.take<T>(nk) : nullptr;
    q_scaled = w.take<T>(nq);
    k_scaled = w.take<T>(nk);
    ones = w.take<bool>(nm);
    tril = w.take<bool>(nm);
    mask_zero = w.take<T>(1);
    mask_neg_inf = w.take<T>(1);
    mask = w.take<T>(nm);
    attn = w.take<T>(ns);
    softmax_out = w.take<T>(ns);
    probs = w.take<T>(ns);
    is_neg_inf = w.take<bool>(ns);
    row_all = w.take<bool>(rows);
    probs_zero = w.take<T>(1);
    drop_keep = p.dropout > 0.0f ? w.take<bool>(ns) : nullptr;
    out_up = upcast ? w.take<T>(nq) : nullptr;
    probs_low = upcast ? w.take<Tin>(ns) : nullptr;
  }
};

template <typename Tin, typename T>
std::size_t workspace_for(const AttentionParams& p, bool upcast) {
  WorkspaceCarver w(nullptr);
  MathBuffers<Tin, T> b(nullptr, p, upcast, w);
  (void)b;
  return w.used();
}

StridedIndex index_of(const TensorStrides& s, int heads, int rows, int dim) {
  return StridedIndex{s, heads, rows, dim};
}

StridedIndex dense_index(int heads, int rows, int dim) {
  return StridedIndex{dense_strides(Layout::BHSD, heads, rows, dim), heads, rows, dim};
}

// src (any layout) converted to a dense copy: ATen's casting copy (unrolled loop).
template <typename Tin, typename T>
void upcast_copy(const Tin* src, const StridedIndex& at, T* dst, std::int64_t n, cudaStream_t stream) {
  if (at.dense)
    launch_elementwise<4>(n, MapAt<Convert<Tin, T>>{{{src, dst}}}, stream);
  else
    launch_elementwise<4>(n, ToDenseScaled<Tin, T>{src, at, 1.0f, dst}, stream);
}

// dst (dense) = src * factor, same type: ATen's vectorized mul when src is dense.
template <typename T>
void scaled_copy(const T* src, const StridedIndex& at, T* dst, float factor, std::int64_t n, cudaStream_t stream) {
  if (at.dense)
    launch_map(n, Scale<T, T>{{src, dst}, factor}, stream);
  else
    launch_elementwise<4>(n, ToDenseScaled<T, T>{src, at, factor, dst}, stream);
}

// Tin: the storage type; T: the type the math runs in (float when upcasting).
template <typename Tin, typename T>
void math_forward(const AttentionParams& p, const ExecContext& ctx, MathVariant v) {
  validate(p);
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  const bool upcast = !std::is_same_v<Tin, T>;  // fp32 inputs are not cast at all, as in PyTorch
  require_workspace(ctx, workspace_for<Tin, T>(p, upcast), "math");
  WorkspaceCarver carver(ctx.workspace);
  MathBuffers<Tin, T> buf(ctx.workspace, p, upcast, carver);

  const int B = p.batch, H = p.q_heads, Hkv = p.kv_heads, S = p.q_len, Skv = p.kv_len, D = p.head_dim;
  const std::int64_t nq = static_cast<std::int64_t>(B) * H * S * D;
  const std::int64_t nk = static_cast<std::int64_t>(B) * Hkv * Skv * D;
  const std::int64_t nm = static_cast<std::int64_t>(S) * Skv;
  const std::int64_t ns = static_cast<std::int64_t>(B) * H * nm;
  const std::int64_t rows = static_cast<std::int64_t>(B) * H * S;
  const float root = std::sqrt(p.scale);

  // Sources of q, k, v after the (optional) upcast: T typed.
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* val = static_cast<const T*>(p.v);
  StridedIndex q_at = index_of(p.q_strides, H, S, D), k_at = index_of(p.k_strides, Hkv, Skv, D);
  MatrixOperand v_op = strided_operand(p.v, p.v_strides);
  if (upcast) {
    // q.to(float), k.to(float), v.to(float): ATen's casting copy, an unrolled loop.
    upcast_copy(static_cast<const Tin*>(p.q), q_at, buf.q_up, nq, stream);
    upcast_copy(static_cast<const Tin*>(p.k), k_at, buf.k_up, nk, stream);
    upcast_copy(static_cast<const Tin*>(p.v), index_of(p.v_strides, Hkv, Skv, D), buf.v_up, nk, stream);
    q = buf.q_up;
    k = buf.k_up;
    val = buf.v_up;
    q_at = dense_index(H, S, D);
    k_at = dense_index(Hkv, Skv, D);
    v_op = dense_operand(buf.v_up, Hkv, Skv, D);
  }
  (void)val;

  // q * sqrt(scale)
  scaled_copy(q, q_at, buf.q_scaled, root, nq, stream);

  // The causal mask: rebuilt (ones, tril, scalar 0, scalar -inf, where) or cached.
  const T* mask = nullptr;
  if (p.causal) {
    if (v.cached_mask) {
      mask = static_cast<const T*>(cached_additive_mask(p, dtype_of<T>(), stream));
    } else {
      const int diag = p.causal_align == CausalAlign::BottomRight ? Skv - S : 0;
      launch_map(nm, Fill<bool>{buf.ones, true}, stream);
      launch_elementwise<4>(nm, Tril{buf.ones, buf.tril, Skv, diag}, stream);
      launch_map(1, Fill<T>{buf.mask_zero, from_f<T>(0.0f)}, stream);
      launch_map(1, Fill<T>{buf.mask_neg_inf, from_f<T>(-INFINITY)}, stream);
      launch_elementwise<kBroadcastVT>(nm, WhereScalars<T>{buf.tril, buf.mask_zero, buf.mask_neg_inf, buf.mask},
                                       stream);
      mask = buf.mask;
    }
  }

  // k^T * sqrt(scale): same memory order as k, so a dense [Skv, D] per head.
  scaled_copy(k, k_at, buf.k_scaled, root, nk, stream);

  run_batched_gemm(scores_gemm(p, dtype_of<T>(), dense_operand(buf.q_scaled, H, S, D),
                               dense_operand(buf.k_scaled, Hkv, Skv, D), buf.attn),
                   stream);

  if (mask) launch_elementwise<kBroadcastVT>(ns, AddBroadcast<T>{buf.attn, mask, nm}, stream);

  const T* probs = buf.softmax_out;
  launch_softmax(buf.attn, buf.softmax_out, rows, Skv, stream);
  if (v.safe_softmax) {
    launch_map(ns, EqNegInf<T>{{buf.attn, buf.is_neg_inf}}, stream);
    launch_all_rows(buf.is_neg_inf, buf.row_all, rows, Skv, stream);
    launch_map(1, Fill<T>{buf.probs_zero, from_f<T>(0.0f)}, stream);
    launch_elementwise<kBroadcastVT>(ns, WhereRowElse<T>{buf.row_all, buf.probs_zero, buf.softmax_out, buf.probs, Skv},
                                     stream);
    probs = buf.probs;
  }

  if (p.dropout > 0.0f) {  // at::dropout(attn, dropout_p, true), in place on what the softmax wrote
    T* attn = const_cast<T*>(probs);
    launch_dropout(attn, attn, buf.drop_keep, ns, p.dropout, 0x5eedu, stream);
  }
  if (upcast) launch_map(ns, Convert<T, Tin>{{probs, buf.probs_low}}, stream);  // attn.to(bf16)

  // Upcast: into a dense fp32 buffer, cast back below; else straight into out.
  run_batched_gemm(output_gemm(p, dtype_of<T>(), dense_operand(probs, H, S, Skv), v_op,
                               upcast ? static_cast<void*>(buf.out_up) : p.out,
                               upcast ? dense_strides(Layout::BHSD, H, S, D) : p.out_strides),
                   stream);

  if (upcast) {  // out.to(bf16)
    const StridedIndex out_at = index_of(p.out_strides, H, S, D);
    if (out_at.dense)
      launch_map(nq, Convert<T, Tin>{{buf.out_up, static_cast<Tin*>(p.out)}}, stream);
    else
      launch_elementwise<4>(nq, ToStrided<T, Tin>{buf.out_up, out_at, static_cast<Tin*>(p.out)}, stream);
  }
}

void run_math(const AttentionParams& p, const ExecContext& ctx, MathVariant v) {
  switch (p.dtype) {
    case DType::BF16:
      if (v.upcast)
        math_forward<__nv_bfloat16, float>(p, ctx, v);
      else
        math_forward<__nv_bfloat16, __nv_bfloat16>(p, ctx, v);
      return;
    case DType::FP16:
      if (v.upcast)
        math_forward<__half, float>(p, ctx, v);
      else
        math_forward<__half, __half>(p, ctx, v);
      return;
    case DType::FP32:
      math_forward<float, float>(p, ctx, v);
      return;
  }
}

std::size_t math_bytes(const AttentionParams& p, bool upcast) {
  switch (p.dtype) {
    case DType::BF16:
      return upcast ? workspace_for<__nv_bfloat16, float>(p, true)
                    : workspace_for<__nv_bfloat16, __nv_bfloat16>(p, false);
    case DType::FP16:
      return upcast ? workspace_for<__half, float>(p, true) : workspace_for<__half, __half>(p, false);
    case DType::FP32:
      return workspace_for<float, float>(p, false);
  }
  return 0;
}

}  // namespace

void math(const AttentionParams& p, const ExecContext& ctx) { run_math(p, ctx, {true, false, true}); }
void math_no_upcast(const AttentionParams& p, const ExecContext& ctx) { run_math(p, ctx, {false, false, true}); }
void math_cached_mask(const AttentionParams& p, const ExecContext& ctx) { run_math(p, ctx, {false, true, true}); }
void math_plain_softmax(const AttentionParams& p, const ExecContext& ctx) { run_math(p, ctx, {false, true, false}); }
std::size_t math_workspace(const AttentionParams& p) { return math_bytes(p, true); }
std::size_t math_no_upcast_workspace(const AttentionParams& p) { return math_bytes(p, false); }

}  // namespace attnprof::attention::cuda
