// Validation and path choice for the fused attention forward.
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
  return "";
}

Path resolve_path(Path requested) {
  if (requested != Path::Automatic) return requested;
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return Path::Portable;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return Path::Portable;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) return Path::Portable;
  return major == 9 && minor == 0 ? Path::Hopper : Path::Portable;
}

cudaError_t forward(const Params& params, cudaStream_t stream, Path path) {
  if (unsupported(params)[0] != '\0') return cudaErrorInvalidValue;
  if (params.batch == 0 || params.q_len == 0) return cudaSuccess;  // nothing to compute
  const Params& p = params;
  switch (resolve_path(path)) {
    case Path::Hopper:
      return launch_hopper(p, stream);
    case Path::HopperOverlap:
      return launch_hopper_overlap(p, stream);
    case Path::HopperM192:
      return launch_hopper_m192(p, stream);
    case Path::HopperV2:
      return launch_hopper_v2(p, stream);
    case Path::HopperV5:
      return launch_hopper_v5(p, stream);
    case Path::HopperV6:
      return launch_hopper_v6(p, stream);
    case Path::HopperV7:
      return launch_hopper_v7(p, stream);
    case Path::HopperV8:
      return launch_hopper_v8(p, stream);
    case Path::HopperV9:
      return launch_hopper_v9(p, stream);
    case Path::HopperV10:
      return launch_hopper_v10(p, stream);
    case Path::HopperV11:
      return launch_hopper_v11(p, stream);
    case Path::HopperV13:
      return launch_hopper_v13(p, stream);
    case Path::HopperV18:
      return launch_hopper_v18(p, stream);
    case Path::HopperV26:
      return launch_hopper_v26(p, stream);
    case Path::HopperV27:
      return launch_hopper_v27(p, stream);
    case Path::HopperV29:
      return launch_hopper_v29(p, stream);
    default:
      return launch_portable(p, stream);
  }
}

}  // namespace attnprof::fused
