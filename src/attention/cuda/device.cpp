// Is there a CUDA device to run on? Asked once, answered without throwing.
#include <fmt/core.h>

#include <cuda_runtime.h>

#include "attention/cuda/cuda_attention.h"

namespace attnprof::attention::cuda {

bool device_available(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = fmt::format("no usable CUDA device ({})", cudaGetErrorString(err));
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device";
    return false;
  }
  return true;
}

}  // namespace attnprof::attention::cuda
