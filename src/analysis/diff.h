// Two analysed traces side by side: what changed between a trace taken before
// a fix and one taken after it. Everything is per step, so traces of different
// lengths compare: a step is one instance of the analysed regions (a profiler
// step, a record_function range; the whole trace when there are none).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace attnprof {

// One trace's attention of one pass, per step.
struct AttentionSide {
  bool present = false;
  std::string implementation;  // "sdpa-math", "fused (FlashAttention)", "unfused"; mixed: joined with " + "
  double calls_per_step = 0;
  double kernels_per_call = 0;
  double ms_per_call = 0;
  double ms_per_step = 0;
};

struct AttentionChange {
  AttentionPass pass = AttentionPass::Forward;
  AttentionSide before, after;
};

enum class FindingStatus : std::uint8_t { Fixed, New, Remaining };
std::string_view to_string(FindingStatus s);

// A finding (by id and scope) in either trace; times per step, -1 where absent.
struct FindingChange {
  std::string id;
  Scope scope = Scope::Model;
  FindingStatus status = FindingStatus::Remaining;
  double before_ms = -1;
  double after_ms = -1;
  std::string title;  // the after trace's title when it has the finding, else the before trace's
};

// Kernels of one category, per step.
struct CategoryChange {
  KernelCategory category = KernelCategory::Other;
  double before_kernels = 0, after_kernels = 0;
  double before_ms = 0, after_ms = 0;
};

// A region group of either trace, aligned by name; per instance.
struct RegionChange {
  std::string name;
  int before_instances = 0, after_instances = 0;  // 0: not in that trace
  double before_kernels = 0, after_kernels = 0;
  double before_busy_ms = 0, after_busy_ms = 0;
};

struct TraceSide {
  std::string label;
  std::string step;  // what a step is: the region group's name ("ProfilerStep", "fwd", "whole trace")
  int steps = 0;
  double busy_ms_per_step = 0;       // GPU busy time in the analysed regions
  double attention_ms_per_step = 0;  // kernel time of the attention calls
  double attention_ms_per_call = 0;  // the same per attention call (forward and backward), 0 without calls
  int gpu_kernels = 0;               // in the whole trace
  // The median step on the wall clock (doctor's step model): -1 where the trace has no CPU side to tell.
  double step_span_ms = -1;
  double step_busy_ms = -1;
  std::string step_bound;   // "gpu", "launch", "cpu", ...; "" where unknown
  std::string unsupported;  // the analysis's reason it cannot diagnose the trace
};

struct TraceDiff {
  TraceSide before, after;
  // False when the two traces' steps are different things (profiler steps against the whole
  // trace, 'fwd' ranges against profiler steps): per-step numbers then compare unlike things.
  bool steps_comparable = true;
  std::vector<RegionChange> regions;
  std::vector<AttentionChange> attention;  // forward first
  std::vector<FindingChange> findings;     // fixed, new, remaining; by time
  std::vector<CategoryChange> categories;  // by the larger of the two times
};

TraceDiff diff_analyses(const Analysis& before, const Analysis& after);

// The CI gate: a regression is the median step's span (StepTime) or the
// attention time per step (AttentionTime; per call when the steps are not
// comparable) grown by more than `max_growth_pct`, or a new attention
// finding. A trace that was not diagnosed (not CUDA, no GPU kernels) fails it
// too: the gate cannot vouch for what it could not read.
inline constexpr double kDefaultRegressionPct = 10.0;
enum class GateMetric : std::uint8_t { Auto, StepTime, AttentionTime };
std::string_view to_string(GateMetric m);
// Auto: step time where both traces have comparable steps with a CPU side, else attention time.
GateMetric resolve_gate_metric(const TraceDiff& d, GateMetric m);
struct GateVerdict {
  bool regression = false;
  GateMetric metric = GateMetric::AttentionTime;  // what was gated on (never Auto)
  std::vector<std::string> reasons;               // one line each
};
GateVerdict regression_gate(const TraceDiff& d, double max_growth_pct, GateMetric metric = GateMetric::Auto);

}  // namespace attnprof
