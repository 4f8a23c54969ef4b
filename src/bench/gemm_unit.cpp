// The GEMM unit of a forward, from the kernel classifier (CUDA-free code the
// bench links like the doctor does).
#include <set>

#include <fmt/core.h>

#include "analysis/kernel_classifier.h"
#include "bench/kernel_counter.h"

namespace attnprof::bench {

std::string gemm_unit(const std::vector<std::string>& kernel_names, attention::DType dtype) {
  if (kernel_names.empty()) return "n/a";
  std::set<std::string> units;
  bool fused = false;
  for (const auto& name : kernel_names) {
    KernelClass c = classify_kernel(name);
    // A tensor-core GEMM whose name does not say its 16-bit type (cuBLAS's nvjet "_h_"), or says
    // nothing: the bench knows what it fed it.
    if (c.unit == MathUnit::TensorCore && (c.precision == Precision::Half16 || c.precision == Precision::Unknown) &&
        dtype != attention::DType::FP32)
      c.precision = dtype == attention::DType::BF16 ? Precision::BF16 : Precision::FP16;
    if (c.category == KernelCategory::Gemm)
      units.insert(fmt::format("{} {}", to_string(c.unit), to_string(c.precision)));
    fused = fused || c.category == KernelCategory::FusedAttention;
  }
  if (units.empty()) return fused ? "fused attention" : "no GEMM kernel";
  std::string out;
  for (const auto& u : units) out += (out.empty() ? "" : ", ") + u;
  return out;
}

}  // namespace attnprof::bench
