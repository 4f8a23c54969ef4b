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
#include "trace/top_level_values.h"

namespace attnprof {
namespace {

namespace od = simdjson::ondemand;
namespace cat = catalogue;
// Room kept after the last byte read: simdjson's padding, plus one byte for
// the ']' parse_run writes when an event ends exactly at the last byte.
constexpr std::size_t kPad = simdjson::SIMDJSON_PADDING + 1;
// A mapped file's pages are handed back every this many bytes read.
constexpr std::size_t kReleaseBytes = 8u << 20;
static_assert(ByteSource::kViewPadding >= kPad);

std::string describe_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

// A Perfetto trace (the protobuf `Trace` message) is a run of `TracePacket packet = 1` fields: tag 0x0a
// (field 1, length-delimited) and a varint length, then the packet, whose own first byte is a field tag
// (wire types 0-5). The first packet taken apart that far, and within what is read, names the format.
bool looks_like_perfetto(const char* p, std::size_t n) {
  if (n < 3 || static_cast<unsigned char>(p[0]) != 0x0a) return false;
  std::uint64_t length = 0;
  std::size_t i = 1;
  for (int shift = 0; i < n && shift < 35; shift += 7, ++i) {
    const auto b = static_cast<unsigned char>(p[i]);
    length |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) break;
  }
  if (i >= n || length == 0) return false;
  ++i;  // the packet's first byte
  if (i >= n) return false;
  const auto tag = static_cast<unsigned char>(p[i]);
  return (tag & 0x07) <= 5 && (tag >> 3) != 0 && (length <= n - i || n >= 4096);
}

class Reader {
 public:
  Reader(ByteSource& source, const ReadOptions& options) : source_(source), options_(options), view_(source.view()) {
    if (view_.empty()) {
      data_.resize(1 + options_.chunk_bytes + kPad);
      base_ = data_.data();
      capacity_ = data_.size();
    } else {
      // base_[1] is the file's first byte, as in the copying mode; base_[0] is
      // never touched (the first event starts past byte 0 of any trace).
      base_ = view_.data() - 1;
      capacity_ = 1 + view_.size() + ByteSource::kViewPadding;
    }
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
    } else if (looks_like_perfetto(base_ + 1, end_ - 1)) {  // from the first byte: 0x0a reads as a newline
      fail(
          "a Perfetto protobuf trace, not JSON: attnprof reads the Chrome/Kineto JSON that torch.profiler writes "
          "(prof.export_chrome_trace(\"trace.json\") or tensorboard_trace_handler); convert this one with "
          "Perfetto's `traceconv json FILE trace.json`");
    } else {
      fail(fmt::format("not a JSON trace: expected '{{' or '[' at byte {}, found {}", offset(start_), describe(c)));
    }
    if (const int t = peek_nonspace(); t != kEnd)
      fail(fmt::format("unexpected {} at byte {} after the end of the trace", describe(t), offset(start_)));
    if (!saw_events_) fail("no \"traceEvents\" array: not a PyTorch profiler / Chrome trace");
    if (events_.saw_begin_end()) complete_begin_end_pairs(trace_);
    if (options_.stats != nullptr) {
      stats_.mapped_file = !view_.empty();
      *options_.stats = stats_;
    }
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

  // Makes more bytes available after end_, keeping [start_, end_): a mapped
  // file's window grows; otherwise the kept bytes move to the front of the
  // buffer and another chunk is read after them.
  void fill() {
    const std::size_t keep = end_ - start_;
    if (keep > options_.max_event_bytes)
      fail(fmt::format("a single JSON value near byte {} is larger than {} MiB: not a usable trace", offset(start_),
                       options_.max_event_bytes >> 20));
    // A value longer than a chunk is rescanned from its start after each read: read
    // as much again as is kept, so one huge value costs O(size), not O(size^2 / chunk).
    const std::size_t want = std::max(options_.chunk_bytes, keep);
    if (!view_.empty()) {
      const std::size_t file_end = 1 + view_.size();
      if (start_ - released_ >= kReleaseBytes) {
        source_.release_before(start_ - 1);
        released_ = start_;
      }
      end_ = file_end - end_ > want ? end_ + want : file_end;
      eof_ = end_ == file_end;
      return;
    }
    if (start_ > 1) {
      std::memmove(data_.data() + 1, data_.data() + start_, keep);
      discarded_ += start_ - 1;
      start_ = 1;
      end_ = 1 + keep;
    }
    if (data_.size() < end_ + want + kPad) {
      data_.resize(end_ + want + kPad);
      base_ = data_.data();
      capacity_ = data_.size();
    }
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
      const char* p = json_scan::skip_space(base_ + start_, base_ + end_);
      start_ = static_cast<std::size_t>(p - base_);
      if (start_ < end_) return static_cast<unsigned char>(*p);
      if (eof_) return kEnd;
      fill();
    }
  }

  // The whole value starting at start_ (reading more as needed); advances past it.
  std::string_view take_value(std::string_view what) {
    for (;;) {
      const char* b = base_ + start_;
      const char* e = json_scan::value_end(b, base_ + end_, eof_);
      if (e != nullptr) {
        start_ = static_cast<std::size_t>(e - base_);
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
      fail(
          fmt::format("invalid JSON: expected '{}' {} at byte {}, found {}", want, where, offset(start_), describe(c)));
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
          fail(fmt::format("invalid JSON: expected ',' or '}}' at byte {}, found {}", offset(start_), describe(c)));
        ++start_;
        c = peek_nonspace();
      }
      first = false;
      if (c != '"') fail(fmt::format("invalid JSON: expected a key at byte {}, found {}", offset(start_), describe(c)));
      const std::string_view raw_key = take_value("a top-level key");
      const std::string key(raw_key.substr(1, raw_key.size() - 2));
      expect(':', fmt::format("after the key \"{}\"", key));
      if (key == cat::kTraceEvents) {
        const int v = peek_nonspace();
        if (v != '[')
          fail(fmt::format("\"traceEvents\" is not an array (found {} at byte {})", describe(v), offset(start_)));
        ++start_;
        read_events();
        saw_events_ = true;
      } else {
        if (peek_nonspace() == kEnd) fail(fmt::format("truncated: the file ends after \"{}\":", key));
        read_top_level_value(dom_, key, take_value(fmt::format("the value of \"{}\"", key)), trace_, source_.label());
      }
    }
  }

  // Streams the elements of traceEvents; start_ is just past '['. Most
  // windows go through try_line_batch; otherwise the scanner finds where whole
  // events end, this loop checks the separators between them and hands each
  // run of whole events to parse_run.
  void read_events() {
    bool need_element = true;
    for (;;) {
      char* const base = base_;
      const char* cur = json_scan::skip_space(base + start_, base + end_);
      const char* const e = base + end_;
      if (line_batches_ && cur < e && !need_element && *cur == ',') {
        cur = json_scan::skip_space(cur + 1, e);
        need_element = true;
      }
      if (line_batches_ && need_element && cur < e && *cur == '{') {
        if (const char* resume = try_line_batch(cur, e)) {
          start_ = static_cast<std::size_t>(resume - base);
          fill();
          continue;
        }
      }
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
      if (batch_count != 0) {
        ++stats_.scanned_batches;
        const std::size_t first_index = events_seen_;
        if (auto err = parse_run(const_cast<char*>(batch_first) - 1, const_cast<char*>(batch_end)); err)
          batch_error(events_seen_, err);
        if (events_seen_ != first_index + batch_count)
          fail(fmt::format("invalid JSON in traceEvents[{}..{}]", first_index, first_index + batch_count - 1));
      }
      start_ = static_cast<std::size_t>(cur - base);
      if (closed) return;
      if (eof_)
        fail(fmt::format("truncated: the file ends inside \"traceEvents\" after {} complete events", events_seen_));
      fill();
    }
  }

  // The fast path. A JSON string cannot hold a raw newline, so every newline
  // lies between tokens, and a '}' and ',' before a newline (spaces aside) and
  // a '{' after it are structural. Kineto writes each event on lines of its
  // own ("  {" ... "  },"), attnprof one event per line: either way the text
  // from `first` (an event's '{') up to the window's last "},<newline>{" is
  // usually a run of whole events. It is parsed as one array; when it is not
  // one (objects in arrays inside events, invalid JSON), what it added is
  // dropped and nullptr returned: the scanner path then reads the window and
  // reports any error exactly. The byte after the array's ']' is a space, so
  // simdjson cannot run past it. Returns where reading resumes (past the ',').
  const char* try_line_batch(const char* first, const char* end) {
    const char* comma = last_event_boundary(first, end);
    if (comma == nullptr) return nullptr;
    const std::size_t events = trace_.events.size(), args = trace_.gpu_args.size(), inputs = trace_.op_inputs.size(),
                      seen = events_seen_;
    simdjson::error_code err = simdjson::SUCCESS;
    try {
      err = parse_run(const_cast<char*>(first) - 1, const_cast<char*>(comma));
    } catch (const InputError&) {
      err = simdjson::TAPE_ERROR;
    }
    if (err == simdjson::SUCCESS) {
      line_failures_ = 0;
      ++stats_.line_batches;
      return comma + 1;
    }
    ++stats_.line_misses;
    trace_.events.resize(events);
    trace_.gpu_args.resize(args);
    trace_.op_inputs.resize(inputs);
    events_seen_ = seen;
    // Text laid out some other way fails every time: stop trying.
    if (++line_failures_ >= 3) line_batches_ = false;
    return nullptr;
  }

  // The ',' of the last "}" "," newline "{" in [first, end) (spaces allowed
  // around each), or nullptr. Looks back over at most a few hundred lines.
  // Text with no newline at all (json.dump's default: the whole trace on one
  // line) is cut at the last "}, {" instead: that may lie inside a string or a
  // nested list, but then the run is not one array of whole events, its parse
  // fails, and the scanner reads the window as before.
  static const char* last_event_boundary(const char* first, const char* end) {
    const char* limit = end;
    for (int lines = 0; lines < 512; ++lines) {
      const auto* nl = static_cast<const char*>(::memrchr(first, '\n', static_cast<std::size_t>(limit - first)));
      if (nl == nullptr) return lines == 0 ? last_brace_boundary(first, end) : nullptr;
      limit = nl;
      const char* next = json_scan::skip_space(nl + 1, end);
      if (next == end || *next != '{') continue;
      if (const char* comma = comma_after_object(first, nl)) return comma;
    }
    return nullptr;
  }

  // The ',' before `at` when "}" "," (spaces around the comma allowed) ends
  // the text [first, at), else nullptr.
  static const char* comma_after_object(const char* first, const char* at) {
    const char* p = at;
    while (p > first && json_scan::is_space(p[-1])) --p;
    if (p == first || p[-1] != ',') return nullptr;
    const char* comma = p - 1;
    p = comma;
    while (p > first && json_scan::is_space(p[-1])) --p;
    return p > first && p[-1] == '}' ? comma : nullptr;
  }

  // The ',' of the last "}" "," "{" in [first, end) (spaces allowed around
  // the comma), or nullptr. Looks back over at most a few thousand braces.
  static const char* last_brace_boundary(const char* first, const char* end) {
    const char* limit = end;
    for (int braces = 0; braces < 4096; ++braces) {
      const auto* open = static_cast<const char*>(::memrchr(first, '{', static_cast<std::size_t>(limit - first)));
      if (open == nullptr) return nullptr;
      limit = open;
      if (const char* comma = comma_after_object(first, open)) return comma;
    }
    return nullptr;
  }

  // Parses the whole events between `open` and `close` in place: those two
  // bytes are turned into '[' and ']' for the parse and restored. Each event
  // goes to the EventParser (which throws InputError on bad fields); returns
  // simdjson's error, when there is one, also when the array does not end
  // exactly at `close`.
  simdjson::error_code parse_run(char* open, char* close) {
    const char saved_open = *open;
    const char saved_close = *close;
    *open = '[';
    *close = ']';
    const auto len = static_cast<std::size_t>(close + 1 - open);
    const auto capacity = static_cast<std::size_t>(base_ + capacity_ - open);
    simdjson::error_code err = simdjson::SUCCESS;
    try {
      err = walk_run(open, len, capacity);
    } catch (...) {
      *open = saved_open;
      *close = saved_close;
      throw;
    }
    *open = saved_open;
    *close = saved_close;
    return err;
  }

  simdjson::error_code walk_run(const char* open, std::size_t len, std::size_t capacity) {
    od::document doc;
    if (auto err = parser_.iterate(open, len, capacity).get(doc); err) return err;
    od::array array;
    if (auto err = doc.get_array().get(array); err) return err;
    for (auto element : array) {
      od::object object;
      if (auto err = element.get_object().get(object); err) return err;
      events_.parse(object, events_seen_);
      ++events_seen_;
    }
    // The array must end at the last byte: its raw text, taken after the walk,
    // runs to the next token, which is the end only when nothing follows.
    std::string_view whole;
    if (auto err = doc.raw_json().get(whole); err) return err;
    return whole.size() == len ? simdjson::SUCCESS : simdjson::TAPE_ERROR;
  }

  [[noreturn]] void batch_error(std::size_t index, simdjson::error_code err) const {
    fail(fmt::format("invalid JSON in traceEvents[{}]: {}", index, simdjson::error_message(err)));
  }

  ByteSource& source_;
  ReadOptions options_;
  Trace trace_;
  std::span<char> view_;         // the whole input, when the source is mapped
  std::vector<char> data_;       // otherwise the buffer; data_[0] is spare: parse_run writes '[' before the first event
  char* base_ = nullptr;         // data_.data(), or one byte before view_
  std::size_t capacity_ = 0;     // readable bytes from base_
  std::size_t released_ = 1;     // view_ bytes before this were handed back (release_before)
  std::size_t start_ = 1;        // first unconsumed byte
  std::size_t end_ = 1;          // one past the last byte read
  std::uint64_t discarded_ = 0;  // bytes dropped from the front so far
  bool eof_ = false;
  bool saw_events_ = false;
  std::size_t events_seen_ = 0;
  std::vector<const char*> ends_;  // event ends found by the scanner in the current buffer
  ReadStats stats_;
  bool line_batches_ = true;  // try_line_batch is worth trying
  int line_failures_ = 0;     // its failures in a row
  od::parser parser_;
  EventParser events_{trace_, source_.label(), options_.detail == ReadDetail::Analysis};
  simdjson::dom::parser dom_;  // for the top-level values (top_level_values.h)
};

}  // namespace

Trace read_trace_file(const std::string& path, const ReadOptions& options) {
  auto source = open_file_source(path, options.map_file);
  return Reader(*source, options).read();
}

Trace read_trace_bytes(std::string_view bytes, std::string_view label, const ReadOptions& options) {
  auto source = open_memory_source(bytes, label);
  return Reader(*source, options).read();
}

}  // namespace attnprof
