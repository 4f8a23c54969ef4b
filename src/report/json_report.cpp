// The --json report. Field names are part of the interface: keep them stable. One unit: every time
// is in ms, per instance of its region (a step) unless its name says total (`total_ms`).
#include <algorithm>
#include <iterator>
#include <vector>

#include <fmt/format.h>

#include "common/json.h"
#include "report/replay_report.h"
#include "report/report.h"
#include "report/summary_text.h"

namespace attnprof {
namespace {

double ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }
// Per instance of a region group of n instances.
double ms_per(std::int64_t ns, std::size_t n) { return ms(ns) / static_cast<double>(std::max<std::size_t>(1, n)); }
constexpr int kMsDecimals = 4;  // 0.1 us

// Share of GEMM and attention time on tensor cores; null where there was none.
void share(JsonWriter& j, double tensor_core_share) {
  if (tensor_core_share < 0)
    j.null("tensor_core_share");
  else
    j.real("tensor_core_share", tensor_core_share);
}

std::string_view or_null_text(Precision p) { return p == Precision::Unknown ? std::string_view() : to_string(p); }

// One implementation and pass: totals over the analysed regions, and with `instances` (a region
// group's entry) the same per instance.
void attention_entry(JsonWriter& j, const AttentionSummary& s, std::size_t instances = 0) {
  j.begin_object();
  j.str("implementation", to_string(s.impl));
  j.str("pass", to_string(s.pass));
  j.str_or_null("phase", to_string(s.phase));
  j.num("calls", s.calls);
  j.real("kernels_per_call", s.calls > 0 ? static_cast<double>(s.kernels) / s.calls : 0.0, 2);
  j.real("total_ms", ms(s.kernel_ns), kMsDecimals);
  if (s.fused_ns < 0)
    j.null("fused_estimate_total_ms");
  else
    j.real("fused_estimate_total_ms", ms(s.fused_ns), kMsDecimals);
  if (instances > 0) {
    j.real("calls_per_instance", static_cast<double>(s.calls) / static_cast<double>(instances), 3);
    j.real("time_ms", ms_per(s.kernel_ns, instances), kMsDecimals);
    if (s.fused_ns < 0)
      j.null("fused_estimate_ms");
    else
      j.real("fused_estimate_ms", ms_per(s.fused_ns, instances), kMsDecimals);
  }
  j.str_or_null("precision", or_null_text(s.precision));
  j.str_or_null("kernel", s.kernel);
  if (s.graph_calls > 0) {  // run by CUDA graph replays; shapes from the capture where the trace holds it
    j.num("graph_calls", s.graph_calls);
    j.num("capture_shape_calls", s.capture_shape_calls);
  }
  if (s.paged_calls > 0) {  // a serving engine's kernels on a paged KV cache
    j.num("paged_calls", s.paged_calls);
    if (s.page_size > 0)
      j.num("page_size", s.page_size);
    else
      j.null("page_size");
  }
  // decode and mixed (packed forwards reading a cache): what the calls must move, and how fast they did
  if (reads_growing_cache(s.phase)) {
    if (s.bytes > 0)
      j.real("bytes_per_call", s.bytes_per_call(), 0);
    else
      j.null("bytes_per_call");
    if (s.bandwidth_share() >= 0)
      j.real("bandwidth_share", s.bandwidth_share(), 3);
    else
      j.null("bandwidth_share");
  }
  if (s.phase == AttentionPhase::Decode) {  // a growing cache's forwards and the tokens they generate
    if (s.tokens > 0) {
      j.num("decode_forwards", s.decode_forwards);
      j.num("tokens", s.tokens);
    } else {
      j.null("decode_forwards");
      j.null("tokens");
    }
  }
  if (s.impl == AttentionImpl::SdpaMath) {  // what kept the calls off the fused backends, from their inputs
    j.begin_array("math_causes");
    for (const auto& [cause, calls] : s.math_causes) {
      j.begin_object();
      j.num("calls", calls);
      j.str("cause", cause);
      j.end_object();
    }
    j.end_array();
  }
  const bool partial = s.shape.from == ShapeFrom::Kernels && s.shape.batch > 0;  // sizes the kernels do not say: null
  if (!s.shape.known() && !partial) {
    j.null("shape");
  } else {
    j.begin_object("shape");
    // aten::bmm's inputs hold batch x heads in one dimension: then both are null and the product is given.
    if (s.shape.from == ShapeFrom::QkBmm || s.shape.batch_x_heads) {
      j.null("batch");
      j.null("q_heads");
      j.num("batch_x_heads", s.shape.batch);
    } else {
      j.num("batch", s.shape.batch);
      if (s.shape.q_heads > 0)
        j.num("q_heads", s.shape.q_heads);
      else
        j.null("q_heads");  // a decode kernel's grid holds the K/V heads alone
    }
    if (s.shape.kv_heads > 0)
      j.num("kv_heads", s.shape.kv_heads);
    else
      j.null("kv_heads");  // eager GQA repeats K and V before its matmul: not in the trace
    j.num("q_len", s.shape.q_len);
    if (s.shape.kv_len > 0)
      j.num("kv_len", s.shape.kv_len);
    else
      j.null("kv_len");  // not in a decode kernel's launch
    if (s.shape.head_dim > 0)
      j.num("head_dim", s.shape.head_dim);
    else
      j.null("head_dim");
    if (s.shape.causal)
      j.boolean("causal", *s.shape.causal);
    else
      j.null("causal");
    j.str("source", s.shape.source());
    j.end_object();
  }
  j.end_object();
}

// The step-time model of the group doctor reports on, per step (its median instance).
void step_object(JsonWriter& j, const Analysis& a) {
  const GroupStats* g = a.step_group < 0 ? nullptr : &a.groups[static_cast<std::size_t>(a.step_group)];
  const StepTime* s = g != nullptr ? g->steps.median_step() : nullptr;
  if (s == nullptr) {
    j.null("step");
    return;
  }
  const StepModel& m = g->steps;
  j.begin_object("step");
  j.str("region", g->group.name);
  j.num("instances", g->group.instances.size());
  j.str("median_instance", g->group.instances[m.median].name);
  j.real("span_ms", ms(s->span_ns));
  j.real("gpu_busy_ms", ms(s->busy_ns));
  j.real("idle_ms", ms(s->idle_ns));
  j.str("bound", to_string(s->bound));
  j.begin_object("idle_split_ms");
  for (int c = 0; c < kIdleCauses; ++c)
    j.real(to_string(static_cast<IdleCause>(c)), ms(s->idle[static_cast<std::size_t>(c)]));
  j.end_object();
  j.real("comm_exposed_ms", ms(s->comm_exposed_ns));
  j.real("copy_only_ms", ms(s->copy_only_ns));
  j.num("launches", s->launches);
  j.num("host_syncs", s->syncs);
  j.real("launch_latency_us", static_cast<double>(m.launch_latency_ns) / 1e3);
  j.boolean("has_launches", m.has_launches);
  j.boolean("has_cpu_ops", m.has_cpu_ops);
  j.begin_array("sync_ops");
  for (const std::string& op : m.sync_ops) j.str({}, op);
  j.end_array();
  j.begin_array("unknowns");
  for (const std::string& u : m.unknowns) j.str({}, u);
  j.end_array();
  j.begin_array("steps");
  for (std::size_t i = 0; i < m.steps.size(); ++i) {
    const StepTime& st = m.steps[i];
    j.begin_object();
    j.str("name", g->group.instances[i].name);
    j.real("span_ms", ms(st.span_ns));
    j.real("gpu_busy_ms", ms(st.busy_ns));
    j.real("idle_ms", ms(st.idle_ns));
    j.str("bound", to_string(st.bound));
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

void fixes_array(JsonWriter& j, const Analysis& a) {
  j.begin_array("fixes");
  for (const Fix& f : a.fixes) {
    j.begin_object();
    j.str("id", f.id);
    j.str("title", f.title);
    j.begin_array("findings");
    for (const std::string& id : f.findings) j.str({}, id);
    j.end_array();
    j.real("step_ms", ms(f.step_ns));
    j.begin_array("step_ms_range");
    j.real({}, ms(f.step_low_ns));
    j.real({}, ms(f.step_high_ns));
    j.end_array();
    j.real("gpu_ms", ms(f.gpu_ns));
    j.str("basis", f.basis);
    j.end_object();
  }
  j.end_array();
}

}  // namespace

std::string json_report(const Analysis& a, const Replay* replay) {
  std::string out;
  JsonWriter j(out);
  j.begin_object();
  j.num("schema_version", kJsonSchemaVersion);
  j.str("trace", a.label);
  if (a.device.name.empty()) {
    j.null("device");
  } else {
    j.begin_object("device");
    j.str("name", a.device.name);
    j.num("compute_capability", a.device.compute_major * 10 + a.device.compute_minor);
    j.num("sms", a.device.num_sms);
    j.end_object();
  }
  j.str_or_null("unsupported", a.unsupported);
  j.num("gpu_kernels", a.gpu_kernels);
  step_object(j, a);
  fixes_array(j, a);
  j.begin_array("attention");
  for (const AttentionSummary& s : a.attention) attention_entry(j, s);
  j.end_array();
  j.begin_array("groups");
  for (const GroupStats& gs : a.groups) {
    j.begin_object();
    j.str("name", gs.group.name);
    j.str("source", gs.group.source);
    const std::size_t n = gs.group.instances.size();
    j.num("instances", n);
    j.real("kernels_per_instance", gs.kernels_per_instance);
    j.real("gpu_time_ms", ms_per(gs.busy_ns, n), kMsDecimals);
    j.real("gpu_time_total_ms", ms(gs.busy_ns), kMsDecimals);
    share(j, gs.tensor_core_share);
    j.real("attention_time_ms", ms_per(gs.attention_ns, n), kMsDecimals);
    j.real("attention_time_total_ms", ms(gs.attention_ns), kMsDecimals);
    j.begin_array("attention");
    for (const AttentionSummary& s : gs.attention) attention_entry(j, s, std::max<std::size_t>(1, n));
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.begin_array("regions");
  for (const GroupStats& gs : a.groups)
    for (std::size_t i = 0; i < gs.instances.size(); ++i) {
      const InstanceStats& s = gs.instances[i];
      j.begin_object();
      j.str("name", gs.group.instances[i].name);
      j.str("group", gs.group.name);
      j.num("kernels", s.kernels);
      j.num("memcpys", s.memcpys);
      j.num("memsets", s.memsets);
      j.real("gpu_time_ms", ms(s.busy_ns), kMsDecimals);
      j.real("span_ms", ms(s.span_ns), kMsDecimals);
      j.real("idle_ms", ms(s.idle_ns), kMsDecimals);
      j.real("launch_api_ms", ms(s.launch_api_ns), kMsDecimals);
      share(j, s.matmul_ns > 0 ? static_cast<double>(s.tensor_core_ns) / static_cast<double>(s.matmul_ns) : -1.0);
      j.end_object();
    }
  j.end_array();
  j.begin_array("kernels");
  for (const KernelSummary& k : a.kernels) {
    j.begin_object();
    j.str("name", k.name);
    j.str("category", to_string(k.cls.category));
    j.str("unit", to_string(k.cls.unit));
    j.str("precision", to_string(k.cls.precision));
    j.str("op", to_string(k.cls.op));
    j.str("rule", k.cls.rule);
    j.num("count", k.count);
    j.real("total_ms", ms(k.total_ns), kMsDecimals);
    j.end_object();
  }
  j.end_array();
  j.begin_array("findings");
  const std::vector<int> parents = report::finding_parents(a);
  for (std::size_t fi = 0; fi < a.findings.size(); ++fi) {
    const Finding& f = a.findings[fi];
    const std::size_t n = report::finding_instances(a, f);
    j.begin_object();
    j.str("id", f.id);
    j.str("scope", to_string(f.scope));
    j.str("severity", to_string(f.severity));
    j.str("region", f.group);
    j.real("time_ms", ms_per(f.time_ns, n), kMsDecimals);
    j.real("total_ms", ms(f.time_ns), kMsDecimals);
    j.real("share", f.share, 4);
    j.str("clock", f.wall ? "wall" : "gpu");  // what time_ms and share count
    // The finding whose GPU work holds all of this one's (a cause inside the unfused calls), or null.
    if (parents[fi] >= 0)
      j.num("part_of", parents[fi]);
    else
      j.null("part_of");
    if (f.after_ns < 0)
      j.null("after_fix_ms");
    else
      j.real("after_fix_ms", ms_per(f.after_ns, n), kMsDecimals);
    j.num("instances", f.instances);
    j.str("title", f.title);
    j.str("detail", f.detail);
    j.begin_array("evidence");
    for (const Evidence& e : f.evidence) {
      j.begin_object();
      j.str("what", e.what);
      j.num("count", e.count);
      j.real("total_ms", ms(e.total_ns), kMsDecimals);
      j.end_object();
    }
    j.end_array();
    j.str("fix", f.fix);
    j.end_object();
  }
  j.end_array();
  if (replay) report::replay_json(j, *replay);
  j.num("unassigned_gpu_activities", a.unassigned_activities);
  j.num("launchless_gpu_activities", a.launchless_activities);
  j.begin_object("setup_copies");
  j.num("count", a.setup_copies.count);
  j.num("bytes", a.setup_copies.bytes);
  j.real("total_ms", ms(a.setup_copies.ns), kMsDecimals);
  j.end_object();
  j.end_object();
  out += '\n';
  return out;
}

}  // namespace attnprof
