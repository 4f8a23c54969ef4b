// Decode calls whose keys no kernel split over the GPU (unsplit_decode.h).
#include "analysis/unsplit_decode.h"

#include "analysis/fused_estimate.h"

namespace attnprof {

std::vector<UnsplitDecode> find_unsplit_decodes(const TraceIndex& index, const AttentionView& view,
                                                const DeviceSummary& device) {
  std::vector<UnsplitDecode> out;
  if (device.num_sms <= 0) return out;
  const Trace& t = index.trace();
  const double peak = device_memory_tb_per_s(device);
  for (std::size_t c = 0; c < view.calls.size(); ++c) {
    const AttentionCall& call = view.calls[c];
    if (call.impl != AttentionImpl::Fused || call.pass != AttentionPass::Forward ||
        call.phase != AttentionPhase::Decode || call.combines_splits || !call.main_kernel)
      continue;
    const GpuArgs* g = t.args(index.event(index.activities()[*call.main_kernel]));
    if (g == nullptr || g->grid[0] <= 0 || g->grid[1] <= 0 || g->grid[2] <= 0) continue;
    UnsplitDecode u;
    u.call = c;
    u.ctas = std::int64_t{g->grid[0]} * g->grid[1] * g->grid[2];
    u.sms = device.num_sms;
    u.kernel_ns = call.kernel_ns;
    if (u.ctas * kFewCtas > u.sms || u.kernel_ns <= 0) continue;
    if (call.shape.known()) {
      u.bytes = attention_bytes(call.shape, call.precision);
      u.share = u.bytes / static_cast<double>(u.kernel_ns) / (peak * 1e3);
      u.split_ns = model_fused_ns(call.shape, false, call.precision, device);
      if (u.share >= kLowShare || u.split_ns * kSplitGain > u.kernel_ns) continue;
    }
    out.push_back(u);
  }
  return out;
}

}  // namespace attnprof
