// Many traces of one job (ranks.h) on real rank traces: the two gloo ranks of
// tests/data/steps (make_steps.py's idle_comm: 2 ranks on one H200, 4 bf16 4096^3
// matmuls then a 64 MiB all_reduce a step) and, where present, the 4-rank DDP job
// of tests/data/ranks (make_ranks.py; facts.json says which rank was made different).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/ranks.h"
#include "common/input_error.h"
#include "test_doctor.h"
#include "test_paths.h"

namespace attnprof {
namespace {

std::vector<std::string> gloo_pair() {
  return {test::data_file("steps/idle_comm_rank0.json.gz"), test::data_file("steps/idle_comm_rank1.json.gz")};
}

// Every rank's row is what doctor says on that rank's file alone.
void expect_rows_match_single_doctor(const std::vector<RankSummary>& ranks) {
  for (const RankSummary& r : ranks) {
    SCOPED_TRACE(r.path);
    ASSERT_TRUE(r.ok()) << r.error;
    const test::Doctor d(r.path);
    const GroupStats& g = d.analysis.groups[static_cast<std::size_t>(d.analysis.step_group)];
    const StepTime& s = *g.steps.median_step();
    EXPECT_EQ(r.region, g.group.name);
    EXPECT_EQ(r.steps, static_cast<int>(g.group.instances.size()));
    EXPECT_EQ(r.span_ns, s.span_ns);
    EXPECT_EQ(r.busy_ns, s.busy_ns);
    EXPECT_EQ(r.bound, s.bound);
    ASSERT_EQ(r.findings.size(), d.analysis.findings.size());
    for (std::size_t i = 0; i < r.findings.size(); ++i) EXPECT_EQ(r.findings[i], d.analysis.findings[i].id);
    ASSERT_EQ(r.attention.size(), g.attention.size());
  }
}

TEST(Ranks, GlooPairRowsAreEachRanksDoctor) {
  std::vector<RankSummary> ranks = summarize_ranks({gloo_pair()[1], gloo_pair()[0]}, {}, 2);
  const CrossRank c = compare_ranks(ranks);
  // Ranks from distributedInfo, in rank order whatever the order given.
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 0);
  EXPECT_EQ(ranks[1].rank, 1);
  EXPECT_EQ(ranks[0].rank_from, "distributedInfo");
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.backend, "gloo");
  expect_rows_match_single_doctor(ranks);
  // Both ranks run the same matmuls and wait on the all_reduce: comm-bound, no straggler.
  for (const RankSummary& r : ranks) {
    EXPECT_EQ(r.bound, StepBound::Comm);
    EXPECT_GT(r.comm_exposed_ns, r.span_ns / 2);
  }
  EXPECT_TRUE(c.stragglers.empty());
  EXPECT_TRUE(c.dispatch_differs.empty());
  EXPECT_EQ(c.span.min, std::min(ranks[0].span_ns, ranks[1].span_ns));
  EXPECT_EQ(c.span.max, std::max(ranks[0].span_ns, ranks[1].span_ns));
}

TEST(Ranks, OneWorkerOrManyGiveTheSameRows) {
  std::vector<RankSummary> one = summarize_ranks(gloo_pair(), {}, 1), two = summarize_ranks(gloo_pair(), {}, 2);
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].span_ns, two[i].span_ns);
    EXPECT_EQ(one[i].compute_ns, two[i].compute_ns);
  }
}

TEST(Ranks, NotOneJobIsRefused) {
  // The same rank twice.
  std::vector<RankSummary> twice = summarize_ranks({gloo_pair()[0], gloo_pair()[0]}, {}, 1);
  try {
    compare_ranks(twice);
    ADD_FAILURE() << "a rank twice was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("are both rank 0"), std::string::npos) << e.what();
  }
  // A trace of another world size.
  std::vector<RankSummary> mixed = summarize_ranks(gloo_pair(), {}, 1);
  mixed[1].world_size = 4;
  try {
    compare_ranks(mixed);
    ADD_FAILURE() << "world sizes 2 and 4 were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("world size"), std::string::npos) << e.what();
  }
}

// The rank a file name says, for traces without distributedInfo (attnprof record's, older Kineto's).
TEST(Ranks, RankFromTheFileName) {
  EXPECT_EQ(rank_in_name("/x/trace_rank-3.json.gz"), 3);
  EXPECT_EQ(rank_in_name("run/rank12.pt.trace.json"), 12);
  EXPECT_EQ(rank_in_name("negative_queue_length_values_check__rank0.json.gz"), 0);
  EXPECT_EQ(rank_in_name("Rank_7.json"), 7);
  EXPECT_EQ(rank_in_name("/ranked/trace.json"), std::nullopt);
  EXPECT_EQ(rank_in_name("cranky.json"), std::nullopt);
  // Two of HTA's traces: rank 0 of a 128-rank job and rank 0 of a 16-rank one (their distributedInfo).
  std::vector<RankSummary> hta = summarize_ranks({test::data_file("trace_filter__sampled_rank-0.json.gz"),
                                                  test::data_file("negative_queue_length_values_check__rank0.json.gz")},
                                                 {}, 1);
  EXPECT_EQ(hta[0].world_size, 128);
  EXPECT_EQ(hta[1].world_size, 16);
  EXPECT_THROW(compare_ranks(hta), InputError);
}

TEST(Ranks, ABadTraceIsNamedAndTheOthersAnalysed) {
  const auto dir = std::filesystem::temp_directory_path() / ("attnprof_ranks_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string bad = (dir / "job_rank1.json").string();
  std::ofstream(bad) << R"({"traceEvents": [{"ph": "X", )";
  std::vector<RankSummary> ranks = summarize_ranks({gloo_pair()[0], bad}, {}, 2);
  const CrossRank c = compare_ranks(ranks);
  EXPECT_EQ(c.bad, 1);
  EXPECT_EQ(c.ranks, 1);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_TRUE(ranks[0].ok());
  EXPECT_FALSE(ranks[1].ok());
  EXPECT_NE(ranks[1].error.find("truncated"), std::string::npos) << ranks[1].error;
  EXPECT_EQ(ranks[1].path, bad);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attnprof
