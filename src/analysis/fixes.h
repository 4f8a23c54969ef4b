// The fixes for a trace's findings and what each is worth per step, in GPU
// time and in step time. One fix resolves every finding about the same GPU
// work: fused attention resolves unfused-attention (forward and backward) and
// the findings inside those calls (their CUDA-core GEMMs, casts, masks,
// softmax passes); every other finding is a fix of its own.
#pragma once

#include <vector>

#include "analysis/analysis.h"
#include "analysis/host_calls.h"

namespace attnprof {

// The CPU cost of one fused attention call when the trace has none to measure
// (BENCHMARKS.md, "doctor's step-time model"): its ATen op and launch under
// torch.profiler, and its launch calls alone in a trace without CPU ops.
struct FusedCpuCost {
  std::int64_t typical_ns, low_ns, high_ns;
};
FusedCpuCost default_fused_cpu_cost(AttentionPass pass, bool has_cpu_ops);

std::vector<Fix> plan_fixes(const TraceIndex& index, const HostCalls& host, const Analysis& a);

}  // namespace attnprof
