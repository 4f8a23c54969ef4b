// What-if replay of a trace's timeline (step_simulation.h).
#include "analysis/step_simulation.h"

#include <algorithm>
#include <limits>
#include <span>
#include <unordered_map>

namespace attnprof {
namespace {

// A kernel that starts this much later than its launch, its stream and the
// launch latency allow waited on something else (an event of another stream).
constexpr std::int64_t kWaitSlackNs = 2'000;
// An activity that ends this soon after a synchronization returned was still
// waited for (the trace's clocks of the CPU and the GPU differ by a little).
constexpr std::int64_t kSyncSlackNs = 2'000;
// A launch call at least this long that returned within kHeldReturnNs of the
// end of a kernel was held: the GPU's queue was full, and the call returned
// when the GPU finished a kernel and made room (a GPU-bound program whose CPU
// runs ahead). It is replayed as a wait for that kernel.
constexpr std::int64_t kHeldLaunchNs = 20'000;
constexpr std::int64_t kHeldReturnNs = 15'000;

std::int64_t stream_of(const Trace& t, const Event& e) {
  const GpuArgs* g = t.args(e);
  return g != nullptr ? g->stream : -1;
}

// The shift (replayed minus recorded time) of the CPU from each point of the recorded timeline on.
class ShiftLine {
 public:
  void set(std::int64_t at, std::int64_t shift) {
    if (!points_.empty() && at < points_.back().first) at = points_.back().first;
    points_.push_back({at, shift});
  }
  std::int64_t at(std::int64_t t) const {
    auto it =
        std::upper_bound(points_.begin(), points_.end(), t,
                         [](std::int64_t v, const std::pair<std::int64_t, std::int64_t>& p) { return v < p.first; });
    return it == points_.begin() ? 0 : std::prev(it)->second;
  }

 private:
  std::vector<std::pair<std::int64_t, std::int64_t>> points_;
};

}  // namespace

std::int64_t median_of(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

StepReplay::StepReplay(const TraceIndex& index, const HostCalls& host, const RegionGroup& group,
                       std::int64_t launch_latency_ns)
    : index_(index), host_(host), group_(group), latency_(launch_latency_ns), launched_(host) {
  const Trace& t = index.trace();
  const auto& acts = index.activities();
  const std::size_t n = acts.size();
  stream_.resize(n);
  for (std::size_t a = 0; a < n; ++a) stream_[a] = stream_of(t, index.event(acts[a]));

  instance_of_.assign(n, kNone);
  for (std::size_t i = 0; i < group.instances.size(); ++i)
    for (std::size_t a : group.instances[i].activities) instance_of_[a] = static_cast<std::int32_t>(i);

  // What each activity waited on beyond its launch and its stream: the activity of
  // another stream that ended last before it started, when that explains the delay.
  std::vector<std::size_t> by_end(n);
  for (std::size_t a = 0; a < n; ++a) by_end[a] = a;
  std::sort(by_end.begin(), by_end.end(), [&](std::size_t x, std::size_t y) {
    return index.event(acts[x]).end_ns() < index.event(acts[y]).end_ns();
  });
  waited_on_.assign(n, kNone);
  latency_of_.assign(n, latency_);
  std::unordered_map<std::int64_t, std::int64_t> stream_end;
  for (std::size_t a = 0; a < n; ++a) {
    const Event& e = index.event(acts[a]);
    const std::int64_t prev_end = stream_end.contains(stream_[a]) ? stream_end[stream_[a]] : INT64_MIN;
    stream_end[stream_[a]] = std::max(prev_end, e.end_ns());
    const std::int32_t c = host.call_of[a];
    if (c == kNone) continue;
    const std::int64_t launch = host.calls[static_cast<std::size_t>(c)].ts;
    // Started on its own (its stream free well before): its own delay from the launch, up to a few times the typical.
    if (prev_end < e.ts_ns - kWaitSlackNs)
      latency_of_[a] = std::clamp<std::int64_t>(e.ts_ns - launch, 0, 4 * latency_ + kWaitSlackNs);
    const std::int64_t ready = std::max(prev_end, launch + latency_of_[a]);
    if (e.ts_ns <= ready + kWaitSlackNs) continue;
    auto it = std::upper_bound(by_end.begin(), by_end.end(), e.ts_ns + kSyncSlackNs,
                               [&](std::int64_t v, std::size_t x) { return v < index.event(acts[x]).end_ns(); });
    for (int k = 0; k < 64 && it != by_end.begin(); ++k) {
      --it;
      const std::int64_t end = index.event(acts[*it]).end_ns();
      if (end < ready) break;
      if (stream_[*it] != stream_[a]) {
        waited_on_[a] = static_cast<std::int32_t>(*it);
        break;
      }
    }
  }
}

std::vector<ReplayedStep> StepReplay::run(const Change& change) const {
  const auto& acts = index_.activities();
  const std::size_t n = acts.size();
  std::vector<double> factor(n, 1.0);
  for (const auto& [a, f] : change.scaled) factor[a] = f;
  std::vector<char> removed(n, 0);
  std::vector<const Replacement*> reps;
  for (const Replacement& r : change.replacements) {
    reps.push_back(&r);
    for (std::size_t a : r.removed) removed[a] = 1;
  }
  std::sort(reps.begin(), reps.end(), [](const Replacement* x, const Replacement* y) { return x->from < y->from; });

  constexpr std::int64_t kUnset = std::numeric_limits<std::int64_t>::min();
  std::vector<std::int64_t> sim_start(n, kUnset), sim_end(n, kUnset);
  struct Added {
    std::int64_t start, end;
    std::int32_t instance;
  };
  std::vector<Added> added;
  std::unordered_map<std::int64_t, std::int64_t> stream_free;
  // Per stream, the activities launched so far in launch order (their recorded ends rise).
  std::unordered_map<std::int64_t, std::vector<std::size_t>> launched;
  ShiftLine line;
  std::int64_t shift = 0;
  std::size_t r = 0;
  const auto activities_of = [&](std::size_t c) { return launched_(c); };
  const auto start_on = [&](std::int64_t stream, std::int64_t ready) {
    const auto it = stream_free.find(stream);
    return it == stream_free.end() ? ready : std::max(ready, it->second);
  };

  for (std::size_t c = 0; c < host_.calls.size(); ++c) {
    const HostCall& call = host_.calls[c];
    // Replacements that begin before this call: the fused call's CPU time, its kernel.
    for (; r < reps.size() && reps[r]->from <= call.ts; ++r) {
      const Replacement& rep = *reps[r];
      const std::int64_t from = rep.from + shift;
      // No GPU work in its place (work the fix makes unneeded): what waited for it waits for nothing.
      const std::int64_t start =
          rep.gpu_ns > 0 ? start_on(rep.stream, from + rep.cpu_ns / 2 + latency_) : from + rep.cpu_ns;
      const std::int64_t end = start + rep.gpu_ns;
      if (rep.gpu_ns > 0) stream_free[rep.stream] = end;
      const std::int32_t inst = rep.removed.empty() ? kNone : instance_of_[rep.removed.front()];
      added.push_back({start, end, inst});
      // What waits for the removed work (a synchronization, a held launch) waits for the fused kernel instead.
      for (std::size_t a : rep.removed) {
        sim_start[a] = start;
        sim_end[a] = end;
        launched[stream_[a]].push_back(a);
      }
      shift += rep.cpu_ns - (rep.to - rep.from);
      line.set(rep.to, shift);
    }
    const auto mine = activities_of(c);
    const bool inside = r > 0 && call.ts < reps[r - 1]->to;
    if (inside && std::all_of(mine.begin(), mine.end(), [&](std::size_t a) { return removed[a] != 0; })) continue;
    const std::int64_t ts = call.ts + shift;
    for (std::size_t a : mine) {
      if (removed[a]) continue;
      const Event& e = index_.event(acts[a]);
      const std::int64_t lat = std::clamp<std::int64_t>(e.ts_ns - call.ts, 0, latency_of_[a]);
      std::int64_t start = start_on(stream_[a], ts + lat);
      if (const std::int32_t w = waited_on_[a]; w != kNone && sim_end[static_cast<std::size_t>(w)] != kUnset)
        start = std::max(start, sim_end[static_cast<std::size_t>(w)]);
      sim_start[a] = start;
      sim_end[a] = start + static_cast<std::int64_t>(static_cast<double>(e.dur_ns) * factor[a]);
      stream_free[stream_[a]] = sim_end[a];
      launched[stream_[a]].push_back(a);
    }
    const bool held = call.kind == HostCallKind::Launch && call.end - call.ts >= kHeldLaunchNs;
    if (call.kind != HostCallKind::Sync && !held) continue;
    // A synchronization returns when the GPU work it waited for is done: the
    // activities that ended (recorded) before it returned, replayed. So does a
    // held launch, once the GPU made room.
    std::int64_t real_done = kUnset, sim_done = kUnset;
    for (auto& [stream, list] : launched) {
      auto it = std::upper_bound(list.begin(), list.end(), call.end + kSyncSlackNs,
                                 [&](std::int64_t v, std::size_t a) { return v < index_.event(acts[a]).end_ns(); });
      if (it == list.begin()) continue;
      const std::size_t a = *std::prev(it);
      real_done = std::max(real_done, index_.event(acts[a]).end_ns());
      sim_done = std::max(sim_done, sim_end[a]);
    }
    if (real_done == kUnset || (held && (real_done < call.ts || call.end - real_done > kHeldReturnNs))) continue;
    // Its own cost: the part of the call after the GPU was done (or all of it, when it already was).
    const std::int64_t own = std::clamp<std::int64_t>(call.end - std::max(call.ts, real_done), 0, call.end - call.ts);
    const std::int64_t end = std::max(ts, sim_done) + own;
    shift = end - call.end;
    line.set(call.end, shift);
  }
  for (; r < reps.size(); ++r) {  // replacements after the last call (none in a real trace)
    shift += reps[r]->cpu_ns - (reps[r]->to - reps[r]->from);
    line.set(reps[r]->to, shift);
  }

  // The instances' windows on the replayed timeline, as step_windows draws them on the recorded one.
  std::vector<Interval> busy;
  for (std::size_t a = 0; a < n; ++a)
    if (!removed[a] && sim_start[a] != kUnset && sim_end[a] > sim_start[a]) busy.push_back({sim_start[a], sim_end[a]});
  std::vector<std::int64_t> added_end(group_.instances.size(), kUnset);
  for (const Added& x : added) {
    if (x.end > x.start) busy.push_back({x.start, x.end});
    if (x.instance != kNone)
      added_end[static_cast<std::size_t>(x.instance)] =
          std::max(added_end[static_cast<std::size_t>(x.instance)], x.end);
  }
  merge_intervals(busy);
  std::vector<ReplayedStep> out;
  std::int64_t prev_end = kUnset;
  for (std::size_t i = 0; i < group_.instances.size(); ++i) {
    const RegionInstance& inst = group_.instances[i];
    std::int64_t start = inst.start_ns + line.at(inst.start_ns);
    std::int64_t end = inst.end_ns + line.at(inst.end_ns);
    bool any = false;
    for (std::size_t a : inst.activities) {
      if (removed[a] || sim_start[a] == kUnset) continue;
      if (!any && inst.end_ns <= inst.start_ns) start = sim_start[a];
      any = true;
      end = std::max(end, sim_end[a]);
    }
    end = std::max(end, added_end[i]);
    start = std::max(start, prev_end);
    end = std::max(end, start);
    out.push_back({end - start, covered(busy, start, end)});
    prev_end = end;
  }
  return out;
}

}  // namespace attnprof
