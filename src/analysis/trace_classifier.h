// The classification step of the analysis: every GPU activity of one trace
// through the kernel table (kernel_classifier.h), plus what only the whole
// trace can say about a kernel.
#pragma once

#include <vector>

#include "analysis/kernel_classifier.h"
#include "trace/trace.h"

namespace attnprof {

// Classifies the GPU activities of one trace: each distinct kernel name once
// (names are dense string ids), memcpy and memset by kind. Some GEMM names say
// "16-bit" without saying which (nvjet's "_h_", cuDNN's "f16"); the trace's
// other kernels usually do (ATen's c10::BFloat16 or c10::Half, CUDA's
// __nv_bfloat16 or __half): when they name only one of the two, that is the
// precision of those GEMMs, which half_precision() says once all are seen.
class TraceClassifier {
 public:
  explicit TraceClassifier(const Trace& trace);
  // `e` is a GPU activity (kernel, memcpy, memset).
  const KernelClass& classify(const Event& e);
  // BF16 or FP16 when the trace settles what Half16 means, else Half16.
  Precision half_precision() const;

 private:
  const Trace& trace_;
  std::vector<KernelClass> cache_;  // by kernel name id
  std::vector<char> cached_;
  KernelClass scratch_;
  bool bf16_ = false, fp16_ = false, ambiguous_ = false;
};

}  // namespace attnprof
