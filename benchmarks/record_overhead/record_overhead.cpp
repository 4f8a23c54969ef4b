// Recording overhead: wall time per launch of (1) many tiny kernels and (2) a
// realistic mix (memset, elementwise, reduction, copy, small matmul), first
// without recording, then with the in-process recorder (kernels only; kernels
// and runtime calls; everything), then without again.
//
//   attnprof_record_overhead [--tiny N] [--mix N] [--repeats R] [--plain]
// --plain times only the unrecorded loops (to run under `attnprof record`, or
// next to torch.profiler). Last line: "RESULT key=value ..." for scripts.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "attention/cuda/cuda_check.h"
#include "capture/recorder.h"
#include "overhead_kernels.h"

namespace {

using attnprof::overhead::Buffers;
using attnprof::overhead::kMixKernels;

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median wall time per iteration (us) over `repeats` runs of `n` iterations.
template <typename Loop>
double time_per_iteration(Loop loop, cudaStream_t s, int n, int repeats) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s));
    const double t0 = now_us();
    loop(n);
    ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s));
    t.push_back((now_us() - t0) / n);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int run(int argc, char** argv) {
  int tiny = 20000, mix = 2000, repeats = 7;
  bool plain = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (a == "--tiny")
      tiny = next();
    else if (a == "--mix")
      mix = next();
    else if (a == "--repeats")
      repeats = next();
    else if (a == "--plain")
      plain = true;
    else {
      std::fprintf(stderr, "record_overhead: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (tiny <= 0 || mix <= 0 || repeats <= 0) {
    std::fprintf(stderr, "record_overhead: counts must be positive\n");
    return 2;
  }
  Buffers buf;
  ATTNPROF_CUDA_CHECK(cudaMalloc(&buf.counter, sizeof(int)));
  ATTNPROF_CUDA_CHECK(cudaMalloc(&buf.x, Buffers::kN * sizeof(float)));
  ATTNPROF_CUDA_CHECK(cudaMalloc(&buf.y, Buffers::kN * sizeof(float)));
  ATTNPROF_CUDA_CHECK(cudaMalloc(&buf.sum, sizeof(float)));
  ATTNPROF_CUDA_CHECK(cudaMalloc(&buf.a, Buffers::kM * Buffers::kM * sizeof(float)));
  ATTNPROF_CUDA_CHECK(cudaMalloc(&buf.b, Buffers::kM * Buffers::kM * sizeof(float)));
  ATTNPROF_CUDA_CHECK(cudaMalloc(&buf.c, Buffers::kM * Buffers::kM * sizeof(float)));
  ATTNPROF_CUDA_CHECK(cudaMemset(buf.x, 0x3c, Buffers::kN * sizeof(float)));  // ~0.01, not zeros
  ATTNPROF_CUDA_CHECK(cudaMemset(buf.a, 0x3c, Buffers::kM * Buffers::kM * sizeof(float)));
  ATTNPROF_CUDA_CHECK(cudaMemset(buf.b, 0x3c, Buffers::kM * Buffers::kM * sizeof(float)));
  cudaStream_t s;
  ATTNPROF_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto tiny_fn = [&](int n) { ATTNPROF_CUDA_CHECK(attnprof::overhead::tiny_loop(buf, s, n)); };
  auto mix_fn = [&](int n) { ATTNPROF_CUDA_CHECK(attnprof::overhead::mix_loop(buf, s, n)); };
  tiny_fn(2000);  // warm-up: module load, first launches
  mix_fn(50);

  const double tiny0 = time_per_iteration(tiny_fn, s, tiny, repeats);
  const double mix0 = time_per_iteration(mix_fn, s, mix, repeats);
  std::printf("unrecorded   tiny %8.3f us/launch   mix %8.3f us/iteration\n", tiny0, mix0);
  if (plain) {
    std::printf("RESULT mode=plain tiny_us=%.4f mix_us=%.4f\n", tiny0, mix0);
    ATTNPROF_CUDA_CHECK(cudaStreamDestroy(s));
    return 0;
  }
  // Recorded, once per set of kinds: what each kind of record costs.
  bool ok = true;
  double tiny_all = 0;
  using attnprof::capture::CallTracing;
  struct Config {
    const char* kinds;
    CallTracing calls;
    const char* calls_name;
  };
  for (const auto& [kinds, calls, calls_name] :
       {Config{"kernel", CallTracing::Activity, "activity"},
        Config{"kernel,runtime", CallTracing::Activity, "activity"}, Config{"all", CallTracing::Activity, "activity"},
        Config{"kernel,runtime", CallTracing::Callbacks, "callbacks"},
        Config{"all", CallTracing::Callbacks, "callbacks"}}) {
    double tiny1 = 0, mix1 = 0;
    std::size_t kernels = 0;
    std::int64_t dropped = 0;
    try {
      attnprof::capture::RecorderOptions options;
      options.kinds = *attnprof::capture::parse_record_kinds(kinds);
      options.calls = calls;
      attnprof::capture::RecordingScope scope(options);
      tiny_fn(2000);  // CUPTI's first records set up buffers; keep that out
      ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s));
      tiny1 = time_per_iteration(tiny_fn, s, tiny, repeats);
      mix1 = time_per_iteration(mix_fn, s, mix, repeats);
      ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
      const attnprof::Trace trace = scope.stop_and_take();
      for (const auto& e : trace.events) kernels += e.kind == attnprof::EventKind::Kernel;
      dropped = trace.dropped_records;
    } catch (const attnprof::capture::RecorderError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
    const std::size_t expected = 2000 + static_cast<std::size_t>(repeats) * (tiny + mix * kMixKernels);
    std::printf(
        "recorded     tiny %8.3f us/launch   mix %8.3f us/iteration   kinds %s, calls by %s: %zu kernels "
        "(expected %zu), %lld dropped\n",
        tiny1, mix1, kinds, calls_name, kernels, expected, static_cast<long long>(dropped));
    std::printf(
        "RESULT mode=inproc kinds=%s calls=%s tiny_us=%.4f tiny_rec_us=%.4f tiny_ratio=%.3f tiny_added_us=%.3f "
        "mix_us=%.4f mix_rec_us=%.4f mix_ratio=%.3f kernels=%zu expected=%zu dropped=%lld\n",
        kinds, calls_name, tiny0, tiny1, tiny1 / tiny0, tiny1 - tiny0, mix0, mix1, mix1 / mix0, kernels, expected,
        static_cast<long long>(dropped));
    ok = ok && kernels == expected && dropped == 0;
    tiny_all = tiny1;
  }
  const double tiny2 = time_per_iteration(tiny_fn, s, tiny, repeats);
  const double mix2 = time_per_iteration(mix_fn, s, mix, repeats);
  std::printf("unrecorded   tiny %8.3f us/launch   mix %8.3f us/iteration (after recording)\n", tiny2, mix2);
  std::printf("RESULT mode=after tiny_us=%.4f mix_us=%.4f (all kinds vs after: %.3fx)\n", tiny2, mix2,
              tiny_all / tiny2);
  ATTNPROF_CUDA_CHECK(cudaStreamDestroy(s));
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a failed CUDA call (ATTNPROF_CUDA_CHECK)
    std::fprintf(stderr, "record_overhead: %s\n", e.what());
    return 1;
  }
}
