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
  long unwritten = 0;        // output (and lse) elements still NaN: never written
  double max_lse_err = 0.0;  // with an lse: max |lse - ref| over rows that see a key
  bool lse_inf_ok = true;    // with an lse: rows that see no key have lse = -inf
  // Everything an implementation must get right, out to `tolerance` and lse to 1e-2.
  bool passed(double tolerance) const {
    return unwritten == 0 && lse_inf_ok && rel_error < tolerance && max_lse_err < 1e-2;
  }
};

// `params` must point at host copies of q, k, v; `out` is a host copy of the
// output in params.dtype with params.out_strides; `lse`, when given, a host copy
// of the [batch, heads, q_len] log-sum-exp. max_slices <= 0 checks all.
CheckResult check_against_reference(const AttentionParams& params, const void* out, int max_slices = 0,
                                    const float* lse = nullptr);

// The tolerance we hold an implementation in `dtype` to (bf16 1e-2, fp16 5e-3, fp32 1e-4).
double tolerance(DType dtype);

}  // namespace attnprof::attention::cpu
