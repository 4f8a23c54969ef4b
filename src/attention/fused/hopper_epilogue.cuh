// The Hopper kernel's epilogue: each consumer warpgroup normalizes its rows, writes them 128B-swizzled
// into shared memory (its own Q rows when one CTA owns one tile; the persistent grid's staging rows,
// or the tile's own Q buffer where the wide rows leave no room), fences the async proxy, and one thread
// stores the 64-row boxes with TMA; rows past q_len are not written, the LSE goes from registers. And
// the split tail's pieces: a partial one leaves its unnormalized output in the CTA's slot, the final one
// merges the others' before its epilogue.
#pragma once

#include "hopper_mainloop.cuh"

namespace attnprof::fused::sm90 {

// The split tail's piece of this step (TileScheduler::split_piece): a kPartial piece writes its partial
// output to its CTA's slot, raises its flag and has no epilogue (returns true); a kFinal piece waits for
// the item's other pieces, CTAs blockIdx.x + 1 .. last_cta, lowers their flags and merges them into o and st.
template <typename T, int D, typename K>
__device__ __forceinline__ bool split_tail_piece(Consumer<T, D, K>& c, const Tile& piece, const TileFrame& f,
                                                 float (&o)[D / 8][4], RowState& st) {
  using C = Consumer<T, D, K>;
  auto slot = [&](int cta) {
    return reinterpret_cast<float4*>(c.p.tail_partial) + (size_t(cta) * C::kConsumers + c.cw) * (D / 8 + 1) * 128;
  };
  if (piece.role == kPartial) {
    store_partial(o, st, slot(blockIdx.x));
    named_bar_sync(5 + c.cw, 128);
    if (threadIdx.x % 128 == 0) flag_release(c.p.tail_flags + blockIdx.x * C::kConsumers + c.cw);
    // Staged in the Q buffer: the leading warp still holds it (nothing staged in it), released at the
    // next tile's first S, as after a store.
    if constexpr (C::kDeferQRelease) c.held_q = f.qb;
    __syncwarp();
    return true;
  }
  if (piece.role == kFinal)
    for (int cta = int(blockIdx.x) + 1; cta <= piece.last_cta; ++cta) {
      if (threadIdx.x % 128 == 0) {
        int* flag = c.p.tail_flags + cta * C::kConsumers + c.cw;
        flag_wait(flag);
        *flag = 0;  // raised once a call: down again for the next call on the stream (stream_counters.h)
      }
      __syncwarp();
      named_bar_sync(5 + c.cw, 128);
      merge_partial(o, st, slot(cta), c.scale_log2);
    }
  return false;
}

// The tile's output and LSE from o and st.
template <typename T, int D, typename K>
__device__ __forceinline__ void epilogue(Consumer<T, D, K>& c, const Tile& tl, const TileFrame& f, float (&o)[D / 8][4],
                                         RowState& st) {
  using C = Consumer<T, D, K>;
  const Params& p = c.p;
  const int b = tl.b, h = tl.h, n_blocks = tl.n_blocks;
  float* lse = p.lse + (int64_t(b) * p.heads + h) * p.q_len;
  if (C::kDeferQRelease && n_blocks == 0) {
    // Staged in the Q buffer: a tile whose rows see no key has no Q buffer to stage in; its zeros go
    // straight from registers.
    c.release_held_q();
    T* out = static_cast<T*>(p.out) + b * p.o_batch_stride + h * p.o_head_stride;
    write_output<T>(o, st, out, p.o_seq_stride, lse, f.row0, p.q_len, c.scale);
    return;
  }
  // O goes to shared memory in the 128B-swizzled layout TMA reads, one 64-row box per 64-column chunk:
  // the warpgroup's own Q rows (done with: its last Q K^T is waited for, and no other warpgroup reads
  // them; staged in Q: of this tile's Q buffer) or, persistent, its rows of the staging buffer, whose
  // last store the leading thread saw read before it passed the barrier below. The halved diagonal
  // stages Q-buffer output in the Q rows the warpgroup read (rw); the persistent grid's own staging rows
  // stay the warpgroup's (cw: its previous store may still be reading them).
  const uint32_t tile_o = (K::kHalfDiag && C::kStageInQ ? smem_u32(c.sO) + f.rw * 64 * 128 : c.o_addr) +
                          (C::kStageInQ ? f.qb * C::kQBytes : 0);
  float inv[2];
  finish_rows(st, lse, f.row0, p.q_len, c.scale, inv);
  const int lr = c.warp * 16 + c.lane / 4;  // row within the warpgroup's 64 (and lr + 8)
  // kKeepZeros: a keyless tile after another stores the zeros its staging rows still hold.
  const bool zeros_kept = K::kKeepZeros && n_blocks == 0 && c.zeros_staged;
  if (!zeros_kept) {
    if constexpr (K::kPersistent) {
      // The previous store's shared-memory reads are waited for only now, when the staging rows are
      // needed again.
      if constexpr (!C::kStageInQ)
        if (threadIdx.x % 128 == 0) bulk_wait_read_all();
      __syncwarp();
      named_bar_sync(5 + c.cw, 128);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        const uint32_t addr = tile_o + (j / 8) * C::kStageRows * 128 + (lr + 8 * r) * 128 +
                              (((j % 8) ^ (lr % 8)) << 4) + 4 * (c.lane % 4);
        st_shared_u32(addr, Pack2<T>::pack(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]));
      }
    fence_proxy_async_shared();
    named_bar_sync(5 + c.cw, 128);
  }
  if constexpr (K::kKeepZeros) c.zeros_staged = n_blocks == 0;
  const int first_row = tl.m_block * C::BM + f.rw * 64;
  if (threadIdx.x % 128 == 0 && first_row < p.q_len) {
#pragma unroll
    for (int ch = 0; ch < D / 64; ++ch)
      tma_store_4d(&c.maps.o, tile_o + ch * C::kStageRows * 128, ch * 64, first_row, h, b);
    bulk_commit();
    if constexpr (!K::kPersistent) bulk_wait_read_all();  // shared memory stays until TMA has read it
  }
  if constexpr (C::kDeferQRelease) c.held_q = f.qb;  // released once the store has read it
  // Reconverge before the next tile's wgmma: without this, ptxas puts the warpgroup.arrive it injects
  // for the accumulators on this divergent path and serializes every wgmma (C7520).
  __syncwarp();
}

}  // namespace attnprof::fused::sm90
