// The product's Hopper kernels (schedule.h's kProductKernels, bf16 and fp16) and the launch that
// carries out choose_schedule's pick for a call.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <unordered_map>
#include <utility>

#include "fused_attention.h"
#include "hopper_launch.cuh"

namespace attnprof::fused {
namespace sm90 {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

namespace {
EncodeTiled encode_fn() {
  static EncodeTiled fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return EncodeTiled(nullptr);
    return reinterpret_cast<EncodeTiled>(f);
  }();
  return fn;
}

// The arguments of one encode(), which make its map.
struct MapKey {
  attention::DType dtype;
  const void* ptr;
  int64_t sizes[4], strides[3];
  int box_rows;
  bool l2_lines;
  bool operator==(const MapKey& o) const {
    return dtype == o.dtype && ptr == o.ptr && box_rows == o.box_rows && l2_lines == o.l2_lines &&
           std::equal(sizes, sizes + 4, o.sizes) && std::equal(strides, strides + 3, o.strides);
  }
};
struct MapKeyHash {
  std::size_t operator()(const MapKey& k) const {
    std::size_t h = std::hash<const void*>{}(k.ptr);
    const auto mix = [&h](int64_t v) { h ^= std::hash<int64_t>{}(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    for (const int64_t v : k.sizes) mix(v);
    for (const int64_t v : k.strides) mix(v);
    mix(k.box_rows);
    mix(int64_t(k.l2_lines));
    mix(int64_t(k.dtype));
    return h;
  }
};

// Kernel I of kProductKernels at element type T.
template <typename T, int I>
cudaError_t launch_product(const Params& p, const Schedule& s, cudaStream_t stream) {
  constexpr KernelChoice k = kProductKernels[I];
  return launch<T, k.head_dim, HopperKernel<k.grid, k.rows, k.consumers, k.features>>(p, s, stream);
}

template <typename T, std::size_t... I>
cudaError_t launch_indexed(int index, const Params& p, const Schedule& s, cudaStream_t stream,
                           std::index_sequence<I...>) {
  using Launch = cudaError_t (*)(const Params&, const Schedule&, cudaStream_t);
  static constexpr Launch kLaunches[] = {&launch_product<T, int(I)>...};
  return kLaunches[index](p, s, stream);
}
}  // namespace

bool encode(CUtensorMap* map, attention::DType dtype, const void* ptr, int batch, int heads, int seq, int dim,
            int64_t batch_stride, int64_t head_stride, int64_t seq_stride, int box_rows, bool l2_lines) {
  // The maps this thread encoded, by their arguments (a map is a function of them): every layer of a
  // model brings its own K/V cache back each decode step (two maps a layer; a prefill four), so up to
  // kRemembered, started over past that (a cache grown by torch.cat makes new ones every step).
  static constexpr std::size_t kRemembered = 1024;
  thread_local std::unordered_map<MapKey, CUtensorMap, MapKeyHash> remembered;
  const MapKey key{dtype, ptr, {batch, heads, seq, dim}, {batch_stride, head_stride, seq_stride}, box_rows, l2_lines};
  if (const auto it = remembered.find(key); it != remembered.end()) {
    *map = it->second;
    return true;
  }
  EncodeTiled fn = encode_fn();
  if (!fn) return false;
  const cuuint64_t dims[4] = {cuuint64_t(dim), cuuint64_t(seq), cuuint64_t(heads), cuuint64_t(batch)};
  const cuuint64_t strides[3] = {cuuint64_t(seq_stride) * 2, cuuint64_t(head_stride) * 2, cuuint64_t(batch_stride) * 2};
  const cuuint32_t box[4] = {64, cuuint32_t(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r =
      fn(map, dtype == attention::DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
         const_cast<void*>(ptr), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
         CU_TENSOR_MAP_SWIZZLE_128B, l2_lines ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B : CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return false;
  if (remembered.size() >= kRemembered) remembered.clear();
  remembered.emplace(key, *map);
  return true;
}

}  // namespace sm90

int sm_count() {
  static std::atomic<int> counts[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return 0;
  int n = dev < 64 ? counts[dev].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
    if (dev < 64) counts[dev].store(n, std::memory_order_relaxed);
  }
  return n;
}

std::size_t kernel_scratch(const Params& p, const LaunchOverrides& overrides) {
  if (p.head_dim != 64 && p.head_dim != 128) return 0;
  // The decode kernel's partials where it may run (paged or ragged calls and the short queries
  // use_decode names, on any device), the Hopper kernels' scratch on sm_90.
  const bool decode_call = takes_decode(p, Path::Automatic);
  const std::size_t decode = decode_call ? decode_scratch(p, sm_count(), overrides) : 0;
  if (resolve_path(Path::Automatic) != Path::Hopper) return decode;
  return std::max(decode, schedule_scratch(p, sm_count(), overrides));
}

cudaError_t launch_hopper(const Params& p, cudaStream_t stream, Path path, const LaunchOverrides& overrides) {
  if (p.kv_len == 0) return launch_portable(p, stream);  // nothing to stream (a zero-length map is invalid)
  const Schedule s = choose_schedule(p, path, sm_count(), overrides);
  const int index = product_kernel_index(s.kernel);
  if (index < 0) return cudaErrorNotSupported;
  constexpr auto kAll = std::make_index_sequence<kProductKernelCount>{};
  return p.dtype == attention::DType::BF16 ? sm90::launch_indexed<__nv_bfloat16>(index, p, s, stream, kAll)
                                           : sm90::launch_indexed<__half>(index, p, s, stream, kAll);
}

}  // namespace attnprof::fused
