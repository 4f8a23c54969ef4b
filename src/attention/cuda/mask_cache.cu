// The once-built causal masks; see mask_cache.h.
#include "attention/cuda/mask_cache.h"

#include <map>
#include <mutex>
#include <tuple>

#include "attention/cuda/aten_ops.cuh"

namespace attnprof::attention::cuda {

namespace {

struct Masked {
  int q_len, kv_len;
  int diagonal;
  template <typename I>
  __device__ bool operator()(I i) const {
    return static_cast<int>(i % kv_len) - static_cast<int>(i / kv_len) > diagonal;
  }
};

struct BuildMaskedOut {
  Masked masked;
  bool* dst;
  template <typename I>
  __device__ void operator()(I i) const {
    dst[i] = masked(i);
  }
};

template <typename T>
struct BuildAdditive {
  Masked masked;
  T* dst;
  template <typename I>
  __device__ void operator()(I i) const {
    dst[i] = from_f<T>(masked(i) ? -INFINITY : 0.0f);
  }
};

int diagonal(const AttentionParams& p) { return p.causal_align == CausalAlign::BottomRight ? p.kv_len - p.q_len : 0; }

using Key = std::tuple<int, int, int, int, int>;  // device, q_len, kv_len, diagonal, kind

void* lookup_or_build(const AttentionParams& p, int kind, std::size_t elem_bytes, cudaStream_t stream,
                      void (*build)(void*, Masked, std::int64_t, cudaStream_t)) {
  static std::mutex mutex;
  static std::map<Key, void*> cache;  // lives as long as the process; a few MB at most
  int device = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  const Key key{device, p.q_len, p.kv_len, diagonal(p), kind};
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const std::int64_t n = static_cast<std::int64_t>(p.q_len) * p.kv_len;
  void* mask = nullptr;
  ATTNPROF_CUDA_CHECK(cudaMalloc(&mask, static_cast<std::size_t>(n) * elem_bytes));
  build(mask, Masked{p.q_len, p.kv_len, diagonal(p)}, n, stream);
  cache.emplace(key, mask);
  return mask;
}

template <typename T>
void build_additive(void* dst, Masked m, std::int64_t n, cudaStream_t s) {
  launch_elementwise(n, BuildAdditive<T>{m, static_cast<T*>(dst)}, s);
}

void build_masked_out(void* dst, Masked m, std::int64_t n, cudaStream_t s) {
  launch_elementwise(n, BuildMaskedOut{m, static_cast<bool*>(dst)}, s);
}

}  // namespace

const bool* cached_masked_out(const AttentionParams& p, cudaStream_t stream) {
  return static_cast<const bool*>(lookup_or_build(p, -1, 1, stream, build_masked_out));
}

const void* cached_additive_mask(const AttentionParams& p, DType dtype, cudaStream_t stream) {
  switch (dtype) {
    case DType::BF16:
      return lookup_or_build(p, 0, 2, stream, build_additive<__nv_bfloat16>);
    case DType::FP16:
      return lookup_or_build(p, 1, 2, stream, build_additive<__half>);
    case DType::FP32:
      return lookup_or_build(p, 2, 4, stream, build_additive<float>);
  }
  return nullptr;
}

}  // namespace attnprof::attention::cuda
