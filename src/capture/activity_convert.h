// CUPTI activity records -> attnprof trace events. A pure function of the
// records (no CUPTI calls, no GPU), so it is unit-tested with synthetic records.
//
// Layout follows the PyTorch profiler: GPU work on pid = device, tid = stream;
// API calls, syncs and NVTX ranges on pid = process, tid = system thread id.
// NVTX push/pop and start/end ranges become "user_annotation" events; GPU work
// is tied to the launching call by its correlation id.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/record_kinds.h"
#include "trace/trace.h"

namespace attnprof::capture {

class ActivityConverter {
 public:
  // `process_id` is the pid written on syncs (their records name no process).
  explicit ActivityConverter(std::uint32_t kinds = kAllKinds, std::int64_t process_id = 0)
      : kinds_(kinds), process_id_(process_id) {}

  // Converts one record; records of kinds not asked for, or not understood,
  // are counted in skipped() and otherwise ignored.
  void add(const CUpti_Activity& record);
  // A runtime (or `driver`) call seen by a CUPTI callback instead of an activity record: the same
  // event a CUpti_ActivityAPI record of it gives. Calls not in api_calls.cpp are ignored.
  void add_call(bool driver, std::uint32_t cbid, std::uint32_t correlation, std::int64_t start_ns, std::int64_t end_ns,
                std::int64_t pid, std::int64_t tid);

  // Events converted so far. Open NVTX ranges are kept back (their end may
  // still come) unless `close_open_ranges`, which ends them at the latest
  // timestamp seen. The converter is left empty except for open ranges.
  Trace take(bool close_open_ranges);

  std::int64_t skipped() const { return skipped_; }

 private:
  struct OpenRange {
    std::int64_t start_ns;
    std::int64_t pid;
    std::int64_t tid;
    StringId name;
  };
  template <typename Record>
  void add_gpu(EventKind kind, const Record& r, std::string_view name, GpuArgs args);
  void add_kernel(const CUpti_ActivityKernel10& k);
  void add_memcpy(const CUpti_ActivityMemcpy6& m);
  void add_memset(const CUpti_ActivityMemset4& m);
  void add_api(const CUpti_ActivityAPI& a, bool driver);
  void add_sync(const CUpti_ActivitySynchronization2& s);
  void add_marker(const CUpti_ActivityMarker2& m);
  void seen(std::int64_t ts_ns);
  StringId intern(std::string_view s) { return trace_.strings.intern(s); }

  std::uint32_t kinds_;
  std::int64_t process_id_;
  Trace trace_;
  std::int64_t skipped_ = 0;
  std::int64_t latest_ns_ = 0;
  std::unordered_map<std::uint32_t, OpenRange> open_ranges_;  // by marker id
  // Demangled kernel names by CUPTI's name pointer, which all records of a kernel share; with the
  // mangled name, checked on each hit, in case a module was unloaded and its memory reused.
  struct KernelName {
    std::string mangled, demangled;
  };
  std::unordered_map<const char*, KernelName> kernel_names_;
  // Synchronizing calls' threads by correlation id (sync records name no thread), with the take in
  // which each was seen: a sync record may come several takes after its call, or before it. Sync
  // events whose call has not come are held back (their name kept as text) for up to kSyncWait
  // takes; calls unmatched as long are forgotten, so a long recording keeps only recent ones.
  static constexpr std::uint64_t kSyncWait = 30;
  struct SyncCall {
    std::int64_t tid;
    std::uint64_t take;
  };
  struct HeldSync {
    Event event;
    std::string name;
    std::uint64_t since;
  };
  std::unordered_map<std::uint32_t, SyncCall> sync_call_threads_;
  std::vector<HeldSync> held_syncs_;
  std::uint64_t takes_ = 0;
};

// "Memcpy HtoD (Pinned -> Device)", as the PyTorch profiler names copies.
std::string memcpy_name(std::uint8_t copy_kind, std::uint8_t src_kind, std::uint8_t dst_kind);
// "Memset (Device)".
std::string memset_name(std::uint16_t memory_kind);

}  // namespace attnprof::capture
