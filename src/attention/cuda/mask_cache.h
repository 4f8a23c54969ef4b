// Causal masks built once per shape and kept for the life of the process: the
// hand-written path's boolean "masked out" mask and the cached additive mask of
// math-cached-mask. Built on the caller's stream on first use.
#pragma once

#include <cuda_runtime.h>

#include "attention/params.h"

namespace attnprof::attention::cuda {

// bool [q_len, kv_len]: true where the key is hidden from the query.
const bool* cached_masked_out(const AttentionParams& p, cudaStream_t stream);
// [q_len, kv_len] of `dtype`: 0 where visible, -inf where hidden.
const void* cached_additive_mask(const AttentionParams& p, DType dtype, cudaStream_t stream);

}  // namespace attnprof::attention::cuda
