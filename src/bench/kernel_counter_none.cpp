// KernelCounter where the CUPTI recorder was not built (no CUDA toolkit).
#include "bench/kernel_counter.h"

namespace attnprof::bench {

namespace {
class NoKernelCounter : public KernelCounter {
 public:
  bool available(std::string* why) const override {
    if (why) *why = "built without the CUPTI recorder";
    return false;
  }
  void begin() override {}
  KernelRecording end(const std::string&) override { return {}; }
};
}  // namespace

std::unique_ptr<KernelCounter> make_kernel_counter() { return std::make_unique<NoKernelCounter>(); }

}  // namespace attnprof::bench
