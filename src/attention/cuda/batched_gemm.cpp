// cuBLAS strided-batched GEMMs for attention; see batched_gemm.h.
#include "attention/cuda/batched_gemm.h"

#include <cublas_v2.h>

#include "attention/cuda/cublas_check.h"

namespace attnprof::attention::cuda {

namespace {

cublasHandle_t handle() {
  // One handle per thread (cuBLAS handles are not thread-safe), made on first use.
  thread_local cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    ATTNPROF_CUBLAS_CHECK(cublasCreate(&created));
    ATTNPROF_CUBLAS_CHECK(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH));  // no TF32
    return created;
  }();
  return h;
}

cudaDataType_t cuda_type(DType d) {
  switch (d) {
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::FP16:
      return CUDA_R_16F;
    case DType::FP32:
      return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

enum class Plan { Flat, MergedGroups, PerBatch };

Plan plan(const BatchedGemm& g) {
  const int group = g.heads / g.kv_heads;
  auto flat = [&](std::int64_t batch_stride, std::int64_t head_stride, int heads) {
    return g.batch == 1 || batch_stride == heads * head_stride;
  };
  const bool a_flat = flat(g.a.batch_stride, g.a.head_stride, g.heads);
  const bool b_flat = flat(g.b.batch_stride, g.b.head_stride, g.kv_heads);
  const bool c_flat = flat(g.c_batch_stride, g.c_head_stride, g.heads);
  if (group == 1 && a_flat && b_flat && c_flat) return Plan::Flat;
  // Under GQA the q heads of one group are adjacent: when their rows follow each
  // other in memory, the group is one (group*m) x n GEMM against one kv head.
  const bool a_rows_adjacent = g.heads == 1 || g.a.head_stride == g.m * g.a.ld;
  const bool c_rows_adjacent = g.heads == 1 || g.c_head_stride == g.m * g.ldc;
  // (A read transposed has its m as columns: a group's heads are not one taller matrix.)
  if (a_flat && b_flat && c_flat && a_rows_adjacent && c_rows_adjacent && !g.a_transposed) return Plan::MergedGroups;
  return Plan::PerBatch;
}

}  // namespace

MatrixOperand dense_operand(const void* ptr, int heads, int rows, int cols) {
  return {ptr, cols, static_cast<std::int64_t>(heads) * rows * cols, static_cast<std::int64_t>(rows) * cols};
}

MatrixOperand strided_operand(const void* ptr, const TensorStrides& s) { return {ptr, s.row, s.batch, s.head}; }

int gemm_calls(const BatchedGemm& g) {
  switch (plan(g)) {
    case Plan::Flat:
    case Plan::MergedGroups:
      return 1;
    case Plan::PerBatch:
      return g.heads == g.kv_heads ? g.batch : g.batch * g.kv_heads;
  }
  return 0;
}

void run_batched_gemm(const BatchedGemm& g, cudaStream_t stream) {
  cublasHandle_t h = handle();
  ATTNPROF_CUBLAS_CHECK(cublasSetStream(h, stream));
  const cudaDataType_t t = cuda_type(g.dtype);
  const auto elem = static_cast<std::int64_t>(dtype_bytes(g.dtype));
  const float beta = 0.0f;
  // Row-major C = A op(B) is column-major C^T = op(B)^T A^T: cuBLAS's first
  // operand is our B, its second our A.
  const cublasOperation_t op_b = g.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = g.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  auto call = [&](const char* a, const char* b, char* c, int m, std::int64_t stride_a, std::int64_t stride_b,
                  std::int64_t stride_c, int count) {
    ATTNPROF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, op_b, op_a, g.n, m, g.k, &g.alpha, b, t, static_cast<int>(g.b.ld), stride_b, a, t, static_cast<int>(g.a.ld),
        stride_a, &beta, c, t, static_cast<int>(g.ldc), stride_c, count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  const auto* a = static_cast<const char*>(g.a.ptr);
  const auto* b = static_cast<const char*>(g.b.ptr);
  auto* c = static_cast<char*>(g.c);
  const int group = g.heads / g.kv_heads;
  switch (plan(g)) {
    case Plan::Flat:
      call(a, b, c, g.m, g.a.head_stride, g.b.head_stride, g.c_head_stride, g.batch * g.heads);
      return;
    case Plan::MergedGroups:
      call(a, b, c, g.m * group, group * g.a.head_stride, g.b.head_stride, group * g.c_head_stride,
           g.batch * g.kv_heads);
      return;
    case Plan::PerBatch:
      if (group == 1) {  // one call per batch over all heads
        for (int bi = 0; bi < g.batch; ++bi)
          call(a + elem * bi * g.a.batch_stride, b + elem * bi * g.b.batch_stride, c + elem * bi * g.c_batch_stride,
               g.m, g.a.head_stride, g.b.head_stride, g.c_head_stride, g.heads);
        return;
      }
      for (int bi = 0; bi < g.batch; ++bi)
        for (int kv = 0; kv < g.kv_heads; ++kv) {
          const std::int64_t h0 = static_cast<std::int64_t>(kv) * group;
          call(a + elem * (bi * g.a.batch_stride + h0 * g.a.head_stride),
               b + elem * (bi * g.b.batch_stride + kv * g.b.head_stride),
               c + elem * (bi * g.c_batch_stride + h0 * g.c_head_stride), g.m, g.a.head_stride, 0, g.c_head_stride,
               group);  // the group's q heads share one kv head
        }
      return;
  }
}

namespace {

// What both attention GEMMs share: batched over (batch, q heads) with p's GQA
// groups, one row per query.
BatchedGemm attention_gemm(const AttentionParams& p, DType dtype, bool b_transposed) {
  BatchedGemm g;
  g.dtype = dtype;
  g.b_transposed = b_transposed;
  g.batch = p.batch;
  g.heads = p.q_heads;
  g.kv_heads = p.kv_heads;
  g.m = p.q_len;
  return g;
}

}  // namespace

BatchedGemm scores_gemm(const AttentionParams& p, DType dtype, const MatrixOperand& q, const MatrixOperand& k,
                        void* scores) {
  BatchedGemm g = attention_gemm(p, dtype, /*b_transposed=*/true);
  g.n = p.kv_len;
  g.k = p.head_dim;
  g.a = q;
  g.b = k;
  g.c = scores;
  g.ldc = p.kv_len;
  g.c_head_stride = static_cast<std::int64_t>(p.q_len) * p.kv_len;
  g.c_batch_stride = g.c_head_stride * p.q_heads;
  return g;
}

BatchedGemm output_gemm(const AttentionParams& p, DType dtype, const MatrixOperand& probs, const MatrixOperand& v,
                        void* out, const TensorStrides& out_strides) {
  BatchedGemm g = attention_gemm(p, dtype, /*b_transposed=*/false);
  g.n = p.head_dim;
  g.k = p.kv_len;
  g.a = probs;
  g.b = v;
  g.c = out;
  g.ldc = out_strides.row;
  g.c_head_stride = out_strides.head;
  g.c_batch_stride = out_strides.batch;
  return g;
}

}  // namespace attnprof::attention::cuda
