// Turns one Kineto event object, as simdjson On-Demand walks it, into the
// project's Event (and GpuArgs), appending it to a Trace. The reader finds
// and batches whole events; this file knows what the fields mean.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "trace/string_index.h"
#include "trace/trace.h"

namespace attnprof {

class EventParser {
 public:
  // With `analysis_only`, as ReadDetail::Analysis: flow events skipped, only the args the analysis reads.
  EventParser(Trace& trace, std::string label, bool analysis_only = false)
      : trace_(trace), label_(std::move(label)), analysis_only_(analysis_only) {}
  // Parses `object` as traceEvents[index] and appends it. Throws InputError.
  void parse(simdjson::ondemand::object& object, std::size_t index);
  // Whether any event so far had phase "B" or "E" (see complete_begin_end_pairs).
  bool saw_begin_end() const { return saw_begin_end_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void field_error(std::string_view field, std::string_view expected) const;
  [[noreturn]] void json_error(simdjson::error_code err) const;
  std::int64_t read_time(simdjson::ondemand::value& v, std::string_view field);
  Lane read_lane(simdjson::ondemand::value& v, std::string_view field);
  std::string_view read_string(simdjson::ondemand::value& v, std::string_view field);
  StringId intern_string(simdjson::ondemand::value& v, std::string_view field, std::string_view expected);
  StringId intern_category(simdjson::ondemand::value& v);
  void check_unread(simdjson::ondemand::value& v) const;  // throws unless v starts like a JSON value
  bool arg_int(simdjson::ondemand::value& v, std::int64_t& out);
  void arg_dim3(simdjson::ondemand::value& v, std::array<std::int32_t, 3>& out);
  // With `lean`, only what the analysis reads (correlation, grid, block, bytes, stream).
  void read_args(simdjson::ondemand::object args, Event& ev, GpuArgs& g, bool lean);
  // record_shapes inputs of a CPU op (OpInputs); other args are skipped.
  void read_op_inputs(simdjson::ondemand::object args, OpInputs& out);
  bool keeps_inputs(StringId name);
  // The last two tokens of a field (a CPU thread and a GPU stream alternate).
  struct LaneCache {
    struct Entry {
      std::uint64_t word = 0;
      std::size_t size = 0;  // 0: empty (no token is empty)
      Lane lane;
    };
    Entry entries[2];
    unsigned next = 0;  // the entry a miss replaces
  };
  Lane read_lane_cached(simdjson::ondemand::value& v, std::string_view field, LaneCache& cache);
  char read_phase(simdjson::ondemand::value& v);
  std::optional<EventKind> kind_of(StringId category);
  // Reads one event's fields and appends it; with `lean`, skips what the
  // analysis does not read. False when a skip turned out wrong (duplicate keys).
  bool parse_fields(simdjson::ondemand::object& object, bool lean);
  // Whether a lean parse keeps a flow of this category: torch.profiler's "fwdbwd" alone.
  bool lean_flow_kept(StringId category) const;
  // Whether the analysis reads args of events with this category (unknown ones: yes).
  bool reads_args(StringId category);

  static constexpr std::int8_t kUnresolved = -2;
  static constexpr std::int8_t kUnknown = -1;

  Trace& trace_;
  std::string label_;
  std::size_t index_ = 0;                   // of the event being parsed, for messages
  std::vector<std::int8_t> category_kind_;  // by category StringId
  std::vector<std::int8_t> keeps_inputs_;   // by name StringId: keeps_op_inputs, decided once
  bool saw_begin_end_ = false;
  bool analysis_only_ = false;
  // String values by their raw JSON text (escapes not decoded): each distinct
  // text is unescaped and interned once. Keys point into the pool, or into
  // raw_copies_ for the few texts with escapes.
  StringIndex raw_strings_;
  // Raw category tokens (quotes included) seen so far, with their ids.
  static constexpr std::size_t kRecentCategories = 16;
  struct RecentCategory {
    std::size_t size;
    std::uint64_t head, tail;  // first and last 8 bytes (head only, zero-filled, below 8)
    std::string text;
    StringId id;
  };
  std::vector<RecentCategory> recent_categories_;
  LaneCache pid_cache_, tid_cache_;
  std::deque<std::string> raw_copies_;
};

// Chrome's duration events "B"/"E" become complete "X" events (per thread).
// The reader calls it only when EventParser::saw_begin_end(): it copies the events.
void complete_begin_end_pairs(Trace& trace);

}  // namespace attnprof
