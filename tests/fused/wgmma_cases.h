// One warpgroup's wgmma product on the device (wgmma_cases.cu), for the wrappers' unit test
// (wgmma_ops_test.cpp): both operands TMA-loaded into shared memory as the kernels load theirs (128B
// swizzle, 64-column chunks of 128-byte rows, chunk c at c x rows x 128 bytes), the descriptors built as
// the kernels build them. CUDA-free header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::fused::testing {

enum class WgmmaForm {
  SS,     // WgmmaSS: A [64][K] and B [N][K], both K-major; D = A B^T (the backward's S^T = K Q^T)
  SS_TT,  // WgmmaSS_TT: A [K][a_cols] and B [K][b_cols], both MN-major; D = A[:, chunk]^T B[:, chunk]
          // (the backward's dQ = dS K from dS^T [keys][queries] and K [keys][D])
  RS,     // WgmmaRS: A [64][K] in registers (mma.sync fragments), B [K][b_cols] MN-major; D = A B[:, cols]
          // (dV += P^T dO, dK += dS^T Q, the forward's O += P V)
  RS_K,   // WgmmaRS_K: A [64][K] TMA-loaded, then into registers by ldmatrix_a_sw128, B [N][K] K-major; D = A B^T
          // (the backward's S^T = K Q^T and dP^T = V dO^T at D=64, K and V held in registers)
};

struct WgmmaCase {
  WgmmaForm form = WgmmaForm::SS;
  bool bf16 = true;              // else fp16
  int k = 64;                    // 64 or 128
  int n = 64;                    // 64, or 128 for SS and RS
  int a_cols = 64, a_chunk = 0;  // SS_TT: A's columns (64 or 128) and the 64-column chunk that is M
  int b_cols = 64, b_chunk = 0;  // SS_TT, RS: B's columns (64 or 128) and the chunk of the first of N
};

// Whether the current device runs sm_90a code (compute capability 9.0); `why` says what it is if not.
bool wgmma_device(std::string& why);

// D [64][n] (fp32, row-major) of one case: a and b are 16-bit bit patterns, row-major in the layouts above.
// Returns "" or what failed.
std::string run_wgmma_case(const WgmmaCase& c, const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                           std::vector<float>& d);

}  // namespace attnprof::fused::testing
