// The plugin's entry point: hands the CUDA runner and implementations to the
// bench core that loaded it (see cuda_backend.h).
#include "bench/cuda_backend.h"

extern "C" __attribute__((visibility("default"))) const attnprof::bench::CudaBackend* attnprof_bench_cuda_backend() {
  static const attnprof::bench::CudaBackend backend{
      &attnprof::bench::cuda_implementations,
      &attnprof::bench::cuda_device_name,
      &attnprof::bench::run_on_cuda,
      &attnprof::bench::set_gemm_unit_classifier,
  };
  return &backend;
}
