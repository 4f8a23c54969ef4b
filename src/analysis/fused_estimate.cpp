// The fused-attention time model (see fused_estimate.h).
#include "analysis/fused_estimate.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace attnprof {
namespace {

// Sustained fused forward rates, TFLOP/s (FLOPs 4*B*H*Sq*Skv*D, causal
// counted as computed). sm_90: cuDNN 9.19 on an H200, mid-range of
// BENCHMARKS.md's 30-shape table (D64 263-454, D128 326-647); fp32 from the
// memory-efficient fp32 kernel of the corpus (gpt2_sdpa_fp32_train: 72.5 us for
// B2 H8 S512 D64, one partial wave). sm_80 and others: FlashAttention-2's published A100 rates,
// scaled by the 16-bit tensor-core peak of the architecture.
struct Rate {
  int min_cc;
  double d64, d128, fp32;
};
constexpr Rate kRates[] = {
    {90, 330, 480, 30},
    {89, 110, 140, 8},
    {86, 60, 75, 5},
    {80, 170, 210, 8},
    {75, 35, 40, 3},
    {70, 50, 60, 4},
};

Rate rate_for(int cc) {
  for (const Rate& r : kRates)
    if (cc >= r.min_cc) return r;
  return kRates[std::size(kRates) - 1];
}

constexpr double kLaunchNs = 3000;  // a fused kernel's fixed cost: launch, prologue, epilogue (H200, 1-wave shapes)

}  // namespace

std::int64_t model_fused_ns(const AttentionShape& s, bool backward, Precision precision, int cc, int sms) {
  if (!s.known()) return 0;
  if (cc <= 0) cc = 90;
  if (sms <= 0) sms = 132;
  const Rate r = rate_for(cc);
  const bool fp32 = precision == Precision::FP32;
  const double tflops = fp32 ? r.fp32 : (s.head_dim <= 64 ? r.d64 : r.d128);
  // Tiles of 128 query rows per head (64 rows, two per SM, in fp32), in waves
  // over the SMs: at least one whole wave, which lasts as long as its longest
  // tile (all keys); past one wave, tiles stream through (half the keys on
  // average when causal). Checked against the fused twins of 28 programs kept
  // out of the repository: BENCHMARKS.md.
  const double rows = fp32 ? 64.0 : 128.0;
  const double slots = static_cast<double>(sms) * (fp32 ? 2 : 1);
  const double tiles = static_cast<double>(s.batch * s.q_heads) * std::ceil(static_cast<double>(s.q_len) / rows);
  const double waves = std::max(1.0, tiles / slots);
  double keys = static_cast<double>(s.kv_len);
  if (s.causal.value_or(false) && tiles > slots) keys = keys / 2 + 64;
  const double tile_ns = rows * keys * static_cast<double>(s.head_dim) * 4.0 / (tflops * 1e12 / slots) * 1e9;
  double ns = kLaunchNs + waves * tile_ns;
  // Backward: 2.5x the matmul work at about 3/4 of the rate, and three kernels.
  if (backward) ns = 3 * kLaunchNs + waves * tile_ns * 2.5 / 0.75;
  return static_cast<std::int64_t>(ns);
}

FusedEstimate estimate_fused(const AttentionCall& call, std::span<const AttentionCall> calls, int cc, int sms) {
  if (call.shape.known()) {
    std::vector<std::int64_t> same;
    for (const AttentionCall& c : calls)
      if (c.impl == AttentionImpl::Fused && c.pass == call.pass && c.shape.known() && c.shape == call.shape)
        same.push_back(c.kernel_ns);
    if (!same.empty()) {
      std::nth_element(same.begin(), same.begin() + static_cast<std::ptrdiff_t>(same.size() / 2), same.end());
      return {same[same.size() / 2], "measured: fused calls of the same shape in this trace"};
    }
    const std::int64_t ns = model_fused_ns(call.shape, call.pass == AttentionPass::Backward, call.precision, cc, sms);
    return {ns, fmt::format("modelled from the shape (B{} H{}/{} Sq{} Skv{} D{}{}; {})", call.shape.batch,
                            call.shape.q_heads, call.shape.kv_heads, call.shape.q_len, call.shape.kv_len,
                            call.shape.head_dim, call.shape.causal.value_or(false) ? " causal" : "",
                            call.shape.source)};
  }
  // No shape: a fused kernel does the call's matmuls on 16-bit tensor cores at
  // about cuBLAS's rate, skipping the masked half when the mask was causal.
  std::int64_t ns = call.gemm16_ns;
  if (call.causal_mask) ns /= 2;
  return {std::max<std::int64_t>(ns, static_cast<std::int64_t>(kLaunchNs)),
          "from the call's own matmuls as 16-bit tensor-core work (no shapes in the trace)"};
}

}  // namespace attnprof
