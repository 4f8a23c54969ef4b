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
// The same under torch.profiler from the speed of the host that ran the trace: a multiple of the
// median CPU time of its aten::mul / aten::add ops (`elementwise_ns`). Across 30 traces of Llama and
// GPT-2 on two hosts, with and without record_shapes, an SDPA call took 6.5-13.7x (median 8.5) of
// that median, its backward node 7.8-12.4x (median 10.5).
struct HostSpeedFactors {
  double typical, low, high;
};
constexpr HostSpeedFactors host_speed_factors(AttentionPass pass) {
  return pass == AttentionPass::Forward ? HostSpeedFactors{8.5, 6.5, 11.5} : HostSpeedFactors{10.5, 8.0, 12.5};
}
FusedCpuCost fused_cpu_cost_from_host(AttentionPass pass, std::int64_t elementwise_ns);
// The median CPU time of the trace's aten::mul and aten::add ops (0 when it has fewer than 16).
std::int64_t median_elementwise_op_ns(const TraceIndex& index);

std::vector<Fix> plan_fixes(const TraceIndex& index, const HostCalls& host, const Analysis& a);

}  // namespace attnprof
