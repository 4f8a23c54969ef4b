// The CPU implementations as bench entries.
#include "attention/cpu/cpu_attention.h"
#include "bench/implementations.h"

namespace attnprof::bench {

std::vector<Implementation> cpu_implementations() {
  namespace cpu = attention::cpu;
  return {
      {"math", false, cpu::math, nullptr, "", "PyTorch math sequence: fp32 upcast, q and k scaled, safe softmax"},
      {"manual", false, cpu::manual, nullptr, "",
       "hand-written: QK^T, scale, mask fill, softmax, PV at storage precision"},
      {"flash", false, cpu::flash, nullptr, "", "tiled online softmax, no score matrix"},
      {"reference", false, cpu::reference, nullptr, "", "fp64 oracle"},
  };
}

}  // namespace attnprof::bench
