// Builds the launch and CPU-range links with one sweep per CPU thread.
#include "analysis/trace_index.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "analysis/trace_classifier.h"

namespace attnprof {
namespace {

bool is_cpu_range(const Event& e) {
  return e.phase == 'X' &&
         (e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation || e.kind == EventKind::PythonFunction);
}

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

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

void TraceIndex::Builder::match_captures() {
  const auto& events = trace_.events;
  auto& activities = index_.activities_;
  if (graph_launches_.empty()) return;
  // Each replay's nodes, by GPU start: (graph launch call, activity), grouped by launch.
  std::vector<std::pair<std::int32_t, std::size_t>> nodes;
  for (std::size_t i = 0; i < activities.size(); ++i) {
    const std::int32_t l = activities[i].launch;
    if (l != kNone && role_of(events[static_cast<std::size_t>(l)]) == GraphRole::GraphLaunch) nodes.emplace_back(l, i);
  }
  std::stable_sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t n = 0; n < nodes.size(); ++n)
    index_.graph_replays_.replays += n == 0 || nodes[n].first != nodes[n - 1].first ? 1 : 0;
  if (capture_marks_.empty() || nodes.empty()) return;

  // The capture windows, a begin and the next end on its thread, each with its launches: node-making
  // calls on that thread inside the window with no GPU work of their own (captured, not run).
  struct Capture {
    std::pair<std::int64_t, std::int64_t> lane;
    std::int64_t begin, end;
    std::string kinds;                 // a letter a node: its GraphRole
    std::vector<std::int32_t> ranges;  // the innermost range around each launch
    std::vector<std::int64_t> ts;
  };
  std::vector<Capture> captures;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> open;  // lane -> begin
  std::vector<std::uint32_t> marks = capture_marks_;
  std::stable_sort(marks.begin(), marks.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return events[a].ts_ns < events[b].ts_ns; });
  for (const std::uint32_t m : marks) {
    const Event& e = events[m];
    if (e.pid.is_string || e.tid.is_string) continue;
    const std::pair<std::int64_t, std::int64_t> lane{e.pid.value(), e.tid.value()};
    if (role_of(e) == GraphRole::BeginCapture) {
      open[lane] = e.ts_ns;
    } else if (const auto it = open.find(lane); it != open.end()) {
      captures.push_back({lane, it->second, e.ts_ns, {}, {}, {}});
      open.erase(it);
    }
  }
  index_.graph_replays_.captures = static_cast<int>(captures.size());
  if (captures.empty()) return;
  std::unordered_set<std::int64_t> ran;  // correlation ids with GPU work
  for (const GpuActivity& a : activities) ran.insert(events[a.event].correlation);
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (!is_launch_api(e.kind) || e.pid.is_string || e.tid.is_string) continue;
    const GraphRole role = role_of(e);
    if (role != GraphRole::Kernel && role != GraphRole::Memcpy && role != GraphRole::Memset) continue;
    for (Capture& c : captures)
      if (e.ts_ns >= c.begin && e.ts_ns <= c.end && c.lane == std::pair{e.pid.value(), e.tid.value()} &&
          !ran.contains(e.correlation)) {
        c.kinds.push_back(static_cast<char>('0' + static_cast<int>(role)));
        c.ts.push_back(e.ts_ns);
      }
  }
  for (Capture& c : captures) {
    // Launches in time order (file order may not be), then each one's innermost range.
    std::vector<std::size_t> order(c.ts.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return c.ts[a] < c.ts[b]; });
    std::string kinds(c.kinds.size(), ' ');
    const auto lane = lanes_.find(c.lane);
    for (std::size_t k = 0; k < order.size(); ++k) {
      kinds[k] = c.kinds[order[k]];
      // A launch outside every range of its thread is adopted as a kernel's would be (adopt_orphans).
      std::int32_t r = lane == lanes_.end() ? kNone : open_at(lane->second.ranges, c.ts[order[k]]);
      if (r == kNone && index_.has_cpu_ops_) r = adopting_range(c.lane.first, c.ts[order[k]]);
      c.ranges.push_back(r);
    }
    c.kinds = std::move(kinds);
  }
  // Two captures of one node sequence tell a replay apart only when their launches ran under the
  // same ops (names) with the same recorded inputs; else the replay stays unmatched.
  const auto inputs_of = [&](std::int32_t r) -> const OpInputs* {
    const std::uint32_t e = index_.ranges_[static_cast<std::size_t>(r)].event;
    const auto& all = trace_.op_inputs;
    const auto it =
        std::lower_bound(all.begin(), all.end(), e, [](const OpInputs& in, std::uint32_t v) { return in.event < v; });
    return it != all.end() && it->event == e ? &*it : nullptr;
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
  const auto same_ops = [&](const Capture& a, const Capture& b) {
    for (std::size_t k = 0; k < a.ranges.size(); ++k) {
      std::int32_t x = up_op(a.ranges[k]), y = up_op(b.ranges[k]);
      if ((x == kNone) != (y == kNone)) return false;  // one launch under an op, the other under none
      for (; x != kNone && y != kNone; x = up_op(index_.ranges_[static_cast<std::size_t>(x)].parent),
                                       y = up_op(index_.ranges_[static_cast<std::size_t>(y)].parent)) {
        if (index_.ranges_[static_cast<std::size_t>(x)].name != index_.ranges_[static_cast<std::size_t>(y)].name)
          return false;
        const OpInputs* p = inputs_of(x);
        const OpInputs* q = inputs_of(y);
        if ((p == nullptr) != (q == nullptr) || (p != nullptr && p->dims != q->dims)) return false;
      }
    }
    return true;
  };
  // The replays in launch order, each its nodes' kinds.
  struct Replay {
    std::int64_t ts;
    std::pair<std::int64_t, std::int64_t> lane;
    std::size_t from, to;  // its nodes in `nodes`
    std::string kinds;
  };
  std::vector<Replay> replays;
  for (std::size_t from = 0; from < nodes.size();) {
    const Event& l = events[static_cast<std::size_t>(nodes[from].first)];
    Replay r{l.ts_ns, {l.pid.is_string ? -1 : l.pid.value(), l.tid.is_string ? -1 : l.tid.value()}, from, from, {}};
    for (; r.to < nodes.size() && nodes[r.to].first == nodes[from].first; ++r.to)
      r.kinds.push_back(
          static_cast<char>('0' + static_cast<int>(node_role(events[activities[nodes[r.to].second].event].kind))));
    from = r.to;
    replays.push_back(std::move(r));
  }
  std::stable_sort(replays.begin(), replays.end(), [](const Replay& a, const Replay& b) { return a.ts < b.ts; });
  // Two replays ran one graph's work alike when node for node the kernels and their launch
  // configurations (grid, block; a copy's bytes) agree.
  const auto alike = [&](const Replay& a, const Replay& b) {
    if (a.to - a.from != b.to - b.from) return false;
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
  // A capture's own replay: the first graph launch on its thread after it, before the thread captures
  // again, with its node kinds (the graph instantiated from it, run at once to give the captured call
  // its outputs). A capture replayed only later, or not in the trace, has none.
  std::vector<const Replay*> own(captures.size(), nullptr);
  for (std::size_t c = 0; c < captures.size(); ++c) {
    std::int64_t next = INT64_MAX;  // the thread's next capture
    for (const Capture& d : captures)
      if (d.lane == captures[c].lane && d.begin > captures[c].end) next = std::min(next, d.begin);
    for (const Replay& r : replays)
      if (r.ts > captures[c].end && r.lane == captures[c].lane) {
        if (r.ts < next && r.kinds == captures[c].kinds) own[c] = &r;
        break;
      }
  }
  // A replay is a capture's graph when it ran alike with the capture's own replay, after the capture;
  // when several captures qualify, only if they ran the same ops on the same inputs. A replay of a
  // graph captured before the trace began matches none (unless it runs alike with one of the trace's:
  // the same kernels, launched alike, from the same ops).
  for (const Replay& r : replays) {
    const Capture* found = nullptr;
    bool told = true;
    for (std::size_t c = 0; c < captures.size(); ++c) {
      if (own[c] == nullptr || captures[c].end >= r.ts || !(own[c] == &r || alike(*own[c], r))) continue;
      if (found != nullptr && !same_ops(*found, captures[c])) told = false;
      found = &captures[c];
    }
    if (found == nullptr || !told) continue;
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

std::int64_t TraceIndex::launch_time(const GpuActivity& a) const {
  if (a.launch != kNone) return trace_->events[static_cast<std::size_t>(a.launch)].ts_ns;
  return event(a).ts_ns;
}

}  // namespace attnprof
