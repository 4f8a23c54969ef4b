// The attention shapes of a trace, for replaying them (`attnprof bench
// --from-trace`): each distinct forward shape with the calls that had it.
// Shapes come from record_shapes inputs (the attention op's, or its QK^T
// matmul's); calls without one are counted apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/attention.h"

namespace attnprof {

struct TraceShape {
  AttentionShape shape;  // kv_heads filled (= q_heads where the trace cannot tell: eager repeats K and V)
  Precision precision = Precision::Unknown;
  bool causal = false;          // the op's is_causal, or a causal mask built in the call
  bool causal_known = false;    // false: neither said, taken as not causal
  int calls = 0;                // forward calls of this shape
  std::int64_t kernel_ns = 0;   // their GPU kernel time in the trace
  std::string implementations;  // "sdpa-math", "fused (FlashAttention) + unfused", ...
  std::vector<std::string> implementation_list;
};

struct TraceShapes {
  std::vector<TraceShape> shapes;  // by total time, the largest first
  int calls_without_shape = 0;     // forward calls whose shape the trace does not say
  int calls_batch_x_heads = 0;     // forward calls with only batch x heads (aten::bmm): not replayable
};

TraceShapes trace_shapes(const AttentionView& view);

}  // namespace attnprof
