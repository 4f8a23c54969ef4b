// Builds the launch and CPU-range links with one sweep per CPU thread.
#include "analysis/trace_index.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "analysis/trace_classifier.h"
#include "common/text_search.h"

namespace attnprof {
namespace {

bool is_cpu_range(const Event& e) {
  return e.phase == 'X' &&
         (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation || e.kind == EventKind::PythonFunction);
}

// What a runtime or driver call is to CUDA graphs, by its name.
enum class GraphRole : std::int8_t {
  Unknown = -1,
  None,
  BeginCapture,
  EndCapture,
  GraphLaunch,
  Kernel,
  Memcpy,
  Memset
};

GraphRole graph_role(std::string_view name) {
  if (has(name, "BeginCapture")) return GraphRole::BeginCapture;
  if (has(name, "EndCapture")) return GraphRole::EndCapture;
  if (has(name, "GraphLaunch")) return GraphRole::GraphLaunch;
  if (has(name, "LaunchKernel") || has(name, "LaunchCooperativeKernel")) return GraphRole::Kernel;
  if (has(name, "Memcpy") && has(name, "Async")) return GraphRole::Memcpy;
  if (has(name, "Memset") && has(name, "Async")) return GraphRole::Memset;
  return GraphRole::None;
}

// The node kind a GPU activity is in a graph.
GraphRole node_role(EventKind k) {
  return k == EventKind::Kernel ? GraphRole::Kernel : k == EventKind::GpuMemcpy ? GraphRole::Memcpy : GraphRole::Memset;
}

}  // namespace

// One pass over the events (they are the bulk of memory) collects launch
// calls, GPU activity (classified on the way) and CPU ranges per thread,
// with what the later steps need of each event, so that none reads the
// events again; then activities are linked to their launch, and launches and
// ranges to the ranges around them.
class TraceIndex::Builder {
 public:
  Builder(const Trace& trace, TraceIndex& index) : trace_(trace), index_(index), classes_(trace) {}

  void collect();
  void link_launches();
  void link_ranges();
  void match_captures();
  void release();

 private:
  struct Orphan {  // a launch outside every range of its own thread
    std::int64_t ts, pid;
    std::size_t activity;
  };
  void adopt_orphans(const std::vector<Orphan>& orphans);
  // The innermost range of the one thread of process pid inside an ATen op at ts; kNone when no
  // thread is, or several are.
  std::int32_t adopting_range(std::int64_t pid, std::int64_t ts) const;
  // The innermost range of a lane's (sorted) ranges open at ts.
  std::int32_t open_at(const std::vector<std::int32_t>& rs, std::int64_t ts) const;
  GraphRole role_of(const Event& e) {
    if (e.name >= roles_.size()) roles_.resize(trace_.strings.size(), GraphRole::Unknown);
    GraphRole& r = roles_[e.name];
    if (r == GraphRole::Unknown) r = graph_role(trace_.name(e));
    return r;
  }

 public:
 private:
  struct LaneItems;
  struct LaunchCall {
    std::int64_t correlation;
    std::int64_t ts;
    std::int32_t event;
    LaneItems* lane;  // nullptr: a thread named by a string
  };
  // A range's times are copied here, while the event is at hand: the sweep
  // then reads a dense list instead of every range's event again (a CPU trace
  // has millions of ranges, and those reads were most of the index's time).
  struct Times {
    std::int64_t ts;
    std::int64_t end;
  };
  struct Launch {
    std::int64_t ts;
    std::size_t activity;
  };
  // CPU ranges and, later, the launches of one thread: both kept in time
  // order and swept once with a stack.
  struct LaneItems {
    std::vector<std::int32_t> ranges;  // indices into ranges_
    std::vector<Launch> launches;
    bool ranges_sorted = true;  // by start, the longer (outer) range first at equal start
  };

  LaneItems& lane_of(const Event& e) {
    const std::pair<std::int64_t, std::int64_t> key{e.pid.value(), e.tid.value()};
    if (last_items_ == nullptr || key != last_lane_) {
      last_lane_ = key;
      last_items_ = &lanes_[key];
    }
    return *last_items_;
  }
  bool range_before(std::int32_t a, std::int32_t b) const {
    const Times& x = times_[static_cast<std::size_t>(a)];
    const Times& y = times_[static_cast<std::size_t>(b)];
    return x.ts != y.ts ? x.ts < y.ts : x.end - x.ts > y.end - y.ts;
  }

  const Trace& trace_;
  TraceIndex& index_;
  TraceClassifier classes_;
  std::vector<LaunchCall> launches_;
  std::vector<std::int64_t> activity_correlation_;  // by index into activities_
  bool activities_by_start_ = true;
  std::int64_t min_correlation_ = INT64_MAX, max_correlation_ = -1;
  std::vector<Times> times_;  // by index into ranges_
  std::map<std::pair<std::int64_t, std::int64_t>, LaneItems> lanes_;
  std::pair<std::int64_t, std::int64_t> last_lane_{};
  LaneItems* last_items_ = nullptr;            // consecutive events are mostly on one thread
  std::vector<GraphRole> roles_;               // by name, of runtime and driver calls
  std::vector<std::uint32_t> capture_marks_;   // cudaStreamBeginCapture / EndCapture calls
  std::vector<std::uint32_t> graph_launches_;  // cudaGraphLaunch calls
};

void TraceIndex::Builder::collect() {
  const auto& events = trace_.events;
  auto& ranges = index_.ranges_;
  auto& activities = index_.activities_;
  // Memory first touched costs more here than anything else the index does
  // (a page fault per 4 KiB): the per-event lists get room for every event up
  // front, which only reserves address space, instead of growing by copies.
  ranges.reserve(events.size());
  times_.reserve(events.size());
  activities.reserve(events.size());
  activity_correlation_.reserve(events.size());
  launches_.reserve(events.size());
  std::int64_t last_activity_start = INT64_MIN;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (is_launch_api(e.kind)) {
      const GraphRole role = role_of(e);
      if (role == GraphRole::BeginCapture || role == GraphRole::EndCapture)
        capture_marks_.push_back(static_cast<std::uint32_t>(i));
      else if (role == GraphRole::GraphLaunch)
        graph_launches_.push_back(static_cast<std::uint32_t>(i));
      if (e.correlation < 0) continue;
      LaneItems* lane = e.pid.is_string || e.tid.is_string ? nullptr : &lane_of(e);
      launches_.push_back({e.correlation, e.ts_ns, static_cast<std::int32_t>(i), lane});
      min_correlation_ = std::min(min_correlation_, e.correlation);
      max_correlation_ = std::max(max_correlation_, e.correlation);
    } else if (is_gpu_activity(e.kind)) {
      if (e.phase != 'X') continue;
      // The launch is filled in by link_launches, once every launch call is known.
      activities.push_back({i, kNone, kNone, classes_.classify(e)});
      activity_correlation_.push_back(e.correlation);
      activities_by_start_ &= e.ts_ns >= last_activity_start;
      last_activity_start = e.ts_ns;
    } else if (is_cpu_range(e) && !e.pid.is_string && !e.tid.is_string) {
      index_.has_cpu_ops_ |= e.kind == EventKind::CpuOp;
      LaneItems& lane = lane_of(e);
      const auto r = static_cast<std::int32_t>(ranges.size());
      ranges.push_back({static_cast<std::uint32_t>(i), kNone, e.name, e.kind});
      times_.push_back({e.ts_ns, e.end_ns()});
      if (!lane.ranges.empty() && range_before(r, lane.ranges.back())) lane.ranges_sorted = false;
      lane.ranges.push_back(r);
    }
  }
  if (const Precision half = classes_.half_precision(); half != Precision::Half16)
    for (GpuActivity& a : activities)
      if (a.cls.precision == Precision::Half16) a.cls.precision = half;
}

void TraceIndex::Builder::link_launches() {
  const auto& events = trace_.events;
  auto& activities = index_.activities_;
  // Launch calls by correlation id: a flat table when the ids are dense (as
  // CUPTI hands them out), else a sorted list searched by binary search. Of
  // two launches with one id (a malformed trace), the first in the file wins.
  const bool dense = !launches_.empty() && static_cast<std::uint64_t>(max_correlation_ - min_correlation_) <
                                               4 * static_cast<std::uint64_t>(events.size()) + 1024;
  std::vector<std::int32_t> launch_table;  // correlation - min -> index into launches_
  if (dense) {
    launch_table.assign(static_cast<std::size_t>(max_correlation_ - min_correlation_) + 1, kNone);
    for (std::size_t l = 0; l < launches_.size(); ++l) {
      std::int32_t& slot = launch_table[static_cast<std::size_t>(launches_[l].correlation - min_correlation_)];
      if (slot == kNone) slot = static_cast<std::int32_t>(l);
    }
  } else {
    std::stable_sort(launches_.begin(), launches_.end(),
                     [](const LaunchCall& a, const LaunchCall& b) { return a.correlation < b.correlation; });
  }
  const auto launch_of = [&](std::int64_t correlation) -> const LaunchCall* {
    if (correlation < min_correlation_ || correlation > max_correlation_) return nullptr;
    if (dense) {
      const std::int32_t l = launch_table[static_cast<std::size_t>(correlation - min_correlation_)];
      return l == kNone ? nullptr : &launches_[static_cast<std::size_t>(l)];
    }
    const auto it = std::lower_bound(launches_.begin(), launches_.end(), correlation,
                                     [](const LaunchCall& l, std::int64_t c) { return l.correlation < c; });
    return it != launches_.end() && it->correlation == correlation ? &*it : nullptr;
  };
  // Activities by GPU start; file order usually is. When it is not, each
  // activity's correlation is read back from its event after the sort.
  if (!activities_by_start_) {
    std::stable_sort(activities.begin(), activities.end(), [&](const GpuActivity& x, const GpuActivity& y) {
      return events[x.event].ts_ns < events[y.event].ts_ns;
    });
    for (std::size_t i = 0; i < activities.size(); ++i)
      activity_correlation_[i] = events[activities[i].event].correlation;
  }
  for (std::size_t i = 0; i < activities.size(); ++i) {
    const LaunchCall* l = launch_of(activity_correlation_[i]);
    if (l == nullptr) continue;
    activities[i].launch = l->event;
    if (l->lane != nullptr) l->lane->launches.push_back({l->ts, i});
  }
  std::vector<std::int64_t>().swap(activity_correlation_);
  std::vector<LaunchCall>().swap(launches_);
}

void TraceIndex::Builder::link_ranges() {
  // Launches by time; a range and a launch at the same time: the range
  // first. Both lists usually arrive in order already (file order, GPU start
  // order).
  const auto launch_before = [](const Launch& a, const Launch& b) { return a.ts < b.ts; };
  const auto by_range = [this](std::int32_t a, std::int32_t b) { return range_before(a, b); };
  struct Open {
    std::int64_t end;
    std::int32_t index;
  };
  std::vector<Orphan> orphans;
  std::vector<Open> stack;
  for (auto& [lane, items] : lanes_) {
    auto& rs = items.ranges;
    auto& ls = items.launches;
    if (!items.ranges_sorted) std::stable_sort(rs.begin(), rs.end(), by_range);
    if (!std::is_sorted(ls.begin(), ls.end(), launch_before)) std::stable_sort(ls.begin(), ls.end(), launch_before);
    stack.clear();
    std::size_t r = 0, l = 0;
    while (r < rs.size() || l < ls.size()) {
      const Times* range = r < rs.size() ? &times_[static_cast<std::size_t>(rs[r])] : nullptr;
      const bool take_range = l == ls.size() || (range != nullptr && range->ts <= ls[l].ts);
      const std::int64_t ts = take_range ? range->ts : ls[l].ts;
      while (!stack.empty() && stack.back().end < ts) stack.pop_back();
      const std::int32_t top = stack.empty() ? kNone : stack.back().index;
      if (take_range) {
        index_.ranges_[static_cast<std::size_t>(rs[r])].parent = top;
        stack.push_back({range->end, rs[r]});
        ++r;
      } else {
        index_.activities_[ls[l].activity].range = top;
        if (top == kNone && index_.has_cpu_ops_) orphans.push_back({ls[l].ts, lane.first, ls[l].activity});
        ++l;
      }
    }
    std::vector<Launch>().swap(ls);  // done with; the ranges stay for the orphans
  }
  adopt_orphans(orphans);
}

void TraceIndex::Builder::release() {
  for (auto& [lane, items] : lanes_) std::vector<std::int32_t>().swap(items.ranges);
}

namespace {

// FNV-1a, over the 64-bit words given.
struct Hash {
  std::uint64_t h = 1469598103934665603ULL;
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  }
};

}  // namespace

// CUDA graph replays to their captures. Kineto writes no graph id (torch 2.11): a capture is the
// window from a thread's cudaStreamBeginCapture to its cudaStreamEndCapture, its nodes the
// node-making calls of that thread inside it that ran nothing (no GPU work has their correlation id);
// a replay is a cudaGraphLaunch's GPU work, its nodes by GPU start. A replay is a capture's graph when
// it runs its nodes alike (the same kernels, grids, blocks, copy sizes) with the capture's own replay,
// the first graph launch on the capture's thread after it and before the thread captures again (the
// graph instantiated from it, run at once to give the captured call its outputs), and comes after the
// capture; where several captures qualify, only if their launches ran the same ops on the same
// recorded inputs. A replay of a graph captured before the trace began matches none, unless it runs
// alike with a capture's own replay: the same kernels, launched alike.
void TraceIndex::Builder::match_captures() {
  const auto& events = trace_.events;
  auto& activities = index_.activities_;
  if (graph_launches_.empty()) return;
  using Thread = std::pair<std::int64_t, std::int64_t>;  // (pid, tid)
  const auto lane_of_event = [](const Event& e) {
    return Thread{e.pid.is_string ? -1 : e.pid.value(), e.tid.is_string ? -1 : e.tid.value()};
  };
  const auto letter = [](GraphRole r) { return static_cast<char>('0' + static_cast<int>(r)); };

  // The replays: each graph launch's nodes, by GPU start, in launch order.
  std::vector<std::pair<std::int32_t, std::size_t>> nodes;  // (graph launch call, activity)
  for (std::size_t i = 0; i < activities.size(); ++i) {
    const std::int32_t l = activities[i].launch;
    if (l != kNone && role_of(events[static_cast<std::size_t>(l)]) == GraphRole::GraphLaunch) nodes.emplace_back(l, i);
  }
  std::stable_sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  struct Replay {
    std::int32_t launch;  // the cudaGraphLaunch call
    std::int64_t ts;
    Thread lane;
    std::size_t from, to;  // its nodes in `nodes`
    std::string kinds;     // a letter a node: its GraphRole
    std::uint64_t run;     // hash of how it ran its nodes (alike)
    // Its nodes on one stream: their GPU order is the capture's launch order (a graph forked over
    // streams may run concurrent nodes in another order: never matched).
    bool one_stream = true;
  };
  std::vector<Replay> replays;
  for (std::size_t from = 0; from < nodes.size();) {
    const Event& l = events[static_cast<std::size_t>(nodes[from].first)];
    Replay r{nodes[from].first, l.ts_ns, lane_of_event(l), from, from, {}, 0};
    Hash h;
    std::int64_t stream = -1;
    for (; r.to < nodes.size() && nodes[r.to].first == nodes[from].first; ++r.to) {
      const Event& x = events[activities[nodes[r.to].second].event];
      r.kinds.push_back(letter(node_role(x.kind)));
      h.add(x.name);
      h.add(static_cast<std::uint64_t>(x.kind));
      if (const GpuArgs* g = trace_.args(x)) {
        for (const std::int32_t v : g->grid) h.add(static_cast<std::uint64_t>(v));
        for (const std::int32_t v : g->block) h.add(static_cast<std::uint64_t>(v));
        h.add(static_cast<std::uint64_t>(g->bytes));
        if (r.to > from && g->stream != stream) r.one_stream = false;
        stream = g->stream;
      }
    }
    r.run = h.h;
    from = r.to;
    replays.push_back(std::move(r));
  }
  std::stable_sort(replays.begin(), replays.end(), [](const Replay& a, const Replay& b) { return a.ts < b.ts; });
  index_.graph_replays_.replays = static_cast<int>(replays.size());
  if (capture_marks_.empty() || replays.empty()) return;

  // The captures: a begin and the next end on its thread, by begin.
  struct Capture {
    Thread lane;
    std::int64_t begin, end;
    std::vector<std::pair<std::int64_t, GraphRole>> launches;  // (ts, role), then by time
    std::string kinds;
    std::vector<std::int32_t> ranges;  // the innermost range around each launch
    int ops = -1;                      // its class of captures that ran the same ops on the same inputs
    const Replay* own = nullptr;
  };
  std::vector<Capture> captures;
  {
    std::map<Thread, std::int64_t> open;  // lane -> begin
    std::vector<std::uint32_t> marks = capture_marks_;
    std::stable_sort(marks.begin(), marks.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return events[a].ts_ns < events[b].ts_ns; });
    for (const std::uint32_t m : marks) {
      const Event& e = events[m];
      if (e.pid.is_string || e.tid.is_string) continue;
      if (role_of(e) == GraphRole::BeginCapture) {
        open[lane_of_event(e)] = e.ts_ns;
      } else if (const auto it = open.find(lane_of_event(e)); it != open.end()) {
        captures.push_back({it->first, it->second, e.ts_ns, {}, {}, {}, -1, nullptr});
        open.erase(it);
      }
    }
  }
  index_.graph_replays_.captures = static_cast<int>(captures.size());
  if (captures.empty()) return;
  std::stable_sort(captures.begin(), captures.end(),
                   [](const Capture& a, const Capture& b) { return a.begin < b.begin; });
  std::map<Thread, std::vector<std::size_t>> by_lane;  // capture indices, by begin
  for (std::size_t c = 0; c < captures.size(); ++c) by_lane[captures[c].lane].push_back(c);

  // Each capture's launches: node-making calls of its thread inside it that ran nothing.
  std::unordered_set<std::int64_t> ran;  // correlation ids with GPU work
  for (const GpuActivity& a : activities) ran.insert(events[a.event].correlation);
  for (const Event& e : events) {
    if (!is_launch_api(e.kind) || e.pid.is_string || e.tid.is_string) continue;
    const GraphRole role = role_of(e);
    if (role != GraphRole::Kernel && role != GraphRole::Memcpy && role != GraphRole::Memset) continue;
    const auto lane = by_lane.find(lane_of_event(e));
    if (lane == by_lane.end()) continue;
    // The thread's last capture begun at or before it (a thread's captures do not overlap).
    const auto& cs = lane->second;
    const auto it = std::upper_bound(cs.begin(), cs.end(), e.ts_ns,
                                     [&](std::int64_t t, std::size_t c) { return t < captures[c].begin; });
    if (it == cs.begin()) continue;
    Capture& c = captures[*(it - 1)];
    if (e.ts_ns <= c.end && !ran.contains(e.correlation)) c.launches.emplace_back(e.ts_ns, role);
  }
  const auto inputs_of = [&](std::int32_t r) {
    return trace_.op_inputs_of(index_.ranges_[static_cast<std::size_t>(r)].event);
  };
  // The CPU ops around a launch, innermost first (annotations, such as ProfilerStep#N, and Python
  // frames left out: they name where a capture ran, not what). Two captures' launches ran the same
  // work when their ops agree, name and recorded inputs, as far up as both have ops (the context
  // around a capture, an op the first step has and the next not, says nothing of the work).
  const auto up_op = [&](std::int32_t r) {
    while (r != kNone && index_.ranges_[static_cast<std::size_t>(r)].kind != EventKind::CpuOp)
      r = index_.ranges_[static_cast<std::size_t>(r)].parent;
    return r;
  };
  const auto parent_op = [&](std::int32_t r) { return up_op(index_.ranges_[static_cast<std::size_t>(r)].parent); };
  const auto same_ops = [&](const Capture& a, const Capture& b) {
    if (a.kinds != b.kinds) return false;
    for (std::size_t k = 0; k < a.ranges.size(); ++k) {
      std::int32_t x = up_op(a.ranges[k]), y = up_op(b.ranges[k]);
      if ((x == kNone) != (y == kNone)) return false;  // one launch under an op, the other under none
      for (; x != kNone && y != kNone; x = parent_op(x), y = parent_op(y)) {
        if (index_.ranges_[static_cast<std::size_t>(x)].name != index_.ranges_[static_cast<std::size_t>(y)].name)
          return false;
        const OpInputs* p = inputs_of(x);
        const OpInputs* q = inputs_of(y);
        if ((p == nullptr) != (q == nullptr)) return false;
        if (p != nullptr && (p->dims != q->dims || p->list_dims != q->list_dims || p->strides != q->strides ||
                             p->types != q->types || p->concrete != q->concrete))
          return false;
      }
    }
    return true;
  };
  // Each capture's launches in time order with their ranges, and its class of same ops: captures are
  // compared in full only with those whose innermost ops hash alike.
  std::map<std::uint64_t, std::vector<std::size_t>> classes;  // innermost ops' hash -> class representatives
  for (std::size_t c = 0; c < captures.size(); ++c) {
    Capture& cap = captures[c];
    std::stable_sort(cap.launches.begin(), cap.launches.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    const auto lane = lanes_.find(cap.lane);
    Hash h;
    for (const auto& [ts, role] : cap.launches) {
      cap.kinds.push_back(letter(role));
      // A launch outside every range of its thread is adopted as a kernel's would be (adopt_orphans).
      std::int32_t r = lane == lanes_.end() ? kNone : open_at(lane->second.ranges, ts);
      if (r == kNone && index_.has_cpu_ops_) r = adopting_range(cap.lane.first, ts);
      cap.ranges.push_back(r);
      const std::int32_t op = up_op(r);
      h.add(static_cast<std::uint64_t>(role));
      h.add(op == kNone ? ~0ULL : index_.ranges_[static_cast<std::size_t>(op)].name);
    }
    std::vector<std::size_t>& reps = classes[h.h];
    for (const std::size_t rep : reps)
      if (same_ops(captures[rep], cap)) {
        cap.ops = captures[rep].ops;
        break;
      }
    if (cap.ops < 0) {
      cap.ops = static_cast<int>(c);
      reps.push_back(c);
    }
  }
  // Each capture's own replay: the first cudaGraphLaunch on its thread after it (with GPU work in
  // the trace or not: one whose work is missing leaves the capture without an own replay), before the
  // thread's next capture, with the capture's node kinds.
  std::map<Thread, std::vector<std::pair<std::int64_t, std::int32_t>>> launches_by_lane;  // (ts, call), by ts
  for (const std::uint32_t l : graph_launches_)
    if (!events[l].pid.is_string && !events[l].tid.is_string)
      launches_by_lane[lane_of_event(events[l])].emplace_back(events[l].ts_ns, static_cast<std::int32_t>(l));
  for (auto& [lane, ls] : launches_by_lane) std::stable_sort(ls.begin(), ls.end());
  std::unordered_map<std::int32_t, const Replay*> replay_of_launch;
  for (const Replay& r : replays) replay_of_launch.emplace(r.launch, &r);
  for (const auto& [lane, cs] : by_lane) {
    const auto ls = launches_by_lane.find(lane);
    if (ls == launches_by_lane.end()) continue;
    for (std::size_t k = 0; k < cs.size(); ++k) {
      Capture& cap = captures[cs[k]];
      const auto it = std::upper_bound(ls->second.begin(), ls->second.end(), cap.end,
                                       [](std::int64_t t, const auto& l) { return t < l.first; });
      if (it == ls->second.end() || (k + 1 < cs.size() && it->first >= captures[cs[k + 1]].begin)) continue;
      const auto r = replay_of_launch.find(it->second);
      if (r != replay_of_launch.end() && r->second->kinds == cap.kinds && r->second->one_stream) cap.own = r->second;
    }
  }
  const auto alike = [&](const Replay& a, const Replay& b) {
    if (a.run != b.run || a.to - a.from != b.to - b.from) return false;
    for (std::size_t k = 0; k < a.to - a.from; ++k) {
      const Event& x = events[activities[nodes[a.from + k].second].event];
      const Event& y = events[activities[nodes[b.from + k].second].event];
      if (x.name != y.name || x.kind != y.kind) return false;
      const GpuArgs* p = trace_.args(x);
      const GpuArgs* q = trace_.args(y);
      if ((p == nullptr) != (q == nullptr)) return false;
      if (p != nullptr && (p->grid != q->grid || p->block != q->block || p->bytes != q->bytes)) return false;
    }
    return true;
  };
  // The captures whose own replays ran alike, by the end of the capture, with whether the first k of
  // them ran the same ops: a replay's candidates are a prefix of one such group (those that ended
  // before it), told when the prefix is of one class, and then the latest of it is the one taken.
  struct Group {
    const Replay* run;                // a member's own replay
    std::vector<std::size_t> by_end;  // capture indices
    std::vector<char> one_class;      // one_class[k]: by_end[0..k] ran the same ops
  };
  std::unordered_map<std::uint64_t, std::vector<Group>> groups;  // by the own replays' run hash
  std::vector<std::size_t> order(captures.size());
  for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return captures[a].end < captures[b].end; });
  for (const std::size_t c : order) {
    const Capture& cap = captures[c];
    if (cap.own == nullptr) continue;
    std::vector<Group>& gs = groups[cap.own->run];
    auto g = std::find_if(gs.begin(), gs.end(), [&](const Group& x) { return alike(*x.run, *cap.own); });
    if (g == gs.end()) g = gs.insert(gs.end(), Group{cap.own, {}, {}});
    g->one_class.push_back(g->by_end.empty() || (g->one_class.back() && captures[g->by_end.front()].ops == cap.ops));
    g->by_end.push_back(c);
  }
  std::unordered_map<const Replay*, std::size_t> own_of;  // a capture's own replay is its graph, whatever else
  for (std::size_t c = 0; c < captures.size(); ++c)
    if (captures[c].own != nullptr) own_of.emplace(captures[c].own, c);
  for (const Replay& r : replays) {
    if (!r.one_stream) continue;
    const Capture* found = nullptr;
    if (const auto o = own_of.find(&r); o != own_of.end()) {
      found = &captures[o->second];
    } else {
      const auto gs = groups.find(r.run);
      if (gs == groups.end()) continue;
      const auto g =
          std::find_if(gs->second.begin(), gs->second.end(), [&](const Group& x) { return alike(*x.run, r); });
      if (g == gs->second.end()) continue;
      const auto k = static_cast<std::size_t>(
          std::lower_bound(g->by_end.begin(), g->by_end.end(), r.ts,
                           [&](std::size_t c, std::int64_t t) { return captures[c].end < t; }) -
          g->by_end.begin());
      if (k == 0 || !g->one_class[k - 1]) continue;  // none before it, or captures of other ops
      found = &captures[g->by_end[k - 1]];
    }
    if (index_.capture_ranges_.empty()) index_.capture_ranges_.assign(activities.size(), kNone);
    for (std::size_t n = r.from; n < r.to; ++n) index_.capture_ranges_[nodes[n].second] = found->ranges[n - r.from];
    ++index_.graph_replays_.matched;
  }
}

std::int32_t TraceIndex::Builder::open_at(const std::vector<std::int32_t>& rs, std::int64_t ts) const {
  auto it = std::upper_bound(rs.begin(), rs.end(), ts, [this](std::int64_t t, std::int32_t r) {
    return t < times_[static_cast<std::size_t>(r)].ts;
  });
  if (it == rs.begin()) return kNone;
  std::int32_t r = *(it - 1);
  while (r != kNone && times_[static_cast<std::size_t>(r)].end < ts)
    r = index_.ranges_[static_cast<std::size_t>(r)].parent;
  return r;
}

// A launch outside every range of its own thread, made while exactly one other thread of its process
// is inside an ATen op, belongs to that op's innermost range: the profiler filed the launch under
// another thread id than the op's (transformers' continuous batching, whose worker thread is new for
// each generate_batch, has a second call's launches filed under the first worker's id). Launches
// made while no thread, or several, are inside an op stay where they are.
void TraceIndex::Builder::adopt_orphans(const std::vector<Orphan>& orphans) {
  for (const Orphan& o : orphans)
    if (const std::int32_t r = adopting_range(o.pid, o.ts); r != kNone) index_.activities_[o.activity].range = r;
}

std::int32_t TraceIndex::Builder::adopting_range(std::int64_t pid, std::int64_t ts) const {
  const auto in_op = [this](std::int32_t r) {
    for (; r != kNone; r = index_.ranges_[static_cast<std::size_t>(r)].parent)
      if (index_.ranges_[static_cast<std::size_t>(r)].kind == EventKind::CpuOp) return true;
    return false;
  };
  std::int32_t found = kNone;
  int threads_in_ops = 0;
  for (const auto& [lane, items] : lanes_) {
    if (lane.first != pid || items.ranges.empty()) continue;
    const std::int32_t r = open_at(items.ranges, ts);
    if (r == kNone || !in_op(r)) continue;
    if (++threads_in_ops > 1) return kNone;
    found = r;
  }
  return found;
}

TraceIndex::TraceIndex(const Trace& trace) : trace_(&trace) {
  Builder steps(trace, *this);
  steps.collect();         // launches, classified GPU activity, CPU ranges per thread
  steps.link_launches();   // each activity to its launch call (correlation id)
  steps.link_ranges();     // each launch and range to the innermost range around it
  steps.match_captures();  // CUDA graph replays' nodes to their capture-time launches
  steps.release();
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

bool TraceIndex::graph_replayed(std::size_t i) const {
  const std::int32_t l = activities_[i].launch;
  return l != kNone && graph_role(trace_->name(trace_->events[static_cast<std::size_t>(l)])) == GraphRole::GraphLaunch;
}

std::int64_t TraceIndex::launch_time(const GpuActivity& a) const {
  if (a.launch != kNone) return trace_->events[static_cast<std::size_t>(a.launch)].ts_ns;
  return event(a).ts_ns;
}

}  // namespace attnprof
