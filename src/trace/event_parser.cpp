// Kineto event fields -> Event (see event_parser.h). Strict about the fields
// the Chrome trace format defines (ph, ts, dur, name, cat, pid, tid, args),
// lenient about args values, which every producer fills differently.
#include "trace/event_parser.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/core.h>

#include "trace/catalogue.h"
#include "trace/event_scanner.h"
#include "trace/json_text.h"
#include "trace/trace_error.h"

namespace attnprof {
namespace {

namespace od = simdjson::ondemand;
namespace cat = catalogue;

// An object key as written in the JSON (escapes not decoded): the catalogue's
// keys have no characters that need escaping, so a byte comparison is exact.
struct Key {
  od::raw_json_string raw;
  bool operator==(std::string_view known) const { return raw.unsafe_is_equal(known); }
};

std::string_view trim_token(std::string_view t) {
  while (!t.empty() && json_scan::is_space(t.back())) t.remove_suffix(1);
  return t;
}

// Args values are producer-specific: numbers are taken, other types ignored.
// An integer is tried first: it is by far the most common value, and a
// failed attempt consumes nothing.
bool arg_int(od::value& v, std::int64_t& out) {
  if (v.get_int64().get(out) == simdjson::SUCCESS) return true;
  od::json_type type;
  if (v.type().get(type) || type != od::json_type::number) return false;
  double d = 0;
  if (v.get_double().get(d)) return false;
  const auto as_int = json_text::double_to_int64(d);
  if (as_int) out = *as_int;
  return as_int.has_value();
}
void arg_dim3(od::value& v, std::array<std::int32_t, 3>& out) {
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

}  // namespace

void EventParser::fail(const std::string& what) const { throw InputError(fmt::format("{}: {}", label_, what)); }

void EventParser::field_error(std::string_view field, std::string_view expected) const {
  fail(fmt::format("traceEvents[{}].{}: expected {}", index_, field, expected));
}

void EventParser::json_error(simdjson::error_code err) const {
  fail(fmt::format("invalid JSON in traceEvents[{}]: {}", index_, simdjson::error_message(err)));
}


std::int64_t EventParser::read_time(od::value& v, std::string_view field) {
  od::json_type type;
  if (v.type().get(type) || type != od::json_type::number) field_error(field, "a number");
  const std::string_view token = v.raw_json_token();
  const auto ns = json_text::microseconds_to_ns(trim_token(token));
  if (!ns) field_error(field, "a number of microseconds in range");
  return *ns;
}

Lane EventParser::read_lane(od::value& v, std::string_view field) {
  std::int64_t n = 0;
  if (v.get_int64().get(n) == simdjson::SUCCESS) return Lane{n, false};  // as in arg_int
  od::json_type type;
  if (v.type().get(type)) field_error(field, "a number or a string");
  if (type == od::json_type::number) {
    double d = 0;
    if (v.get_double().get(d)) field_error(field, "a number or a string");
    const auto as_int = json_text::double_to_int64(d);
    if (!as_int) field_error(field, "a number in range");
    return Lane{*as_int, false};
  }
  if (type == od::json_type::string) {
    return Lane{static_cast<std::int64_t>(intern_string(v, field, "a number or a string")), true};
  }
  field_error(field, "a number or a string");
}

std::string_view EventParser::read_string(od::value& v, std::string_view field) {
  std::string_view s;
  if (v.get_string().get(s)) field_error(field, "a string");
  return s;
}

// "X", read from the raw token; anything else (escapes, errors) through simdjson.
char EventParser::read_phase(od::value& v) {
  const std::string_view token = trim_token(v.raw_json_token());
  if (token.size() == 3 && token[0] == '"' && token[2] == '"' && token[1] != '\\') return token[1];
  const std::string_view ph = read_string(v, cat::kPh);
  if (ph.size() != 1) field_error(cat::kPh, "a one-letter phase");
  return ph[0];
}

StringId EventParser::intern_string(od::value& v, std::string_view field, std::string_view expected) {
  // A string's token runs from its opening quote to the next structural
  // character: the closing quote, then maybe spaces. Quotes inside a string
  // are escaped, so its raw text is the token without the quotes.
  const std::string_view token = trim_token(v.raw_json_token());
  const bool quoted = token.size() >= 2 && token.front() == '"' && token.back() == '"';
  const std::string_view raw = quoted ? token.substr(1, token.size() - 2) : std::string_view();
  if (quoted)
    if (const StringId id = raw_strings_.find(raw); id != kNoString) return id;
  std::string_view text;
  if (v.get_string().get(text)) field_error(field, expected);
  const StringId id = trace_.strings.intern(text);
  if (quoted && id != kNoString) {
    const std::string_view stored = trace_.strings.view(id);
    raw_strings_.insert(stored == raw ? stored : std::string_view(raw_copies_.emplace_back(raw)), id);
  }
  return id;
}

namespace {

// Whether a key's first byte is that of an args key read below: most keys
// Kineto writes into args ("Record function id", "Sequence number", ...) are
// told apart on that byte instead of against every key in turn.
bool may_be_read_arg(char first) {
  static const std::array<bool, 256> table = [] {
    std::array<bool, 256> t{};
    for (std::string_view k :
         {cat::kExternalId, cat::kCorrelation, cat::kGrid, cat::kBlock, cat::kDevice, cat::kContext, cat::kStream,
          cat::kRegistersPerThread, cat::kSharedMemory, cat::kDynamicSharedMemory, cat::kBytes, cat::kBlocksPerSm,
          cat::kWarpsPerSm, cat::kOccupancy})
      t[static_cast<unsigned char>(k.front())] = true;
    return t;
  }();
  return table[static_cast<unsigned char>(first)];
}

}  // namespace

void EventParser::read_args(od::object args, Event& ev, GpuArgs& g) {
  // Fields and values by reference: simdjson's iterators are small structs
  // whose copies cost store-forwarding stalls in this loop.
  for (auto item : args) {
    if (auto err = item.error(); err) json_error(err);
    od::field& field = item.value_unsafe();
    const Key key{field.key()};
    if (!may_be_read_arg(*key.raw.raw())) continue;  // the value is skipped unread
    od::value& v = field.value();
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

std::optional<EventKind> EventParser::kind_of(StringId category) {
  if (category >= category_kind_.size()) category_kind_.resize(category + 1, kUnresolved);
  std::int8_t& k = category_kind_[category];
  if (k == kUnresolved) {
    const auto kind = cat::kind_of_category(trace_.strings.view(category));
    k = kind ? static_cast<std::int8_t>(*kind) : kUnknown;
  }
  if (k == kUnknown) return std::nullopt;
  return static_cast<EventKind>(k);
}

void EventParser::parse(od::object object, std::size_t index) {
index_ = index;
std::int64_t flow_id = -1;
  Event ev;
  GpuArgs g;
  bool have_ph = false;
  bool have_ts = false;
  for (auto item : object) {  // by reference, as in read_args
    if (auto err = item.error(); err) json_error(err);
    od::field& field = item.value_unsafe();
    const Key key{field.key()};
    od::value& v = field.value();
    if (key == cat::kPh) {
      ev.phase = read_phase(v);
      have_ph = true;
    } else if (key == cat::kCat) {
      ev.category = intern_string(v, cat::kCat, "a string");
    } else if (key == cat::kName) {
      ev.name = intern_string(v, cat::kName, "a string");
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
      if (!id.is_string) flow_id = id.value;
    } else if (key == cat::kArgs) {
      od::object args;
      if (v.get_object().get(args)) field_error(cat::kArgs, "an object");
      read_args(args, ev, g);
    }
  }
  saw_begin_end_ |= ev.phase == 'B' || ev.phase == 'E';
  if (!have_ph) fail(fmt::format("traceEvents[{}]: missing \"ph\"", index_));
  if (!have_ts && ev.phase != 'M') fail(fmt::format("traceEvents[{}]: missing \"ts\"", index_));

  std::optional<EventKind> kind;
  if (ev.category != kNoString) kind = kind_of(ev.category);
  switch (ev.phase) {
    case 'M': kind = EventKind::Metadata; break;
    case 's': case 'f': case 't': kind = EventKind::Flow; break;
    case 'i': case 'I': if (!kind) kind = EventKind::Instant; break;
    default: break;
  }
  ev.kind = kind.value_or(EventKind::Other);
  if (std::int64_t end = 0; __builtin_add_overflow(ev.ts_ns, ev.dur_ns, &end))
    fail(fmt::format("traceEvents[{}]: ts + dur is past what 64-bit nanoseconds hold", index_));
  if (ev.kind == EventKind::Flow) {
    ev.correlation = flow_id;
  }
  trace_.add(ev, is_gpu_activity(ev.kind) ? &g : nullptr);
}

void complete_begin_end_pairs(Trace& trace) {
  bool any = false;
  for (const auto& e : trace.events) any |= e.phase == 'B' || e.phase == 'E';
  if (!any) return;
  // Open "B" events per thread: the lane key is (pid, tid) as written, numbers and strings apart.
  using LaneKey = std::tuple<std::int64_t, bool, std::int64_t, bool>;
  std::map<LaneKey, std::vector<std::size_t>> open;
  std::vector<Event> kept;
  kept.reserve(trace.events.size());
  for (const auto& e : trace.events) {
    const LaneKey lane{e.pid.value, e.pid.is_string, e.tid.value, e.tid.is_string};
    if (e.phase == 'B') {
      open[lane].push_back(kept.size());
      kept.push_back(e);
      kept.back().phase = 'X';
    } else if (e.phase == 'E') {
      auto& stack = open[lane];
      if (!stack.empty()) {
        Event& b = kept[stack.back()];
        // An "E" before its "B" gives 0; a span past int64 (only when b.ts < 0) is cut to
        // INT64_MAX, so b.ts + dur still fits.
        std::int64_t dur = 0;
        if (__builtin_sub_overflow(e.ts_ns, b.ts_ns, &dur)) dur = e.ts_ns > b.ts_ns ? INT64_MAX : 0;
        b.dur_ns = std::max<std::int64_t>(0, dur);
        stack.pop_back();
      }
    } else {
      kept.push_back(e);
    }
  }
  trace.events = std::move(kept);
}

}  // namespace attnprof
