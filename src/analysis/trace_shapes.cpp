#include "analysis/trace_shapes.h"

#include <algorithm>
#include <tuple>

namespace attnprof {

namespace {

// A softmax kernel of the call that computes in fp32 while the call's inputs are 16-bit:
// PyTorch's softmax kernels name their input type first (softmax_warp_forward<float, ...>,
// cunn_SoftMaxForward<4, float, ...>).
bool softmax_in_fp32(const AttentionCall& c, const TraceIndex& index) {
  if (c.precision != Precision::BF16 && c.precision != Precision::FP16) return false;
  for (const std::size_t a : c.activities) {
    const std::string_view name = index.name(index.activities()[a]);
    const std::size_t at = name.find("oftMaxForward");
    const std::size_t warp = name.find("softmax_warp_forward<");
    if (warp != std::string_view::npos) return name.substr(warp + 21).starts_with("float");
    if (at != std::string_view::npos) {
      const std::size_t open = name.find('<', at);
      if (open == std::string_view::npos) continue;
      std::string_view args = name.substr(open + 1);
      if (!args.empty() && args.front() >= '0' && args.front() <= '9') args = args.substr(args.find(' ') + 1);
      return args.starts_with("float");
    }
  }
  return false;
}

}  // namespace

TraceShapes trace_shapes(const AttentionView& view, const TraceIndex& index) {
  TraceShapes out;
  // Adds call c to x: its calls, time and implementation (the first call's fields describe x).
  const auto add = [&index](TraceShape& x, const AttentionCall& c) {
    if (x.calls == 0) {
      x.precision = c.precision;
      x.impl = c.impl;
      x.family = c.family;
      x.fp32_softmax = c.impl == AttentionImpl::Unfused && softmax_in_fp32(c, index);
      x.dropout = c.dropout.value_or(c.dropout_pass ? kDefaultDropout : 0.0);
      x.dropout_assumed = c.dropout_pass && !c.dropout;
      for (const std::size_t a : c.activities) {
        const KernelOp op = index.activities()[a].cls.op;
        x.mask_in_call |= op == KernelOp::Add || op == KernelOp::MaskedFill || op == KernelOp::Where;
      }
    }
    ++x.calls;
    x.kernel_ns += c.kernel_ns;
    std::string impl(to_string(c.impl));
    if (c.impl == AttentionImpl::Fused && !c.family.empty()) impl += " (" + std::string(c.family) + ")";
    if (std::find(x.implementation_list.begin(), x.implementation_list.end(), impl) == x.implementation_list.end()) {
      x.implementation_list.push_back(impl);
      x.implementations += (x.implementations.empty() ? "" : " + ") + impl;
    }
  };
  for (const AttentionCall& c : view.calls) {
    if (c.pass != AttentionPass::Forward) continue;
    if (!c.shape.known() || c.shape.from == ShapeFrom::QkBmm) {
      ++(c.shape.known() ? out.calls_batch_x_heads : out.calls_without_shape);
      if (out.unshaped.calls == 0) {  // what is known of it
        out.unshaped.shape = c.shape;
        out.unshaped.causal_known = c.shape.causal.has_value() || c.causal_mask;
        out.unshaped.causal = c.shape.causal.value_or(false) || c.causal_mask;
      }
      add(out.unshaped, c);
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
    add(*it, c);
  }
  std::stable_sort(out.shapes.begin(), out.shapes.end(),
                   [](const TraceShape& a, const TraceShape& b) { return a.kernel_ns > b.kernel_ns; });
  return out;
}

}  // namespace attnprof
