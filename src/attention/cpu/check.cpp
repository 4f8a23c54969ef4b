// fp64 check of an output buffer, threaded over the checked slices and, when there are fewer of
// them than threads, over row chunks of each.
#include "attention/cpu/check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "attention/cpu/cpu_attention.h"
#include "attention/cpu/head_slice.h"
#include "attention/cpu/storage.h"

namespace attnprof::attention::cpu {

CheckResult check_against_reference(const AttentionParams& p, const void* out, int max_slices, const float* lse) {
  validate(p);
  CheckResult result;
  result.slices_total = p.batch * p.q_heads;
  const int count = max_slices <= 0 || max_slices >= result.slices_total ? result.slices_total : max_slices;
  result.slices_checked = count;
  double diff2 = 0.0, ref2 = 0.0;
  std::mutex mutex;
  // Work items: whole slices when there are enough to keep every thread busy; else each slice in
  // row chunks (64 rows or more), so one long slice (B1 H1 S32k) uses every core too.
  const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int chunks = count >= threads ? 1 : std::clamp((2 * threads + count - 1) / count, 1, std::max(1, p.q_len / 64));
  parallel_for(count * chunks, [&](int item) {
    const int n = item / chunks, chunk = item % chunks;
    // Evenly spread, first and last slice included.
    const int slice = count == result.slices_total || count == 1
                          ? n
                          : static_cast<int>(static_cast<long long>(n) * (result.slices_total - 1) / (count - 1));
    const int b = slice / p.q_heads, h = slice % p.q_heads;
    const int row_begin = static_cast<int>(static_cast<long long>(p.q_len) * chunk / chunks);
    const int row_end = static_cast<int>(static_cast<long long>(p.q_len) * (chunk + 1) / chunks);
    std::vector<double> ref(static_cast<std::size_t>(row_end - row_begin) * p.head_dim);
    std::vector<double> ref_lse(static_cast<std::size_t>(row_end - row_begin));
    reference_rows(p, b, h, row_begin, row_end, ref.data(), lse ? ref_lse.data() : nullptr);
    double d2 = 0.0, r2 = 0.0, lse_err = 0.0;
    long unwritten = 0;
    bool inf_ok = true;
    for (int i = row_begin; i < row_end; ++i) {
      const std::int64_t base = b * p.out_strides.batch + h * p.out_strides.head + i * p.out_strides.row;
      for (int c = 0; c < p.head_dim; ++c) {
        const double got = load_element(out, p.dtype, base + c);
        const double want = ref[static_cast<std::size_t>(i - row_begin) * p.head_dim + c];
        if (std::isnan(got)) ++unwritten;
        d2 += (got - want) * (got - want);
        r2 += want * want;
      }
      if (lse == nullptr) continue;
      const float got = lse[(static_cast<std::int64_t>(b) * p.q_heads + h) * p.q_len + i];
      const double want = ref_lse[static_cast<std::size_t>(i - row_begin)];
      if (std::isnan(got))
        ++unwritten;
      else if (std::isinf(want))
        inf_ok = inf_ok && std::isinf(got) && got < 0;
      else
        lse_err = std::max(lse_err, std::fabs(got - want));
    }
    const std::lock_guard<std::mutex> lock(mutex);
    diff2 += d2;
    ref2 += r2;
    result.unwritten += unwritten;
    result.max_lse_err = std::max(result.max_lse_err, lse_err);
    result.lse_inf_ok = result.lse_inf_ok && inf_ok;
  });
  if (!std::isfinite(diff2)) {
    result.rel_error = std::numeric_limits<double>::infinity();
  } else {
    result.rel_error = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  }
  return result;
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::BF16:
      return 1e-2;
    case DType::FP16:
      return 5e-3;
    case DType::FP32:
      return 1e-4;
  }
  return 1e-2;
}

}  // namespace attnprof::attention::cpu
