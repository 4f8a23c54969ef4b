// What `attnprof bench` was asked to do: the shape, the implementations, where
// to run and what to write. Plain data, filled by the CLI.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attention/params.h"

namespace attnprof::bench {

enum class DeviceChoice { Automatic, Cuda, Cpu };

// What one timed call is: the forward (inference), the backward alone (its forward run once
// before, as autograd has it), or both (a training step's attention).
enum class Pass { Forward, Backward, Both };
inline const char* pass_name(Pass p) {
  return p == Pass::Forward ? "forward" : p == Pass::Backward ? "backward" : "both";
}
// The FLOPs one timed call of pass p does on this shape: the forward's, the backward's (2.5x) or both.
inline double pass_flops(const attention::AttentionParams& shape, Pass p) {
  const double forward = attention::attention_flops(shape), backward = attention::attention_backward_flops(shape);
  return p == Pass::Forward ? forward : p == Pass::Backward ? backward : forward + backward;
}

struct BenchOptions {
  std::vector<std::string> impls;  // empty: every implementation available on the device
  // Unset sizes take the device's default (the study's B=8 H=16 S=1024 D=64 on a GPU,
  // a smaller one on the CPU).
  std::optional<int> batch, heads, kv_heads, seq, kv_seq, head_dim;
  attention::DType dtype = attention::DType::BF16;
  bool causal = true;
  bool bottom_right = false;  // causal diagonal at the bottom-right corner
  float dropout = 0.0f;       // attention dropout probability (rows that cannot apply it are skipped)
  // GPU: the keys in a paged cache of pages of this many tokens (shuffled, through a block table) for
  // the rows that read one (takes_paged_kv); the others read the same keys dense. 0: dense for all.
  int page_size = 0;
  Pass pass = Pass::Forward;  // what is timed (rows without a backward are skipped for the others)
  attention::Layout layout = attention::Layout::BHSD;
  DeviceChoice device = DeviceChoice::Automatic;
  bool json = false;
  std::string trace_dir;      // empty: no traces
  std::optional<bool> check;  // unset: on (on a sample of heads when the reference is slow)
  int repeats = 0;            // 0: enough runs for ~0.3 s per implementation (10..200)
  unsigned seed = 0;          // 0: a fresh seed every run
  // GPU timing: false (cold): one call per sample, the L2 overwritten before it; true (hot):
  // 10 back-to-back calls per sample, nothing flushed, as calls run inside a program.
  bool hot = false;
  // GPU: time the implementations in rounds, one sample of each per round (after each one's
  // warm-up, check and kernel recording), so a drift of clocks or temperature falls on all alike.
  bool interleave = false;
  std::string no_gpu;  // set by the caller when it found no NVIDIA GPU/driver: why
};

struct BenchRun;
struct ImplResult;
// What a caller hears while the bench runs, so a long run is not silent:
// the run's header facts once they are known, each implementation as it
// starts and as it finishes.
struct BenchProgress {
  std::function<void(const BenchRun&)> started;
  std::function<void(const BenchRun&, const std::string& impl)> running;
  std::function<void(const BenchRun&, const ImplResult&)> finished;
};

}  // namespace attnprof::bench
