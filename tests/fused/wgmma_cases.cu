// One warpgroup's wgmma product (wgmma_cases.h): the operands TMA-loaded with the kernels' encode() and
// tma_load_4d, the descriptors as bwd_sm90.cu and the forward's mainloop build them.
#include "wgmma_cases.h"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "hopper_launch.cuh"
#include "hopper_ptx.cuh"
#include "wgmma_ops.cuh"

namespace attnprof::fused::testing {
namespace {

using namespace sm90;

constexpr int kForms[] = {0, 1, 2, 3};  // WgmmaForm's values, as template arguments
constexpr int kMaxTile = 128 * 128 * 2;
constexpr int kSmem = 2 * kMaxTile + 1024 + 1024;  // A, B, the mbarrier, the alignment's slack

// What a launch needs besides the maps: the TMA tiles (rows and 64-column chunks of A and B), the byte
// offset of the chunk M (A) and N (B) start at, A's registers (RS: [64][K] row-major, 2 elements a word).
struct CaseArgs {
  int a_rows, a_chunks, b_rows, b_chunks;
  uint32_t a_off, b_off;
  const uint32_t* a_words;
  float* d;
};

template <typename T, int FORM, int K, int N>
__global__ void __launch_bounds__(128, 1)
    wgmma_case_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      const CaseArgs args) {
#ifdef ATTNPROF_SM90A
  constexpr bool kRegsA = FORM == int(WgmmaForm::RS);  // A from the host's words (RS_K loads it by TMA)
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sA = base;
  unsigned char* sB = base + kMaxTile;
  uint64_t* bar = reinterpret_cast<uint64_t*>(base + 2 * kMaxTile);
  if (threadIdx.x == 0) {
    mbar_init(bar, 1);
    fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const uint32_t a_bytes = kRegsA ? 0 : args.a_rows * args.a_chunks * 128;
    mbar_arrive_expect_tx(bar, a_bytes + args.b_rows * args.b_chunks * 128);
    if (!kRegsA)
      for (int c = 0; c < args.a_chunks; ++c) tma_load_4d(sA + c * args.a_rows * 128, &map_a, c * 64, 0, 0, 0, bar);
    for (int c = 0; c < args.b_chunks; ++c) tma_load_4d(sB + c * args.b_rows * 128, &map_b, c * 64, 0, 0, 0, bar);
  }
  __syncwarp();
  mbar_wait(bar, 0);

  const int warp = __shfl_sync(0xffffffff, int(threadIdx.x / 32), 0), lane = threadIdx.x % 32;
  const uint32_t a_addr = smem_u32(sA), b_addr = smem_u32(sB);
  float acc[N / 8][4];
#pragma unroll
  for (int j = 0; j < N / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  // RS_K: the A fragments taken from A's TMA tile as bwd_sm90.cu takes K's, all before the fence below.
  [[maybe_unused]] uint32_t a[kRegsA || FORM == int(WgmmaForm::RS_K) ? K / 16 : 1][4];
  if constexpr (FORM == int(WgmmaForm::RS_K)) {
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) ldmatrix_a_sw128(a_addr, 64, warp, lane, kk, a[kk]);
  }
  // RS: the A fragments of mma.sync m16n8k16 (the forward's P): rows r0, r0 + 8, columns 16 kk + 2 (lane % 4)
  // (regs 0, 1) and + 8 (regs 2, 3).
  if constexpr (kRegsA) {
    const int r0 = warp * 16 + lane / 4;
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
      const int c = 16 * kk + 2 * (lane % 4);
      a[kk][0] = args.a_words[(r0 * K + c) / 2];
      a[kk][1] = args.a_words[((r0 + 8) * K + c) / 2];
      a[kk][2] = args.a_words[(r0 * K + c + 8) / 2];
      a[kk][3] = args.a_words[((r0 + 8) * K + c + 8) / 2];
    }
  }
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    if constexpr (FORM == int(WgmmaForm::SS)) {
      // K-major: a 16-column k step at (kk / 4) chunks + (kk % 4) x 32 bytes (the forward's Q K^T).
      const uint32_t koff = (kk % 4) * 32;
      WgmmaSS<T, N>::run(acc, make_desc_sw128(a_addr + (kk / 4) * 64 * 128 + koff, 16, 1024),
                         make_desc_sw128(b_addr + (kk / 4) * N * 128 + koff, 16, 1024), kk > 0);
    } else if constexpr (FORM == int(WgmmaForm::RS_K)) {
      WgmmaRS_K<T, N>::run(acc, a[kk], make_desc_sw128(b_addr + (kk / 4) * N * 128 + (kk % 4) * 32, 16, 1024), kk > 0);
    } else if constexpr (FORM == int(WgmmaForm::SS_TT)) {
      // MN-major: 16 rows a k step (two 8-row atoms, 1024 bytes apart), chunks K x 128 bytes apart.
      WgmmaSS_TT<T, N>::run(acc, make_desc_sw128(a_addr + args.a_off + kk * 16 * 128, K * 128, 1024),
                            make_desc_sw128(b_addr + args.b_off + kk * 16 * 128, K * 128, 1024), kk > 0);
    } else {
      WgmmaRS<T, N>::run(acc, a[kk], make_desc_sw128(b_addr + args.b_off + kk * 16 * 128, K * 128, 1024));
    }
  }
  wgmma_commit();
  wgmma_wait<0>();
  fence_operands(acc);
  const int row = warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) args.d[(row + 8 * (e >> 1)) * N + 8 * j + 2 * (lane % 4) + (e & 1)] = acc[j][e];
#endif
}

template <typename T, int FORM, int K, int N>
cudaError_t launch_case(const CUtensorMap& map_a, const CUtensorMap& map_b, const CaseArgs& args) {
  auto* kernel = wgmma_case_kernel<T, FORM, K, N>;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (e != cudaSuccess) return e;
  kernel<<<1, 128, kSmem>>>(map_a, map_b, args);
  return cudaGetLastError();
}

template <typename T>
cudaError_t dispatch(const WgmmaCase& c, const CUtensorMap& map_a, const CUtensorMap& map_b, const CaseArgs& args) {
  constexpr int SS = kForms[0], TT = kForms[1], RS = kForms[2], RS_K = kForms[3];
  const bool k64 = c.k == 64, n64 = c.n == 64;
  switch (c.form) {
    case WgmmaForm::SS:
      return k64 ? (n64 ? launch_case<T, SS, 64, 64>(map_a, map_b, args)
                        : launch_case<T, SS, 64, 128>(map_a, map_b, args))
                 : (n64 ? launch_case<T, SS, 128, 64>(map_a, map_b, args)
                        : launch_case<T, SS, 128, 128>(map_a, map_b, args));
    case WgmmaForm::SS_TT:
      return k64 ? launch_case<T, TT, 64, 64>(map_a, map_b, args) : launch_case<T, TT, 128, 64>(map_a, map_b, args);
    case WgmmaForm::RS_K:
      return k64 ? launch_case<T, RS_K, 64, 64>(map_a, map_b, args) : launch_case<T, RS_K, 128, 64>(map_a, map_b, args);
    case WgmmaForm::RS:
      return k64 ? (n64 ? launch_case<T, RS, 64, 64>(map_a, map_b, args)
                        : launch_case<T, RS, 64, 128>(map_a, map_b, args))
                 : (n64 ? launch_case<T, RS, 128, 64>(map_a, map_b, args)
                        : launch_case<T, RS, 128, 128>(map_a, map_b, args));
  }
  return cudaErrorInvalidValue;
}

// Device memory for one case, freed on every path.
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() { cudaFree(ptr); }
};

}  // namespace

bool wgmma_device(std::string& why) {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    why = "no CUDA device";
    return false;
  }
  if (major == 9 && minor == 0) return true;
  why = "not an sm_90 device (compute capability " + std::to_string(major) + "." + std::to_string(minor) + ")";
  return false;
}

std::string run_wgmma_case(const WgmmaCase& c, const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                           std::vector<float>& d) {
  const bool k_major_b = c.form == WgmmaForm::SS || c.form == WgmmaForm::RS_K;
  if ((c.k != 64 && c.k != 128) || (c.n != 64 && c.n != 128) ||
      ((c.form == WgmmaForm::SS_TT || c.form == WgmmaForm::RS_K) && c.n != 64))
    return "unsupported case";
  // The stored tiles: rows x columns of A and of B.
  int a_rows = 64, a_cols = c.k, b_rows = c.n, b_cols = c.k;
  if (c.form == WgmmaForm::SS_TT) a_rows = c.k, a_cols = c.a_cols;
  if (!k_major_b) b_rows = c.k, b_cols = c.b_cols;
  if (a.size() != std::size_t(a_rows) * a_cols || b.size() != std::size_t(b_rows) * b_cols) return "operand sizes";
  if (!k_major_b && 64 * c.b_chunk + c.n > b_cols) return "N past B's columns";
  if (c.form == WgmmaForm::SS_TT && 64 * c.a_chunk + 64 > a_cols) return "M past A's columns";

  DeviceBuffer da, db, dd;
  cudaError_t e = cudaMalloc(&da.ptr, a.size() * 2);
  if (e == cudaSuccess) e = cudaMalloc(&db.ptr, b.size() * 2);
  if (e == cudaSuccess) e = cudaMalloc(&dd.ptr, std::size_t(64) * c.n * sizeof(float));
  if (e == cudaSuccess) e = cudaMemcpy(da.ptr, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(db.ptr, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  if (e != cudaSuccess) return std::string("setup: ") + cudaGetErrorString(e);

  const attention::DType dtype = c.bf16 ? attention::DType::BF16 : attention::DType::FP16;
  CUtensorMap map_a, map_b;
  const int64_t a_size = int64_t(a_rows) * a_cols, b_size = int64_t(b_rows) * b_cols;
  if (!encode(&map_a, dtype, da.ptr, 1, 1, a_rows, a_cols, a_size, a_size, a_cols, a_rows) ||
      !encode(&map_b, dtype, db.ptr, 1, 1, b_rows, b_cols, b_size, b_size, b_cols, b_rows))
    return "cuTensorMapEncodeTiled failed";
  const CaseArgs args{a_rows,
                      a_cols / 64,
                      b_rows,
                      b_cols / 64,
                      uint32_t(c.a_chunk * a_rows * 128),
                      uint32_t(c.b_chunk * b_rows * 128),
                      static_cast<const uint32_t*>(da.ptr),
                      static_cast<float*>(dd.ptr)};
  e = c.bf16 ? dispatch<__nv_bfloat16>(c, map_a, map_b, args) : dispatch<__half>(c, map_a, map_b, args);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return std::string("kernel: ") + cudaGetErrorString(e);
  d.assign(std::size_t(64) * c.n, 0.f);
  e = cudaMemcpy(d.data(), dd.ptr, d.size() * sizeof(float), cudaMemcpyDeviceToHost);
  return e == cudaSuccess ? "" : std::string("copy back: ") + cudaGetErrorString(e);
}

}  // namespace attnprof::fused::testing
