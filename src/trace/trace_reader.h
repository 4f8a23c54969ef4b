// Reads PyTorch profiler / Kineto Chrome-trace JSON, plain or gzip, into a
// Trace. Streams the file in chunks: memory stays near the size of the events
// kept, not the size of the file. Throws InputError on bad input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/input_error.h"
#include "trace/trace.h"

namespace attnprof {

// How much of each event to keep.
enum class ReadDetail {
  Full,      // everything the trace model holds (for writing traces back)
  Analysis,  // what TraceIndex and the rules read: flow events ("s"/"f"/"t") are
             // dropped; of args, only correlation, grid, block, bytes and stream are read,
             // and only for GPU activity and launch calls
};

// How the reader went through traceEvents (for tests and benchmarks).
struct ReadStats {
  std::size_t line_batches = 0;     // runs of events parsed straight from a window (the fast path)
  std::size_t line_misses = 0;      // fast-path attempts dropped (the window was read again)
  std::size_t scanned_batches = 0;  // runs of events cut by the scanner
  bool mapped_file = false;         // the input was a mapped file (ReadOptions::map_file)
};

struct ReadOptions {
  // Bytes per window: a mapped file's window grows by this much, other input
  // is copied in chunks of it. Small enough that simdjson's index of a window
  // and the walk over it stay in the L2 cache (measured: 512 KiB ~4% faster
  // end to end than 4 MiB).
  std::size_t chunk_bytes = 512u << 10;
  std::size_t max_event_bytes = 256u << 20;  // a single event larger than this is an error
  ReadDetail detail = ReadDetail::Full;
  // A plain file: read() in chunks like any other input (false), or mapped
  // and parsed in place (true). Reading is the default: it measured as fast
  // or faster (AMD EPYC: 6-10% faster end to end; the H200 host's Xeon: even),
  // and a mapped file cut short while it is read (a trace still being
  // written) would end the process with SIGBUS instead of an error.
  bool map_file = false;
  ReadStats* stats = nullptr;  // filled when set
};

// `path` may be a plain .json or a gzip file (detected by its magic bytes).
Trace read_trace_file(const std::string& path, const ReadOptions& options = {});

// Same, on bytes in memory (plain or gzip); `label` names the input in errors.
Trace read_trace_bytes(std::string_view bytes, std::string_view label, const ReadOptions& options = {});

}  // namespace attnprof
