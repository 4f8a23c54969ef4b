// The timed instantiations of the Hopper kernel (see timed_launch.h).
#include "timed_launch.h"

#include <cuda_bf16.h>

#include "attention/cuda/cuda_check.h"
#include "attention_fn.h"
#include "common/input_error.h"
#include "fused_attention.h"
#include "hopper_launch.cuh"
#include "tile_timers.h"

namespace attnprof::fused {

// The timers policy: each consumer warpgroup's leading thread writes its tile's record.
struct TileTimers {
  static constexpr bool kEnabled = true;
  __device__ static void record(std::uint64_t* timers, std::uint64_t index, std::uint64_t global_start,
                                const std::uint64_t* clk, int n_blocks, std::uint64_t q_issue_clock) {
    std::uint64_t* rec = timers + index * kTimerSlots;
    rec[kGlobalStart] = global_start;
    rec[kGlobalEnd] = sm90::global_timer();
    for (int i = 0; i < 6; ++i) rec[kClockEntry + i] = clk[i];
    rec[kSmId] = sm90::sm_id();
    rec[kKvBlocks] = std::uint64_t(n_blocks);
    rec[kClockQIssued] = q_issue_clock;
  }
};

namespace {

template <int D, Grid G, TileRows R, int C>
cudaError_t timed(const Params& p, const Schedule& s, cudaStream_t stream) {
  return sm90::launch<__nv_bfloat16, D, sm90::HopperKernel<G, R, C, 0, TileTimers>>(p, s, stream);
}

cudaError_t launch_timed(const Params& p, cudaStream_t stream, Path path, const LaunchOverrides& o) {
  if (p.timers == nullptr || p.dtype != attention::DType::BF16 || p.kv_len == 0 || !has_tile_timers(path))
    return cudaErrorInvalidValue;
  const Schedule s = choose_schedule(p, path, sm_count(), o);  // its variants are not timed
  const KernelChoice& k = s.kernel;
  if (k.grid == Grid::OneTile) {
    if (p.head_dim == 128) return timed<128, Grid::OneTile, TileRows::Hopper, 2>(p, s, stream);
    return k.consumers == 3 ? timed<64, Grid::OneTile, TileRows::Hopper, 3>(p, s, stream)
                            : timed<64, Grid::OneTile, TileRows::Hopper, 2>(p, s, stream);
  }
  if (k.grid != Grid::Persistent) return cudaErrorInvalidValue;
  if (k.rows == TileRows::HopperWide)
    return p.head_dim == 64 ? timed<64, Grid::Persistent, TileRows::HopperWide, 2>(p, s, stream)
                            : timed<128, Grid::Persistent, TileRows::HopperWide, 2>(p, s, stream);
  return p.head_dim == 64 ? timed<64, Grid::Persistent, TileRows::Hopper, 2>(p, s, stream)
                          : timed<128, Grid::Persistent, TileRows::Hopper, 2>(p, s, stream);
}

}  // namespace

void attention_forward_timed(const attention::AttentionParams& a, const attention::ExecContext& ctx,
                             std::uint64_t* timers, Path path, const LaunchOverrides& overrides) {
  Params p = checked_params(a, ctx);
  if (a.dtype != attention::DType::BF16 || a.kv_len == 0 || a.batch == 0 || a.q_len == 0)
    throw InputError("fused: the timed kernel takes bf16 calls with keys");
  if (resolve_path(Path::Automatic) != Path::Hopper) throw InputError("fused: the timed kernel needs an sm_90 GPU");
  if (!has_tile_timers(path))
    throw InputError("fused: timers exist for one_tile and persistent (hopper picks per call)");
  p.timers = timers;
  ATTNPROF_CUDA_CHECK(launch_timed(p, static_cast<cudaStream_t>(ctx.stream), path, overrides));
}

}  // namespace attnprof::fused
