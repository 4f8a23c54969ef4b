#include "analysis/trace_shapes.h"

#include "analysis/kernel_shapes.h"

#include <algorithm>
#include <tuple>

namespace attnprof {

namespace {

// A softmax kernel of the call that writes fp32 while the call's inputs are 16-bit: softmax(x,
// dtype=torch.float32). PyTorch's softmax kernels name their output type: softmax_warp_forward<input,
// output, acc, ...> (bf16: <float, float, float> after an upcast copy; fp16: <c10::Half, float, float>,
// the cast folded in), cunn_SoftMaxForward[Smem]<ILP, scalar, acc, output, ...> and
// cunn_SoftMaxForwardReg<scalar, acc, output, ...>.
bool softmax_in_fp32(const AttentionCall& c, const TraceIndex& index) {
  if (c.precision != Precision::BF16 && c.precision != Precision::FP16) return false;
  for (const std::size_t a : c.activities) {
    const std::string_view name = index.name(index.activities()[a]);
    if (const auto args = kernel_template_args(name, "softmax_warp_forward<"); args.size() >= 2)
      return args[1] == "float";
    for (const std::string_view templ :
         {"cunn_SoftMaxForward<", "cunn_SoftMaxForwardSmem<", "cunn_SoftMaxForwardReg<"}) {
      const auto args = kernel_template_args(name, templ);
      if (args.empty()) continue;
      const std::size_t out = !args[0].empty() && args[0].front() >= '0' && args[0].front() <= '9' ? 3 : 2;
      return args.size() > out && args[out] == "float";
    }
  }
  return false;
}

}  // namespace

TraceShapes trace_shapes(const AttentionView& view, const TraceIndex& index, const std::vector<char>* include) {
  TraceShapes out;
  out.graph_captures = view.graph_captures;
  // What one call says of what the replay must run: its shape (as far as known), precision,
  // causality, implementation, softmax width, dropout and mask. Calls that differ in any of these
  // are different shapes to replay.
  const auto describe = [&index](const AttentionCall& c) {
    TraceShape x;
    x.shape = c.shape;
    x.precision = c.precision;
    x.causal_known = c.shape.causal.has_value() || c.causal_mask;
    x.causal = c.shape.causal.value_or(false) || c.causal_mask;
    x.impl = c.impl;
    x.family = c.family;
    x.fp32_softmax = c.impl == AttentionImpl::Unfused && softmax_in_fp32(c, index);
    x.dropout = c.dropout.value_or(c.dropout_pass ? kDefaultDropout : 0.0);
    x.dropout_assumed = c.dropout_pass && !c.dropout;
    x.mask_in_call = c.mask_pass;
    return x;
  };
  // Adds call c to x: its calls, time and implementation.
  const auto add = [](TraceShape& x, const AttentionCall& c) {
    ++x.calls;
    x.graph_calls += c.graph_replay;
    x.kernel_ns += c.kernel_ns;
    std::string impl(to_string(c.impl));
    if (c.impl == AttentionImpl::Fused && !c.family.empty()) impl += " (" + std::string(c.family) + ")";
    if (std::find(x.implementation_list.begin(), x.implementation_list.end(), impl) == x.implementation_list.end()) {
      x.implementation_list.push_back(impl);
      x.implementations += (x.implementations.empty() ? "" : " + ") + impl;
    }
  };
  const auto key = [](const TraceShape& x) {  // a decode shape's KV length is its calls' median, not a key
    return std::tuple(x.shape.batch, x.shape.q_heads, x.shape.kv_heads, x.shape.q_len,
                      x.decode ? std::int64_t{-1} : x.shape.kv_len, x.shape.head_dim, x.causal, x.causal_known,
                      x.precision, x.impl, x.family, x.fp32_softmax, x.dropout, x.decode);
  };
  // The forward calls still waiting for their backward, as indices into out.shapes (-1: unshaped).
  std::vector<std::ptrdiff_t> pending;
  for (std::size_t i = 0; i < view.calls.size(); ++i) {
    const AttentionCall& c = view.calls[i];
    if (include != nullptr && !(*include)[i]) continue;
    if (c.pass == AttentionPass::Backward) {
      if (pending.empty()) {
        ++out.backward_unpaired;
        continue;
      }
      TraceShape& x = pending.back() < 0 ? out.unshaped : out.shapes[static_cast<std::size_t>(pending.back())];
      pending.pop_back();
      ++x.backward_calls;
      x.backward_kernel_ns += c.kernel_ns;
      continue;
    }
    if (!c.shape.known() || c.shape.from == ShapeFrom::QkBmm) {
      ++(c.shape.known() ? out.calls_batch_x_heads : out.calls_without_shape);
      if (out.unshaped.calls == 0) out.unshaped = describe(c);  // the first such call's: what is known of them
      add(out.unshaped, c);
      pending.push_back(-1);
      continue;
    }
    TraceShape s = describe(c);
    // An unfused call's matmuls saw K and V repeated to every query head (repeat_kv, outside the call):
    // replayed as they ran, multi-head.
    if (s.shape.kv_heads <= 0 || c.impl == AttentionImpl::Unfused) s.shape.kv_heads = s.shape.q_heads;
    s.decode = reads_growing_cache(c.phase);
    auto it = std::find_if(out.shapes.begin(), out.shapes.end(), [&](const TraceShape& x) { return key(x) == key(s); });
    if (it == out.shapes.end()) it = out.shapes.insert(out.shapes.end(), s);
    add(*it, c);
    if (it->decode) it->kv_lens.push_back(c.shape.kv_len);
    pending.push_back(it - out.shapes.begin());
  }
  for (TraceShape& x : out.shapes) {
    if (!x.decode || x.kv_lens.empty()) continue;
    std::sort(x.kv_lens.begin(), x.kv_lens.end());
    x.kv_len_min = x.kv_lens.front();
    x.kv_len_max = x.kv_lens.back();
    x.shape.kv_len = x.kv_lens[(x.kv_lens.size() - 1) / 2];
  }
  std::stable_sort(out.shapes.begin(), out.shapes.end(),
                   [](const TraceShape& a, const TraceShape& b) { return a.kernel_ns > b.kernel_ns; });
  return out;
}

}  // namespace attnprof
