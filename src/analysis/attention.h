// The attention view: every attention call in a trace, with its implementation
// (one fused kernel, PyTorch's SDPA math decomposition, or hand-written /
// eager matmul-softmax-matmul), its pass, its kernels and, where the trace
// says, its shape. Found from the kernel stream, so it works on traces without
// CPU ops (attnprof record); CPU ops, when present, draw the exact boundaries
// (aten::scaled_dot_product_attention and its backends) and give the shapes
// (record_shapes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/trace_index.h"

namespace attnprof {

enum class AttentionImpl : std::uint8_t { Fused, SdpaMath, Unfused };
enum class AttentionPass : std::uint8_t { Forward, Backward };
// The phase of an inference call in a program that generates: the prompt's forward (prefill) or one
// of the forwards per generated token (decode: a few query rows against a longer KV cache), or a packed
// forward of several sequences that reads cached keys with more query rows than a decode has (mixed:
// continuous batching's; its decode tokens and prompt chunks are not told apart). None in training, and
// where no call of the trace decodes (a plain forward, an encoder).
enum class AttentionPhase : std::uint8_t { None, Prefill, Decode, Mixed };
std::string_view to_string(AttentionImpl impl);
std::string_view to_string(AttentionPass pass);
std::string_view to_string(AttentionPhase phase);  // "" for None
// The phases whose calls read a KV cache that grows every forward, with few query rows a sequence: decode, and
// mixed (packed forwards of many requests). Their worth is the bytes they move; their replay is one shape.
constexpr bool reads_growing_cache(AttentionPhase phase) {
  return phase == AttentionPhase::Decode || phase == AttentionPhase::Mixed;
}
// The query rows up to which a call against a longer KV cache decodes (speculative decoding's few).
inline constexpr std::int64_t kDecodeMaxQueryRows = 16;

// Where a shape came from: an attention op's record_shapes inputs, those of
// the QK^T matmul (4-d aten::matmul, or aten::bmm with batch x heads in one),
// or (no record_shapes) the call's kernels: names and launch grids
// (kernel_shapes.h; may leave sizes unknown, 0).
enum class ShapeFrom : std::uint8_t { None, AttentionOp, QkMatmul, QkBmm, Kernels };

struct AttentionShape {
  std::int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  std::optional<bool> causal;  // unknown unless the op's inputs say
  ShapeFrom from = ShapeFrom::None;
  std::string_view op;            // the op whose inputs gave it (the trace's string pool)
  bool from_forward = false;      // a backward chain's, taken from its forward calls
  std::string inferred;           // Kernels: which kernel gave what, and what was assumed
  bool batch_x_heads = false;     // Kernels: batch holds batch x heads (q_heads 1), not separable
  std::optional<double> dropout;  // AttentionOp: its dropout_p
  // AttentionOp: a CUDA graph replay's call, its op the one the trace holds at the graph's capture; or a
  // second trace's (doctor --capture-trace), named by capture_trace (empty: this trace).
  bool at_capture = false;
  std::string_view capture_trace{};
  // K/V's batch where it is not q's: 1 for flex_attention's q batch over one K/V (a pool the sequences
  // share through the block mask, as PagedAttention lays its pages), with the mask's block (page) size
  // from its kv_indices. 0: K/V has q's batch.
  std::int64_t kv_batch = 0;
  std::int64_t pool_block = 0;
  // AttentionOp: an SDPA call given a mask of one head ([B or 1, 1, Sq, Skv], as transformers builds
  // its causal and padding masks), whose is_causal=False then says nothing of causality.
  bool one_head_mask = false;
  // causal from the program's comparison of query and key positions before the call (an eager call's mask),
  // not from its op or kernels (AttentionOps::causal_positions).
  bool causal_from_positions = false;
  // Whether the batch's sequences share one K/V pool (kv_batch 1 under a q batch of more).
  bool shared_kv_pool() const { return kv_batch == 1 && batch > 1; }
  // All sizes positive and below 2^31 (record_shapes values are the trace's, not to be trusted blindly).
  bool known() const {
    for (const std::int64_t v : {batch, q_heads, q_len, kv_len, head_dim})
      if (v <= 0 || v >= (std::int64_t{1} << 31)) return false;
    return kv_heads >= 0 && kv_heads < (std::int64_t{1} << 31);
  }
  // Known, or partly known from the kernels (all but the head dim, say).
  bool any() const { return known() || (from == ShapeFrom::Kernels && batch > 0 && q_len > 0); }
  std::string source() const;  // for the report
  friend bool operator==(const AttentionShape& a, const AttentionShape& b) {
    return a.batch == b.batch && a.q_heads == b.q_heads && a.kv_heads == b.kv_heads && a.q_len == b.q_len &&
           a.kv_len == b.kv_len && a.head_dim == b.head_dim && a.causal == b.causal && a.kv_batch == b.kv_batch;
  }
};

struct AttentionCall {
  AttentionImpl impl = AttentionImpl::Unfused;
  AttentionPass pass = AttentionPass::Forward;
  AttentionPhase phase = AttentionPhase::None;
  std::vector<std::size_t> activities;            // indices into TraceIndex::activities(), GPU order
  int kernels = 0;                                // of which kernels (not memcpy/memset)
  std::int64_t kernel_ns = 0;                     // summed durations
  Precision precision = Precision::Unknown;       // of q, k, v
  Precision gemm_precision = Precision::Unknown;  // of its matmuls (unfused calls)
  std::string_view family;                        // fused kernel family ("FlashAttention", "cuDNN", ...)
  AttentionShape shape;
  // A paged KV cache (block table), where its fused kernel's name says so (serving engines'), and the
  // page size in tokens where the name holds it (0: not said).
  bool paged = false;
  int page_size = 0;
  // Run by a CUDA graph's replay (cudaGraphLaunch): its shape, when known, is its ops' at the graph's
  // capture (AttentionShape::at_capture); unknown when the trace does not hold the capture.
  bool graph_replay = false;
  // Fused: its main kernel (the first fused kernel that is no helper), an index into TraceIndex::activities();
  // and whether a forward merged partial results split over the keys in a kernel of its own (a split-KV
  // combine: FlashAttention's, cuDNN's lean reduction, flex_attention's decoding reductions, serving
  // engines' merges). A kernel that merges its splits itself (attnprof's decode kernel) has none.
  std::optional<std::size_t> main_kernel;
  bool combines_splits = false;
  std::int64_t gemm16_ns = 0;  // unfused: its matmuls' time as 16-bit tensor-core GEMMs (estimated)
  bool causal_mask = false;    // a triangular mask was built inside the call
  bool mask_pass = false;      // a kernel of the call applied a mask to the scores (add, masked_fill, where)
  // Attention dropout: dropout_p of the SDPA op or of the dropout op in the call (record_shapes), and
  // whether a dropout kernel ran in the call.
  std::optional<double> dropout;
  bool dropout_pass = false;
  // What the scores get beyond scale and mask, from the forward's kernels and ops (a backward call
  // takes its forwards'): tanh soft-capping (Gemma 2's attn_logit_softcapping), a sink column concatenated to
  // the scores before the softmax (GPT-OSS's sinks).
  bool softcap = false;
  bool sinks = false;
  // A position bias added to the scores (record_shapes): ALiBi's through baddbmm's input (Bloom), or a
  // learned per-head term (T5's relative attention bias).
  bool alibi = false;
  bool position_bias = false;
  // Inside torch.nn.MultiheadAttention's own math path (its op or its Python frames say so): the module
  // returns the head-averaged weights (need_weights=True, the default) and so runs no fused kernel.
  bool mha_module = false;
  // SDPA math: what in the op's record_shapes inputs kept PyTorch off its fused
  // backends, as "why; what to do" ("" when the trace has no inputs to say).
  std::string math_cause;
};

// Of a set of calls, the forms of the scores (AttentionCall::softcap, sinks, alibi, position_bias,
// mha_module) that every one of them has; all true while none was added (`calls` says how many were).
struct SharedForms {
  bool softcap = true, sinks = true, alibi = true, position_bias = true, mha_module = true;
  int calls = 0;
  void add(const AttentionCall& c) {
    softcap &= c.softcap;
    sinks &= c.sinks;
    alibi &= c.alibi;
    position_bias &= c.position_bias;
    mha_module &= c.mha_module;
    ++calls;
  }
  void apply(AttentionCall& c) const {  // a backward call takes what its forwards share
    c.softcap = softcap;
    c.sinks = sinks;
    c.alibi = alibi;
    c.position_bias = position_bias;
    c.mha_module = mha_module;
  }
};

struct AttentionView {
  std::vector<AttentionCall> calls;   // in GPU order of their first activity
  std::vector<std::int32_t> call_of;  // by activity index: index into calls, or kNone
  // Whether the trace holds CUDA graph captures (TraceIndex::graph_replays): a replayed call without a
  // shape then has its capture in the trace, not told apart from another's; else captured before it.
  bool graph_captures = false;
  bool in_attention(std::size_t activity) const { return call_of[activity] != kNone; }
};

struct CapturedShapes;
// `captured`: graphs captured in a second trace (doctor --capture-trace), or null.
AttentionView find_attention(const TraceIndex& index, const CapturedShapes* captured = nullptr);

}  // namespace attnprof
