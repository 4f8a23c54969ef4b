#include "analysis/attention_host.h"

#include <algorithm>
#include <map>
#include <utility>

#include "analysis/attention_ops.h"

namespace attnprof {

std::vector<SlowHostCall> slow_host_calls(const TraceIndex& index, const AttentionView& view) {
  constexpr std::int64_t kLeastNs = 1'000'000;
  constexpr std::int64_t kTimesTypical = 20;
  std::vector<SlowHostCall> calls;
  if (!index.has_cpu_ops()) return calls;
  std::map<std::pair<AttentionImpl, AttentionPass>, std::vector<std::int64_t>> durations;
  for (std::size_t c = 0; c < view.calls.size(); ++c) {
    const AttentionCall& call = view.calls[c];
    if (call.impl != AttentionImpl::Fused || call.activities.empty()) continue;
    // The outermost attention op around its first launch (aten::scaled_dot_product_attention over its
    // backend's op); none for kernels a compiled graph launches.
    std::int32_t op = kNone;
    for (std::int32_t r = index.activities()[call.activities.front()].range; r != kNone;
         r = index.ranges()[static_cast<std::size_t>(r)].parent) {
      const std::string_view name = index.name(index.ranges()[static_cast<std::size_t>(r)]);
      if (is_attention_op(name) || name == "attnprof::attention") op = r;
    }
    if (op == kNone) continue;
    const std::int64_t ns = index.event(index.ranges()[static_cast<std::size_t>(op)]).dur_ns;
    calls.push_back({c, op, ns, 0});
    durations[{call.impl, call.pass}].push_back(ns);
  }
  for (auto& [key, d] : durations) std::sort(d.begin(), d.end());
  std::vector<SlowHostCall> slow;
  for (SlowHostCall& s : calls) {
    const AttentionCall& call = view.calls[s.call];
    const std::vector<std::int64_t>& d = durations[{call.impl, call.pass}];
    s.typical_ns = d[d.size() / 10];
    if (s.host_ns >= kLeastNs && s.host_ns >= kTimesTypical * s.typical_ns) slow.push_back(s);
  }
  return slow;
}

}  // namespace attnprof
