// Device memory for one attention call: a move-only buffer, and the host inputs
// (host_inputs.h) uploaded with params pointing at them. The bench and the
// fused-kernel lab both run on these, so both see the same inputs and poison.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "attention/host_inputs.h"
#include "attention/params.h"

namespace attnprof::attention::cuda {

// A cudaMalloc'd buffer, freed on scope exit (move-only). Never null: even an
// empty buffer (kv_len 0) gets a small allocation, so kernels see valid pointers.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Twice the L2 (64 MB at least), overwritten before each cold-timed sample (timer.h) so that one call's
// inputs are not the next one's cache hits: the bench's and the lab's --cold.
DeviceBuffer l2_flush_buffer();

enum class WithLse { No, Yes };

// q, k, v copied from the host; out (and lse, when asked for: fp32 per query row)
// allocated; `params` is the host params pointing at these buffers.
struct DeviceInputs {
  DeviceBuffer q, k, v, out, lse;
  AttentionParams params;
};

DeviceInputs upload(const HostInputs& host, WithLse lse);
// Fills out and lse with 0xff bytes (NaN), on `stream`: what a kernel leaves unwritten shows.
void poison_outputs(const DeviceInputs& dev, cudaStream_t stream);
// A HostKvCache on the device, and params reading their keys from it (k, v and their strides, the
// block table when paged, the sequence lengths).
struct DeviceKvCache {
  DeviceBuffer k, v, block_table, seq_lens;
};
DeviceKvCache upload(const HostKvCache& cache);
AttentionParams with_kv_cache(AttentionParams params, const HostKvCache& host, const DeviceKvCache& dev);

// Copies out (and lse, when `lse` is not null) back; waits for `stream`.
void download_outputs(const DeviceInputs& dev, HostInputs& host, float* lse, cudaStream_t stream);

}  // namespace attnprof::attention::cuda
