// libFuzzer target: any bytes given to the trace reader (plain or gzip, tiny
// chunks so events straddle buffer boundaries) either parse or raise
// InputError; a trace that parses also goes through the whole analysis.
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
  try {
    const attnprof::Trace trace = attnprof::read_trace_bytes(bytes, "fuzz.json", options);
    const attnprof::TraceIndex index(trace);
    const attnprof::Analysis analysis = attnprof::analyze(trace, index, {}, "fuzz.json");
    (void)attnprof::text_report(analysis);
    (void)attnprof::json_report(analysis);
  } catch (const attnprof::InputError&) {
  }
  return 0;
}
