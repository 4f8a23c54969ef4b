// Thin wrappers over the sm_90 PTX the Hopper kernels use: mbarriers, TMA tile
// loads (cp.async.bulk.tensor), plain bulk copies and reduce-adds, wgmma fences and shared-memory matrix descriptors,
// and register reallocation (setmaxnreg, sm_90a).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace attnprof::fused::sm90 {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The global nanosecond timer and the SM's id, for the per-tile timers (tile_timers.h).
__device__ __forceinline__ uint64_t global_timer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t sm_id() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
// Waits until the phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(smem_u32(bar)), "r"(parity)
                 : "memory");
  } while (!done);
}

// One box of a 4-D tensor map into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(smem_u32(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_u32(bar))
      : "memory");
}
// `bytes` of global memory into shared memory by the bulk copy engine (no tensor map), completing on `bar`;
// both addresses 16-byte aligned, `bytes` a multiple of 16.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}
// A box of shared memory to a 4-D tensor map (rows past the tensor's end are not written), in the
// calling thread's bulk group; then the group's reads of shared memory awaited.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(map),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read_all() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// The calling thread's bulk groups complete (their writes to global memory too).
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// `bytes` of fp32 in shared memory added to global memory (the bulk copy engine's reduce, in the calling
// thread's bulk group; 16-byte aligned, a multiple of 16 bytes).
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst), "r"(src),
               "r"(bytes)
               : "memory");
}
// Generic-proxy writes to shared memory made visible to the async proxy (TMA) that reads them next.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
// Four 8 x 8 matrices of 16-bit elements, each thread's registers as an mma fragment holds them (row lane / 4,
// columns 2 (lane % 4) ..); lanes 8 i .. 8 i + 7 give matrix i's row addresses (16 bytes each).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
}
// The inverse of stmatrix_x4: four 8 x 8 matrices into an mma fragment's registers (an A fragment of 16 x 16
// where lanes 8 i .. 8 i + 7 give the rows of matrix i: rows 0-7 and 8-15 of columns 0-7, then of 8-15).
__device__ __forceinline__ void ldmatrix_x4_shared(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
// Where this lane's 16-byte row of A fragment kk (columns 16 kk ..) of a warpgroup's 64 rows lies in TMA's
// 128B-swizzled boxes (64-column chunks of `rows` 128-byte rows, chunk c at c x rows x 128 bytes; `tile` at
// the warpgroup's first row, a multiple of 8 rows from the swizzle's base), for ldmatrix.x4 and stmatrix.x4:
// lanes 8 i .. give matrix i's rows, 16-byte unit 2 kk + lane / 16 of row lane % 8 + 8 ((lane / 8) % 2) of
// the warp's 16.
__device__ __forceinline__ uint32_t fragment_row_sw128(uint32_t tile, int rows, int warp, int lane, int kk) {
  const int row = warp * 16 + lane % 8 + 8 * ((lane / 8) % 2), j = 2 * kk + lane / 16;
  return tile + (j / 8) * rows * 128 + row * 128 + (((j % 8) ^ (row % 8)) << 4);
}
// Step kk of a 64-row wgmma A operand stored so into this warp's A fragment registers.
__device__ __forceinline__ void ldmatrix_a_sw128(uint32_t tile, int rows, int warp, int lane, int kk,
                                                 uint32_t (&r)[4]) {
  ldmatrix_x4_shared(fragment_row_sw128(tile, rows, warp, lane, kk), r);
}
__device__ __forceinline__ float2 ld_shared_v2(uint32_t addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ void st_shared_v4(uint32_t addr, float a, float b, float c, float d) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator accesses across wgmma issue/wait.
template <int NB>
__device__ __forceinline__ void fence_operands(float (&d)[NB][4]) {
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[j][e])::"memory");
}
// The same for A fragments in registers (wgmma's RS form): they stay as they are until the wgmma that reads
// them is done.
template <int NA>
__device__ __forceinline__ void fence_operands(uint32_t (&a)[NA][4]) {
#pragma unroll
  for (int k = 0; k < NA; ++k) asm volatile("" : "+r"(a[k][0]), "+r"(a[k][1]), "+r"(a[k][2]), "+r"(a[k][3])::"memory");
}

// Named barriers (ids 1..15; 0 is __syncthreads): `count` threads of whole warps, those that
// arrive and those that sync together.
__device__ __forceinline__ void named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// A flag between CTAs (the split tail), CUTLASS's generic-barrier pattern: the writer's
// warpgroup passes a named barrier after its stores, then one thread releases at GPU scope (the
// fence also releases what the other threads wrote before the barrier); the reader's one thread
// spins on an acquiring load, then its warpgroup passes a named barrier before reading.
__device__ __forceinline__ void flag_release(int* flag) {
  asm volatile("fence.acq_rel.gpu;\nst.relaxed.gpu.global.b32 [%0], %1;\n" ::"l"(flag), "r"(1) : "memory");
}
__device__ __forceinline__ void flag_wait(const int* flag) {
  int v = 0;
#pragma unroll 1
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(flag) : "memory");
  } while (v == 0);
}

// Matrix descriptor for a 128B-swizzled tile (rows of 64 16-bit elements, 8-row
// atoms of 1024 bytes). lbo/sbo in bytes: for K-major operands sbo is the 8-row
// stride (1024) and lbo unused; for MN-major ones lbo is the stride between
// 64-element column chunks and sbo the 8-row stride.
__device__ __forceinline__ uint64_t make_desc_sw128(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= uint64_t((smem_addr & 0x3FFFF) >> 4);
  d |= uint64_t((lbo >> 4) & 0x3FFF) << 16;
  d |= uint64_t((sbo >> 4) & 0x3FFF) << 32;
  d |= uint64_t(1) << 62;  // 128-byte swizzle
  return d;
}

}  // namespace attnprof::fused::sm90
