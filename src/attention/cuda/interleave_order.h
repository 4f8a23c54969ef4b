// The order of the calls within a round of interleaved timing (timer.h), kept free of CUDA so that
// CPU tests can check it.
#pragma once

#include <cstddef>

namespace attnprof::attention::cuda {

// The call timed k-th (0-based) in round `round` of n calls: the order turns by one each round, so
// every call is timed first in 1/n of the rounds and two calls alternate, A B | B A | A B. With one
// fixed order the first call of each round ran about 0.7% slower than the same kernel timed second
// (the same fused kernel under two names, at D=128 causal and at D=64), a bias on every A/B
// comparison's first implementation. Turning the order, the same pairs read 0.999-1.002
// (docs/working-here.md).
constexpr std::size_t interleaved_call(std::size_t round, std::size_t k, std::size_t n) {
  return n == 0 ? 0 : (k + round) % n;
}

}  // namespace attnprof::attention::cuda
