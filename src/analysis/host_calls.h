// The CPU side of a trace as the step-time model reads it: every runtime and
// driver call in start order (launches, host synchronizations, copies, the
// rest), and the CPU ranges of host synchronizations and communication ops.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/trace_index.h"

namespace attnprof {

enum class HostCallKind : std::uint8_t { Launch, Sync, Other };

struct HostCall {
  std::int64_t ts = 0;
  std::int64_t end = 0;
  std::int32_t event = 0;  // index into Trace::events
  HostCallKind kind = HostCallKind::Other;
  bool memcpy = false;  // a cudaMemcpy* call (its copy is GPU activity launched by it)
};

using Interval = std::pair<std::int64_t, std::int64_t>;

struct HostCalls {
  std::vector<HostCall> calls;                  // by start time
  std::vector<std::int32_t> call_of;            // by activity index: its launch call (index into calls), or kNone
  std::vector<Interval> sync_ops;               // the outermost CPU ops around host synchronizations, merged
  std::vector<Interval> comm_ranges;            // CPU ranges of communication (c10d::, gloo, nccl ops), merged
  std::vector<std::string_view> sync_op_names;  // distinct names of the ops above, as the trace spells them
  bool has_cpu_ops = false;
};

HostCalls host_calls(const TraceIndex& index);

// The GPU activities each runtime call launched: HostCalls::call_of inverted.
class LaunchedBy {
 public:
  explicit LaunchedBy(const HostCalls& host);
  std::span<const std::size_t> operator()(std::size_t call) const {
    return {acts_.data() + first_[call], first_[call + 1] - first_[call]};
  }

 private:
  std::vector<std::size_t> first_;  // CSR offsets into acts_, by call
  std::vector<std::size_t> acts_;
};

// Host synchronizations, copies and communication by name (the trace's spelling).
bool is_sync_call(std::string_view runtime_call);
bool is_memcpy_call(std::string_view runtime_call);
bool is_comm_range(std::string_view cpu_range);

// Time of [from, to) covered by `merged` (sorted, disjoint intervals).
std::int64_t covered(const std::vector<Interval>& merged, std::int64_t from, std::int64_t to);
// Sorts and merges overlapping intervals in place.
void merge_intervals(std::vector<Interval>& v);

}  // namespace attnprof
