// Streaming Kineto/Chrome-trace reader. A byte scanner (event_scanner.h) cuts
// "traceEvents" into batches of whole events inside a sliding buffer; each
// batch is parsed in place by simdjson On-Demand. Only the compact Event
// records are kept, so memory follows the number of events, not the file size.
#include "trace/trace_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <optional>
#include <cstring>
#include <unordered_map>
#include <vector>

#include <fmt/core.h>

#include "trace/byte_source.h"
#include "trace/catalogue.h"
#include "trace/event_scanner.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

namespace od = simdjson::ondemand;
namespace cat = catalogue;
constexpr std::size_t kPad = simdjson::SIMDJSON_PADDING;

std::string describe_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

// An object key as written in the JSON (escapes not decoded): the catalogue's
// keys have no characters that need escaping, so a byte comparison is exact.
struct Key {
  od::raw_json_string raw;
  bool operator==(std::string_view known) const { return raw.unsafe_is_equal(known); }
};

// A double that fits in int64, else nullopt (the cast would be undefined).
std::optional<std::int64_t> to_int64(double d) {
  if (!(d > -9.2e18 && d < 9.2e18)) return std::nullopt;  // also false for NaN
  return static_cast<std::int64_t>(d);
}

std::string_view trim_token(std::string_view t) {
  while (!t.empty() && json_scan::is_space(t.back())) t.remove_suffix(1);
  return t;
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
    pair_begin_end();
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
    if (data_.size() < end_ + options_.chunk_bytes + kPad)
      data_.resize(end_ + options_.chunk_bytes + kPad);
    std::size_t got = 0;
    while (got < options_.chunk_bytes) {
      const std::size_t n = source_.read(data_.data() + end_ + got, options_.chunk_bytes - got);
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
        const auto n = to_int64(d);
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
        const int i = static_cast<int>(n);
        if (k == cat::kDevId) p.id = i;
        else if (k == cat::kDevTotalGlobalMem) p.total_global_mem = n;
        else if (k == cat::kDevComputeMajor) p.compute_major = i;
        else if (k == cat::kDevComputeMinor) p.compute_minor = i;
        else if (k == cat::kDevMaxThreadsPerBlock) p.max_threads_per_block = i;
        else if (k == cat::kDevMaxThreadsPerSm) p.max_threads_per_sm = i;
        else if (k == cat::kDevRegsPerBlock) p.regs_per_block = i;
        else if (k == cat::kDevRegsPerSm) p.regs_per_sm = i;
        else if (k == cat::kDevWarpSize) p.warp_size = i;
        else if (k == cat::kDevSharedMemPerBlock) p.shared_mem_per_block = i;
        else if (k == cat::kDevSharedMemPerBlockOptin) p.shared_mem_per_block_optin = i;
        else if (k == cat::kDevSharedMemPerSm) p.shared_mem_per_sm = i;
        else if (k == cat::kDevNumSms) p.num_sms = i;
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
        read_event(object);
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
  [[noreturn]] void field_error(std::string_view field, std::string_view expected) const {
    fail(fmt::format("traceEvents[{}].{}: expected {}", events_seen_, field, expected));
  }

  std::int64_t read_time(od::value v, std::string_view field) {
    od::json_type type;
    if (v.type().get(type) || type != od::json_type::number) field_error(field, "a number");
    const std::string_view token = v.raw_json_token();
    const auto ns = json_text::microseconds_to_ns(trim_token(token));
    if (!ns) field_error(field, "a number of microseconds in range");
    return *ns;
  }

  Lane read_lane(od::value v, std::string_view field) {
    od::json_type type;
    if (v.type().get(type)) field_error(field, "a number or a string");
    if (type == od::json_type::number) {
      std::int64_t n = 0;
      if (v.get_int64().get(n) == simdjson::SUCCESS) return Lane{n, false};
      double d = 0;
      if (v.get_double().get(d)) field_error(field, "a number or a string");
      const auto as_int = to_int64(d);
      if (!as_int) field_error(field, "a number in range");
      return Lane{*as_int, false};
    }
    if (type == od::json_type::string) {
      std::string_view s;
      if (v.get_string().get(s)) field_error(field, "a number or a string");
      return Lane{static_cast<std::int64_t>(trace_.strings.intern(s)), true};
    }
    field_error(field, "a number or a string");
  }

  std::string_view read_string(od::value v, std::string_view field) {
    std::string_view s;
    if (v.get_string().get(s)) field_error(field, "a string");
    return s;
  }

  // Args values are producer-specific: numbers are taken, other types ignored.
  static bool arg_int(od::value v, std::int64_t& out) {
    od::json_type type;
    if (v.type().get(type) || type != od::json_type::number) return false;
    if (v.get_int64().get(out) == simdjson::SUCCESS) return true;
    double d = 0;
    if (v.get_double().get(d)) return false;
    const auto as_int = to_int64(d);
    if (as_int) out = *as_int;
    return as_int.has_value();
  }
  static void arg_dim3(od::value v, std::array<std::int32_t, 3>& out) {
    od::array a;
    if (v.get_array().get(a)) return;
    std::size_t i = 0;
    for (auto x : a) {
      std::int64_t n = 0;
      od::value xv;
      if (x.get(xv) || !arg_int(xv, n)) return;
      if (i < 3) out[i] = static_cast<std::int32_t>(n);
      ++i;
    }
  }

  void read_args(od::object args, Event& ev, GpuArgs& g) {
    for (auto field : args) {
      od::raw_json_string raw;
      if (auto err = field.key().get(raw); err) batch_error(events_seen_, err);
      const Key key{raw};
      od::value v = field.value();
      std::int64_t n = 0;
      if (key == cat::kExternalId) {
        if (arg_int(v, n)) ev.external_id = n;
      } else if (key == cat::kCorrelation) {
        if (arg_int(v, n)) ev.correlation = n;
      } else if (key == cat::kGrid) {
        arg_dim3(v, g.grid);
      } else if (key == cat::kBlock) {
        arg_dim3(v, g.block);
      } else if (key == cat::kDevice) {
        if (arg_int(v, n)) g.device = static_cast<std::int32_t>(n);
      } else if (key == cat::kContext) {
        if (arg_int(v, n)) g.context = static_cast<std::int32_t>(n);
      } else if (key == cat::kStream) {
        if (arg_int(v, n)) g.stream = n;
      } else if (key == cat::kRegistersPerThread) {
        if (arg_int(v, n)) g.registers_per_thread = static_cast<std::int32_t>(n);
      } else if (key == cat::kSharedMemory) {
        if (arg_int(v, n)) g.shared_memory = static_cast<std::int32_t>(n);
      } else if (key == cat::kDynamicSharedMemory) {
        if (arg_int(v, n)) g.dynamic_shared_memory = static_cast<std::int32_t>(n);
      } else if (key == cat::kBytes) {
        if (arg_int(v, n)) g.bytes = n;
      } else if (key == cat::kBlocksPerSm || key == cat::kWarpsPerSm || key == cat::kOccupancy) {
        double d = 0;
        if (v.get_double().get(d) == simdjson::SUCCESS && d > -3e38 && d < 3e38) {
          const auto f = static_cast<float>(d);
          if (key == cat::kBlocksPerSm) g.blocks_per_sm = f;
          else if (key == cat::kWarpsPerSm) g.warps_per_sm = f;
          else g.occupancy_pct = f;
        }
      }
    }
  }

  // Categories are few and short: a small list beats hashing them per event.
  StringId intern_category(std::string_view text) {
    for (const auto& [seen, id] : recent_categories_)
      if (seen == text) return id;
    const StringId id = trace_.strings.intern(text);
    if (recent_categories_.size() < 32) recent_categories_.emplace_back(trace_.strings.view(id), id);
    return id;
  }

  std::optional<EventKind> kind_of(StringId category) {
    if (category >= category_kind_.size()) category_kind_.resize(category + 1, kUnresolved);
    std::int8_t& k = category_kind_[category];
    if (k == kUnresolved) {
      const auto kind = cat::kind_of_category(trace_.strings.view(category));
      k = kind ? static_cast<std::int8_t>(*kind) : kUnknown;
    }
    if (k == kUnknown) return std::nullopt;
    return static_cast<EventKind>(k);
  }

  void read_event(od::object object) {
    Event ev;
    GpuArgs g;
    bool have_ph = false;
    bool have_ts = false;
    for (auto field : object) {
      od::raw_json_string raw;
      if (auto err = field.key().get(raw); err) batch_error(events_seen_, err);
      const Key key{raw};
      od::value v = field.value();
      if (key == cat::kPh) {
        const std::string_view ph = read_string(v, cat::kPh);
        if (ph.size() != 1) field_error(cat::kPh, "a one-letter phase");
        ev.phase = ph[0];
        have_ph = true;
      } else if (key == cat::kCat) {
        ev.category = intern_category(read_string(v, cat::kCat));
      } else if (key == cat::kName) {
        ev.name = trace_.strings.intern(read_string(v, cat::kName));
      } else if (key == cat::kTs) {
        ev.ts_ns = read_time(v, cat::kTs);
        have_ts = true;
      } else if (key == cat::kDur) {
        ev.dur_ns = read_time(v, cat::kDur);
        if (ev.dur_ns < 0) field_error(cat::kDur, "a duration >= 0");
      } else if (key == cat::kPid) {
        ev.pid = read_lane(v, cat::kPid);
      } else if (key == cat::kTid) {
        ev.tid = read_lane(v, cat::kTid);
      } else if (key == cat::kId) {
        const Lane id = read_lane(v, cat::kId);
        if (!id.is_string) flow_id_ = id.value;
      } else if (key == cat::kArgs) {
        od::object args;
        if (v.get_object().get(args)) field_error(cat::kArgs, "an object");
        read_args(args, ev, g);
      }
    }
    if (!have_ph) fail(fmt::format("traceEvents[{}]: missing \"ph\"", events_seen_));
    if (!have_ts && ev.phase != 'M') fail(fmt::format("traceEvents[{}]: missing \"ts\"", events_seen_));

    std::optional<EventKind> kind;
    if (ev.category != kNoString) kind = kind_of(ev.category);
    switch (ev.phase) {
      case 'M': kind = EventKind::Metadata; break;
      case 's': case 'f': case 't': kind = EventKind::Flow; break;
      case 'i': case 'I': if (!kind) kind = EventKind::Instant; break;
      default: break;
    }
    ev.kind = kind.value_or(EventKind::Other);
    if (ev.kind == EventKind::Flow) {
      ev.correlation = flow_id_;
    }
    flow_id_ = -1;
    trace_.add(ev, is_gpu_activity(ev.kind) ? &g : nullptr);
  }

  // Chrome's duration events "B"/"E" become complete "X" events.
  void pair_begin_end() {
    bool any = false;
    for (const auto& e : trace_.events) any |= e.phase == 'B' || e.phase == 'E';
    if (!any) return;
    std::unordered_map<std::int64_t, std::vector<std::size_t>> open;  // per (pid, tid)
    std::vector<Event> kept;
    kept.reserve(trace_.events.size());
    for (const auto& e : trace_.events) {
      const std::int64_t lane = e.pid.value * 1000003 + e.tid.value;
      if (e.phase == 'B') {
        open[lane].push_back(kept.size());
        kept.push_back(e);
        kept.back().phase = 'X';
      } else if (e.phase == 'E') {
        auto& stack = open[lane];
        if (!stack.empty()) {
          Event& b = kept[stack.back()];
          b.dur_ns = std::max<std::int64_t>(0, e.ts_ns - b.ts_ns);
          stack.pop_back();
        }
      } else {
        kept.push_back(e);
      }
    }
    trace_.events = std::move(kept);
  }

  static constexpr std::int8_t kUnresolved = -2;
  static constexpr std::int8_t kUnknown = -1;

  ByteSource& source_;
  ReadOptions options_;
  std::vector<char> data_;      // data_[0] is spare: parse_batch writes '[' before the first event
  std::size_t start_ = 1;       // first unconsumed byte
  std::size_t end_ = 1;         // one past the last byte read
  std::uint64_t discarded_ = 0; // bytes dropped from the front so far
  bool eof_ = false;
  bool saw_events_ = false;
  std::size_t events_seen_ = 0;
  std::int64_t flow_id_ = -1;
  std::vector<std::int8_t> category_kind_;
  std::vector<const char*> ends_;  // event ends found by the scanner in the current buffer
  std::vector<std::pair<std::string_view, StringId>> recent_categories_;
  od::parser parser_;
  simdjson::dom::parser dom_;
  Trace trace_;
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
