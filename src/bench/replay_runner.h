// Runs a doctor --replay plan (analysis/replay.h) through the bench: each shape's
// rows side by side in one bench run per dtype (hot timing, fp64-checked), a row
// that cannot run (shape, dtype, memory) saying why instead of failing the rest.
#pragma once

#include "analysis/replay.h"
#include "bench/bench_options.h"

namespace attnprof::bench {

// The options' sizes set to what the bench runs for a traced shape (bench_shape_of), and their page size
// to the shape's where its keys are a paged pool (else as they were: a --page-size given).
void set_shape(BenchOptions& o, const BenchShape& shape);

// `base` gives the device choice and no_gpu (set by the caller when there is no GPU);
// the shape fields are the plan's. Fills the rows' times and finishes the replay.
void run_replay(Replay& replay, const BenchOptions& base);

}  // namespace attnprof::bench
