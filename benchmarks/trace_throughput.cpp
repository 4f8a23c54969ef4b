// Reader and doctor throughput on a large trace: MB/s of JSON text and the
// process's peak resident memory. The trace path comes from ATTNPROF_TRACE
// (build a big one with scripts/dev/make_big_trace.py); one thread. BM_StreamWrite: the
// recorder's streamed writer on a recorded trace (ATTNPROF_STREAM_TRACE).
//
//   ATTNPROF_TRACE=/tmp/big.json build/benchmarks/trace_throughput
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <simdjson.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

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
  options.map_file = state.range(0) != 0;
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
  attnprof::ReadOptions options = kForAnalysis;
  options.map_file = state.range(0) != 0;
  for (auto _ : state) {
    const attnprof::Trace t = attnprof::read_trace_file(trace_path(), options);
    const attnprof::TraceIndex index(t);
    const attnprof::Analysis a = attnprof::analyze(index, {}, trace_path());
    bytes = t.source_bytes;
    events = t.events.size();
    benchmark::DoNotOptimize(a.findings.data());
  }
  report(state, bytes, events);
}

// The analysis alone (index, regions, rules) on a trace read once beforehand
// for the analysis; MB/s is still per byte of JSON, so it compares with the reads.
void BM_Analyze(benchmark::State& state) {
  const attnprof::Trace t = attnprof::read_trace_file(trace_path(), kForAnalysis);
  for (auto _ : state) {
    const attnprof::TraceIndex index(t);
    const attnprof::Analysis a = attnprof::analyze(index, {}, trace_path());
    benchmark::DoNotOptimize(a.findings.data());
  }
  report(state, t.source_bytes, t.events.size());
}

// The ceiling simdjson itself sets: On-Demand walking ~512 KiB of the trace's
// events (one reader window, in cache), looking at every key and taking each
// value's raw token, nothing stored. MB/s here bounds what the reader can reach
// on this machine with simdjson doing the parsing.
void BM_SimdjsonWalkFloor(benchmark::State& state) {
  std::ifstream in(trace_path(), std::ios::binary);
  std::string text(2u << 20, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  const std::size_t key = text.find("\"traceEvents\"");
  const std::size_t open = key == std::string::npos ? key : text.find('[', key);
  const std::size_t cut = open == std::string::npos ? open : text.find("},\n", open + (512u << 10));
  if (cut == std::string::npos) {
    state.SkipWithError("the trace has no 512 KiB of events to walk");
    return;
  }
  const simdjson::padded_string batch(text.substr(open, cut + 1 - open) + "]");
  simdjson::ondemand::parser parser;
  std::size_t sink = 0;
  for (auto _ : state) {
    simdjson::ondemand::document doc = parser.iterate(batch);
    for (auto element : doc.get_array())
      for (auto field : element.get_object()) {
        sink += field.key().value_unsafe().raw()[0];
        sink += field.value().raw_json_token().value_unsafe().size();
      }
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(static_cast<std::int64_t>(batch.size()) * state.iterations());
}

// attnprof record's streamed writer: a recorded trace's events (kernels, launch calls, NVTX ranges),
// repeated to 200k, appended in ten pieces, as the recorder does once a second; events per second is how fast a
// recorded program may make events before the writer thread falls behind. Arg: gzip (1) or plain JSON (0).
void BM_StreamWrite(benchmark::State& state) {
  const char* env = std::getenv("ATTNPROF_STREAM_TRACE");
  const attnprof::Trace trace =
      attnprof::read_trace_file(env != nullptr ? env : "tests/data/corpus/llama_sdpa_bf16_train_record.json.gz");
  constexpr std::size_t kPieces = 10, kEvents = 200000;  // the trace's events over and over, to kEvents
  std::vector<attnprof::Trace> pieces(kPieces);
  for (std::size_t n = 0; n < kEvents && !trace.events.empty(); ++n) {  // re-interned, as the recorder's are
    const std::size_t i = n % trace.events.size();
    const attnprof::Event& e = trace.events[i];
    if (e.kind == attnprof::EventKind::Metadata || e.pid.is_string || e.tid.is_string) continue;
    pieces[n * kPieces / kEvents].append_events(trace, i, i + 1);
  }
  std::size_t events = 0;
  for (const auto& p : pieces) events += p.events.size();
  const std::string path =
      (std::filesystem::temp_directory_path() / (state.range(0) ? "attnprof_stream.json.gz" : "attnprof_stream.json"))
          .string();
  for (auto _ : state) {
    attnprof::TraceStream stream(path);
    for (const auto& p : pieces) stream.append(p);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  state.counters["events"] = static_cast<double>(events);
  std::filesystem::remove(path);
}

BENCHMARK(BM_Read)->Unit(benchmark::kMillisecond)->Iterations(3);
// mapped:1 maps a plain file and parses it in place, mapped:0 read()s it in
// chunks (ReadOptions::map_file); which is faster depends on the machine's
// page-fault and copy costs, so both run side by side.
BENCHMARK(BM_ReadForAnalysis)->ArgName("mapped")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Analyze)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ReadAndAnalyze)->ArgName("mapped")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_SimdjsonWalkFloor)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StreamWrite)->ArgName("gzip")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
