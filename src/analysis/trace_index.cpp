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

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Some GEMM names say "16-bit" without saying which (nvjet's "_h_", cuDNN's
// "f16"). The trace's other kernels usually do (ATen's c10::BFloat16 or
// c10::Half, CUDA's __nv_bfloat16 or __half): when they name only one of the
// two, that is the precision.
void resolve_half_precision(const Trace& trace, std::vector<GpuActivity>& activities) {
  bool bf16 = false, fp16 = false, ambiguous = false;
  std::vector<char> seen(trace.strings.size(), 0);
  for (const GpuActivity& a : activities) {
    const Event& e = trace.events[a.event];
    if (e.kind != EventKind::Kernel || seen[e.name]) continue;
    seen[e.name] = 1;
    ambiguous |= a.cls.precision == Precision::Half16;
    const std::string_view n = trace.name(e);
    bf16 |= has(n, "BFloat16") || has(n, "bfloat16") || has(n, "bf16");
    fp16 |= has(n, "c10::Half") || has(n, "__half") || has(n, "fp16") || has(n, "h16816") || has(n, "h884") ||
            has(n, "h1688");
  }
  if (!ambiguous || bf16 == fp16) return;
  for (GpuActivity& a : activities)
    if (a.cls.precision == Precision::Half16) a.cls.precision = bf16 ? Precision::BF16 : Precision::FP16;
}

}  // namespace

TraceIndex::TraceIndex(const Trace& trace) : trace_(&trace) {
  const auto& events = trace.events;
  // Launch calls by correlation id: a flat table when the ids are dense (as
  // CUPTI hands them out), a hash map otherwise.
  std::int64_t max_correlation = -1;
  for (const Event& e : events)
    if (is_launch_api(e.kind)) max_correlation = std::max(max_correlation, e.correlation);
  const bool dense = max_correlation >= 0 &&
                     static_cast<std::uint64_t>(max_correlation) < 4 * static_cast<std::uint64_t>(events.size()) + 1024;
  std::vector<std::int32_t> launch_table(dense ? static_cast<std::size_t>(max_correlation) + 1 : 0, kNone);
  std::unordered_map<std::int64_t, std::int32_t> launch_map;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!is_launch_api(e.kind) || e.correlation < 0) continue;
    if (dense) launch_table[static_cast<std::size_t>(e.correlation)] = static_cast<std::int32_t>(i);
    else launch_map.emplace(e.correlation, static_cast<std::int32_t>(i));
  }
  const auto launch_of = [&](std::int64_t correlation) -> std::int32_t {
    if (correlation < 0) return kNone;
    if (dense) return correlation <= max_correlation ? launch_table[static_cast<std::size_t>(correlation)] : kNone;
    const auto it = launch_map.find(correlation);
    return it == launch_map.end() ? kNone : it->second;
  };
  // GPU activity, classified once per distinct name (string ids are dense).
  std::vector<KernelClass> class_cache(trace.strings.size());
  std::vector<char> classified(trace.strings.size(), 0);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!is_gpu_activity(e.kind) || e.phase != 'X') continue;
    GpuActivity a{i, launch_of(e.correlation), kNone, {}};
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
  resolve_half_precision(trace, activities_);
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
