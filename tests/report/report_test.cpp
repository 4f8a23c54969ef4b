// The reports: JSON is valid and carries the documented fields with the
// analysis's numbers; the text report says the key facts.
#include "report/report.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include "report/format.h"
#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

Analysis analyse(const std::string& file) {
  static std::vector<std::unique_ptr<Trace>> keep;
  keep.push_back(std::make_unique<Trace>(read_trace_file(test::example_trace(file))));
  static std::vector<std::unique_ptr<TraceIndex>> indexes;
  indexes.push_back(std::make_unique<TraceIndex>(*keep.back()));
  return analyze(*indexes.back(), {}, file);
}

// The doctor reads with ReadDetail::Analysis; on every real trace the report
// is the same as from a full read.
TEST(JsonReport, SameFromAFullReadAndAnAnalysisRead) {
  const auto files = test::real_trace_files();
  ASSERT_GE(files.size(), 15u);
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    const Trace full = read_trace_file(path);
    const Trace lean = read_trace_file(path, ReadOptions{.detail = ReadDetail::Analysis});
    const TraceIndex full_index(full), lean_index(lean);
    EXPECT_EQ(json_report(analyze(full_index, {}, path)), json_report(analyze(lean_index, {}, path)));
    EXPECT_EQ(text_report(analyze(full_index, {}, path)), text_report(analyze(lean_index, {}, path)));
  }
}

TEST(JsonReport, ValidWithDocumentedFields) {
  const Analysis a = analyse("sdpa_math.json");
  const std::string text = json_report(a);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << text.substr(0, 300);

  simdjson::dom::array regions = doc["regions"].get_array();
  ASSERT_EQ(regions.size(), 3u);
  for (auto r : regions) {
    EXPECT_EQ(std::string_view(r["group"].get_string()), "fwd");
    EXPECT_EQ(int64_t(r["kernels"].get_int64()), 20);
    EXPECT_GT(double(r["gpu_time_ms"].get_double()), 5.0);  // one fwd: the study's 5.2 ms
  }
  simdjson::dom::array kernels = doc["kernels"].get_array();
  int gemm_count = 0;
  for (auto k : kernels) {
    for (const char* key : {"name", "category", "unit", "precision", "op"}) EXPECT_TRUE(k[key].is_string()) << key;
    EXPECT_TRUE(k["count"].is_int64());
    EXPECT_TRUE(k["total_ms"].is_double());
    if (std::string_view(k["category"].get_string()) == "gemm") {
      gemm_count += static_cast<int>(int64_t(k["count"].get_int64()));
      EXPECT_EQ(std::string_view(k["unit"].get_string()), "cuda-core");
      EXPECT_EQ(std::string_view(k["precision"].get_string()), "fp32");
    }
  }
  EXPECT_EQ(gemm_count, 6);
  simdjson::dom::array findings = doc["findings"].get_array();
  ASSERT_EQ(findings.size(), a.findings.size());
  std::size_t i = 0;
  for (auto f : findings) {
    EXPECT_EQ(std::string_view(f["id"].get_string()), a.findings[i].id);
    // Per instance of its region (3 fwd), and the total named so.
    EXPECT_NEAR(double(f["total_ms"].get_double()), static_cast<double>(a.findings[i].time_ns) / 1e6, 1e-4);
    EXPECT_NEAR(double(f["time_ms"].get_double()), static_cast<double>(a.findings[i].time_ns) / 3e6, 1e-4);
    EXPECT_NEAR(double(f["share"].get_double()), a.findings[i].share, 1e-4);
    EXPECT_TRUE(f["severity"].is_string());
    EXPECT_TRUE(f["evidence"].is_array());
    EXPECT_FALSE(std::string_view(f["fix"].get_string()).empty());
    ++i;
  }
  EXPECT_EQ(std::string_view(doc["device"]["name"].get_string()), "NVIDIA H200");
}

TEST(JsonReport, NoFindingsIsAnEmptyList) {
  const std::string text = json_report(analyse("sdpa_flash.json"));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(simdjson::dom::array(doc["findings"].get_array()).size(), 0u);
}

TEST(TextReport, SaysTheFacts) {
  const std::string text = text_report(analyse("sdpa_math.json"));
  EXPECT_NE(text.find("GPU: NVIDIA H200 (sm_90, 132 SMs)"), std::string::npos);
  EXPECT_NE(text.find("Region 'fwd': 3 instances"), std::string::npos);
  EXPECT_NE(text.find("[high] cuda-core-gemm"), std::string::npos);
  for (const char* id : {"fp32-upcast", "mask-rebuilt", "safe-softmax", "unfused-attention"})
    EXPECT_NE(text.find(std::string("] ") + id), std::string::npos) << id;
  const std::string quiet = text_report(analyse("sdpa_cudnn.json"));
  EXPECT_NE(quiet.find("No findings"), std::string::npos);
}

}  // namespace
}  // namespace attnprof

// Counted nouns: no ending for exactly one, the regular or given ending otherwise (also for
// fractional counts, "0.5 calls per forward").
TEST(ReportFormat, PluralEndings) {
  EXPECT_EQ(attnprof::report::plural(1), "");
  EXPECT_EQ(attnprof::report::plural(2), "s");
  EXPECT_EQ(attnprof::report::plural(0), "s");
  EXPECT_EQ(attnprof::report::plural(0.5), "s");
  EXPECT_EQ(attnprof::report::plural(1, "es"), "");
  EXPECT_EQ(attnprof::report::plural(3, "es"), "es");
}

// Shares as whole percents, but a sliver is not called nothing nor a near-whole all: the continuous-batching
// program's steps keep the GPU busy 6 of 1288 ms (its cuDNN plans built on the CPU each forward).
TEST(ReportFormat, PercentKeepsSliversAndWholes) {
  using attnprof::report::percent;
  EXPECT_EQ(percent(6.162 / 1288.404), "<1%");
  EXPECT_EQ(percent(0), "0%");
  EXPECT_EQ(percent(0.006), "1%");
  EXPECT_EQ(percent(0.42), "42%");
  EXPECT_EQ(percent(0.996), ">99%");
  EXPECT_EQ(percent(1), "100%");
  EXPECT_EQ(percent(-1), "-");
}

// Markdown text: a kernel's template brackets would open an HTML tag and a bar a table cell; an arrow
// between two figures stays an arrow (an agent reads the raw text), a '>' that opens a line no quote.
TEST(ReportFormat, MarkdownText) {
  using attnprof::report::md;
  EXPECT_EQ(md("5.199 -> 0.285 ms"), "5.199 -> 0.285 ms");
  EXPECT_EQ(md("softmax_warp_forward<float, 11>"), "softmax_warp_forward&lt;float, 11>");
  EXPECT_EQ(md("a | b"), "a \\| b");
  EXPECT_EQ(md("> 10%"), "\\> 10%");
  EXPECT_EQ(md("two\nlines `x`"), "two lines 'x'");
}
