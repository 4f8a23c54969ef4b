// A diagnosis rule: a small function from the analysed trace to zero or more
// findings. Every rule is registered once in rules.cpp.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace attnprof {

struct RuleContext {
  const Trace& trace;
  const TraceIndex& index;
  const DeviceSummary& device;
  const GroupStats& group;  // the rule runs once per region group
  // The activities of one instance, in GPU order.
  const GpuActivity& activity(std::size_t i) const { return index.activities()[i]; }
  const Event& event(std::size_t i) const { return index.event(activity(i)); }
};

using Rule = void (*)(const RuleContext&, std::vector<Finding>&);

struct RuleEntry {
  std::string_view id;
  Rule run;
};
std::span<const RuleEntry> all_rules();

// Shared by the rules: fills time, share, instances and severity of `f`.
void set_cost(Finding& f, const RuleContext& ctx, std::int64_t time_ns, int instances);
// Adds one evidence row per distinct kernel name among `activities` (indices).
void add_kernel_evidence(Finding& f, const RuleContext& ctx, const std::vector<std::size_t>& activities);
std::string short_kernel_name(std::string_view name);
std::string format_ms(std::int64_t ns);
// "per fwd" for a repeated region, "in 'whole trace'" for a single one.
std::string per_instance(const RuleContext& ctx);
// `ns` summed over the group, as "1.234 ms per fwd".
std::string per_instance_ms(const RuleContext& ctx, std::int64_t ns);

}  // namespace attnprof
