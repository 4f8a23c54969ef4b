// Inputs the fuzzer found problems with (tests/data/fuzz): each must either
// read cleanly or raise InputError, the same in small chunks as whole, and a
// trace that reads must analyse, to the same report when read as doctor reads
// it (ReadDetail::Analysis).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/analysis.h"
#include "report/report.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

TEST(FuzzRegressions, EveryCrashInputIsHandled) {
  const std::filesystem::path dir = std::string(ATTNPROF_SOURCE_DIR) + "/tests/data/fuzz";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    ++files;
    // The outcome must not depend on where the input is cut; the middle size is
    // the fuzz target's own (fuzz/fuzz_trace_reader.cpp), so each input is read
    // as the fuzzer read it.
    const std::size_t sizes[] = {7, 1 + bytes.str().size() % 257, std::size_t{4} << 20};
    int reads_ok = 0;
    for (std::size_t chunk : sizes) {
      ReadOptions options;
      options.chunk_bytes = chunk;
      try {
        const Trace t = read_trace_bytes(bytes.str(), "fuzz", options);
        ++reads_ok;
        const TraceIndex index(t);
        const Analysis a = analyze(index, {}, "fuzz");
        EXPECT_FALSE(json_report(a).empty());
        // What doctor reads: the same events less flows, and the same report.
        ReadOptions lean = options;
        lean.detail = ReadDetail::Analysis;
        Trace l;
        ASSERT_NO_THROW(l = read_trace_bytes(bytes.str(), "fuzz", lean));
        const auto flows =
            std::count_if(t.events.begin(), t.events.end(), [](const Event& e) { return is_flow_phase(e.phase); });
        EXPECT_EQ(l.events.size(), t.events.size() - static_cast<std::size_t>(flows));
        const TraceIndex lean_index(l);
        EXPECT_EQ(json_report(analyze(lean_index, {}, "fuzz")), json_report(a));
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("fuzz: ", 0), 0u) << e.what();
      }
    }
    EXPECT_TRUE(reads_ok == 0 || reads_ok == 3) << "read in some chunk sizes only";
  }
  EXPECT_GE(files, 1);
}

}  // namespace
}  // namespace attnprof
