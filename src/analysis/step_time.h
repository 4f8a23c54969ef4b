// The step-time model: what bounds each region instance (a profiler step, a
// range, the whole trace) on the wall clock, from the trace alone. The step's
// span is split into GPU busy time and GPU idle time, and the idle time into
// its causes, read off what the CPU was doing while the GPU had nothing to run:
// launching (the GPU drains each kernel before the CPU issues the next), CPU
// work without launches, host synchronizations, host-device copies, waiting on
// communication. step_simulation.h replays the same timeline with a fix applied.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/host_calls.h"
#include "analysis/regions.h"
#include "analysis/trace_index.h"

namespace attnprof {

enum class IdleCause : std::uint8_t { Launch, Cpu, Sync, Copy, Comm, Other };
inline constexpr int kIdleCauses = 6;
std::string_view to_string(IdleCause c);
std::string_view describe(IdleCause c);  // "the CPU launching kernels one by one", for the report

// What sets the pace of a step: the GPU's own work, or one cause of its idle time.
enum class StepBound : std::uint8_t { Gpu, Launch, Cpu, Sync, Copy, Comm, None };
std::string_view to_string(StepBound b);
StepBound bound_of(IdleCause c);

struct StepTime {
  std::int64_t start_ns = 0;  // the instance's window on the wall clock (see step_windows)
  std::int64_t end_ns = 0;
  std::int64_t span_ns = 0;
  std::int64_t busy_ns = 0;                      // union of all GPU activity in the window
  std::int64_t idle_ns = 0;                      // span - busy
  std::array<std::int64_t, kIdleCauses> idle{};  // idle_ns split by cause
  std::int64_t comm_exposed_ns = 0;              // communication kernels with no other kernel running (inside busy)
  std::int64_t comm_ns = 0;       // communication on either side: its kernels and CPU ranges (gloo, c10d), their union
  std::int64_t copy_only_ns = 0;  // host<->device copies with no kernel running (inside busy)
  std::int64_t lead_in_ns = 0;    // from the window's start to its first GPU work (inside idle)
  int launches = 0;               // launch calls in the window
  int syncs = 0;                  // host synchronizations in the step's CPU range or idling its window
  StepBound bound = StepBound::None;
  std::int64_t cause_ns(IdleCause c) const { return idle[static_cast<std::size_t>(c)]; }
};

struct StepModel {
  std::vector<StepTime> steps;         // one per instance of the group, in its order
  std::size_t median = 0;              // the instance of median span (the one the report shows)
  bool has_launches = false;           // the trace has the CPU's launch calls (else causes are unknown)
  bool has_cpu_ops = false;            // ... and CPU ops (else host syncs are known only by their runtime calls)
  std::int64_t launch_latency_ns = 0;  // typical time from a launch call to its kernel's start on an idle GPU
  std::vector<std::string> unknowns;   // what the trace could not tell, in words
  std::vector<std::string> sync_ops;   // the CPU ops around its host synchronizations (aten::item, ...)
  const StepTime* median_step() const { return steps.empty() ? nullptr : &steps[median]; }
};

// The wall-clock window of each instance: from its start to the later of its
// end and the end of the GPU work launched in it, but never before the previous
// instance's window ends, so the windows of consecutive steps never overlap and
// add up to the wall time they cover.
std::vector<Interval> step_windows(const TraceIndex& index, const RegionGroup& group);

StepModel model_steps(const TraceIndex& index, const HostCalls& host, const RegionGroup& group);

}  // namespace attnprof
