// cuda-core-gemm: GEMMs that ran as FP32 FFMA on CUDA cores. Inside attention
// they come from SDPA math's upcast or an FP32 attention (fix: stay in 16 bits,
// a fused backend); outside it from FP32 layers (fix: TF32 or autocast where
// the GPU has them). Says what the GPU offered and what share of the GEMM time
// did run on tensor cores.
#include <algorithm>

#include <fmt/format.h>

#include "analysis/rules/rule.h"

namespace attnprof {
namespace {

// Whether the FP32 in these GEMMs comes from casting 16-bit data up: a cast to
// FP32 in the same attention call (which may reach outside a narrowed region).
bool from_upcast(const RuleContext& ctx, const std::vector<std::size_t>& gemms) {
  for (std::size_t i : gemms)
    if (const AttentionCall* c = ctx.call_of(i))
      for (std::size_t j : c->activities)
        if (ctx.activity(j).cls.op == KernelOp::CastToFp32) return true;
  return false;
}

}  // namespace

void rule_cuda_core_gemm(const RuleContext& ctx, std::vector<Finding>& out) {
  std::vector<std::size_t> slow;
  std::int64_t gemm_ns = 0;
  int gemms = 0;
  for (const auto& inst : ctx.group.group.instances)
    for (std::size_t i : inst.activities) {
      const KernelClass& c = ctx.activity(i).cls;
      if (c.category != KernelCategory::Gemm) continue;
      ++gemms;
      gemm_ns += ctx.event(i).dur_ns;
      if (c.unit == MathUnit::CudaCore && (c.precision == Precision::FP32 || c.precision == Precision::FP16))
        slow.push_back(i);
    }
  if (slow.empty()) return;
  const DeviceSummary& d = ctx.device;
  const int sm = d.compute_major * 10 + d.compute_minor;
  const auto n = static_cast<double>(std::max<std::size_t>(1, ctx.group.group.instances.size()));
  const ByScope parts = split_by_scope(ctx, slow);
  for (const Scope scope : {Scope::Attention, Scope::Model}) {
    const auto& these = scope == Scope::Attention ? parts.attention : parts.model;
    if (these.empty()) continue;
    std::int64_t ns = 0;
    for (std::size_t i : these) ns += ctx.event(i).dur_ns;
    Finding f;
    f.id = "cuda-core-gemm";
    f.scope = scope;
    set_cost(f, ctx, ns, instances_with(ctx, these));
    f.activities = these;
    f.title = fmt::format("{:g} of {:g} GEMMs {} ran on CUDA cores (FP32 FFMA) {}: {} ({:.0f}% of GPU time)",
                          static_cast<double>(these.size()) / n, gemms / n, per_instance(ctx), scope_words(scope),
                          per_instance_ms(ctx, ns), 100.0 * f.share);
    std::string device_note;
    const std::string tc_share = ctx.group.tensor_core_share >= 0
                                     ? fmt::format(" {:.0f}% of this region's GEMM time ran on tensor cores.",
                                                   100.0 * ctx.group.tensor_core_share)
                                     : std::string();
    if (d.name.empty()) {
      device_note = "The trace has no device properties; every NVIDIA GPU since Volta (sm_70) has tensor cores.";
    } else if (sm >= 80) {
      device_note = fmt::format("This {} (sm_{}) has bf16, fp16 and TF32 tensor cores; these GEMMs used none.{}",
                                d.name, sm, tc_share);
    } else if (sm >= 70) {
      device_note =
          fmt::format("This {} (sm_{}) has fp16 tensor cores only (no TF32, no bf16).{}", d.name, sm, tc_share);
    } else {
      device_note = fmt::format("This {} (sm_{}) has no tensor cores: FP32 FFMA is its only GEMM path.", d.name, sm);
      f.severity = Severity::Info;
    }
    f.detail = fmt::format(
        "{} of the {} of GEMM time {} ran on CUDA cores {}. {}", format_ms(ns / static_cast<std::int64_t>(n)),
        format_ms(gemm_ns / static_cast<std::int64_t>(n)), per_instance(ctx), scope_words(scope), device_note);
    const bool has_tensor_cores = d.name.empty() || sm >= 70;
    if (has_tensor_cores) f.after_ns = ns / 6;  // bf16 tensor cores vs FP32 FFMA: ~6x on the same GEMMs (H200)
    if (scope == Scope::Attention && from_upcast(ctx, these)) {
      f.fix =
          "These GEMMs are FP32 because attention upcast its 16-bit q, k, v: keep attention in "
          "bf16/fp16 so its matmuls run on tensor cores. PyTorch SDPA's math backend upcasts internally: let SDPA "
          "dispatch to a fused backend (torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, "
          "SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])).";
    } else if (!has_tensor_cores) {
      f.fix = "No tensor cores on this GPU: reduce GEMM work or move to a GPU with tensor cores (sm_70+).";
    } else if (sm >= 80 || d.name.empty()) {
      f.fix = fmt::format(
          "The inputs are FP32. Allow TF32 tensor cores (torch.set_float32_matmul_precision('high')) "
          "or run under torch.autocast('cuda', dtype=torch.bfloat16){}.",
          scope == Scope::Attention ? ", then a fused attention backend" : "");
    } else {
      f.fix =
          "The inputs are FP32 and this GPU has no TF32: run under torch.autocast('cuda', dtype=torch.float16) "
          "to use its fp16 tensor cores.";
    }
    add_kernel_evidence(f, ctx, these);
    out.push_back(std::move(f));
  }
}

}  // namespace attnprof
