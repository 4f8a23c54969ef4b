// Bytes each implementation moves through memory per forward, from its passes:
// every kernel reads its inputs once and writes its outputs once (a model, not a
// measurement; the score matrix B*H*S*S_kv dominates the unfused ones).
#pragma once

#include <string>

#include "attention/params.h"

namespace attnprof::bench {

double bytes_moved(const std::string& impl, const attention::AttentionParams& p);

}  // namespace attnprof::bench
