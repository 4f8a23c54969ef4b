// attnprof bench on the CPU: a real small run (checked, timed, ladder), its
// JSON, the byte model, the statistics and the one-line errors for bad input.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bench/bench.h"
#include "bench/bytes_model.h"
#include "bench/timing_stats.h"
#include "common/input_error.h"

namespace attnprof::bench {
namespace {

BenchOptions small_cpu() {
  BenchOptions o;
  o.device = DeviceChoice::Cpu;
  o.batch = 1;
  o.heads = 4;
  o.kv_heads = 2;
  o.seq = 33;
  o.kv_seq = 70;
  o.head_dim = 64;
  o.repeats = 3;
  o.seed = 5;
  return o;
}

TEST(Bench, CpuRunChecksAndTimesEveryImplementation) {
  const BenchRun run = run_bench(small_cpu());
  EXPECT_FALSE(run.on_gpu);
  ASSERT_EQ(run.rows.size(), 3u);  // math, manual, flash; the reference only on request
  for (const ImplResult& r : run.rows) {
    EXPECT_TRUE(r.skipped.empty()) << r.name;
    EXPECT_GT(r.median_ms, 0.0) << r.name;
    EXPECT_LE(r.p10_ms, r.median_ms);
    EXPECT_GE(r.p90_ms, r.median_ms);
    ASSERT_TRUE(r.rel_error.has_value()) << r.name;
    EXPECT_LT(*r.rel_error, 1e-2) << r.name;
    EXPECT_TRUE(r.check_passed);
    EXPECT_EQ(r.slices_checked, 4);
    EXPECT_FALSE(r.kernels.has_value());  // no kernels on the CPU
    EXPECT_EQ(r.runs, 3);
  }
}

TEST(Bench, JsonHasEveryRowAndTheLadder) {
  BenchOptions o = small_cpu();
  o.impls = {"math", "manual", "flash"};
  const std::string json = to_json(run_bench(o));
  EXPECT_NE(json.find("\"name\": \"math\""), std::string::npos);
  EXPECT_NE(json.find("\"name\": \"flash\""), std::string::npos);
  EXPECT_NE(json.find("\"ladder\": ["), std::string::npos);
  EXPECT_NE(json.find("\"from\": \"manual\", \"to\": \"flash\""), std::string::npos);
  EXPECT_EQ(json.find("nan"), std::string::npos);
  EXPECT_EQ(json.back(), '\n');
}

// --interleave is for comparing GPU kernels; a CPU run says so in one line instead of ignoring it.
TEST(Bench, InterleaveOnTheCpuIsAClearError) {
  BenchOptions o = small_cpu();
  o.interleave = true;
  try {
    run_bench(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--interleave times GPU implementations"), std::string::npos) << e.what();
  }
  // Without it, the JSON says the samples were not interleaved.
  o.interleave = false;
  o.impls = {"flash"};
  EXPECT_NE(to_json(run_bench(o)).find("\"interleaved\": false"), std::string::npos);
}

// --page-size is read on a GPU only: on the CPU a clear error; the JSON names the rows that read the paged
// cache (a GPU run's, here set as the bench sets them), and none on a dense run.
TEST(Bench, PagedRowsInTheJson) {
  BenchOptions o = small_cpu();
  o.impls = {"flash"};
  BenchRun run = run_bench(o);
  const std::string dense = to_json(run);
  EXPECT_NE(dense.find("\"page_size\": 0"), std::string::npos) << dense;
  EXPECT_NE(dense.find("\"paged_rows\": []"), std::string::npos) << dense;
  run.page_size = 16;
  run.paged_rows = {"fused", "cudnn"};
  const std::string paged = to_json(run);
  EXPECT_NE(paged.find("\"page_size\": 16"), std::string::npos) << paged;
  const auto rows = paged.find("\"paged_rows\": [\"fused\",");
  EXPECT_NE(rows, std::string::npos) << paged;
  EXPECT_NE(paged.find("\"cudnn\"]", rows), std::string::npos) << paged;
  o.page_size = 16;
  try {
    run_bench(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--page-size"), std::string::npos) << e.what();
  }
}

TEST(Bench, CpuDefaultShapeIsSmallerAndSaysSo) {
  BenchOptions o;
  o.device = DeviceChoice::Cpu;
  o.impls = {"flash"};
  o.repeats = 1;
  const BenchRun run = run_bench(o);
  EXPECT_EQ(run.shape.batch, 1);
  EXPECT_EQ(run.shape.q_len, 512);
  EXPECT_NE(run.note.find("instead of the GPU default"), std::string::npos);
}

// The README's example names GPU implementations: on a CPU they are listed as
// skipped and the rest runs (it exited 2 before).
TEST(Bench, GpuOnlyImplementationsAreSkippedOnTheCpu) {
  if (cuda_implementations().empty()) GTEST_SKIP() << "built without CUDA: no GPU registry to know the names by";
  BenchOptions o = small_cpu();
  o.impls = {"math", "manual", "cudnn", "fused"};
  const BenchRun run = run_bench(o);
  ASSERT_EQ(run.rows.size(), 4u);
  EXPECT_TRUE(run.rows[0].skipped.empty());
  EXPECT_TRUE(run.rows[1].skipped.empty());
  EXPECT_NE(run.rows[2].skipped.find("needs an NVIDIA GPU"), std::string::npos);
  EXPECT_NE(run.rows[3].skipped.find("needs an NVIDIA GPU"), std::string::npos);
}

// A CPU run that would take minutes says so before it starts (60 s of silence before).
TEST(Bench, LongCpuRunsAreWarnedAbout) {
  const auto small = attention::make_params(1, 8, 8, 512, 512, 64, true, attention::DType::BF16);
  EXPECT_EQ(cpu_time_warning(small, 3), "");
  const auto big = attention::make_params(8, 16, 16, 4096, 4096, 64, true, attention::DType::BF16);
  const std::string w = cpu_time_warning(big, 3);
  EXPECT_NE(w.find("warning: this shape takes about"), std::string::npos) << w;
  EXPECT_NE(w.find("minutes on this CPU"), std::string::npos) << w;
}

// The ladder comes from the registry rows: every CPU step the run had both ends of.
TEST(Bench, LadderComesFromTheRegistry) {
  const BenchRun run = run_bench(small_cpu());
  const std::string json = to_json(run);
  for (const Implementation& impl : cpu_implementations()) {
    if (impl.ladder_from.empty() || impl.name == "reference") continue;
    EXPECT_NE(json.find("\"from\": \"" + impl.ladder_from + "\", \"to\": \"" + impl.name + "\""), std::string::npos)
        << impl.name << "\n"
        << json;
    EXPECT_NE(json.find(impl.ladder_cause), std::string::npos) << impl.ladder_cause;
  }
}

// The header is out before the first implementation runs, each row as it finishes.
TEST(Bench, ProgressComesAsTheRunGoes) {
  std::vector<std::string> events;
  BenchProgress p;
  p.started = [&](const BenchRun& r) { events.push_back("started " + std::to_string(r.rows.size())); };
  p.running = [&](const BenchRun&, const std::string& impl) { events.push_back("running " + impl); };
  p.finished = [&](const BenchRun& r, const ImplResult& row) {
    events.push_back("finished " + row.name + " " + std::to_string(r.rows.size()));
  };
  const BenchRun run = run_bench(small_cpu(), p);
  const std::vector<std::string> want = {"started 0",         "running math",  "finished math 1", "running manual",
                                         "finished manual 2", "running flash", "finished flash 3"};
  EXPECT_EQ(events, want);
}

std::string printed(void (*print)(const BenchRun&, std::FILE*), const BenchRun& run) {
  char* buf = nullptr;
  std::size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  print(run, f);
  std::fclose(f);
  std::string s(buf, size);
  std::free(buf);
  return s;
}

// A CPU table has no GPU-only columns; ladder steps this run cannot tell apart say so.
TEST(Bench, CpuTableAndNoiseMarks) {
  BenchRun run;
  run.on_gpu = false;
  run.shape = attention::make_params(1, 8, 8, 512, 512, 64, true, attention::DType::BF16);
  ImplResult math, manual, flash;
  math.name = "math";
  math.median_ms = 40;
  math.p10_ms = 33;
  math.p90_ms = 46;
  manual.name = "manual";
  manual.median_ms = 44;  // the -22.9% .. +14.9% swings between runs: inside math's spread
  manual.p10_ms = 41;
  manual.p90_ms = 53;
  flash.name = "flash";
  flash.median_ms = 20;
  flash.p10_ms = 18;
  flash.p90_ms = 25;
  // The CPU registry's ladder steps, as the runner copies them into its rows.
  for (const Implementation& impl : cpu_implementations())
    for (ImplResult* r : {&math, &manual, &flash})
      if (r->name == impl.name) {
        r->ladder_from = impl.ladder_from;
        r->ladder_cause = impl.ladder_cause;
      }
  run.rows = {math, manual, flash};
  const std::string header = printed(print_header, run);
  EXPECT_EQ(header.find("%GEMM"), std::string::npos) << header;
  EXPECT_EQ(header.find("kernels"), std::string::npos) << header;
  EXPECT_EQ(header.find("GEMM unit"), std::string::npos) << header;
  const std::string footer = printed(print_footer, run);
  const auto line_of = [&](std::string_view step) {
    const auto at = footer.find(step);
    return at == std::string::npos ? std::string() : footer.substr(at, footer.find('\n', at) - at);
  };
  EXPECT_TRUE(line_of("math -> manual").ends_with(" *")) << footer;
  EXPECT_FALSE(line_of("manual -> flash").ends_with(" *")) << footer;
  EXPECT_NE(footer.find("* within noise"), std::string::npos) << footer;
  for (const std::string& text : {header, footer})
    for (std::size_t at = 0, nl; at < text.size(); at = nl + 1) {
      nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      EXPECT_LE(nl - at, 100u) << text.substr(at, nl - at);
    }
  EXPECT_NE(to_json(run).find("\"within_noise\": true"), std::string::npos);
}

// A GPU run's table, with its longest names and units, fits 100 columns too.
TEST(Bench, GpuTableFitsOneHundredColumns) {
  BenchRun run;
  run.on_gpu = true;
  run.device = "NVIDIA H200";
  run.gemm_tflops = 879;
  run.gemm_rate_shape = "bf16 8192x8192x8192 cuBLAS GEMM";
  run.kernel_count_source = "CUPTI recorder";
  run.shape = attention::make_params(8, 16, 16, 1024, 1024, 64, true, attention::DType::BF16);
  ImplResult r;
  r.name = "math-plain-softmax";
  r.median_ms = 12.345;  // a slow GPU row: two-digit milliseconds
  r.p10_ms = 12.301;
  r.p90_ms = 13.456;
  r.tflops = 12.2;
  r.pct_of_gemm = 1.4;
  r.kernels = 20;
  r.gemm_unit = "tensor-core bf16/fp16";
  r.bytes_model = 6.39e9;
  r.rel_error = 4.22e-3;
  r.check_passed = true;
  run.rows = {r};
  const std::string text = printed(print_table, run);
  EXPECT_NE(text.find("TC bf16/fp16"), std::string::npos) << text;
  for (std::size_t at = 0, nl; at < text.size(); at = nl + 1) {
    nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    EXPECT_LE(nl - at, 100u) << text.substr(at, nl - at);
  }
}

TEST(Bench, BadInputIsOneLineInputError) {
  BenchOptions o = small_cpu();
  o.kv_heads = 3;
  EXPECT_THROW(run_bench(o), InputError);
  o = small_cpu();
  o.impls = {"nope"};
  try {
    run_bench(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  o = small_cpu();
  o.seq = 0;
  EXPECT_THROW(run_bench(o), InputError);
  o = small_cpu();
  o.batch = 1 << 20;
  o.seq = 1 << 16;
  EXPECT_THROW(run_bench(o), InputError);
}

TEST(Bench, ByteModelOrdersTheLadder) {
  auto p = attention::make_params(8, 16, 16, 1024, 1024, 64, true, attention::DType::BF16);
  const double io = 2.0 * (4.0 * 8 * 16 * 1024 * 64);  // q, k, v, out in bf16
  EXPECT_DOUBLE_EQ(bytes::fused(p), io);
  EXPECT_GT(bytes::math(p), bytes::math_no_upcast(p));
  EXPECT_GT(bytes::math_no_upcast(p), bytes::math_cached_mask(p));
  EXPECT_GT(bytes::math_cached_mask(p), bytes::math_plain_softmax(p));
  // manual scales the whole score matrix (one pass more than scaling q and k),
  // so it moves more than math-plain-softmax: the model says so, not a typo.
  EXPECT_GT(bytes::manual(p), bytes::math_plain_softmax(p));
  EXPECT_GT(bytes::math_cached_mask(p), bytes::manual(p));
  EXPECT_GT(bytes::manual(p), bytes::fused(p));
}

TEST(Bench, TimingStats) {
  const TimingStats st = timing_stats({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(st.median, 3.0);
  EXPECT_DOUBLE_EQ(st.p10, 1.4);
  EXPECT_DOUBLE_EQ(st.p90, 4.6);
}

}  // namespace
}  // namespace attnprof::bench
