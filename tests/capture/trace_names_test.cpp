// Where the processes of a recorded program write their traces (capture/trace_names.h): the program
// PATH, a launcher's workers PATH.rank<R>, other processes PATH.<pid>; two of one rank never share a file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "capture/trace_names.h"

namespace attnprof::capture {
namespace {

namespace fs = std::filesystem;

TEST(TraceNames, RankFromTheLauncher) {
  EXPECT_EQ(launcher_rank("3", "1"), "3");  // RANK first (torchrun sets both)
  EXPECT_EQ(launcher_rank(nullptr, "1"), "1");
  EXPECT_EQ(launcher_rank("", "2"), "2");
  EXPECT_EQ(launcher_rank("x3", nullptr), "");  // not a number: not a rank
  EXPECT_EQ(launcher_rank("-1", "0"), "0");
  EXPECT_EQ(launcher_rank(nullptr, nullptr), "");
}

TEST(TraceNames, PathPerProcess) {
  EXPECT_EQ(process_trace_path("out/t.json.gz", true, 42, "0"), "out/t.json.gz");  // the program itself
  EXPECT_EQ(process_trace_path("out/t.json.gz", false, 42, "0"), "out/t.rank0.json.gz");
  EXPECT_EQ(process_trace_path("out/t.json", false, 42, ""), "out/t.42.json");
  EXPECT_EQ(process_trace_path("trace", false, 42, "7"), "trace.rank7");
}

TEST(TraceNames, ClaimsKeepTwoProcessesOfOneRankApart) {
  const fs::path dir = fs::temp_directory_path() / ("attnprof_trace_names_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string list = trace_list_path((dir / "t.json.gz").string());
  const std::string rank0 = (dir / "t.rank0.json.gz").string();
  EXPECT_EQ(claim_trace_path(list, rank0, 100, "0"), rank0);
  EXPECT_EQ(claim_trace_path(list, rank0, 100, "0"), rank0);  // the same process again: still its own
  EXPECT_EQ(claim_trace_path(list, rank0, 101, "0"), (dir / "t.rank0.101.json.gz").string());
  append_trace_list(list, 102, "1", "");  // started CUDA, launched nothing
  const auto written = read_trace_list(list);
  ASSERT_EQ(written.size(), 4u);
  EXPECT_EQ(written[0].pid, 100);
  EXPECT_EQ(written[0].rank, "0");
  EXPECT_EQ(written[2].path, (dir / "t.rank0.101.json.gz").string());
  EXPECT_EQ(written[3].pid, 102);
  EXPECT_TRUE(written[3].path.empty());
  EXPECT_TRUE(read_trace_list((dir / "missing.traces").string()).empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnprof::capture
