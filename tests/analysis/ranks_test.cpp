// Many traces of one job (ranks.h) on real rank traces: the two gloo ranks of
// tests/data/steps (make_steps.py's idle_comm: 2 ranks on one H200, 4 bf16 4096^3
// matmuls then a 64 MiB all_reduce a step) and, where present, the 4-rank DDP job
// of tests/data/ranks (make_ranks.py; facts.json says which rank was made different).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/finding_gate.h"
#include "analysis/ranks.h"
#include "common/input_error.h"
#include "report/ranks_report.h"
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
    std::vector<std::string> ids;  // distinct, in the report's order
    for (const Finding& f : d.analysis.findings)
      if (std::find(ids.begin(), ids.end(), f.id) == ids.end()) ids.push_back(f.id);
    EXPECT_EQ(r.findings, ids);
    EXPECT_EQ(r.finding_list.size(), d.analysis.findings.size());
    for (const char* item : {"any", "attention", "model", "medium", "gpu-idle"}) {  // doctor DIR --fail-on
      const FindingGate gate = parse_finding_gate({item});
      const auto on_summary = caught_by(r.finding_list, gate), on_analysis = caught_by(d.analysis, gate);
      ASSERT_EQ(on_summary.size(), on_analysis.size()) << item;
      for (std::size_t i = 0; i < on_summary.size(); ++i) EXPECT_EQ(on_summary[i]->id, on_analysis[i]->id) << item;
    }
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

// The 4-rank DDP job of tests/data/ranks: rank 2 built with attn_implementation="eager" (the others
// "sdpa"), rank 3 with 4x the batch. facts.json says so; the expectations come from it.
TEST(Ranks, DdpJobNamesTheRankThatDiffersAndTheSlowest) {
  simdjson::dom::parser parser;
  const simdjson::dom::element facts = parser.load(test::data_file("ranks/facts.json"));
  const int differs = static_cast<int>(std::int64_t(facts["job"]["dispatch_differs_rank"]));
  const int slowest = static_cast<int>(std::int64_t(facts["job"]["slowest_rank"]));
  ASSERT_EQ(std::string_view(facts["job"]["dispatch"]), "eager");
  std::vector<std::string> paths;
  for (simdjson::dom::element t : facts["traces"].get_array())
    paths.push_back(test::data_file("ranks/" + std::string(std::string_view(t["trace"]))));
  ASSERT_EQ(paths.size(), 4u);
  std::vector<RankSummary> ranks = summarize_ranks(paths, {}, 0);
  const CrossRank c = compare_ranks(ranks);
  EXPECT_EQ(c.ranks, 4);
  EXPECT_EQ(c.world_size, 4);
  expect_rows_match_single_doctor(ranks);
  // Eager attention is the unfused chain, forward and backward, on that rank alone.
  ASSERT_EQ(c.dispatch_differs.size(), 1u);
  EXPECT_EQ(c.dispatch_differs[0].ranks, std::vector<int>{differs});
  EXPECT_EQ(c.dispatch_differs[0].dispatch, "unfused fwd+bwd");
  EXPECT_NE(c.dispatch_differs[0].usual.find("fused"), std::string::npos);
  for (const RankSummary& r : ranks) {
    ASSERT_FALSE(r.attention.empty()) << r.rank;
    for (const RankAttention& a : r.attention) EXPECT_EQ(a.impl == AttentionImpl::Unfused, r.rank == differs) << r.rank;
    // 2 layers, one forward and one backward a step: 2 calls of each pass.
    for (const RankAttention& a : r.attention) EXPECT_DOUBLE_EQ(a.calls, 2.0) << r.rank;
  }
  EXPECT_EQ(c.slowest_rank, slowest);
  EXPECT_EQ(c.stragglers, std::vector<int>{slowest});
  // The Markdown report (doctor DIR --markdown) says the same first, then a table row per rank.
  const std::string md = markdown_ranks_report(ranks, c);
  EXPECT_EQ(md.find("### attnprof doctor: 4 traces of one job (world size 4, gloo)"), 0u) << md;
  EXPECT_NE(md.find(fmt::format("- slowest rank: {}, ", slowest)), std::string::npos) << md;
  EXPECT_NE(md.find(fmt::format("- rank {} dispatches attention differently: unfused fwd+bwd", differs)),
            std::string::npos)
      << md;
  for (int r = 0; r < 4; ++r) EXPECT_NE(md.find(fmt::format("\n| {} | ", r)), std::string::npos) << r;
  EXPECT_NE(md.find(fmt::format("| compute | ")), std::string::npos);
}

// The same DDP job under `attnprof record` (tests/data/ranks/record, make_ranks.py --tracer record): one
// trace a rank named by RANK (ddp_llama_record.rank<R>.json.gz), NVTX "step" ranges, no CPU ops and no
// distributedInfo. The facts are the same job's: rank 2 eager, rank 3 with 4x the batch.
TEST(Ranks, DdpJobUnderRecordNamesTheSameRanks) {
  simdjson::dom::parser parser;
  const simdjson::dom::element facts = parser.load(test::data_file("ranks/record/facts.json"));
  ASSERT_EQ(std::string_view(facts["job"]["tracer"]), "attnprof record");
  const int differs = static_cast<int>(std::int64_t(facts["job"]["dispatch_differs_rank"]));
  const int slowest = static_cast<int>(std::int64_t(facts["job"]["slowest_rank"]));
  std::vector<RankSummary> ranks = summarize_ranks(job_traces(test::data_file("ranks/record")), {}, 0);
  const CrossRank c = compare_ranks(ranks);
  ASSERT_EQ(c.ranks, 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(ranks[static_cast<std::size_t>(r)].rank, r);
    EXPECT_EQ(ranks[static_cast<std::size_t>(r)].rank_from, "file name");
  }
  expect_rows_match_single_doctor(ranks);
  ASSERT_EQ(c.dispatch_differs.size(), 1u);
  EXPECT_EQ(c.dispatch_differs[0].ranks, std::vector<int>{differs});
  EXPECT_EQ(c.dispatch_differs[0].dispatch, "unfused fwd+bwd");
  for (const RankSummary& r : ranks) {
    EXPECT_EQ(r.steps, 3) << r.rank;  // the NVTX steps 3-5 recorded
    ASSERT_FALSE(r.attention.empty()) << r.rank;
    for (const RankAttention& a : r.attention) {
      EXPECT_EQ(a.impl == AttentionImpl::Unfused, r.rank == differs) << r.rank;
      EXPECT_DOUBLE_EQ(a.calls, 2.0) << r.rank;  // 2 layers, one forward and one backward a step
    }
  }
  // Without CPU ops gloo's all-reduce is not seen, so nobody is called a straggler; the rank made slow
  // still has the most compute.
  EXPECT_EQ(c.slowest_rank, slowest);
}

// A summary made elsewhere (a worker of attnprof.doctor_many) comes back as JSON: the report made
// from the returned summaries is the report made here, to the byte.
TEST(Ranks, SummariesRoundTripThroughJson) {
  std::vector<RankSummary> here = summarize_ranks(job_traces(test::data_file("ranks")), {}, 0);
  std::vector<RankSummary> back;
  for (const RankSummary& r : here) back.push_back(rank_summary_from_json(rank_summary_json(r)));
  const CrossRank a = compare_ranks(here), b = compare_ranks(back);
  EXPECT_EQ(json_ranks_report(here, a), json_ranks_report(back, b));
  EXPECT_EQ(text_ranks_report(here, a), text_ranks_report(back, b));
  EXPECT_THROW(rank_summary_from_json("{\"path\": 3}"), InputError);
  EXPECT_THROW(rank_summary_from_json("not json"), InputError);
}

// One worker, threads or worker processes (the CLI's): the same summaries, exactly (the processes hand
// theirs back as JSON), whatever the order the workers finish in.
TEST(Ranks, OneWorkerOrManyGiveTheSameRows) {
  std::vector<std::string> paths = gloo_pair();
  for (const char* t : {"ddp_llama_rank0.json.gz", "ddp_llama_rank1.json.gz", "ddp_llama_rank2.json.gz"})
    paths.push_back(test::data_file(std::string("ranks/") + t));
  const std::vector<RankSummary> one = summarize_ranks(paths, {}, 1);
  for (const RankWorkers workers : {RankWorkers::Threads, RankWorkers::Processes})
    for (const unsigned jobs : {2u, 3u, 8u}) {
      const std::vector<RankSummary> many = summarize_ranks(paths, {}, jobs, {}, workers);
      ASSERT_EQ(one.size(), many.size());
      for (std::size_t i = 0; i < one.size(); ++i) {
        EXPECT_EQ(rank_summary_json(one[i]), rank_summary_json(many[i])) << i << " jobs " << jobs;
        EXPECT_GT(many[i].span_ns, 0);
      }
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
  for (const RankWorkers workers : {RankWorkers::Threads, RankWorkers::Processes}) {
    std::vector<RankSummary> ranks = summarize_ranks({gloo_pair()[0], bad}, {}, 2, {}, workers);
    const CrossRank c = compare_ranks(ranks);
    EXPECT_EQ(c.bad, 1);
    EXPECT_EQ(c.ranks, 1);
    ASSERT_EQ(ranks.size(), 2u);
    EXPECT_TRUE(ranks[0].ok());
    EXPECT_FALSE(ranks[1].ok());
    EXPECT_NE(ranks[1].error.find("truncated"), std::string::npos) << ranks[1].error;
    EXPECT_EQ(ranks[1].path, bad);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attnprof
