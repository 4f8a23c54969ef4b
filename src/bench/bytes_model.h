// Bytes each implementation moves through memory per forward, from its passes:
// every kernel reads its inputs once and writes its outputs once (a model, not a
// measurement; the score matrix B*H*S*S_kv dominates the unfused ones). Each
// registry row (implementations.h) names its model.
#pragma once

#include "attention/params.h"

namespace attnprof::bench::bytes {

double math(const attention::AttentionParams& p);  // upcast (in 16 bits), mask built, safe softmax
double math_no_upcast(const attention::AttentionParams& p);
double math_cached_mask(const attention::AttentionParams& p);
double math_plain_softmax(const attention::AttentionParams& p);
double manual(const attention::AttentionParams& p);
double eager(const attention::AttentionParams& p);               // Hugging Face eager
double eager_fp32_softmax(const attention::AttentionParams& p);  // and softmax(dtype=float32)
double fused(const attention::AttentionParams& p);               // q, k, v read once, out written once

}  // namespace attnprof::bench::bytes
