// Validation and path choice for the fused attention forward (and the backward's kernel choice).
#include <cuda_runtime.h>

#include <cstdint>

#include "fused_attention.h"

namespace attnprof::fused {

const char* unsupported(const Params& p) {
  if (!p.q || !p.k || !p.v || !p.out || !p.lse) return "fused attention: q, k, v, out and lse must all be set";
  if (p.head_dim != 64 && p.head_dim != 128) return "fused attention: head_dim must be 64 or 128";
  if (p.batch < 0 || p.heads <= 0 || p.kv_heads <= 0 || p.q_len < 0 || p.kv_len < 0)
    return "fused attention: negative or zero sizes";
  if (p.heads % p.kv_heads != 0) return "fused attention: heads must be a multiple of kv_heads";
  for (const void* ptr : {p.q, p.k, p.v, static_cast<const void*>(p.out)})
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return "fused attention: q/k/v/out must be 16-byte aligned";
  for (int64_t s :
       {p.q_batch_stride, p.q_head_stride, p.q_seq_stride, p.k_batch_stride, p.k_head_stride, p.k_seq_stride,
        p.v_batch_stride, p.v_head_stride, p.v_seq_stride, p.o_batch_stride, p.o_head_stride, p.o_seq_stride})
    if (s % 8 != 0) return "fused attention: strides must be multiples of 8 elements (16 bytes)";
  if (p.block_table && (p.page_size < 1 || p.block_table_stride < 1))
    return "fused attention: a block table needs a page size and pages per sequence of at least 1";
  return "";
}

namespace {
// Whether the current device runs the sm_90a kernels (compute capability 9.0 exactly).
bool device_is_sm90() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) return false;
  return major == 9 && minor == 0;
}
}  // namespace

Path resolve_path(Path requested) {
  if (requested != Path::Automatic) return requested;
  return device_is_sm90() ? Path::Hopper : Path::Portable;
}

BackwardPath resolve_backward_path(BackwardPath requested) {
  if (requested != BackwardPath::Automatic) return requested;
  if constexpr (kAutomaticBackward == BackwardPath::Hopper)
    if (!device_is_sm90()) return BackwardPath::Portable;
  return kAutomaticBackward;
}

cudaError_t forward(const Params& p, cudaStream_t stream, Path path, const LaunchOverrides& overrides) {
  if (unsupported(p)[0] != '\0') return cudaErrorInvalidValue;
  if (p.batch == 0 || p.q_len == 0) return cudaSuccess;  // nothing to compute
  if (takes_decode(p, path)) return launch_decode(p, stream, overrides);
  const Path resolved = resolve_path(path);
  if (resolved == Path::Portable) return launch_portable(p, stream);
  return launch_hopper(p, stream, resolved, overrides);
}

}  // namespace attnprof::fused
