// KernelCounter on the CUPTI in-process recorder (src/capture): the forward runs
// inside a recording; its kernel events are the count, and the same trace is
// what --trace writes.
#include <fmt/core.h>

#include "bench/kernel_counter.h"
#include "capture/recorder.h"
#include "trace/trace_writer.h"

namespace attnprof::bench {

namespace {
class CuptiKernelCounter : public KernelCounter {
 public:
  bool available(std::string* why) const override {
    if (!broken_.empty() && why) *why = broken_;
    return broken_.empty();
  }
  void begin() override {
    try {
      capture::start();
    } catch (const capture::RecorderError& e) {
      broken_ = e.what();
    }
  }
  KernelRecording end(const std::string& trace_path) override {
    KernelRecording rec;
    if (!capture::is_recording()) return rec;
    capture::stop();
    const Trace trace = capture::take();
    for (const Event& e : trace.events) {
      if (e.kind == EventKind::Kernel) {
        rec.kernel_names.emplace_back(trace.name(e));
        rec.kernel_us.push_back(static_cast<double>(e.dur_ns) / 1e3);
      }
      if (e.kind == EventKind::GpuMemset) ++rec.memsets;
      if (e.kind == EventKind::GpuMemcpy) ++rec.memcpys;
    }
    if (!trace_path.empty()) write_trace_file(trace, trace_path);
    return rec;
  }

 private:
  std::string broken_;
};
}  // namespace

std::unique_ptr<KernelCounter> make_kernel_counter() { return std::make_unique<CuptiKernelCounter>(); }

}  // namespace attnprof::bench
