// K and V repeated to every query head before attention (kv_repeat.h).
#include "analysis/kv_repeat.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "analysis/kv_copies.h"

namespace attnprof {
namespace {

struct Repeat {
  std::int64_t batch, kv_heads, n_rep, kv_len, head_dim;
};

// [B, Hkv, n_rep, S, D], n_rep > 1.
std::optional<Repeat> from_5d(const std::vector<std::int64_t>& d) {
  if (d.size() != 5 || d[2] < 2 || !std::all_of(d.begin(), d.end(), tensor_dim)) return std::nullopt;
  return Repeat{d[0], d[1], d[2], d[3], d[4]};
}

// What repeat an op made, from its name and record_shapes inputs.
std::optional<Repeat> repeat_of(std::string_view op, const OpInputs& in) {
  if (op == "aten::reshape") {
    if (in.dims.empty()) return std::nullopt;
    // The n_rep dim an expand (stride 0), where the trace has strides: a 5-d reshape is not always a
    // repeat (Bloom reshapes its fused QKV projection from [B, S, H, 3, D]).
    if (!in.strides.empty() && (in.strides[0].size() != 5 || in.strides[0][2] != 0)) return std::nullopt;
    return from_5d(in.dims[0]);
  }
  if (!op.starts_with("triton_poi_") || op.find("expand") == std::string_view::npos) return std::nullopt;
  // Inductor's kernel takes its inputs and its output: repeat_kv's 5-d expand (the reshape left to a
  // view after it), or K/V and the repeated K/V side by side (the reshape fused in).
  for (const auto& d : in.dims)
    if (auto r = from_5d(d)) return r;
  for (const auto& a : in.dims)
    for (const auto& b : in.dims)
      if (a.size() == 4 && b.size() == 4 && std::all_of(a.begin(), a.end(), tensor_dim) &&
          std::all_of(b.begin(), b.end(), tensor_dim) && a[0] == b[0] && a[2] == b[2] && a[3] == b[3] && b[1] > a[1] &&
          b[1] % a[1] == 0)
        return Repeat{a[0], a[1], b[1] / a[1], a[2], a[3]};
  return std::nullopt;
}

// Whether a call reads K/V of the repeat's result, [B, Hkv * n_rep, S, D].
bool reads(const AttentionCall& c, const Repeat& r) {
  const AttentionShape& s = c.shape;
  if (c.pass != AttentionPass::Forward || !s.known() || s.kv_len != r.kv_len || s.head_dim != r.head_dim) return false;
  const std::int64_t heads = r.kv_heads * r.n_rep;
  // An SDPA op's K/V heads are its own inputs': the repeated count, not the KV heads (those read once).
  if (s.from == ShapeFrom::AttentionOp) return s.batch == r.batch && s.q_heads == heads && s.kv_heads == heads;
  // An unfused call's QK^T: [B, H, ...] (aten::matmul), or batch x heads in one (aten::bmm).
  return (s.batch == r.batch && s.q_heads == heads) || (s.q_heads == 1 && s.batch == r.batch * heads);
}

}  // namespace

std::vector<KvRepeat> find_kv_repeats(const TraceIndex& index, const AttentionView& view) {
  std::vector<KvRepeat> out;
  if (!index.has_cpu_ops() || view.calls.empty()) return out;
  const Trace& t = index.trace();
  FirstWrites written;
  for (std::size_t i = 0; i < index.activities().size(); ++i) {
    if (index.event(index.activities()[i]).kind != EventKind::Kernel) continue;
    // The nearest op around its launch that says a repeat.
    std::optional<Repeat> rep;
    const std::int32_t r = launching_op(index, i, [&](const CpuRange& range) {
      const OpInputs* in = range.kind == EventKind::CpuOp ? t.op_inputs_of(range.event) : nullptr;
      return in != nullptr && (rep = repeat_of(index.name(range), *in)).has_value();
    });
    if (r == kNone) continue;
    // The call it feeds: the one whose kernels it runs among, else the next forward call on its stream.
    const auto next = std::upper_bound(view.calls.begin(), view.calls.end(), i,
                                       [](std::size_t a, const AttentionCall& c) { return a < c.activities.front(); });
    std::optional<std::size_t> fed;
    if (view.in_attention(i))
      fed = static_cast<std::size_t>(view.call_of[i]);
    else if (next != view.calls.begin() && std::prev(next)->activities.back() > i)
      fed = static_cast<std::size_t>(std::prev(next) - view.calls.begin());
    else
      fed = next_forward_call(index, view, i);
    if (!fed || !reads(view.calls[*fed], *rep)) continue;
    KvRepeat k{i, r, *fed, rep->batch, rep->kv_heads, rep->n_rep, rep->kv_len, rep->head_dim, 0, view.in_attention(i)};
    if (written.first(index, i, r))
      k.bytes = bytes_of(view.calls[*fed], static_cast<double>(k.batch) * static_cast<double>(k.kv_heads) *
                                               static_cast<double>(k.n_rep) * static_cast<double>(k.kv_len) *
                                               static_cast<double>(k.head_dim));
    out.push_back(k);
  }
  return out;
}

}  // namespace attnprof
