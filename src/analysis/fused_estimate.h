// What an attention call would take as one fused kernel: measured, when the
// trace has a fused call of the same shape and pass; else from the shape and
// a per-GPU model of a fused kernel's waves of tiles; else from the call's own
// matmuls run as 16-bit tensor-core GEMMs. Numbers and their sources:
// BENCHMARKS.md ("doctor's fused-kernel estimate").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/attention.h"

namespace attnprof {

struct DeviceSummary;

struct FusedEstimate {
  enum class From : std::uint8_t { Measured, Shape, Matmuls };
  std::int64_t ns = 0;
  From from = From::Matmuls;
};
// Where the estimate for `call` came from, in words, for the report.
std::string describe(const FusedEstimate& e, const AttentionCall& call);

// Model of a fused kernel on the trace's GPU: its compute capability and multiprocessors (an H200's where the
// trace does not say) and its memory bandwidth (peak_memory_tb_per_s of its name, else its architecture's).
std::int64_t model_fused_ns(const AttentionShape& shape, bool backward, Precision precision,
                            const DeviceSummary& device);

// The bytes one attention call must move at least: q and the output once, K and V once per KV head
// (kv_heads, or q_heads where the shape does not say), in `precision` (bf16 where unknown); 0 when
// the shape is not known. A K/V pool the batch shares (kv_batch 1) counts once, whole: what the call
// reads at most, its sequences' pages being some of it.
double attention_bytes(const AttentionShape& shape, Precision precision);

// A GPU's peak memory bandwidth, TB/s, by its name as the trace spells it (the vendors' datasheets);
// 0 when the table does not hold it.
double peak_memory_tb_per_s(std::string_view gpu_name);
// The trace's GPU's: by its name, else its architecture's (an H200's where the trace says neither), as
// model_fused_ns reads it.
double device_memory_tb_per_s(const DeviceSummary& device);

// The median time of the trace's fused calls, per pass and shape: what a
// call of that shape and pass measured, fused, in this very trace.
class MeasuredFused {
 public:
  explicit MeasuredFused(std::span<const AttentionCall> calls);
  std::optional<std::int64_t> find(AttentionPass pass, const AttentionShape& shape) const;

 private:
  struct Entry {
    AttentionPass pass;
    AttentionShape shape;
    std::int64_t median_ns;
  };
  std::vector<Entry> entries_;
};

// For a call that is not fused.
FusedEstimate estimate_fused(const AttentionCall& call, const MeasuredFused& measured, const DeviceSummary& device);

}  // namespace attnprof
