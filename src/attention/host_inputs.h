// Fresh random q, k, v on the host in a shape's dtype and layout (normal(0,1),
// never zeros), the params that point at them, and the NaN poison for outputs:
// the one input generator of the bench and the fused-kernel lab.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/params.h"

namespace attnprof::attention {

struct HostInputs {
  std::vector<std::uint8_t> q, k, v, out;
  AttentionParams params;  // points at the vectors above
};

// `shape` supplies sizes, dtype, layout, causal and scale; its pointers are ignored.
HostInputs make_host_inputs(const AttentionParams& shape, unsigned seed);
// A random tensor the size of `shape`'s output (normal(0,1), out's dense strides): the dO a
// backward is given.
std::vector<std::uint8_t> random_like_out(const AttentionParams& shape, unsigned seed);
// 0xff bytes: NaN in bf16, fp16 and fp32.
void poison(std::vector<std::uint8_t>& bytes);

}  // namespace attnprof::attention
