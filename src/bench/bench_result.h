// One row of the bench table per implementation, and the run they came from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attention/params.h"
#include "bench/bench_options.h"

namespace attnprof::bench {

struct ImplResult {
  std::string name;
  std::string skipped;  // non-empty: why it did not run (then the numbers are unset)
  double median_ms = 0.0;
  double p10_ms = 0.0, p90_ms = 0.0;  // spread of the timed runs
  int runs = 0;
  double tflops = 0.0;
  std::optional<double> pct_of_gemm;      // of the bf16 GEMM rate measured in this run
  std::optional<int> kernels;             // recorded kernels per timed call (a forward, a backward or both)
  std::vector<std::string> kernel_names;  // in launch order, when recorded
  std::vector<double> kernel_us;          // their durations in the recorded forward (hot: medians of 10)
  // GPU kernel time per forward, summed over its kernels (what a trace's kernel times add up to): the
  // recorded forward's, or with hot timing the median of 10 back-to-back recorded forwards.
  std::optional<double> kernel_ms;
  std::string gemm_unit;                     // "tensor core bf16", "cuda core fp32", ... or "n/a"
  double bytes_model = 0.0;                  // bytes the implementation's passes move (model)
  std::optional<double> rel_error;           // vs fp64, on checked slices (backward: the worst of dQ, dK and dV)
  int slices_checked = 0, slices_total = 0;  // (batch, head) slices; backward: (batch, kv head) groups
  bool check_passed = true;
  std::string ladder_from, ladder_cause;  // the registry row's ladder step into this implementation
};

struct BenchRun {
  std::string device;  // "NVIDIA H200" or "cpu (2 threads)"
  bool on_gpu = false;
  attention::AttentionParams shape;     // pointers unset
  std::string note;                     // e.g. why the CPU default shape is smaller
  int page_size = 0;                    // --page-size: keys in pages of this many tokens
  std::vector<std::string> paged_rows;  // the rows that read them from the paged cache (the others dense)
  std::optional<double> gemm_tflops;    // bf16 GEMM rate measured in the same run
  std::string gemm_rate_shape;
  std::string kernel_count_source;  // "CUPTI recorder" or why kernels are "n/a"
  std::string timing;               // "cold" or "hot" (GPU, BenchOptions::hot), "cpu wall clock"
  Pass pass = Pass::Forward;        // what one timed call is (BenchOptions::pass)
  bool interleaved = false;         // samples taken in rounds over the implementations (--interleave)
  unsigned seed = 0;
  std::vector<ImplResult> rows;
};

}  // namespace attnprof::bench
