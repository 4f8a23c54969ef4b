// Links in a trace: each GPU activity (kernel, memcpy, memset) to the runtime or
// driver call that launched it (same correlation id), and each launch to the
// CPU ranges (ATen ops, record_function / NVTX annotations) that enclose it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/kernel_classifier.h"
#include "trace/trace.h"

namespace attnprof {

inline constexpr std::int32_t kNone = -1;

// A CPU range: an ATen op, a user annotation or a profiler step. Its name and
// kind are copies of the event's: region selection reads them for every range,
// and a trace has millions of ranges, each a cache line away from the next.
struct CpuRange {
  std::uint32_t event;          // index into Trace::events
  std::int32_t parent = kNone;  // enclosing range on the same thread
  StringId name = kNoString;
  EventKind kind = EventKind::Other;
};
static_assert(sizeof(CpuRange) == 16);

struct GpuActivity {
  std::size_t event;            // index into Trace::events
  std::int32_t launch = kNone;  // index into Trace::events of the launching API call
  std::int32_t range = kNone;   // innermost CPU range around the launch (index into ranges)
  KernelClass cls;              // classification (memcpy/memset get their own category)
};

class TraceIndex {
 public:
  explicit TraceIndex(const Trace& trace);

  const Trace& trace() const { return *trace_; }
  const std::vector<CpuRange>& ranges() const { return ranges_; }
  const std::vector<GpuActivity>& activities() const { return activities_; }  // by GPU start time
  const Event& event(const GpuActivity& a) const { return trace_->events[a.event]; }
  const Event& event(const CpuRange& r) const { return trace_->events[r.event]; }
  std::string_view name(const GpuActivity& a) const { return trace_->name(event(a)); }
  std::string_view name(const CpuRange& r) const { return trace_->strings.view(r.name); }
  // True when `range` or one of its ancestors is named `op`.
  bool under(const GpuActivity& a, std::string_view op) const;
  // The outermost ATen op (cpu_op) enclosing the activity's launch; kNone when none.
  std::int32_t outermost_op(const GpuActivity& a) const;
  // Timestamp used to place an activity in CPU ranges: its launch's, else its own.
  std::int64_t launch_time(const GpuActivity& a) const;
  bool has_cpu_ops() const { return has_cpu_ops_; }
  // Whether activity i ran in a CUDA graph's replay: its launch is a cudaGraphLaunch (cuGraphLaunch).
  bool graph_replayed(std::size_t i) const;

  // CUDA graph replays. A cudaGraphLaunch's kernels ran ops captured earlier (between
  // cudaStreamBeginCapture and cudaStreamEndCapture, launches with no GPU work of their own); where
  // the trace holds the capture, a replay's i-th node (kernel, memcpy, memset, by GPU start, all on one
  // stream) is the capture's i-th launch: for the capture's own replay (the first graph launch on its
  // thread after it, before it captures again, with its node kinds), and for a later replay that runs
  // its nodes alike (the same kernels, grids, blocks, copy sizes) when every capture before it whose
  // own replay ran alike ran the same ops on the same recorded inputs (match_captures in the .cpp).
  // The innermost CPU range around activity i's capture-time launch; kNone when activity i is no
  // replayed node or its capture is not in the trace (or not told apart).
  std::int32_t capture_range(std::size_t i) const { return i < capture_ranges_.size() ? capture_ranges_[i] : kNone; }
  struct GraphReplays {
    int captures = 0;  // capture windows in the trace
    int replays = 0;   // cudaGraphLaunch calls with GPU work in the trace
    int matched = 0;   // of which, with their nodes matched to a capture
  };
  const GraphReplays& graph_replays() const { return graph_replays_; }

 private:
  class Builder;
  const Trace* trace_;
  std::vector<CpuRange> ranges_;
  std::vector<GpuActivity> activities_;
  std::vector<std::int32_t> capture_ranges_;  // by activity; empty when no replay matched
  GraphReplays graph_replays_;
  bool has_cpu_ops_ = false;
};

}  // namespace attnprof
