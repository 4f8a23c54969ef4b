// The lab's instrumented launches: the Hopper kernel template instantiated with per-tile timers
// (tile_timers.h) for the schedules without variants, one_tile and persistent, at bf16. The product
// compiles none of them (its kernels take NoTimers).
#pragma once

#include <cstdint>

#include "attention/params.h"
#include "schedule.h"

namespace attnprof::fused {

// Whether `path` has timed kernels: one_tile and persistent (hopper picks per call, and the other
// schedules' variants have none).
constexpr bool has_tile_timers(Path p) { return p == Path::OneTile || p == Path::Persistent; }

// The forward on `path`'s kernel with its timers written to `timers` (device memory of
// timer_layout(...).words() words). bf16 with keys, sm_90 only; throws InputError otherwise.
void attention_forward_timed(const attention::AttentionParams& p, const attention::ExecContext& ctx,
                             std::uint64_t* timers, Path path, const LaunchOverrides& overrides = {});

}  // namespace attnprof::fused
