// A whole trace in memory: events in file order, GPU arguments, interned
// strings, device properties and the top-level metadata Kineto writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/event.h"
#include "trace/string_pool.h"

namespace attnprof {

// What record_shapes wrote for one CPU op: its inputs' dims, dtypes and scalar
// values, in argument order. Kept only for the ops the attention view reads
// (scaled_dot_product_attention and its backends, the batched matmuls).
struct OpInputs {
  std::uint32_t event = 0;                           // index into Trace::events
  std::vector<std::vector<std::int64_t>> dims;       // [] for a non-tensor argument (and for a tensor list)
  std::vector<std::vector<std::int64_t>> list_dims;  // the tensors of the first tensor-list argument (aten::cat's)
  std::vector<std::vector<std::int64_t>> strides;    // the same, when the trace has them (torch 2.4+)
  std::vector<std::string> types;                    // "c10::BFloat16", "float", "Scalar", ...
  std::vector<std::string> concrete;                 // scalar values as written ("True", "0.125"), else ""
  friend bool operator==(const OpInputs&, const OpInputs&) = default;
};

// Whether record_shapes inputs of a CPU op with this name are kept (see OpInputs).
bool keeps_op_inputs(std::string_view op_name);

struct Trace {
  std::vector<Event> events;
  std::vector<GpuArgs> gpu_args;
  std::vector<OpInputs> op_inputs;  // in event order
  StringPool strings;
  std::vector<DeviceProperties> devices;
  std::optional<std::int64_t> base_time_ns;  // "baseTimeNanoseconds" (newer Kineto)
  std::int64_t schema_version = 1;
  std::string trace_name;  // "traceName"
  std::int64_t cuda_runtime_version = -1;
  std::int64_t cuda_driver_version = -1;
  std::int64_t cupti_version = -1;
  std::int64_t dropped_records = 0;  // recorder only: records CUPTI could not deliver
  std::uint64_t source_bytes = 0;    // size of the JSON text read (after gunzip)
  // "distributedInfo" (torch.profiler inside an initialised process group): -1 / "" when absent.
  std::int64_t rank = -1;
  std::int64_t world_size = -1;
  std::string dist_backend;

  std::string_view name(const Event& e) const { return strings.view(e.name); }
  // The record_shapes inputs kept for event `e` (op_inputs is in event order), or null.
  const OpInputs* op_inputs_of(std::uint32_t e) const;
  const GpuArgs* args(const Event& e) const { return e.has_gpu_args() ? &gpu_args[e.gpu_args] : nullptr; }
  const DeviceProperties* device(int id) const;
  // Takes in the recorder's metadata of another part of the same trace: devices not yet listed, its
  // dropped records (added up), and the versions it knows.
  void merge_metadata(const Trace& other);
  // Appends events [first, last) of another trace: their strings (names, categories, string lanes)
  // re-interned into this one's pool, their GPU arguments copied.
  void append_events(const Trace& other, std::size_t first, std::size_t last);

  // Appends an event; `args`, when given, is stored and linked to it.
  Event& add(const Event& e, const GpuArgs* args = nullptr) {
    Event& added = events.emplace_back(e);
    if (args != nullptr) {
      added.gpu_args = static_cast<std::uint32_t>(gpu_args.size());
      gpu_args.push_back(*args);
    }
    return added;
  }
};

}  // namespace attnprof
