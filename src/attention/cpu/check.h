// The correctness check every implementation goes through: relative error
// ||out - ref|| / ||ref|| against the fp64 reference, on all (batch, head)
// slices or an evenly spread sample of them when the reference would be slow.
#pragma once

#include "attention/params.h"

namespace attnprof::attention::cpu {

struct CheckResult {
  double rel_error = 0.0;  // +inf when any checked element is NaN/inf (unwritten poison)
  int slices_checked = 0;
  int slices_total = 0;
};

// `params` must point at host copies of q, k, v; `out` is a host copy of the
// output in params.dtype with params.out_strides. max_slices <= 0 checks all.
CheckResult check_against_reference(const AttentionParams& params, const void* out, int max_slices = 0);

// The tolerance we hold an implementation in `dtype` to (bf16 1e-2, fp16 5e-3, fp32 1e-4).
double tolerance(DType dtype);

}  // namespace attnprof::attention::cpu
