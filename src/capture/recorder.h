// The in-process recorder: traces this process's CUDA work with CUPTI and hands
// it back as an attnprof::Trace. CUPTI is process-wide, so there is one
// recorder per process. CUDA-free header; link attnprof_capture.
//
//   attnprof::capture::RecordingScope scope;      // starts recording
//   { auto r = attnprof::capture::range("attn_fwd"); run_attention(); }
//   cudaDeviceSynchronize();
//   attnprof::Trace trace = scope.stop_and_take();
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "capture/record_kinds.h"
#include "trace/trace.h"

namespace attnprof::capture {

// CUPTI refused (another client owns the process, version mismatch, ...).
// The message is one line saying what to do.
class RecorderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How runtime and driver calls (the launches that tie kernels to threads and ranges) are recorded.
enum class CallTracing {
  // CUPTI's runtime/driver API activity records: full records, microseconds per launch.
  Activity,
  // CUPTI callbacks on the kept calls only (api_calls.cpp), each writing its correlation id, times and
  // thread into a per-thread log (call_log.h): the same events, about the same cost per launch
  // (BENCHMARKS.md), and they can be switched on at any time, where CUPTI's per-call activity
  // filter works only when enabled during cuInit.
  Callbacks,
};

struct RecorderOptions {
  std::uint32_t kinds = kAllKinds;      // see record_kinds.h
  std::size_t buffer_bytes = 8u << 20;  // one CUPTI activity buffer
  std::size_t max_buffers = 64;         // pool cap; past it CUPTI drops (and counts) records
  // Ask CUPTI for records of the kept runtime/driver calls only (api_calls.cpp)
  // instead of all calls, which costs less per launch. Seen working on an H200
  // (CUDA 13.0) only when enabled during cuInit, as the injection library does;
  // enabled after CUDA is initialized, it produced no records at all. So the
  // in-process default traces all calls and filters while converting.
  bool filter_api_calls_in_cupti = false;
  CallTracing calls = CallTracing::Activity;
  // Set before the first start (CUPTI reads the per-thread one only before buffers are registered).
  CuptiAttributes cupti_attributes;
};

// NVTX range pushes (with the range's ASCII name, "" when it has none) and pops of any thread, called
// on that thread inside the NVTX call: keep it short.
using NvtxHook = void (*)(bool push, const char* name);

// Subscribes to CUPTI without recording anything, forwarding NVTX range pushes and pops to `hook`;
// start() and stop() then turn recording on and off under the same subscription (CUPTI has one
// subscriber per process). For a capture window that follows NVTX ranges. Throws RecorderError.
void arm(NvtxHook hook);

// Now on the recorder's clock (CUPTI's timestamps, the trace's ts), in ns.
std::int64_t timestamp_ns();

// Starts recording; throws RecorderError. Starting twice is an error.
void start(const RecorderOptions& options = {});
// Stops recording and flushes what CUPTI holds. Safe to call when not recording.
// Synchronize the device first: kernels still running are not reported.
void stop();
// Asks CUPTI to hand over all completed records now.
void flush();
// Which records take() asks CUPTI for first: all, even of GPU work still running (forced), or
// those of finished work only (CUPTI's default flush: cheap enough to call every second).
enum class Flush { Forced, Completed };
// Everything recorded since the last take(), with device properties, versions
// and the dropped-record count filled in. Flushes first. After stop() this
// also closes NVTX ranges still open.
Trace take(Flush flush = Flush::Forced);
bool is_recording();

// Starts on construction, stops on destruction (without throwing).
class RecordingScope {
 public:
  explicit RecordingScope(const RecorderOptions& options = {}) { start(options); }
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;
  Trace stop_and_take();

 private:
  bool stopped_ = false;
};

}  // namespace attnprof::capture
