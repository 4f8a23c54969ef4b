// Median and spread (10th/90th percentile) of a set of timings.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace attnprof::bench {

struct TimingStats {
  double median = 0.0, p10 = 0.0, p90 = 0.0;
};

inline double percentile(std::vector<double> sorted, double q) {
  if (sorted.empty()) return 0.0;
  std::sort(sorted.begin(), sorted.end());
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - static_cast<double>(lo));
}

inline TimingStats timing_stats(const std::vector<double>& ms) {
  return {percentile(ms, 0.5), percentile(ms, 0.1), percentile(ms, 0.9)};
}

}  // namespace attnprof::bench
