#include "analysis/trace_shapes.h"

#include <algorithm>
#include <tuple>

namespace attnprof {

TraceShapes trace_shapes(const AttentionView& view) {
  TraceShapes out;
  for (const AttentionCall& c : view.calls) {
    if (c.pass != AttentionPass::Forward) continue;
    if (!c.shape.known()) {
      ++out.calls_without_shape;
      continue;
    }
    if (c.shape.from == ShapeFrom::QkBmm) {
      ++out.calls_batch_x_heads;
      continue;
    }
    TraceShape s;
    s.shape = c.shape;
    if (s.shape.kv_heads <= 0) s.shape.kv_heads = s.shape.q_heads;
    s.precision = c.precision;
    s.causal_known = c.shape.causal.has_value() || c.causal_mask;
    s.causal = c.shape.causal.value_or(false) || c.causal_mask;
    const auto key = [](const TraceShape& x) {
      return std::tuple(x.shape.batch, x.shape.q_heads, x.shape.kv_heads, x.shape.q_len, x.shape.kv_len,
                        x.shape.head_dim, x.causal, x.causal_known, x.precision);
    };
    auto it = std::find_if(out.shapes.begin(), out.shapes.end(), [&](const TraceShape& x) { return key(x) == key(s); });
    if (it == out.shapes.end()) {
      out.shapes.push_back(s);
      it = std::prev(out.shapes.end());
    }
    ++it->calls;
    it->kernel_ns += c.kernel_ns;
    std::string impl(to_string(c.impl));
    if (c.impl == AttentionImpl::Fused && !c.family.empty()) impl += " (" + std::string(c.family) + ")";
    if (std::find(it->implementation_list.begin(), it->implementation_list.end(), impl) ==
        it->implementation_list.end()) {
      it->implementation_list.push_back(impl);
      it->implementations += (it->implementations.empty() ? "" : " + ") + impl;
    }
  }
  std::stable_sort(out.shapes.begin(), out.shapes.end(),
                   [](const TraceShape& a, const TraceShape& b) { return a.kernel_ns > b.kernel_ns; });
  return out;
}

}  // namespace attnprof
