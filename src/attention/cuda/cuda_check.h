// One way to check every CUDA runtime call (and, in cublas_check.h and
// cudnn_sdpa.cpp, every cuBLAS and cuDNN call): on failure throw
// std::runtime_error with a single line naming the call, the library's error
// string and where it happened. Out-of-memory becomes DeviceOutOfMemory so the
// CLI can say so and exit 2. Needs only the CUDA runtime (attnprof_cuda_check).
#pragma once

#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

namespace attnprof::attention::cuda {

class DeviceOutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);

}  // namespace attnprof::attention::cuda

#define ATTNPROF_CUDA_CHECK(call)                                                              \
  do {                                                                                         \
    const cudaError_t attnprof_err_ = (call);                                                  \
    if (attnprof_err_ != cudaSuccess)                                                          \
      ::attnprof::attention::cuda::throw_cuda_error(attnprof_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here.
#define ATTNPROF_CUDA_CHECK_LAUNCH() ATTNPROF_CUDA_CHECK(cudaGetLastError())
