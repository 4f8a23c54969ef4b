// Builds the launch and CPU-range links with one sweep per CPU thread.
#include "analysis/trace_index.h"

#include <algorithm>
#include <map>

namespace attnprof {
namespace {

bool is_cpu_range(const Event& e) {
  return e.phase == 'X' &&
         (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation || e.kind == EventKind::PythonFunction);
}

KernelClass classify_activity(const Trace& t, const Event& e) {
  if (e.kind == EventKind::GpuMemcpy)
    return {KernelCategory::Memcpy, MathUnit::None, Precision::Unknown, KernelOp::Copy, "memcpy", "CUDA"};
  if (e.kind == EventKind::GpuMemset)
    return {KernelCategory::Memset, MathUnit::None, Precision::Unknown, KernelOp::Fill, "memset", "CUDA"};
  return classify_kernel(t.name(e));
}

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Some GEMM names say "16-bit" without saying which (nvjet's "_h_", cuDNN's
// "f16"). The trace's other kernels usually do (ATen's c10::BFloat16 or
// c10::Half, CUDA's __nv_bfloat16 or __half): when they name only one of the
// two, that is the precision. Each distinct kernel name is looked at once.
struct HalfPrecisionHints {
  bool bf16 = false, fp16 = false, ambiguous = false;
  void add(std::string_view n, const KernelClass& cls) {
    ambiguous |= cls.precision == Precision::Half16;
    bf16 |= has(n, "BFloat16") || has(n, "bfloat16") || has(n, "bf16");
    fp16 |= has(n, "c10::Half") || has(n, "__half") || has(n, "fp16") || has(n, "h16816") || has(n, "h884") ||
            has(n, "h1688");
  }
  void resolve(std::vector<GpuActivity>& activities) const {
    if (!ambiguous || bf16 == fp16) return;
    for (GpuActivity& a : activities)
      if (a.cls.precision == Precision::Half16) a.cls.precision = bf16 ? Precision::BF16 : Precision::FP16;
  }
};

}  // namespace

TraceIndex::TraceIndex(const Trace& trace) : trace_(&trace) {
  const auto& events = trace.events;
  // One pass over the events (they are the bulk of memory): launch calls,
  // GPU activity and CPU ranges per thread are collected together, with what
  // the later steps need of each event, so that none reads the events again.
  struct LaneItems;
  struct LaunchCall {
    std::int64_t correlation;
    std::int64_t ts;
    std::int32_t event;
    LaneItems* lane;  // nullptr: a thread named by a string
  };
  std::vector<LaunchCall> launches;
  std::vector<std::int64_t> activity_correlation;  // by index into activities_
  bool activities_by_start = true;
  std::int64_t last_activity_start = INT64_MIN;
  HalfPrecisionHints half;
  std::int64_t min_correlation = INT64_MAX, max_correlation = -1;
  std::vector<KernelClass> class_cache(trace.strings.size());
  std::vector<char> classified(trace.strings.size(), 0);
  // CPU ranges and, later, the launches, per thread: each lane keeps both in
  // time order and is swept once with a stack. A range's times are copied
  // here, while the event is at hand: the sweep then reads a dense list
  // instead of every range's event again (a CPU trace has millions of
  // ranges, and those reads were most of the index's time).
  struct Times {
    std::int64_t ts;
    std::int64_t end;
  };
  std::vector<Times> times;  // by index into ranges_
  struct Launch {
    std::int64_t ts;
    std::size_t activity;
  };
  struct LaneItems {
    std::vector<std::int32_t> ranges;  // indices into ranges_
    std::vector<Launch> launches;
    bool ranges_sorted = true;  // by start, the longer (outer) range first at equal start
  };
  // Memory first touched costs more here than anything else the index does
  // (a page fault per 4 KiB): the per-event lists get room for every event up
  // front, which only reserves address space, instead of growing by copies.
  ranges_.reserve(events.size());
  times.reserve(events.size());
  activities_.reserve(events.size());
  activity_correlation.reserve(events.size());
  launches.reserve(events.size());
  std::map<std::pair<std::int64_t, std::int64_t>, LaneItems> lanes;
  std::pair<std::int64_t, std::int64_t> last_lane{};
  LaneItems* last_items = nullptr;  // consecutive events are mostly on one thread
  const auto lane_of = [&](const Event& e) -> LaneItems& {
    const std::pair<std::int64_t, std::int64_t> key{e.pid.value(), e.tid.value()};
    if (last_items == nullptr || key != last_lane) {
      last_lane = key;
      last_items = &lanes[key];
    }
    return *last_items;
  };
  const auto range_before = [&](std::int32_t a, std::int32_t b) {
    const Times& x = times[static_cast<std::size_t>(a)];
    const Times& y = times[static_cast<std::size_t>(b)];
    return x.ts != y.ts ? x.ts < y.ts : x.end - x.ts > y.end - y.ts;
  };
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (is_launch_api(e.kind)) {
      if (e.correlation < 0) continue;
      LaneItems* lane = e.pid.is_string || e.tid.is_string ? nullptr : &lane_of(e);
      launches.push_back({e.correlation, e.ts_ns, static_cast<std::int32_t>(i), lane});
      min_correlation = std::min(min_correlation, e.correlation);
      max_correlation = std::max(max_correlation, e.correlation);
    } else if (is_gpu_activity(e.kind)) {
      if (e.phase != 'X') continue;
      // Classified once per distinct name (string ids are dense); the launch
      // is filled in below, once every launch call is known.
      GpuActivity a{i, kNone, kNone, {}};
      if (e.kind == EventKind::Kernel) {
        if (!classified[e.name]) {
          class_cache[e.name] = classify_activity(trace, e);
          classified[e.name] = 1;
          half.add(trace.name(e), class_cache[e.name]);
        }
        a.cls = class_cache[e.name];
      } else {
        a.cls = classify_activity(trace, e);
      }
      activities_.push_back(a);
      activity_correlation.push_back(e.correlation);
      activities_by_start &= e.ts_ns >= last_activity_start;
      last_activity_start = e.ts_ns;
    } else if (is_cpu_range(e) && !e.pid.is_string && !e.tid.is_string) {
      has_cpu_ops_ |= e.kind == EventKind::CpuOp;
      LaneItems& lane = lane_of(e);
      const auto r = static_cast<std::int32_t>(ranges_.size());
      ranges_.push_back({static_cast<std::uint32_t>(i), kNone, e.name, e.kind});
      times.push_back({e.ts_ns, e.end_ns()});
      if (!lane.ranges.empty() && range_before(r, lane.ranges.back())) lane.ranges_sorted = false;
      lane.ranges.push_back(r);
    }
  }

  // Launch calls by correlation id: a flat table when the ids are dense (as
  // CUPTI hands them out), else a sorted list searched by binary search. Of
  // two launches with one id (a malformed trace), the first in the file wins.
  const bool dense = !launches.empty() && static_cast<std::uint64_t>(max_correlation - min_correlation) <
                                              4 * static_cast<std::uint64_t>(events.size()) + 1024;
  std::vector<std::int32_t> launch_table;  // correlation - min -> index into launches
  if (dense) {
    launch_table.assign(static_cast<std::size_t>(max_correlation - min_correlation) + 1, kNone);
    for (std::size_t l = 0; l < launches.size(); ++l) {
      std::int32_t& slot = launch_table[static_cast<std::size_t>(launches[l].correlation - min_correlation)];
      if (slot == kNone) slot = static_cast<std::int32_t>(l);
    }
  } else {
    std::stable_sort(launches.begin(), launches.end(),
                     [](const LaunchCall& a, const LaunchCall& b) { return a.correlation < b.correlation; });
  }
  const auto launch_of = [&](std::int64_t correlation) -> const LaunchCall* {
    if (correlation < min_correlation || correlation > max_correlation) return nullptr;
    if (dense) {
      const std::int32_t l = launch_table[static_cast<std::size_t>(correlation - min_correlation)];
      return l == kNone ? nullptr : &launches[static_cast<std::size_t>(l)];
    }
    const auto it = std::lower_bound(launches.begin(), launches.end(), correlation,
                                     [](const LaunchCall& l, std::int64_t c) { return l.correlation < c; });
    return it != launches.end() && it->correlation == correlation ? &*it : nullptr;
  };
  half.resolve(activities_);
  // Activities by GPU start; file order usually is. When it is not, each
  // activity's correlation is read back from its event after the sort.
  if (!activities_by_start) {
    std::stable_sort(activities_.begin(), activities_.end(), [&](const GpuActivity& x, const GpuActivity& y) {
      return events[x.event].ts_ns < events[y.event].ts_ns;
    });
    for (std::size_t i = 0; i < activities_.size(); ++i)
      activity_correlation[i] = events[activities_[i].event].correlation;
  }
  for (std::size_t i = 0; i < activities_.size(); ++i) {
    const LaunchCall* l = launch_of(activity_correlation[i]);
    if (l == nullptr) continue;
    activities_[i].launch = l->event;
    if (l->lane != nullptr) l->lane->launches.push_back({l->ts, i});
  }
  std::vector<std::int64_t>().swap(activity_correlation);

  // Launches by time; a range and a launch at the same time: the range
  // first. Both lists usually arrive in order already (file order, GPU start
  // order).
  const auto launch_before = [](const Launch& a, const Launch& b) { return a.ts < b.ts; };
  struct Open {
    std::int64_t end;
    std::int32_t index;
  };
  std::vector<Open> stack;
  for (auto& [lane, items] : lanes) {
    auto& rs = items.ranges;
    auto& ls = items.launches;
    if (!items.ranges_sorted) std::stable_sort(rs.begin(), rs.end(), range_before);
    if (!std::is_sorted(ls.begin(), ls.end(), launch_before)) std::stable_sort(ls.begin(), ls.end(), launch_before);
    stack.clear();
    std::size_t r = 0, l = 0;
    while (r < rs.size() || l < ls.size()) {
      const Times* range = r < rs.size() ? &times[static_cast<std::size_t>(rs[r])] : nullptr;
      const bool take_range = l == ls.size() || (range != nullptr && range->ts <= ls[l].ts);
      const std::int64_t ts = take_range ? range->ts : ls[l].ts;
      while (!stack.empty() && stack.back().end < ts) stack.pop_back();
      const std::int32_t top = stack.empty() ? kNone : stack.back().index;
      if (take_range) {
        ranges_[static_cast<std::size_t>(rs[r])].parent = top;
        stack.push_back({range->end, rs[r]});
        ++r;
      } else {
        activities_[ls[l].activity].range = top;
        ++l;
      }
    }
    // Each lane's lists are done with: hand their memory back before the next.
    std::vector<std::int32_t>().swap(rs);
    std::vector<Launch>().swap(ls);
  }
}

bool TraceIndex::under(const GpuActivity& a, std::string_view op) const {
  for (std::int32_t r = a.range; r != kNone; r = ranges_[static_cast<std::size_t>(r)].parent)
    if (name(ranges_[static_cast<std::size_t>(r)]) == op) return true;
  return false;
}

std::int32_t TraceIndex::outermost_op(const GpuActivity& a) const {
  std::int32_t found = kNone;
  for (std::int32_t r = a.range; r != kNone; r = ranges_[static_cast<std::size_t>(r)].parent)
    if (ranges_[static_cast<std::size_t>(r)].kind == EventKind::CpuOp) found = r;
  return found;
}

std::int64_t TraceIndex::launch_time(const GpuActivity& a) const {
  if (a.launch != kNone) return trace_->events[static_cast<std::size_t>(a.launch)].ts_ns;
  return event(a).ts_ns;
}

}  // namespace attnprof
