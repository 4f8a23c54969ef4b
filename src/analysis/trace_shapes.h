// The attention shapes of a trace, for replaying them (`attnprof bench
// --from-trace`): each distinct forward shape with the calls that had it, and
// the backward calls of those forwards (training).
// Shapes come from record_shapes inputs (the attention op's, or its QK^T
// matmul's) or, without record_shapes, from the kernels' launch parameters
// (shape_from_kernels); calls without one are counted apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/attention.h"

namespace attnprof {

struct TraceShape {
  AttentionShape shape;  // kv_heads filled (= q_heads where the trace cannot tell: eager repeats K and V)
  Precision precision = Precision::Unknown;
  bool causal = false;         // the op's is_causal, or a causal mask built in the call
  bool causal_known = false;   // false: neither said, taken as not causal
  int calls = 0;               // forward calls of this shape
  int graph_calls = 0;         // of them, replayed from a CUDA graph (AttentionCall::graph_replay)
  std::int64_t kernel_ns = 0;  // their GPU kernel time in the trace
  // Backward calls of those forwards: autograd runs them in reverse, so the latest forward without
  // a backward yet is the one a backward call belongs to (a recomputed forward of activation
  // checkpointing is followed by its own backward).
  int backward_calls = 0;
  std::int64_t backward_kernel_ns = 0;
  std::string implementations;  // "sdpa-math", "fused (FlashAttention) + unfused", ...
  std::vector<std::string> implementation_list;
  // The first call's: what a replay stands in for.
  AttentionImpl impl = AttentionImpl::Unfused;
  std::string_view family;    // of a fused call ("cuDNN", "FlashAttention", ...)
  bool fp32_softmax = false;  // an unfused 16-bit call whose softmax ran in fp32 (softmax(dtype=float32))
  bool mask_in_call = false;  // an unfused call with a mask pass over the scores (add, masked_fill, where)
  // Decode calls (AttentionPhase::Decode, or Mixed: packed forwards reading a cache) of one shape but their
  // KV length, which grows a token a step (a token a request packed): one shape to replay, at the median of
  // the calls' KV lengths (such a call's time is linear in it);
  // kv_len_min / kv_len_max the range seen. Not decode: both 0.
  bool decode = false;
  std::int64_t kv_len_min = 0, kv_len_max = 0;
  std::vector<std::int64_t> kv_lens;  // of its decode calls, for the median
  double dropout = 0;                 // attention dropout p (training)
  bool dropout_assumed = false;       // a dropout kernel ran but the trace does not say p: dropout is kDefaultDropout
};

// The p taken for a dropout pass whose probability the trace does not say (the common default).
inline constexpr double kDefaultDropout = 0.1;

struct TraceShapes {
  std::vector<TraceShape> shapes;  // by total time, the largest first
  int calls_without_shape = 0;     // forward calls whose shape the trace does not say
  int calls_batch_x_heads = 0;     // forward calls with only batch x heads (aten::bmm): not replayable
  int backward_unpaired = 0;       // backward calls with no forward call before them (the profiler began mid-step)
  bool graph_captures = false;     // AttentionView::graph_captures
  TraceShape unshaped;             // those calls together (calls, time, implementations; shape: what is known)
};

// `include` (by call index): only the calls marked, e.g. those of the analysed regions; null: all.
TraceShapes trace_shapes(const AttentionView& view, const TraceIndex& index,
                         const std::vector<char>* include = nullptr);

}  // namespace attnprof
