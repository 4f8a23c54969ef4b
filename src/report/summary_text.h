// The sentences the first screen is made of, shared by the terminal report and the Markdown one:
// the step and what bounds it, the idle time by cause, a fix's worth, attention's share and its rows,
// all per step (per instance of the region group).
#pragma once

#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace attnprof::report {

// The unit the step figures are per: the step group's name ("ProfilerStep", "fwd"), or "region".
std::string step_unit(const Analysis& a);
// "5.199 ms per fwd (median of 3: fwd1), GPU busy 5.170 ms (99%), idle 0.029 ms: gpu-bound"; "" when the
// trace has no step to speak of.
std::string step_sentence(const Analysis& a);
// "sync 0.029 ms; 20 launches, 0 host syncs, ~10 us from a launch to its kernel"; "" without launches.
std::string idle_sentence(const Analysis& a);
// A change as "-1.234" (shorter), "+0.010" (longer), "0.000".
std::string signed_ms(std::int64_t ns);
// What a fix saves in step time: "-4.875 ms (-4.845 to -4.905)", "up to -26.586 ms" (gpu-idle).
std::string fix_step_text(const Fix& f);
// The findings a fix resolves, comma-separated.
std::string fix_findings(const Fix& f);
// The group the report leads with: the steps, else the first with attention; null without groups.
const GroupStats* lead_group(const Analysis& a);
// "per fwd" ("in 'x'" for one instance).
std::string per_group(const GroupStats& g);
// "Attention per fwd: 5.170 ms (100% of GPU time) in 1 call (sdpa-math forward); fused: ~0.157 ms
// (estimated)", or that none was found.
std::string attention_sentence(const GroupStats& g);

// The instances of a finding's region group (at least 1: its figures per instance divide by it), and
// "per fwd" ("in 'x'" for one instance).
std::size_t finding_instances(const Analysis& a, const Finding& f);
std::string finding_where(const Analysis& a, const Finding& f);

// For each finding (by index), the index of the finding whose GPU work holds all of its own (a cause
// inside the unfused calls: fp32-upcast, safe-softmax, ... inside unfused-attention of the same
// group), or -1: the findings a report groups under another, so shares add up.
std::vector<int> finding_parents(const Analysis& a);

// One row of the attention table, per instance of the group.
struct AttentionRow {
  std::string impl, pass, calls, kernels_per_call, ms, fused_ms, precision, what;
};
std::vector<AttentionRow> attention_rows(const GroupStats& g);
// The lines under the attention table: for each row with calls replayed from a CUDA graph, whether
// their shapes come from the graph's capture in the trace; for each decode row with its bytes known,
// what its calls moved and how fast, against the GPU's peak ("decode: 0.27 MB a call, 0.42 TB/s, 9% of
// the H200's 4.8 TB/s").
std::vector<std::string> attention_notes(const GroupStats& g);

}  // namespace attnprof::report
