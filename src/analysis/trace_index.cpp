// Builds the launch and CPU-range links with one sweep per CPU thread.
#include "analysis/trace_index.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace attnprof {
namespace {

bool is_cpu_range(const Event& e) {
  return e.phase == 'X' && (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation ||
                            e.kind == EventKind::PythonFunction);
}

KernelClass classify_activity(const Trace& t, const Event& e) {
  if (e.kind == EventKind::GpuMemcpy) return {KernelCategory::Memcpy, MathUnit::None, Precision::Unknown,
                                               KernelOp::Copy, "memcpy", "CUDA"};
  if (e.kind == EventKind::GpuMemset) return {KernelCategory::Memset, MathUnit::None, Precision::Unknown,
                                               KernelOp::Fill, "memset", "CUDA"};
  return classify_kernel(t.name(e));
}

}  // namespace

TraceIndex::TraceIndex(const Trace& trace) : trace_(&trace) {
  const auto& events = trace.events;
  // Launch calls by correlation id.
  std::unordered_map<std::int64_t, std::int32_t> launch_of;
  launch_of.reserve(events.size() / 4);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (is_launch_api(e.kind) && e.correlation >= 0) launch_of.emplace(e.correlation, static_cast<std::int32_t>(i));
  }
  // GPU activity, classified once per distinct name (string ids are dense).
  std::vector<KernelClass> class_cache(trace.strings.size());
  std::vector<char> classified(trace.strings.size(), 0);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!is_gpu_activity(e.kind) || e.phase != 'X') continue;
    GpuActivity a{i, kNone, kNone, {}};
    if (e.correlation >= 0)
      if (auto it = launch_of.find(e.correlation); it != launch_of.end()) a.launch = it->second;
    if (e.kind == EventKind::Kernel) {
      if (!classified[e.name]) {
        class_cache[e.name] = classify_activity(trace, e);
        classified[e.name] = 1;
      }
      a.cls = class_cache[e.name];
    } else {
      a.cls = classify_activity(trace, e);
    }
    activities_.push_back(a);
  }
  std::stable_sort(activities_.begin(), activities_.end(), [&](const GpuActivity& x, const GpuActivity& y) {
    return events[x.event].ts_ns < events[y.event].ts_ns;
  });

  // CPU ranges and the launches, per thread, swept in time order with a stack.
  struct Item {
    std::int64_t ts;
    std::int64_t neg_dur;  // longer (outer) ranges first at equal start
    int kind;              // 0: range, 1: launch
    std::size_t index;     // range index or activity index
  };
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<Item>> lanes;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!is_cpu_range(e) || e.pid.is_string || e.tid.is_string) continue;
    has_cpu_ops_ |= e.kind == EventKind::CpuOp;
    lanes[{e.pid.value, e.tid.value}].push_back({e.ts_ns, -e.dur_ns, 0, ranges_.size()});
    ranges_.push_back({i});
  }
  for (std::size_t i = 0; i < activities_.size(); ++i) {
    if (activities_[i].launch == kNone) continue;
    const Event& l = events[static_cast<std::size_t>(activities_[i].launch)];
    if (l.pid.is_string || l.tid.is_string) continue;
    auto it = lanes.find({l.pid.value, l.tid.value});
    if (it != lanes.end()) it->second.push_back({l.ts_ns, 0, 1, i});
  }
  const auto before = [](const Item& a, const Item& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.neg_dur < b.neg_dur;
  };
  for (auto& [lane, items] : lanes) {
    // Ranges come in file order (mostly sorted already), launches after them.
    std::sort(items.begin(), items.end(), before);
    std::vector<std::int32_t> stack;
    for (const Item& item : items) {
      while (!stack.empty() && event(ranges_[static_cast<std::size_t>(stack.back())]).end_ns() < item.ts)
        stack.pop_back();
      const std::int32_t top = stack.empty() ? kNone : stack.back();
      if (item.kind == 0) {
        ranges_[item.index].parent = top;
        stack.push_back(static_cast<std::int32_t>(item.index));
      } else {
        activities_[item.index].range = top;
      }
    }
  }
}

bool TraceIndex::under(const GpuActivity& a, std::string_view op) const {
  for (std::int32_t r = a.range; r != kNone; r = ranges_[static_cast<std::size_t>(r)].parent)
    if (trace_->name(event(ranges_[static_cast<std::size_t>(r)])) == op) return true;
  return false;
}

std::int32_t TraceIndex::outermost_op(const GpuActivity& a) const {
  std::int32_t found = kNone;
  for (std::int32_t r = a.range; r != kNone; r = ranges_[static_cast<std::size_t>(r)].parent)
    if (event(ranges_[static_cast<std::size_t>(r)]).kind == EventKind::CpuOp) found = r;
  return found;
}

std::int64_t TraceIndex::launch_time(const GpuActivity& a) const {
  if (a.launch != kNone) return trace_->events[static_cast<std::size_t>(a.launch)].ts_ns;
  return event(a).ts_ns;
}

}  // namespace attnprof
