// Finds attention calls (see attention.h). Three passes over the GPU
// activities, each on what the ones before left unassigned:
//  1. CPU ops: every activity launched under one aten::scaled_dot_product_* op
//     (or a backend's backward op) is one call; fused when a fused kernel ran.
//  2. Fused kernels without such an op: a main kernel with its helpers
//     (FlashAttention's split-KV combine, dO.O and dQ conversion; cuDNN's).
//  3. Unfused chains, anchored on a softmax: the QK^T GEMM before it and the
//     PV GEMM after it, with only elementwise, mask and cast kernels between;
//     backward, on a softmax backward with its GEMMs on both sides.
#include "analysis/attention.h"
#include "analysis/kernel_shapes.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace attnprof {
namespace {

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Inductor's flex_attention template: one CPU op per launch, named after its
// kernel (triton_tem_fused_flex_attention_0, ..._backward_...), with q, k, v
// [B, H, S, D] first among its record_shapes inputs.
bool is_flex_op(std::string_view op) { return op.starts_with("triton_tem_") && has(op, "flex_attention"); }

bool is_sdpa_op(std::string_view op) {
  return op.starts_with("aten::scaled_dot_product_attention") || op.starts_with("aten::_scaled_dot_product_");
}

bool is_attention_op(std::string_view op) {
  return is_sdpa_op(op) || op.starts_with("aten::_flash_attention") || op.starts_with("aten::_efficient_attention") ||
         is_flex_op(op);
}

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

// Fused kernels that help a main one: they join the call of the main kernel
// next to them rather than start their own.
enum class FusedRole : std::uint8_t { Main, Before, After };
FusedRole fused_role(std::string_view n) {
  // flex_attention's reductions, each under its own op: the backward's dO.O before its template
  // (triton_per_fused_flex_attention_backward_*), the decoding split-KV combine after the forward's
  // (triton_red_fused_flex_attention_*).
  if (has(n, "flex_attention") && !n.starts_with("triton_tem_"))
    return has(n, "backward") ? FusedRole::Before : FusedRole::After;
  // FlashAttention 2 (dot_do_o), 3 (FlashAttnBwdPreprocess), Triton (_attn_bwd_preprocess).
  if (has(n, "dot_do_o") || has(n, "BwdPreprocess") || has(n, "bwd_preprocess")) return FusedRole::Before;
  if (has(n, "convert_dq") || has(n, "ConvertdQ") || has(n, "BwdPostprocess") || has(n, "splitkv_combine") ||
      has(n, "FwdCombine") || has(n, "reduce_head") || has(n, "cudnn::fusion::"))
    return FusedRole::After;
  return FusedRole::Main;
}

bool fused_backward(std::string_view n) {
  return has(n, "bwd") || has(n, "Bwd") || has(n, "bprop") || has(n, "Backward") || has(n, "cutlassB") ||
         has(n, "dot_do_o") || has(n, "convert_dq") || has(n, "ConvertdQ") || has(n, "reduce_head") ||
         has(n, "backward");
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
    case KernelCategory::Reduction:
      return c.op == KernelOp::AllReduce;
    default:
      return false;
  }
}

// The CPU op that launched a GEMM, when the trace has ops: attention's matmuls
// are batched (aten::bmm, aten::baddbmm, or aten::matmul / einsum on 3-d and
// 4-d tensors, which run as bmm); a linear layer's (aten::mm, addmm, linear)
// are not, so a classifier head or a gate before a softmax is no QK^T.
bool batched_matmul_op(std::string_view op) {
  return op == "aten::bmm" || op == "aten::baddbmm" || op == "aten::_bmm" || op == "aten::matmul" ||
         op.starts_with("aten::einsum");
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

Precision precision_of_type(std::string_view t) {
  if (has(t, "BFloat16")) return Precision::BF16;
  if (has(t, "Half")) return Precision::FP16;
  if (t == "float") return Precision::FP32;
  if (t == "double") return Precision::FP64;
  return Precision::Unknown;
}

// Why SDPA ran its math backend, from aten::scaled_dot_product_attention's
// record_shapes inputs (query, key, value, attn_mask, dropout_p, is_causal,
// scale, enable_gqa): what PyTorch's fused backends (flash, cuDNN, efficient)
// refuse that the inputs show. "" when the op has no q, k, v shapes.
std::string math_cause(const OpInputs& in) {
  if (in.dims.size() < 3) return "";
  const auto& q = in.dims[0];
  const auto& k = in.dims[1];
  if (q.size() != 4 || k.size() != 4) return "";
  std::string why;
  const auto add = [&why](const std::string& s) { why += (why.empty() ? "" : " Also, ") + s; };
  const bool gqa = in.concrete.size() > 7 && in.concrete[7] == "True";
  if (q[1] != k[1] && !gqa)
    add(
        fmt::format("k and v have {} head{} against q's {} and enable_gqa is False; the fused backends need equal "
                    "head counts unless enable_gqa=True (flash and cuDNN take it): pass enable_gqa=True, or "
                    "repeat k and v to {} heads before the call.",
                    k[1], k[1] == 1 ? "" : "s", q[1], q[1]));
  static constexpr std::string_view kNames[] = {"q", "k", "v", "attn_mask"};
  for (std::size_t a = 0; a < 4 && a < in.strides.size() && a < in.dims.size(); ++a) {
    const auto& st = in.strides[a];
    if (in.dims[a].empty() || st.size() != in.dims[a].size() || st.back() == 1 || in.dims[a].back() == 1) continue;
    add(
        fmt::format("{} is not contiguous in its last dim (stride {}); the fused backends need stride 1: pass "
                    "{}.contiguous().",
                    kNames[a], st.back(), kNames[a]));
  }
  // Not the head dim: the flash path pads it to a multiple of 8 itself, and which backend
  // takes a large one depends on the GPU and the version, which the trace does not say.
  const std::int64_t d = q[3];
  if (!in.types.empty() && in.types[0] == "double") add("q, k, v are FP64, which no fused backend takes.");
  if (!why.empty()) return why;
  return fmt::format(
      "Nothing that the trace shows rules out a fused backend ({} q, k, v, {}head dim {}): most likely a "
      "sdpa_kernel(SDPBackend.MATH) context or a torch.backends.cuda.enable_*_sdp(False) switch is in force, "
      "else a limit of the backends on this shape or GPU.",
      in.types.empty() ? "unknown" : to_string(precision_of_type(in.types[0])),
      in.strides.empty() ? "" : "last dims contiguous, ", d);
}

class Finder {
 public:
  explicit Finder(const TraceIndex& index) : index_(index), t_(index.trace()) {
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

  void add(AttentionCall call) {
    const auto id = static_cast<std::int32_t>(view_.calls.size());
    for (std::size_t i : call.activities) view_.call_of[i] = id;
    view_.calls.push_back(std::move(call));
  }

  // record_shapes inputs of a range's op: Trace::op_inputs is in event order.
  const OpInputs* inputs_of(std::int32_t range) const {
    const std::uint32_t e = index_.ranges()[static_cast<std::size_t>(range)].event;
    const auto& all = t_.op_inputs;
    const auto it =
        std::lower_bound(all.begin(), all.end(), e, [](const OpInputs& in, std::uint32_t v) { return in.event < v; });
    return it != all.end() && it->event == e ? &*it : nullptr;
  }

  // The first decimal among an op's scalar inputs (record_shapes): SDPA's and dropout's p.
  static std::optional<double> first_decimal(const OpInputs* in) {
    if (in == nullptr) return std::nullopt;
    for (const std::string& v : in->concrete) {
      double d = 0;
      if (v.find('.') != std::string::npos && std::from_chars(v.data(), v.data() + v.size(), d).ec == std::errc())
        return d;
    }
    return std::nullopt;
  }

  // dropout's p from the op that launched activity i (aten::dropout, aten::native_dropout, ...).
  std::optional<double> dropout_of(std::size_t i) const {
    for (std::int32_t r = index_.activities()[i].range; r != kNone;
         r = index_.ranges()[static_cast<std::size_t>(r)].parent)
      if (has(index_.name(index_.ranges()[static_cast<std::size_t>(r)]), "dropout"))
        if (const auto p = first_decimal(inputs_of(r))) return p;
    return std::nullopt;
  }

  // Shape from record_shapes of an attention op: q and k are [B, H, S, D]
  // (a backward op takes the output gradient first).
  AttentionShape shape_from_op(std::int32_t range, Precision* precision) const {
    AttentionShape s;
    const OpInputs* in = inputs_of(range);
    if (in == nullptr) return s;
    const std::string_view op = index_.name(index_.ranges()[static_cast<std::size_t>(range)]);
    // Only SDPA's ops and flex_attention's kernels: the backends' own
    // (aten::_flash_attention_forward, ...) take [B, S, H, D] and other argument lists.
    // SDPA's backward ops take the output gradient first; flex's kernels q, k, v both ways.
    const bool flex = is_flex_op(op);
    if (!is_sdpa_op(op) && !flex) return s;
    const std::size_t q = has(op, "backward") && !flex ? 1 : 0;
    if (in->dims.size() < q + 2) return s;
    const auto& qd = in->dims[q];
    const auto& kd = in->dims[q + 1];
    if (qd.size() != 4 || kd.size() != 4) return s;
    s = {qd[0], qd[1], kd[1], qd[2], kd[2],       qd[3], std::nullopt, ShapeFrom::AttentionOp,
         op,    false, {},    false, std::nullopt};
    if (precision != nullptr && q < in->types.size()) *precision = precision_of_type(in->types[q]);
    if (flex) return s;  // its masking is a block mask and score_mod, not an is_causal flag
    s.dropout = first_decimal(in);
    // is_causal: the first boolean after the dropout probability (the first
    // decimal), in every SDPA op's signature.
    bool after_dropout = false;
    for (const std::string& v : in->concrete) {
      if (!after_dropout) {
        double d = 0;
        after_dropout =
            v.find('.') != std::string::npos && std::from_chars(v.data(), v.data() + v.size(), d).ec == std::errc();
        continue;
      }
      if (v == "True" || v == "False") {
        s.causal = v == "True";
        break;
      }
    }
    return s;
  }

  // Shape of an unfused call from its QK^T GEMM's op: aten::matmul on 4-d
  // [B, H, Sq, D] x [B, H, D, Skv], else aten::bmm on [B*H, Sq, D] x [B*H, D, Skv].
  AttentionShape shape_from_gemm(std::size_t activity) const {
    AttentionShape s;
    for (std::int32_t r = index_.activities()[activity].range; r != kNone;
         r = index_.ranges()[static_cast<std::size_t>(r)].parent) {
      const OpInputs* in = inputs_of(r);
      if (in == nullptr || in->dims.size() < 2) continue;
      const std::string_view op = index_.name(index_.ranges()[static_cast<std::size_t>(r)]);
      // baddbmm(self, batch1, batch2, beta, alpha): the product's operands come second and third.
      const std::size_t first = op == "aten::baddbmm" ? 1 : 0;
      if (in->dims.size() < first + 2) continue;
      const auto& a = in->dims[first];
      const auto& b = in->dims[first + 1];
      // kv heads stay unknown (0): eager GQA repeats K and V to the query heads before its matmul.
      if (a.size() == 4 && b.size() == 4 && a[3] == b[2])
        return {a[0], a[1], 0, a[2], b[3], a[3], std::nullopt, ShapeFrom::QkMatmul, op, false, {}, false, std::nullopt};
      if (a.size() == 3 && b.size() == 3 && a[2] == b[1])
        s = {a[0], 1, 0, a[1], b[2], a[2], std::nullopt, ShapeFrom::QkBmm, op, false, {}, false, std::nullopt};
    }
    return s;
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
    std::vector<std::pair<std::int32_t, std::size_t>> by_op;  // (outermost attention op, activity)
    for (std::size_t i = 0; i < index_.activities().size(); ++i) {
      const std::int32_t r = index_.activities()[i].range;
      if (r == kNone) continue;
      const std::int32_t found =
          outermost[static_cast<std::size_t>(r)] == kUnresolved ? resolve(r) : outermost[static_cast<std::size_t>(r)];
      if (found != kNone) by_op.emplace_back(found, i);
    }
    std::sort(by_op.begin(), by_op.end());
    for (std::size_t from = 0; from < by_op.size();) {
      const std::int32_t range = by_op[from].first;
      AttentionCall c;
      for (; from < by_op.size() && by_op[from].first == range; ++from) c.activities.push_back(by_op[from].second);
      bool fused = false;
      for (std::size_t i : c.activities) {
        if (cls(i).category != KernelCategory::FusedAttention) continue;
        fused = true;
        if (role(i) == FusedRole::Main && c.family.empty()) c.family = cls(i).family;
      }
      c.impl = fused ? AttentionImpl::Fused : AttentionImpl::SdpaMath;
      const std::string_view op = index_.name(ranges[static_cast<std::size_t>(range)]);
      c.pass = has(op, "backward") ? AttentionPass::Backward : AttentionPass::Forward;
      c.shape = shape_from_op(range, &c.precision);
      if (c.impl == AttentionImpl::SdpaMath && op == "aten::scaled_dot_product_attention")
        if (const OpInputs* in = inputs_of(range)) c.math_cause = math_cause(*in);
      // Under torch.autocast the outer op still sees the FP32 tensors; the backend op
      // inside it (aten::_scaled_dot_product_cudnn_attention, ..._math) the ones it ran on.
      if (const Precision inner = innermost_precision(c.activities, range); inner != Precision::Unknown)
        c.precision = inner;
      add(std::move(c));
    }
  }

  // The precision of q in the innermost SDPA op under `outer` that launched one
  // of the activities (Unknown when there is none below it).
  Precision innermost_precision(const std::vector<std::size_t>& activities, std::int32_t outer) const {
    for (std::size_t i : activities)
      for (std::int32_t r = index_.activities()[i].range; r != kNone && r != outer;
           r = index_.ranges()[static_cast<std::size_t>(r)].parent) {
        if (!is_sdpa_op(index_.name(index_.ranges()[static_cast<std::size_t>(r)]))) continue;
        Precision p = Precision::Unknown;
        shape_from_op(r, &p);
        if (p != Precision::Unknown) return p;
      }
    return Precision::Unknown;
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

  // The innermost CPU op that launched activity i (kNone: none, or a CUDA graph's
  // replay: its kernels were captured elsewhere, the op around the launch is not theirs).
  std::int32_t innermost_op(std::size_t i) const {
    const std::int32_t launch = index_.activities()[i].launch;
    if (launch != kNone && has(t_.name(t_.events[static_cast<std::size_t>(launch)]), "GraphLaunch")) return kNone;
    for (std::int32_t r = index_.activities()[i].range; r != kNone;
         r = index_.ranges()[static_cast<std::size_t>(r)].parent)
      if (index_.ranges()[static_cast<std::size_t>(r)].kind == EventKind::CpuOp) return r;
    return kNone;
  }

  // Whether a GEMM may be one of attention's: without CPU ops, any; with them,
  // only one launched under a batched matmul op (batched_matmul_op).
  bool attention_matmul(std::size_t i) const {
    if (!index_.has_cpu_ops()) return true;
    const std::int32_t op = innermost_op(i);
    if (op == kNone) return true;  // launched outside every op (a library's own thread): no evidence
    return batched_matmul_op(index_.name(index_.ranges()[static_cast<std::size_t>(op)]));
  }

  // A linear layer's GEMM by its op (aten::mm, addmm, linear): never attention's,
  // and one that torch.compile's scheduler may place inside an attention chain
  // (Inductor runs the V projection between the softmax and P V).
  bool linear_matmul(std::size_t i) const {
    if (!index_.has_cpu_ops()) return false;
    const std::int32_t op = innermost_op(i);
    if (op == kNone) return false;
    const std::string_view n = index_.name(index_.ranges()[static_cast<std::size_t>(op)]);
    return n == "aten::mm" || n == "aten::addmm" || n == "aten::linear" || n == "aten::_addmm_activation";
  }

  // The record_shapes inputs of the batched matmul op that launched GEMM i, and
  // where its two operands start (baddbmm's come after its bias).
  struct MatmulInputs {
    const OpInputs* in;
    std::size_t first;
  };
  std::optional<MatmulInputs> matmul_inputs(std::size_t i) const {
    const std::int32_t r = innermost_op(i);
    if (r == kNone) return std::nullopt;
    const std::string_view op = index_.name(index_.ranges()[static_cast<std::size_t>(r)]);
    const OpInputs* in = inputs_of(r);
    if (!batched_matmul_op(op) || in == nullptr) return std::nullopt;
    return MatmulInputs{in, op == "aten::baddbmm" ? 1u : 0u};
  }

  // The two operand shapes of GEMM i's batched matmul op, when recorded.
  std::optional<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> operands(std::size_t i) const {
    const auto m = matmul_inputs(i);
    if (!m || m->in->dims.size() < m->first + 2) return std::nullopt;
    const auto& a = m->in->dims[m->first];
    const auto& b = m->in->dims[m->first + 1];
    if (a.size() < 3 || a.size() != b.size()) return std::nullopt;
    return std::pair(a, b);
  }

  // The dtype of GEMM i's left operand, from its batched matmul op's record_shapes types.
  Precision operand_precision(std::size_t i) const {
    const auto m = matmul_inputs(i);
    return m && m->first < m->in->types.size() ? precision_of_type(m->in->types[m->first]) : Precision::Unknown;
  }

  // Whether GEMM pv multiplies the scores of GEMM qk: its left operand is qk's
  // [..., Sq, Skv] product and its right one has Skv rows. The proof a chain
  // needs when it stepped over a linear layer's GEMM.
  bool scores_feed(std::size_t qk, std::size_t pv) const {
    const auto s = operands(qk), o = operands(pv);
    if (!s || !o) return false;
    const auto& [a, b] = *s;
    const auto& [p, v] = *o;
    const std::size_t n = a.size(), m = p.size();
    return a[n - 1] == b[n - 2] && p[m - 2] == a[n - 2] && p[m - 1] == b[n - 1] && v[m - 2] == b[n - 1];
  }

  // From the anchor seq[p], one way (dir -1 or +1) over chain kernels, at most
  // kReach of them, taking up to `want` GEMMs and stopping at anything else.
  struct Walk {
    int gemms = 0;
    std::size_t farthest = 0;          // position of the last GEMM taken
    bool safe_softmax = false;         // an isneginf / all-reduce on the way (_safe_softmax)
    std::vector<std::size_t> skipped;  // positions of linear layers' GEMMs stepped over
  };
  Walk walk(const std::vector<std::size_t>& seq, std::size_t p, int dir, int want, bool skip_linear = false,
            bool sums = false) const {
    constexpr std::size_t kReach = 10;
    Walk w{0, p, false, {}};
    for (std::size_t step = 1; step <= kReach && w.gemms < want; ++step) {
      if (dir < 0 ? step > p : p + step >= seq.size()) break;
      const std::size_t q = dir < 0 ? p - step : p + step;
      if (!free(seq[q])) break;
      const KernelClass& k = cls(seq[q]);
      if (k.category == KernelCategory::Gemm) {
        if (!attention_matmul(seq[q])) {
          if (!skip_linear || !linear_matmul(seq[q])) break;
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
        if (before.gemms == 0 || after.gemms == 0 || !scores_feed(seq[before.farthest], seq[after.farthest])) continue;
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
      c.shape = shape_from_gemm(seq[qk]);
      c.precision = operand_precision(seq[qk]);  // q and k as the trace recorded them; else from the kernels
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
        if (k.op == KernelOp::Dropout) {
          c.dropout_pass = true;
          if (!c.dropout) c.dropout = dropout_of(i);
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
      if (c.shape.from == ShapeFrom::None) c.shape = shape_from_kernels(c, index_);
      if (!c.dropout && c.shape.dropout) c.dropout = c.shape.dropout;
      if (c.shape.any() && !c.shape.causal && c.causal_mask) c.shape.causal = true;
    }
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
      }
    }
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

  const TraceIndex& index_;
  const Trace& t_;
  AttentionView view_;
  std::vector<std::vector<std::size_t>> streams_;
  std::vector<std::int8_t> roles_;  // by name id: FusedRole, -1 not yet known
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
  return from_forward ? "the forward calls' shape: " + s : s;
}

std::string_view to_string(AttentionPass pass) { return pass == AttentionPass::Forward ? "forward" : "backward"; }

AttentionView find_attention(const TraceIndex& index) { return Finder(index).run(); }

}  // namespace attnprof
