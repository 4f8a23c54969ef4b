// The CPU ops around an unfused attention call that a fused call does without (attention_prep.h).
#include "analysis/attention_prep.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <span>
#include <unordered_map>
#include <utility>

namespace attnprof {
namespace {

constexpr std::string_view kBackwardPrefix = "autograd::engine::evaluate_function: ";

// The op's name without its autograd prefix and version digits ("CloneBackward0" -> "CloneBackward").
std::string_view bare(std::string_view name) {
  if (name.starts_with(kBackwardPrefix)) name.remove_prefix(kBackwardPrefix.size());
  while (!name.empty() && name.back() >= '0' && name.back() <= '9') name.remove_suffix(1);
  return name;
}

template <std::size_t N>
bool one_of(std::string_view name, const std::array<std::string_view, N>& names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

constexpr std::array<std::string_view, 27> kLayoutOps = {
    "aten::unsqueeze", "aten::squeeze",    "aten::expand",       "aten::expand_as",      "aten::reshape",
    "aten::view",      "aten::view_as",    "aten::_unsafe_view", "aten::_reshape_alias", "aten::transpose",
    "aten::permute",   "aten::t",          "aten::contiguous",   "aten::clone",          "aten::slice",
    "aten::select",    "aten::as_strided", "aten::flatten",      "aten::unflatten",      "aten::repeat_interleave",
    "aten::repeat",    "aten::movedim",    "aten::swapaxes",     "aten::alias",          "aten::detach",
    "aten::narrow",    "aten::expand_copy"};
constexpr std::array<std::string_view, 16> kLayoutBackward = {
    "CloneBackward",     "UnsafeViewBackward",       "ViewBackward",   "ReshapeAliasBackward",
    "TransposeBackward", "PermuteBackward",          "ExpandBackward", "UnsqueezeBackward",
    "SqueezeBackward",   "RepeatInterleaveBackward", "RepeatBackward", "AsStridedBackward",
    "TBackward",         "SelectBackward",           "SliceBackward",  "NarrowBackward"};

// The ops that decide a mask's entries, and those that join them (views, scalar fills, copies).
constexpr std::array<std::string_view, 25> kMaskCore = {
    "aten::le",          "aten::lt",          "aten::ge",          "aten::gt",           "aten::eq",
    "aten::ne",          "aten::where",       "aten::masked_fill", "aten::masked_fill_", "aten::triu",
    "aten::tril",        "aten::triu_",       "aten::tril_",       "aten::logical_and",  "aten::logical_or",
    "aten::logical_not", "aten::bitwise_and", "aten::bitwise_or",  "aten::bitwise_not",  "aten::__and__",
    "aten::__or__",      "aten::__iand__",    "aten::__ior__",     "aten::remainder",    "aten::floor_divide"};
constexpr std::array<std::string_view, 12> kMaskViews = {
    "aten::expand",  "aten::unsqueeze", "aten::view",       "aten::slice",  "aten::select",  "aten::index",
    "aten::reshape", "aten::squeeze",   "aten::as_strided", "aten::detach", "aten::detach_", "aten::lift_fresh"};
constexpr std::array<std::string_view, 10> kMaskJoins = {
    "aten::to",   "aten::_to_copy", "aten::empty", "aten::copy_", "aten::scalar_tensor",
    "aten::full", "aten::fill_",    "aten::zeros", "aten::ones",  "aten::full_like"};

constexpr std::array<std::string_view, 3> kMaskIndices = {"aten::arange", "aten::add", "aten::sub"};
// The views of repeat_kv's idiom before its copy (x[:, :, None].expand(...).reshape(...)).
constexpr std::array<std::string_view, 4> kRepeatViews = {"aten::unsqueeze", "aten::expand", "aten::slice",
                                                          "aten::index"};

bool is_mask_core(std::string_view n) { return one_of(n, kMaskCore); }
bool is_mask_join(std::string_view n) { return is_mask_core(n) || one_of(n, kMaskViews) || one_of(n, kMaskJoins); }

// Whether position `p` lies inside one of `runs` (sorted by first).
bool in_runs(std::size_t p, const std::vector<OpRun>& runs) {
  auto it = std::upper_bound(runs.begin(), runs.end(), p, [](std::size_t v, const OpRun& r) { return v < r.first; });
  return it != runs.begin() && p <= std::prev(it)->last;
}

// Without CPU ops, what a kernel does in building a mask, as its name tells: decides entries
// (comparisons of index ranges, where / masked_fill, triu / tril, logical and bitwise ops), joins
// them (fills, copies and casts, memcpy / memset), or neither.
enum class MaskPart : std::uint8_t { None, Decides, Joins };
MaskPart mask_part(const TraceIndex& index, std::size_t activity) {
  const KernelClass& k = index.activities()[activity].cls;
  if (k.op == KernelOp::Where || k.op == KernelOp::MaskedFill || k.op == KernelOp::TriangularMask)
    return MaskPart::Decides;
  const std::string_view n = index.name(index.activities()[activity]);
  const auto has = [&](std::string_view s) { return n.find(s) != std::string_view::npos; };
  if ((has("Compare") && has("Functor")) || has("logical_and") || has("logical_or") || has("logical_not") ||
      has("bitwise_and") || has("bitwise_or") || has("bitwise_not") || has("BitwiseAnd") || has("BitwiseOr") ||
      has("BitwiseNot"))
    return MaskPart::Decides;
  if (k.op == KernelOp::Fill || k.category == KernelCategory::CopyCast || k.category == KernelCategory::Memcpy ||
      k.category == KernelCategory::Memset)
    return MaskPart::Joins;
  return MaskPart::None;
}

}  // namespace

std::vector<MaskLaunches> find_mask_launches(const TraceIndex& index, const HostCalls& host,
                                             const LaunchedBy& launched_by, const AttentionView& view) {
  const auto& events = index.trace().events;
  const auto same_thread = [&](std::size_t x, std::size_t y) {
    const Event& ex = events[static_cast<std::size_t>(host.calls[x].event)];
    const Event& ey = events[static_cast<std::size_t>(host.calls[y].event)];
    return ex.pid == ey.pid && ex.tid == ey.tid;
  };
  // What launch call k does for a mask: decides (a kernel of it does), joins, or neither.
  const auto part_of = [&](std::size_t k) {
    const auto acts = launched_by(k);
    if (acts.empty()) return host.calls[k].kind == HostCallKind::Launch ? MaskPart::None : MaskPart::Joins;
    MaskPart part = MaskPart::Joins;
    for (std::size_t a : acts) {
      if (view.in_attention(a)) return MaskPart::None;
      const MaskPart m = mask_part(index, a);
      if (m == MaskPart::None) return MaskPart::None;
      if (m == MaskPart::Decides) part = MaskPart::Decides;
    }
    return part;
  };
  std::vector<MaskLaunches> out;
  for (std::size_t k = 0; k < host.calls.size(); ++k) {
    if (part_of(k) != MaskPart::Decides) continue;
    std::vector<std::size_t> run{k};
    std::size_t last = k;
    int decides = 1;
    for (std::size_t j = k + 1; j < host.calls.size(); ++j) {
      if (!same_thread(j, k)) continue;
      const MaskPart m = part_of(j);
      if (m == MaskPart::None) break;
      run.push_back(j);
      if (m == MaskPart::Decides) {
        last = j;
        ++decides;
      }
    }
    if (decides >= 2) {
      while (run.back() != last) run.pop_back();
      MaskLaunches m{std::move(run), kNone};
      // The next attention call, looked for among the next few thousand runtime calls (a mask is built
      // right before the forward's first layer; one that no attention follows soon is no call's).
      constexpr std::size_t kReach = 4096;
      const std::size_t end = std::min(host.calls.size(), last + 1 + kReach);
      for (std::size_t n = last + 1; n < end && m.next_call == kNone; ++n) {
        if (!same_thread(n, k)) continue;
        for (std::size_t a : launched_by(n))
          if (view.in_attention(a)) {
            m.next_call = view.call_of[a];
            break;
          }
      }
      out.push_back(m);
    }
    k = last;
  }
  return out;
}

bool is_layout_op(std::string_view name) {
  if (name.starts_with(kBackwardPrefix)) return one_of(bare(name), kLayoutBackward);
  return one_of(name, kLayoutOps);
}

OutermostOps::OutermostOps(const TraceIndex& index) : index_(index) {
  const auto& ranges = index.ranges();
  std::vector<std::int32_t> pos_of_range(ranges.size(), kNone);
  for (std::size_t r = 0; r < ranges.size(); ++r) {
    if (ranges[r].kind != EventKind::CpuOp) continue;
    bool outer = true;
    for (std::int32_t p = ranges[r].parent; p != kNone && outer; p = ranges[static_cast<std::size_t>(p)].parent)
      outer = ranges[static_cast<std::size_t>(p)].kind != EventKind::CpuOp;
    if (!outer) continue;
    const Event& e = index.event(ranges[r]);
    const auto key = std::make_pair(e.pid.value(), e.tid.value());
    const auto lane = lanes_.emplace(key, static_cast<std::uint32_t>(lanes_.size())).first->second;
    ops_.push_back({e.ts_ns, e.end_ns(), static_cast<std::int32_t>(r), lane});
  }
  std::sort(ops_.begin(), ops_.end(), [](const Op& a, const Op& b) {
    return a.lane != b.lane ? a.lane < b.lane : a.ts != b.ts ? a.ts < b.ts : a.range < b.range;
  });
  for (std::size_t i = 0; i < ops_.size(); ++i)
    pos_of_range[static_cast<std::size_t>(ops_[i].range)] = static_cast<std::int32_t>(i);
  const auto& acts = index.activities();
  op_of_.assign(acts.size(), kNone);
  first_.assign(ops_.size() + 1, 0);
  for (std::size_t a = 0; a < acts.size(); ++a) {
    const std::int32_t r = index.outermost_op(acts[a]);
    if (r == kNone) continue;
    op_of_[a] = pos_of_range[static_cast<std::size_t>(r)];
    if (op_of_[a] != kNone) ++first_[static_cast<std::size_t>(op_of_[a]) + 1];
  }
  for (std::size_t i = 0; i < ops_.size(); ++i) first_[i + 1] += first_[i];
  acts_.resize(static_cast<std::size_t>(first_.back()));
  std::vector<std::int32_t> fill(first_.begin(), first_.end() - 1);
  for (std::size_t a = 0; a < acts.size(); ++a)
    if (op_of_[a] != kNone) acts_[static_cast<std::size_t>(fill[static_cast<std::size_t>(op_of_[a])]++)] = a;
}

std::int32_t OutermostOps::holding(const Event& e) const {
  const auto found = lanes_.find(std::make_pair(e.pid.value(), e.tid.value()));
  if (found == lanes_.end()) return kNone;
  const std::uint32_t lane = found->second;
  const std::int64_t ts = e.ts_ns;
  // The last op on the lane starting at or before ts.
  const auto it = std::upper_bound(
      ops_.begin(), ops_.end(), std::make_pair(lane, ts),
      [](const auto& key, const Op& o) { return key.first != o.lane ? key.first < o.lane : key.second < o.ts; });
  if (it == ops_.begin()) return kNone;
  const Op& o = *std::prev(it);
  return o.lane == lane && ts <= o.end ? static_cast<std::int32_t>(std::prev(it) - ops_.begin()) : kNone;
}

BackwardNodes::BackwardNodes(const OutermostOps& ops) {
  // The start at the forward op that made a node, the finish at the node's evaluate_function.
  const Trace& t = ops.index().trace();
  std::unordered_map<std::int64_t, std::pair<std::int32_t, std::int32_t>> flows;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::Flow || (e.phase != 's' && e.phase != 'f') || t.strings.view(e.category) != "fwdbwd")
      continue;
    const std::int32_t op = ops.holding(e);
    if (op == kNone) continue;
    auto& f = flows.try_emplace(e.correlation, kNone, kNone).first->second;
    (e.phase == 's' ? f.first : f.second) = op;
  }
  for (const auto& [id, f] : flows)
    if (f.first != kNone && f.second != kNone && f.first != f.second)
      links_.emplace_back(static_cast<std::size_t>(f.first), static_cast<std::size_t>(f.second));
  std::sort(links_.begin(), links_.end());
}

std::vector<std::size_t> BackwardNodes::of(OpRun forward) const {
  std::vector<std::size_t> out;
  for (auto it = std::lower_bound(links_.begin(), links_.end(), std::make_pair(forward.first, std::size_t{0}));
       it != links_.end() && it->first <= forward.last; ++it)
    out.push_back(it->second);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::span<const std::size_t> OutermostOps::activities(std::size_t op) const {
  return {acts_.data() + first_[op], static_cast<std::size_t>(first_[op + 1] - first_[op])};
}

std::vector<std::optional<OpRun>> call_runs(const OutermostOps& ops, const std::vector<AttentionCall>& calls) {
  std::vector<std::optional<OpRun>> out(calls.size());
  for (std::size_t c = 0; c < calls.size(); ++c) {
    std::int32_t lo = kNone, hi = kNone;
    bool all = !calls[c].activities.empty();
    for (std::size_t act : calls[c].activities) {
      const std::int32_t o = ops.op_of(act);
      if (o == kNone) {
        all = false;
        break;
      }
      lo = lo == kNone ? o : std::min(lo, o);
      hi = hi == kNone ? o : std::max(hi, o);
    }
    if (all && ops.ops()[static_cast<std::size_t>(lo)].lane == ops.ops()[static_cast<std::size_t>(hi)].lane)
      out[c] = OpRun{static_cast<std::size_t>(lo), static_cast<std::size_t>(hi)};
  }
  return out;
}

OpRun widen_by_layout_copies(const OutermostOps& ops, OpRun call, const std::vector<OpRun>& others) {
  const auto& v = ops.ops();
  const std::uint32_t lane = v[call.first].lane;
  OpRun out = call;
  // Back over layout ops: as far as the earliest that copied (launched GPU work).
  for (std::size_t p = call.first; p > 0;) {
    --p;
    if (v[p].lane != lane || in_runs(p, others) || !is_layout_op(ops.name(p))) break;
    if (!ops.activities(p).empty()) out.first = p;
  }
  // ... and the views leading to that copy when they are repeat_kv's (unsqueeze, expand: no copy).
  if (out.first != call.first)
    while (out.first > 0 && v[out.first - 1].lane == lane && !in_runs(out.first - 1, others) &&
           one_of(ops.name(out.first - 1), kRepeatViews))
      --out.first;
  for (std::size_t p = call.last + 1; p < v.size(); ++p) {
    if (v[p].lane != lane || in_runs(p, others) || !is_layout_op(ops.name(p))) break;
    if (!ops.activities(p).empty()) out.last = p;
  }
  return out;
}

std::vector<MaskBuild> find_mask_builds(const OutermostOps& ops, const std::vector<OpRun>& calls) {
  const auto& v = ops.ops();
  std::vector<OpRun> sorted = calls;
  std::vector<std::size_t> order(calls.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return calls[a].first < calls[b].first; });
  for (std::size_t i = 0; i < order.size(); ++i) sorted[i] = calls[order[i]];
  std::vector<MaskBuild> out;
  for (std::size_t p = 0; p < v.size(); ++p) {
    if (!is_mask_core(ops.name(p)) || in_runs(p, sorted)) continue;
    // Forward over the mask's ops; it ends at its last deciding op.
    std::size_t last = p;
    int cores = 0;
    std::size_t q = p;
    for (; q < v.size() && v[q].lane == v[p].lane && !in_runs(q, sorted) && is_mask_join(ops.name(q)); ++q)
      if (is_mask_core(ops.name(q))) {
        last = q;
        ++cores;
      }
    std::size_t first = p;
    while (first > 0 && v[first - 1].lane == v[p].lane && !in_runs(first - 1, sorted) &&
           one_of(ops.name(first - 1), kMaskViews))
      --first;
    // The index ranges it compares, built just before it (aranges, offsets added): from the earliest
    // arange of the index ops before its views.
    for (std::size_t i = first;
         i > 0 && v[i - 1].lane == v[p].lane && !in_runs(i - 1, sorted) && one_of(ops.name(i - 1), kMaskIndices); --i)
      if (ops.name(i - 1) == "aten::arange") first = i - 1;
    if (cores >= 2) {
      MaskBuild m;
      m.run = {first, last};
      auto it = std::upper_bound(sorted.begin(), sorted.end(), last,
                                 [](std::size_t x, const OpRun& r) { return x < r.first; });
      if (it != sorted.end() && v[it->first].lane == v[p].lane)
        m.next_call = static_cast<std::int32_t>(order[static_cast<std::size_t>(it - sorted.begin())]);
      out.push_back(m);
    }
    p = std::max(p, last);
  }
  return out;
}

}  // namespace attnprof
