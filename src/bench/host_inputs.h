// Fresh random q, k, v on the host in the bench's dtype and layout (normal(0,1),
// never zeros), the params that point at them, and the NaN poison for outputs.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/params.h"

namespace attnprof::bench {

struct HostInputs {
  std::vector<std::uint8_t> q, k, v, out;
  attention::AttentionParams params;  // points at the vectors above
};

// `shape` supplies sizes, dtype, layout, causal and scale; its pointers are ignored.
HostInputs make_host_inputs(const attention::AttentionParams& shape, unsigned seed);
// 0xff bytes: NaN in bf16, fp16 and fp32.
void poison(std::vector<std::uint8_t>& bytes);

}  // namespace attnprof::bench
