// Reader and doctor throughput on a large trace: MB/s of JSON text and the
// process's peak resident memory. The trace path comes from ATTNPROF_TRACE
// (build a big one with scripts/make_big_trace.py); one thread.
//
//   ATTNPROF_TRACE=/tmp/big.json build/benchmarks/trace_throughput
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "analysis/analysis.h"
#include "trace/trace_reader.h"

namespace {

std::string trace_path() {
  const char* p = std::getenv("ATTNPROF_TRACE");
  return p != nullptr ? p : "examples/traces/sdpa_math.json";
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void report(benchmark::State& state, std::uint64_t bytes, std::size_t events) {
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(trace_path())) / 1e6;
  state.counters["json_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["events"] = static_cast<double>(events);
  state.counters["peak_rss_MB"] = peak_rss_mb();
}

void BM_Read(benchmark::State& state) {
  std::uint64_t bytes = 0;
  std::size_t events = 0;
  for (auto _ : state) {
    const attnprof::Trace t = attnprof::read_trace_file(trace_path());
    bytes = t.source_bytes;
    events = t.events.size();
    benchmark::DoNotOptimize(t.events.data());
  }
  report(state, bytes, events);
}

// What `attnprof doctor` does: read what the analysis needs, then analyse.
constexpr attnprof::ReadOptions kForAnalysis{.detail = attnprof::ReadDetail::Analysis};

void BM_ReadForAnalysis(benchmark::State& state) {
  std::uint64_t bytes = 0;
  std::size_t events = 0;
  attnprof::ReadStats stats;
  attnprof::ReadOptions options = kForAnalysis;
  options.stats = &stats;
  for (auto _ : state) {
    const attnprof::Trace t = attnprof::read_trace_file(trace_path(), options);
    bytes = t.source_bytes;
    events = t.events.size();
    benchmark::DoNotOptimize(t.events.data());
  }
  report(state, bytes, events);
  // How traceEvents was cut: line batches (the fast path) vs scanner batches.
  state.counters["line_batches"] = static_cast<double>(stats.line_batches);
  state.counters["line_misses"] = static_cast<double>(stats.line_misses);
  state.counters["scanned"] = static_cast<double>(stats.scanned_batches);
}

void BM_ReadAndAnalyze(benchmark::State& state) {
  std::uint64_t bytes = 0;
  std::size_t events = 0;
  for (auto _ : state) {
    const attnprof::Trace t = attnprof::read_trace_file(trace_path(), kForAnalysis);
    const attnprof::TraceIndex index(t);
    const attnprof::Analysis a = attnprof::analyze(t, index, {}, trace_path());
    bytes = t.source_bytes;
    events = t.events.size();
    benchmark::DoNotOptimize(a.findings.data());
  }
  report(state, bytes, events);
}

// The analysis alone (index, regions, rules) on a trace read once beforehand
// (as for the analysis);
// MB/s is still per byte of JSON, so it compares with the two above.
void BM_Analyze(benchmark::State& state) {
  const attnprof::Trace t = attnprof::read_trace_file(trace_path(), kForAnalysis);
  for (auto _ : state) {
    const attnprof::TraceIndex index(t);
    const attnprof::Analysis a = attnprof::analyze(t, index, {}, trace_path());
    benchmark::DoNotOptimize(a.findings.data());
  }
  report(state, t.source_bytes, t.events.size());
}

BENCHMARK(BM_Read)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ReadForAnalysis)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Analyze)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ReadAndAnalyze)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
