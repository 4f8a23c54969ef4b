// A diagnosis rule: a small function from the analysed trace to zero or more
// findings. Every rule is registered once in rules.cpp.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace attnprof {

struct RuleContext {
  const TraceIndex& index;
  const DeviceSummary& device;
  const GroupStats& group;         // the rule runs once per region group
  const AttentionView& attention;  // every attention call of the trace
  bool in_attention(std::size_t activity) const { return attention.in_attention(activity); }
  const AttentionCall* call_of(std::size_t activity) const {
    const std::int32_t c = attention.call_of[activity];
    return c == kNone ? nullptr : &attention.calls[static_cast<std::size_t>(c)];
  }
  const Trace& trace() const { return index.trace(); }
  // The activities of one instance, in GPU order.
  const GpuActivity& activity(std::size_t i) const { return index.activities()[i]; }
  const Event& event(std::size_t i) const { return index.event(activity(i)); }
};

using Rule = void (*)(const RuleContext&, std::vector<Finding>&);

struct RuleEntry {
  std::string_view id;
  Rule run;
  std::string_view summary;  // one line, for `doctor --help`
};
std::span<const RuleEntry> all_rules();

// Shared by the rules: fills time, share, instances and severity of `f`.
void set_cost(Finding& f, const RuleContext& ctx, std::int64_t time_ns, int instances);
// Splits `activities` into those inside attention calls and the rest.
struct ByScope {
  std::vector<std::size_t> attention, model;
};
// How many of the group's instances hold any of `activities`.
int instances_with(const RuleContext& ctx, const std::vector<std::size_t>& activities);
ByScope split_by_scope(const RuleContext& ctx, const std::vector<std::size_t>& activities);
// "the attention calls" / "the rest of the model", for titles.
std::string_view scope_words(Scope s);
// Adds one evidence row per distinct kernel name among `activities` (indices).
void add_kernel_evidence(Finding& f, const RuleContext& ctx, const std::vector<std::size_t>& activities);
std::string short_kernel_name(std::string_view name);
std::string format_ms(std::int64_t ns);
// "per fwd" for a repeated region, "in 'whole trace'" for a single one.
std::string per_instance(const RuleContext& ctx);
// `ns` summed over the group, as "1.234 ms per fwd".
std::string per_instance_ms(const RuleContext& ctx, std::int64_t ns);
// A count summed over the group, per instance ("{:g}": 30, 7.5).
std::string per_instance_count(const RuleContext& ctx, double count);
// Bytes as "12.3 MB".
std::string format_mb(double bytes);
// Calls counted by phase, per instance: "15 decode, 1 prefill" ("other" for calls of no phase).
std::string calls_by_phase(const RuleContext& ctx, const std::map<AttentionPhase, int>& phases);

}  // namespace attnprof
