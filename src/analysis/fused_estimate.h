// What an attention call would take as one fused kernel: measured, when the
// trace has a fused call of the same shape and pass; else from the shape and
// a per-GPU model of a fused kernel's waves of tiles; else from the call's own
// matmuls run as 16-bit tensor-core GEMMs. Numbers and their sources:
// BENCHMARKS.md ("doctor's fused-kernel estimate").
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "analysis/attention.h"

namespace attnprof {

struct DeviceSummary;

struct FusedEstimate {
  std::int64_t ns = 0;
  std::string source;  // "measured: a fused call of the same shape in this trace", ...
};

// Model of a fused kernel on a GPU with `sms` multiprocessors of compute capability `cc` (90 for sm_90).
std::int64_t model_fused_ns(const AttentionShape& shape, bool backward, Precision precision, int cc, int sms);

// For a call that is not fused; `calls` is every call of the trace (for a measured match).
FusedEstimate estimate_fused(const AttentionCall& call, std::span<const AttentionCall> calls, int cc, int sms);

}  // namespace attnprof
