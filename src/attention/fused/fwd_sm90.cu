// Version 2 of the fused attention forward: the Hopper path (sm_90a).
// A CTA of 3 warpgroups owns BM=128 query rows of one (batch, head):
//   warpgroup 0, the producer, drops to 40 registers (setmaxnreg) and one thread
//     loads Q once and streams K and V tiles through a STAGES-deep ring with TMA
//     (cp.async.bulk.tensor, 128B swizzle, zero fill past the sequence end),
//     each stage guarded by a full and an empty mbarrier;
//   warpgroups 1 and 2, the consumers, take 232 registers and own 64 query rows
//     each: S = Q K^T with wgmma (both operands in shared memory), masking and
//     online softmax in fp32 registers, then O += P V with wgmma taking P from
//     registers and V (MN-major) from shared memory.
// The two consumers interleave on the tensor cores, so one's softmax overlaps the
// other's GEMMs. Causal key tiles past the diagonal are never loaded.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fused_attention.h"
#include "hopper_ptx.cuh"
#include "softmax_fragment.cuh"
#include "tile_timers.h"
#include "wgmma_ops.cuh"

namespace attnprof::fused {
namespace {

using namespace sm90;

struct TensorMaps {
  CUtensorMap q, k, v;
  CUtensorMap o;  // boxes of 64 rows: one consumer warpgroup's output (kStoreTma)
};

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTNPROF_SM90A 1
#endif

// The consumer warpgroups' schedule.
enum Sched : int {
  kSerial = 0,    // version 2: S, softmax, P V one after another in each warpgroup
  kOverlap = 1,   // version 3: S(n) overlaps P(n-1) V(n-1) inside a warpgroup
  kPingPong = 2,  // version 5: version 3 with the warpgroups taking turns to issue their GEMMs
                  // (named barriers, round robin), so one's softmax runs under another's GEMMs
};

// kConsumers: consumer warpgroups (BM = 64 * kConsumers).
// kStoreTma: version 6's epilogue: each warpgroup writes its normalized output into its own
// (now unused) Q rows in shared memory, 128B-swizzled, and one thread stores them with TMA;
// false: each thread stores its fragment to global memory directly.
// kTimers: each consumer warpgroup's leading thread writes its tile's timers to p.timers
// (tile_timers.h). The other instantiations compile none of it.
template <typename T, int D, int kSched, int kConsumers, bool kStoreTma, bool kTimers = false>
__global__ void __launch_bounds__(128 * (kConsumers + 1), 1)
    fused_fwd_hopper(const __grid_constant__ Params p, const __grid_constant__ TensorMaps maps) {
#ifdef ATTNPROF_SM90A
  constexpr bool kOverlapped = kSched != kSerial;
  [[maybe_unused]] uint64_t clk[kTimers ? 6 : 1] = {};  // entry, consumer start, Q ready, first S, last P V, end
  [[maybe_unused]] uint64_t global_start = 0;
  if constexpr (kTimers) {
    clk[0] = clock64();
    global_start = global_timer();
  }
  constexpr TileConfig kT = with_consumers(tile_for(Path::Hopper, D), kConsumers);
  constexpr int BM = kT.block_m, BN = kT.block_n, STAGES = kT.stages;
  constexpr int kChunks = D / 64;  // 64-column (128-byte) swizzle chunks
  constexpr uint32_t kQBytes = BM * D * 2, kKVBytes = BN * D * 2;
  constexpr int kConsumerWarps = kT.consumers * 4;

  extern __shared__ unsigned char smem_raw[];
  unsigned char* base =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sQ = base;
  unsigned char* sK = sQ + kQBytes;
  unsigned char* sV = sK + STAGES * kKVBytes;
  uint64_t* bars = reinterpret_cast<uint64_t*>(sV + STAGES * kKVBytes);
  uint64_t* q_full = bars;
  uint64_t* k_full = bars + 1;
  uint64_t* k_empty = k_full + STAGES;
  uint64_t* v_full = k_empty + STAGES;
  uint64_t* v_empty = v_full + STAGES;

  const int m_block = gridDim.x - 1 - blockIdx.x;  // heaviest causal tiles first
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.heads / p.kv_heads);
  const int wg = threadIdx.x / 128;

  int n_blocks = (p.kv_len + BN - 1) / BN;
  if (p.causal) n_blocks = min(n_blocks, (min((m_block + 1) * BM, p.q_len) + BN - 1) / BN);

  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&k_full[s], 1);
      mbar_init(&v_full[s], 1);
      mbar_init(&k_empty[s], kConsumerWarps);
      mbar_init(&v_empty[s], kConsumerWarps);
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {  // producer
    setmaxnreg_dec<producer_registers(kConsumers)>();
    if (threadIdx.x == 0) {
      prefetch_tensormap(&maps.q);
      prefetch_tensormap(&maps.k);
      prefetch_tensormap(&maps.v);
      mbar_arrive_expect_tx(q_full, kQBytes);
      for (int c = 0; c < kChunks; ++c) tma_load_4d(sQ + c * BM * 128, &maps.q, c * 64, m_block * BM, h, b, q_full);
      for (int n = 0; n < n_blocks; ++n) {
        const int s = n % STAGES;
        const uint32_t phase = (n / STAGES) & 1;
        if (n >= STAGES) mbar_wait(&k_empty[s], phase ^ 1);
        mbar_arrive_expect_tx(&k_full[s], kKVBytes);
        for (int c = 0; c < kChunks; ++c)
          tma_load_4d(sK + s * kKVBytes + c * BN * 128, &maps.k, c * 64, n * BN, hk, b, &k_full[s]);
        if (n >= STAGES) mbar_wait(&v_empty[s], phase ^ 1);
        mbar_arrive_expect_tx(&v_full[s], kKVBytes);
        for (int c = 0; c < kChunks; ++c)
          tma_load_4d(sV + s * kKVBytes + c * BN * 128, &maps.v, c * 64, n * BN, hk, b, &v_full[s]);
      }
    }
    return;
  }

  // consumers
  setmaxnreg_inc<consumer_registers(kConsumers)>();
  if constexpr (kTimers) clk[1] = clock64();
  const int cw = wg - 1;  // consumer warpgroup: query rows 64*cw ..
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int row0 = m_block * BM + cw * 64 + warp * 16 + lane / 4;
  const float scale = p.scale;  // as AttentionParams gave it
  const float scale_log2 = scale * 1.4426950408889634f;

  float o[D / 8][4];
#pragma unroll
  for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  RowState st;
  st.init();

  const uint32_t q_addr = smem_u32(sQ) + cw * 64 * 128;
  // S = Q K^T for this warpgroup's 64 rows, K from stage s (issued, not waited).
  auto issue_qk = [&](float(&sc)[BN / 8][4], int s) {
    const uint32_t k_addr = smem_u32(sK + s * kKVBytes);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t koff = (kk % 4) * 32;  // 16 columns inside the 128-byte swizzle row
      const uint64_t da = make_desc_sw128(q_addr + (kk / 4) * BM * 128 + koff, 16, 1024);
      const uint64_t db = make_desc_sw128(k_addr + (kk / 4) * BN * 128 + koff, 16, 1024);
      WgmmaSS<T, BN>::run(sc, da, db, kk > 0);
    }
    wgmma_commit();
  };
  // O += P V with V from stage s (issued, not waited).
  auto issue_pv = [&](uint32_t(&pa)[BN / 16][4], int s) {
    const uint32_t v_addr = smem_u32(sV + s * kKVBytes);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      // 16 keys = two 8-row atoms; chunks of 64 head-dim columns are BN*128 bytes apart.
      const uint64_t dv = make_desc_sw128(v_addr + kk * 16 * 128, BN * 128, 1024);
      WgmmaRS<T, D>::run(o, pa[kk], dv);
    }
    wgmma_commit();
  };
  auto release = [&](uint64_t* bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };
  auto mask = [&](float(&sc)[BN / 8][4], int n) {
    const bool needs_mask = (n + 1) * BN > p.kv_len || (p.causal && (n + 1) * BN - 1 > m_block * BM + cw * 64);
    if (needs_mask) mask_scores(sc, row0, n * BN, p.kv_len, p.causal);
  };
  // Ping-pong: warpgroup cw issues its GEMMs after bar.sync on barrier 1 + cw, which the other
  // warpgroups' arrivals complete; after issuing, it arrives on theirs. The later warpgroups
  // arrive once up front, so warpgroup 0 goes first and the turns go round robin.
  constexpr int kTurnThreads = 128 * kConsumers;
  auto turn_begin = [&] {
    if constexpr (kSched == kPingPong) named_bar_sync(1 + cw, kTurnThreads);
  };
  auto turn_end = [&] {
    if constexpr (kSched == kPingPong)
#pragma unroll
      for (int k = 1; k < kConsumers; ++k) named_bar_arrive(1 + (cw + k) % kConsumers, kTurnThreads);
  };
  if constexpr (kSched == kPingPong)
    for (int j = 0; j < cw; ++j) named_bar_arrive(1 + j, kTurnThreads);

  mbar_wait(q_full, 0);
  if constexpr (kTimers) clk[2] = clock64();

  if constexpr (!kOverlapped) {
    // Version 2: S, softmax, P V one after another within the warpgroup.
    for (int n = 0; n < n_blocks; ++n) {
      const int s = n % STAGES;
      const uint32_t phase = (n / STAGES) & 1;
      float sc[BN / 8][4];
      mbar_wait(&k_full[s], phase);
      wgmma_fence();
      issue_qk(sc, s);
      wgmma_wait<0>();
      fence_operands(sc);
      if constexpr (kTimers)
        if (n == 0) clk[3] = clock64();
      release(&k_empty[s]);
      mask(sc, n);
      online_softmax(sc, o, st, scale_log2);
      uint32_t pa[BN / 16][4];
      scores_to_a<T>(sc, pa);
      mbar_wait(&v_full[s], phase);
      fence_operands(o);
      wgmma_fence();
      issue_pv(pa, s);
      wgmma_wait<0>();
      fence_operands(o);
      release(&v_empty[s]);
    }
    if constexpr (kTimers) clk[4] = clock64();
  } else if (n_blocks > 0) {
    // Version 3: S(n) = Q K(n)^T and O += P(n-1) V(n-1) are in flight together; the
    // softmax of S(n) runs while the tensor cores do P(n-1) V(n-1).
    uint32_t pa[BN / 16][4];
    {
      float sc[BN / 8][4];
      mbar_wait(&k_full[0], 0);
      turn_begin();
      wgmma_fence();
      issue_qk(sc, 0);
      turn_end();
      wgmma_wait<0>();
      if constexpr (kTimers) clk[3] = clock64();
      fence_operands(sc);
      release(&k_empty[0]);
      mask(sc, 0);
      float alpha[2];
      softmax_scores(sc, st, scale_log2, alpha);  // o is still zero: no rescale
      scores_to_a<T>(sc, pa);
    }
    for (int n = 1; n < n_blocks; ++n) {
      const int s = n % STAGES, sp = (n - 1) % STAGES;
      float sc[BN / 8][4];
      mbar_wait(&k_full[s], (n / STAGES) & 1);
      turn_begin();
      fence_operands(o);
      wgmma_fence();
      issue_qk(sc, s);
      mbar_wait(&v_full[sp], ((n - 1) / STAGES) & 1);
      issue_pv(pa, sp);
      turn_end();
      wgmma_wait<1>();  // S(n) is done; P(n-1) V(n-1) may still run
      fence_operands(sc);
      release(&k_empty[s]);
      mask(sc, n);
      float alpha[2];
      softmax_scores(sc, st, scale_log2, alpha);
      wgmma_wait<0>();
      fence_operands(o);
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk)
        asm volatile("" : "+r"(pa[kk][0]), "+r"(pa[kk][1]), "+r"(pa[kk][2]), "+r"(pa[kk][3])::"memory");
      release(&v_empty[sp]);
      rescale(o, alpha);
      scores_to_a<T>(sc, pa);
    }
    const int sl = (n_blocks - 1) % STAGES;
    mbar_wait(&v_full[sl], ((n_blocks - 1) / STAGES) & 1);
    fence_operands(o);
    wgmma_fence();
    issue_pv(pa, sl);
    wgmma_wait<0>();
    fence_operands(o);
    release(&v_empty[sl]);
    if constexpr (kTimers) clk[4] = clock64();
  }

  float* lse = p.lse + (int64_t(b) * p.heads + h) * p.q_len;
  if constexpr (kStoreTma) {
    // This warpgroup's Q rows are free (its last Q K^T is done; no other warpgroup reads them):
    // O goes there in the 128B-swizzled layout TMA reads, one 64-row box per 64-column chunk.
    float inv[2];
    finish_rows(st, lse, row0, p.q_len, scale, inv);
    const int lr = warp * 16 + lane / 4;  // row within the warpgroup's 64 (and lr + 8)
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        const uint32_t addr = q_addr + (j / 8) * BM * 128 + (lr + 8 * r) * 128 + (((j % 8) ^ (lr % 8)) << 4) +
                              4 * (lane % 4);
        st_shared_u32(addr, Pack2<T>::pack(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]));
      }
    fence_proxy_async_shared();
    named_bar_sync(5 + cw, 128);
    const int first_row = m_block * BM + cw * 64;
    if (threadIdx.x % 128 == 0 && first_row < p.q_len) {
#pragma unroll
      for (int c = 0; c < kChunks; ++c) tma_store_4d(&maps.o, q_addr + c * BM * 128, c * 64, first_row, h, b);
      bulk_commit();
      bulk_wait_read_all();  // shared memory stays until TMA has read it
    }
  } else {
    T* out = static_cast<T*>(p.out) + b * p.o_batch_stride + h * p.o_head_stride;
    write_output<T>(o, st, out, p.o_seq_stride, lse, row0, p.q_len, scale);
  }
  if constexpr (kTimers) {
    clk[5] = clock64();
    if (threadIdx.x % 128 == 0) {
      const uint64_t global_end = global_timer();
      const uint64_t cta = (uint64_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
      uint64_t* r = p.timers + (cta * kConsumers + cw) * kTimerSlots;
      r[kGlobalStart] = global_start;
      r[kGlobalEnd] = global_end;
      for (int i = 0; i < 6; ++i) r[kClockEntry + i] = clk[i];
      r[kSmId] = sm_id();
      r[kKvBlocks] = uint64_t(n_blocks);
    }
  }
#endif
}

// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda).
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

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

// [batch, heads, seq, dim] through strides, boxes of 64 columns x box_rows rows.
bool encode(CUtensorMap* map, attention::DType dtype, const void* ptr, int batch, int heads, int seq, int dim,
            int64_t batch_stride, int64_t head_stride, int64_t seq_stride, int box_rows) {
  EncodeTiled fn = encode_fn();
  if (!fn) return false;
  const cuuint64_t dims[4] = {cuuint64_t(dim), cuuint64_t(seq), cuuint64_t(heads), cuuint64_t(batch)};
  const cuuint64_t strides[3] = {cuuint64_t(seq_stride) * 2, cuuint64_t(head_stride) * 2, cuuint64_t(batch_stride) * 2};
  const cuuint32_t box[4] = {64, cuuint32_t(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r =
      fn(map, dtype == attention::DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
         const_cast<void*>(ptr), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
         CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

template <typename T, int D, int kSched, int kConsumers, bool kStoreTma, bool kTimers = false>
cudaError_t launch(const Params& p, cudaStream_t stream) {
  constexpr TileConfig kT = with_consumers(tile_for(Path::Hopper, D), kConsumers);
  constexpr int kSmem = shared_bytes(kT);
  TensorMaps maps;
  if (!encode(&maps.q, p.dtype, p.q, p.batch, p.heads, p.q_len, D, p.q_batch_stride, p.q_head_stride, p.q_seq_stride,
              kT.block_m) ||
      !encode(&maps.k, p.dtype, p.k, p.batch, p.kv_heads, p.kv_len, D, p.k_batch_stride, p.k_head_stride,
              p.k_seq_stride, kT.block_n) ||
      !encode(&maps.v, p.dtype, p.v, p.batch, p.kv_heads, p.kv_len, D, p.v_batch_stride, p.v_head_stride,
              p.v_seq_stride, kT.block_n) ||
      (kStoreTma && !encode(&maps.o, p.dtype, p.out, p.batch, p.heads, p.q_len, D, p.o_batch_stride,
                            p.o_head_stride, p.o_seq_stride, 64)))
    return cudaErrorInvalidValue;
  cudaError_t e = cudaFuncSetAttribute(fused_fwd_hopper<T, D, kSched, kConsumers, kStoreTma, kTimers>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (e != cudaSuccess) return e;
  const dim3 grid((p.q_len + kT.block_m - 1) / kT.block_m, p.heads, p.batch);
  fused_fwd_hopper<T, D, kSched, kConsumers, kStoreTma, kTimers><<<grid, kT.threads, kSmem, stream>>>(p, maps);
  return cudaGetLastError();
}

template <int kSched, int kConsumers64, int kConsumers128, bool kStoreTma = false>
cudaError_t launch_variant(const Params& p, cudaStream_t stream) {
  // No keys: nothing to stream (and a zero-length tensor map is invalid).
  if (p.kv_len == 0) return launch_portable(p, stream);
  if (p.dtype == attention::DType::BF16)
    return p.head_dim == 64 ? launch<__nv_bfloat16, 64, kSched, kConsumers64, kStoreTma>(p, stream)
                            : launch<__nv_bfloat16, 128, kSched, kConsumers128, kStoreTma>(p, stream);
  return p.head_dim == 64 ? launch<__half, 64, kSched, kConsumers64, kStoreTma>(p, stream)
                          : launch<__half, 128, kSched, kConsumers128, kStoreTma>(p, stream);
}
// A schedule with the table's rows for q_len (3 consumers for D=64 from 2048 query rows).
template <int kSched, bool kStoreTma>
cudaError_t launch_rows(const Params& p, cudaStream_t stream) {
  static_assert(tile_for(Path::Hopper, 128).consumers == 2 && tile_for(Path::Hopper, 64).consumers == 2 &&
                    tile_for(Path::Hopper, 64, 1 << 30).consumers == 3,
                "the Hopper rows are exactly these");
  if (tile_for(Path::Hopper, p.head_dim, p.q_len).consumers == 3)
    return launch_variant<kSched, 3, 2, kStoreTma>(p, stream);
  return launch_variant<kSched, 2, 2, kStoreTma>(p, stream);
}

}  // namespace

// The default: version 6 (ping-pong, output through shared memory and TMA), the table's rows.
cudaError_t launch_hopper(const Params& p, cudaStream_t stream) { return launch_rows<kPingPong, true>(p, stream); }
// The earlier versions, kept for the ladder.
cudaError_t launch_hopper_v2(const Params& p, cudaStream_t stream) { return launch_rows<kSerial, false>(p, stream); }
cudaError_t launch_hopper_v5(const Params& p, cudaStream_t stream) { return launch_rows<kPingPong, false>(p, stream); }
cudaError_t launch_hopper_overlap(const Params& p, cudaStream_t stream) {
  return launch_variant<kOverlap, 2, 2>(p, stream);
}
// BM=192 for head dim 64 at every length (the 160-register consumers cannot hold
// D=128's accumulators, so D=128 runs the version 2 rows).
cudaError_t launch_hopper_m192(const Params& p, cudaStream_t stream) {
  return p.head_dim == 64 ? launch_variant<kSerial, 3, 2>(p, stream) : launch_hopper_v2(p, stream);
}

namespace {
// A schedule with per-tile timers (bf16 only: the lab's question is the schedule).
template <int kSched, bool kStoreTma>
cudaError_t launch_timed(const Params& p, cudaStream_t stream) {
  if (tile_for(Path::Hopper, p.head_dim, p.q_len).consumers == 3)
    return launch<__nv_bfloat16, 64, kSched, 3, kStoreTma, true>(p, stream);
  return p.head_dim == 64 ? launch<__nv_bfloat16, 64, kSched, 2, kStoreTma, true>(p, stream)
                          : launch<__nv_bfloat16, 128, kSched, 2, kStoreTma, true>(p, stream);
}
}  // namespace

cudaError_t launch_hopper_timed(const Params& p, cudaStream_t stream, Path path) {
  if (p.timers == nullptr || p.dtype != attention::DType::BF16 || p.kv_len == 0) return cudaErrorInvalidValue;
  switch (path) {
    case Path::Hopper:
      return launch_timed<kPingPong, true>(p, stream);
    case Path::HopperV2:
      return launch_timed<kSerial, false>(p, stream);
    case Path::HopperV5:
      return launch_timed<kPingPong, false>(p, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace attnprof::fused
