// kernel-count: an unfused attention region (softmax between GEMMs, no fused
// attention kernel) runs many kernels where one fused kernel would do; reports
// the launch overhead on the CPU and the GPU idle time between kernels.
#include <cctype>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "analysis/rules/rule.h"

namespace attnprof {

void rule_kernel_count(const RuleContext& ctx, std::vector<Finding>& out) {
  const GroupStats& g = ctx.group;
  // Only focused regions: a whole training step is not "one attention".
  constexpr double kMaxKernels = 64;
  if (g.kernels_per_instance < 2 || g.kernels_per_instance > kMaxKernels) return;
  int softmax = 0, gemm = 0, fused = 0;
  for (const auto& inst : g.group.instances)
    for (std::size_t i : inst.activities) {
      const KernelCategory c = ctx.activity(i).cls.category;
      softmax += c == KernelCategory::Softmax;
      gemm += c == KernelCategory::Gemm;
      fused += c == KernelCategory::FusedAttention;
    }
  if (softmax == 0 || gemm == 0 || fused > 0) return;

  std::int64_t idle = 0, launch = 0;
  for (const InstanceStats& s : g.instances) {
    idle += s.idle_ns;
    launch += s.launch_api_ns;
  }
  const auto n = static_cast<double>(g.instances.size());
  Finding f;
  f.id = "kernel-count";
  set_cost(f, ctx, idle, static_cast<int>(g.instances.size()));
  const std::string per = g.min_kernels == g.max_kernels ? fmt::format("{}", g.min_kernels)
                                                         : fmt::format("{:.1f}", g.kernels_per_instance);
  f.title = fmt::format("{} kernels {} where a fused attention kernel needs 1; GPU idle {} between them",
                        per, per_instance(ctx), per_instance_ms(ctx, idle));
  std::string where = per_instance(ctx);
  where[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(where[0])));
  f.detail = fmt::format("{}: {} kernels, {:.1f} us of CPU in launch calls, {:.1f} us of GPU idle between "
                         "kernels. Each unfused step also writes its intermediate (scores, probabilities) to "
                         "device memory and reads it back.",
                         where, per, static_cast<double>(launch) / n / 1e3,
                         static_cast<double>(idle) / n / 1e3);
  if (g.kernels_per_instance >= 10 && f.severity < Severity::Medium) f.severity = Severity::Medium;
  if (f.severity == Severity::Info) f.severity = Severity::Low;
  f.fix = "Use one fused attention kernel: torch.nn.functional.scaled_dot_product_attention with a fused backend "
          "(flash, cuDNN, efficient), FlashAttention, or `attnprof bench` to compare them on your shapes.";
  f.evidence.push_back({fmt::format("{} kernels {}", per, per_instance(ctx)),
                        static_cast<int>(std::lround(g.kernels_per_instance * n)), 0});
  out.push_back(std::move(f));
}

}  // namespace attnprof
