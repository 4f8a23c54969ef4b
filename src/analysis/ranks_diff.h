// Two runs of one job compared rank by rank (attnprof diff DIR_A DIR_B): each side's
// rank summaries (analysis/ranks.h), paired by rank; the job's step is its slowest
// rank's median step, since every rank waits for that one at its collectives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/diff.h"
#include "analysis/ranks.h"

namespace attnprof {

struct RankPair {
  int rank = -1;
  const RankSummary* before = nullptr;  // null: the rank is in the second run only (or its trace was bad)
  const RankSummary* after = nullptr;
  std::vector<std::string> fixed;  // finding ids of before that after does not have
  std::vector<std::string> added;  // ... and the other way round
  bool dispatch_changed() const;
  std::int64_t attention_ns(bool after_side) const;
};

// The figures of one run of the job: the slowest rank's median step, the most attention time of a rank.
struct JobFigures {
  std::int64_t step_ns = 0;  // max over the ranks read of their median step
  int step_rank = -1;
  std::int64_t attention_ns = 0;  // max over the ranks of attention time per step
  int attention_rank = -1;
};

struct RanksDiff {
  CrossRank before, after;
  JobFigures job_before, job_after;
  std::vector<RankPair> pairs;  // by rank
};

// Compares two runs; the summaries are ordered and checked as one job each (compare_ranks: throws
// InputError for a set that is not one). The pairs point into `before` and `after`.
RanksDiff diff_ranks(std::vector<RankSummary>& before, std::vector<RankSummary>& after);

// doctor diff's gate on a job: the slowest rank's step (StepTime), the most attention a rank runs
// (AttentionTime; Auto: the step where both runs have steps), and a new attention finding on any rank.
GateVerdict ranks_regression_gate(const RanksDiff& d, double max_growth_pct, GateMetric metric = GateMetric::Auto);

}  // namespace attnprof
