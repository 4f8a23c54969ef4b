// GPU timing with CUDA events (see timer.h).
#include "attention/cuda/timer.h"

#include <cstdint>

#include "attention/cuda/cuda_check.h"

namespace attnprof::attention::cuda {

CudaEvent::CudaEvent() { ATTNPROF_CUDA_CHECK(cudaEventCreate(&event_)); }
CudaEvent::~CudaEvent() { (void)cudaEventDestroy(event_); }
CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }

std::vector<double> time_calls(const std::function<void()>& call, cudaStream_t stream, const TimingOptions& o) {
  const auto samples = static_cast<std::size_t>(o.samples > 0 ? o.samples : 1);
  const int per_sample = o.mode == TimingMode::Hot ? (o.burst > 0 ? o.burst : 1) : 1;
  std::vector<CudaEvent> starts(samples), stops(samples);
  for (std::size_t s = 0; s < samples; ++s) {
    if (o.mode == TimingMode::Cold && o.flush != nullptr)
      ATTNPROF_CUDA_CHECK(cudaMemsetAsync(o.flush, static_cast<int>(s & 0xff), o.flush_bytes, stream));
    ATTNPROF_CUDA_CHECK(cudaEventRecord(starts[s].get(), stream));
    for (int c = 0; c < per_sample; ++c) call();
    ATTNPROF_CUDA_CHECK(cudaEventRecord(stops[s].get(), stream));
  }
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  ms.reserve(samples);
  for (std::size_t s = 0; s < samples; ++s) {
    float t = 0.0f;
    ATTNPROF_CUDA_CHECK(cudaEventElapsedTime(&t, starts[s].get(), stops[s].get()));
    ms.push_back(static_cast<double>(t) / per_sample);
  }
  return ms;
}

}  // namespace attnprof::attention::cuda
