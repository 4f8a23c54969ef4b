// Kernels of the recording-overhead benchmark, behind a plain C++ interface.
#pragma once

#include <cuda_runtime.h>

namespace attnprof::overhead {

struct Buffers {
  int* counter = nullptr;
  float* x = nullptr;
  float* y = nullptr;
  float* sum = nullptr;
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  static constexpr int kN = 4 << 20;  // elementwise/reduction/copy size (floats)
  static constexpr int kM = 256;      // matmul size
};

inline constexpr int kMixKernels = 4;  // kernels per mix iteration (plus a memset and a copy)

// n launches of a 1-block kernel.
cudaError_t tiny_loop(const Buffers& buf, cudaStream_t s, int n);
// n iterations of: memset, scale, sum, device copy, 256^3 matmul, tiny kernel,
// each iteration inside an NVTX range "mix_step".
cudaError_t mix_loop(const Buffers& buf, cudaStream_t s, int n);

}  // namespace attnprof::overhead
