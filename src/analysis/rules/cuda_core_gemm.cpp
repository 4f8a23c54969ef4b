// cuda-core-gemm: GEMMs that ran as FP32 FFMA on CUDA cores. Says whether the
// GPU in the trace had TF32/bf16 tensor cores, and whether the FP32 came from
// upcasting 16-bit inputs (then the fix is to stay in 16-bit) or from FP32
// inputs (then the fix is TF32 or autocast).
#include <algorithm>

#include <fmt/format.h>

#include "analysis/rules/rule.h"

namespace attnprof {

void rule_cuda_core_gemm(const RuleContext& ctx, std::vector<Finding>& out) {
  std::vector<std::size_t> slow;
  std::int64_t slow_ns = 0, gemm_ns = 0;
  int gemms = 0, instances = 0;
  bool upcast = false;
  for (const auto& inst : ctx.group.group.instances) {
    bool here = false;
    for (std::size_t i : inst.activities) {
      const KernelClass& c = ctx.activity(i).cls;
      if (c.op == KernelOp::CastToFp32) upcast = true;
      if (c.category != KernelCategory::Gemm) continue;
      ++gemms;
      gemm_ns += ctx.event(i).dur_ns;
      if (c.unit == MathUnit::CudaCore && (c.precision == Precision::FP32 || c.precision == Precision::FP16)) {
        slow.push_back(i);
        slow_ns += ctx.event(i).dur_ns;
        here = true;
      }
    }
    instances += here;
  }
  if (slow.empty()) return;

  Finding f;
  f.id = "cuda-core-gemm";
  set_cost(f, ctx, slow_ns, instances);
  const auto n = static_cast<double>(std::max<std::size_t>(1, ctx.group.group.instances.size()));
  f.title = fmt::format("{:g} of {:g} GEMMs {} ran on CUDA cores (FP32 FFMA), not tensor cores: {} ({:.0f}% of GPU time)",
                        static_cast<double>(slow.size()) / n, gemms / n, per_instance(ctx),
                        per_instance_ms(ctx, slow_ns), 100.0 * f.share);
  const DeviceSummary& d = ctx.device;
  const int sm = d.compute_major * 10 + d.compute_minor;
  std::string device_note;
  if (d.name.empty()) {
    device_note = "The trace has no device properties; every GPU since Volta (sm_70) has tensor cores.";
  } else if (sm >= 80) {
    device_note = fmt::format("This {} (sm_{}) has bf16, fp16 and TF32 tensor cores; none of them was used.", d.name, sm);
  } else if (sm >= 70) {
    device_note = fmt::format("This {} (sm_{}) has fp16 tensor cores (no TF32 or bf16).", d.name, sm);
  } else {
    device_note = fmt::format("This {} (sm_{}) has no tensor cores: FP32 FFMA is its only GEMM path.", d.name, sm);
    f.severity = Severity::Info;
  }
  f.detail = fmt::format("All {} GEMM kernels of the {} region{} together: {} on CUDA cores of {} GEMM time. {}",
                         gemms, ctx.group.group.name, ctx.group.group.instances.size() == 1 ? "" : "s",
                         format_ms(slow_ns), format_ms(gemm_ns), device_note);
  if (upcast) {
    f.fix = "The FP32 GEMMs come from upcasting 16-bit inputs (see fp32-upcast): keep q, k, v in bf16/fp16 so "
            "cuBLAS picks tensor-core kernels. With PyTorch SDPA, the math backend upcasts; let it dispatch to a "
            "fused backend (torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, "
            "SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])) or write q @ k.transpose(-2, -1) in bf16.";
  } else if (sm >= 70 || d.name.empty()) {
    f.fix = "The inputs are FP32. Allow TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32 = True or "
            "torch.set_float32_matmul_precision('high')), or run the model under torch.autocast('cuda', "
            "dtype=torch.bfloat16) (fp16 on sm_70/75).";
  } else {
    f.fix = "No tensor cores on this GPU: reduce GEMM work or move to a GPU with tensor cores (sm_70+).";
  }
  add_kernel_evidence(f, ctx, slow);
  out.push_back(std::move(f));
}

}  // namespace attnprof
