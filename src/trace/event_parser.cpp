// Kineto event fields -> Event (see event_parser.h). Strict about the fields
// the Chrome trace format defines (ph, ts, dur, name, cat, pid, tid, args),
// lenient about args values, which every producer fills differently (their
// reading is event_args.cpp).
#include "trace/event_parser.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/core.h>

#include "common/input_error.h"
#include "trace/catalogue.h"
#include "trace/event_scanner.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

namespace od = simdjson::ondemand;
namespace cat = catalogue;

// The event keys the parser reads, told apart by their first byte and one
// masked word compare of the key and its closing quote (the eight bytes after
// a key's first byte are always readable: simdjson's padding follows the text).
enum class EventKey : std::uint8_t { Ph, Cat, Name, Pid, Tid, Ts, Dur, Id, Args, Other };

constexpr std::uint64_t quoted_word(std::string_view key) {  // little-endian "key\"" as a word
  std::uint64_t w = 0;
  for (std::size_t i = 0; i < key.size(); ++i)
    w |= static_cast<std::uint64_t>(static_cast<unsigned char>(key[i])) << (8 * i);
  return w | (std::uint64_t{'"'} << (8 * key.size()));
}
constexpr std::uint64_t word_mask(std::string_view key) {  // the key and its closing quote
  return key.size() >= 7 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * (key.size() + 1))) - 1;
}
template <const std::string_view& K>
bool is_key(std::uint64_t word) {
  static_assert(K.size() <= 7);
  return (word & word_mask(K)) == quoted_word(K);
}

EventKey event_key(const od::raw_json_string& raw) {
  const char* p = raw.raw();
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  switch (p[0]) {
    case 'p':
      if (is_key<cat::kPh>(w)) return EventKey::Ph;
      if (is_key<cat::kPid>(w)) return EventKey::Pid;
      break;
    case 'c':
      if (is_key<cat::kCat>(w)) return EventKey::Cat;
      break;
    case 'n':
      if (is_key<cat::kName>(w)) return EventKey::Name;
      break;
    case 't':
      if (is_key<cat::kTs>(w)) return EventKey::Ts;
      if (is_key<cat::kTid>(w)) return EventKey::Tid;
      break;
    case 'd':
      if (is_key<cat::kDur>(w)) return EventKey::Dur;
      break;
    case 'i':
      if (is_key<cat::kId>(w)) return EventKey::Id;
      break;
    case 'a':
      if (is_key<cat::kArgs>(w)) return EventKey::Args;
      break;
    default:
      break;
  }
  return EventKey::Other;
}

std::string_view trim_token(std::string_view t) {
  while (!t.empty() && json_scan::is_space(t.back())) t.remove_suffix(1);
  return t;
}

}  // namespace

void EventParser::fail(const std::string& what) const { throw InputError(fmt::format("{}: {}", label_, what)); }

void EventParser::field_error(std::string_view field, std::string_view expected) const {
  fail(fmt::format("traceEvents[{}].{}: expected {}", index_, field, expected));
}

void EventParser::json_error(simdjson::error_code err) const {
  fail(fmt::format("invalid JSON in traceEvents[{}]: {}", index_, simdjson::error_message(err)));
}

// A value left unread must still start like a JSON value: simdjson skips it by
// counting brackets, so a stray ']' or '}' there would shift where it thinks
// the next field begins (and a read that skips the whole args object would see
// the same text differently).
void EventParser::check_unread(od::value& v) const {
  od::json_type type;
  if (auto err = v.type().get(type); err) json_error(err);
}

std::int64_t EventParser::read_time(od::value& v, std::string_view field) {
  od::json_type type;
  if (v.type().get(type) || type != od::json_type::number) field_error(field, "a number");
  const std::string_view token = v.raw_json_token();
  const auto ns = json_text::microseconds_to_ns_padded(trim_token(token));
  if (!ns) field_error(field, "a number of microseconds in range");
  return *ns;
}

// pid and tid repeat from event to event: a token of at most 8 bytes equal to
// one of the last two read for that field gives the same lane without parsing it.
Lane EventParser::read_lane_cached(od::value& v, std::string_view field, LaneCache& cache) {
  const std::string_view token = trim_token(v.raw_json_token());
  if (token.size() > 8) return read_lane(v, field);
  const std::uint64_t word = json_text::padded_word(token);
  for (const auto& e : cache.entries)
    if (e.size == token.size() && e.word == word) return e.lane;
  const Lane lane = read_lane(v, field);
  cache.entries[cache.next] = {word, token.size(), lane};
  cache.next ^= 1u;
  return lane;
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

// Categories are few and repeat on every event: they are matched on their raw
// token against the ones seen so far (length and first and last 8 bytes, which
// is the whole token up to 16 bytes) before going through the string index.
StringId EventParser::intern_category(od::value& v) {
  const std::string_view token = trim_token(v.raw_json_token());
  const std::uint64_t head = json_text::padded_word(token);
  const std::uint64_t tail = token.size() >= 8 ? json_text::padded_word(token, token.size() - 8) : 0;
  for (const RecentCategory& c : recent_categories_)
    if (c.size == token.size() && c.head == head && c.tail == tail &&
        (token.size() <= 16 || token == std::string_view(c.text)))
      return c.id;
  const StringId id = intern_string(v, cat::kCat, "a string");
  if (recent_categories_.size() < kRecentCategories && token.size() <= 64)
    recent_categories_.push_back({token.size(), head, tail, std::string(token), id});
  return id;
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

void EventParser::parse(od::object& object, std::size_t index) {
  index_ = index;
  if (parse_fields(object, analysis_only_)) return;
  // A skip decided early was undone by a later duplicate key ("ph" or "cat"
  // written twice): the event is read again, whole.
  if (auto err = object.reset().error(); err) json_error(err);
  parse_fields(object, false);
}

bool EventParser::parse_fields(od::object& object, bool lean) {
  std::int64_t flow_id = -1;
  Event ev;
  GpuArgs g;
  bool have_ph = false;
  bool have_ts = false;
  bool lean_flow = false;          // lean: a flow; only where it is and its category are read
  bool skipped_args = false;       // lean: args of a CPU-side event were not read
  std::optional<OpInputs> inputs;  // record_shapes of an op the attention view reads
  for (auto item : object) {       // by reference, as in read_args
    if (auto err = item.error(); err) json_error(err);
    od::field& field = item.value_unsafe();
    od::value& v = field.value();
    const EventKey key = event_key(field.key());
    if (lean_flow && key != EventKey::Ph && key != EventKey::Cat && key != EventKey::Id && key != EventKey::Pid &&
        key != EventKey::Tid && key != EventKey::Ts) {
      check_unread(v);
      continue;
    }
    switch (key) {
      case EventKey::Ph:
        ev.phase = read_phase(v);
        have_ph = true;
        // Flows link launches to kernels, which the analysis does by correlation id; of the flows only
        // torch.profiler's fwdbwd (a forward op to its backward node) are kept (lean_flow_kept).
        lean_flow |= lean && is_flow_phase(ev.phase);
        break;
      case EventKey::Cat:
        ev.category = intern_category(v);
        break;
      case EventKey::Name:
        ev.name = intern_string(v, cat::kName, "a string");
        break;
      case EventKey::Ts:
        ev.ts_ns = read_time(v, cat::kTs);
        have_ts = true;
        break;
      case EventKey::Dur:
        ev.dur_ns = read_time(v, cat::kDur);
        if (ev.dur_ns < 0) field_error(cat::kDur, "a duration >= 0");
        break;
      case EventKey::Pid:
        ev.pid = read_lane_cached(v, cat::kPid, pid_cache_);
        break;
      case EventKey::Tid:
        ev.tid = read_lane_cached(v, cat::kTid, tid_cache_);
        break;
      case EventKey::Id: {
        const Lane id = read_lane(v, cat::kId);
        if (!id.is_string) flow_id = id.value();
        break;
      }
      case EventKey::Args: {
        od::object args;
        if (v.get_object().get(args)) field_error(cat::kArgs, "an object");
        // Shapes of the attention and matmul ops (the name comes before args in
        // every producer seen; where it does not, the shapes are not kept).
        if (ev.category != kNoString && ev.name != kNoString && kind_of(ev.category) == EventKind::CpuOp &&
            keeps_inputs(ev.name)) {
          read_op_inputs(args, inputs.emplace());
          break;
        }
        // The analysis reads args only of GPU activity and launch calls.
        if (lean && ev.category != kNoString && !reads_args(ev.category)) {
          skipped_args = true;
          break;
        }
        read_args(args, ev, g, lean);
        break;
      }
      case EventKey::Other:
        check_unread(v);
        break;
    }
  }
  if (lean_flow && !(is_flow_phase(ev.phase) && have_ts && lean_flow_kept(ev.category))) return is_flow_phase(ev.phase);
  if (skipped_args && (ev.category == kNoString || reads_args(ev.category))) return false;
  saw_begin_end_ |= ev.phase == 'B' || ev.phase == 'E';
  if (!have_ph) fail(fmt::format("traceEvents[{}]: missing \"ph\"", index_));
  if (!have_ts && ev.phase != 'M') fail(fmt::format("traceEvents[{}]: missing \"ts\"", index_));

  std::optional<EventKind> kind;
  if (ev.category != kNoString) kind = kind_of(ev.category);
  switch (ev.phase) {
    case 'M':
      kind = EventKind::Metadata;
      break;
    case 's':
    case 'f':
    case 't':
      kind = EventKind::Flow;
      break;
    case 'i':
    case 'I':
      if (!kind) kind = EventKind::Instant;
      break;
    default:
      break;
  }
  ev.kind = kind.value_or(EventKind::Other);
  if (std::int64_t end = 0; __builtin_add_overflow(ev.ts_ns, ev.dur_ns, &end))
    fail(fmt::format("traceEvents[{}]: ts + dur is past what 64-bit nanoseconds hold", index_));
  if (ev.kind == EventKind::Flow) {
    ev.correlation = flow_id;
  }
  if (inputs && ev.kind == EventKind::CpuOp) {
    inputs->event = static_cast<std::uint32_t>(trace_.events.size());
    trace_.op_inputs.push_back(std::move(*inputs));
  }
  trace_.add(ev, is_gpu_activity(ev.kind) ? &g : nullptr);
  return true;
}

bool EventParser::lean_flow_kept(StringId category) const {
  return category != kNoString && trace_.strings.view(category) == "fwdbwd";
}

bool EventParser::reads_args(StringId category) {
  const auto kind = kind_of(category);
  return !kind || is_gpu_activity(*kind) || is_launch_api(*kind);
}

void complete_begin_end_pairs(Trace& trace) {
  // Open "B" events per thread: the lane key is (pid, tid) as written, numbers and strings apart.
  using LaneKey = std::tuple<std::int64_t, bool, std::int64_t, bool>;
  std::map<LaneKey, std::vector<std::size_t>> open;
  std::vector<Event> kept;
  kept.reserve(trace.events.size());
  // Where each event went (op_inputs name events by index; "E" events go away).
  constexpr std::uint32_t kGone = UINT32_MAX;  // an "E" event: merged into its "B"
  std::vector<std::uint32_t> moved_to(trace.op_inputs.empty() ? 0 : trace.events.size(), kGone);
  for (const auto& e : trace.events) {
    if (!moved_to.empty() && e.phase != 'E')
      moved_to[static_cast<std::size_t>(&e - trace.events.data())] = static_cast<std::uint32_t>(kept.size());
    const LaneKey lane{e.pid.value(), e.pid.is_string, e.tid.value(), e.tid.is_string};
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
  for (OpInputs& in : trace.op_inputs) in.event = moved_to[in.event];
  std::erase_if(trace.op_inputs, [](const OpInputs& in) { return in.event == kGone; });
}

}  // namespace attnprof
