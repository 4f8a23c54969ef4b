// The Hopper kernel's compile-time choices and the state its roles share: the tensor maps, the
// shared-memory budget, the barriers, the timers policy and HopperKernel, one kernel's configuration
// (schedule.h's KernelChoice less the head dim and dtype). hopper_kernel.cuh composes the roles.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "fused_params.h"
#include "schedule.h"
#include "tile_table.h"

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTNPROF_SM90A 1
#endif

namespace attnprof::fused::sm90 {

struct TensorMaps {
  CUtensorMap q, k, v;
  CUtensorMap o;  // boxes of 64 rows: one consumer warpgroup's output
};
// The kernels take p, then the maps at the next boundary of their alignment (CUtensorMap's, 128 bytes
// in CUDA 13): Params within 256 bytes keeps the maps at byte 256, and so every kernel's SASS, as a
// field added to it for one kernel leaves the others.
constexpr std::size_t kMapsOffset =
    (sizeof(Params) + alignof(TensorMaps) - 1) / alignof(TensorMaps) * alignof(TensorMaps);
static_assert(kMapsOffset == 256, "the tensor maps stay at byte 256 of the kernels' parameters");

// An sm_90 CTA's opt-in shared memory.
constexpr int kSmemLimit = 227 * 1024;

// Rows of the persistent kernel's output staging buffer: BM (each consumer warpgroup stages in its
// own 64), or none where that does not fit beside two Q buffers and the K/V ring (the wide rows at
// D=128: each warpgroup stages in its rows of the tile's own Q buffer, which the producer refills two
// tiles later). One CTA per tile stages in its Q rows: none.
constexpr int staging_rows(const TileConfig& t, bool persistent) {
  if (!persistent) return 0;
  const int q_bytes = t.block_m * t.head_dim * 2;
  return shared_bytes(t) + 2 * q_bytes <= kSmemLimit ? t.block_m : 0;
}
// The dynamic shared memory of a Hopper CTA: Q, the ring and the alignment slack (shared_bytes), the
// persistent grid's second Q buffer and the output staging.
constexpr int hopper_shared_bytes(const TileConfig& t, bool persistent) {
  return shared_bytes(t) + (persistent ? t.block_m * t.head_dim * 2 : 0) + staging_rows(t, persistent) * t.head_dim * 2;
}

// The mbarriers of a CTA, in its shared memory after the staging rows: per Q buffer a full (the
// producer's expect-tx arrive) and an empty one (an arrive per consumer warp), the same per ring stage
// for K and for V.
struct Barriers {
  uint64_t* q_full;
  uint64_t* q_empty;
  uint64_t* k_full;
  uint64_t* k_empty;
  uint64_t* v_full;
  uint64_t* v_empty;
};

// The product's instrumentation: none. The lab's timers policy (benchmarks/fused_lab) has kEnabled
// and a record() that writes a tile's clocks.
struct NoTimers {
  static constexpr bool kEnabled = false;
};

// One kernel's compile-time choice: its grid, tile rows, consumer warpgroups and variants (schedule.h's
// KernelChoice, less the head dim and dtype), and its instrumentation.
template <Grid kGridV, TileRows kRowsV, int kConsumersV, unsigned kFeaturesV, typename TimersV = NoTimers>
struct HopperKernel {
  using Timers = TimersV;
  static constexpr Grid kGrid = kGridV;
  static constexpr TileRows kRows = kRowsV;
  static constexpr int kConsumers = kConsumersV;
  static constexpr unsigned kFeatures = kFeaturesV;
  static constexpr bool kPersistent = kGrid != Grid::OneTile;
  static constexpr bool kDynamic = kGrid == Grid::Dynamic;
  static constexpr bool kSplitTail = (kFeatures & feature::kSplitTail) != 0;
  static constexpr bool kHalfDiag = (kFeatures & feature::kHalfDiagonal) != 0;
  static constexpr bool kKeepZeros = (kFeatures & feature::kKeepZeros) != 0;
  static constexpr bool kSkipIdle = (kFeatures & feature::kSkipIdleGroup) != 0;
  static constexpr bool kTimers = Timers::kEnabled;
  template <int D>
  static constexpr TileConfig tile() {
    return with_consumers(tile_for(kRows, D), kConsumers);
  }
};

}  // namespace attnprof::fused::sm90
