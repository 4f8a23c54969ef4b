// The CPU registry: the study's implementations in fp64-checked C++, and the
// oracle itself (timed only when asked for).
#include "attention/cpu/cpu_attention.h"
#include "bench/bytes_model.h"
#include "bench/implementations.h"

namespace attnprof::bench {

std::vector<Implementation> cpu_implementations() {
  namespace cpu = attention::cpu;
  return {
      {"math", false, cpu::math, nullptr, "", "PyTorch math sequence: fp32 upcast, q and k scaled, safe softmax",
       bytes::math, "", ""},
      {"manual", false, cpu::manual, nullptr, "",
       "hand-written: QK^T, scale, mask fill, softmax, PV at storage precision", bytes::manual, "math",
       "fp32 upcast and separate q/k scaling"},
      {"flash", false, cpu::flash, nullptr, "", "tiled online softmax, no score matrix", bytes::fused, "manual",
       "the score matrix materialised"},
      {"reference", false, cpu::reference, nullptr, "", "fp64 oracle (timed only when asked for)", bytes::fused, "", "",
       true, true, true},
  };
}

}  // namespace attnprof::bench
