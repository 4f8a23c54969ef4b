// doctor --replay: the trace's attention shapes run again on this machine's GPU
// through the bench, so a diagnosis comes with a measured saving. This is the
// plan and the result (plain data; the bench fills the times, bench/replay_runner.h):
// for each distinct forward shape, the bench implementation that stands in for
// what the trace ran (its "own" replay) and the fused alternatives; then the
// saving per call and per step, and whether the replay of the trace's own
// implementation agrees with its traced time (else the saving may not carry over).
// A training trace's shapes are replayed backward too (the calls' backward, paired
// with their forwards): the saving per step covers both passes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/trace_shapes.h"

namespace attnprof {

// What a user says about shapes the trace cannot tell (doctor --shape, --causal).
struct ReplayRequest {
  std::optional<AttentionShape> shape;  // for calls without a complete shape in the trace
  std::optional<bool> causal;           // for shapes whose trace does not say
};

struct ReplayRow {
  std::string impl;     // bench registry name: "math", "eager-fp32-softmax", "cudnn", "fused"
  std::string dtype;    // what it ran in (fused rows of an fp32 trace run in bf16)
  bool own = false;     // stands in for what the trace ran
  std::string why_not;  // non-empty: did not run, and why (unsupported shape, out of memory, no GPU)
  // Per call: GPU kernel time (what the trace's times add up to), median of 10 back-to-back calls;
  // wall_ms: the same calls timed by CUDA events (includes launch gaps when the host is the limit).
  std::optional<double> ms;
  std::optional<double> wall_ms;
  std::optional<double> saving_ms;  // per forward call, vs the own replay (or the traced time without one)
  // The backward (shapes with backward calls): GPU kernel time per backward call, its saving per
  // call (vs the own backward replay, or the traced backward time without one), or why it did not run.
  std::optional<double> backward_ms;
  std::optional<double> backward_saving_ms;
  std::string backward_why_not;
  std::optional<double> saving_step_ms;  // per profiler step: the forward's and (where measured) the backward's
  // A shape that reads a KV cache (decode, or a packed forward over it: memory-bound): the bytes a call moves in the
  // row's dtype (attention_bytes: q, K, V and the output once), and what its measured time makes of them: TB/s, and
  // that as a share of the replay GPU's peak (peak_memory_tb_per_s of its name; null where the table does not hold it).
  // 0 / null for other shapes.
  double bytes = 0;
  std::optional<double> tb_per_s;
  std::optional<double> bandwidth_share;
};

// What the bench runs for a traced shape: the shape itself, or, where the batch's sequences share one
// K/V pool (paged by flex_attention's block mask), each sequence with its share of the pool's keys,
// paged in the block mask's block for the rows that read a paged cache; `note` says so ("" otherwise).
struct BenchShape {
  AttentionShape shape;
  int page_size = 0;  // 0: dense
  std::string note;
};
BenchShape bench_shape_of(const AttentionShape& traced);

struct ReplayShape {
  TraceShape traced;
  BenchShape bench;        // what the bench runs (bench_shape_of the traced shape)
  std::string shape_text;  // "B=2 H=8 H_kv=2 S=512 S_kv=512 D=64 bf16 causal"
  std::string source;      // where the shape came from, and what was assumed
  std::string dtype;       // bf16, fp16, fp32
  bool causal = false;
  bool bottom_right = false;  // only with causal: the diagonal at the bottom-right corner (replay_causality)
  double dropout = 0;         // replayed with this attention dropout (the trace's, training)
  double traced_ms = 0;       // per call, in the trace
  double calls_per_step = 0;  // 0: the trace has no steps
  // Training: the backward calls of these forwards, their traced time per call, per step.
  int backward_calls = 0;
  double traced_backward_ms = 0;
  double backward_calls_per_step = 0;
  std::string own_backward_note;  // the backward's stand-in, or why none (then: the traced time)
  std::string own_note;           // why no own stand-in, or what it is
  std::string fix;                // what gets the saving
  std::string command;            // the attnprof bench command for this shape
  std::string problem;            // non-empty: not replayed at all, why (e.g. an incomplete shape)
  std::vector<ReplayRow> rows;
  std::optional<double> own_vs_traced;           // replayed own / traced
  std::string carries_over;                      // the verdict on own_vs_traced, one line
  std::optional<double> own_backward_vs_traced;  // the same for the backward
  std::string backward_carries_over;
};

struct Replay {
  std::string device;        // the GPU it ran on; "" when it did not run
  double peak_tb_per_s = 0;  // its peak memory bandwidth (finish_replay, by its name; 0: not in the table)
  std::string no_gpu;        // why it did not run here ("" when it did)
  std::string timing = "hot";
  std::string region;               // the region group replayed: the one with the most attention time
  int steps = 0;                    // its instances (profiler steps): the per-step figures use them
  int calls_without_shape = 0;      // forward calls not replayed: no shape in the trace
  int backward_unpaired = 0;        // backward calls with no forward before them in the region
  std::vector<ReplayShape> shapes;  // by traced time, the largest first
};

// Within this share a replay of the trace's own implementation counts as agreeing with it.
inline constexpr double kReplayAgreement = 0.15;

// How a shape is replayed: causal as the trace says; else as asked (--causal/--no-causal); else causal
// when an unfused call adds a mask to its scores (a decoder's causal mask; Hugging Face drops an all-ones
// padding mask), not causal otherwise (assumed: the mask guess was taken). A guessed mask over a cache
// (fewer queries than keys: a decode or a chunk after cached keys) has its queries last, the diagonal at
// the bottom-right corner; a single query sees every key, so it is replayed unmasked.
struct ReplayCausality {
  bool causal = false;
  bool bottom_right = false;  // only with causal: the diagonal at the bottom-right corner (bench --bottom-right)
  bool assumed = false;
};
ReplayCausality replay_causality(const TraceShape& s, std::optional<bool> asked);
// What a replay assumed of a shape whose calls add a mask to their scores (replay_causality's guess), for
// its source line: "; taken as causal: ...".
std::string replay_mask_guess(const AttentionShape& s);
// The line that names a replayed shape: "B=2 H=8 H_kv=2 S=512 S_kv=512 D=64 bf16 causal" (", causal
// (bottom-right)", a dropout after it).
std::string replay_shape_text(const AttentionShape& s, std::string_view dtype, const ReplayCausality& mask,
                              double dropout);

// The attnprof bench command that runs one shape, hot unless asked ("--impl" only when impls is not empty;
// "--pass backward" when backward).
std::string replay_bench_command(const AttentionShape& shape, std::string_view dtype, const ReplayCausality& mask,
                                 double dropout, std::string_view impls = {}, bool hot = true, bool backward = false,
                                 int page_size = 0);

// The bench rows with a backward pass (the replay's backward runs these only).
bool replay_has_backward(std::string_view impl);

// The plan: shapes, stand-ins, alternatives and commands; no times yet.
Replay plan_replay(const Analysis& analysis, const TraceIndex& index, const ReplayRequest& request);
// Savings and verdicts from the rows' times (after the bench filled them).
void finish_replay(Replay& replay);

}  // namespace attnprof
