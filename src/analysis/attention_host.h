// Attention calls whose op spent far longer on the host than the trace's other calls of the same
// implementation: a cuDNN execution plan built for a new shape (PyTorch's cuDNN attention builds and
// caches one per shape, ~40 ms on an H100 host), a first call's setup. The attention-host rule reports
// them; the fix plan replays the step with their op's host time at the typical call's.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/attention.h"
#include "analysis/trace_index.h"

namespace attnprof {

struct SlowHostCall {
  std::size_t call;         // index into AttentionView::calls
  std::int32_t op;          // the call's outermost attention op (index into TraceIndex::ranges)
  std::int64_t host_ns;     // that op's duration
  std::int64_t typical_ns;  // the 10th percentile of the op durations of the calls of its implementation and pass
};

// A fused call is slow when its op lasts at least 1 ms and 20x the typical; trace order.
std::vector<SlowHostCall> slow_host_calls(const TraceIndex& index, const AttentionView& view);

}  // namespace attnprof
