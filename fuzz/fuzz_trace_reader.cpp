// libFuzzer target: any bytes given to the trace reader (plain or gzip, tiny
// chunks so events straddle buffer boundaries) either parse or raise
// InputError, as they do read in one chunk; a trace that parses also reads
// for the analysis (the same events less flows) and goes through it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/analysis.h"
#include "report/report.h"
#include "trace/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  attnprof::ReadOptions options;
  options.chunk_bytes = 1 + size % 257;  // vary the buffer size with the input
  options.max_event_bytes = 1u << 20;
  // The same bytes read in one chunk must give the same outcome: a reader
  // that rejects valid input at some chunk boundary raises no crash otherwise.
  attnprof::ReadOptions whole = options;
  whole.chunk_bytes = size + 1;
  std::size_t events_whole = 0;
  bool whole_ok = true;
  try {
    events_whole = attnprof::read_trace_bytes(bytes, "fuzz.json", whole).events.size();
  } catch (const attnprof::InputError&) {
    whole_ok = false;
  }
  try {
    const attnprof::Trace trace = attnprof::read_trace_bytes(bytes, "fuzz.json", options);
    if (!whole_ok || trace.events.size() != events_whole) __builtin_trap();
    // What doctor reads (ReadDetail::Analysis) is the same trace less its flow events (ph s/f/t).
    attnprof::ReadOptions lean = options;
    lean.detail = attnprof::ReadDetail::Analysis;
    std::size_t flows = 0;
    for (const auto& e : trace.events) flows += attnprof::is_flow_phase(e.phase);
    if (attnprof::read_trace_bytes(bytes, "fuzz.json", lean).events.size() != trace.events.size() - flows)
      __builtin_trap();
    const attnprof::TraceIndex index(trace);
    const attnprof::Analysis analysis = attnprof::analyze(index, {}, "fuzz.json");
    (void)attnprof::text_report(analysis);
    (void)attnprof::json_report(analysis);
  } catch (const attnprof::InputError&) {
    if (whole_ok) __builtin_trap();
  }
  return 0;
}
