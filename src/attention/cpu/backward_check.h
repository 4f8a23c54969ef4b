// The check every backward goes through: dQ, dK and dV against the fp64 reference gradients of
// the same forward (exact softmax attention in double), each as ||got - ref|| / ||ref||, on all
// (batch, kv head) groups or an evenly spread sample of them.
#pragma once

#include "attention/cpu/check.h"
#include "attention/params.h"

namespace attnprof::attention::cpu {

struct BackwardCheckResult {
  double dq_error = 0.0, dk_error = 0.0, dv_error = 0.0;  // +inf when any checked element is NaN/inf
  int groups_checked = 0;
  int groups_total = 0;  // batch x kv heads: dK and dV of one kv head need all its query heads
  long unwritten = 0;    // gradient elements still NaN: never written
  double worst() const;
  bool passed(double tolerance) const { return unwritten == 0 && worst() < tolerance; }
};

// fp64 gradients of the (batch b, kv head kvh) group: dq [group][q_len][head_dim], dk and dv
// [kv_len][head_dim]. `d_out` is a host copy strided like params.out.
void reference_backward_group(const AttentionParams& p, const void* d_out, int b, int kvh, double* dq, double* dk,
                              double* dv);

// `p` points at host copies of q, k, v; `d_out`, `dq`, `dk`, `dv` are host copies strided as
// AttentionGrads says. max_groups <= 0 checks all.
BackwardCheckResult check_backward_against_reference(const AttentionParams& p, const void* d_out, const void* dq,
                                                     const void* dk, const void* dv, int max_groups = 0);

// The tolerance a backward in `dtype` is held to: twice the forward's (bf16 2e-2, fp16 1e-2,
// fp32 2e-4); its 16-bit implementations round dP and dS to storage before the last GEMMs.
double backward_tolerance(DType dtype);

}  // namespace attnprof::attention::cpu
