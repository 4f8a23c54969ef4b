// What the KV-copy findings' detectors share (kv_copies.h).
#include "analysis/kv_copies.h"

#include <algorithm>

namespace attnprof {

std::optional<std::size_t> next_forward_call(const TraceIndex& index, const AttentionView& view, std::size_t i) {
  const Trace& t = index.trace();
  const auto stream = [&](std::size_t a) {
    const GpuArgs* g = t.args(index.event(index.activities()[a]));
    return g != nullptr ? g->stream : -1;
  };
  const auto next = std::upper_bound(view.calls.begin(), view.calls.end(), i,
                                     [](std::size_t a, const AttentionCall& c) { return a < c.activities.front(); });
  for (auto c = next; c != view.calls.end(); ++c)
    if (c->pass == AttentionPass::Forward && stream(c->activities.front()) == stream(i))
      return static_cast<std::size_t>(c - view.calls.begin());
  return std::nullopt;
}

double bytes_of(const AttentionCall& c, double elements) {
  return static_cast<double>(bytes_per_element(c.precision == Precision::Unknown ? Precision::BF16 : c.precision)) *
         elements;
}

}  // namespace attnprof
