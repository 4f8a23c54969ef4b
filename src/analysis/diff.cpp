// Aligns two analyses: region groups by name, attention by pass, findings by id,
// kernels by category; every number per step.
#include "analysis/diff.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace attnprof {
namespace {

double ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }

// The step: the group the doctor's step figures are about (Analysis::step_group), else the region group
// with the most instances (profiler steps, fwd0..fwdN); the whole trace without groups.
TraceSide side_of(const Analysis& a) {
  TraceSide s;
  s.label = a.label;
  s.unsupported = a.unsupported;
  s.steps = 1;
  s.step = "whole trace";
  const GroupStats* main = a.step_group >= 0 ? &a.groups[static_cast<std::size_t>(a.step_group)] : nullptr;
  if (main == nullptr)
    for (const GroupStats& g : a.groups)
      if (main == nullptr || g.instances.size() > main->instances.size()) main = &g;
  if (main != nullptr && !main->instances.empty()) {
    s.steps = static_cast<int>(main->instances.size());
    s.step = main->group.name;
  }
  std::int64_t busy = 0, attention = 0;
  for (const GroupStats& g : a.groups) {
    busy += g.busy_ns;
    attention += g.attention_ns;
  }
  s.busy_ms_per_step = ms(busy) / s.steps;
  if (a.step_group >= 0) {
    const GroupStats& g = a.groups[static_cast<std::size_t>(a.step_group)];
    if (const StepTime* st = g.steps.median_step(); st != nullptr && g.steps.has_launches && st->span_ns > 0) {
      s.step_span_ms = ms(st->span_ns);
      s.step_busy_ms = ms(st->busy_ns);
      s.step_bound = std::string(to_string(st->bound));
    }
  }
  s.attention_ms_per_step = ms(attention) / s.steps;
  int calls = 0;
  std::int64_t call_ns = 0;
  for (const AttentionSummary& x : a.attention) {
    calls += x.calls;
    call_ns += x.kernel_ns;
  }
  s.attention_ms_per_call = calls > 0 ? ms(call_ns) / calls : 0.0;
  s.gpu_kernels = a.gpu_kernels;
  return s;
}

std::string implementation_name(const AttentionSummary& s) {
  std::string name(to_string(s.impl));
  if (s.impl == AttentionImpl::Fused && !s.kernel.empty()) name += " (" + s.kernel + ")";
  return name;
}

AttentionSide attention_side(const Analysis& a, AttentionPass pass, int steps) {
  AttentionSide side;
  int calls = 0, kernels = 0;
  std::int64_t ns = 0;
  std::vector<std::pair<std::int64_t, std::string>> names;  // by time, the larger first
  for (const AttentionSummary& s : a.attention) {
    if (s.pass != pass || s.calls == 0) continue;
    side.present = true;
    calls += s.calls;
    kernels += s.kernels;
    ns += s.kernel_ns;
    const std::string name = implementation_name(s);  // one name for its phases (prefill and decode)
    const auto same = std::find_if(names.begin(), names.end(), [&](const auto& x) { return x.second == name; });
    if (same != names.end())
      same->first += s.kernel_ns;
    else
      names.emplace_back(s.kernel_ns, name);
  }
  if (!side.present) return side;
  std::stable_sort(names.begin(), names.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (const auto& [t, n] : names) side.implementation += (side.implementation.empty() ? "" : " + ") + n;
  side.calls_per_step = static_cast<double>(calls) / steps;
  side.kernels_per_call = static_cast<double>(kernels) / calls;
  side.ms_per_call = ms(ns) / calls;
  side.ms_per_step = ms(ns) / steps;
  return side;
}

struct FindingTotal {
  Scope scope = Scope::Model;
  std::int64_t ns = 0;
  std::string title;
};

// By id and scope (fp32-upcast can be attention's and the model's at once), over every group.
using FindingKey = std::pair<std::string, Scope>;
std::map<FindingKey, FindingTotal> findings_by_id(const Analysis& a) {
  std::map<FindingKey, FindingTotal> out;
  for (const Finding& f : a.findings) {
    FindingTotal& t = out[{f.id, f.scope}];
    if (t.title.empty()) {
      t.scope = f.scope;
      t.title = f.title;
    }
    t.ns += f.time_ns;
  }
  return out;
}

struct CategoryTotal {
  std::int64_t kernels = 0;
  std::int64_t ns = 0;
};

std::map<KernelCategory, CategoryTotal> categories_of(const Analysis& a) {
  std::map<KernelCategory, CategoryTotal> out;
  for (const KernelSummary& k : a.kernels) {
    CategoryTotal& t = out[k.cls.category];
    t.kernels += k.count;
    t.ns += k.total_ns;
  }
  return out;
}

}  // namespace

std::string_view to_string(FindingStatus s) {
  switch (s) {
    case FindingStatus::Fixed:
      return "fixed";
    case FindingStatus::New:
      return "new";
    case FindingStatus::Remaining:
      return "remaining";
  }
  return "remaining";
}

TraceDiff diff_analyses(const Analysis& before, const Analysis& after) {
  TraceDiff d;
  d.before = side_of(before);
  d.after = side_of(after);
  d.steps_comparable = d.before.step == d.after.step;
  const double nb = d.before.steps, na = d.after.steps;

  // Region groups by name, in the before trace's order, then the after trace's new ones.
  const auto stats = [](const GroupStats& g, int& instances, double& kernels, double& busy) {
    instances = static_cast<int>(g.instances.size());
    kernels = g.kernels_per_instance;
    busy = instances > 0 ? ms(g.busy_ns) / instances : 0.0;
  };
  for (const GroupStats& g : before.groups) {
    RegionChange r;
    r.name = g.group.name;
    stats(g, r.before_instances, r.before_kernels, r.before_busy_ms);
    d.regions.push_back(r);
  }
  for (const GroupStats& g : after.groups) {
    auto it =
        std::find_if(d.regions.begin(), d.regions.end(), [&](const RegionChange& r) { return r.name == g.group.name; });
    if (it == d.regions.end()) {
      d.regions.emplace_back();
      it = std::prev(d.regions.end());
      it->name = g.group.name;
    }
    stats(g, it->after_instances, it->after_kernels, it->after_busy_ms);
  }

  for (const AttentionPass pass : {AttentionPass::Forward, AttentionPass::Backward}) {
    AttentionChange c;
    c.pass = pass;
    c.before = attention_side(before, pass, d.before.steps);
    c.after = attention_side(after, pass, d.after.steps);
    if (c.before.present || c.after.present) d.attention.push_back(c);
  }

  const auto fb = findings_by_id(before), fa = findings_by_id(after);
  for (const auto& [key, t] : fb) {
    FindingChange f;
    f.id = key.first;
    f.scope = t.scope;
    f.before_ms = ms(t.ns) / nb;
    f.title = t.title;
    if (const auto it = fa.find(key); it != fa.end()) {
      f.status = FindingStatus::Remaining;
      f.after_ms = ms(it->second.ns) / na;
      f.title = it->second.title;
    } else {
      f.status = FindingStatus::Fixed;
    }
    d.findings.push_back(f);
  }
  for (const auto& [key, t] : fa) {
    if (fb.count(key)) continue;
    FindingChange f;
    f.id = key.first;
    f.scope = t.scope;
    f.status = FindingStatus::New;
    f.after_ms = ms(t.ns) / na;
    f.title = t.title;
    d.findings.push_back(f);
  }
  std::stable_sort(d.findings.begin(), d.findings.end(), [](const FindingChange& x, const FindingChange& y) {
    if (x.status != y.status) return x.status < y.status;
    return std::max(x.before_ms, x.after_ms) > std::max(y.before_ms, y.after_ms);
  });

  const auto cb = categories_of(before), ca = categories_of(after);
  std::map<KernelCategory, CategoryChange> cats;
  for (const auto& [cat, t] : cb) {
    CategoryChange& c = cats[cat];
    c.category = cat;
    c.before_kernels = static_cast<double>(t.kernels) / nb;
    c.before_ms = ms(t.ns) / nb;
  }
  for (const auto& [cat, t] : ca) {
    CategoryChange& c = cats[cat];
    c.category = cat;
    c.after_kernels = static_cast<double>(t.kernels) / na;
    c.after_ms = ms(t.ns) / na;
  }
  for (const auto& [cat, c] : cats) d.categories.push_back(c);
  std::stable_sort(d.categories.begin(), d.categories.end(), [](const CategoryChange& x, const CategoryChange& y) {
    return std::max(x.before_ms, x.after_ms) > std::max(y.before_ms, y.after_ms);
  });
  return d;
}

std::string_view to_string(GateMetric m) {
  switch (m) {
    case GateMetric::Auto:
      return "auto";
    case GateMetric::StepTime:
      return "step";
    case GateMetric::AttentionTime:
      return "attention";
  }
  return "auto";
}

GateMetric resolve_gate_metric(const TraceDiff& d, GateMetric m) {
  if (m != GateMetric::Auto) return m;
  const bool steps = d.steps_comparable && d.before.step_span_ms > 0 && d.after.step_span_ms > 0;
  return steps ? GateMetric::StepTime : GateMetric::AttentionTime;
}

GateVerdict regression_gate(const TraceDiff& d, double max_growth_pct, GateMetric metric) {
  GateVerdict v;
  v.metric = resolve_gate_metric(d, metric);
  for (const TraceSide* s : {&d.before, &d.after}) {
    if (!s->unsupported.empty()) {
      v.regression = true;
      v.reasons.push_back(fmt::format("cannot compare: {} was not diagnosed ({})", s->label, s->unsupported));
    } else if (s->gpu_kernels == 0) {
      v.regression = true;
      v.reasons.push_back(fmt::format("cannot compare: {} has no GPU kernels", s->label));
    }
  }
  if (v.regression) return v;
  if (v.metric == GateMetric::StepTime) {
    const double b = d.before.step_span_ms, a = d.after.step_span_ms;
    if (b <= 0 || a <= 0) {
      v.regression = true;
      v.reasons.push_back("cannot gate on step time: a trace has no CPU side (launch calls) to time its steps by");
    } else if (a > b * (1.0 + max_growth_pct / 100.0)) {
      v.regression = true;
      v.reasons.push_back(
          fmt::format("the median step grew {:.1f}% ({:.3f} -> {:.3f} ms, {}-bound -> {}-bound), "
                      "more than {:g}%",
                      100.0 * (a - b) / b, b, a, d.before.step_bound, d.after.step_bound, max_growth_pct));
    }
  }
  const char* per = d.steps_comparable ? "step" : "call";
  const double b = d.steps_comparable ? d.before.attention_ms_per_step : d.before.attention_ms_per_call;
  const double a = d.steps_comparable ? d.after.attention_ms_per_step : d.after.attention_ms_per_call;
  if (v.metric == GateMetric::AttentionTime && a > b * (1.0 + max_growth_pct / 100.0) && a > 0) {
    v.regression = true;
    if (b > 0)
      v.reasons.push_back(fmt::format("attention time per {} grew {:.1f}% ({:.3f} -> {:.3f} ms), more than {:g}%{}",
                                      per, 100.0 * (a - b) / b, b, a, max_growth_pct,
                                      d.steps_comparable ? "" : " (the traces' steps differ: compared per call)"));
    else
      v.reasons.push_back(fmt::format("attention appeared: {:.3f} ms per {} where there was none", a, per));
  }
  for (const FindingChange& f : d.findings)
    if (f.status == FindingStatus::New && f.scope == Scope::Attention) {
      v.regression = true;
      v.reasons.push_back(fmt::format("new attention finding {}: {}", f.id, f.title));
    }
  return v;
}

}  // namespace attnprof
