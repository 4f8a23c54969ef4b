// The --json report. Field names are part of the interface: keep them stable.
#include <iterator>

#include <fmt/format.h>

#include "report/report.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

double us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

class Json {
 public:
  explicit Json(std::string& out) : out_(out) {}
  void key(std::string_view k) {
    json_text::append_quoted(out_, k);
    out_ += ": ";
  }
  void str(std::string_view k, std::string_view v) {
    key(k);
    json_text::append_quoted(out_, v);
  }
  template <typename T>
  void num(std::string_view k, T v) {
    key(k);
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  void real(std::string_view k, double v) {
    key(k);
    fmt::format_to(std::back_inserter(out_), "{:.3f}", v);
  }
  void raw(std::string_view s) { out_ += s; }

 private:
  std::string& out_;
};

}  // namespace

std::string json_report(const Analysis& a) {
  std::string out;
  Json j(out);
  j.raw("{");
  j.str("trace", a.label);
  j.raw(", ");
  j.key("device");
  if (a.device.name.empty()) {
    j.raw("null");
  } else {
    j.raw("{");
    j.str("name", a.device.name);
    j.raw(", ");
    j.num("compute_capability", a.device.compute_major * 10 + a.device.compute_minor);
    j.raw(", ");
    j.num("sms", a.device.num_sms);
    j.raw("}");
  }

  j.raw(",\n \"groups\": [");
  for (std::size_t g = 0; g < a.groups.size(); ++g) {
    const GroupStats& gs = a.groups[g];
    j.raw(g ? ",\n  {" : "\n  {");
    j.str("name", gs.group.name);
    j.raw(", ");
    j.str("source", gs.group.source);
    j.raw(", ");
    j.num("instances", gs.group.instances.size());
    j.raw(", ");
    j.real("kernels_per_instance", gs.kernels_per_instance);
    j.raw(", ");
    j.real("gpu_time_us", us(gs.busy_ns));
    j.raw(", ");
    j.real("tensor_core_share", gs.tensor_core_share);
    j.raw("}");
  }
  j.raw("],\n \"regions\": [");
  bool first = true;
  for (const GroupStats& gs : a.groups)
    for (std::size_t i = 0; i < gs.instances.size(); ++i) {
      const InstanceStats& s = gs.instances[i];
      j.raw(first ? "\n  {" : ",\n  {");
      first = false;
      j.str("name", gs.group.instances[i].name);
      j.raw(", ");
      j.str("group", gs.group.name);
      j.raw(", ");
      j.num("kernels", s.kernels);
      j.raw(", ");
      j.num("memcpys", s.memcpys);
      j.raw(", ");
      j.num("memsets", s.memsets);
      j.raw(", ");
      j.real("gpu_time_us", us(s.busy_ns));
      j.raw(", ");
      j.real("span_us", us(s.span_ns));
      j.raw(", ");
      j.real("idle_us", us(s.idle_ns));
      j.raw(", ");
      j.real("launch_api_us", us(s.launch_api_ns));
      j.raw(", ");
      j.real("tensor_core_share",
             s.matmul_ns > 0 ? static_cast<double>(s.tensor_core_ns) / static_cast<double>(s.matmul_ns) : -1.0);
      j.raw("}");
    }
  j.raw("],\n \"kernels\": [");
  for (std::size_t k = 0; k < a.kernels.size(); ++k) {
    const KernelSummary& ks = a.kernels[k];
    j.raw(k ? ",\n  {" : "\n  {");
    j.str("name", ks.name);
    j.raw(", ");
    j.str("category", to_string(ks.cls.category));
    j.raw(", ");
    j.str("unit", to_string(ks.cls.unit));
    j.raw(", ");
    j.str("precision", to_string(ks.cls.precision));
    j.raw(", ");
    j.str("op", to_string(ks.cls.op));
    j.raw(", ");
    j.str("rule", ks.cls.rule);
    j.raw(", ");
    j.num("count", ks.count);
    j.raw(", ");
    j.real("total_us", us(ks.total_ns));
    j.raw("}");
  }
  j.raw("],\n \"findings\": [");
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    const Finding& f = a.findings[i];
    j.raw(i ? ",\n  {" : "\n  {");
    j.str("id", f.id);
    j.raw(", ");
    j.str("severity", to_string(f.severity));
    j.raw(", ");
    j.str("region", f.group);
    j.raw(", ");
    j.real("time_us", us(f.time_ns));
    j.raw(", ");
    j.key("share");
    fmt::format_to(std::back_inserter(out), "{:.4f}", f.share);
    j.raw(", ");
    j.num("instances", f.instances);
    j.raw(", ");
    j.str("title", f.title);
    j.raw(", ");
    j.str("detail", f.detail);
    j.raw(", ");
    j.key("evidence");
    j.raw("[");
    for (std::size_t e = 0; e < f.evidence.size(); ++e) {
      j.raw(e ? ", {" : "{");
      j.str("what", f.evidence[e].what);
      j.raw(", ");
      j.num("count", f.evidence[e].count);
      j.raw(", ");
      j.real("total_us", us(f.evidence[e].total_ns));
      j.raw("}");
    }
    j.raw("], ");
    j.str("fix", f.fix);
    j.raw("}");
  }
  j.raw("],\n ");
  j.num("unassigned_gpu_activities", a.unassigned_activities);
  j.raw("}\n");
  return out;
}

}  // namespace attnprof
