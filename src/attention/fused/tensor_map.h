// TMA tensor maps of the fused kernels' operands (hopper_launch.cu encodes them): the Hopper kernels'
// Q, K, V and O, the decode kernel's K and V.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "attention/params.h"

namespace attnprof::fused::sm90 {

// A [batch, heads, seq, dim] tensor's map through its strides (elements), boxes of 64 columns x box_rows
// rows, 128-byte swizzled, rows past `seq` read as zeros (cuTensorMapEncodeTiled through the runtime's
// driver entry point: no -lcuda). L2 fills of 256 bytes, or of a 128-byte line with `l2_lines` (for rows of
// 128 bytes whose neighbours in memory are another head's). False where the driver or the strides refuse it.
bool encode(CUtensorMap* map, attention::DType dtype, const void* ptr, int batch, int heads, int seq, int dim,
            int64_t batch_stride, int64_t head_stride, int64_t seq_stride, int box_rows, bool l2_lines = false);

}  // namespace attnprof::fused::sm90
