// The annotated trace (see annotate.h), written through the project's JsonWriter.
#include "report/annotate.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/json.h"
#include "report/format.h"
#include "report/gpu_lanes.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

// The fastest, median and slowest instance of a group by GPU busy time (fewer when it has fewer).
std::vector<std::size_t> chosen_instances(const GroupStats& g) {
  const std::vector<std::size_t> order = instances_by_busy(g);
  std::set<std::size_t> picked;
  if (!order.empty()) picked = {order.front(), order[order.size() / 2], order.back()};
  return {picked.begin(), picked.end()};
}

class Writer {
 public:
  explicit Writer(std::string& out) : w_(out, JsonLayout::Lines) {}
  JsonWriter& json() { return w_; }

  void name_process(int pid, std::string_view name) { metadata("process_name", pid, 0, name); }
  void name_thread(int pid, int tid, std::string_view name) { metadata("thread_name", pid, tid, name); }
  // An "X" event; its args are written by `args` (may write nothing).
  template <typename Args>
  void span(int pid, int tid, std::string_view cat, std::string_view name, std::int64_t ts, std::int64_t dur,
            Args&& args) {
    w_.begin_object();
    w_.str("ph", "X");
    w_.str("cat", cat);
    w_.str("name", name);
    w_.num("pid", pid);
    w_.num("tid", tid);
    json_text::append_ns_as_us(w_.value("ts"), ts);
    json_text::append_ns_as_us(w_.value("dur"), dur);
    w_.begin_object("args");
    args(w_);
    w_.end_object();
    w_.end_object();
  }
  // A flow arrow from (pid_a, tid_a) at ts to (pid_b, tid_b) at ts.
  void flow(std::int64_t id, int pid_a, int tid_a, int pid_b, int tid_b, std::int64_t ts) {
    for (const auto& [ph, pid, tid] : {std::tuple{"s", pid_a, tid_a}, std::tuple{"f", pid_b, tid_b}}) {
      w_.begin_object();
      w_.str("ph", ph);
      w_.str("cat", "attnprof");
      w_.str("name", "finding");
      w_.num("id", id);
      w_.num("pid", pid);
      w_.num("tid", tid);
      json_text::append_ns_as_us(w_.value("ts"), ts);
      if (std::string_view(ph) == "f") w_.str("bp", "e");
      w_.end_object();
    }
  }

 private:
  void metadata(std::string_view what, int pid, int tid, std::string_view name) {
    w_.begin_object();
    w_.str("ph", "M");
    w_.str("name", what);
    w_.num("pid", pid);
    w_.num("tid", tid);
    w_.begin_object("args");
    w_.str("name", name);
    w_.end_object();
    w_.end_object();
  }
  JsonWriter w_;
};

}  // namespace

std::string annotated_trace(const Analysis& a, const TraceIndex& index) {
  const auto& acts = index.activities();
  // What is shown: the chosen instances of every group, with their activities.
  struct Shown {
    const GroupStats* group;
    const RegionInstance* instance;
  };
  std::vector<Shown> shown;
  std::vector<std::size_t> activities;
  for (const GroupStats& g : a.groups)
    for (const std::size_t i : chosen_instances(g)) {
      shown.push_back({&g, &g.group.instances[i]});
      activities.insert(activities.end(), g.group.instances[i].activities.begin(),
                        g.group.instances[i].activities.end());
    }
  std::sort(activities.begin(), activities.end());
  activities.erase(std::unique(activities.begin(), activities.end()), activities.end());

  const GpuLanes lanes = assign_lanes(index, activities);
  std::map<std::pair<std::int64_t, std::size_t>, int> tid_of;  // (stream, lane) -> tid
  for (const auto& [stream, count] : lanes.per_stream)
    for (std::size_t l = 0; l < count; ++l) tid_of[{stream, l}] = static_cast<int>(tid_of.size()) + 1;
  std::map<std::size_t, int> lane_tid;  // activity -> tid
  for (std::size_t k = 0; k < activities.size(); ++k)
    lane_tid[activities[k]] = tid_of[{lanes.places[k].stream, lanes.places[k].lane}];

  std::string out;
  Writer wr(out);
  JsonWriter& w = wr.json();
  w.begin_object();
  w.num("schemaVersion", 1);
  w.str("displayTimeUnit", "ms");
  w.str("traceName", "attnprof doctor --annotate: " + a.label);
  w.begin_array("traceEvents");
  wr.name_process(kAnnotateRegionsPid, "attnprof: analysed regions");
  wr.name_thread(kAnnotateRegionsPid, 1, "region instances (fastest, median, slowest)");
  wr.name_thread(kAnnotateRegionsPid, 2, "attention calls");
  wr.name_process(kAnnotateGpuPid, a.device.name.empty() ? "GPU" : "GPU: " + a.device.name);
  for (const auto& [key, tid] : tid_of)
    wr.name_thread(kAnnotateGpuPid, tid,
                   key.first < 0     ? fmt::format("lane {}", key.second + 1)
                   : key.second == 0 ? fmt::format("stream {}", key.first)
                                     : fmt::format("stream {} (overlap {})", key.first, key.second + 1));
  wr.name_process(kAnnotateFindingsPid, "attnprof: findings");
  for (std::size_t f = 0; f < a.findings.size(); ++f)
    wr.name_thread(kAnnotateFindingsPid, static_cast<int>(f) + 1,
                   fmt::format("{}{}{} ({})", a.findings[f].id, a.findings[f].pass ? " " : "",
                               a.findings[f].pass ? to_string(*a.findings[f].pass) : std::string_view(),
                               to_string(a.findings[f].scope)));

  // Region instances: their GPU span.
  for (const Shown& s : shown) {
    if (s.instance->activities.empty()) continue;
    std::int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (const std::size_t i : s.instance->activities) {
      const Event& e = index.event(acts[i]);
      t0 = std::min(t0, e.ts_ns);
      t1 = std::max(t1, e.end_ns());
    }
    wr.span(kAnnotateRegionsPid, 1, "attnprof", s.instance->name, t0, t1 - t0, [&](JsonWriter& j) {
      j.str("group", s.group->group.name);
      j.num("kernels", s.instance->activities.size());
    });
  }
  // Attention calls among the shown activities.
  std::set<std::int32_t> calls;
  for (const std::size_t i : activities)
    if (a.attention_calls.call_of[i] != kNone) calls.insert(a.attention_calls.call_of[i]);
  for (const std::int32_t c : calls) {
    const AttentionCall& call = a.attention_calls.calls[static_cast<std::size_t>(c)];
    std::int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (const std::size_t i : call.activities) {
      const Event& e = index.event(acts[i]);
      t0 = std::min(t0, e.ts_ns);
      t1 = std::max(t1, e.end_ns());
    }
    wr.span(kAnnotateRegionsPid, 2, "attnprof", fmt::format("{} {}", to_string(call.impl), to_string(call.pass)), t0,
            t1 - t0, [&](JsonWriter& j) {
              j.num("kernels", call.kernels);
              j.num("kernel_us", static_cast<double>(call.kernel_ns) / 1e3);
              if (!call.family.empty()) j.str("family", call.family);
              if (call.shape.any()) j.str("shape", report::shape_text(call.shape));
            });
  }
  // The GPU work.
  for (const std::size_t i : activities) {
    const GpuActivity& act = acts[i];
    const Event& e = index.event(act);
    const GpuArgs* g = index.trace().args(e);
    const std::string_view cat = e.kind == EventKind::GpuMemcpy   ? "gpu_memcpy"
                                 : e.kind == EventKind::GpuMemset ? "gpu_memset"
                                                                  : "kernel";
    wr.span(kAnnotateGpuPid, lane_tid[i], cat, index.name(act), e.ts_ns, e.dur_ns, [&](JsonWriter& j) {
      if (g != nullptr && g->stream >= 0) j.num("stream", g->stream);
      j.str("category", to_string(act.cls.category));
      if (act.cls.unit != MathUnit::None) j.str("unit", to_string(act.cls.unit));
      if (act.cls.precision != Precision::Unknown) j.str("precision", to_string(act.cls.precision));
      j.boolean("attention", a.attention_calls.in_attention(i));
    });
  }
  // Findings: a span over each of their kernels among the shown ones, and an arrow to it.
  std::int64_t flow_id = 1;
  for (std::size_t f = 0; f < a.findings.size(); ++f) {
    const Finding& finding = a.findings[f];
    const int tid = static_cast<int>(f) + 1;
    for (const std::size_t i : finding.activities) {
      const auto lane = lane_tid.find(i);
      if (lane == lane_tid.end()) continue;  // not in a shown instance
      const Event& e = index.event(acts[i]);
      wr.span(kAnnotateFindingsPid, tid, "attnprof", finding.id, e.ts_ns, e.dur_ns, [&](JsonWriter& j) {
        j.str("title", finding.title);
        j.str("severity", to_string(finding.severity));
        j.str("kernel", index.name(acts[i]));
        if (!finding.fix.empty()) j.str("fix", finding.fix);
      });
      wr.flow(flow_id++, kAnnotateFindingsPid, tid, kAnnotateGpuPid, lane->second, e.ts_ns);
    }
  }
  w.end_array();
  w.end_object();
  out += '\n';
  return out;
}

}  // namespace attnprof
