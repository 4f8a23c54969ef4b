#include "analysis/trace_classifier.h"

#include <string_view>

#include "common/text_search.h"

namespace attnprof {

TraceClassifier::TraceClassifier(const Trace& trace)
    : trace_(trace), cache_(trace.strings.size()), cached_(trace.strings.size(), 0) {}

const KernelClass& TraceClassifier::classify(const Event& e) {
  if (e.kind == EventKind::GpuMemcpy) {
    scratch_ = {KernelCategory::Memcpy, MathUnit::None, Precision::Unknown, KernelOp::Copy, "memcpy", "CUDA"};
    return scratch_;
  }
  if (e.kind == EventKind::GpuMemset) {
    scratch_ = {KernelCategory::Memset, MathUnit::None, Precision::Unknown, KernelOp::Fill, "memset", "CUDA"};
    return scratch_;
  }
  if (!cached_[e.name]) {
    const std::string_view n = trace_.name(e);
    const KernelClass cls = classify_kernel(n);
    cache_[e.name] = cls;
    cached_[e.name] = 1;
    ambiguous_ |= cls.precision == Precision::Half16;
    bf16_ |= has(n, "BFloat16") || has(n, "bfloat16") || has(n, "bf16");
    fp16_ |= has(n, "c10::Half") || has(n, "__half") || has(n, "fp16") || has(n, "h16816") || has(n, "h884") ||
             has(n, "h1688");
  }
  return cache_[e.name];
}

Precision TraceClassifier::half_precision() const {
  if (!ambiguous_ || bf16_ == fp16_) return Precision::Half16;
  return bf16_ ? Precision::BF16 : Precision::FP16;
}

}  // namespace attnprof
