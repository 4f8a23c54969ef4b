// The CPU implementations, each an AttentionFn (plain C++, threads over
// batch x heads). They mirror the CUDA ladder so `attnprof bench` tells the same
// story on a machine without a GPU:
//   reference  fp64 throughout; the oracle every other implementation is checked against
//   manual     the hand-written sequence at storage precision: S = QK^T (rounded),
//              S *= scale (rounded), masked fill, softmax (rounded), O = PV
//   math       PyTorch's math path: upcast to fp32, q and k each scaled by sqrt(scale),
//              fp32 GEMM, additive mask, safe softmax, fp32 PV, cast back
//   flash      tiled online softmax (64 x 64 tiles), P rounded to storage before PV
// All write zeros for a row that sees no key. reference and flash also fill lse.
#pragma once

#include <vector>

#include "attention/params.h"

namespace attnprof::attention::cpu {

void reference(const AttentionParams& p, const ExecContext& ctx);
void manual(const AttentionParams& p, const ExecContext& ctx);
void math(const AttentionParams& p, const ExecContext& ctx);
void flash(const AttentionParams& p, const ExecContext& ctx);

// fp64 output of one (batch, head) slice, [q_len][head_dim], and its lse per row.
std::vector<double> reference_slice(const AttentionParams& p, int b, int h, std::vector<double>* lse = nullptr);
// The same for query rows [row_begin, row_end) of the slice: out gets (row_end - row_begin) x head_dim
// values, lse (when not null) one per row. Reads and scores only the keys those rows see.
void reference_rows(const AttentionParams& p, int b, int h, int row_begin, int row_end, double* out, double* lse);

}  // namespace attnprof::attention::cpu
