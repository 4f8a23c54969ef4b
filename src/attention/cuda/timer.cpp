// GPU timing with CUDA events (see timer.h).
#include "attention/cuda/timer.h"

#include <cstdint>

#include "attention/cuda/cuda_check.h"
#include "attention/cuda/interleave_order.h"

namespace attnprof::attention::cuda {

CudaEvent::CudaEvent() { ATTNPROF_CUDA_CHECK(cudaEventCreate(&event_)); }
CudaEvent::~CudaEvent() { (void)cudaEventDestroy(event_); }
CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }

std::vector<double> time_calls(const std::function<void()>& call, cudaStream_t stream, const TimingOptions& o) {
  return time_calls_interleaved({call}, stream, o).front();
}

std::vector<std::vector<double>> time_calls_interleaved(const std::vector<std::function<void()>>& calls,
                                                        cudaStream_t stream, const TimingOptions& o) {
  const auto rounds = static_cast<std::size_t>(o.samples > 0 ? o.samples : 1);
  const int per_sample = o.mode == TimingMode::Hot ? (o.burst > 0 ? o.burst : 1) : 1;
  const std::size_t n = calls.size();
  std::vector<CudaEvent> starts(rounds * n), stops(rounds * n);
  for (std::size_t r = 0; r < rounds; ++r)
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = interleaved_call(r, k, n);  // the order turns each round
      const std::size_t s = r * n + i;
      if (o.mode == TimingMode::Cold && o.flush != nullptr)
        ATTNPROF_CUDA_CHECK(cudaMemsetAsync(o.flush, static_cast<int>(s & 0xff), o.flush_bytes, stream));
      ATTNPROF_CUDA_CHECK(cudaEventRecord(starts[s].get(), stream));
      for (int c = 0; c < per_sample; ++c) calls[i]();
      ATTNPROF_CUDA_CHECK(cudaEventRecord(stops[s].get(), stream));
    }
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<std::vector<double>> ms(n);
  for (std::size_t i = 0; i < n; ++i) {
    ms[i].reserve(rounds);
    for (std::size_t r = 0; r < rounds; ++r) {
      float t = 0.0f;
      ATTNPROF_CUDA_CHECK(cudaEventElapsedTime(&t, starts[r * n + i].get(), stops[r * n + i].get()));
      ms[i].push_back(static_cast<double>(t) / per_sample);
    }
  }
  return ms;
}

}  // namespace attnprof::attention::cuda
