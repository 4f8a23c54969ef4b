// Region selection (see regions.h).
#include "analysis/regions.h"

#include <fnmatch.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/input_error.h"

namespace attnprof {
namespace {

bool is_step(std::string_view name) { return name.starts_with("ProfilerStep#"); }

// Ranges a library or PyTorch itself opens: never what a user means by a region.
bool library_range(std::string_view n) {
  for (std::string_view prefix : {"cub::",
                                  "thrust::",
                                  "cudnn",
                                  "cuDNN",
                                  "cublas",
                                  "cuBLAS",
                                  "nccl",
                                  "NCCL",
                                  "c10d::",
                                  "cutlass",
                                  "CUTLASS",
                                  "Optimizer.",
                                  "enumerate(DataLoader)",
                                  "autograd::",
                                  "aten::",
                                  "torch::",
                                  "## ",
                                  "cuda",
                                  "CUDA",
                                  "nvtx",
                                  "NVTX"})
    if (n.starts_with(prefix)) return true;
  return false;
}

bool matches(std::string_view name, const std::string& wanted) {
  if (name == wanted) return true;
  if (region_stem(name) == wanted) return true;
  if (wanted.find_first_of("*?[") != std::string::npos)
    return fnmatch(wanted.c_str(), std::string(name).c_str(), 0) == 0;
  return false;
}

// Region groups keyed by stem, handed back in the order their stems were first seen,
// each group's instances in start order.
class GroupsByStem {
 public:
  explicit GroupsByStem(std::string source) : source_(std::move(source)) {}
  RegionGroup& operator[](const std::string& stem) {
    auto [it, fresh] = groups_.try_emplace(stem);
    if (fresh) {
      it->second.name = stem;
      it->second.source = source_;
      order_.push_back(stem);
    }
    return it->second;
  }
  std::vector<RegionGroup> take() {
    std::vector<RegionGroup> out;
    for (const auto& stem : order_) {
      RegionGroup g = std::move(groups_[stem]);
      std::stable_sort(g.instances.begin(), g.instances.end(),
                       [](const RegionInstance& a, const RegionInstance& b) { return a.start_ns < b.start_ns; });
      out.push_back(std::move(g));
    }
    return out;
  }

 private:
  std::string source_;
  std::map<std::string, RegionGroup> groups_;
  std::vector<std::string> order_;
};

// Ranges chosen as region instances, by index into TraceIndex::ranges().
struct Chosen {
  std::vector<std::size_t> ranges;
  std::string source;
};

// Per range: does any GPU activity launch inside it (directly or nested)?
std::vector<char> ranges_with_launches(const TraceIndex& index) {
  std::vector<char> has(index.ranges().size(), 0);
  for (const GpuActivity& a : index.activities())
    for (std::int32_t r = a.range; r != kNone && !has[static_cast<std::size_t>(r)];
         r = index.ranges()[static_cast<std::size_t>(r)].parent)
      has[static_cast<std::size_t>(r)] = 1;
  return has;
}

Chosen choose_automatically(const TraceIndex& index) {
  const Trace& t = index.trace();
  const auto& ranges = index.ranges();
  const auto launches = ranges_with_launches(index);
  Chosen steps;
  // Names repeat: whether one is a step is decided once per name id.
  std::vector<std::int8_t> step_name(t.strings.size(), -1);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (!launches[i]) continue;
    std::int8_t& step = step_name[ranges[i].name];
    if (step < 0) step = is_step(index.name(ranges[i])) ? 1 : 0;
    if (step) steps.ranges.push_back(i);
  }
  if (!steps.ranges.empty()) {
    steps.source = "profiler steps (ProfilerStep#N)";
    return steps;
  }
  // Outermost user annotations (record_function / NVTX) that launched GPU work.
  Chosen annotations;
  std::vector<std::int8_t> library(t.strings.size(), -1);  // by name id
  const auto user_range = [&](std::size_t i) {
    if (ranges[i].kind != EventKind::UserAnnotation) return false;
    std::int8_t& lib = library[ranges[i].name];
    if (lib < 0) lib = library_range(index.name(ranges[i])) ? 1 : 0;
    return lib == 0;
  };
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (!launches[i] || !user_range(i)) continue;
    bool outermost = true;
    for (std::int32_t p = ranges[i].parent; p != kNone; p = ranges[static_cast<std::size_t>(p)].parent)
      if (user_range(static_cast<std::size_t>(p))) outermost = false;
    if (outermost) annotations.ranges.push_back(i);
  }
  annotations.source = "record_function / NVTX ranges";
  return annotations;
}

// `exact`: a name the user asked for as it is (--region fwd0): its ranges form
// a group of that name, not of its stem.
std::vector<RegionGroup> group_instances(const TraceIndex& index, const Chosen& chosen, std::string_view exact = {}) {
  const Trace& t = index.trace();
  GroupsByStem groups(chosen.source);
  // Range instances, then each activity goes to the instance whose span holds its launch.
  struct Span {
    std::int64_t start, end;
    std::int64_t pid;
    RegionGroup* group;
    std::size_t slot;
  };
  std::vector<Span> spans;
  for (std::size_t r : chosen.ranges) {
    const Event& e = index.event(index.ranges()[r]);
    const std::string name(t.name(e));
    RegionGroup& group = groups[name == exact ? name : region_stem(name)];  // stays in place: GroupsByStem keeps a map
    spans.push_back({e.ts_ns, e.end_ns(), e.pid.value(), &group, group.instances.size()});
    group.instances.push_back({name, e.ts_ns, e.end_ns(), {}});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  const auto& acts = index.activities();
  // GPU work whose launch is not in the trace (launched before the profiler's
  // window, run inside it) goes by the GPU-side span of a chosen range of the
  // same name, when Kineto wrote one; else it is left out: its CPU time is not
  // its launch's, and placing it by that time counts it in the wrong step.
  // A GPU-side span belongs to the instance of its name that started last on
  // the CPU before it (names repeat: fwd, fwd, ...). Both lists are made only
  // when such work turns up (a pass over every event).
  struct Placed {
    std::int64_t gpu_start, gpu_end;
    RegionGroup* group;
    std::size_t slot;
  };
  std::vector<Placed> gpu_spans;  // by GPU start
  bool spans_listed = false;
  const auto list_spans = [&] {
    spans_listed = true;
    std::map<std::string_view, std::vector<const Span*>> by_name;  // each in CPU start order (spans is sorted)
    for (const Span& sp : spans) by_name[sp.group->instances[sp.slot].name].push_back(&sp);
    for (const Event& e : t.events) {
      if (e.kind != EventKind::GpuUserAnnotation) continue;
      const auto it = by_name.find(t.name(e));
      if (it == by_name.end()) continue;
      const auto& cands = it->second;
      const auto after = std::upper_bound(cands.begin(), cands.end(), e.ts_ns,
                                          [](std::int64_t ts, const Span* sp) { return ts < sp->start; });
      if (after == cands.begin()) continue;
      const Span* sp = *std::prev(after);
      gpu_spans.push_back({e.ts_ns, e.end_ns(), sp->group, sp->slot});
    }
    std::sort(gpu_spans.begin(), gpu_spans.end(),
              [](const Placed& a, const Placed& b) { return a.gpu_start < b.gpu_start; });
  };
  const bool any_launch = std::any_of(acts.begin(), acts.end(), [](const GpuActivity& a) { return a.launch != kNone; });
  auto after = spans.begin();  // first span starting after the last activity's launch
  for (std::size_t i = 0; i < acts.size(); ++i) {
    if (acts[i].launch == kNone && any_launch) {
      if (!spans_listed) list_spans();
      const std::int64_t ts = index.event(acts[i]).ts_ns;
      // The last span starting at or before the activity, if it is still open then.
      const auto next_span = std::upper_bound(gpu_spans.begin(), gpu_spans.end(), ts,
                                              [](std::int64_t v, const Placed& p) { return v < p.gpu_start; });
      if (next_span != gpu_spans.begin() && ts < std::prev(next_span)->gpu_end)
        std::prev(next_span)->group->instances[std::prev(next_span)->slot].activities.push_back(i);
      continue;
    }
    const std::int64_t ts = index.launch_time(acts[i]);
    const std::int64_t pid = acts[i].launch != kNone ? t.events[static_cast<std::size_t>(acts[i].launch)].pid.value()
                                                     : index.event(acts[i]).pid.value();
    // The last span starting at or before ts that also ends after it.
    // Activities come in GPU order, so their launches mostly fall in the
    // span found for the one before: try that before searching.
    if (!((after == spans.begin() || std::prev(after)->start <= ts) && (after == spans.end() || ts < after->start)))
      after =
          std::upper_bound(spans.begin(), spans.end(), ts, [](std::int64_t v, const Span& s) { return v < s.start; });
    auto it = after;
    // Chosen ranges rarely nest, so the containing span is among the last few.
    for (int tries = 0; it != spans.begin() && tries < 64; ++tries) {
      --it;
      if (it->end >= ts && (acts[i].launch == kNone || it->pid == pid)) {
        it->group->instances[it->slot].activities.push_back(i);
        break;
      }
    }
  }
  return groups.take();
}

// GPU-only spans (gpu_user_annotation) for a name: activities inside the span on the GPU.
std::vector<RegionGroup> group_gpu_spans(const TraceIndex& index, const std::string& wanted) {
  const Trace& t = index.trace();
  GroupsByStem groups("GPU annotation spans");
  for (const Event& e : t.events) {
    if (e.kind != EventKind::GpuUserAnnotation || !matches(t.name(e), wanted)) continue;
    const std::string name(t.name(e));
    RegionInstance inst{name, e.ts_ns, e.end_ns(), {}};
    // Activities are in GPU start order: visit only those starting inside the span.
    const auto& acts = index.activities();
    auto act = std::lower_bound(acts.begin(), acts.end(), e.ts_ns,
                                [&](const GpuActivity& a, std::int64_t ts) { return index.event(a).ts_ns < ts; });
    for (; act != acts.end() && index.event(*act).ts_ns < e.end_ns(); ++act) {
      const Event& a = index.event(*act);
      if (a.pid == e.pid && a.tid == e.tid) inst.activities.push_back(static_cast<std::size_t>(act - acts.begin()));
    }
    groups[region_stem(name)].instances.push_back(std::move(inst));
  }
  return groups.take();
}

}  // namespace

bool is_host_to_device(const TraceIndex& index, const GpuActivity& a) {
  const Event& e = index.event(a);
  return e.kind == EventKind::GpuMemcpy && index.trace().name(e).find("HtoD") != std::string_view::npos;
}

std::string region_stem(std::string_view name) {
  std::size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
  if (end == name.size()) return std::string(name);
  while (end > 0 && (name[end - 1] == '#' || name[end - 1] == '_' || name[end - 1] == '-' || name[end - 1] == ' ' ||
                     name[end - 1] == '.'))
    --end;
  return end == 0 ? std::string(name) : std::string(name.substr(0, end));
}

std::vector<RegionGroup> find_regions(const TraceIndex& index, const RegionOptions& options,
                                      std::string_view trace_label) {
  const Trace& t = index.trace();
  Chosen chosen;
  if (!options.name.empty()) {
    // Any CPU range may be a region (an annotation, a step, an op such as
    // aten::scaled_dot_product_attention); nested matches keep the outermost.
    const auto& ranges = index.ranges();
    std::vector<char> hit(ranges.size(), 0);
    std::vector<std::int8_t> name_matches(t.strings.size(), -1);  // by name id: names repeat
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      std::int8_t& m = name_matches[ranges[i].name];
      if (m < 0) m = matches(index.name(ranges[i]), options.name) ? 1 : 0;
      hit[i] = static_cast<char>(m);
    }
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      if (!hit[i]) continue;
      bool outermost = true;
      for (std::int32_t p = ranges[i].parent; p != kNone && outermost; p = ranges[static_cast<std::size_t>(p)].parent)
        outermost = !hit[static_cast<std::size_t>(p)];
      if (outermost) chosen.ranges.push_back(i);
    }
    chosen.source = fmt::format("ranges matching --region {}", options.name);
    if (chosen.ranges.empty()) {
      auto gpu = group_gpu_spans(index, options.name);
      if (!gpu.empty()) return gpu;
      std::set<std::string> names;
      for (const CpuRange& r : index.ranges())
        if (r.kind == EventKind::UserAnnotation || is_step(index.name(r))) names.insert(region_stem(index.name(r)));
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      if (known.size() > 200) known = known.substr(0, 200) + "...";
      throw InputError(fmt::format("{}: no range named '{}' in the trace (ranges: {})", trace_label, options.name,
                                   known.empty() ? "none" : known));
    }
  } else {
    chosen = choose_automatically(index);
    // No CPU range launched anything (e.g. a trace without CPU events): the GPU-side
    // annotation spans, when the trace has them, are the next best regions.
    if (chosen.ranges.empty()) {
      auto gpu = group_gpu_spans(index, "*");
      std::erase_if(gpu, [](const RegionGroup& g) {
        return std::all_of(g.instances.begin(), g.instances.end(),
                           [](const RegionInstance& i) { return i.activities.empty(); });
      });
      if (!gpu.empty()) return gpu;
    }
  }
  if (chosen.ranges.empty()) {
    RegionGroup whole{"whole trace", "no profiler steps or user annotations: the whole trace", {}};
    RegionInstance inst{"whole trace", 0, 0, {}};
    // Host-to-device copies are the program's set-up (weights, data): reported apart.
    for (std::size_t i = 0; i < index.activities().size(); ++i)
      if (!is_host_to_device(index, index.activities()[i])) inst.activities.push_back(i);
    if (!inst.activities.empty()) {
      inst.start_ns = index.event(index.activities().front()).ts_ns;
      inst.end_ns = index.event(index.activities().back()).end_ns();
    }
    whole.instances.push_back(std::move(inst));
    return {whole};
  }
  return group_instances(index, chosen, options.name);
}

std::vector<char> group_members(const RegionGroup& group, std::size_t activities) {
  std::vector<char> member(activities, 0);
  for (const RegionInstance& inst : group.instances)
    for (std::size_t i : inst.activities) member[i] = 1;
  return member;
}

}  // namespace attnprof
