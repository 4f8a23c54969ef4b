// Streaming Kineto/Chrome-trace reader. A byte scanner (event_scanner.h) cuts
// "traceEvents" into batches of whole events inside a sliding buffer; each
// batch is parsed in place by simdjson On-Demand. Only the compact Event
// records are kept, so memory follows the number of events, not the file size.
#include "trace/trace_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/core.h>

#include "trace/byte_source.h"
#include "trace/catalogue.h"
#include "trace/event_parser.h"
#include "trace/event_scanner.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

namespace od = simdjson::ondemand;
namespace cat = catalogue;
// Room kept after the last byte read: simdjson's padding, plus one byte for
// the ']' parse_batch writes when an event ends exactly at the last byte.
constexpr std::size_t kPad = simdjson::SIMDJSON_PADDING + 1;

std::string describe_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

class Reader {
 public:
  Reader(ByteSource& source, const ReadOptions& options)
      : source_(source), options_(options) {
    data_.resize(1 + options_.chunk_bytes + kPad);
  }

  Trace read() {
    // Kineto writes ~200-300 bytes per event: reserving address space is free
    // (untouched pages are not resident) and spares copies as the vector grows.
    if (const std::uint64_t size = source_.size_hint(); size > 0) {
      trace_.events.reserve(static_cast<std::size_t>(size / 160));
    }
    fill();
    const int c = peek_nonspace();
    if (c == kEnd) fail("file is empty (only whitespace)");
    if (c == '[') {  // JSON Array Format: the whole file is the event list
      ++start_;
      read_events();
      saw_events_ = true;
    } else if (c == '{') {
      ++start_;
      read_top_object();
    } else {
      fail(fmt::format("not a JSON trace: expected '{{' or '[' at byte {}, found {}",
                       offset(start_), describe(c)));
    }
    if (const int t = peek_nonspace(); t != kEnd)
      fail(fmt::format("unexpected {} at byte {} after the end of the trace", describe(t),
                       offset(start_)));
    if (!saw_events_)
      fail("no \"traceEvents\" array: not a PyTorch profiler / Chrome trace");
    if (events_.saw_begin_end()) complete_begin_end_pairs(trace_);
    trace_.source_bytes = discarded_ + end_ - 1;
    return std::move(trace_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: {}", source_.label(), what));
  }
  static constexpr int kEnd = -1;
  static std::string describe(int c) {
    return c == kEnd ? std::string("the end of the file") : describe_char(static_cast<char>(c));
  }
  std::uint64_t offset(std::size_t index) const { return discarded_ + index - 1; }

  // Keeps [start_, end_), moves it to the front and reads another chunk.
  void fill() {
    const std::size_t keep = end_ - start_;
    if (start_ > 1) {
      std::memmove(data_.data() + 1, data_.data() + start_, keep);
      discarded_ += start_ - 1;
      start_ = 1;
      end_ = 1 + keep;
    }
    if (keep > options_.max_event_bytes)
      fail(fmt::format("a single JSON value near byte {} is larger than {} MiB: not a usable trace",
                       offset(start_), options_.max_event_bytes >> 20));
    // A value longer than a chunk is rescanned from its start after each read: read
    // as much again as is kept, so one huge value costs O(size), not O(size^2 / chunk).
    const std::size_t want = std::max(options_.chunk_bytes, keep);
    if (data_.size() < end_ + want + kPad) data_.resize(end_ + want + kPad);
    std::size_t got = 0;
    while (got < want) {
      const std::size_t n = source_.read(data_.data() + end_ + got, want - got);
      if (n == 0) {
        eof_ = true;
        break;
      }
      got += n;
    }
    end_ += got;
  }

  // Next non-space character (reading more as needed); kEnd at the end of input.
  int peek_nonspace() {
    for (;;) {
      const char* p = json_scan::skip_space(data_.data() + start_, data_.data() + end_);
      start_ = static_cast<std::size_t>(p - data_.data());
      if (start_ < end_) return static_cast<unsigned char>(*p);
      if (eof_) return kEnd;
      fill();
    }
  }

  // The whole value starting at start_ (reading more as needed); advances past it.
  std::string_view take_value(std::string_view what) {
    for (;;) {
      const char* b = data_.data() + start_;
      const char* e = json_scan::value_end(b, data_.data() + end_, eof_);
      if (e != nullptr) {
        start_ = static_cast<std::size_t>(e - data_.data());
        return {b, static_cast<std::size_t>(e - b)};
      }
      if (eof_) fail(fmt::format("truncated: the file ends inside {}", what));
      fill();
    }
  }

  void expect(char want, std::string_view where) {
    const int c = peek_nonspace();
    if (c == kEnd) fail(fmt::format("truncated: the file ends {}", where));
    if (c != want)
      fail(fmt::format("invalid JSON: expected '{}' {} at byte {}, found {}", want, where,
                       offset(start_), describe(c)));
    ++start_;
  }

  void read_top_object() {
    bool first = true;
    for (;;) {
      int c = peek_nonspace();
      if (c == kEnd) fail("truncated: the file ends inside the top-level object");
      if (c == '}') {
        ++start_;
        return;
      }
      if (!first) {
        if (c != ',')
          fail(fmt::format("invalid JSON: expected ',' or '}}' at byte {}, found {}",
                           offset(start_), describe(c)));
        ++start_;
        c = peek_nonspace();
      }
      first = false;
      if (c != '"')
        fail(fmt::format("invalid JSON: expected a key at byte {}, found {}", offset(start_),
                         describe(c)));
      const std::string_view raw_key = take_value("a top-level key");
      const std::string key(raw_key.substr(1, raw_key.size() - 2));
      expect(':', fmt::format("after the key \"{}\"", key));
      if (key == cat::kTraceEvents) {
        const int v = peek_nonspace();
        if (v != '[')
          fail(fmt::format("\"traceEvents\" is not an array (found {} at byte {})", describe(v),
                           offset(start_)));
        ++start_;
        read_events();
        saw_events_ = true;
      } else {
        if (peek_nonspace() == kEnd) fail(fmt::format("truncated: the file ends after \"{}\":", key));
        read_top_value(key, take_value(fmt::format("the value of \"{}\"", key)));
      }
    }
  }

  // Top-level metadata: small values, parsed with the DOM API.
  void read_top_value(const std::string& key, std::string_view text) {
    const bool wanted = key == cat::kDeviceProperties || key == cat::kBaseTimeNanoseconds ||
                        key == cat::kSchemaVersion || key == cat::kTraceName ||
                        key == cat::kCudaRuntimeVersion || key == cat::kCudaDriverVersion ||
                        key == cat::kCuptiVersion || key == cat::kDroppedRecords;
    simdjson::padded_string padded(text);
    simdjson::dom::element v;
    if (auto err = dom_.parse(padded).get(v); err)
      fail(fmt::format("invalid JSON in the value of \"{}\": {}", key, simdjson::error_message(err)));
    if (!wanted) return;
    auto want_int = [&](std::int64_t& out) {
      std::int64_t i = 0;
      double d = 0;
      if (v.get_int64().get(i) == simdjson::SUCCESS) {
        out = i;
      } else if (v.get_double().get(d) == simdjson::SUCCESS) {
        const auto n = json_text::double_to_int64(d);
        if (!n) fail(fmt::format("\"{}\" is out of range", key));
        out = *n;
      } else {
        fail(fmt::format("\"{}\" must be a number", key));
      }
    };
    if (key == cat::kBaseTimeNanoseconds) {
      std::int64_t base = 0;
      want_int(base);
      trace_.base_time_ns = base;
    } else if (key == cat::kSchemaVersion) {
      want_int(trace_.schema_version);
    } else if (key == cat::kCudaRuntimeVersion) {
      want_int(trace_.cuda_runtime_version);
    } else if (key == cat::kCudaDriverVersion) {
      want_int(trace_.cuda_driver_version);
    } else if (key == cat::kCuptiVersion) {
      want_int(trace_.cupti_version);
    } else if (key == cat::kDroppedRecords) {
      want_int(trace_.dropped_records);
    } else if (key == cat::kTraceName) {
      if (!v.is_string()) fail("\"traceName\" must be a string");
      trace_.trace_name = std::string(v.get_string().value_unsafe());
    } else if (key == cat::kDeviceProperties) {
      read_devices(v);
    }
  }

  void read_devices(simdjson::dom::element v) {
    simdjson::dom::array list;
    if (v.get_array().get(list)) fail("\"deviceProperties\" must be an array");
    for (simdjson::dom::element d : list) {
      simdjson::dom::object fields;
      if (d.get_object().get(fields)) fail("\"deviceProperties\" entries must be objects");
      DeviceProperties p;
      for (auto [k, val] : fields) {
        if (k == cat::kDevName) {
          if (val.is_string()) p.name = std::string(val.get_string().value_unsafe());
          continue;
        }
        std::int64_t n = 0;
        if (val.is_int64()) n = val.get_int64().value_unsafe();
        else if (val.is_uint64()) n = static_cast<std::int64_t>(val.get_uint64().value_unsafe());
        else continue;  // tolerate producer-specific fields
        for (const cat::DeviceField& f : cat::device_fields())
          if (k == f.key) f.set(p, n);
      }
      trace_.devices.push_back(std::move(p));
    }
  }

  // Streams the elements of traceEvents; start_ is just past '['. The scanner
  // finds where whole events end; this loop checks the separators between
  // them and hands each run of whole events to parse_batch.
  void read_events() {
    bool need_element = true;
    for (;;) {
      char* const base = data_.data();
      const char* cur = json_scan::skip_space(base + start_, base + end_);
      const char* const e = base + end_;
      const char* batch_first = nullptr;
      const char* batch_end = nullptr;
      std::size_t batch_count = 0;
      bool closed = false;
      ends_.clear();
      if (cur < e) json_scan::scan_elements(cur, e, ends_);
      std::size_t next_end = 0;
      for (;;) {
        cur = json_scan::skip_space(cur, e);
        if (cur == e) break;
        const std::size_t index = events_seen_ + batch_count;
        if (!need_element) {
          if (*cur == ',') {
            need_element = true;
            ++cur;
            continue;
          }
          if (*cur == ']') {
            closed = true;
            ++cur;
            break;
          }
          fail(fmt::format("invalid JSON: expected ',' or ']' after traceEvents[{}] at byte {}, found {}", index - 1,
                           offset(static_cast<std::size_t>(cur - base)), describe_char(*cur)));
        }
        if (*cur == ']' && index == 0) {  // empty array
          closed = true;
          ++cur;
          break;
        }
        if (*cur != '{')
          fail(fmt::format("traceEvents[{}] at byte {} is not an object (found {})", index,
                           offset(static_cast<std::size_t>(cur - base)), describe_char(*cur)));
        if (next_end == ends_.size()) break;  // this event continues past the buffer
        if (batch_first == nullptr) batch_first = cur;
        cur = batch_end = ends_[next_end++];
        ++batch_count;
        need_element = false;
      }
      if (batch_count != 0) parse_batch(batch_first, batch_end, batch_count);
      start_ = static_cast<std::size_t>(cur - base);
      if (closed) return;
      if (eof_)
        fail(fmt::format("truncated: the file ends inside \"traceEvents\" after {} complete events",
                         events_seen_));
      fill();
    }
  }

  // Parses `count` whole events in [first, last_end), in place: the bytes just
  // before and after are turned into '[' and ']' for the parse and restored.
  void parse_batch(const char* first, const char* last_end, std::size_t count) {
    char* open = const_cast<char*>(first) - 1;
    char* close = const_cast<char*>(last_end);
    const char saved_open = *open;
    const char saved_close = *close;
    *open = '[';
    *close = ']';
    const auto len = static_cast<std::size_t>(close + 1 - open);
    const auto capacity = static_cast<std::size_t>(data_.data() + data_.size() - open);
    const std::size_t first_index = events_seen_;
    try {
      od::document doc;
      if (auto err = parser_.iterate(open, len, capacity).get(doc); err) batch_error(first_index, err);
      od::array array;
      if (auto err = doc.get_array().get(array); err) batch_error(first_index, err);
      for (auto element : array) {
        od::object object;
        if (auto err = element.get_object().get(object); err) batch_error(events_seen_, err);
        events_.parse(object, events_seen_);
        ++events_seen_;
      }
    } catch (...) {
      *open = saved_open;
      *close = saved_close;
      throw;
    }
    *open = saved_open;
    *close = saved_close;
    if (events_seen_ != first_index + count)
      fail(fmt::format("invalid JSON in traceEvents[{}..{}]", first_index, first_index + count - 1));
  }

  [[noreturn]] void batch_error(std::size_t index, simdjson::error_code err) const {
    fail(fmt::format("invalid JSON in traceEvents[{}]: {}", index, simdjson::error_message(err)));
  }

  ByteSource& source_;
  ReadOptions options_;
  Trace trace_;
  std::vector<char> data_;      // data_[0] is spare: parse_batch writes '[' before the first event
  std::size_t start_ = 1;       // first unconsumed byte
  std::size_t end_ = 1;         // one past the last byte read
  std::uint64_t discarded_ = 0; // bytes dropped from the front so far
  bool eof_ = false;
  bool saw_events_ = false;
  std::size_t events_seen_ = 0;
  std::vector<const char*> ends_;  // event ends found by the scanner in the current buffer
  od::parser parser_;
  EventParser events_{trace_, source_.label()};
  simdjson::dom::parser dom_;
};

}  // namespace

Trace read_trace_file(const std::string& path, const ReadOptions& options) {
  auto source = open_file_source(path);
  return Reader(*source, options).read();
}

Trace read_trace_bytes(std::string_view bytes, std::string_view label, const ReadOptions& options) {
  auto source = open_memory_source(bytes, label);
  return Reader(*source, options).read();
}

}  // namespace attnprof
