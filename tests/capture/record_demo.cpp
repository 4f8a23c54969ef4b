// A small CUDA program for scripts/record/gpu_record_check.sh. Each mode runs a few
// mix steps (each under an NVTX range "mix_step"), then ends its own way:
//   normal | crash (SIGSEGV) | exit-thread (exit(7) from a second thread) |
//   sigint | sigterm (sent to itself, default handlers) -- run under `attnprof record`
//   inproc OUT.json  -- records itself with the in-process API and writes OUT
//   conflict         -- another CUPTI subscriber first: the recorder must refuse clearly
//   validate TRACE [MIN_KERNELS] -- reads TRACE with attnprof's reader, prints counts
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <cupti.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "capture/nvtx_range.h"
#include "capture/recorder.h"
#include "overhead_kernels.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace {

using attnprof::overhead::Buffers;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "record_demo: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

cudaStream_t g_stream;
Buffers g_buf;

void run_steps(int steps) {
  check(attnprof::overhead::mix_loop(g_buf, g_stream, steps), "mix_loop");
  check(cudaStreamSynchronize(g_stream), "cudaStreamSynchronize");
}

void setup() {
  check(cudaMalloc(&g_buf.counter, sizeof(int)), "cudaMalloc");
  check(cudaMalloc(&g_buf.x, Buffers::kN * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&g_buf.y, Buffers::kN * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&g_buf.sum, sizeof(float)), "cudaMalloc");
  for (float** p : {&g_buf.a, &g_buf.b, &g_buf.c})
    check(cudaMalloc(p, Buffers::kM * Buffers::kM * sizeof(float)), "cudaMalloc");
  check(cudaStreamCreate(&g_stream), "cudaStreamCreate");
}

int validate(const std::string& path, int min_kernels) {
  try {
    const attnprof::Trace t = attnprof::read_trace_file(path);
    int kernels = 0, launches = 0, ranges = 0, copies = 0;
    for (const auto& e : t.events) {
      kernels += e.kind == attnprof::EventKind::Kernel;
      launches += attnprof::is_launch_api(e.kind);
      ranges += e.kind == attnprof::EventKind::UserAnnotation;
      copies += e.kind == attnprof::EventKind::GpuMemcpy;
    }
    std::printf("VALID %s events=%zu kernels=%d launches=%d ranges=%d copies=%d devices=%zu dropped=%lld\n",
                path.c_str(), t.events.size(), kernels, launches, ranges, copies, t.devices.size(),
                static_cast<long long>(t.dropped_records));
    return kernels >= min_kernels ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("INVALID %s: %s\n", path.c_str(), e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "normal";
  if (mode == "validate" && argc > 2) return validate(argv[2], argc > 3 ? std::atoi(argv[3]) : 1);
  setup();
  if (mode == "conflict") {
    CUpti_SubscriberHandle other = nullptr;
    const CUptiResult r =
        cuptiSubscribe(&other, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr);
    if (r != CUPTI_SUCCESS) {
      std::fprintf(stderr, "record_demo: cuptiSubscribe failed (%d)\n", static_cast<int>(r));
      return 1;
    }
    try {
      attnprof::capture::start();
    } catch (const attnprof::capture::RecorderError& e) {
      std::printf("conflict: refused: %s\n", e.what());
      return std::string(e.what()).find("another CUPTI client") != std::string::npos ? 0 : 1;
    }
    std::printf("conflict: recorder started despite another subscriber\n");
    return 1;
  }
  if (mode == "inproc") {
    if (argc < 3) return 2;
    try {
      attnprof::capture::RecordingScope scope;
      run_steps(5);
      const attnprof::Trace trace = scope.stop_and_take();
      attnprof::write_trace_file(trace, argv[2]);
      std::printf("inproc: wrote %zu events to %s\n", trace.events.size(), argv[2]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "record_demo: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  run_steps(5);
  std::fflush(stdout);
  if (mode == "crash") {
    volatile int* null = nullptr;
    *null = 1;
  } else if (mode == "exit-thread") {
    std::thread([] { std::exit(7); }).detach();
    std::this_thread::sleep_for(std::chrono::seconds(30));  // main waits; the other thread exits
  } else if (mode == "sigint") {
    kill(getpid(), SIGINT);
    std::this_thread::sleep_for(std::chrono::seconds(30));
  } else if (mode == "sigterm") {
    kill(getpid(), SIGTERM);
    std::this_thread::sleep_for(std::chrono::seconds(30));
  }
  return 0;
}
