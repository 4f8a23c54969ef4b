// The two attention GEMMs through cuBLAS, batched over (batch, head) with GQA:
//   scores = A . B^T   (B stored [N, K] per head: QK^T)
//   out    = A . B     (B stored [K, N] per head: PV)
//   grad   = A^T . B   (A stored [K, M] per head: the backward's dV = P^T dO, dK = dS^T Q)
// Row-major views of strided tensors; B is indexed by kv head = head / group.
// One cuBLAS call when the strides allow (dense BHSD, GQA rows merged), else
// one call per batch (and per kv head under GQA). Accumulation is fp32
// (CUBLAS_COMPUTE_32F, no TF32): bf16/fp16 run on tensor cores, fp32 on CUDA cores.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "attention/params.h"

namespace attnprof::attention::cuda {

struct MatrixOperand {
  const void* ptr = nullptr;
  std::int64_t ld = 0;            // elements between rows
  std::int64_t batch_stride = 0;  // elements between batches
  std::int64_t head_stride = 0;   // elements between heads
};

struct BatchedGemm {
  DType dtype = DType::BF16;  // of A, B and C
  bool b_transposed = true;   // true: C = A B^T; false: C = A B
  bool a_transposed = false;  // true: A is stored [k, m] per head and read as its transpose
  int batch = 0, heads = 0, kv_heads = 0;
  int m = 0, n = 0, k = 0;  // C is m x n per head
  float alpha = 1.0f;
  MatrixOperand a, b;
  void* c = nullptr;
  std::int64_t ldc = 0, c_batch_stride = 0, c_head_stride = 0;
};

// Number of cuBLAS calls (kernels) `run_batched_gemm` makes for g.
int gemm_calls(const BatchedGemm& g);
void run_batched_gemm(const BatchedGemm& g, cudaStream_t stream);

// The two attention GEMMs for p's shape, in `dtype` (p.dtype, or fp32 after an upcast):
//   scores [B, H, S, Skv] (dense) = q . k^T
//   out (strided as `out_strides`) = probs . v
BatchedGemm scores_gemm(const AttentionParams& p, DType dtype, const MatrixOperand& q, const MatrixOperand& k,
                        void* scores);
BatchedGemm output_gemm(const AttentionParams& p, DType dtype, const MatrixOperand& probs, const MatrixOperand& v,
                        void* out, const TensorStrides& out_strides);

// A dense [batch, heads, rows, cols] operand.
MatrixOperand dense_operand(const void* ptr, int heads, int rows, int cols);
// An operand from AttentionParams strides.
MatrixOperand strided_operand(const void* ptr, const TensorStrides& s);

}  // namespace attnprof::attention::cuda
