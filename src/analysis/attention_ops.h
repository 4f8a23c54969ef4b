// What a trace's CPU ops say about attention, for the call finder (attention.cpp):
// which ops are attention's, which GEMMs a batched matmul launched (attention's
// QK^T and PV) or a linear layer, and what their record_shapes inputs give: a call's
// shape, its precision and dropout, why SDPA ran its math backend, and whether
// one GEMM multiplies the scores of another. The kernel stream is the finder's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/attention.h"
#include "analysis/trace_index.h"

namespace attnprof {

// aten::scaled_dot_product_* (SDPA and its backends' ops), aten::_flash_attention_*,
// aten::_efficient_attention_*, and Inductor's flex_attention template (triton_tem_*).
bool is_attention_op(std::string_view op);

// Why SDPA ran its math backend, from aten::scaled_dot_product_attention's
// record_shapes inputs (query, key, value, attn_mask, dropout_p, is_causal,
// scale, enable_gqa): what PyTorch's fused backends (flash, cuDNN, efficient)
// refuse that the inputs show. "" when the op has no q, k, v shapes.
std::string math_cause(const OpInputs& in);

// Questions about the ops of one index; ranges and activities are its indices.
class AttentionOps {
 public:
  explicit AttentionOps(const TraceIndex& index) : index_(index), t_(index.trace()) {}

  // record_shapes inputs of a range's op, or null.
  const OpInputs* inputs_of(std::int32_t range) const;
  // dropout's p from the op that launched activity i (aten::dropout, aten::native_dropout, ...).
  std::optional<double> dropout_of(std::size_t i) const;
  // Shape from record_shapes of an attention op: q and k are [B, H, S, D]
  // (a backward op takes the output gradient first); with `precision`, q's dtype.
  AttentionShape shape_from_op(std::int32_t range, Precision* precision) const;
  // Shape of an unfused call from its QK^T GEMM's op: aten::matmul on 4-d
  // [B, H, Sq, D] x [B, H, D, Skv], else aten::bmm on [B*H, Sq, D] x [B*H, D, Skv].
  AttentionShape shape_from_gemm(std::size_t activity) const;
  // The precision of q in the innermost SDPA op under `outer` that launched one
  // of the activities (Unknown when there is none below it).
  Precision innermost_precision(const std::vector<std::size_t>& activities, std::int32_t outer) const;

  // Whether GEMM i may be one of attention's: without CPU ops, any; with them,
  // only one launched under a batched matmul op (aten::bmm, baddbmm, matmul, einsum).
  bool attention_matmul(std::size_t i) const;
  // A linear layer's GEMM by its op (aten::mm, addmm, linear): never attention's,
  // and one that torch.compile's scheduler may place inside an attention chain
  // (Inductor runs the V projection between the softmax and P V).
  bool linear_matmul(std::size_t i) const;
  // The dtype of GEMM i's left operand, from its batched matmul op's record_shapes types.
  Precision operand_precision(std::size_t i) const;
  // What the op that launched activity i adds to attention scores, from its record_shapes inputs: a
  // bias through aten::baddbmm's input ([B*H, 1, Skv], constant over the queries: ALiBi's; any other
  // shape: a bias), or an aten::add / add_ of a term with a head dim over [Sq, Skv] (a learned
  // per-head position bias such as T5's; a mask has one head). None without inputs.
  enum class ScoreBias : std::uint8_t { None, Alibi, PerHead };
  ScoreBias score_bias(std::size_t i) const;
  // Whether GEMM pv multiplies the scores of GEMM qk: its left operand is qk's
  // [..., Sq, Skv] product and its right one has Skv rows. The proof a chain
  // needs when it stepped over a linear layer's GEMM.
  bool scores_feed(std::size_t qk, std::size_t pv) const;
  // Whether the program compared query and key positions as a causal mask does, before `before_ns`: an
  // aten::le or aten::ge of two integer tensors that broadcast to [.., q_len, kv_len], the key positions
  // ([.., 1, kv_len]) on the small side (kv <= q, q >= kv), as transformers builds its masks
  // (masking_utils: kv_idx <= q_idx) and `arange(S)[:, None] >= arange(S)` does. Say nothing of a mask
  // applied as the comparison's result alone; the caller pairs it with a square call (q_len == kv_len,
  // where top-left and bottom-right agree).
  bool causal_positions(std::int64_t q_len, std::int64_t kv_len, std::int64_t before_ns) const;
  // Whether activities a and b are pieces of one op: launched by the same innermost CPU op (kernels of one
  // name from one elementwise op over more than 2^31 elements, one launch a 32-bit-indexable piece); without
  // CPU ops, the same grid and block.
  bool same_op_pieces(std::size_t a, std::size_t b) const;

 private:
  // The innermost CPU range around activity i's launch; for a CUDA graph's replay, around its launch
  // at the graph's capture (kNone when the trace does not hold it: the op around cudaGraphLaunch is
  // not the kernel's).
  std::int32_t op_range(std::size_t i) const;
  // The innermost CPU op that launched activity i (kNone: none, as op_range).
  std::int32_t innermost_op(std::size_t i) const;
  // The record_shapes inputs of the batched matmul op that launched GEMM i, and
  // where its two operands start (baddbmm's come after its bias).
  struct MatmulInputs {
    const OpInputs* in;
    std::size_t first;
  };
  std::optional<MatmulInputs> matmul_inputs(std::size_t i) const;
  // The two operand shapes of GEMM i's batched matmul op, when recorded.
  std::optional<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> operands(std::size_t i) const;

  const TraceIndex& index_;
  const Trace& t_;
  struct PositionCompare {
    std::int64_t ts_ns, q_len, kv_len;
  };
  // The trace's causal position comparisons, in start order: read at causal_positions' first question.
  mutable std::optional<std::vector<PositionCompare>> causal_compares_;
  const std::vector<PositionCompare>& causal_compares() const;
};

}  // namespace attnprof
