// The trace model: one compact record per trace event, shared by the reader,
// the writer, the CUPTI recorder and the analysis. Plain C++, no CUDA.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>

namespace attnprof {

using StringId = std::uint32_t;
inline constexpr StringId kNoString = 0;  // id 0 is always the empty string

// What an event is. The JSON category names for each kind live in catalogue.cpp.
enum class EventKind : std::uint8_t {
  CpuOp,              // "cpu_op": an ATen operator on a CPU thread
  UserAnnotation,     // "user_annotation": record_function / NVTX range on the CPU
  GpuUserAnnotation,  // "gpu_user_annotation": the same range projected onto a GPU stream
  CudaRuntime,        // "cuda_runtime": cudaLaunchKernel, cudaMemcpyAsync, ...
  CudaDriver,         // "cuda_driver": cuLaunchKernel(Ex), ...
  CudaSync,           // "cuda_sync": stream/event/device synchronization
  Kernel,             // "kernel": a GPU kernel execution
  GpuMemcpy,          // "gpu_memcpy"
  GpuMemset,          // "gpu_memset"
  PythonFunction,     // "python_function"
  Flow,               // "ac2g" / "async_cpu_to_gpu" / "fwdbwd" flow endpoints (ph s/f/t)
  Metadata,           // ph "M": process/thread names
  Instant,            // ph "i"
  Other,              // anything else ("overhead", "Trace", unknown categories)
};
inline constexpr int kEventKindCount = static_cast<int>(EventKind::Other) + 1;

inline bool is_gpu_activity(EventKind k) {
  return k == EventKind::Kernel || k == EventKind::GpuMemcpy || k == EventKind::GpuMemset;
}
// Chrome's flow phases: start, finish, step.
inline bool is_flow_phase(char ph) { return ph == 's' || ph == 'f' || ph == 't'; }
inline bool is_launch_api(EventKind k) { return k == EventKind::CudaRuntime || k == EventKind::CudaDriver; }

// A process or thread id. Kineto writes integers, and strings for its own
// pseudo-processes ("Spans", "Traces"); a string is kept as an interned id.
// Packed (9 bytes, not 16): an Event holds two, and a large trace millions of
// Events; x86-64 reads the unaligned value at full speed.
// The value is read through value(), by copy: a reference to the unaligned
// member would be undefined behaviour (UBSan reports it).
struct [[gnu::packed]] Lane {
  constexpr Lane() = default;
  constexpr Lane(std::int64_t v, bool string) : value_(v), is_string(string) {}
  std::int64_t value() const { return value_; }  // a StringId when is_string

 private:
  std::int64_t value_ = 0;

 public:
  bool is_string = false;
  friend bool operator==(const Lane&, const Lane&) = default;
};
static_assert(sizeof(Lane) == 9);

// Arguments of GPU activity (kernel, memcpy, memset). -1 means "not in the trace".
struct GpuArgs {
  std::int32_t device = -1;
  std::int32_t context = -1;
  std::int64_t stream = -1;
  std::int64_t bytes = -1;  // memcpy / memset size
  std::array<std::int32_t, 3> grid{-1, -1, -1};
  std::array<std::int32_t, 3> block{-1, -1, -1};
  std::int32_t registers_per_thread = -1;
  std::int32_t shared_memory = -1;          // static + dynamic bytes per block
  std::int32_t dynamic_shared_memory = -1;  // recorder only; Kineto folds it into shared_memory
  float blocks_per_sm = -1.0f;
  float warps_per_sm = -1.0f;
  float occupancy_pct = -1.0f;  // "est. achieved occupancy %"
  friend bool operator==(const GpuArgs&, const GpuArgs&) = default;
};
static_assert(sizeof(GpuArgs) == 72);

// One trace event. Times are integer nanoseconds on the trace's own clock
// (Kineto writes microseconds with three decimals; they are read exactly).
// 64 bytes, one cache line: the field order keeps it so (see the assert below).
struct Event {
  std::int64_t ts_ns = 0;
  std::int64_t dur_ns = 0;
  std::int64_t correlation = -1;  // links a launch API call to the GPU work it started; flow id for flows
  std::int64_t external_id = -1;  // links GPU work and launches to the CPU op ("External id")
  StringId name = kNoString;
  std::uint32_t gpu_args = kNoGpuArgs;  // index into Trace::gpu_args, for kernels/memcpy/memset
  StringId category = kNoString;        // the category as written, for round trips of unknown kinds
  Lane pid;
  Lane tid;
  EventKind kind = EventKind::Other;
  char phase = 'X';  // JSON "ph": X, i, M, s, f, t, B, E

  static constexpr std::uint32_t kNoGpuArgs = std::numeric_limits<std::uint32_t>::max();
  std::int64_t end_ns() const { return ts_ns + dur_ns; }
  bool has_gpu_args() const { return gpu_args != kNoGpuArgs; }
};
static_assert(sizeof(Event) == 64);

// cudaDeviceProp fields Kineto writes under "deviceProperties".
struct DeviceProperties {
  int id = -1;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int num_sms = 0;
  std::int64_t total_global_mem = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int regs_per_block = 0;
  int regs_per_sm = 0;
  int warp_size = 0;
  int shared_mem_per_block = 0;
  int shared_mem_per_block_optin = 0;
  int shared_mem_per_sm = 0;
  friend bool operator==(const DeviceProperties&, const DeviceProperties&) = default;
};

}  // namespace attnprof
