#include "attention/cuda/device_inputs.h"

#include <algorithm>
#include <utility>

#include "attention/cuda/cuda_check.h"

namespace attnprof::attention::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  ATTNPROF_CUDA_CHECK(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 16)));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) (void)cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(ptr_, other.ptr_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

DeviceBuffer l2_flush_buffer() {
  int device = 0, l2 = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  ATTNPROF_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  return DeviceBuffer(std::max<std::size_t>(2u * static_cast<std::size_t>(l2), 64u << 20));
}

DeviceInputs upload(const HostInputs& host, WithLse lse) {
  const AttentionParams& p = host.params;
  const std::size_t lse_bytes =
      lse == WithLse::Yes ? static_cast<std::size_t>(p.batch) * p.q_heads * p.q_len * sizeof(float) : 0;
  DeviceInputs dev{DeviceBuffer(host.q.size()),
                   DeviceBuffer(host.k.size()),
                   DeviceBuffer(host.v.size()),
                   DeviceBuffer(host.out.size()),
                   DeviceBuffer(),
                   p};
  if (lse == WithLse::Yes) dev.lse = DeviceBuffer(lse_bytes);
  ATTNPROF_CUDA_CHECK(cudaMemcpy(dev.q.get(), host.q.data(), host.q.size(), cudaMemcpyHostToDevice));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(dev.k.get(), host.k.data(), host.k.size(), cudaMemcpyHostToDevice));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(dev.v.get(), host.v.data(), host.v.size(), cudaMemcpyHostToDevice));
  dev.params.q = dev.q.get();
  dev.params.k = dev.k.get();
  dev.params.v = dev.v.get();
  dev.params.out = dev.out.get();
  dev.params.lse = static_cast<float*>(dev.lse.get());
  return dev;
}

DeviceKvCache upload(const HostKvCache& c) {
  DeviceKvCache d{DeviceBuffer(c.k.size()), DeviceBuffer(c.v.size()), DeviceBuffer(c.block_table.size() * sizeof(int)),
                  DeviceBuffer(c.seq_lens.size() * sizeof(int))};
  ATTNPROF_CUDA_CHECK(cudaMemcpy(d.k.get(), c.k.data(), c.k.size(), cudaMemcpyHostToDevice));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(d.v.get(), c.v.data(), c.v.size(), cudaMemcpyHostToDevice));
  ATTNPROF_CUDA_CHECK(
      cudaMemcpy(d.block_table.get(), c.block_table.data(), d.block_table.bytes(), cudaMemcpyHostToDevice));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(d.seq_lens.get(), c.seq_lens.data(), d.seq_lens.bytes(), cudaMemcpyHostToDevice));
  return d;
}

AttentionParams with_kv_cache(AttentionParams p, const HostKvCache& host, const DeviceKvCache& dev) {
  p.k = dev.k.get();
  p.v = dev.v.get();
  p.k_strides = p.v_strides = host.strides;
  p.seq_lens = static_cast<const int*>(dev.seq_lens.get());
  if (host.page_size > 0) {
    p.block_table = static_cast<const int*>(dev.block_table.get());
    p.block_table_stride = host.pages_per_seq;
    p.page_size = host.page_size;
    const std::int64_t page_bytes =
        std::int64_t(host.page_size) * p.kv_heads * p.head_dim * std::int64_t(dtype_bytes(p.dtype));
    p.kv_pages = static_cast<int>(std::int64_t(host.k.size()) / page_bytes);
  }
  return p;
}

void poison_outputs(const DeviceInputs& dev, cudaStream_t stream) {
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(dev.out.get(), 0xff, dev.out.bytes(), stream));
  if (dev.lse.get()) ATTNPROF_CUDA_CHECK(cudaMemsetAsync(dev.lse.get(), 0xff, dev.lse.bytes(), stream));
}

void download_outputs(const DeviceInputs& dev, HostInputs& host, float* lse, cudaStream_t stream) {
  ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(host.out.data(), dev.out.get(), host.out.size(), cudaMemcpyDeviceToHost, stream));
  if (lse && dev.lse.get())
    ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(lse, dev.lse.get(), dev.lse.bytes(), cudaMemcpyDeviceToHost, stream));
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace attnprof::attention::cuda
