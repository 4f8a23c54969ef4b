// Finds attention calls (see attention.h). Three passes over the GPU
// activities, each on what the ones before left unassigned:
//  1. CPU ops: every activity launched under one aten::scaled_dot_product_* op
//     (or a backend's backward op) is one call; fused when a fused kernel ran.
//  2. Fused kernels without such an op: a main kernel with its helpers
//     (FlashAttention's split-KV combine, dO.O and dQ conversion; cuDNN's).
//  3. Unfused chains, anchored on a softmax: the QK^T GEMM before it and the
//     PV GEMM after it, with only elementwise, mask and cast kernels between;
//     backward, on a softmax backward with its GEMMs on both sides.
// What the CPU ops say (attention ops, batched matmuls, record_shapes) is
// attention_ops.h's; this file walks the kernels.
#include "analysis/attention.h"

#include <algorithm>
#include <optional>

#include "analysis/attention_ops.h"
#include "analysis/attention_phases.h"
#include "analysis/attention_prep.h"
#include "analysis/graph_captures.h"
#include "analysis/kernel_shapes.h"
#include "common/text_search.h"

namespace attnprof {
namespace {

// An FP32 CUDA-core GEMM against the same GEMM in bf16 on tensor cores, as
// measured on an H200 in the study's traces (QK^T 1034 vs 162 us, PV 825 vs
// 147 us: 6.4x and 5.6x; examples/traces/sdpa_math.json vs manual.json).
constexpr double kFp32FfmaSlowdown = 6.0;

std::int64_t gemm_as_16bit(const KernelClass& c, std::int64_t ns) {
  // Only FP32 FFMA GEMMs: a 16-bit gemv on CUDA cores is bandwidth-bound, not 6x slower.
  if (c.unit == MathUnit::CudaCore && c.precision == Precision::FP32)
    return static_cast<std::int64_t>(static_cast<double>(ns) / kFp32FfmaSlowdown);
  if (c.precision == Precision::TF32) return ns / 2;  // TF32 tensor cores run at half the 16-bit rate
  return ns;
}

bool fused_backward(std::string_view n) {
  return has(n, "bwd") || has(n, "Bwd") || has(n, "bprop") || has(n, "Backward") || has(n, "cutlassB") ||
         has(n, "dot_do_o") || has(n, "fused_bwd_convert") || has(n, "convert_dq") || has(n, "ConvertdQ") ||
         has(n, "reduce_head") || has(n, "backward");
}

// Kernels that may sit inside an unfused attention chain between its GEMMs
// and the softmax: scale, mask, casts, dropout, the safe-softmax checks.
bool chain_kernel(const KernelClass& c, std::string_view name) {
  switch (c.category) {
    case KernelCategory::Elementwise:
    case KernelCategory::FillMask:
    case KernelCategory::CopyCast:
    case KernelCategory::Memset:
      return true;
    case KernelCategory::Memcpy:  // an out-of-place masked_fill copies the scores first; a host copy is no link
      return has(name, "DtoD");
    case KernelCategory::Softmax:  // a softmax split over kernels (Inductor's reduction + pointwise)
      return c.op == KernelOp::Softmax;
    case KernelCategory::Reduction:  // the safe-softmax checks; a row max subtracted before the softmax
      return c.op == KernelOp::AllReduce || has(name, "MaxOps<");
    default:
      return false;
  }
}

// The prologue SDPA's math backend runs before QK^T (upcasts, scaling, the
// causal mask build): FP32 elementwise work and mask kernels only, so that a
// 16-bit rotary embedding or a projection before attention is never taken in.
bool math_prologue_kernel(const KernelClass& c, std::string_view n) {
  if (c.op == KernelOp::CastToFp32 || c.category == KernelCategory::FillMask) return true;
  if (c.category != KernelCategory::Elementwise && c.category != KernelCategory::CopyCast) return false;
  const bool fp32 = has(n, "<float") || has(n, "(float)") || has(n, "float, float");
  return fp32 && !has(n, "BFloat16") && !has(n, "Half");
}

class Finder {
 public:
  Finder(const TraceIndex& index, const CapturedShapes* captured)
      : index_(index), t_(index.trace()), ops_(index), captured_(captured) {
    view_.call_of.assign(index.activities().size(), kNone);
    // Activities per GPU stream, in start order: chains are looked for on one
    // stream. Streams are few and consecutive activities mostly share one.
    std::vector<std::pair<std::int64_t, std::int64_t>> keys;
    std::size_t last = 0;
    for (std::size_t i = 0; i < index.activities().size(); ++i) {
      const GpuArgs* g = t_.args(index.event(index.activities()[i]));
      const std::pair<std::int64_t, std::int64_t> key{g ? g->device : -1, g ? g->stream : -1};
      if (keys.empty() || keys[last] != key) {
        last = static_cast<std::size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
        if (last == keys.size()) {
          keys.push_back(key);
          streams_.emplace_back();
        }
      }
      streams_[last].push_back(i);
    }
  }

  AttentionView run() {
    view_.graph_captures = index_.graph_replays().captures > 0;
    by_cpu_ops();
    for (const auto& seq : streams_) fused_by_kernels(seq);
    for (const auto& seq : streams_) unfused_forward(seq);
    const AttentionImpl backward_impl = unfused_backward_impl();
    for (const auto& seq : streams_) unfused_backward(seq, backward_impl);
    finish();
    return std::move(view_);
  }

 private:
  const KernelClass& cls(std::size_t i) const { return index_.activities()[i].cls; }
  const Event& event(std::size_t i) const { return index_.event(index_.activities()[i]); }
  std::string_view name(std::size_t i) const { return t_.name(event(i)); }
  bool free(std::size_t i) const { return view_.call_of[i] == kNone; }
  // fused_role by name id: kernel names are long, and a trace repeats a few thousand times.
  FusedRole role(std::size_t i) {
    const StringId n = event(i).name;
    if (n >= roles_.size()) roles_.resize(n + 1, -1);
    if (roles_[n] < 0) roles_[n] = static_cast<std::int8_t>(fused_role(name(i)));
    return static_cast<FusedRole>(roles_[n]);
  }

  // The main fused kernel of a call (its first fused kernel that is no helper), else none.
  std::optional<std::size_t> main_kernel(const AttentionCall& c) {
    for (std::size_t a : c.activities)
      if (cls(a).category == KernelCategory::FusedAttention && role(a) == FusedRole::Main) return a;
    return std::nullopt;
  }

  void add(AttentionCall call) {
    if (const auto main = main_kernel(call)) {
      const AttentionKernelName said = read_attention_kernel_name(name(*main));
      call.paged = said.paged;
      call.page_size = said.page_size;
    }
    const auto id = static_cast<std::int32_t>(view_.calls.size());
    for (std::size_t i : call.activities) view_.call_of[i] = id;
    view_.calls.push_back(std::move(call));
  }

  // 1. Calls bounded by CPU ops.
  void by_cpu_ops() {
    if (!index_.has_cpu_ops()) return;
    const auto& ranges = index_.ranges();
    std::vector<std::int8_t> attention_name(t_.strings.size(), -1);
    // Per range, its outermost enclosing attention op (itself included), found
    // once: kUnresolved until then. Ranges nest a few deep; each is resolved
    // from its parent's answer.
    constexpr std::int32_t kUnresolved = -2;
    std::vector<std::int32_t> outermost(ranges.size(), kUnresolved);
    std::vector<std::int32_t> chain;
    const auto resolve = [&](std::int32_t r) {
      chain.clear();
      while (r != kNone && outermost[static_cast<std::size_t>(r)] == kUnresolved) {
        chain.push_back(r);
        r = ranges[static_cast<std::size_t>(r)].parent;
      }
      std::int32_t above = r == kNone ? kNone : outermost[static_cast<std::size_t>(r)];
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        const CpuRange& range = ranges[static_cast<std::size_t>(*it)];
        std::int8_t& is = attention_name[range.name];
        if (is < 0) is = is_attention_op(index_.name(range)) ? 1 : 0;
        if (above == kNone && is) above = *it;
        outermost[static_cast<std::size_t>(*it)] = above;
      }
      return above;
    };
    // (outermost attention op, the CUDA graph replay or kNone, activity): a replayed node's op is the
    // one around its capture-time launch, a call per op and replay.
    struct OpActivity {
      std::int32_t op, replay;
      std::size_t activity;
      auto operator<=>(const OpActivity&) const = default;
    };
    std::vector<OpActivity> by_op;
    for (std::size_t i = 0; i < index_.activities().size(); ++i) {
      const std::int32_t captured = index_.capture_range(i);
      const std::int32_t r = captured != kNone ? captured : index_.activities()[i].range;
      if (r == kNone) continue;
      const std::int32_t found =
          outermost[static_cast<std::size_t>(r)] == kUnresolved ? resolve(r) : outermost[static_cast<std::size_t>(r)];
      if (found != kNone) by_op.push_back({found, captured != kNone ? index_.activities()[i].launch : kNone, i});
    }
    std::sort(by_op.begin(), by_op.end());
    for (std::size_t from = 0; from < by_op.size();) {
      const std::int32_t range = by_op[from].op, replay = by_op[from].replay;
      AttentionCall c;
      for (; from < by_op.size() && by_op[from].op == range && by_op[from].replay == replay; ++from)
        c.activities.push_back(by_op[from].activity);
      bool fused = false;
      for (std::size_t i : c.activities) {
        if (cls(i).category != KernelCategory::FusedAttention) continue;
        fused = true;
        if (role(i) == FusedRole::Main && c.family.empty()) c.family = cls(i).family;
      }
      c.impl = fused ? AttentionImpl::Fused : AttentionImpl::SdpaMath;
      const std::string_view op = index_.name(ranges[static_cast<std::size_t>(range)]);
      c.pass = has(op, "backward") ? AttentionPass::Backward : AttentionPass::Forward;
      c.shape = ops_.shape_from_op(range, &c.precision);
      c.shape.at_capture = replay != kNone && c.shape.from == ShapeFrom::AttentionOp;
      if (c.impl == AttentionImpl::SdpaMath && op == "aten::scaled_dot_product_attention")
        if (const OpInputs* in = ops_.inputs_of(range)) c.math_cause = math_cause(*in);
      // Under torch.autocast the outer op still sees the FP32 tensors; the backend op
      // inside it (aten::_scaled_dot_product_cudnn_attention, ..._math) the ones it ran on.
      if (const Precision inner = ops_.innermost_precision(c.activities, range); inner != Precision::Unknown)
        c.precision = inner;
      add(std::move(c));
    }
  }

  // 2. Fused kernels that no op claimed: a main kernel with the helpers next to it.
  void fused_by_kernels(const std::vector<std::size_t>& seq) {
    for (std::size_t p = 0; p < seq.size(); ++p) {
      if (!free(seq[p]) || cls(seq[p]).category != KernelCategory::FusedAttention) continue;
      AttentionCall c;
      bool main = false;
      std::size_t q = p;
      for (; q < seq.size(); ++q) {
        const std::size_t i = seq[q];
        if (!free(i)) break;
        const KernelClass& k = cls(i);
        if (k.category == KernelCategory::Memset || k.op == KernelOp::Fill) {
          c.activities.push_back(i);  // workspace zeroing between a call's kernels
          continue;
        }
        if (k.category != KernelCategory::FusedAttention) break;
        const FusedRole r = role(i);
        if (r == FusedRole::Before && (main || !c.activities.empty())) break;
        if (r == FusedRole::Main) {
          if (main) break;
          main = true;
          c.family = k.family;
        }
        c.activities.push_back(i);
      }
      while (!c.activities.empty() && cls(c.activities.back()).category != KernelCategory::FusedAttention)
        c.activities.pop_back();  // trailing memsets belong to whatever comes next
      if (c.activities.empty()) continue;
      // Helpers launched under ops of their own next to a call pass 1 found (flex_attention's
      // reductions): Before ones join the call right after them, After ones the call right before.
      if (!main) {
        const auto only = [&](FusedRole want) {
          return std::all_of(c.activities.begin(), c.activities.end(), [&](std::size_t i) {
            return cls(i).category != KernelCategory::FusedAttention || role(i) == want;
          });
        };
        std::int32_t id = kNone;
        if (only(FusedRole::Before) && q < seq.size() && !free(seq[q]))
          id = view_.call_of[seq[q]];
        else if (only(FusedRole::After) && p > 0 && !free(seq[p - 1]))
          id = view_.call_of[seq[p - 1]];
        if (id != kNone && view_.calls[static_cast<std::size_t>(id)].impl == AttentionImpl::Fused) {
          auto& into = view_.calls[static_cast<std::size_t>(id)].activities;
          for (std::size_t i : c.activities) view_.call_of[i] = id;
          into.insert(into.end(), c.activities.begin(), c.activities.end());
          std::sort(into.begin(), into.end());
          p = q - 1;
          continue;
        }
      }
      if (c.family.empty()) c.family = cls(c.activities.front()).family;
      c.impl = AttentionImpl::Fused;
      c.pass = fused_backward(name(c.activities.front())) ? AttentionPass::Backward : AttentionPass::Forward;
      add(std::move(c));
      p = q - 1;
    }
  }

  struct Walk {
    int gemms = 0;
    std::size_t farthest = 0;          // position of the last GEMM taken
    bool safe_softmax = false;         // an isneginf / all-reduce on the way (_safe_softmax)
    std::vector<std::size_t> skipped;  // positions of linear layers' GEMMs stepped over
  };
  // From the anchor seq[p], one way (dir -1 or +1) over chain kernels, at most
  // kReach of them, taking up to `want` GEMMs and stopping at anything else.
  // A kernel repeating the one before it, a piece of the same op (its CPU op, else its launch shape), is not
  // a step: PyTorch runs an elementwise op over more than 2^31 elements (long-context scores) as one launch
  // per 32-bit-indexable piece, so one op of the chain can be many kernels of one name (up to kPieces more).
  Walk walk(const std::vector<std::size_t>& seq, std::size_t p, int dir, int want, bool skip_linear = false,
            bool sums = false) const {
    constexpr std::size_t kReach = 10, kPieces = 256;
    Walk w{0, p, false, {}};
    std::size_t steps = 0, repeats = 0;
    for (std::size_t step = 1; steps < kReach && w.gemms < want; ++step) {
      if (dir < 0 ? step > p : p + step >= seq.size()) break;
      const std::size_t q = dir < 0 ? p - step : p + step;
      if (!free(seq[q])) break;
      const std::size_t prev = dir < 0 ? q + 1 : q - 1;
      if (step > 1 && event(seq[q]).name == event(seq[prev]).name && cls(seq[q]).category != KernelCategory::Gemm &&
          ops_.same_op_pieces(seq[q], seq[prev])) {
        if (++repeats > kPieces) break;
      } else {
        ++steps;
      }
      const KernelClass& k = cls(seq[q]);
      if (k.category == KernelCategory::Gemm) {
        if (!ops_.attention_matmul(seq[q])) {
          if (!skip_linear || !ops_.linear_matmul(seq[q])) break;
          w.skipped.push_back(q);
          continue;
        }
        ++w.gemms;
        w.farthest = q;
      } else if (chain_kernel(k, name(seq[q])) || (sums && k.op == KernelOp::Reduce)) {
        w.safe_softmax |= k.op == KernelOp::IsNegInf || k.op == KernelOp::AllReduce;
      } else {
        break;
      }
    }
    return w;
  }

  // 3a. Unfused forward: QK^T GEMM, chain kernels, softmax, chain kernels, PV GEMM.
  void unfused_forward(const std::vector<std::size_t>& seq) {
    for (std::size_t p = 0; p < seq.size(); ++p) {
      if (!free(seq[p]) || cls(seq[p]).op != KernelOp::Softmax) continue;
      Walk before = walk(seq, p, -1, 1), after = walk(seq, p, +1, 1);
      if (before.gemms == 0 || after.gemms == 0) {
        // torch.compile may schedule a projection's GEMM inside the chain: step over
        // linear layers' GEMMs, and take the chain only if P V provably multiplies
        // QK^T's scores (record_shapes).
        before = walk(seq, p, -1, 1, true);
        after = walk(seq, p, +1, 1, true);
        if (before.gemms == 0 || after.gemms == 0 || !ops_.scores_feed(seq[before.farthest], seq[after.farthest]))
          continue;
      }
      const std::size_t qk = before.farthest, pv = after.farthest;
      const bool safe_softmax = after.safe_softmax;
      std::size_t first = qk, last = pv;
      // SDPA math without CPU ops: its prologue (upcasts, scaling, mask) and
      // the cast of the output back to 16 bits are part of the call.
      if (safe_softmax) {
        while (first > 0 && qk - first < 12 && free(seq[first - 1]) &&
               math_prologue_kernel(cls(seq[first - 1]), name(seq[first - 1])))
          --first;
        if (last + 1 < seq.size() && free(seq[last + 1]) && cls(seq[last + 1]).op == KernelOp::CastTo16Bit) ++last;
      }
      AttentionCall c;
      c.impl = safe_softmax ? AttentionImpl::SdpaMath : AttentionImpl::Unfused;
      c.pass = AttentionPass::Forward;
      for (std::size_t q = first; q <= last; ++q)
        if (std::find(before.skipped.begin(), before.skipped.end(), q) == before.skipped.end() &&
            std::find(after.skipped.begin(), after.skipped.end(), q) == after.skipped.end())
          c.activities.push_back(seq[q]);
      c.shape = ops_.shape_from_gemm(seq[qk]);
      c.precision = ops_.operand_precision(seq[qk]);  // q and k as the trace recorded them; else from the kernels
      add(std::move(c));
      p = last;
    }
  }

  // Backward chains take the implementation of the forward ones: a backward
  // pass of SDPA math looks like any hand-written attention's.
  AttentionImpl unfused_backward_impl() const {
    bool math = false, unfused = false;
    for (const AttentionCall& c : view_.calls) {
      if (c.pass != AttentionPass::Forward) continue;
      math |= c.impl == AttentionImpl::SdpaMath;
      unfused |= c.impl == AttentionImpl::Unfused;
    }
    return math && !unfused ? AttentionImpl::SdpaMath : AttentionImpl::Unfused;
  }

  // 3b. Unfused backward: dV and dP GEMMs, softmax backward, dQ and dK GEMMs.
  void unfused_backward(const std::vector<std::size_t>& seq, AttentionImpl impl) {
    for (std::size_t p = 0; p < seq.size(); ++p) {
      if (!free(seq[p]) || cls(seq[p]).op != KernelOp::SoftmaxBackward) continue;
      // A sum reduction may sit in the chain: the gradient of K and V broadcast over
      // the query heads (SDPA math with fewer K/V heads) sums over them.
      const Walk before = walk(seq, p, -1, 2, false, true), after = walk(seq, p, +1, 2, false, true);
      if (before.gemms == 0 || after.gemms == 0) continue;
      const std::size_t first = before.farthest, last = after.farthest;
      AttentionCall c;
      c.impl = impl;
      c.pass = AttentionPass::Backward;
      c.activities.assign(seq.begin() + static_cast<std::ptrdiff_t>(first),
                          seq.begin() + static_cast<std::ptrdiff_t>(last) + 1);
      add(std::move(c));
      p = last;
    }
  }

  // Times, kernels, precisions; calls in GPU order.
  void finish() {
    for (AttentionCall& c : view_.calls) {
      Precision cast_to = Precision::Unknown;
      for (std::size_t i : c.activities) {
        const Event& e = event(i);
        const KernelClass& k = cls(i);
        if (e.kind != EventKind::Kernel) continue;
        ++c.kernels;
        c.kernel_ns += e.dur_ns;
        if (k.category == KernelCategory::Gemm) {
          c.gemm16_ns += gemm_as_16bit(k, e.dur_ns);
          if (c.gemm_precision == Precision::Unknown) c.gemm_precision = k.precision;
        }
        if (k.op == KernelOp::TriangularMask) c.causal_mask = true;
        if (k.op == KernelOp::Add || k.op == KernelOp::MaskedFill || k.op == KernelOp::Where) c.mask_pass = true;
        if (k.op == KernelOp::Dropout) {
          c.dropout_pass = true;
          if (!c.dropout) c.dropout = ops_.dropout_of(i);
        }
        if (k.op == KernelOp::CastTo16Bit && cast_to == Precision::Unknown) {
          const std::string_view n = name(i);
          cast_to = has(n, "bfloat16") || has(n, "BFloat16") ? Precision::BF16 : Precision::FP16;
        }
        if (c.impl == AttentionImpl::Fused && c.precision == Precision::Unknown &&
            k.category == KernelCategory::FusedAttention && role(i) == FusedRole::Main)
          c.precision = k.precision;
      }
      if (c.precision == Precision::Unknown) c.precision = cast_to != Precision::Unknown ? cast_to : c.gemm_precision;
      if (c.impl == AttentionImpl::Fused) {
        c.main_kernel = main_kernel(c);
        c.combines_splits = c.pass == AttentionPass::Forward &&
                            std::any_of(c.activities.begin(), c.activities.end(), [&](std::size_t i) {
                              return cls(i).category == KernelCategory::FusedAttention && role(i) == FusedRole::After;
                            });
      }
      c.graph_replay = index_.graph_replayed(c.activities.front());
      if (c.graph_replay && c.shape.from == ShapeFrom::None && captured_ != nullptr) from_captured(c);
      if (c.shape.from == ShapeFrom::None) c.shape = shape_from_kernels(c, index_);
      // A square call (top-left and bottom-right alike) whose positions the program compared as a causal
      // mask does, before the call: its added mask is causal (eager attention's mask is not in the trace).
      if (c.impl != AttentionImpl::Fused && c.shape.known() && !c.shape.causal && !c.causal_mask &&
          c.shape.q_len == c.shape.kv_len &&
          ops_.causal_positions(c.shape.q_len, c.shape.kv_len, event(c.activities.front()).ts_ns)) {
        c.shape.causal = true;
        c.shape.causal_from_positions = true;
      }
      if (!c.paged && c.shape.shared_kv_pool()) {  // a K/V pool paged by a block mask
        c.paged = true;
        c.page_size = static_cast<int>(std::min<std::int64_t>(c.shape.pool_block, 1 << 30));
      }
      if (!c.dropout && c.shape.dropout) c.dropout = c.shape.dropout;
      if (c.shape.any() && !c.shape.causal && c.causal_mask) c.shape.causal = true;
    }
    cached_unfused_shapes();
    // A backward chain has no casts to say what its inputs were, and autograd's
    // matmuls no shapes: those of the forward calls of the same implementation,
    // when they all agree (a backward computes on its forward's tensors).
    const AttentionCall* first_forward[3] = {nullptr, nullptr, nullptr};
    bool precision_agrees[3] = {true, true, true}, shape_agrees[3] = {true, true, true};
    for (const AttentionCall& f : view_.calls) {
      if (f.pass != AttentionPass::Forward) continue;
      const auto k = static_cast<std::size_t>(f.impl);
      if (first_forward[k] == nullptr) {
        first_forward[k] = &f;
        continue;
      }
      precision_agrees[k] &= f.precision == first_forward[k]->precision;
      shape_agrees[k] &= f.shape.any() && f.shape == first_forward[k]->shape;
    }
    for (AttentionCall& c : view_.calls) {
      const auto k = static_cast<std::size_t>(c.impl);
      if (c.impl == AttentionImpl::Fused || c.pass != AttentionPass::Backward || first_forward[k] == nullptr) continue;
      if (precision_agrees[k] && first_forward[k]->precision != Precision::Unknown)
        c.precision = first_forward[k]->precision;
      if (shape_agrees[k] && first_forward[k]->shape.any() && !c.shape.any()) {
        c.shape = first_forward[k]->shape;
        c.shape.from_forward = true;
        c.shape.at_capture = false;
      }
    }
    score_forms();
    kv_heads_from_repeat();
    label_phases(index_, view_);
    std::vector<std::size_t> order(view_.calls.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return view_.calls[a].activities.front() < view_.calls[b].activities.front();
    });
    std::vector<AttentionCall> sorted;
    sorted.reserve(order.size());
    for (std::size_t i : order) sorted.push_back(std::move(view_.calls[i]));
    view_.calls = std::move(sorted);
    std::fill(view_.call_of.begin(), view_.call_of.end(), kNone);
    for (std::size_t c = 0; c < view_.calls.size(); ++c)
      for (std::size_t i : view_.calls[c].activities) view_.call_of[i] = static_cast<std::int32_t>(c);
  }

  // The forms of the unfused calls' scores (AttentionCall::softcap, sinks, alibi, position_bias,
  // mha_module): from each forward call's kernels and ops between its QK^T GEMM and its softmax, and
  // the CPU ranges around its launches; a backward call takes what every forward call of its
  // implementation has.
  void score_forms() {
    SharedForms forward[3];  // by implementation
    for (AttentionCall& c : view_.calls) {
      if (c.impl == AttentionImpl::Fused || c.pass != AttentionPass::Forward) continue;
      bool gemm = false;
      for (std::size_t a : c.activities) {
        const KernelClass& k = cls(a);
        if (k.op == KernelOp::Softmax) break;
        gemm |= k.category == KernelCategory::Gemm;
        if (!gemm) continue;
        const std::string_view n = name(a);
        c.softcap |= has(n, "tanh_kernel");
        c.sinks |= has(n, "CatArrayBatchedCopy");
        const AttentionOps::ScoreBias bias = ops_.score_bias(a);
        c.alibi |= bias == AttentionOps::ScoreBias::Alibi;
        c.position_bias |= bias == AttentionOps::ScoreBias::PerHead;
      }
      for (std::size_t a = 0; a < c.activities.size() && !c.mha_module; ++a)
        c.mha_module = inside_mha(index_.activities()[c.activities[a]].range);
      if (!c.mha_module && c.shape.from == ShapeFrom::QkBmm) c.mha_module = averages_weights(c);
      forward[static_cast<std::size_t>(c.impl)].add(c);
    }
    for (AttentionCall& c : view_.calls) {
      const SharedForms& f = forward[static_cast<std::size_t>(c.impl)];
      if (c.impl != AttentionImpl::Fused && c.pass == AttentionPass::Backward && f.calls > 0) f.apply(c);
    }
  }
  // The K/V heads of an unfused forward call whose QK^T saw them repeated (grouped-query attention
  // written as Hugging Face's repeat_kv: expand to [B, Hkv, n_rep, S, D], then reshape to
  // [B, Hkv * n_rep, S, D], a copy): from that reshape's record_shapes among the few ops before the
  // call on its thread. The bytes a fused call must move read K and V once per KV head.
  void kv_heads_from_repeat() {
    if (!index_.has_cpu_ops()) return;
    for (AttentionCall& c : view_.calls) {
      if (c.impl == AttentionImpl::Fused || c.pass != AttentionPass::Forward || c.shape.kv_heads > 0 ||
          !c.shape.known() || c.shape.from == ShapeFrom::QkBmm)
        continue;
      if (!outermost_) outermost_.emplace(index_);
      const OutermostOps& ops = *outermost_;
      std::int32_t first = kNone;
      for (std::size_t a : c.activities)
        if (const std::int32_t o = ops.op_of(a); o != kNone) first = first == kNone ? o : std::min(first, o);
      if (first == kNone) continue;
      const auto lane = ops.ops()[static_cast<std::size_t>(first)].lane;
      constexpr std::int32_t kReach = 16;
      for (std::int32_t p = first - 1; p >= 0 && p >= first - kReach; --p) {
        if (ops.ops()[static_cast<std::size_t>(p)].lane != lane) break;
        if (ops.name(static_cast<std::size_t>(p)) != "aten::reshape") continue;
        const OpInputs* in = ops_.inputs_of(ops.ops()[static_cast<std::size_t>(p)].range);
        if (in == nullptr || in->dims.empty() || in->dims[0].size() != 5) continue;
        const auto& d = in->dims[0];  // [B, Hkv, n_rep, S, D]
        if (d[0] == c.shape.batch && d[1] * d[2] == c.shape.q_heads && d[2] > 1 && d[3] == c.shape.kv_len &&
            d[4] == c.shape.head_dim) {
          c.shape.kv_heads = d[1];
          break;
        }
      }
    }
  }
  // Unfused forwards without a shape from their ops whose kernels are not self-attention (the softmax's rows
  // no whole number of key-length rows): a decode's few queries against its cache, where batch x heads is
  // that of the trace's largest self-attention calls (a generate()'s prefill, all of them agreeing).
  void cached_unfused_shapes() {
    std::int64_t most = 0, batch_x_heads = 0;
    bool agree = true;
    for (const AttentionCall& c : view_.calls) {
      if (c.impl == AttentionImpl::Fused || c.pass != AttentionPass::Forward || c.shape.from != ShapeFrom::Kernels ||
          !c.shape.batch_x_heads)
        continue;
      const std::int64_t elements = c.shape.batch * c.shape.q_len * c.shape.kv_len;
      if (elements > most) {
        most = elements;
        batch_x_heads = c.shape.batch;
        agree = true;
      } else if (elements == most) {
        agree &= c.shape.batch == batch_x_heads;
      }
    }
    if (!agree || batch_x_heads <= 0) return;
    for (AttentionCall& c : view_.calls)
      if (c.impl != AttentionImpl::Fused && c.pass == AttentionPass::Forward && c.shape.from == ShapeFrom::None)
        c.shape = cached_shape_from_kernels(c, index_, batch_x_heads, kDecodeMaxQueryRows);
  }
  // Prefill and decode, in a trace without backward calls that has decode calls: a forward call with
  // at most kDecodeMaxQueryRows query rows against a longer KV cache decodes, one with more query rows
  // is a prefill (unless it is known not to be causal: an encoder's).
  //
  // Without a shape (attnprof record), a fused forward call decodes when it combines split-KV partial
  // results (a combine kernel after the main one: FlashAttention's, cuDNN's, flex_attention's
  // decoding), or runs the same main kernel as calls that do, or runs few query tiles for as long as the
  // largest calls of its kernel run theirs (short_queries_long_keys), or holds fewer query rows than the
  // keys gathered for it (gathered_keys); a fused call running another main kernel in such a trace, or
  // the largest calls of that kernel, is a prefill unless keys were gathered for it (a cache it reads: its
  // phase untold); a serving engine's kernel says its phase by name, and marks its kernel a decode kernel
  // as a combine does. Unfused calls without a shape keep no phase.
  // Whether the ops right after call c average its weights over the heads: an aten::mean of a
  // [B, H, Sq, Skv] tensor among the next few ops on its thread. With QK^T from aten::bmm on
  // [B*H, Sq, D] (batch x heads in one), that is torch.nn.MultiheadAttention's math path returning
  // its weights, as its op names tell it without Python frames.
  bool averages_weights(const AttentionCall& c) {
    if (!outermost_) outermost_.emplace(index_);
    const OutermostOps& ops = *outermost_;
    std::int32_t last = kNone;
    for (std::size_t a : c.activities) last = std::max(last, ops.op_of(a));
    if (last == kNone) return false;
    const auto lane = ops.ops()[static_cast<std::size_t>(last)].lane;
    constexpr std::size_t kReach = 12;
    for (auto p = static_cast<std::size_t>(last) + 1;
         p < ops.ops().size() && p <= static_cast<std::size_t>(last) + kReach; ++p) {
      if (ops.ops()[p].lane != lane) break;
      if (ops.name(p) != "aten::mean") continue;
      const OpInputs* in = ops_.inputs_of(ops.ops()[p].range);
      if (in == nullptr || in->dims.empty() || in->dims[0].size() != 4) continue;
      const auto& d = in->dims[0];
      if (d[0] * d[1] == c.shape.batch * std::max<std::int64_t>(1, c.shape.q_heads) && d[2] == c.shape.q_len &&
          d[3] == c.shape.kv_len)
        return true;
    }
    return false;
  }
  // Whether CPU range r or one around it is torch.nn.MultiheadAttention's: its native op (the
  // inference fast path), its Python frames (with_stack) or module range.
  bool inside_mha(std::int32_t r) const {
    for (int depth = 0; r != kNone && depth < 64; ++depth) {
      const CpuRange& range = index_.ranges()[static_cast<std::size_t>(r)];
      const std::string_view n = t_.strings.view(range.name);
      if (n == "aten::_native_multi_head_attention" || has(n, "nn.Module: MultiheadAttention") ||
          has(n, "multi_head_attention_forward"))
        return true;
      r = range.parent;
    }
    return false;
  }

  // A replayed call whose graph a second trace holds the capture of: the shape of the call at its node
  // there, where a replay of that trace ran alike.
  void from_captured(AttentionCall& c) {
    if (!replay_nodes_) replay_nodes_.emplace(index_);
    const std::optional<ReplayNodes::At> at = replay_nodes_->at(c.activities.front());
    const CapturedShapes::Node* n = at ? captured_->find(at->key, at->node) : nullptr;
    if (n == nullptr) return;
    c.shape = n->shape;
    c.shape.capture_trace = captured_->trace;
    if (c.precision == Precision::Unknown) c.precision = n->precision;
  }

  const TraceIndex& index_;
  const Trace& t_;
  const AttentionOps ops_;                   // what the CPU ops say (names, record_shapes)
  const CapturedShapes* captured_;           // graphs captured in a second trace (doctor --capture-trace), or null
  std::optional<ReplayNodes> replay_nodes_;  // when captured_ is given, built at its first use
  AttentionView view_;
  std::vector<std::vector<std::size_t>> streams_;
  std::vector<std::int8_t> roles_;         // by name id: FusedRole, -1 not yet known
  std::optional<OutermostOps> outermost_;  // built when a call needs the ops after it
};

}  // namespace

std::string_view to_string(AttentionImpl impl) {
  switch (impl) {
    case AttentionImpl::Fused:
      return "fused";
    case AttentionImpl::SdpaMath:
      return "sdpa-math";
    case AttentionImpl::Unfused:
      return "unfused";
  }
  return "unfused";
}

std::string AttentionShape::source() const {
  std::string s;
  switch (from) {
    case ShapeFrom::None:
      return "unknown";
    case ShapeFrom::AttentionOp:
      s = std::string(op) + " inputs (record_shapes)";
      if (at_capture)
        s += " at the CUDA graph's capture, in " +
             (capture_trace.empty() ? std::string("this trace") : std::string(capture_trace));
      break;
    case ShapeFrom::QkMatmul:
      s = std::string(op) + " inputs of QK^T (record_shapes)";
      break;
    case ShapeFrom::QkBmm:
      s = std::string(op) + " inputs of QK^T, batch x heads (record_shapes)";
      break;
    case ShapeFrom::Kernels:
      s = "kernel launch parameters: " + inferred;
      break;
  }
  if (causal_from_positions) s += "; causal: the program compared query and key positions as a causal mask does";
  return from_forward ? "the forward calls' shape: " + s : s;
}

std::string_view to_string(AttentionPass pass) { return pass == AttentionPass::Forward ? "forward" : "backward"; }

std::string_view to_string(AttentionPhase phase) {
  switch (phase) {
    case AttentionPhase::Prefill:
      return "prefill";
    case AttentionPhase::Decode:
      return "decode";
    case AttentionPhase::Mixed:
      return "mixed";
    case AttentionPhase::None:
      break;
  }
  return "";
}

AttentionView find_attention(const TraceIndex& index, const CapturedShapes* captured) {
  return Finder(index, captured).run();
}

}  // namespace attnprof
