// Writes a Trace as Kineto-compatible Chrome-trace JSON (the same categories and
// args keys as the PyTorch profiler), so Perfetto, HolisticTraceAnalysis and
// attnprof doctor read it. Keys come from catalogue.h, shared with the reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "common/json.h"
#include "trace/trace.h"

namespace attnprof {

void write_trace_json(const Trace& trace, std::ostream& out);

// Writes to `path` atomically (a temporary file in the same folder, then
// rename), gzip-compressed when `path` ends in ".gz". Throws InputError
// naming the path when it cannot be written.
void write_trace_file(const Trace& trace, const std::string& path);

// A trace written while it is recorded: events are appended in pieces and the file is a complete,
// readable trace after every append, so a program killed midway leaves what was written so far
// (unless SIGKILL lands inside an append's write, which Linux may stop at a page boundary). A failed
// write puts the old trailer back: the file reads as before it.
// The metadata (devices, versions, dropped records, name) follows the events; each append writes
// the new events and a fresh trailer (closing the event array, then the metadata) over the old
// trailer in one write. The trailer is padded so that it never shrinks: nothing of an old one is
// left behind. A ".gz" path gets one gzip member per append plus a stored (uncompressed) member for
// the trailer; gzip readers read concatenated members as one stream.
class TraceStream {
 public:
  // Creates (or empties) `path` and writes an empty trace there. Throws InputError naming the path.
  explicit TraceStream(std::string path);
  ~TraceStream();
  TraceStream(const TraceStream&) = delete;
  TraceStream& operator=(const TraceStream&) = delete;

  // Appends the chunk's events (their strings and GPU arguments are the chunk's own); devices not
  // yet listed, versions, the dropped-record count (added up) and a non-empty name update the
  // metadata. Throws InputError naming the path when the file cannot be written.
  void append(const Trace& chunk);

  const std::string& path() const { return path_; }
  std::size_t events() const { return events_; }
  std::size_t kernels() const { return kernels_; }

 private:
  void write_tail(std::string_view events_text);
  void write_at(std::string_view piece, std::size_t events_bytes);

  std::string path_;
  int fd_ = -1;
  bool gzip_ = false;
  std::string buf_;                   // the JsonWriter's output, taken after each piece
  std::unique_ptr<JsonWriter> json_;  // writes into buf_; its open containers persist between appends
  Trace meta_;                        // metadata only: devices, versions, counts, name
  std::uint64_t trailer_at_ = 0;      // file offset of the current trailer
  std::size_t trailer_chars_ = 0;     // its text length, padding included (never shrinks)
  std::string trailer_;               // its bytes as written (a gzip member for .gz)
  std::size_t events_ = 0, kernels_ = 0;
};

}  // namespace attnprof
