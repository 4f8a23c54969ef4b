#include "report/summary_text.h"

#include <algorithm>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "report/format.h"

namespace attnprof::report {

namespace {

const StepTime* median_step(const Analysis& a) {
  if (a.step_group < 0) return nullptr;
  const StepTime* s = a.groups[static_cast<std::size_t>(a.step_group)].steps.median_step();
  return s != nullptr && s->span_ns > 0 ? s : nullptr;
}

}  // namespace

std::string step_unit(const Analysis& a) {
  if (a.step_group < 0) return "region";
  const GroupStats& g = a.groups[static_cast<std::size_t>(a.step_group)];
  return g.group.instances.size() > 1 ? g.group.name : std::string("region");
}

std::string step_sentence(const Analysis& a) {
  const StepTime* s = median_step(a);
  if (s == nullptr) return {};
  const GroupStats& g = a.groups[static_cast<std::size_t>(a.step_group)];
  const bool steps = g.group.instances.size() > 1;
  return fmt::format("{} ms per {} ({}{}), GPU busy {} ms ({}), idle {} ms: {}-bound", ms(s->span_ns), step_unit(a),
                     steps ? fmt::format("median of {}: ", g.group.instances.size()) : "",
                     g.group.instances[g.steps.median].name, ms(s->busy_ns),
                     percent(static_cast<double>(s->busy_ns) / static_cast<double>(s->span_ns)), ms(s->idle_ns),
                     to_string(s->bound));
}

std::string idle_sentence(const Analysis& a) {
  const StepTime* s = median_step(a);
  if (s == nullptr) return {};
  const StepModel& m = a.groups[static_cast<std::size_t>(a.step_group)].steps;
  if (!m.has_launches) return {};
  std::string split;
  for (int c = 0; c < kIdleCauses; ++c) {
    const std::int64_t v = s->idle[static_cast<std::size_t>(c)];
    if (v * 50 >= s->idle_ns && v > 0)
      split += fmt::format("{}{} {} ms", split.empty() ? "" : ", ", to_string(static_cast<IdleCause>(c)), ms(v));
  }
  return fmt::format("{}; {} launch{}, {} host sync{}, ~{:.0f} us from a launch to its kernel",
                     split.empty() ? "none" : split, s->launches, plural(s->launches, "es"), s->syncs, plural(s->syncs),
                     static_cast<double>(m.launch_latency_ns) / 1e3);
}

std::string signed_ms(std::int64_t ns) {
  if (ns == 0) return ms(0);
  return fmt::format("{}{}", ns > 0 ? '-' : '+', ms(ns < 0 ? -ns : ns));
}

std::string fix_step_text(const Fix& f) {
  if (f.id == "gpu-idle") return fmt::format("up to {} ms", signed_ms(f.step_ns));
  return fmt::format("{} ms{}", signed_ms(f.step_ns),
                     f.step_low_ns != f.step_high_ns
                         ? fmt::format(" ({} to {})", signed_ms(f.step_low_ns), signed_ms(f.step_high_ns))
                         : std::string());
}

std::string fix_findings(const Fix& f) {
  std::string ids;
  for (const std::string& id : f.findings) ids += (ids.empty() ? "" : ", ") + id;
  return ids;
}

const GroupStats* lead_group(const Analysis& a) {
  const GroupStats* lead = a.step_group >= 0 ? &a.groups[static_cast<std::size_t>(a.step_group)] : nullptr;
  for (const GroupStats& g : a.groups)
    if (lead == nullptr || (lead->attention_ns == 0 && g.attention_ns > 0)) lead = &g;
  return lead;
}

std::string per_group(const GroupStats& g) {
  return g.group.instances.size() <= 1 ? fmt::format("in '{}'", g.group.name) : fmt::format("per {}", g.group.name);
}

namespace {

double instances(const GroupStats& g) {
  return static_cast<double>(std::max<std::size_t>(1, g.group.instances.size()));
}
std::string per_instance(const GroupStats& g, std::int64_t ns) {
  return ms(static_cast<std::int64_t>(static_cast<double>(ns) / instances(g)));
}

}  // namespace

std::string attention_sentence(const GroupStats& g) {
  if (g.attention.empty())
    return fmt::format("Attention {}: none found (no fused attention kernel, no matmul-softmax-matmul chain)",
                       per_group(g));
  int calls = 0;
  std::int64_t fused = 0;
  bool estimated = false;
  std::string impls;
  for (const AttentionSummary& s : g.attention) {
    calls += s.calls;
    fused += s.fused_ns >= 0 ? s.fused_ns : s.kernel_ns;
    estimated |= s.fused_ns >= 0;
    impls += fmt::format("{}{} {}{}{}", impls.empty() ? "" : ", ", to_string(s.impl), to_string(s.pass),
                         s.phase == AttentionPhase::None ? "" : " ", to_string(s.phase));
  }
  const double calls_per = calls / instances(g);
  std::string line = fmt::format(
      "Attention {}: {} ms ({} of GPU time) in {:g} call{} ({})", per_group(g), per_instance(g, g.attention_ns),
      percent(g.busy_ns > 0 ? static_cast<double>(g.attention_ns) / static_cast<double>(g.busy_ns) : -1), calls_per,
      plural(calls_per), impls);
  if (estimated) line += fmt::format("; fused: ~{} ms (estimated)", per_instance(g, fused));
  return line;
}

std::size_t finding_instances(const Analysis& a, const Finding& f) {
  const auto group =
      std::find_if(a.groups.begin(), a.groups.end(), [&](const GroupStats& g) { return g.group.name == f.group; });
  return group == a.groups.end() ? 1 : std::max<std::size_t>(1, group->group.instances.size());
}

std::string finding_where(const Analysis& a, const Finding& f) {
  return finding_instances(a, f) == 1 ? fmt::format("in '{}'", f.group) : fmt::format("per {}", f.group);
}

std::vector<int> finding_parents(const Analysis& a) {
  // Per group, the unfused calls' GPU work (all passes together, sorted) and its first finding.
  struct Held {
    int first = -1;
    std::vector<std::size_t> activities;
  };
  std::map<std::string_view, Held> held;
  for (std::size_t k = 0; k < a.findings.size(); ++k) {
    const Finding& u = a.findings[k];
    if (u.id != "unfused-attention") continue;
    Held& h = held[u.group];
    if (h.first < 0) h.first = static_cast<int>(k);
    h.activities.insert(h.activities.end(), u.activities.begin(), u.activities.end());
  }
  for (auto& [group, h] : held) std::sort(h.activities.begin(), h.activities.end());
  std::vector<int> parent(a.findings.size(), -1);
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    const Finding& f = a.findings[i];
    const auto h = held.find(f.group);
    if (f.id == "unfused-attention" || f.activities.empty() || h == held.end()) continue;
    const std::vector<std::size_t>& in = h->second.activities;
    if (std::all_of(f.activities.begin(), f.activities.end(),
                    [&](std::size_t act) { return std::binary_search(in.begin(), in.end(), act); }))
      parent[i] = h->second.first;
  }
  return parent;
}

std::vector<AttentionRow> attention_rows(const GroupStats& g) {
  std::vector<AttentionRow> rows;
  for (const AttentionSummary& s : g.attention) {
    std::string what = s.kernel;
    if (s.paged_calls > 0)
      what += s.page_size > 0 ? fmt::format(", paged KV ({} tokens a page)", s.page_size) : ", paged KV";
    if (s.shape.any())
      what += fmt::format("{}{}{}", what.empty() ? "" : ", ", shape_text(s.shape), s.one_shape ? "" : " (and others)");
    if (s.shape.shared_kv_pool())
      what += fmt::format(", K/V one pool of {} keys for the {} sequences", s.shape.kv_len, s.shape.batch);
    std::string pass(to_string(s.pass));
    if (s.phase != AttentionPhase::None) pass = std::string(to_string(s.phase));  // a phase is a forward's
    rows.push_back({std::string(to_string(s.impl)), pass, fmt::format("{:g}", s.calls / instances(g)),
                    fmt::format("{:.1f}", static_cast<double>(s.kernels) / std::max(1, s.calls)),
                    per_instance(g, s.kernel_ns), s.fused_ns >= 0 ? per_instance(g, s.fused_ns) : std::string("-"),
                    std::string(to_string(s.precision)), what});
  }
  return rows;
}

std::vector<std::string> attention_notes(const GroupStats& g) {
  std::vector<std::string> out;
  for (const AttentionSummary& s : g.attention) {
    if (s.graph_calls == 0) continue;
    const std::string_view row = s.phase != AttentionPhase::None ? to_string(s.phase) : to_string(s.pass);
    std::string line = s.graph_calls == s.calls
                           ? fmt::format("{} {}: every call replayed from a CUDA graph", to_string(s.impl), row)
                           : fmt::format("{} {}: {:g} of its {:g} calls replayed from a CUDA graph", to_string(s.impl),
                                         row, s.graph_calls / instances(g), s.calls / instances(g));
    // Where the trace holds captures, a replay left without a shape was not told apart from another
    // graph's (or ran before its capture); without any, every graph was captured before the trace.
    // Without CPU ops (attnprof record) no capture's ops are in the trace, wherever it was captured.
    const std::string_view rest =
        s.captures_in_trace ? "the others' capture is not in it, or not told apart from another graph's"
        : s.capture_shape_calls == 0 && !g.steps.has_cpu_ops
            ? (s.shape.any() ? "the trace has no CPU ops (attnprof record), so their shapes are what the kernels tell"
                             : "the trace has no CPU ops (attnprof record), so their shapes are not in it")
            : "the graph was captured before the trace began, so their ops and shapes are not in it "
              "(profile from the first compiled call on to have them)";
    const std::string where = s.capture_trace.empty() ? std::string("this trace") : s.capture_trace;
    if (s.capture_shape_calls == s.graph_calls)
      line += fmt::format(", their shapes from the graph's capture in {}", where);
    else if (s.capture_shape_calls > 0)
      line += fmt::format(", {:g} with their shapes from the graph's capture in {}; {}",
                          s.capture_shape_calls / instances(g), where, rest);
    else
      line += fmt::format("; {}", rest);
    out.push_back(std::move(line));
  }
  for (const AttentionSummary& s : g.attention) {
    if (!reads_growing_cache(s.phase) || s.bytes <= 0 || s.bytes_ns <= 0) continue;
    const double tb_per_s = s.bytes / static_cast<double>(s.bytes_ns) / 1e3;
    const bool pool = s.shape.shared_kv_pool();  // the sequences' pages are some of it
    std::string line = fmt::format("{} {}: {}{:.2f} MB a call ({}), {}{:.2f} TB/s", to_string(s.impl),
                                   to_string(s.phase), pool ? "at most " : "", s.bytes_per_call() / 1e6,
                                   pool ? "q and output once, the shared K/V pool whole" : "q, K, V, output once",
                                   pool ? "at most " : "", tb_per_s);
    if (const double share = s.bandwidth_share(); share >= 0)
      line += fmt::format(", {:.0f}% of the GPU's {:g} TB/s", 100 * share, s.peak_tb_per_s);
    if (s.tokens > 0)  // a growing cache's forwards: what a generated token costs in attention
      line += fmt::format("; {:g} forwards, {:g} tokens generated {}: {:.1f} us of its attention a token",
                          static_cast<double>(s.decode_forwards) / instances(g),
                          static_cast<double>(s.tokens) / instances(g), per_group(g),
                          static_cast<double>(s.kernel_ns) / 1e3 / static_cast<double>(s.tokens));
    out.push_back(std::move(line));
  }
  for (const AttentionSummary& s : g.attention) {
    if (s.phase != AttentionPhase::Mixed) continue;
    out.push_back(fmt::format(
        "{} mixed: packed forwards (batch 1, one mask over several requests' tokens, as continuous batching "
        "runs them) with more than {} query rows that read cached keys: one token of each of many requests, a "
        "prompt's chunk, or both; the trace does not say how many requests a forward holds",
        to_string(s.impl), kDecodeMaxQueryRows));
  }
  return out;
}

}  // namespace attnprof::report
