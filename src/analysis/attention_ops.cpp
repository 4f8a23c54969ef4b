// What the trace's CPU ops say about attention (see attention_ops.h): their names, and the
// record_shapes inputs of the attention ops and of attention's batched matmuls.
#include "analysis/attention_ops.h"
#include "common/text_search.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace attnprof {
namespace {

// Inductor's flex_attention template: one CPU op per launch, named after its
// kernel (triton_tem_fused_flex_attention_0, ..._backward_...), with q, k, v
// [B, H, S, D] first among its record_shapes inputs.
bool is_flex_op(std::string_view op) { return op.starts_with("triton_tem_") && has(op, "flex_attention"); }

bool is_sdpa_op(std::string_view op) {
  return op.starts_with("aten::scaled_dot_product_attention") || op.starts_with("aten::_scaled_dot_product_");
}

// The CPU op that launched a GEMM, when the trace has ops: attention's matmuls
// are batched (aten::bmm, aten::baddbmm, or aten::matmul / einsum on 3-d and
// 4-d tensors, which run as bmm); a linear layer's (aten::mm, addmm, linear)
// are not, so a classifier head or a gate before a softmax is no QK^T.
bool batched_matmul_op(std::string_view op) {
  return op == "aten::bmm" || op == "aten::baddbmm" || op == "aten::_bmm" || op == "aten::matmul" ||
         op.starts_with("aten::einsum");
}

Precision precision_of_type(std::string_view t) {
  if (has(t, "BFloat16")) return Precision::BF16;
  if (has(t, "Half")) return Precision::FP16;
  if (t == "float") return Precision::FP32;
  if (t == "double") return Precision::FP64;
  return Precision::Unknown;
}

// The first decimal among an op's scalar inputs (record_shapes): SDPA's and dropout's p.
std::optional<double> first_decimal(const OpInputs* in) {
  if (in == nullptr) return std::nullopt;
  for (const std::string& v : in->concrete) {
    double d = 0;
    if (v.find('.') != std::string::npos && std::from_chars(v.data(), v.data() + v.size(), d).ec == std::errc())
      return d;
  }
  return std::nullopt;
}

}  // namespace

bool is_attention_op(std::string_view op) {
  return is_sdpa_op(op) || op.starts_with("aten::_flash_attention") || op.starts_with("aten::_efficient_attention") ||
         is_flex_op(op);
}

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

const std::vector<AttentionOps::PositionCompare>& AttentionOps::causal_compares() const {
  if (causal_compares_) return *causal_compares_;
  std::vector<PositionCompare>& out = causal_compares_.emplace();
  // Integer position tensors compared over [.., Sq, Skv]: the key positions vary along the last dim
  // ([.., 1, Skv]), the query positions along the one before ([.., Sq, 1]); leading dims all 1.
  const auto positions = [](const std::vector<std::int64_t>& d, bool keys) -> std::int64_t {
    if (d.size() < 2) return 0;
    for (std::size_t i = 0; i + 2 < d.size(); ++i)
      if (d[i] != 1) return 0;
    const std::int64_t row = d[d.size() - 2], col = d[d.size() - 1];
    return keys ? (row == 1 ? col : 0) : (col == 1 ? row : 0);
  };
  const auto integer = [](const std::string& t) { return t == "long int" || t == "int"; };
  for (const OpInputs& in : t_.op_inputs) {
    if (in.dims.size() < 2 || in.types.size() < 2 || !integer(in.types[0]) || !integer(in.types[1])) continue;
    const Event& e = t_.events[in.event];
    const std::string_view op = t_.strings.view(e.name);
    // kv <= q: le(keys, queries); q >= kv: ge(queries, keys).
    const bool le = op == "aten::le", ge = op == "aten::ge";
    if (!le && !ge) continue;
    const auto& keys = le ? in.dims[0] : in.dims[1];
    const auto& queries = le ? in.dims[1] : in.dims[0];
    const std::int64_t kv = positions(keys, true), q = positions(queries, false);
    if (kv > 1 && q > 1) out.push_back({e.ts_ns, q, kv});
  }
  std::sort(out.begin(), out.end(),
            [](const PositionCompare& a, const PositionCompare& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

bool AttentionOps::causal_positions(std::int64_t q_len, std::int64_t kv_len, std::int64_t before_ns) const {
  for (const PositionCompare& c : causal_compares()) {
    if (c.ts_ns >= before_ns) break;
    if (c.q_len == q_len && c.kv_len == kv_len) return true;
  }
  return false;
}

const OpInputs* AttentionOps::inputs_of(std::int32_t range) const {
  return t_.op_inputs_of(index_.ranges()[static_cast<std::size_t>(range)].event);
}

std::optional<double> AttentionOps::dropout_of(std::size_t i) const {
  for (std::int32_t r = op_range(i); r != kNone; r = index_.ranges()[static_cast<std::size_t>(r)].parent)
    if (has(index_.name(index_.ranges()[static_cast<std::size_t>(r)]), "dropout"))
      if (const auto p = first_decimal(inputs_of(r))) return p;
  return std::nullopt;
}

AttentionShape AttentionOps::shape_from_op(std::int32_t range, Precision* precision) const {
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
  if (flex) {  // its masking is a block mask and score_mod, not an is_causal flag
    if (kd[0] == 1 && qd[0] > 1) {
      // One K/V for the batch: a pool the block mask pages; its kv_indices, the first 4-d integer input
      // after q, k and v ([B, H, q blocks, kv blocks]), give the block size.
      s.kv_batch = 1;
      for (std::size_t i = q + 3; i < in->dims.size() && i < in->types.size(); ++i) {
        const auto& d = in->dims[i];
        if (d.size() == 4 && in->types[i] == "int" && d[3] > 0 && kd[2] % d[3] == 0) {
          s.pool_block = kd[2] / d[3];
          break;
        }
      }
    }
    return s;
  }
  s.dropout = first_decimal(in);
  if (q + 3 < in->dims.size()) {
    const auto& m = in->dims[q + 3];
    s.one_head_mask = m.size() == 4 && m[1] == 1 && m[2] == qd[2] && m[3] == kd[2];
  }
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

AttentionShape AttentionOps::shape_from_gemm(std::size_t activity) const {
  AttentionShape s;
  for (std::int32_t r = op_range(activity); r != kNone; r = index_.ranges()[static_cast<std::size_t>(r)].parent) {
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

Precision AttentionOps::innermost_precision(const std::vector<std::size_t>& activities, std::int32_t outer) const {
  for (std::size_t i : activities)
    for (std::int32_t r = op_range(i); r != kNone && r != outer;
         r = index_.ranges()[static_cast<std::size_t>(r)].parent) {
      if (!is_sdpa_op(index_.name(index_.ranges()[static_cast<std::size_t>(r)]))) continue;
      Precision p = Precision::Unknown;
      shape_from_op(r, &p);
      if (p != Precision::Unknown) return p;
    }
  return Precision::Unknown;
}

std::int32_t AttentionOps::op_range(std::size_t i) const {
  if (const std::int32_t captured = index_.capture_range(i); captured != kNone) return captured;
  return index_.graph_replayed(i) ? kNone : index_.activities()[i].range;
}

std::int32_t AttentionOps::innermost_op(std::size_t i) const {
  for (std::int32_t r = op_range(i); r != kNone; r = index_.ranges()[static_cast<std::size_t>(r)].parent)
    if (index_.ranges()[static_cast<std::size_t>(r)].kind == EventKind::CpuOp) return r;
  return kNone;
}

bool AttentionOps::same_op_pieces(std::size_t a, std::size_t b) const {
  if (index_.has_cpu_ops()) {
    const std::int32_t op = innermost_op(a);
    return op != kNone && op == innermost_op(b);
  }
  const GpuArgs* x = t_.args(index_.event(index_.activities()[a]));
  const GpuArgs* y = t_.args(index_.event(index_.activities()[b]));
  return x != nullptr && y != nullptr && x->grid == y->grid && x->block == y->block;
}

AttentionOps::ScoreBias AttentionOps::score_bias(std::size_t i) const {
  const std::int32_t op = innermost_op(i);
  if (op == kNone) return ScoreBias::None;
  const OpInputs* in = inputs_of(op);
  if (in == nullptr) return ScoreBias::None;
  const std::string_view name = index_.name(index_.ranges()[static_cast<std::size_t>(op)]);
  const auto& d = in->dims;
  if (name == "aten::baddbmm" && d.size() >= 3 && d[0].size() == 3 && d[2].size() == 3) {
    if (d[0][0] * d[0][1] * d[0][2] <= 0) return ScoreBias::None;
    return d[0][1] == 1 && d[0][2] == d[2][2] ? ScoreBias::Alibi : ScoreBias::PerHead;
  }
  if ((name == "aten::add" || name == "aten::add_") && d.size() >= 2 && d[0].size() == 4 && d[1].size() == 4) {
    const auto& s = d[0];
    const auto& t = d[1];
    if (t[1] > 1 && t[1] == s[1] && t[2] == s[2] && t[3] == s[3]) return ScoreBias::PerHead;
  }
  return ScoreBias::None;
}

bool AttentionOps::attention_matmul(std::size_t i) const {
  if (!index_.has_cpu_ops()) return true;
  const std::int32_t op = innermost_op(i);
  if (op == kNone) return true;  // launched outside every op (a library's own thread): no evidence
  return batched_matmul_op(index_.name(index_.ranges()[static_cast<std::size_t>(op)]));
}

bool AttentionOps::linear_matmul(std::size_t i) const {
  if (!index_.has_cpu_ops()) return false;
  const std::int32_t op = innermost_op(i);
  if (op == kNone) return false;
  const std::string_view n = index_.name(index_.ranges()[static_cast<std::size_t>(op)]);
  return n == "aten::mm" || n == "aten::addmm" || n == "aten::linear" || n == "aten::_addmm_activation";
}

std::optional<AttentionOps::MatmulInputs> AttentionOps::matmul_inputs(std::size_t i) const {
  const std::int32_t r = innermost_op(i);
  if (r == kNone) return std::nullopt;
  const std::string_view op = index_.name(index_.ranges()[static_cast<std::size_t>(r)]);
  const OpInputs* in = inputs_of(r);
  if (!batched_matmul_op(op) || in == nullptr) return std::nullopt;
  return MatmulInputs{in, op == "aten::baddbmm" ? 1u : 0u};
}

std::optional<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> AttentionOps::operands(
    std::size_t i) const {
  const auto m = matmul_inputs(i);
  if (!m || m->in->dims.size() < m->first + 2) return std::nullopt;
  const auto& a = m->in->dims[m->first];
  const auto& b = m->in->dims[m->first + 1];
  if (a.size() < 3 || a.size() != b.size()) return std::nullopt;
  return std::pair(a, b);
}

Precision AttentionOps::operand_precision(std::size_t i) const {
  const auto m = matmul_inputs(i);
  return m && m->first < m->in->types.size() ? precision_of_type(m->in->types[m->first]) : Precision::Unknown;
}

bool AttentionOps::scores_feed(std::size_t qk, std::size_t pv) const {
  const auto s = operands(qk), o = operands(pv);
  if (!s || !o) return false;
  const auto& [a, b] = *s;
  const auto& [p, v] = *o;
  const std::size_t n = a.size(), m = p.size();
  return a[n - 1] == b[n - 2] && p[m - 2] == a[n - 2] && p[m - 1] == b[n - 1] && v[m - 2] == b[n - 1];
}

}  // namespace attnprof
