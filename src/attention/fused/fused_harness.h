// Check-and-time harness for the fused attention forward, shared by the GPU tests
// and attnprof_fused_bench: fresh random inputs, poisoned outputs, an fp64 CPU
// reference, and CUDA-event timing (warm-up, median of many runs).
#pragma once

#include <string>

#include "fused_params.h"
#include "tile_table.h"

namespace attnprof::fused {

struct Case {
  int batch = 1, heads = 1, kv_heads = 1, q_len = 1, kv_len = 1, head_dim = 64;
  bool causal = false;
  Dtype dtype = Dtype::bf16;
  Layout layout = Layout::bhsd;
  float scale = 0.f;  // 0: 1/sqrt(D)
  std::string name() const;
};

struct CheckResult {
  double rel_err = 0;      // ||out - ref|| / ||ref||
  double max_lse_err = 0;  // max |lse - ref| over rows with a finite reference
  long unwritten = 0;      // out or lse elements still holding the poison (NaN)
  bool lse_inf_ok = true;  // rows with no visible key have lse = -inf
  std::string error;       // non-empty when a CUDA call failed
  bool ok(double tol) const {
    return error.empty() && unwritten == 0 && lse_inf_ok && rel_err < tol && max_lse_err < 1e-2;
  }
};

// Runs the forward once on fresh random inputs (seeded) and compares with fp64.
CheckResult check_case(const Case& c, Path path, unsigned seed);

struct TimeResult {
  double median_ms = 0;
  double tflops = 0;
  std::string error;
};

// Median over `iters` timed launches after `warmup` launches.
TimeResult time_case(const Case& c, Path path, int warmup, int iters);

// Whether a CUDA device is present (GPU tests skip without one).
bool have_device();

}  // namespace attnprof::fused
