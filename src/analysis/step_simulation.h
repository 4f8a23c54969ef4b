// What-if replay of a trace's timeline: the CPU's host calls in their order,
// each GPU activity started when its launch, its stream and the GPU work it
// waited on allow, host synchronizations waiting for the GPU. Replayed as
// recorded, it reproduces the trace's steps; replayed with a change (GPU work
// made shorter, an attention call's CPU ops and kernels replaced by one fused
// call's), the difference of the two replays is what the change is worth on
// the wall clock, whatever bounds the step: a step bound by its CPU gains
// little from shorter kernels, a launch-bound one gains the CPU time of the
// launches it no longer makes. (The method of Daydream, Zhu et al., ATC 2020,
// on a profiler trace.)
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/host_calls.h"
#include "analysis/regions.h"
#include "analysis/trace_index.h"

namespace attnprof {

// One stretch of the CPU timeline and its GPU work replaced: the CPU time
// [from, to) takes `cpu_ns` instead, the `removed` activities do not run, and
// one activity of `gpu_ns` runs on `stream` in their place (none when gpu_ns is 0).
struct Replacement {
  std::int64_t from = 0;
  std::int64_t to = 0;
  std::int64_t cpu_ns = 0;
  std::vector<std::size_t> removed;  // indices into TraceIndex::activities()
  std::int64_t gpu_ns = 0;
  std::int64_t stream = -1;
};

struct Change {
  std::vector<Replacement> replacements;               // disjoint CPU intervals
  std::vector<std::pair<std::size_t, double>> scaled;  // activity, factor on its duration
};

struct ReplayedStep {
  std::int64_t span_ns = 0;
  std::int64_t busy_ns = 0;
};

class StepReplay {
 public:
  StepReplay(const TraceIndex& index, const HostCalls& host, const RegionGroup& group, std::int64_t launch_latency_ns);
  // The group's instances replayed with `change` applied (an empty change: as recorded).
  std::vector<ReplayedStep> run(const Change& change) const;

 private:
  const TraceIndex& index_;
  const HostCalls& host_;
  const RegionGroup& group_;
  std::int64_t latency_;
  std::vector<std::int64_t> stream_;       // by activity
  std::vector<std::int32_t> waited_on_;    // by activity: the activity it waited for on another stream, or kNone
  std::vector<std::int64_t> latency_of_;   // by activity: from its launch to its start when nothing held it
  std::vector<std::int32_t> instance_of_;  // by activity: the group's instance holding it, or kNone
  LaunchedBy launched_;                    // by host call: the activities it launched
};

// The median of `v` (0 when empty); v is taken by value.
std::int64_t median_of(std::vector<std::int64_t> v);

}  // namespace attnprof
