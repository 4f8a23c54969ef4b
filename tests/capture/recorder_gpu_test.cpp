// The in-process recorder on a real GPU: a known mix of kernels, a copy, a
// memset and NVTX ranges comes back complete, linked by correlation ids, and
// the trace survives the writer and reader. Skips without a GPU.
#include "capture/recorder.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "overhead_kernels.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace attnprof::capture {
namespace {

using overhead::Buffers;

class RecorderGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(cudaMalloc(&buf_.counter, sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buf_.x, Buffers::kN * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buf_.y, Buffers::kN * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&buf_.sum, sizeof(float)), cudaSuccess);
    for (float** p : {&buf_.a, &buf_.b, &buf_.c})
      ASSERT_EQ(cudaMalloc(p, Buffers::kM * Buffers::kM * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    for (void* p : {static_cast<void*>(buf_.counter), static_cast<void*>(buf_.x), static_cast<void*>(buf_.y),
                    static_cast<void*>(buf_.sum), static_cast<void*>(buf_.a), static_cast<void*>(buf_.b),
                    static_cast<void*>(buf_.c)})
      if (p != nullptr) cudaFree(p);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  Buffers buf_;
  cudaStream_t stream_ = nullptr;
};

// Everything of the mix loop comes back, each GPU activity tied to its launch call, however the
// calls are recorded.
void record_mix_and_check(Buffers& buf_, cudaStream_t stream_, CallTracing calls) {
  constexpr int kSteps = 3;
  Trace trace;
  {
    RecorderOptions options;
    options.calls = calls;
    RecordingScope scope(options);
    ASSERT_EQ(overhead::mix_loop(buf_, stream_, kSteps), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    trace = scope.stop_and_take();
  }
  EXPECT_FALSE(is_recording());
  std::map<std::string, int> kernels;
  std::set<std::int64_t> launch_correlations;
  int copies = 0, memsets = 0, ranges = 0;
  for (const auto& e : trace.events) {
    const std::string name(trace.name(e));
    if (e.kind == EventKind::CudaRuntime) launch_correlations.insert(e.correlation);
    if (e.kind == EventKind::Kernel) {
      kernels[name.substr(0, name.rfind('('))]++;  // drop the parameter list
      const GpuArgs* a = trace.args(e);
      ASSERT_NE(a, nullptr);
      EXPECT_GT(a->grid[0], 0);
      EXPECT_GT(a->block[0], 0);
      EXPECT_GE(a->registers_per_thread, 0);
      EXPECT_GT(e.dur_ns, 0);
    }
    if (e.kind == EventKind::GpuMemcpy) {
      ++copies;
      EXPECT_EQ(trace.args(e)->bytes, static_cast<std::int64_t>(Buffers::kN * sizeof(float)));
    }
    if (e.kind == EventKind::GpuMemset) ++memsets;
    if (e.kind == EventKind::UserAnnotation && name == "mix_step") ++ranges;
  }
  EXPECT_EQ(kernels["attnprof::overhead::(anonymous namespace)::scale_kernel"], kSteps);
  EXPECT_EQ(kernels["attnprof::overhead::(anonymous namespace)::matmul_kernel"], kSteps);
  EXPECT_EQ(copies, kSteps);
  EXPECT_EQ(memsets, kSteps);
  EXPECT_EQ(ranges, kSteps) << "NVTX ranges did not reach CUPTI";
  for (const auto& e : trace.events) {
    if (is_gpu_activity(e.kind)) {
      EXPECT_TRUE(launch_correlations.count(e.correlation)) << trace.name(e);
    }
  }
  ASSERT_FALSE(trace.devices.empty());
  EXPECT_GT(trace.devices[0].num_sms, 0);
  EXPECT_EQ(trace.dropped_records, 0);

  const auto path = (std::filesystem::temp_directory_path() / "attnprof_recorder_gpu_test.json.gz").string();
  write_trace_file(trace, path);
  const Trace back = read_trace_file(path);
  EXPECT_EQ(back.events.size(), trace.events.size());
  std::filesystem::remove(path);
}

TEST_F(RecorderGpu, RecordsEveryKernelCopyMemsetAndRange) {
  record_mix_and_check(buf_, stream_, CallTracing::Activity);
}

// Calls seen by callbacks carry the same correlation ids as the GPU work they launched.
TEST_F(RecorderGpu, CallbackCallsTieEveryKernelToItsLaunch) {
  record_mix_and_check(buf_, stream_, CallTracing::Callbacks);
}

TEST_F(RecorderGpu, StartTwiceIsAnErrorAndStopIsIdempotent) {
  start();
  EXPECT_THROW(start(), RecorderError);
  stop();
  stop();
  (void)take();
}

}  // namespace
}  // namespace attnprof::capture
