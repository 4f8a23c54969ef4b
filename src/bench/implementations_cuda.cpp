// The CUDA implementations as bench entries (built only with a CUDA toolkit).
#include <cuda_runtime.h>

#include "attention/cuda/cuda_attention.h"
#include "bench/cuda_backend.h"
#include "bench/implementations.h"
#if ATTNPROF_BENCH_HAVE_FUSED
#include "attention/fused/attention_fn.h"
#endif

namespace attnprof::bench {

std::vector<Implementation> plugin::implementations() {
  namespace cu = attention::cuda;
  const std::string cudnn_reason = cu::cudnn_unavailable_reason();
  return {
    {"math",   true,
     cu::math, cu::math_workspace,
     "",       "PyTorch SDPA math, kernel for kernel: fp32 upcast, FP32 GEMMs, mask rebuilt, safe softmax"},
        {"math-no-upcast",
         true,
         cu::math_no_upcast,
         cu::math_no_upcast_workspace,
         "",
         "math in the input dtype: GEMMs on tensor cores"},
        {"math-cached-mask",           true, cu::math_cached_mask,
         cu::math_no_upcast_workspace, "",   "and the causal mask built once"},
        {"math-plain-softmax",         true, cu::math_plain_softmax,
         cu::math_no_upcast_workspace, "",   "and a plain softmax instead of _safe_softmax"},
        {"manual",   true,
         cu::manual, cu::manual_workspace,
         "",         "hand-written: bf16 QK^T, scale, in-place mask fill, softmax, PV"},
        {"cudnn", true, cu::cudnn, nullptr, cudnn_reason, "cuDNN fused SDPA (graph API)"},
#if ATTNPROF_BENCH_HAVE_FUSED
        {"fused",
         true,
         fused::attention_forward,
         fused::attention_workspace,
         "",
         "the project's own fused kernel: one launch, tensor cores, online softmax"},
#else
        {"fused",
         true,
         nullptr,
         nullptr,
         "the project's fused kernel (src/attention/fused) was not built",
         "the project's own fused kernel"},
#endif
  };
}

std::string plugin::device_name(std::string* why) {
  if (!attention::cuda::device_available(why)) return {};
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    if (why) *why = "cannot read the CUDA device's properties";
    return {};
  }
  return prop.name;
}

}  // namespace attnprof::bench
