// Counting the kernels a forward launches by recording them, never by assuming.
// The CUPTI in-process recorder (src/capture) backs it where it was built;
// elsewhere available() is false and the bench prints "n/a".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attention/params.h"

namespace attnprof::bench {

struct KernelRecording {
  std::vector<std::string> kernel_names;  // GPU kernels in launch order
  std::vector<double> kernel_us;          // their durations, same order
  int memsets = 0, memcpys = 0;           // other GPU activity in the region
};

class KernelCounter {
 public:
  virtual ~KernelCounter() = default;
  // False (with the reason in *why) when kernels cannot be recorded here.
  virtual bool available(std::string* why) const = 0;
  virtual void begin() = 0;
  // Ends the region; the caller has synchronized the device. When trace_path is
  // not empty, the region is also written there as a Kineto-compatible trace.
  virtual KernelRecording end(const std::string& trace_path) = 0;
};

std::unique_ptr<KernelCounter> make_kernel_counter();

// GEMM unit and precision of a forward from its kernel names, by the kernel
// classifier (src/analysis): every distinct "unit precision" of its GEMM
// kernels ("tensor-core bf16"), "fused attention" for one fused kernel, "n/a"
// when there are no names. A tensor-core GEMM whose name leaves its 16-bit type open
// gets `dtype`'s (the bench's inputs).
std::string gemm_unit(const std::vector<std::string>& kernel_names, attention::DType dtype);

}  // namespace attnprof::bench
