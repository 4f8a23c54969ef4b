// The GEMM-unit hook: the bench stays independent of the classifier; the CLI
// plugs it in.
#include "bench/kernel_counter.h"

namespace attnprof::bench {

namespace {
GemmUnitFn classifier = nullptr;
}

void set_gemm_unit_classifier(GemmUnitFn fn) { classifier = fn; }
GemmUnitFn gemm_unit_classifier() { return classifier; }

std::string gemm_unit(const std::vector<std::string>& kernel_names) {
  if (!classifier || kernel_names.empty()) return "n/a";
  return classifier(kernel_names);
}

}  // namespace attnprof::bench
